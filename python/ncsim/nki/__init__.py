"""NKI (Neuron Kernel Interface) kernels on ncsim.

    import ncsim.nki as nki
    import ncsim.nki.language as nl
    import ncsim.nki.isa as nisa

    @nki.jit
    def add(a, b):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, nl.load(a) + nl.load(b))
        return out

    y = nki.simulate_kernel(add, x1, x2)            # values, like NKI's simulator
    bench = nki.benchmark(warmup=5, iters=10)(add)
    bench(x1, x2)
    bench.benchmark_result.nc_latency.get_latency_percentile(50)   # simulated microseconds

The kernel is traced into an NCA program (`nki.lower(kernel, *args).text`), run by ncsim with
its numerics and timing, and checked by `ncsim check` on request. See docs/nki.md.
"""
import functools
import inspect
import itertools
import json
import os

import numpy as np

from . import _core
from . import _exec
from . import _dtypes
from ._core import NkiError, Policy, Tensor, policy

tensor = Tensor

__all__ = ["jit", "trace", "baremetal", "simulate_kernel", "benchmark", "profile", "lower", "tensor",
           "NkiError", "Policy", "policy", "install_neuronxcc_alias", "language", "isa"]


# --------------------------------------------------------------------------- lowering

class Lowered:
    """A traced kernel: the NCA text, the inputs to bind, and how to build the return value."""

    def __init__(self, text, inputs, outputs, ret, legacy, name, nodes):
        self.text = text
        self.inputs = inputs          # name -> ndarray (host values of the HBM inputs)
        self.outputs = outputs        # [(name, dtype)] output/inout tensors
        self.ret = ret                # structure of the return value, names in place of tensors
        self.legacy = legacy          # [(arg position or name, tensor name)] outputs passed in
        self.name = name
        self.instructions = nodes

    def values(self, outs):
        def build(r):
            if isinstance(r, str):
                return outs[r]
            if isinstance(r, tuple):
                return tuple(build(x) for x in r)
            if isinstance(r, list):
                return [build(x) for x in r]
            return r
        return build(self.ret)


def _placeholder(a):
    """A NumPy array, or a shape/dtype placeholder (nt.tensor[[shape], dtype], torch-like)."""
    if isinstance(a, np.ndarray):
        return a
    if hasattr(a, "shape") and hasattr(a, "dtype") and not isinstance(a, Tensor):
        return a
    return None


