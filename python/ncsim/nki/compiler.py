"""`neuronxcc.nki.compiler` (ncc): direct allocation.

`ncc.sbuf.alloc(func)`, `ncc.sbuf.mod_alloc(base_addr, ...)`, `ncc.psum.alloc(func)`,
`ncc.psum.mod_alloc(base_bank, ...)` and `auto_alloc()` give buffers for `nl.ndarray(...,
buffer=...)`. ncsim checks their arguments against the chip's SBUF and PSUM and the NKI rules
(no initial values on directly allocated tensors), then places the tensors with its own
allocator (docs/nki.md, "Allocation"): the values a kernel computes are the same; the
addresses and the modulo depth it asked for are not kept, so the timing is that of ncsim's
placement. A warning says so once per kernel file.

`ncc.no_reorder()` pins the order of the instructions traced inside it (the lowering's
scheduler, docs/nki.md "Scheduling", does not reorder them among themselves)."""
import warnings

import numpy as np

from ._core import error
from . import language as _nl

SBUF_PARTITION_BYTES = 192 * 1024
PSUM_BANKS = 8
PSUM_BANK_BYTES = 2048
_warned = set()


class DirectBuffer(_nl._Buffer):
    """A buffer of direct allocation: where the kernel asked its tensor to go."""
    direct = True

    def __init__(self, name, kind, **placement):
        super().__init__(name, kind)
        self.placement = placement

    def __repr__(self):
        args = ", ".join(f"{k}={v!r}" for k, v in self.placement.items())
        return f"ncc.{self.name}({args})"


def _int(name, v, lo, hi):
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool) or not lo <= v <= hi:
        error("err_invalid_allocation", f"{name}={v!r}: an integer in {lo}..{hi}")
    return int(v)


def _tiles(name, v):
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        v = (v,)
    if not isinstance(v, (tuple, list)) or any(
            not isinstance(x, (int, np.integer)) or isinstance(x, bool) or x <= 0 for x in v):
        error("err_invalid_allocation", f"{name}={v!r}: a tuple of positive tile counts")
    return tuple(int(x) for x in v)


def _note():
    from ._core import user_frame
    fn, _ = user_frame()
    if fn not in _warned:
        _warned.add(fn)
        warnings.warn(f"{fn}: ncsim places directly allocated tensors itself (values are the "
                      "same; addresses and modulo depths are not kept, and the timing is that "
                      "of ncsim's placement)", stacklevel=3)


class _Space:
    def __init__(self, name):
        self.name = name

    def auto_alloc(self):
        return _nl.sbuf if self.name == "sbuf" else _nl.psum

    def alloc(self, func):
        if not callable(func):
            error("err_invalid_allocation", f"ncc.{self.name}.alloc takes a function "
                  "(idx, pdim_size, fdim_size) -> address")
        _note()
        return DirectBuffer(f"{self.name}.alloc", self.name, func=getattr(func, "__name__", "f"))

    def mod_alloc(self, *args, **kw):
        if self.name == "sbuf":
            return self._sbuf_mod(*args, **kw)
        return self._psum_mod(*args, **kw)

    def _sbuf_mod(self, base_addr, *, base_partition=0, num_par_tiles=(), num_free_tiles=()):
        p = dict(base_addr=_int("base_addr", base_addr, 0, SBUF_PARTITION_BYTES - 1),
                 base_partition=_int("base_partition", base_partition, 0, 127),
                 num_par_tiles=_tiles("num_par_tiles", num_par_tiles),
                 num_free_tiles=_tiles("num_free_tiles", num_free_tiles))
        _note()
        return DirectBuffer("sbuf.mod_alloc", "sbuf", **p)

    def _psum_mod(self, base_bank, *, base_addr=0, base_partition=0, num_bank_tiles=(),
                  num_par_tiles=(), num_free_tiles=()):
        p = dict(base_bank=_int("base_bank", base_bank, 0, PSUM_BANKS - 1),
                 base_addr=_int("base_addr", base_addr, 0, PSUM_BANK_BYTES - 1),
                 base_partition=_int("base_partition", base_partition, 0, 127),
                 num_bank_tiles=_tiles("num_bank_tiles", num_bank_tiles),
                 num_par_tiles=_tiles("num_par_tiles", num_par_tiles),
                 num_free_tiles=_tiles("num_free_tiles", num_free_tiles))
        if p["base_bank"] + (p["num_bank_tiles"][0] if p["num_bank_tiles"] else 1) > PSUM_BANKS:
            error("err_invalid_allocation", f"banks {p['base_bank']}.."
                  f"{p['base_bank'] + p['num_bank_tiles'][0] - 1}: PSUM has {PSUM_BANKS} banks")
        _note()
        return DirectBuffer("psum.mod_alloc", "psum", **p)


sbuf = _Space("sbuf")
psum = _Space("psum")


class no_reorder:
    """`with ncc.no_reorder():` the instructions traced inside keep the kernel's order: the
    lowering's scheduler (docs/nki.md, "Scheduling") moves other instructions around them but
    never reorders these among themselves. Outside a kernel's trace it does nothing."""

    def __enter__(self):
        from . import _core
        self._tr = _core._tracer[0]
        if self._tr is not None:
            self._tr.flush()
            self._tr.pinned += 1
        return self

    def __exit__(self, exc_type, exc, tb):
        from . import _core
        tr = self._tr
        if tr is not None and tr is _core._tracer[0]:
            if exc_type is None:
                tr.flush()          # the block's last instruction is emitted inside it
            tr.pinned -= 1
        return False
