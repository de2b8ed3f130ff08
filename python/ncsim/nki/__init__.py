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
import gc
import inspect
import itertools
import json
import os

import numpy as np

from . import _core
from . import _exec
from . import _dtypes
from . import _errors
from . import _steady
from . import typing as _typing
from ._core import NkiError, Policy, Tensor, policy

tensor = Tensor

__all__ = ["jit", "trace", "baremetal", "simulate_kernel", "benchmark", "profile", "lower", "tensor",
           "NkiError", "Policy", "policy", "install_neuronxcc_alias", "language", "isa", "typed"]


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


def typed(values, dtype):
    """Host values for a kernel argument of a type NumPy lacks (bfloat16, tfloat32, fp8), without
    ml_dtypes: `nki.simulate_kernel(k, nki.typed(x, nl.bfloat16))`. The values are rounded to
    the type when the kernel reads them; outputs of such types come back as float32 arrays."""
    try:
        return _typing.TypedValues(values, dtype)
    except (TypeError, ValueError, OverflowError) as e:
        raise _errors.usage("err_invalid_argument", f"nki.typed: {e}") from None


def _placeholder(a):
    """What a kernel argument is: a NumPy array, typed values, an `nt.tensor[...]` placeholder,
    or None (a compile-time constant). Anything else with a shape (another framework's
    tensor, a memoryview) was refused by `_errors.check_argument` before."""
    if isinstance(a, (np.ndarray, _typing.TypedValues, _typing._Placeholder)):
        return a
    return None


def lower(kernel, *args, grid=None, policy=None, arch="trn1", **kwargs):
    """Trace `kernel` with these arguments into an NCA program (a `Lowered`)."""
    k = kernel if isinstance(kernel, Kernel) else Kernel(kernel)
    return k._lower(args, kwargs, grid if grid is not None else k.grid, policy, arch)[0]


