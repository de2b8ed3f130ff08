"""Install the ncsim Python package: `pip install ./python` (offline: Debian's setuptools; no
pyproject.toml on purpose, so pip builds with the installed setuptools instead of fetching one).

The package is pure Python (ctypes); it needs libncsim.so, installed by `cmake --install` into
any prefix: it is found through $NCSIM_LIBRARY, the loader, the Python environment's prefix, the
prefix of the `ncsim` command on PATH, /usr/local and /usr (docs/python.md, "Installing").
It installs `ncsim`, the NKI frontend `ncsim.nki` with its example kernels, and the command
`ncsim-nki` (the same as `python3 -m ncsim.nki`) and `ncsim-neuron-profile`.
"""
from setuptools import setup

setup(
    name="ncsim",
    version="0.2.0",  # include/ncsim.h's NCSIM_VERSION_*; python/tests/test_package.py checks it
    description="Simulate NCA programs for a NeuronCore-v2-class chip, in-process, with NumPy",
    packages=["ncsim", "ncsim.nki", "ncsim.nki.examples"],
    # `ncsim-nki` runs a kernel (the same as `python3 -m ncsim.nki`); `ncsim-neuron-profile` is
    # `neuron-profile view` over ncsim's simulated runs (docs/nki.md), the `neuron-profile` name
    # itself opt-in: `ncsim-neuron-profile install-alias DIR`
    entry_points={"console_scripts": ["ncsim-nki = ncsim.nki.__main__:main",
                                      "ncsim-neuron-profile = ncsim.neuron_profile:main"]},
    python_requires=">=3.9",
    install_requires=["numpy"],
)
