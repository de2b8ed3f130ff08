"""The ncsim Python API over libncsim (docs/python.md)."""
import collections
import ctypes
import io
import json
import os

import numpy as np

from . import _lib
from ._lib import lib, byref

# ---- exceptions ---------------------------------------------------------------------------


class NcsimError(Exception):
    """Any failure of ncsim: .message (the library's text), .status (e.g. "PROGRAM"),
    .exit_code (that of the ncsim command), .kind, .file, .line."""

    def __init__(self, message, status="INTERNAL", kind="", file="", line=0, **extra):
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.file = file
        self.line = line
        self.exit_code = {"OK": 0, "PROGRAM": 1, "USAGE": 2, "ASSEMBLY": 2, "IO": 3,
                          "FORMAT": 3, "NOMEM": 4, "INTERNAL": 4, "CANCELLED": 130}.get(status, 4)
        for k, v in extra.items():
            setattr(self, k, v)


class AssemblyError(NcsimError):
    """NCA text that does not assemble, or a corrupt .ncx (kind "format"): .file, .line,
    .column of the first error; .message holds every error."""


class ProgramError(NcsimError):
    """The program is wrong at run time: .kind "runtime" or "deadlock" (or a checker kind
    such as "race" when raised for findings), .core, .engine (name), .instruction (index in the
    engine's stream), .line, .details (the whole report)."""


class InputError(NcsimError):
    """Bad data for a tensor: unknown name, wrong shape or type, unbound input, bad .npy."""


class ConfigError(NcsimError):
    """Bad architecture: unknown preset, bad JSON, unknown --set key or value."""


class CancelledError(NcsimError):
    """The progress callback asked to stop (or Simulator.cancel was called)."""


def _error(status):
    """Raise the exception for the last failed library call in this thread."""
    info = lib.ncsim_last_error_info().contents
    name = lib.ncsim_status_name(status).decode()
    msg = (info.message or b"").decode("utf-8", "replace") or name
    kind = (info.kind or b"").decode()
    file = (info.file or b"").decode("utf-8", "replace")
    common = dict(status=name, kind=kind, file=file, line=info.line)
    if name in ("ASSEMBLY", "FORMAT"):
        return AssemblyError(msg, column=info.column, **common)
    if name == "PROGRAM":
        eng = lib.ncsim_engine_name(info.engine).decode() if info.engine >= 0 else None
        return ProgramError(msg, core=info.core if info.core >= 0 else None, engine=eng,
                            instruction=info.instruction if info.instruction >= 0 else None,
                            details=msg, **common)
    if name == "CANCELLED":
        return CancelledError(msg, **common)
    if kind == "input":
        return InputError(msg, **common)
    if kind == "config":
        return ConfigError(msg, **common)
    return NcsimError(msg, **common)


def _check(status):
    if status != 0:
        raise _error(status)


def _b(s):
    return s.encode() if isinstance(s, str) else s


# ---- names ------------------------------------------------------------------------------------

DTYPES = [lib.ncsim_dtype_name(i).decode() for i in range(13)]
MEMORIES = ["sbuf", "psum", "hbm"]
ROLES = ["input", "output", "inout", "scratch", "local"]
ENGINES = [lib.ncsim_engine_name(i).decode() for i in range(_lib.ENGINE_COUNT)]

# tensors whose storage NumPy has: read and written as these types
_NATIVE = {"fp32": np.float32, "fp16": np.float16, "i8": np.int8, "u8": np.uint8,
           "i16": np.int16, "u16": np.uint16, "i32": np.int32, "u32": np.uint32}
