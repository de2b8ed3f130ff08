"""The one place where the NKI frontend runs a program on ncsim.

Every simulation, timing run and check of a lowered kernel goes through `run()` and `check()`,
which call the `ncsim` Python package (`ncsim.assemble`, `ncsim.run`, `ncsim.check`)."""
import importlib
import re


def _backend():
    try:
        ncsim = importlib.import_module("ncsim")
    except ImportError:
        ncsim = None
    if ncsim is not None and hasattr(ncsim, "run") and hasattr(ncsim, "assemble"):
        return ncsim
    try:    # a developer's local stand-in while the package is not there (never committed)
        return importlib.import_module("ncsim.nki._local_backend")
    except ImportError:
        raise RuntimeError("the ncsim Python package (ncsim.run, libncsim.so) is not available: "
                           "build the project (cmake --build build) and put python/ on "
                           "PYTHONPATH") from None


class RunResult:
    """Outputs (name -> ndarray), statistics (the --stats JSON as a dict) and total time."""

    def __init__(self, outputs, stats, time_ns, findings=None):
        self.outputs = outputs
        self.stats = stats
        self.time_ns = time_ns
        self.findings = findings


def kernel_line(text, nca_line):
    """(kernel file, kernel line) of line `nca_line` (1-based) of a lowered program: the
    program's `.source` and the last `.loc` at or before that line; (None, 0) when unknown."""
    src, loc = None, 0
    for i, ln in enumerate(text.splitlines(), 1):
        if i > nca_line:
            break
        t = ln.strip()
        if t.startswith(".source "):
            src = t[len(".source "):].strip()
        elif t.startswith(".loc "):
            try:
                loc = int(t.split()[1])
            except (IndexError, ValueError):
                pass
    return src, loc


def _located(text, e, code):
    """An ncsim error raised for the lowered program, as an NkiError at the kernel's line."""
    from ._core import NkiError
    msg = getattr(e, "message", None) or str(e)
    msg = msg.strip().splitlines()[0] if msg.strip() else type(e).__name__
    line = getattr(e, "line", 0) or 0
    source, _ = kernel_line(text, 0)
    for ln in text.splitlines():
        if ln.strip().startswith(".source "):
            source = ln.strip()[len(".source "):].strip()
            break
    if line and source and getattr(e, "file", "") == source:
        src, loc, line = source, line, 0     # already the kernel's line (through .loc)
    else:
        src, loc = kernel_line(text, line) if line else (None, 0)
    if not loc:       # a run-time report names the NCA line in its text: "PROG:LINE:"
        m = re.search(r":(\d+):", msg)
        if m:
            src, loc = kernel_line(text, int(m.group(1)))
    msg = re.sub(r"^[^:\s]*:\d+(:\d+)?:\s*(error:\s*)?", "", msg)
    err = NkiError(f"{src or '<kernel>'}:{loc}: error: [{code}] {msg} "
                   f"(in the lowered program at line {line})" if line else
                   f"{src or '<kernel>'}:{loc}: error: [{code}] {msg}")
    err.ncsim_error = e
    return err


def _assemble(b, text, name):
    try:
        return b.assemble(text, name=name)
    except b.AssemblyError as e:
        raise _located(text, e, "err_unsupported_by_ncsim") from e


def run(text, name, inputs, arch="trn1", timing_only=False, trace=None, check=False, seed=0,
        set=None):
    b = _backend()
    prog = _assemble(b, text, name)
    try:
        r = b.run(prog, inputs, arch=arch, set=set, timing_only=timing_only, trace=trace,
                  check=check, seed=seed)
    except b.ProgramError as e:
        raise _located(text, e, "err_runtime") from e
    stats = r.stats
    t = getattr(r, "time_ns", None)
    if t is None:
        t = stats.get("total_ns")
    return RunResult(dict(r.outputs), stats, float(t), getattr(r, "findings", None))


def check(text, name, inputs, arch="trn1"):
    """`ncsim check` findings of the program (an empty list when it is clean)."""
    b = _backend()
    prog = _assemble(b, text, name)
    return b.check(prog, inputs)
