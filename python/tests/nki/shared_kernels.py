"""The public NKIBench kernels and their NumPy references, run unmodified from where they are
kept: `../shared/reference/nki-kernels/` next to the project root, or the folder of kernels
named by $NCSIM_NKI_KERNELS. They are never part of the repository; a test that needs them is
skipped when they are absent."""
import importlib.util
import os

import pytest

import ncsim.nki as nki


def kernels_dir():
    """The folder of the kernels (…/nki-kernels/kernels), or None."""
    d = os.environ.get("NCSIM_NKI_KERNELS")
    if not d:
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.abspath(__file__)))))
        d = os.path.join(os.path.dirname(root), "shared", "reference", "nki-kernels", "kernels")
    return d if os.path.isdir(d) else None


def _module(path, key):
    spec = importlib.util.spec_from_file_location(key, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel_module(name, key):
    """The kernel file `name`.py as module `key` (its `import neuronxcc.nki` through the
    alias); skips the test when the kernels are not here."""
    d = kernels_dir()
    if d is None or not os.path.isfile(os.path.join(d, name + ".py")):
        pytest.skip("the shared NKI kernels are not here (set NCSIM_NKI_KERNELS)")
    nki.install_neuronxcc_alias()
    return _module(os.path.join(d, name + ".py"), key)


def reference_module(name, key):
    """The NumPy reference of kernel `name` (reference/<stem>_numpy*.py beside kernels/)."""
    refdir = os.path.join(os.path.dirname(kernels_dir()), "reference")
    stem = name.rsplit("_", 1)[0]
    refs = sorted(f for f in os.listdir(refdir) if f.startswith(stem + "_numpy"))
    return _module(os.path.join(refdir, refs[0]), key)
