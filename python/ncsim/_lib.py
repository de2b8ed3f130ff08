"""ctypes bindings of libncsim (include/ncsim.h). Internal: use the ncsim package.

The library is found, in order, at $NCSIM_LIBRARY (a file path), in the build tree next to
this source tree (build*/libncsim.so), through the system's loader (LD_LIBRARY_PATH, the
ldconfig cache), then in PREFIX/lib (lib64, lib/<multiarch>) for the Python prefix, the prefix
of the `ncsim` command on PATH (PREFIX/bin/ncsim), /usr/local and /usr (docs/python.md).
"""
import ctypes
import ctypes.util
import glob
import os
import sys

c_int, c_uint, c_int32, c_uint32 = ctypes.c_int, ctypes.c_uint, ctypes.c_int32, ctypes.c_uint32
c_int64, c_uint64, c_size_t = ctypes.c_int64, ctypes.c_uint64, ctypes.c_size_t
c_double, c_char_p, c_void_p = ctypes.c_double, ctypes.c_char_p, ctypes.c_void_p
POINTER, byref = ctypes.POINTER, ctypes.byref

MAX_DIMS = 6
HOST_F32, HOST_RAW = 0, 1


class ErrorInfo(ctypes.Structure):
    _fields_ = [("status", c_int), ("message", c_char_p), ("kind", c_char_p),
                ("file", c_char_p), ("line", c_uint32), ("column", c_uint32),
                ("core", c_int32), ("engine", c_int32), ("instruction", c_int64)]


class TensorInfo(ctypes.Structure):
    _fields_ = [("name", c_char_p), ("memory", c_int), ("dtype", c_int), ("role", c_int),
                ("ndim", c_uint32), ("shape", c_uint64 * MAX_DIMS), ("core", c_int32),
                ("chip", c_int32), ("elements", c_uint64)]


class Options(ctypes.Structure):
    _fields_ = [("timing_only", c_int), ("stochastic_rounding", c_int), ("seed", c_uint64),
                ("checks", c_uint), ("trace_path", c_char_p), ("trace_start_ns", c_double),
                ("trace_end_ns", c_double), ("trace_engines", c_char_p),
                ("program_name", c_char_p)]


class Progress(ctypes.Structure):
    _fields_ = [("now_ns", c_double), ("instructions", c_uint64),
                ("total_instructions", c_uint64), ("host_seconds", c_double)]


ENGINE_COUNT = 6


class Summary(ctypes.Structure):
    _fields_ = [("total_ns", c_double), ("mfu", c_double), ("hfu", c_double),
                ("instructions", c_uint64), ("events", c_uint64), ("tensor_flops", c_uint64),
                ("hbm_read_bytes", c_uint64), ("hbm_write_bytes", c_uint64),
                ("dma_bytes", c_uint64), ("cores_used", c_uint32),
                ("engine_busy_ns", c_double * ENGINE_COUNT),
                ("engine_stall_ns", c_double * ENGINE_COUNT), ("host_seconds", c_double)]


class Site(ctypes.Structure):
    _fields_ = [("valid", c_int), ("core", c_uint32), ("engine", c_int32), ("queue", c_int32),
                ("instruction", c_uint32), ("line", c_uint32), ("write", c_int)]


class Finding(ctypes.Structure):
    _fields_ = [("kind", c_char_p), ("race", c_char_p), ("message", c_char_p),
                ("memory", c_char_p), ("tensor", c_char_p), ("unit", c_uint32),
                ("partition_lo", c_uint32), ("partition_hi", c_uint32),
                ("byte_lo", c_uint64), ("byte_hi", c_uint64), ("first", Site),
                ("second", Site), ("count", c_uint64)]


class ProfileOptions(ctypes.Structure):
    _fields_ = [("format", c_int), ("core", c_uint32), ("program_path", c_char_p),
                ("key", c_char_p), ("spill_save_bytes", c_int64),
                ("spill_reload_bytes", c_int64)]


PROGRESS_FN = ctypes.CFUNCTYPE(c_int, c_void_p, POINTER(Progress))


def _candidates():
    env = os.environ.get("NCSIM_LIBRARY")
    if env:
        yield env
        return
    here = os.path.dirname(os.path.abspath(__file__))
    src = os.path.dirname(os.path.dirname(here))  # python/ncsim -> the source tree
    if os.path.exists(os.path.join(src, "include", "ncsim.h")):
        for d in ["build"] + sorted(os.path.basename(p) for p in glob.glob(os.path.join(src, "build*"))):
            p = os.path.join(src, d, "libncsim.so")
            if os.path.exists(p):
                yield p
    yield "libncsim.so.0"  # the loader: LD_LIBRARY_PATH, the ldconfig cache
    for prefix in (sys.prefix, _command_prefix(), "/usr/local", "/usr"):
        if not prefix:
            continue
        for lib in ("lib", "lib64", "lib/x86_64-linux-gnu", "lib/aarch64-linux-gnu"):
            p = os.path.join(prefix, lib, "libncsim.so.0")
            if os.path.exists(p):
                yield p
    found = ctypes.util.find_library("ncsim")
    if found:
        yield found


def _command_prefix():
    """PREFIX when the `ncsim` command on PATH is PREFIX/bin/ncsim (cmake --install puts the
    command and the library under one prefix), else None."""
    import shutil
    cmd = shutil.which("ncsim")
    if not cmd:
        return None
    cmd = os.path.realpath(cmd)
    d = os.path.dirname(cmd)
    return os.path.dirname(d) if os.path.basename(d) == "bin" else None


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("ncsim: cannot load libncsim (set NCSIM_LIBRARY to its path):\n  "
                      + "\n  ".join(errors))