_BITS = {1: np.uint8, 2: np.uint16, 4: np.uint32}
_SIZES = {"fp32": 4, "fp16": 2, "bf16": 2, "tf32": 4, "fp8e4": 1, "fp8e5": 1, "fp8e3": 1,
          "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4}


def version():
    return lib.ncsim_version().decode()


def presets():
    out, i = [], 0
    while True:
        n = lib.ncsim_preset_name(i)
        if not n:
            return out
        out.append(n.decode())
        i += 1


# ---- architectures --------------------------------------------------------------------------


class _Arch:
    """An architecture handle (internal): a preset name or file, JSON, a dict, plus overrides."""

    def __init__(self, spec, set=None):
        self._h = None
        h = ctypes.c_void_p()
        if isinstance(spec, dict):
            text = json.dumps(spec).encode()
            _check(lib.ncsim_arch_from_json(text, len(text), b"<dict>", byref(h)))
        elif isinstance(spec, str) and spec.lstrip().startswith("{"):
            text = spec.encode()
            _check(lib.ncsim_arch_from_json(text, len(text), b"<json>", byref(h)))
        else:
            _check(lib.ncsim_arch_load(_b(os.fspath(spec)), byref(h)))
        self._h = h
        try:
            for k, v in _set_items(set):
                _check(lib.ncsim_arch_set(h, f"{k}={v}".encode()))
            _check(lib.ncsim_arch_validate(h))
        except BaseException:
            self.close()
            raise

    def to_dict(self):
        p = ctypes.c_void_p()
        _check(lib.ncsim_arch_to_json(self._h, byref(p)))
        return json.loads(_lib.take_string(p))

    def close(self):
        if getattr(self, "_h", None):
            lib.ncsim_arch_free(self._h)
            self._h = None

    __del__ = close


def _set_items(set):
    if not set:
        return []
    if isinstance(set, dict):
        return [(k, _fmt(v)) for k, v in set.items()]
    return [tuple(s.split("=", 1)) for s in set]  # ["key=value", ...]


def _fmt(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def arch(name_or_path="trn1", set=None):
    """The resolved architecture config as a dict (presets: trn1, inf2, ...; a .json file;
    JSON text; or a dict), with `set` overrides {"hbm.bandwidth_gbps": 1640}."""
    a = _Arch(name_or_path, set)
    try:
        return a.to_dict()
    finally:
        a.close()


# ---- programs ---------------------------------------------------------------------------------

Tensor = collections.namedtuple("Tensor", "name memory dtype shape role core chip")


class Program:
    """An assembled program. Make one with assemble(), assemble_file() or load()."""

    def __init__(self, handle):
        self._h = handle
        self._tensors = None
        self._index = None

    def close(self):
        if getattr(self, "_h", None):
            lib.ncsim_program_free(self._h)
            self._h = None

    __del__ = close

    @property
    def tensors(self):
        """Declared tensors: Tensor(name, memory, dtype, shape, role, core, chip)."""
        if self._tensors is None:
            out = []
            info = _lib.TensorInfo()
            for i in range(lib.ncsim_program_tensor_count(self._h)):
                _check(lib.ncsim_program_tensor(self._h, i, byref(info)))
                out.append(Tensor(info.name.decode(), MEMORIES[info.memory], DTYPES[info.dtype],
                                  tuple(info.shape[d] for d in range(info.ndim)),
                                  ROLES[info.role], info.core if info.core >= 0 else None,
                                  info.chip if info.chip >= 0 else None))
            self._tensors = out
            self._index = {}
            for i, t in enumerate(out):
                self._index.setdefault(t.name, i)
        return self._tensors

    def _tensor(self, name):
        self.tensors
        if name not in self._index:
            known = ", ".join(t.name for t in self._tensors) or "none"
            raise InputError(f"the program declares no tensor '{name}' (tensors: {known})",
                             status="USAGE", kind="input")
        i = self._index[name]
        return i, self._tensors[i]

    @property
    def arch(self):
        """The program's .arch name ('' when none)."""
        return lib.ncsim_program_arch(self._h).decode()

    @property
    def instructions(self):
        return lib.ncsim_program_instructions(self._h)

    def disassemble(self):
        p = ctypes.c_void_p()
        _check(lib.ncsim_program_disassemble(self._h, byref(p)))
        return _lib.take_string(p)

    def to_bytes(self):
        """The .ncx image."""
        p, n = ctypes.c_void_p(), ctypes.c_size_t()
        _check(lib.ncsim_program_save(self._h, byref(p), byref(n)))
        return _lib.take_bytes(p, n.value)

    def save(self, path):
        """Write the .ncx binary."""
        _check(lib.ncsim_program_save_file(self._h, _b(os.fspath(path))))


def _arch_handle(a):
    if a is None:
        return None, None
    if isinstance(a, _Arch):
        return a, a._h
    obj = _Arch(a)
    return obj, obj._h


def assemble(text, *, name="<string>", arch=None):
    """Assemble NCA source text. `arch` (preset, file, dict) gives the memory sizes checked;
    None uses the program's .arch, else trn1. Raises AssemblyError."""
    keep, ah = _arch_handle(arch)
    data = _b(text)
    h = ctypes.c_void_p()
    _check(lib.ncsim_assemble(data, len(data), _b(name), ah, byref(h)))
    return Program(h)


def assemble_file(path, *, arch=None):
    """Read a .nca (assembled) or .ncx (loaded) file."""
    keep, ah = _arch_handle(arch)
    h = ctypes.c_void_p()
    _check(lib.ncsim_program_load_file(_b(os.fspath(path)), ah, byref(h)))
    return Program(h)


def load(path_or_bytes, *, arch=None):
    """A .ncx program from a file path or from bytes."""
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        keep, ah = _arch_handle(arch)
        data = bytes(path_or_bytes)
        h = ctypes.c_void_p()
        _check(lib.ncsim_program_load(data, len(data), b"<bytes>", ah, byref(h)))
        return Program(h)
    return assemble_file(path_or_bytes, arch=arch)


def _program(program, arch=None):
    if isinstance(program, Program):
        return program
    if isinstance(program, (bytes, bytearray, memoryview)):
        return load(program, arch=arch)
    if isinstance(program, os.PathLike):
        return assemble_file(program, arch=arch)
    if isinstance(program, str):
        if "\n" not in program and program.endswith((".nca", ".ncx")):
            return assemble_file(program, arch=arch)
        return assemble(program, arch=arch)
    raise TypeError(f"program: a Program, NCA text, a .nca/.ncx path or .ncx bytes, not "
                    f"{type(program).__name__}")


# ---- simulators -----------------------------------------------------------------------------

Progress = collections.namedtuple("Progress", "now_ns instructions total_instructions host_seconds")
Site = collections.namedtuple("Site", "core engine queue instruction line write")
Finding = collections.namedtuple(
    "Finding", "kind message core engine line instruction race memory tensor first second count")


def _site(s):
    if not s.valid:
        return None
    return Site(s.core, ENGINES[s.engine], s.queue if s.queue >= 0 else None, s.instruction,
                s.line, bool(s.write))


def _checks(check):
    if not check:
        return 0
    if check is True:
        return 0x1F
    text = check if isinstance(check, str) else ",".join(check)
    mask = ctypes.c_uint()
    _check(lib.ncsim_parse_checks(text.encode(), byref(mask)))
    return mask.value


class Simulator:
    """One simulation of a program: bind inputs, run (to the end, until a time, step by step),
    read and write any tensor, statistics and findings. Independent of other simulators."""

    def __init__(self, program, *, arch=None, set=None, timing_only=False, trace=None,
                 check=False, seed=0, stochastic_rounding=False, trace_start_ns=0.0,
                 trace_end_ns=0.0, trace_engines=None):
        self._h = None
        self.program = _program(program, arch if set is None else None)
        spec = arch if arch is not None else (self.program.arch or "trn1")
        a = _Arch(spec, set) if (arch is not None or set) else None
        opt = _lib.Options()
        opt.timing_only = int(bool(timing_only))
        opt.stochastic_rounding = int(bool(stochastic_rounding))
        opt.seed = seed
        opt.checks = _checks(check)
        if trace is not None:
            opt.trace_path = _b(os.fspath(trace))
            opt.trace_start_ns = trace_start_ns
            opt.trace_end_ns = trace_end_ns
            if trace_engines:
                opt.trace_engines = _b(trace_engines if isinstance(trace_engines, str)
                                       else ",".join(trace_engines))
        h = ctypes.c_void_p()
        try:
            _check(lib.ncsim_sim_create(self.program._h, a._h if a else None, byref(opt),
                                        byref(h)))
        finally:
            if a:
                a.close()
        self._h = h
        self.timing_only = bool(timing_only)
        self._progress_cb = None
        self._progress_error = None

    def close(self):
        if getattr(self, "_h", None):
            lib.ncsim_sim_free(self._h)
            self._h = None

    __del__ = close

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- tensor data --

    def write(self, name, array, *, core=None):
        """Store an array in a tensor (inputs before the run; any tensor at any time)."""
        i, t = self.program._tensor(name)
        a = _host_array(t, array)
        raw = a.dtype != np.float32 or t.dtype == "fp32"
        shape = (ctypes.c_uint64 * max(a.ndim, 1))(*a.shape)
        strides = (ctypes.c_int64 * max(a.ndim, 1))(*a.strides)
        _check(lib.ncsim_sim_write_tensor(self._h, i, -1 if core is None else core,
                                          _lib.HOST_RAW if raw else _lib.HOST_F32,
                                          a.ctypes.data, a.ndim, shape, strides))

    def tensor(self, name, raw=False, *, core=None):
        """A tensor's data: fp32, fp16 and integer tensors in their own NumPy type; bf16, tf32
        and fp8 as float32 values, or their bits (uint16/uint32/uint8) with raw=True. SBUF and
        PSUM tensors of every core: `core` picks one (default 0)."""
        i, t = self.program._tensor(name)
        size = _SIZES[t.dtype]
        if raw:
            out, mode = np.empty(t.shape, dtype=_BITS[size]), _lib.HOST_RAW
        elif t.dtype in _NATIVE:
            out, mode = np.empty(t.shape, dtype=_NATIVE[t.dtype]), _lib.HOST_RAW
        else:
            out, mode = np.empty(t.shape, dtype=np.float32), _lib.HOST_F32
        _check(lib.ncsim_sim_read_tensor(self._h, i, -1 if core is None else core, mode,
                                         out.ctypes.data, out.nbytes))
        return out

    def load_array(self, name, array):
        """Bind an input from an array by the rules of `ncsim run --in` and load_npy: the
        array goes to the library as the .npy file numpy.save would write, so a bad array
        meets the same check, message and status as a bad file (docs/python.md)."""
        i, t = self.program._tensor(name)
        a = np.asarray(array)
        if t.dtype not in _NATIVE and a.dtype == np.dtype(_BITS[_SIZES[t.dtype]]) \
                and a.shape == tuple(t.shape):
            return self.write(name, a)  # bf16/tf32/fp8 bits: no file holds those
        buf = io.BytesIO()
        np.save(buf, a, allow_pickle=False)
        data = buf.getvalue()
        _check(lib.ncsim_sim_load_npy_bytes(self._h, i, data, len(data),
                                            f"inputs['{name}']".encode()))

    def load_npy(self, name, path):
        i, _ = self.program._tensor(name)
        _check(lib.ncsim_sim_load_npy(self._h, i, _b(os.fspath(path))))

    def save_npy(self, name, path):
        i, _ = self.program._tensor(name)
        _check(lib.ncsim_sim_save_npy(self._h, i, _b(os.fspath(path))))

    def random_inputs(self, seed=0):
        """Fill every unbound input with seeded uniform values in [-1, 1) (--random-inputs)."""
        _check(lib.ncsim_sim_random_inputs(self._h, seed))

    # -- running --

    def set_progress(self, fn, interval=0.25):
        """fn(Progress) is called between slices of a run; return True to cancel."""
        if fn is None:
            self._progress_cb = None
            lib.ncsim_sim_set_progress(self._h, _lib.PROGRESS_FN(), None, 0.0)
            return

        def tramp(ctx, p):
            try:
                c = p.contents
                return 1 if fn(Progress(c.now_ns, c.instructions, c.total_instructions,
                                        c.host_seconds)) else 0
            except BaseException as e:  # an exception in the callback cancels the run
                self._progress_error = e
                return 1

        self._progress_cb = _lib.PROGRESS_FN(tramp)
        lib.ncsim_sim_set_progress(self._h, self._progress_cb, None, interval)

    def _after(self, status):
        if status != 0:
            err = _error(status)
            if self._progress_error is not None:
                e, self._progress_error = self._progress_error, None
                raise e from err
            raise err

    def run(self):
        """Run to the end. Raises ProgramError (run-time error, deadlock), CancelledError."""
        self._after(lib.ncsim_sim_run(self._h))

    def run_until(self, time_ns):
        self._after(lib.ncsim_sim_run_until(self._h, float(time_ns)))

    def step(self):
        """Process one event."""
        self._after(lib.ncsim_sim_step(self._h))

    def cancel(self):
        """Stop a run at its next slice (callable from another thread)."""
        lib.ncsim_sim_cancel(self._h)

    @property
    def finished(self):
        return bool(lib.ncsim_sim_finished(self._h))

    @property
    def now_ns(self):
        return lib.ncsim_sim_now_ns(self._h)

    @property
    def error(self):
        return lib.ncsim_sim_error(self._h).decode("utf-8", "replace")

    # -- results --

    @property
    def summary(self):
        s = _lib.Summary()
        _check(lib.ncsim_sim_summary(self._h, byref(s)))
        return {"total_ns": s.total_ns, "mfu": s.mfu, "hfu": s.hfu,
                "instructions": s.instructions, "events": s.events,
                "tensor_flops": s.tensor_flops, "hbm_read_bytes": s.hbm_read_bytes,
                "hbm_write_bytes": s.hbm_write_bytes, "dma_bytes": s.dma_bytes,
                "cores_used": s.cores_used, "host_seconds": s.host_seconds,
                "engine_busy_ns": {ENGINES[e]: s.engine_busy_ns[e] for e in range(len(ENGINES))},
                "engine_stall_ns": {ENGINES[e]: s.engine_stall_ns[e]
                                    for e in range(len(ENGINES))}}

    @property
    def time_ns(self):
        return self.now_ns if not self.finished else self.summary["total_ns"]

    def stats(self):
        """The statistics of `ncsim run --stats` as a dict."""
        p = ctypes.c_void_p()
        _check(lib.ncsim_sim_stats_json(self._h, byref(p)))
        return json.loads(_lib.take_string(p))

    def findings(self):
        out = []
        f = _lib.Finding()
        for i in range(lib.ncsim_sim_finding_count(self._h)):
            _check(lib.ncsim_sim_finding(self._h, i, byref(f)))
            first, second = _site(f.first), _site(f.second)
            at = first or second
            out.append(Finding(f.kind.decode(), f.message.decode("utf-8", "replace").rstrip("\n"),
                               at.core if at else f.unit, at.engine if at else None,
                               at.line if at else 0, at.instruction if at else None,
                               f.race.decode() or None, f.memory.decode() or None,
                               f.tensor.decode() or None, first, second, f.count))
        return out


def _host_array(t, array):
    """The array in the form the tensor takes: its own type for fp32/fp16/integer tensors,
    float32 values (or raw bits as an unsigned array of the element width) for the others."""
    a = np.asarray(array)
    if a.shape != tuple(t.shape):
        raise InputError(f"tensor '{t.name}' has shape {tuple(t.shape)}, the array has "
                         f"{a.shape}", status="USAGE", kind="input")
    size = _SIZES[t.dtype]
    if t.dtype in _NATIVE:
        want = np.dtype(_NATIVE[t.dtype])
        if want.kind in "iu":
            if a.dtype.kind == "f":
                if not np.all(np.isfinite(a)) or not np.all(a == np.round(a)):
                    raise InputError(f"tensor '{t.name}' is {t.dtype}: the array holds "
                                     f"non-integral values", status="USAGE", kind="input")
            elif a.dtype.kind not in "iub":
                raise InputError(f"tensor '{t.name}' is {t.dtype}, the array is {a.dtype}",
                                 status="USAGE", kind="input")
            info = np.iinfo(want)
            if a.size and (a.min() < info.min or a.max() > info.max):
                raise InputError(f"tensor '{t.name}' is {t.dtype}: values outside "
                                 f"[{info.min}, {info.max}]", status="USAGE", kind="input")
        elif a.dtype.kind not in "fiub":
            raise InputError(f"tensor '{t.name}' is {t.dtype}, the array is {a.dtype}",
                             status="USAGE", kind="input")
        return a if a.dtype == want else a.astype(want)
    # bf16, tf32, fp8: raw bits as unsigned integers of the element width, else values
    if a.dtype == np.dtype(_BITS[size]):
        return a
    if a.dtype.kind not in "fiub":
        raise InputError(f"tensor '{t.name}' is {t.dtype}, the array is {a.dtype}",
                         status="USAGE", kind="input")
    return a if a.dtype == np.float32 else a.astype(np.float32)


# ---- one-call runs ----------------------------------------------------------------------------


class Result:
    """What run() returns: .outputs, .stats, .time_ns, .tensor(name), .findings, .summary."""

    def __init__(self, sim):
        self.simulator = sim
        self.program = sim.program
        self.time_ns = sim.summary["total_ns"]
        self._outputs = None
        self._stats = None
        self.findings = sim.findings()

    @property
    def outputs(self):
        """Output and inout HBM tensors by name (empty for timing-only runs)."""
        if self._outputs is None:
            self._outputs = {} if self.simulator.timing_only else {
                t.name: self.simulator.tensor(t.name) for t in self.program.tensors
                if t.memory == "hbm" and t.role in ("output", "inout")}
        return self._outputs

    @property
    def stats(self):
        if self._stats is None:
            self._stats = self.simulator.stats()
        return self._stats

    @property
    def summary(self):
        return self.simulator.summary

    def tensor(self, name, raw=False, *, core=None):
        return self.simulator.tensor(name, raw, core=core)

    def __repr__(self):
        return f"<ncsim.Result {self.time_ns:.1f} ns, outputs {sorted(self.outputs)}>"


def run(program, inputs=None, *, arch=None, set=None, timing_only=False, trace=None,
        check=False, seed=0, random_inputs=None, stochastic_rounding=False, progress=None,
        progress_interval=0.25):
    """Simulate a program (Program, NCA text, or a .nca/.ncx path) on `arch` (None: the
    program's .arch, else trn1) and return a Result. `inputs`: name -> array; tensors left
    unbound are filled from `random_inputs` (a seed) when given. `check`: True or a list of
    checks ("races", "uninit", "nan", "psum", "sems"): findings in Result.findings."""
    sim = Simulator(program, arch=arch, set=set, timing_only=timing_only, trace=trace,
                    check=check, seed=seed, stochastic_rounding=stochastic_rounding)
    try:
        if not timing_only:
            for name, array in (inputs or {}).items():
                sim.load_array(name, array)
            if random_inputs is not None:
                sim.random_inputs(random_inputs)
        if progress is not None:
            sim.set_progress(progress, progress_interval)
        sim.run()
        return Result(sim)
    except BaseException:
        sim.close()
        raise


def check(program, inputs=None, *, checks=True, random_inputs=0, **kw):
    """Run the checker (docs/check.md) and return its findings. Inputs not given are filled
    with seeded random values (random_inputs=None leaves them unbound)."""
    return run(program, inputs, check=checks, random_inputs=random_inputs, **kw).findings


# ---- the Neuron profiler's summary -------------------------------------------------------------

PROFILE_FORMATS = {"summary-json": 0, "json": 1, "summary-text": 2}


def profile_summary(path, *, output_format="summary-json", core=0, program=None, key=None,
                    spill_save_bytes=None, spill_reload_bytes=None):
    """The Neuron profiler's summary of a run (ncsim_profile_summary), as text.

    `path`: a trace (`trace=` of run(), `ncsim run --trace`) or a statistics file.
    output_format: "summary-json" ({key: {field: value}}, `neuron-profile view
    --output-format summary-json`), "json" (summary plus a record per instruction and
    transfer) or "summary-text". `program`: the program file that ran (.nca/.ncx), for the
    declared tensor sizes. Fields, units and how each is computed: docs/nki.md."""
    if output_format not in PROFILE_FORMATS:
        raise ValueError(f"output_format: one of {sorted(PROFILE_FORMATS)}, not {output_format!r}")
    opt = _lib.ProfileOptions()
    lib.ncsim_profile_options_init(byref(opt))
    opt.format = PROFILE_FORMATS[output_format]
    opt.core = int(core)
    if program is not None:
        opt.program_path = _b(os.fspath(program))
    if key is not None:
        opt.key = _b(key)
    if spill_save_bytes is not None:
        opt.spill_save_bytes = int(spill_save_bytes)
    if spill_reload_bytes is not None:
        opt.spill_reload_bytes = int(spill_reload_bytes)
    out = ctypes.c_void_p()
    _check(lib.ncsim_profile_summary(_b(os.fspath(path)), byref(opt), byref(out)))
    return _lib.take_string(out)


def profile_fields():
    """The summary's fields in order: [(key, unit, how ncsim computes it, needs a trace)]."""
    out = []
    i = 0
    while True:
        unit, text, tonly = ctypes.c_char_p(), ctypes.c_char_p(), ctypes.c_int()
        key = lib.ncsim_profile_field(i, byref(unit), byref(text), byref(tonly))
        if key is None:
            return out
        out.append((key.decode(), unit.value.decode(), text.value.decode(), bool(tonly.value)))
        i += 1


def report(path):
    """The report of a trace or statistics file as a dict: what `ncsim report --json PATH`
    prints (the same C code), with "verdict" (what bounds the run) and its candidates
    ("bounds", largest first). InputError when the file is unreadable or neither kind."""
    p = ctypes.c_void_p()
    st = lib.ncsim_report_json(os.fsencode(path), byref(p))
    if st != 0:
        e = _error(st)
        if isinstance(e, AssemblyError) or type(e) is NcsimError and e.status in ("IO", "FORMAT"):
            e = InputError(e.message, status=e.status, kind="input", file=str(path))
        raise e
    return json.loads(_lib.take_string(p))
