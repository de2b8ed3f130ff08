"""ncsim-nki (or python3 -m ncsim.nki): run an unmodified NKI kernel file on ncsim.

    ncsim-nki run KERNEL.py FUNC [--arg A ...] [--grid 2,2] [--out DIR]
                  [--benchmark] [--stats S.json] [--trace T.pftrace] [--nca K.nca] [--check]

Each --arg is one positional argument of the kernel, in order: FILE.npy, FILE.npy:DTYPE (the
file's values converted to DTYPE, e.g. a float32 file read as bfloat16), `rand:SHAPE[:DTYPE]`
(uniform [0, 1) values seeded by the argument's position, e.g. rand:128x512:bfloat16; no
ml_dtypes needed; integers in [0, 100), bool True or False about equally often), or a Python literal (1e-5, (3, 4), True). The file may `import neuronxcc.nki
as nki`, `neuronxcc.nki.language as nl` and `neuronxcc.nki.isa as nisa`: the runner installs
ncsim's alias for them first, and refuses if a real neuronxcc is importable (use ncsim.nki
directly then).
Errors are one line, FILE:LINE: error: ... at the kernel's line where there is one.
Exit codes: 0 ok, 1 the kernel or the program is wrong (NKI error, run-time error, check
findings), 2 usage error, 3 a file cannot be read or written, 4 internal error.
"""
import argparse
import ast
import importlib.util
import json
import os
import sys
import traceback

import numpy as np

EXIT_OK, EXIT_KERNEL, EXIT_USAGE, EXIT_IO, EXIT_INTERNAL = 0, 1, 2, 3, 4


class _Fail(Exception):
    """A runner error: one line and an exit code."""

    def __init__(self, msg, code):
        super().__init__(msg)
        self.code = code


def _prog():
    return os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] and \
        not sys.argv[0].endswith("__main__.py") else "python3 -m ncsim.nki"


def _dtype(name, where):
    from . import _dtypes
    try:
        return _dtypes.as_dtype(name)
    except (TypeError, ValueError):
        raise _Fail(f"{where}: unknown data type {name!r} (float32, bfloat16, float16, int32, ...)",
                    EXIT_USAGE) from None


def _with_type(values, dt):
    """Host values for a kernel argument of NKI type dt (bf16/fp8 as typed float32 values).
    A file of raw 2-byte values (what ml_dtypes' bfloat16 arrays are saved as, read without
    ml_dtypes) read as bfloat16 is taken bit for bit."""
    from . import typed
    if values.dtype.kind == "V" and values.dtype.itemsize == 2 and dt.name == "bfloat16":
        bits = values.view(np.uint16).astype(np.uint32) << 16
        return typed(bits.view(np.float32), dt)
    if values.dtype.kind not in "fiub":
        raise _Fail(f"a .npy of {values.dtype} cannot be read as {dt.name} (raw 2-byte values "
                    "only as bfloat16)", EXIT_USAGE)
    if dt.host == np.dtype(np.float32) and dt.name != "float32":
        return typed(values.astype(np.float32), dt)
    return values.astype(dt.host)


def parse_arg(s, i=0):
    where = f"--arg {i + 1} ({s!r})"
    path, sep, tail = s.rpartition(":")
    if sep and path.endswith(".npy"):          # FILE.npy:DTYPE
        return _with_type(_load_npy(path, where), _dtype(tail, where))
    if s.endswith(".npy"):
        return _load_npy(s, where)
    if s.startswith("rand:"):
        parts = s.split(":")
        if len(parts) not in (2, 3) or not parts[1]:
            raise _Fail(f"{where}: write rand:SHAPE[:DTYPE], e.g. rand:128x512:bfloat16", EXIT_USAGE)
        try:
            shape = tuple(int(x) for x in parts[1].lower().split("x"))
        except ValueError:
            raise _Fail(f"{where}: shape {parts[1]!r} is not like 128x512", EXIT_USAGE) from None
        if not shape or any(n <= 0 for n in shape) or int(np.prod(shape, dtype=np.float64)) > 1 << 31:
            raise _Fail(f"{where}: shape {parts[1]!r} must have positive sizes (at most 2^31 "
                        "elements)", EXIT_USAGE)
        dt = _dtype(parts[2] if len(parts) == 3 else "float32", where)
        v = np.random.default_rng(i).random(shape)     # seeded by the position: arguments differ
        if dt.name == "bool_":
            v = v < 0.5                                  # True and False about equally often
        elif dt.is_int:
            v = v * 100
        return _with_type(v, dt)
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        raise _Fail(f"{where}: cannot read it (FILE.npy, FILE.npy:DTYPE, rand:SHAPE:DTYPE or a "
                    "Python literal)", EXIT_USAGE) from None


