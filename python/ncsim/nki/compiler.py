"""`neuronxcc.nki.compiler` (ncc): direct allocation and the compiler directives.

`ncc.sbuf.alloc(func)`, `ncc.sbuf.mod_alloc(base_addr, ...)`, `ncc.psum.alloc(func)` and
`ncc.psum.mod_alloc(base_bank, ...)` place a tensor declared with `nl.ndarray(..., buffer=...)`
where the kernel says (docs/nki.md, "Direct allocation"): every logical tile (one per index of
the block dimensions) occupies the partitions and bytes (PSUM: bank and bytes) its rule gives,
evaluated once per logical tile when the tensor is declared. All directly placed tensors of a
kernel are views of one buffer covering the whole SBUF (and one covering PSUM), so the
dependences between instructions follow the bytes they touch: a k-deep ring serialises tile
i + k behind the readers of tile i, and two tensors placed on the same bytes share them, as on
the chip. The rules the Neuron compiler enforces are checked with located errors:

- per tile: SBUF start partition 0 for more than 64 partitions, 0 or 64 for 33..64, a multiple
  of 32 below; byte addresses aligned to the element size and inside the 176 KiB of a partition
  the compiler leaves to kernels; PSUM: banks 0..7, one physical tile per bank, at most 2 KiB
  per partition, never crossing a bank's end;
- per kernel: direct and automatic allocation are not mixed (no `nl.sbuf`/`nl.psum` tensor, no
  unplaced instruction result such as `t = nl.load(x)`, no call that needs a tensor the
  compiler would make); no initial values on placed tensors; no HBM tensor other than the
  kernel's inputs and returned `shared_hbm` outputs.

`@ncc.force_auto_alloc` (and `buffer=ncc.sbuf.auto_alloc()`) gives the tensors to ncsim's own
allocator, the comparison the NKI documentation recommends. `@ncc.skip_middle_end_transformations`
turns off the transformation of ours that stands for the compiler's middle end (repeated loads
removed, `resident_loads="never"`). `ncc.no_reorder()` pins the order of the instructions traced
inside it. `ncc.enable_stack_allocator` and `ncc.multi_buffer` are refused with their reason."""
import numpy as np

from . import _core as C
from ._core import error
from . import language as _nl

SBUF_PARTITION_BYTES = 192 * 1024
SBUF_USABLE = C.SBUF_USABLE        # 192 KiB less the 16 KiB the compiler keeps
PSUM_BANKS = C.PSUM_BANKS
PSUM_BANK_BYTES = C.PSUM_BANK
PSUM_ALIGN = 4                     # nl.tile_size.psum_min_align


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


def _lin(idx, counts):
    """lin(idx mod counts): the row-major number of the index taken modulo the counts (an empty
    tuple, or one shorter than the index, counts 1 in the missing dimensions)."""
    r = 0
    for j, n in enumerate(counts):
        r = r * n + (idx[j] % n if j < len(idx) else 0)
    return r


class DirectBuffer(_nl._Buffer):
    """A buffer of direct allocation: the rule that places each logical tile of its tensor."""
    direct = True

    def __init__(self, name, kind, func=None, **placement):
        super().__init__(name, kind)
        self.func = func
        self.placement = placement

    def __repr__(self):
        if self.func is not None:
            return f"ncc.{self.name}({getattr(self.func, '__name__', 'func')})"
        args = ", ".join(f"{k}={v!r}" for k, v in self.placement.items())
        return f"ncc.{self.name}({args})"

    def place(self, idx, P, fbytes):
        """(bank or None, start partition, byte address) of logical tile idx."""
        if self.func is not None:
            try:
                r = self.func(idx, P, fbytes)
            except C.NkiError:
                raise
            except Exception as e:
                error("err_invalid_allocation", f"the allocation function of {self!r} failed on "
                      f"tile {idx}: {type(e).__name__}: {e}")
            n = 2 if self.kind == "sbuf" else 3
            what = "(start_partition, byte_addr)" if n == 2 else \
                "(bank, start_partition, byte_addr)"
            if not isinstance(r, (tuple, list)) or len(r) != n or any(
                    not isinstance(x, (int, np.integer)) or isinstance(x, bool) for x in r):
                error("err_invalid_allocation", f"the allocation function of {self!r} returned "
                      f"{r!r} for tile {idx}: it returns {what}, integers")
            r = tuple(int(x) for x in r)
            return (None,) + r if n == 2 else r
        p = self.placement
        part = p["base_partition"] + _lin(idx, p["num_par_tiles"]) * P
        addr = p["base_addr"] + _lin(idx, p["num_free_tiles"]) * fbytes
        if self.kind == "sbuf":
            return None, part, addr
        return p["base_bank"] + _lin(idx, p["num_bank_tiles"]), part, addr