lib, path = _load()

_P = c_void_p
_protos = {
    "ncsim_version": (c_char_p, []),
    "ncsim_status_name": (c_char_p, [c_int]),
    "ncsim_status_exit_code": (c_int, [c_int]),
    "ncsim_last_error_info": (POINTER(ErrorInfo), []),
    "ncsim_free": (None, [c_void_p]),
    "ncsim_dtype_name": (c_char_p, [c_int]),
    "ncsim_memory_name": (c_char_p, [c_int]),
    "ncsim_role_name": (c_char_p, [c_int]),
    "ncsim_engine_name": (c_char_p, [c_int]),
    "ncsim_preset_name": (c_char_p, [c_size_t]),
    "ncsim_arch_load": (c_int, [c_char_p, POINTER(_P)]),
    "ncsim_arch_from_json": (c_int, [c_char_p, c_size_t, c_char_p, POINTER(_P)]),
    "ncsim_arch_set": (c_int, [_P, c_char_p]),
    "ncsim_arch_validate": (c_int, [_P]),
    "ncsim_arch_to_json": (c_int, [_P, POINTER(c_void_p)]),
    "ncsim_arch_free": (None, [_P]),
    "ncsim_assemble": (c_int, [c_char_p, c_size_t, c_char_p, _P, POINTER(_P)]),
    "ncsim_program_load_file": (c_int, [c_char_p, _P, POINTER(_P)]),
    "ncsim_program_load": (c_int, [c_char_p, c_size_t, c_char_p, _P, POINTER(_P)]),
    "ncsim_program_save": (c_int, [_P, POINTER(c_void_p), POINTER(c_size_t)]),
    "ncsim_program_save_file": (c_int, [_P, c_char_p]),
    "ncsim_program_disassemble": (c_int, [_P, POINTER(c_void_p)]),
    "ncsim_program_free": (None, [_P]),
    "ncsim_program_arch": (c_char_p, [_P]),
    "ncsim_program_instructions": (c_uint64, [_P]),
    "ncsim_program_tensor_count": (c_uint32, [_P]),
    "ncsim_program_tensor": (c_int, [_P, c_uint32, POINTER(TensorInfo)]),
    "ncsim_program_find_tensor": (c_int32, [_P, c_char_p]),
    "ncsim_parse_checks": (c_int, [c_char_p, POINTER(c_uint)]),
    "ncsim_sim_create": (c_int, [_P, _P, POINTER(Options), POINTER(_P)]),
    "ncsim_sim_free": (None, [_P]),
    "ncsim_sim_write_tensor": (c_int, [_P, c_uint32, c_int32, c_int, c_void_p, c_uint32,
                                       POINTER(c_uint64), POINTER(c_int64)]),
    "ncsim_sim_read_tensor": (c_int, [_P, c_uint32, c_int32, c_int, c_void_p, c_size_t]),
    "ncsim_sim_load_npy": (c_int, [_P, c_uint32, c_char_p]),
    "ncsim_sim_load_npy_bytes": (c_int, [_P, c_uint32, c_char_p, c_size_t, c_char_p]),
    "ncsim_sim_save_npy": (c_int, [_P, c_uint32, c_char_p]),
    "ncsim_sim_fill_random": (c_int, [_P, c_uint32, c_uint64]),
    "ncsim_sim_random_inputs": (c_int, [_P, c_uint64]),
    "ncsim_sim_set_progress": (None, [_P, PROGRESS_FN, c_void_p, c_double]),
    "ncsim_sim_cancel": (None, [_P]),
    "ncsim_sim_run": (c_int, [_P]),
    "ncsim_sim_run_until": (c_int, [_P, c_double]),
    "ncsim_sim_step": (c_int, [_P]),
    "ncsim_sim_finished": (c_int, [_P]),
    "ncsim_sim_now_ns": (c_double, [_P]),
    "ncsim_sim_error": (c_char_p, [_P]),
    "ncsim_sim_close_trace": (c_int, [_P]),
    "ncsim_sim_summary": (c_int, [_P, POINTER(Summary)]),
    "ncsim_sim_stats_json": (c_int, [_P, POINTER(c_void_p)]),
    "ncsim_sim_arch_json": (c_int, [_P, POINTER(c_void_p)]),
    "ncsim_sim_finding_count": (c_size_t, [_P]),
    "ncsim_sim_finding": (c_int, [_P, c_size_t, POINTER(Finding)]),
    "ncsim_sim_findings_dropped": (c_uint64, [_P]),
    "ncsim_profile_field": (c_char_p, [c_size_t, POINTER(c_char_p), POINTER(c_char_p),
                                       POINTER(c_int)]),
    "ncsim_profile_options_init": (None, [POINTER(ProfileOptions)]),
    "ncsim_profile_summary": (c_int, [c_char_p, POINTER(ProfileOptions), POINTER(c_void_p)]),
    "ncsim_report_json": (c_int, [c_char_p, POINTER(c_void_p)]),
}
for _name, (_res, _args) in _protos.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args


def take_string(ptr):
    """A char* the library allocated, as str; frees it."""
    try:
        return ctypes.string_at(ptr.value).decode("utf-8", "replace")
    finally:
        lib.ncsim_free(ptr)


def take_bytes(ptr, n):
    try:
        return ctypes.string_at(ptr.value, n)
    finally:
        lib.ncsim_free(ptr)