def _load_npy(path, where):
    try:
        return np.load(path, allow_pickle=False)
    except FileNotFoundError:
        raise _Fail(f"{path}: no such file ({where})", EXIT_IO) from None
    except (OSError, ValueError, EOFError) as e:
        raise _Fail(f"{path}: cannot read a .npy array ({where}): {e}", EXIT_IO) from None


def _load_kernel(path, func):
    from . import Kernel
    if not os.path.isfile(path):
        raise _Fail(f"{path}: no such file", EXIT_IO)
    sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec = importlib.util.spec_from_file_location("_nki_kernel_file", path)
    if spec is None:
        raise _Fail(f"{path}: cannot load it as Python (a .py file)", EXIT_USAGE)
    mod = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(mod)
    except SyntaxError as e:
        raise _Fail(f"{e.filename or path}:{e.lineno or 0}: error: [err_kernel_exception] "
                    f"SyntaxError: {e.msg}", EXIT_KERNEL) from None
    except OSError as e:
        raise _Fail(f"{path}: cannot read: {e.strerror or e}", EXIT_IO) from None
    except Exception as e:
        raise _Fail(_located_exception(e, path), EXIT_KERNEL) from None
    fn = getattr(mod, func, None)
    if fn is None:
        raise _Fail(f"{path}: has no {func!r}", EXIT_USAGE)
    if not isinstance(fn, Kernel) and (not callable(fn) or not hasattr(fn, "__code__")):
        raise _Fail(f"{path}: {func!r} is not a function", EXIT_USAGE)
    return fn if isinstance(fn, Kernel) else Kernel(fn)


def _located_exception(e, path):
    """An exception raised by the kernel file itself, at its innermost line in that file."""
    fn, ln = path, 0
    for fr in reversed(traceback.extract_tb(e.__traceback__)):
        if os.path.abspath(fr.filename) == os.path.abspath(path):
            fn, ln = fr.filename, fr.lineno
            break
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{fn}:{ln}: error: [err_kernel_exception] {type(e).__name__}" + (f": {text}" if text else "")


def _grid(s):
    try:
        g = tuple(int(x) for x in s.split(","))
    except ValueError:
        g = ()
    if not g or any(n <= 0 or n > 1 << 16 for n in g):
        raise _Fail(f"--grid {s!r}: write positive sizes separated by commas, e.g. 2,2", EXIT_USAGE)
    return g


def _write(path, what, fn):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        fn(tmp)
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise _Fail(f"{path}: cannot write the {what}: {e.strerror or e}", EXIT_IO) from None


def _text_writer(text):
    def w(p):
        with open(p, "w") as f:
            f.write(text)
    return w


def _check_output(opt, p):
    """Outputs are checked before the run (a long run must not end in 'cannot write')."""
    if not p:
        return
    if opt == "out":
        if os.path.exists(p) and not os.path.isdir(p):
            raise _Fail(f"--out {p}: exists and is not a folder", EXIT_IO)
        parent = os.path.abspath(p)          # made with its parents: the nearest existing one
        while not os.path.exists(parent) and os.path.dirname(parent) != parent:
            parent = os.path.dirname(parent)
    else:
        if os.path.isdir(p):
            raise _Fail(f"--{opt} {p}: is a folder", EXIT_IO)
        parent = os.path.dirname(os.path.abspath(p))
    if not os.path.isdir(parent):
        raise _Fail(f"--{opt} {p}: no folder {parent}", EXIT_IO)
    if not os.access(parent, os.W_OK):
        raise _Fail(f"--{opt} {p}: the folder {parent} is not writable", EXIT_IO)


def _npy_writer(v):
    def w(p):
        with open(p, "wb") as f:
            np.save(f, v)
    return w


def _result_names(low):
    """The HBM tensors that are the kernel's results: those it returns and those passed in as
    outputs (2.20 style); a shared_hbm scratch tensor it writes and reads back is not one. None
    when the kernel names none (every written tensor is written out then)."""
    names = set()

    def walk(r):
        if isinstance(r, str):
            names.add(r)
        elif isinstance(r, (tuple, list)):
            for x in r:
                walk(x)
    walk(low.ret)
    names.update(t for _host, t in low.legacy)
    return names or None