class _Space:
    def __init__(self, name):
        self.name = name

    def auto_alloc(self):
        return _nl.sbuf if self.name == "sbuf" else _nl.psum

    def alloc(self, func):
        if not callable(func):
            what = "(start_partition, byte_addr)" if self.name == "sbuf" else \
                "(bank, start_partition, byte_addr)"
            error("err_invalid_allocation", f"ncc.{self.name}.alloc takes a function "
                  f"(idx, pdim_size, fdim_size) -> {what}")
        return DirectBuffer(f"{self.name}.alloc", self.name, func=func)

    def mod_alloc(self, *args, **kw):
        if self.name == "sbuf":
            return self._sbuf_mod(*args, **kw)
        return self._psum_mod(*args, **kw)

    def _sbuf_mod(self, base_addr, *, base_partition=0, num_par_tiles=(), num_free_tiles=()):
        p = dict(base_addr=_int("base_addr", base_addr, 0, SBUF_USABLE - 1),
                 base_partition=_int("base_partition", base_partition, 0, 127),
                 num_par_tiles=_tiles("num_par_tiles", num_par_tiles),
                 num_free_tiles=_tiles("num_free_tiles", num_free_tiles))
        return DirectBuffer("sbuf.mod_alloc", "sbuf", **p)

    def _psum_mod(self, base_bank, *, base_addr=0, base_partition=0, num_bank_tiles=(),
                  num_par_tiles=(), num_free_tiles=()):
        p = dict(base_bank=_int("base_bank", base_bank, 0, PSUM_BANKS - 1),
                 base_addr=_int("base_addr", base_addr, 0, PSUM_BANK_BYTES - 1),
                 base_partition=_int("base_partition", base_partition, 0, 127),
                 num_bank_tiles=_tiles("num_bank_tiles", num_bank_tiles),
                 num_par_tiles=_tiles("num_par_tiles", num_par_tiles),
                 num_free_tiles=_tiles("num_free_tiles", num_free_tiles))
        n = 1
        for x in p["num_bank_tiles"]:
            n *= x
        if p["base_bank"] + n > PSUM_BANKS:
            error("err_invalid_allocation", f"banks {p['base_bank']}..{p['base_bank'] + n - 1}: "
                  f"PSUM has {PSUM_BANKS} banks (0..{PSUM_BANKS - 1})")
        return DirectBuffer("psum.mod_alloc", "psum", **p)


sbuf = _Space("sbuf")
psum = _Space("psum")


# --------------------------------------------------------------------------- placement

