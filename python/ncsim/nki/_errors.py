"""Careless and hostile input to the NKI frontend: kernel arguments, lowering policies, and
exceptions that are not the frontend's own, all turned into `NkiError`s located at the kernel.

Every exception that leaves `ncsim.nki` is an `NkiError` ("FILE:LINE: error: [code] ...") or
one of the `ncsim` errors (docs/nki.md, "Errors")."""
import dis
import os
import re
import traceback

import numpy as np

from . import typing as _typing
from ._core import NkiError, Policy, Tensor, _NCSIM_DIR, _PKG_DIR
from . import _core

_EXAMPLES = os.path.join(_PKG_DIR, "examples", "")


def _in_package(fn):
    return fn.startswith(_NCSIM_DIR) and not fn.startswith(_EXAMPLES)


def _err(fn, ln, code, msg):
    return NkiError(f"{fn}:{ln}: error: [{code}] {msg}")


# --------------------------------------------------------------------------- API misuse

class NkiUsageError(NkiError, ValueError):
    """A call of the ncsim.nki API itself made wrongly (not a kernel error): an NkiError, and a
    ValueError as such misuse is in Python, located at the calling line."""


def usage(code, msg):
    fn, ln = _core.user_frame()
    return NkiUsageError(f"{fn}:{ln}: error: [{code}] {msg}")


MODES = ("auto", "baremetal", "simulation", "benchmark", "profile", "jax", "torchxla")


def check_kernel(func, mode, opts):
    if not callable(func) or not hasattr(func, "__code__"):
        raise usage("err_invalid_kernel", f"a kernel is a Python function, not {_describe(func)}")
    if mode not in MODES:
        raise usage("err_invalid_mode", f"mode={mode!r}: one of {', '.join(MODES)}")
    for k in ("warmup", "iters"):
        v = opts.get(k)
        if v is not None and (not isinstance(v, (int, np.integer)) or isinstance(v, bool) or v < 0):
            raise usage("err_invalid_argument", f"{k}={v!r}: a count (an integer >= 0)")


def check_grid(grid):
    g = []
    for x in grid:
        n = getattr(x, "n", x)
        if not isinstance(n, (int, np.integer)) or isinstance(n, bool) or n <= 0:
            raise usage("err_invalid_grid", f"launch grid {tuple(grid)!r}: every size is a "
                        "positive integer")
        g.append(int(n))
    if not g:
        raise usage("err_invalid_grid", "an empty launch grid")
    return tuple(g)


# --------------------------------------------------------------------------- arguments

def _describe(v):
    t = type(v)
    mod = t.__module__
    return t.__name__ if mod in ("builtins", None) else f"{mod}.{t.__name__}"


def check_argument(source, line, name, v):
    """A kernel argument as the tracer takes it: NumPy arrays (of a type NKI has), typed values,
    `nt.tensor[...]` placeholders, tensors of an enclosing kernel, and compile-time constants
    (Python scalars, tuples, strings, dtypes, None; NumPy scalars become Python scalars).
    Anything else that looks like an array is refused, naming the argument."""
    if isinstance(v, np.ndarray):
        if v.dtype.kind in "fiub" and v.dtype.itemsize <= 8:
            try:
                from ._dtypes import as_dtype
                as_dtype(v.dtype)
            except TypeError as e:
                raise _err(source, line, "err_unsupported_dtype", f"argument '{name}': {e}") from None
            if v.ndim == 0:
                raise _err(source, line, "err_invalid_argument",
                           f"argument '{name}' is a 0-d array: pass a Python scalar for a "
                           "compile-time constant, or an array of shape (1,) for a tensor")
            if 0 in v.shape:
                raise _err(source, line, "err_invalid_argument",
                           f"argument '{name}' has an empty shape {v.shape}")
            return v
        if v.dtype.kind == "V" and v.dtype.itemsize in (1, 2):
            raise _err(source, line, "err_unsupported_dtype",
                       f"argument '{name}' is an array of raw {v.dtype.itemsize}-byte values "
                       "(bfloat16/fp8 without ml_dtypes?): pass ncsim.nki.typed(float32 values, "
                       "nl.bfloat16), or give the runner --arg FILE.npy:bfloat16")
        raise _err(source, line, "err_unsupported_dtype",
                   f"argument '{name}' has NumPy type {v.dtype}, which NKI has no equivalent of")
    if isinstance(v, (_typing.TypedValues, _typing._Placeholder, Tensor)):
        if isinstance(v, (_typing.TypedValues, _typing._Placeholder)) and (
                not v.shape or 0 in v.shape or any(int(s) < 0 for s in v.shape)):
            raise _err(source, line, "err_invalid_argument",
                       f"argument '{name}' has an invalid shape {tuple(v.shape)}")
        return v
    if isinstance(v, np.generic):
        return v.item()          # a compile-time constant, like a Python scalar
    if hasattr(v, "shape") or hasattr(v, "__array__") or hasattr(v, "__array_interface__") \
            or isinstance(v, (memoryview, bytearray)):
        raise _err(source, line, "err_invalid_argument",
                   f"argument '{name}' is a {_describe(v)}: pass a NumPy array (values), an "
                   "nt.tensor[[shape], dtype] placeholder (timing only), ncsim.nki.typed(values, "
                   "dtype), or a compile-time constant")
    if isinstance(v, (list, dict, set)) and _has_array(v):
        raise _err(source, line, "err_invalid_argument",
                   f"argument '{name}' is a {type(v).__name__} holding arrays: pass each tensor "
                   "as its own argument")
    return v