class Kernel:
    """A kernel function wrapped by nki.jit / trace / baremetal / benchmark / profile."""

    def __init__(self, func, mode="auto", grid=(), **opts):
        _errors.check_kernel(func, mode, opts)
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
        g = _errors.check_grid(grid)
        k = Kernel(self.func, self.mode, g, **self.opts)
        return k

    def _lower(self, args, kwargs, grid, pol, arch):
        func = self.func
        source = func.__code__.co_filename
        pol = _errors.make_policy(pol if pol is not None or "policy" not in self.opts
                                  else self.opts["policy"], source, _def_line(func))
        if _core._tracer[0] is not None:
            raise _errors.usage("err_nested_kernel_with_spmd_grid", "a kernel cannot be "
                                "launched from inside another kernel's trace with a grid")
        # The cycle collector is paused for the whole lowering (docs/nki.md, "Speed"): its
        # passes over the trace's objects took a quarter of the CPU, and no decision may
        # depend on when it runs (a tile kept alive by a reference cycle is then released at
        # the end of the lowering, never at a moment set by the collector).
        was = gc.isenabled()
        gc.disable()
        try:
            if pol.fast_trace and os.environ.get("NCSIM_NKI_TRACE_ORACLE"):
                return self._lower_oracle(args, kwargs, grid, pol, arch)
            return self._lower_pol(args, kwargs, grid, pol, arch)
        finally:
            if was:
                gc.enable()

    def _lower_oracle(self, args, kwargs, grid, pol, arch):
        """NCSIM_NKI_TRACE_ORACLE=1 (tests): lower with the tracer's optimised paths and again
        with the reference ones and every loop iteration traced (Policy.fast_trace=False,
        steady_state=False), and require the same program text,
        or the same error."""
        def one(p):
            try:
                return self._lower_pol(args, kwargs, grid, p, arch), None
            except Exception as e:                  # compared below, then re-raised
                return None, e
        (low, e1) = one(pol)
        (ref, e2) = one(pol.copy(fast_trace=False, steady_state=False))
        if (e1 is None) != (e2 is None) or e1 is not None and \
                (type(e1) is not type(e2) or str(e1) != str(e2)):
            raise AssertionError(f"trace oracle: {self.func.__name__}: the fast tracer gives "
                                 f"{e1!r}, the reference {e2!r}")
        if e1 is not None:
            raise e1
        if low[0].text != ref[0].text or low[0].tensors != ref[0].tensors or \
                low[0].spill != ref[0].spill:
            raise AssertionError(f"trace oracle: {self.func.__name__}: the fast tracer's program "
                                 "text differs from the reference tracer's")
        return low

    def _lower_pol(self, args, kwargs, grid, pol, arch):
        func = self.func
        source = func.__code__.co_filename
        sig = inspect.signature(func)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as e:
            raise NkiError(f"{source}:{_def_line(func)}: error: [err_invalid_arguments] "
                           f"{func.__name__}: {e}") from None
        bound.apply_defaults()
        if getattr(func, "_ncc_skip_middle_end", False):
            pol = pol.copy(resident_loads="never")     # (ncc.skip_middle_end_transformations)
        # Pass 1 traces with block tensors unallocated and records when each block is used;
        # if the kernel has block tensors, pass 2 traces again, allocating by that liveness
        # (docs/nki.md, "Allocation").
        prev = None
        while True:
            try:
                tr, ret, params = self._trace(func, sig, bound, pol, source, prev, grid)
            except _steady.Mismatch as e:
                # a loop's last iterations did not continue its replayed steady state
                # (docs/nki.md, "Loops kept"): every iteration runs
                low, bound = self._lower_pol(args, kwargs, grid, pol.copy(steady_state=False),
                                             arch)
                low.steady_fallback = str(e)
                return low, bound
            if prev is not None or not tr.needs_second_pass():
                break
            prev = tr
        inputs = {}
        # the return value: shared_hbm tensors
        out_names = []

        def conv(r):
            if isinstance(r, Tensor):
                if r.space != "hbm" or r.buf.kind not in ("output",) and r.buf.param is None:
                    raise NkiError(f"{source}:{_def_line(func)}: error: "
                                   "[err_return_not_shared_hbm] a kernel returns "
                                   "HBM tensors declared with buffer=nl.shared_hbm")
                out_names.append(r.buf.name)
                return r.buf.name
            if isinstance(r, (tuple, list)):
                return type(r)(conv(x) for x in r)
            return r
        retn = conv(ret)
        if tr.direct is not None:
            compiler.check_outputs(tr, out_names)     # (direct allocation: no other HBM tensor)
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
        try:
            text = tr.finish(arch=arch, comment=f"NKI kernel {func.__name__} ({source}), lowered by ncsim.nki")
        except NkiError:
            raise
        except Exception as e:
            raise _errors.located(e, source, _def_line(func)) from e
        low = Lowered(text, inputs, outputs, retn, legacy, func.__name__, len(tr.nodes))
        low.params = {b.name: (b.param, source, _def_line(func)) for b in tr.hbm
                      if getattr(b, "param", None) is not None}
        low.prints = tr.prints
        # long loops (docs/nki.md, "Loops kept"): per loop statement, iterations run and
        # replayed, or why its iterations all ran
        low.loops = list(tr.steady_log.values())
        low.steady_fallback = None
        low.tensors = tr.report()
        low.spill = {"spill_save_bytes": tr.spill_bytes, "spill_reload_bytes": tr.reload_bytes,
                     "rematerialized_bytes": sum(r["rematerialized_bytes"] for r in low.tensors),
                     "reissued_loads": sum(r["reissued_loads"] for r in low.tensors),
                     "resident_load_bytes": tr.elided_bytes,
                     "psum_spill_bytes": tr.psum_spill_bytes,
                     "psum_reload_bytes": tr.psum_reload_bytes}
        return low, bound

    @staticmethod
    def _trace(func, sig, bound, pol, source, prev, grid):
        tr = _core.Tracer(pol, source, prev=prev)
        tr.force_auto = getattr(func, "_ncc_force_auto_alloc", False)
        params = {}
        _core._tracer[0] = tr
        try:
            targs = {}

            def param(name, v):
                v = _errors.check_argument(source, _def_line(func), name, v)
                a = _placeholder(v)
                if a is None:
                    return v
                dt = a.nki_dtype if hasattr(a, "nki_dtype") else _dtypes.as_dtype(a.dtype)
                b = tr.new_hbm(name, dt, tuple(a.shape) or (1,), "input")
                b.param = name
                if isinstance(a, np.ndarray):
                    b.host = np.ascontiguousarray(a, dtype=dt.host).reshape(b.shape)
                elif isinstance(a, _typing.TypedValues):
                    b.host = np.ascontiguousarray(a.values).reshape(b.shape)
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
        except (NkiError, _steady.Mismatch):
            raise
        except Exception as e:      # never a bare exception from the package: located
            raise _errors.located(e, source, _def_line(func)) from e
        finally:
            _core._tracer[0] = None
        return tr, ret, params

    # ---- running
    def _run(self, args, kwargs, timing_only=False, trace=None, check=False, seed=0, arch="trn1",
             set=None, pol=None):
        low, bound = self._lower(args, kwargs, self.grid, pol, arch)
        inputs = {}
        for k, v in low.inputs.items():
            if v is None and not timing_only:
                _errors.placeholder_in_functional_run(low, k)
            if timing_only:        # a timing-only run reads no input data: none is made
                continue
            inputs[k] = v
        r = _exec.run(low.text, low.name, inputs, arch=arch, timing_only=timing_only, trace=trace,
                      check=check, seed=seed, set=set)
        _declared_types(low, r.outputs)
        if isinstance(r.stats, dict):
            # what the lowering decided: spills and reloads (docs/nki.md, "Allocation")
            r.stats["nki"] = dict(low.spill, tensors=low.tensors)
        self.last = r
        self.lowered = low
        if not timing_only:
            for prefix, name in low.prints:
                print(prefix, r.outputs[name])
            for arr, tname in low.legacy:
                if isinstance(arr, _typing.TypedValues):    # bf16 outputs passed in (2.20)
                    arr = arr.values
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
        if mode == "baremetal":
            return self._baremetal(args, kwargs)
        low, r = self._run(args, kwargs, **self._runopts())
        return low.values(r.outputs) if low.ret is not None else None

    def _baremetal(self, args, kwargs):
        """nki.baremetal: run with values; write the SDK's artifacts when asked (save_neff_name:
        the lowered program as .ncx, save_trace_name: the trace) and record every option."""
        final, tmp = _trace_target(self.opts.get("save_trace_name"))
        with _removed_on_failure(tmp, final):
            low, r = self._run(args, kwargs, trace=tmp, **self._runopts())
        _write_artifacts(self, low, r, final, tmp)
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
        trace, tmp = _trace_target(self.opts.get("save_trace_name"))
        with _removed_on_failure(tmp, trace):
            low, r = self._run(args, kwargs, timing_only=True, trace=tmp, **self._runopts())
        _write_artifacts(self, low, r, trace, tmp)
        self.benchmark_result = BenchmarkResult(r, self.opts.get("warmup", 10), self.opts.get("iters", 100), trace)
        return None

    def _profile(self, args, kwargs):
        wd = self.opts.get("working_directory")
        if not wd:
            raise _errors.usage("err_invalid_argument",
                                "nki.profile needs working_directory= (an absolute path)")
        os.makedirs(wd, exist_ok=True)
        name = self.opts.get("save_trace_name") or f"{self.func.__name__}.pftrace"
        trace, tmp = _trace_target(os.path.join(wd, name))
        with _removed_on_failure(tmp, trace):
            low, r = self._run(args, kwargs, timing_only=True, trace=tmp, **self._runopts())
        neff = self.opts.get("save_neff_name")
        _write_artifacts(Kernel(self.func, self.mode, self.grid,
                                **{**self.opts, "save_neff_name": neff and os.path.join(wd, neff)}),
                         low, r, trace, tmp)
        # the profiler's summary-json of the run, as `neuron-profile view` would print it
        with open(os.path.join(wd, f"{self.func.__name__}_neuron_profile.json"), "w") as f:
            save, reload_ = _lowering_spills(low)
            f.write(_exec._backend().profile_summary(trace, key=self.func.__name__,
                                                     spill_save_bytes=save,
                                                     spill_reload_bytes=reload_))
        with open(os.path.join(wd, f"{self.func.__name__}.nca"), "w") as f:
            f.write(low.text)
        summary = _summary(r, low, report_from=trace)
        with open(os.path.join(wd, f"{self.func.__name__}_summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        self.profile_result = ProfileResult(r, trace, summary)
        self.benchmark_result = BenchmarkResult(r, 1, 1, trace)
        return None


# --------------------------------------------------------------------------- SDK artifacts

# Trace names ncsim writes directly; any other name (profile.ntff) gets a Perfetto trace (the
# readers tell the formats apart by content), written beside it and renamed into place.
_TRACE_EXTS = (".json", ".json.gz", ".pftrace")


def _trace_target(name):
    """(the trace file asked for, the path the simulator writes) or (None, None)."""
    if not name:
        return None, None
    final = os.path.abspath(os.fspath(name))
    if final.endswith(_TRACE_EXTS):
        return final, final
    return final, final + ".tmp.pftrace"


class _removed_on_failure:
    """A run that raises leaves no temporary trace behind."""

    def __init__(self, tmp, final):
        self.tmp = tmp if tmp and tmp != final else None

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if kind is not None and self.tmp and os.path.exists(self.tmp):
            os.unlink(self.tmp)
        return False


def _jsonable(v):
    if isinstance(v, (str, int, float, bool)) or v is None:
        return v
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items()}
    return repr(v)


def _lowering_spills(low):
    """The lowering's spill statistics, (save bytes, reload bytes): Lowered.spill, which the
    tracer fills (docs/nki.md, "Allocation"); None when a lowering has none."""
    st = getattr(low, "spill", None)
    st = st if isinstance(st, dict) else {}
    save = st.get("spill_save_bytes")
    reload_ = st.get("spill_reload_bytes")
    return (None if save is None else int(save)), (None if reload_ is None else int(reload_))


def _declared_types(low, outputs):
    """Outputs as the kernel declared them where the program's type differs: a bool tensor
    (nl.bool_) is one byte of 0 or 1 on the device and in the NCA program (u8), and comes back
    as a NumPy bool array. bf16, tf32 and fp8 stay float32 values (NumPy has no such types)."""
    for name, dt in low.outputs:
        if dt is _dtypes.bool_ and name in outputs:
            outputs[name] = np.asarray(outputs[name]) != 0


def _write_artifacts(kernel, low, r, trace, tmp):
    """What the SDK's baremetal/benchmark leave behind, as ncsim's own files: the trace under
    save_trace_name (the NTFF), the lowered program as .ncx under save_neff_name (the NEFF),
    and, next to the trace (NAME.ncsim.json) and in artifacts_dir, a record of the kernel, every
    option passed (meaningful to a simulator or not) and the lowering's spills, which
    `ncsim-neuron-profile view` reads."""
    opts = kernel.opts
    if tmp and tmp != trace:
        os.replace(tmp, trace)
    neff = opts.get("save_neff_name")
    if neff:
        neff = os.path.abspath(os.fspath(neff))
        _exec._backend().assemble(low.text, name=low.name).save(neff)
    save, reload_ = _lowering_spills(low)
    record = {"kernel": low.name, "simulator": "ncsim", "simulated": True,
              "options": _jsonable(dict(opts)), "neff": neff, "ntff": trace,
              "total_time": r.time_ns * 1e-9}
    if save is not None:
        record["spill_save_bytes"] = save
    if reload_ is not None:
        record["spill_reload_bytes"] = reload_
    kernel.artifacts = record
    text = json.dumps(record, indent=1) + "\n"
    if trace:
        with open(trace + ".ncsim.json", "w") as f:
            f.write(text)
    adir = opts.get("artifacts_dir")
    if adir:
        adir = os.fspath(adir)
        os.makedirs(adir, exist_ok=True)
        with open(os.path.join(adir, f"{low.name}.nca"), "w") as f:
            f.write(low.text)
        with open(os.path.join(adir, "ncsim_options.json"), "w") as f:
            f.write(text)


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


def _verdict(path):
    """(bottleneck, verdict line) of a trace or statistics file: the verdict of `ncsim report`
    (its C code through the library, ncsim.report), so the runner, nki.profile and
    `ncsim report` never disagree. A trace's verdict follows the critical path; a statistics
    file's compares busy times."""
    import ncsim
    rep = ncsim.report(path)
    bounds = rep.get("bounds") or []
    return (bounds[0]["what"] if bounds else None), rep.get("verdict") or None


def _stats_verdict(stats):
    """The verdict of a run's statistics (written to a temporary file for ncsim.report)."""
    import tempfile
    fd, path = tempfile.mkstemp(prefix="ncsim-nki-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(stats, f)
        return _verdict(path)
    finally:
        os.unlink(path)


def _summary(r, low, report_from=None):
    """Time, instructions, each engine's busy time, and the bottleneck with the verdict of
    `ncsim report` on `report_from` (a trace or statistics file; the run's statistics when
    None)."""
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
    busiest = max(eng.items(), key=lambda kv: kv[1]["busy_ns"])[0] if eng else None
    bott, why = _verdict(report_from) if report_from else _stats_verdict(st)
    return {"kernel": low.name, "total_time_ns": r.time_ns, "instructions": low.instructions,
            "engines": eng, "bottleneck": bott, "verdict": why, "busiest": busiest,
            "verdict_from": "trace" if report_from and _is_trace(report_from) else "statistics",
            "mfu": st.get("mfu"), "hbm": st.get("hbm"),
            "spill": getattr(low, "spill", None)}


def _is_trace(path):
    try:
        with open(path, "rb") as f:
            head = f.read(65536)
    except OSError:
        return False
    return str(path).endswith(".pftrace") or head[:2] == b"\x1f\x8b" or b'"traceEvents"' in head


class _Latency:
    def __init__(self, us):
        self.us = us

    def get_latency_percentile(self, p):
        """Latency in microseconds; every percentile is the simulated time (the simulation is
        deterministic: all iterations take the same time)."""
        if p not in (0, 1, 10, 25, 50, 90, 99, 100) and not 0 <= p <= 100:
            raise _errors.usage("err_invalid_argument", f"percentile {p!r}: a number in 0..100")
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
    """nki.baremetal(kernel, save_neff_name=, save_trace_name=, additional_compile_opt=,
    artifacts_dir=, ...)(*arrays): run on ncsim and return the kernel's value(s). Where the SDK
    saves a NEFF and an NTFF, ncsim saves the lowered program (.ncx) and the trace of the
    simulated run, which `ncsim-neuron-profile view -n NEFF -s NTFF` summarises. Options with no
    meaning for a simulator (compiler flags...) are accepted and recorded, never an error."""
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