def lower(kernel, *args, grid=None, policy=None, arch="trn1", **kwargs):
    """Trace `kernel` with these arguments into an NCA program (a `Lowered`)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    return k._lower(args, kwargs, grid if grid is not None else k.grid, policy, arch)[0]


class Kernel:
    """A kernel function wrapped by nki.jit / trace / baremetal / benchmark / profile."""

    def __init__(self, func, mode="auto", grid=(), **opts):
        self.func = func
        self.mode = mode
        self.grid = tuple(grid)
        self.opts = opts
        self.benchmark_result = None
        self.profile_result = None
        self.last = None
        functools.update_wrapper(self, func)

    def __getitem__(self, grid):
        if not isinstance(grid, tuple):
            grid = (grid,)
        g = tuple(int(getattr(x, "n", x)) for x in grid)
        k = Kernel(self.func, self.mode, g, **self.opts)
        return k

    def _lower(self, args, kwargs, grid, pol, arch):
        func = self.func
        pol = (_core.policy.copy(**(pol or {})) if not isinstance(pol, Policy) else pol) \
            if pol is not None or "policy" not in self.opts else _core.policy.copy(**self.opts["policy"])
        source = func.__code__.co_filename
        if _core._tracer[0] is not None:
            raise NkiError("a kernel cannot be launched from inside another kernel's trace "
                           "with a grid (err_nested_kernel_with_spmd_grid)")
        sig = inspect.signature(func)
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        # Pass 1 traces with block tensors unallocated and records when each block is used;
        # if the kernel has block tensors, pass 2 traces again, allocating by that liveness
        # (docs/nki.md, "Allocation").
        prev = None
        while True:
            tr, ret, params = self._trace(func, sig, bound, pol, source, prev, grid)
            if prev is not None or not tr.needs_second_pass():
                break
            prev = tr
        inputs = {}
        # the return value: shared_hbm tensors
        out_names = []

        def conv(r):
            if isinstance(r, Tensor):
                if r.space != "hbm" or r.buf.kind not in ("output",) and r.buf.param is None:
                    raise NkiError(f"{source}:0: error: [err_return_not_shared_hbm] a kernel returns "
                                   "HBM tensors declared with buffer=nl.shared_hbm")
                out_names.append(r.buf.name)
                return r.buf.name
            if isinstance(r, (tuple, list)):
                return type(r)(conv(x) for x in r)
            return r
        retn = conv(ret)
        for b in tr.hbm:
            if b.name in out_names and b.written is None:
                raise NkiError(f"{source}:{_def_line(func)}: error: "
                               f"[err_tensor_output_not_written_to] the kernel returns '{b.name}' "
                               "but never writes it")
        legacy = []
        for name, (b, host) in params.items():
            if b.written is not None:
                if ret is not None:
                    fn, ln = b.written
                    raise NkiError(f"{fn}:{ln}: error: [err_cannot_update_immutable_parameter] "
                                   f"kernel parameter '{name}' is immutable; copy it into a "
                                   "shared_hbm tensor first")
                b.kind = "inout"
                legacy.append((host, b.name))
        for b in tr.hbm:
            if b.host is not None and b.kind in ("input", "inout"):
                inputs[b.name] = b.host
            elif b.kind in ("input", "inout"):
                inputs[b.name] = None
        outputs = [(b.name, b.dtype) for b in tr.hbm if b.kind in ("output", "inout")]
        text = tr.finish(arch=arch, comment=f"NKI kernel {func.__name__} ({source}), lowered by ncsim.nki")
        low = Lowered(text, inputs, outputs, retn, legacy, func.__name__, len(tr.nodes))
        low.prints = tr.prints
        low.tensors = tr.report()
        low.spill = {"spill_save_bytes": tr.spill_bytes, "spill_reload_bytes": tr.reload_bytes,
                     "rematerialized_bytes": sum(r["rematerialized_bytes"] for r in low.tensors),
                     "resident_load_bytes": tr.elided_bytes}
        return low, bound

    @staticmethod
    def _trace(func, sig, bound, pol, source, prev, grid):
        tr = _core.Tracer(pol, source, prev=prev)
        params = {}
        _core._tracer[0] = tr
        try:
            targs = {}

            def param(name, v):
                a = _placeholder(v)
                if a is None:
                    return v
                dt = _dtypes.as_dtype(a.dtype)
                b = tr.new_hbm(name, dt, tuple(a.shape) or (1,), "input")
                b.param = name
                if isinstance(a, np.ndarray):
                    b.host = np.ascontiguousarray(a, dtype=dt.host).reshape(b.shape)
                params[name] = (b, v)
                return tr.hbm_tensor(b)
            for name, v in bound.arguments.items():
                kind = sig.parameters[name].kind
                if kind == inspect.Parameter.VAR_POSITIONAL:
                    targs[name] = tuple(param(f"{name}{i}", x) for i, x in enumerate(v))
                elif kind == inspect.Parameter.VAR_KEYWORD:
                    targs[name] = {k: param(k, x) for k, x in v.items()}
                else:
                    targs[name] = param(name, v)
            ret = None
            g = grid or ()
            for inst, pid in enumerate(itertools.product(*[range(n) for n in g]) if g else [()]):
                tr.program_id = pid
                tr.grid = g
                tr.shared_idx = 0
                tr.instance = inst
                ba = sig.bind_partial()
                ba.arguments.update(targs)
                r = func(*ba.args, **ba.kwargs)
                if inst == 0:
                    ret = r
                tr.flush()
        finally:
            _core._tracer[0] = None
        return tr, ret, params

    # ---- running
    def _run(self, args, kwargs, timing_only=False, trace=None, check=False, seed=0, arch="trn1",
             set=None, pol=None):
        low, bound = self._lower(args, kwargs, self.grid, pol, arch)
        inputs = {}
        for k, v in low.inputs.items():
            if timing_only:        # a timing-only run reads no input data: none is made
                continue
            if v is None:          # a placeholder (benchmark): random values
                b = _shape_of(low.text, k)
                v = np.random.default_rng(0).uniform(-1, 1, size=b[1]).astype(b[0])
            inputs[k] = v
        r = _exec.run(low.text, low.name, inputs, arch=arch, timing_only=timing_only, trace=trace,
                      check=check, seed=seed, set=set)
        if isinstance(r.stats, dict):
            # what the lowering decided: spills and reloads (docs/nki.md, "Allocation")
            r.stats["nki"] = dict(low.spill, tensors=low.tensors)
        self.last = r
        self.lowered = low
        if not timing_only:
            for prefix, name in low.prints:
                print(prefix, r.outputs[name])
            for arr, tname in low.legacy:
                if isinstance(arr, np.ndarray):
                    np.copyto(arr, r.outputs[tname].reshape(arr.shape).astype(arr.dtype, copy=False))
        return low, r

    def __call__(self, *args, **kwargs):
        if _core._tracer[0] is not None:
            if self.grid:
                _core.error("err_nested_kernel_with_spmd_grid", "a kernel called from a kernel cannot have a grid")
            return self.func(*args, **kwargs)
        mode = self.mode
        if mode == "benchmark":
            return self._benchmark(args, kwargs)
        if mode == "profile":
            return self._profile(args, kwargs)
        low, r = self._run(args, kwargs, **self._runopts())
        return low.values(r.outputs) if low.ret is not None else None

    def _runopts(self):
        o = {}
        for k in ("arch", "seed", "set"):
            if k in self.opts:
                o[k] = self.opts[k]
        if "policy" in self.opts:
            o["pol"] = self.opts["policy"]
        return o

    def _benchmark(self, args, kwargs):
        trace = self.opts.get("save_trace_name")
        low, r = self._run(args, kwargs, timing_only=True, trace=trace, **self._runopts())
        self.benchmark_result = BenchmarkResult(r, self.opts.get("warmup", 10), self.opts.get("iters", 100), trace)
        return None

    def _profile(self, args, kwargs):
        wd = self.opts.get("working_directory")
        if not wd:
            raise ValueError("nki.profile needs working_directory= (an absolute path)")
        os.makedirs(wd, exist_ok=True)
        name = self.opts.get("save_trace_name") or f"{self.func.__name__}.pftrace"
        trace = os.path.join(wd, name)
        low, r = self._run(args, kwargs, timing_only=True, trace=trace, **self._runopts())
        with open(os.path.join(wd, f"{self.func.__name__}.nca"), "w") as f:
            f.write(low.text)
        summary = _summary(r, low)
        with open(os.path.join(wd, f"{self.func.__name__}_summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        self.profile_result = ProfileResult(r, trace, summary)
        self.benchmark_result = BenchmarkResult(r, 1, 1, trace)
        return None


def _def_line(func):
    """The line of the kernel's `def` (co_firstlineno points at its first decorator)."""
    import linecache
    ln = func.__code__.co_firstlineno
    for i in range(ln, ln + 50):
        t = linecache.getline(func.__code__.co_filename, i).lstrip()
        if t.startswith("def ") or t.startswith("async def "):
            return i
    return ln