def _check_tile(buf, idx, P, fbytes, itemsize, place):
    """The rules of one placed tile (docs/nki.md, "Direct allocation"): located errors."""
    bank, part, addr = place
    at = f"tile {idx} of {buf!r}" if idx else f"the tensor in {buf!r}"
    if part and (P > 64 or (P > 32 and part % 64) or part % 32):
        error("err_invalid_allocation", f"{at}: a tile of {P} partitions cannot start at "
              f"partition {part} (starts allowed: 0 for more than 64 partitions, 0 or 64 for "
              "33..64, a multiple of 32 for 32 or fewer)")
    if part < 0 or part + P > C.PMAX:
        error("err_invalid_allocation", f"{at}: partitions {part}..{part + P - 1} are outside "
              f"the {C.PMAX} partitions")
    if buf.kind == "sbuf":
        if addr < 0 or addr >= SBUF_USABLE:
            error("err_invalid_allocation", f"{at}: byte address {addr} is outside [0, "
                  f"{SBUF_USABLE}) (192 KiB per partition less the 16 KiB the compiler keeps)")
        if addr % itemsize:
            error("err_invalid_allocation", f"{at}: byte address {addr} is not aligned to its "
                  f"{itemsize}-byte elements")
        if addr + fbytes > SBUF_USABLE:
            error("err_invalid_allocation", f"{at}: {fbytes} bytes per partition from byte "
                  f"{addr} run past the end of the usable SBUF ({SBUF_USABLE} bytes)")
        return addr
    if not 0 <= bank < PSUM_BANKS:
        error("err_invalid_allocation", f"{at}: bank {bank}: PSUM has banks 0..{PSUM_BANKS - 1}")
    if fbytes > PSUM_BANK_BYTES:
        error("err_invalid_allocation", f"{at}: {fbytes} bytes per partition: a PSUM tile holds "
              f"at most one bank ({PSUM_BANK_BYTES} bytes, 512 fp32)")
    if addr < 0 or addr % PSUM_ALIGN or addr % itemsize:
        error("err_invalid_allocation", f"{at}: byte address {addr} in bank {bank} is not a "
              f"non-negative multiple of {max(PSUM_ALIGN, itemsize)}")
    if addr + fbytes > PSUM_BANK_BYTES:
        error("err_invalid_allocation", f"{at}: {fbytes} bytes from byte {addr} cross the end "
              f"of bank {bank} ({PSUM_BANK_BYTES} bytes)")
    return bank * PSUM_BANK_BYTES + addr


class Placed:
    """The placement of a directly allocated tensor with block dimensions: per logical tile
    (block) its first partition and its element offset in the kernel's direct buffer (a
    BlockBuf's `direct`; Tracer.sunk_read resolves its views through view())."""
    __slots__ = ("slot", "table", "buf", "allocs")

    def __init__(self, slot, table, buf):
        self.slot = slot
        self.table = table          # block number -> (first partition, element offset)
        self.buf = buf
        self.allocs = {}

    def view(self, tr, bb, blk, v):
        part, eoff = self.table[blk]
        a = self.allocs.get(blk)
        if a is None:
            a = self.allocs[blk] = _alloc(tr, self.slot, bb.kind)
        if tr.steady is not None:
            tr.steady.refuse("a directly allocated tensor with block dimensions is used "
                             "(its tiles' places follow its allocation rule, not the loop)")
        r = C.Tensor(self.slot, a, v.dtype, v.shape, v.pdim, v.p0 + part, v.strides,
                     v.off - blk * bb.felems + eoff)
        r.chk = v.chk
        return r


def _alloc(tr, slot, kind):
    """An Alloc on the direct buffer: its own accumulation state (a PSUM tile's first matmul
    starts its group: no initial values), never the buffer's owner."""
    a = C.Alloc(slot, kind)
    slot.owner = DIRECT
    if kind == "psum":
        a.lazy_zero = True
    if tr.scopes:
        import weakref
        tr.scopes[-1].append(weakref.ref(a))
    return a


DIRECT = "direct"       # owner of the direct buffers: never free for ncsim's allocator


