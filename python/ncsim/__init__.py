"""ncsim: simulate NCA programs for a NeuronCore-v2-class chip from Python (docs/python.md).

    import ncsim, numpy as np
    r = ncsim.run("kernel.nca", {"x": np.ones((128, 64), np.float32)})
    r.outputs["y"], r.time_ns, r.stats, r.tensor("acc")

A thin layer over libncsim (ctypes, no compiled extension). Arrays go in and out as NumPy
arrays; errors raise NcsimError subclasses that carry the program location.
"""
try:
    from ._core import (AssemblyError, CancelledError, ConfigError, Finding, InputError,
                        NcsimError, Program, ProgramError, Progress, Result, Simulator, Site,
                        Tensor, arch, assemble, assemble_file, check, load, presets,
                        profile_fields, profile_summary, report, run, version)
    from ._lib import path as library_path

    __version__ = version()
except ImportError as _missing:
    # Without libncsim the pure-Python parts (ncsim.builder, which kernel generators use)
    # still import; anything that needs the library says why it is not there.
    _why = str(_missing)

    def __getattr__(name):
        raise AttributeError(f"ncsim.{name} needs libncsim, which did not load: {_why}")

__all__ = ["AssemblyError", "CancelledError", "ConfigError", "Finding", "InputError",
           "NcsimError", "Program", "ProgramError", "Progress", "Result", "Simulator", "Site",
           "Tensor", "arch", "assemble", "assemble_file", "check", "load", "presets",
           "profile_fields", "profile_summary", "report", "run",
           "version", "library_path"]