def _shape_of(text, name):
    for ln in text.splitlines():
        if ln.startswith(f".hbm {name} "):
            f = ln.split()
            dt = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8, "u8": np.uint8, "i16": np.int16,
                  "u16": np.uint16, "i32": np.int32, "u32": np.uint32}.get(f[2], np.float32)
            shape = tuple(int(x) for x in ln.split("[")[1].split("]")[0].split(","))
            return dt, shape
    raise KeyError(name)


def _summary(r, low):
    st = r.stats
    eng = {}
    for c in st.get("cores", []):
        for e, v in c.get("engines", {}).items():
            if e == "cc":
                continue
            busy = v.get("busy_ns", 0.0)
            eng[e] = {"busy_ns": busy, "utilisation": busy / r.time_ns if r.time_ns else 0.0,
                      "instructions": v.get("instructions", 0)}
        d = c.get("dma", {})
        eng["dma"] = {"busy_ns": d.get("busy_ns", 0.0),
                      "utilisation": d.get("busy_ns", 0.0) / r.time_ns if r.time_ns else 0.0,
                      "transfers": d.get("transfers", 0), "bytes": d.get("bytes", 0)}
        break
    bott = max(eng.items(), key=lambda kv: kv[1]["busy_ns"])[0] if eng else None
    return {"kernel": low.name, "total_time_ns": r.time_ns, "instructions": low.instructions,
            "engines": eng, "bottleneck": bott, "mfu": st.get("mfu"), "hbm": st.get("hbm"),
            "spill": getattr(low, "spill", None)}


class _Latency:
    def __init__(self, us):
        self.us = us

    def get_latency_percentile(self, p):
        """Latency in microseconds; every percentile is the simulated time (the simulation is
        deterministic: all iterations take the same time)."""
        if p not in (0, 1, 10, 25, 50, 90, 99, 100) and not 0 <= p <= 100:
            raise ValueError("percentile in 0..100")
        return self.us


