"""The one place where the NKI frontend runs a program on ncsim.

Every simulation, timing run and check of a lowered kernel goes through `run()` and `check()`,
which call the `ncsim` Python package (`ncsim.assemble`, `ncsim.run`, `ncsim.check`)."""
import importlib


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


def run(text, name, inputs, arch="trn1", timing_only=False, trace=None, check=False, seed=0,
        set=None):
    b = _backend()
    prog = b.assemble(text, name=name)
    r = b.run(prog, inputs, arch=arch, set=set, timing_only=timing_only, trace=trace,
              check=check, seed=seed)
    stats = r.stats
    t = getattr(r, "time_ns", None)
    if t is None:
        t = stats.get("total_ns")
    return RunResult(dict(r.outputs), stats, float(t), getattr(r, "findings", None))


def check(text, name, inputs, arch="trn1"):
    """`ncsim check` findings of the program (an empty list when it is clean)."""
    b = _backend()
    prog = b.assemble(text, name=name)
    return b.check(prog, inputs)