def _has_array(v):
    items = v.values() if isinstance(v, dict) else v
    return any(isinstance(x, np.ndarray) or hasattr(x, "shape") for x in items)


def placeholder_in_functional_run(low, tensor_name):
    name, source, line = low.params.get(tensor_name, (tensor_name, "<kernel>", 0))
    raise _err(source, line, "err_placeholder_in_functional_run",
               f"argument '{name}' is an nt.tensor[...] placeholder, which has no values: a "
               "functional run needs a NumPy array (placeholders are for nki.benchmark and "
               "nki.profile)")


# --------------------------------------------------------------------------- policies

_DMA_ENGINES = ("sp", "act", "pool", "pe", "dve")
_ALU_ENGINES = ("dve", "act", "pool")


def _engine(v, allowed, auto=False):
    return isinstance(v, str) and (v in allowed or auto and v == "auto")


def _int(v, lo, hi=None):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= lo and \
        (hi is None or v <= hi)


# attribute -> (test, what it must be)
_CHECKS = {
    "load_engine": (lambda v: _engine(v, _DMA_ENGINES), "one of sp, act, pool, pe, dve"),
    "store_engine": (lambda v: _engine(v, _DMA_ENGINES), "one of sp, act, pool, pe, dve"),
    "load_queues": (lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and
                    all(_int(q, 0, 15) for q in v), "a non-empty list of queues 0..15"),
    "store_queues": (lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and
                     all(_int(q, 0, 15) for q in v), "a non-empty list of queues 0..15"),
    "dma_split_partitions": (lambda v: _int(v, 0) and v in (0, 32, 64), "0, 32 or 64"),
    "sbuf_bufs": (lambda v: _int(v, 1, 64), "an integer 1..64"),
    "psum_bufs": (lambda v: _int(v, 1, _core.PSUM_BANKS), f"an integer 1..{_core.PSUM_BANKS}"),
    "sbuf_bytes": (lambda v: _int(v, 64, 192 * 1024), "a byte count 64..196608"),
    "copy_engine": (lambda v: _engine(v, _ALU_ENGINES, auto=True), "auto, dve, act or pool"),
    "memset_engine": (lambda v: _engine(v, ("dve", "pool")), "dve or pool"),
    "elementwise_engine": (lambda v: _engine(v, ("dve", "pool")), "dve or pool"),
    "scalar_op_engine": (lambda v: _engine(v, _ALU_ENGINES, auto=True), "auto, dve, act or pool"),
    "balance_engines": (lambda v: isinstance(v, (list, tuple)) and len(v) > 0 and
                        all(_engine(e, _ALU_ENGINES) for e in v),
                        "a non-empty list of dve, act, pool"),
    "per_partition_op_engine": (lambda v: _engine(v, _ALU_ENGINES, auto=True),
                                "auto, dve, act or pool"),
    "reciprocal_engine": (lambda v: v in ("table", "dve", "act"), "table, dve or act"),
    "transcendental_engine": (lambda v: v == "act", "act (ScalarE runs the activation table)"),
    "lend_buffers": (lambda v: v in ("share", "lend"), "share or lend"),
    "loop_buffers": (lambda v: v in ("rotate", "lru"), "rotate or lru"),
    "reload_at_uses": (lambda v: isinstance(v, bool), "True or False"),
    "psum_spill": (lambda v: isinstance(v, bool), "True or False"),
    "psum_spill_engine": (lambda v: _engine(v, ("dve", "act")),
                          "dve or act (the engines that read and write PSUM)"),
    "native_passes": (lambda v: v in ("auto", "c", "python"), "auto, c or python"),
    "schedule_window": (lambda v: _int(v, 0, 1 << 20), "an integer 0..1048576 (0 or 1: the "
                        "kernel's order)"),
}


