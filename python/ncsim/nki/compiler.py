"""`neuronxcc.nki.compiler` (ncc): direct allocation. ncsim allocates SBUF and PSUM itself
(docs/nki.md); the direct-allocation calls are recognised and refused with a clear error."""
from ._core import error


class _Space:
    def __init__(self, name):
        self.name = name

    def _no(self, *a, **k):
        error("err_unsupported_by_ncsim",
              f"ncc.{self.name} direct allocation is not supported by ncsim (it allocates itself)")

    alloc = mod_alloc = auto_alloc = _no


sbuf = _Space("sbuf")
psum = _Space("psum")
