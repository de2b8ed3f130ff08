"""Install the ncsim Python package: `pip install ./python` (offline: Debian's setuptools; no
pyproject.toml on purpose, so pip builds with the installed setuptools instead of fetching one).

The package is pure Python (ctypes); it needs libncsim.so, installed by `cmake --install` (it is
found under /usr/local/lib, /usr/lib, the environment's prefix, or $NCSIM_LIBRARY).
"""
from setuptools import setup

setup(
    name="ncsim",
    version="0.2.0",  # include/ncsim.h's NCSIM_VERSION_*; python/tests/test_package.py checks it
    description="Simulate NCA programs for a NeuronCore-v2-class chip, in-process, with NumPy",
    packages=["ncsim"],
    python_requires=">=3.9",
    install_requires=["numpy"],
    # `neuron-profile view` over ncsim's simulated runs (docs/nki.md); the `neuron-profile` name
    # itself is opt-in: `ncsim-neuron-profile install-alias DIR`
    entry_points={"console_scripts": ["ncsim-neuron-profile = ncsim.neuron_profile:main"]},
)