def make_policy(pol, source, line):
    """The lowering policy of one call: a `Policy`, or a dict of overrides of the global one;
    every value checked (unknown options and bad values are NkiErrors at the kernel)."""
    if pol is None:
        p = _core.policy.copy()
    elif isinstance(pol, Policy):
        p = pol
    elif isinstance(pol, dict):
        bad = [k for k in pol if not isinstance(k, str) or not hasattr(_core.policy, k)]
        if bad:
            raise _err(source, line, "err_invalid_policy",
                       f"unknown lowering policy option {bad[0]!r}")
        p = _core.policy.copy(**pol)
    else:
        raise _err(source, line, "err_invalid_policy",
                   f"policy must be a dict of options or an ncsim.nki.Policy, not {_describe(pol)}")
    for k, (ok, what) in _CHECKS.items():
        if hasattr(p, k):
            v = getattr(p, k)
            try:
                good = ok(v)
            except Exception:           # a hostile value whose comparisons raise
                good = False
            if not good:
                raise _err(source, line, "err_invalid_policy",
                           f"policy {k}={v!r}: must be {what}")
    return p


# --------------------------------------------------------------------------- stray exceptions

_MODULES = {"language.py": "nl", "isa.py": "nisa", "compiler.py": "ncc", "typing.py": "nt",
            "_core.py": "tensor"}


def _api_call(frames):
    """The NKI call the kernel made when the exception happened: the first frame inside the
    package after the kernel's last frame (e.g. 'nl.ndarray'), or ''."""
    last_user = -1
    for i, fr in enumerate(frames):
        if not _in_package(fr.filename):
            last_user = i
    if last_user < 0 or last_user + 1 >= len(frames):
        return ""
    fr = frames[last_user + 1]
    mod = _MODULES.get(os.path.basename(fr.filename))
    if mod is None or fr.name.startswith("<"):
        return ""
    name = fr.name
    if name in ("f", "emit") or name.startswith("_"):
        dunder = {"__getitem__": "indexing", "__setitem__": "assignment", "__init__": "a constructor"}
        name = dunder.get(name, name.strip("_"))
        return f"{mod} {name}" if mod == "tensor" else f"an {mod} call"
    return f"{mod}.{name}" if mod != "tensor" else f"tensor.{name}"


def _unbound_line(e, source, ln):
    """The line of the read of an unbound local. CPython 3.11 fuses a STORE_FAST and the
    LOAD_FAST after it into one instruction once the code has run a few times (a kernel traced
    twice), and a failing load is then reported at the store's line, the statement before."""
    m = re.search(r"local variable '(\w+)'", str(e))
    tb = e.__traceback__
    last = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == source:
            last = tb
        tb = tb.tb_next
    if m is None or last is None:
        return ln
    ins = list(dis.get_instructions(last.tb_frame.f_code))
    for a, b in zip(ins, ins[1:]):
        if a.offset == last.tb_lasti:
            if a.opname == "STORE_FAST" and b.opname.startswith("LOAD_FAST") and \
                    b.argval == m.group(1) and b.positions and b.positions.lineno:
                return b.positions.lineno
            break
    return ln


def located(e, source, def_line):
    """An exception raised while tracing or lowering that is not an NkiError, as one located
    at the kernel: the innermost frame of the kernel's file (else outside the package).
    An exception raised inside ncsim.nki means a call ncsim does not handle
    (err_unsupported_by_ncsim, with the Python exception's text); one raised by the kernel's
    own Python code keeps its type in the message (err_kernel_exception)."""
    frames = traceback.extract_tb(e.__traceback__)
    fn, ln = source, def_line
    found = False
    for fr in reversed(frames):
        if fr.filename == source:
            fn, ln, found = fr.filename, fr.lineno, True
            break
    if found and isinstance(e, UnboundLocalError):
        ln = _unbound_line(e, source, ln)
    if not found:
        for fr in reversed(frames):
            if not _in_package(fr.filename):
                fn, ln = fr.filename, fr.lineno
                break
    inner = frames[-1].filename if frames else ""
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    what = f"{type(e).__name__}: {text}" if text else type(e).__name__
    if inner and _in_package(inner):
        api = _api_call(frames)
        if os.path.basename(inner) == "_dtypes.py":
            err = _err(fn, ln, "err_invalid_dtype", f"{api + ': ' if api else ''}{text or what}")
        elif api and isinstance(e, (TypeError, ValueError, ZeroDivisionError, IndexError,
                                    KeyError, AttributeError, OverflowError)):
            err = _err(fn, ln, "err_invalid_argument",
                       f"{api} cannot take these arguments ({what}); if they are valid NKI, "
                       "ncsim does not support this use of it")
        else:
            err = _err(fn, ln, "err_unsupported_by_ncsim",
                       f"ncsim.nki cannot lower this call ({what})")
    else:
        err = _err(fn, ln, "err_kernel_exception", what)
    err.original = e
    return err