class BenchmarkResult:
    """What `kernel.benchmark_result` holds after a benchmark run: `nc_latency` in microseconds,
    plus the simulation's statistics (`stats`), total time in ns, and the trace file if any."""

    def __init__(self, r, warmup, iters, trace):
        self.nc_latency = _Latency(r.time_ns / 1000.0)
        self.time_ns = r.time_ns
        self.stats = r.stats
        self.trace = trace
        self.warmup, self.iters = warmup, iters

    @property
    def summary(self):
        return {"latency_us": self.time_ns / 1000.0, "stats": self.stats}


class ProfileResult:
    def __init__(self, r, trace, summary):
        self.time_ns = r.time_ns
        self.stats = r.stats
        self.trace = trace
        self.summary = summary


# --------------------------------------------------------------------------- decorators

def _decorator(mode, func=None, **kw):
    if func is None:
        return lambda f: Kernel(f.func if isinstance(f, Kernel) else f, mode, **kw)
    if isinstance(func, Kernel):
        return Kernel(func.func, mode, func.grid, **{**func.opts, **kw})
    return Kernel(func, mode, **kw)


def jit(func=None, mode="auto", **kwargs):
    """Mark a kernel. mode: auto/baremetal/simulation run on ncsim and return values;
    benchmark/profile time it. Extra options: policy={...} (docs/nki.md), arch=, seed=."""
    return _decorator(mode, func, **kwargs)


def trace(func=None, **kwargs):
    return _decorator("auto", func, **kwargs)


def baremetal(kernel=None, **kwargs):
    return _decorator("baremetal", kernel, **kwargs)


def benchmark(kernel=None, **kwargs):
    """nki.benchmark(warmup=, iters=, save_trace_name=...)(kernel): calling the result runs a timed
    simulation and sets `.benchmark_result.nc_latency.get_latency_percentile(p)` (microseconds)."""
    return _decorator("benchmark", kernel, **kwargs)


def profile(func=None, **kwargs):
    """nki.profile(working_directory=ABS_PATH, save_trace_name=...)(kernel): writes the trace, the
    NCA program and a JSON summary (time, engine utilisation, bottleneck) there."""
    return _decorator("profile", func, **kwargs)


def simulate_kernel(kernel, *args, policy=None, **kwargs):
    """Run the kernel on ncsim and return its value(s) as NumPy arrays (2.21+ convention), or
    fill the output arrays passed in and return None (2.20 convention)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    low, r = k._run(args, kwargs, pol=policy, **k._runopts())
    return low.values(r.outputs) if low.ret is not None else None


def check(kernel, *args, policy=None, **kwargs):
    """`ncsim check` findings of the lowered kernel (an empty list when it is clean)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    low, _ = k._lower(args, kwargs, k.grid, policy, "trn1")
    inputs = {n: v for n, v in low.inputs.items() if v is not None}
    return _exec.check(low.text, low.name, inputs)


# --------------------------------------------------------------------------- neuronxcc alias

def install_neuronxcc_alias(force=False):
    """Make `import neuronxcc.nki` (and .language, .isa, .typing, .compiler) resolve to ncsim.nki.
    Refuses when a real neuronxcc is importable, unless force=True; never silent."""
    import importlib.util
    import sys
    import types
    if "neuronxcc" in sys.modules and getattr(sys.modules["neuronxcc"], "__ncsim_alias__", False):
        return
    if not force:
        try:
            spec = importlib.util.find_spec("neuronxcc")
        except (ImportError, ValueError):
            spec = None
        if spec is not None:
            raise RuntimeError("a real neuronxcc is installed (" + str(spec.origin) + "); ncsim will "
                               "not shadow it. Import ncsim.nki directly, or pass force=True.")
    from . import language, isa, typing as nt, compiler  # noqa: F401
    pkg = types.ModuleType("neuronxcc")
    pkg.__ncsim_alias__ = True
    pkg.__path__ = []
    me = sys.modules[__name__]
    pkg.nki = me
    sys.modules["neuronxcc"] = pkg
    sys.modules["neuronxcc.nki"] = me
    sys.modules["neuronxcc.nki.language"] = language
    sys.modules["neuronxcc.nki.isa"] = isa
    sys.modules["neuronxcc.nki.typing"] = nt
    sys.modules["neuronxcc.nki.compiler"] = compiler


from . import language, isa  # noqa: E402,F401
from . import typing as typing  # noqa: E402,F401
from . import compiler  # noqa: E402,F401
