"""Compatibility helpers: `enable_neuronxcc_alias()` is `ncsim.nki.install_neuronxcc_alias()`."""
from . import install_neuronxcc_alias


def enable_neuronxcc_alias(force=False):
    """Let `import neuronxcc.nki ...` resolve to ncsim.nki (refuses if a real neuronxcc exists)."""
    install_neuronxcc_alias(force=force)