def _run(a):
    from . import NkiError, install_neuronxcc_alias, _exec, _summary
    try:
        install_neuronxcc_alias()
    except RuntimeError as e:
        raise _Fail(str(e), EXIT_USAGE) from None
    for opt in ("out", "stats", "trace", "nca"):
        p = getattr(a, opt)
        if p is not None and not p:
            raise _Fail(f"--{opt} needs a path", EXIT_USAGE)
        _check_output(opt, p)
    k = _load_kernel(a.file, a.func)
    if a.grid:
        k = k[_grid(a.grid)]
    args = [parse_arg(s, i) for i, s in enumerate(a.arg)]
    try:
        import ncsim
        ncsim_errors = (ncsim.NcsimError,)
    except ImportError as e:
        raise _Fail(f"the ncsim package cannot load libncsim: {e}", EXIT_IO) from None
    if a.arch not in ncsim.presets() and not os.path.isfile(a.arch):
        raise _Fail(f"--arch {a.arch!r}: neither a preset ({', '.join(ncsim.presets())}) nor a "
                    "config file", EXIT_USAGE)
    try:
        low, res = k._run(args, {}, timing_only=a.benchmark, trace=a.trace, arch=a.arch)
        findings = []
        if a.check:
            findings = _exec.check(low.text, low.name, {n: v for n, v in low.inputs.items()
                                                         if v is not None}, arch=a.arch)
    except NkiError as e:
        raise _Fail(str(e).splitlines()[0], EXIT_KERNEL) from None
    except ncsim_errors as e:
        msg = (getattr(e, "message", "") or str(e)).strip().splitlines()
        raise _Fail(msg[0] if msg else type(e).__name__, getattr(e, "exit_code", EXIT_INTERNAL)) \
            from None
    if a.nca:
        _write(a.nca, "NCA program", _text_writer(low.text))
    if a.stats:
        _write(a.stats, "statistics", _text_writer(json.dumps(res.stats, indent=1)))
    if a.out and not a.benchmark:
        try:
            os.makedirs(a.out, exist_ok=True)
        except OSError as e:
            raise _Fail(f"{a.out}: cannot make the output folder: {e.strerror or e}", EXIT_IO) from None
        keep = _result_names(low)
        for name, v in res.outputs.items():
            if keep is None or name in keep:
                _write(os.path.join(a.out, name + ".npy"), "output", _npy_writer(v))
    s = _summary(res, low, report_from=a.trace or a.stats)
    eng = ", ".join(f"{e} {v['utilisation'] * 100:.0f}%" for e, v in s["engines"].items())
    print(f"{low.name}: {res.time_ns / 1000:.3f} us simulated, {low.instructions} instructions; "
          f"busy: {eng}; bottleneck {s['bottleneck']}")
    if s.get("verdict"):
        print(f"verdict: {s['verdict']}")
    if a.check:
        print(f"ncsim check: {'clean' if not findings else str(len(findings)) + ' findings'}")
        for f in findings[:10]:
            print("  ", f.get("kind") if isinstance(f, dict) else f)
        if findings:
            return EXIT_KERNEL
    return EXIT_OK


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _Fail(f"{message} (see --help)", EXIT_USAGE)


def main(argv=None):
    prog = _prog()
    ap = _Parser(prog=prog, description=__doc__.split("\n")[0].split(": ", 1)[-1])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    r = sub.add_parser("run", help="trace, simulate and time a kernel",
                       description=__doc__.split("\n\n", 2)[2].strip(),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("file")
    r.add_argument("func")
    r.add_argument("--arg", action="append", default=[], help="a kernel argument, in order")
    r.add_argument("--grid", help="SPMD launch grid, e.g. 2,2")
    r.add_argument("--out", help="directory for the outputs (NAME.npy)")
    r.add_argument("--benchmark", action="store_true", help="timing only (nki.benchmark)")
    r.add_argument("--stats", help="write the statistics JSON here")
    r.add_argument("--trace", help="write a trace (.json, .json.gz, .pftrace)")
    r.add_argument("--nca", help="write the lowered NCA program here")
    r.add_argument("--check", action="store_true", help="run `ncsim check` on the lowered program")
    r.add_argument("--arch", default="trn1")
    try:
        a = ap.parse_args(argv)
        return _run(a)
    except _Fail as e:
        print(f"{prog}: {e}" if not _located(str(e)) else str(e), file=sys.stderr)
        return e.code
    except SystemExit as e:      # --help
        return e.code if isinstance(e.code, int) else EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as e:       # a bug of ours: still one line, and the internal-error code
        print(f"{prog}: internal error: {type(e).__name__}: {str(e).strip()[:300]}", file=sys.stderr)
        return EXIT_INTERNAL


def _located(msg):
    head = msg.split(": error:", 1)[0]
    return ": error:" in msg and ":" in head and head.rsplit(":", 1)[-1].isdigit()


if __name__ == "__main__":
    sys.exit(main())