def new_direct(tr, buf, dt, dims, pd, name):
    """nl.ndarray(dims, dt, buffer=buf) with buf a direct allocation."""
    if tr.direct is None:
        _enter(tr)
    if tr.steady is not None:
        tr.steady.refuse("a directly allocated tensor is declared")
    kind = buf.kind
    if len(dims) < 2:
        dims = tuple(dims) + (1,)
    P = dims[pd]
    if P > C.PMAX:
        error("err_partition_dim_too_large",
              f"Size of partition dimension {P} exceeds architecture limitation of {C.PMAX}")
    bshape = tuple(dims[:pd])
    fbytes = C._prod(dims[pd + 1:]) * dt.itemsize
    slot = _direct_slot(tr, kind)
    isz = dt.itemsize
    table = []
    phys = {}
    for idx in np.ndindex(*bshape) if bshape else [()]:
        idx = tuple(int(i) for i in idx)
        pl = buf.place(idx, P, fbytes)
        byte = _check_tile(buf, idx, P, fbytes, isz, pl)
        if kind == "psum":
            other = phys.setdefault(pl[0], (pl[1], pl[2], idx))
            if other[:2] != pl[1:]:
                error("err_invalid_allocation", f"tiles {other[2]} and {idx} of {buf!r} are "
                      f"different physical tiles in bank {pl[0]}: PSUM holds one physical tile "
                      "per bank")
        table.append((pl[1], byte // isz))
    st = C._row_strides(dims, pd)
    line = tr.line()
    tr.direct_tensors.append((name, line, kind, tuple(dims), dt, buf, table, fbytes,
                              C._prod(bshape) if bshape else 0))
    if not bshape:
        part, eoff = table[0]
        return C.Tensor(slot, _alloc(tr, slot, kind), dt, dims, 0, part, st, eoff)
    bb = C.BlockBuf(kind, dt, dims, pd, name, -1, line)
    bb.sunk = True              # its views resolve through Tracer.sunk_read: Placed.view
    bb.direct = Placed(slot, table, buf)
    return C.Tensor(bb, None, dt, dims, pd, 0, st, 0)


def _enter(tr):
    """The kernel's first directly allocated tensor: no automatic allocation before it, none
    after it (Tracer.new_onchip refuses from now on), and the direct buffers."""
    auto = _first_auto(tr)
    if auto is not None:
        error("err_mixed_allocation", "automatic and direct allocation cannot be mixed in one "
              f"kernel: {auto} was allocated automatically before this directly allocated "
              "tensor (place it with ncc.sbuf/ncc.psum, or use @ncc.force_auto_alloc)")
    for b in tr.hbm:
        if b.kind == "scratch":
            _hbm_error(tr, b.name)
    tr.direct = {}
    tr.new_onchip = _refuse_auto.__get__(tr)


def _direct_slot(tr, kind):
    """The buffer covering the whole of SBUF (the usable 176 KiB of every partition) or PSUM
    (its 8 banks) that every directly placed tensor of that memory is a view of."""
    sl = tr.direct.get(kind)
    if sl is None:
        size = SBUF_USABLE if kind == "sbuf" else PSUM_BANKS * PSUM_BANK_BYTES
        sl = C.Slot(len(tr.slots), kind, 0, size, None)
        sl.owner = DIRECT
        tr.slots.append(sl)
        if tr.nheaped == len(tr.slots) - 1:
            tr.nheaped += 1     # (never in the free heaps: its owner is never None)
        tr.direct[kind] = sl
    return sl


def _first_auto(tr):
    """Where the kernel allocated an on-chip tensor automatically so far, or None."""
    for bb in tr.blockbufs:
        return f"'{bb.name or 'a block tensor'}' (line {bb.line})"
    for key in tr.sites:
        if isinstance(key, tuple) and len(key) >= 3 and key[0] in ("sbuf", "psum"):
            where = [k for k in key[2:] if isinstance(k, tuple) and k[0] == tr.source]
            if where:
                return f"a {key[0].upper()} tensor at line {where[-1][1]}"
        return "a tensor"
    return None


def _api_name():
    """The NKI call (nl.X / nisa.X) the kernel's current line is in, for the error."""
    import sys
    f = sys._getframe(1)
    name = None
    while f is not None:
        mod = f.f_globals.get("__name__", "")
        if mod.startswith("ncsim.nki."):
            short = {"ncsim.nki.language": "nl", "ncsim.nki.isa": "nisa"}.get(mod)
            fn = getattr(f.f_code, "co_qualname", f.f_code.co_name).split(".")[0]
            if short and not fn.startswith("_"):
                name = f"{short}.{fn}"       # (a deferred result's emit: its call's name)
        elif name is not None or not mod.startswith("ncsim"):
            break
        f = f.f_back
    return name


def _refuse_auto(tr, kind, dt, shape, pdim, site=None, name=""):
    """Tracer.new_onchip in a kernel with direct allocation: every automatic allocation is an
    error naming the rule."""
    where = None
    if isinstance(site, tuple) and len(site) >= 3 and site[0] in ("sbuf", "psum") and \
            isinstance(site[1], int):
        where = [k for k in site[2:] if isinstance(k, tuple) and k[0] == tr.source]
    if where:
        # a pending instruction's result flushed into a new tile (Tracer.flush)
        tr.line_override = where[-1][1]
        error("err_mixed_allocation", "automatic and direct allocation cannot be mixed in one "
              "kernel: this instruction's result is not placed (write it into a directly "
              "allocated tensor, t[...] = ..., instead of binding a new name)")
    hidden_tensor("an intermediate result")


def hidden_tensor(what, api=None):
    """A call that needs a tensor the compiler would make, in a kernel with direct allocation."""
    api = api or _api_name() or "this call"
    error("err_direct_allocation_hidden_tensor", f"{api} needs a tensor the compiler would "
          f"allocate itself ({what}), which a kernel with direct allocation cannot have "
          "(automatic and direct allocation cannot be mixed): write it with calls whose "
          "every operand and result is placed")


def auto_declared(tr, kind):
    """nl.ndarray/zeros/... with an automatic buffer in a kernel with direct allocation."""
    if kind in ("sbuf", "psum"):
        error("err_mixed_allocation", "automatic and direct allocation cannot be mixed in one "
              f"kernel: this tensor is in nl.{kind} (place it with ncc.{kind}.alloc or "
              f"ncc.{kind}.mod_alloc, or use @ncc.force_auto_alloc)")
    _hbm_error(tr, None)


def _hbm_error(tr, name):
    what = f"'{name}'" if name else "this tensor"
    error("err_direct_allocation_hbm", f"a kernel with direct allocation has no HBM tensors "
          f"besides its inputs and returned shared_hbm outputs: {what} is in nl.hbm / "
          "nl.private_hbm (scratch)")


def check_outputs(tr, out_names):
    """After the trace: every shared_hbm tensor of a kernel with direct allocation is returned."""
    for b in tr.shared_outputs:
        if b.name not in out_names:
            line = tr.shared_lines.get(b.name, 0)
            raise C.NkiError(f"{tr.source}:{line}: error: [err_direct_allocation_hbm] "
                             f"shared_hbm tensor '{b.name}' is not returned: a kernel with "
                             "direct allocation has no HBM tensors besides its inputs and "
                             "outputs")


# --------------------------------------------------------------------------- directives

def force_auto_alloc(func):
    """@ncc.force_auto_alloc: the kernel's direct allocations are ignored and every tensor is
    placed by ncsim's allocator (compare the two for numerics and time)."""
    target = getattr(func, "func", func)
    try:
        target._ncc_force_auto_alloc = True
    except AttributeError:
        error("err_invalid_allocation", "@ncc.force_auto_alloc decorates a kernel function")
    return func


def skip_middle_end_transformations(func):
    """@ncc.skip_middle_end_transformations: no transformation of the kernel's loads before
    allocation; in ncsim, repeated loads are not removed (resident_loads="never")."""
    target = getattr(func, "func", func)
    target._ncc_skip_middle_end = True
    return func


def enable_stack_allocator(*args, **kw):
    error("err_unsupported_by_ncsim", "ncc.enable_stack_allocator: the compiler's stack "
          "allocator is not public (how it places tensors is not documented), so ncsim cannot "
          "place them as it would; place them with ncc.sbuf/ncc.psum.mod_alloc, or leave the "
          "allocation to ncsim")


def multi_buffer(*args, **kw):
    error("err_unsupported_by_ncsim", "ncc.multi_buffer: its semantics are not documented (the "
          "2.24 stub has a one-line docstring); give a ring its depth with "
          "ncc.sbuf.mod_alloc(num_free_tiles=(k,)), or set the policy's sbuf_bufs")


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
