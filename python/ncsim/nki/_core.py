"""The NKI tracer: tensors, index expressions, memory allocation, dependences and NCA emission.

A kernel is traced by running its Python body once per SPMD instance with concrete loop
indices (every loop is unrolled). Each NKI call appends instructions to a list; each
instruction records the memory it reads and writes (bounding boxes of its views in physical
SBUF/PSUM slots or HBM tensors), from which the tracer derives the waits it needs (RAW, WAR,
WAW across engines and DMA queues), using vector clocks to drop waits that an earlier wait
already implies. `finish()` numbers the posts that some wait observes and writes the program
text (docs/nki.md, "Lowering"). With the C passes the accesses are only logged as they are
made and `finish()` has every dependence found in one C pass (Tracer.acclog; docs/nki.md,
"Cost of lowering").
"""
import bisect
import heapq
import itertools
import operator
import os
import sys
import weakref

import numpy as np

from . import _dtypes as D
from . import _native
from . import _sched
from ..builder import raw_view

_PKG_DIR = os.path.dirname(os.path.abspath(__file__))
_NCSIM_DIR = os.path.dirname(_PKG_DIR)
_EXAMPLES_DIR = os.path.join(_PKG_DIR, "examples", "")

ENGINES = ("sp", "pe", "act", "dve", "pool")
N_QUEUES = 16
N_AGENTS = len(ENGINES) + N_QUEUES
ENG_ID = {e: i for i, e in enumerate(ENGINES)}
_PE = ENG_ID["pe"]
_CLOCK = (1.4, 2.8, 1.4, 1.12, 1.4)      # GHz of sp pe act dve pool (trn1), for load estimates
PMAX = 128
PSUM_BANK = 2048
PSUM_BANKS = 8
SBUF_USABLE = 180224          # bytes per partition the allocator may use (192 KiB - 16 KiB)


# --------------------------------------------------------------------------- errors

class NkiError(Exception):
    """A kernel error, as the NKI compiler would report it. The message starts with
    FILE:LINE: of the kernel line that caused it."""


def _lineno(f):
    """f.f_lineno, cached per code object and instruction offset: Python finds a frame's line
    by scanning its code's line table from the start (about 1 us at the end of an 80-line
    kernel), and the tracer asks for the kernel's line at every instruction and allocation."""
    code = f.f_code
    r = _CODES.get(id(code))
    if r is None:
        r = _code_rec(code)
    m = r[2]
    i = f.f_lasti
    ln = m.get(i)
    if ln is None:
        ln = m[i] = f.f_lineno
    return ln


def _code_rec(code):
    """_CODES's entry of a code object, made now."""
    if len(_CODES) >= _USER_CODE_MAX:
        _CODES.clear()
    fn = code.co_filename
    r = _CODES[id(code)] = (code, not fn.startswith(_NCSIM_DIR) or fn.startswith(_EXAMPLES_DIR),
                            {})
    return r


# _lineno, Tracer._site_key: id of a code object -> (the code object, kept so that its id is
# not reused while the entry exists; whether it is outside the package or one of its examples;
# {offset of the running instruction: its line}). Keyed by id: a code object's hash is
# computed from its contents at every lookup (0.1 us for a kernel's).
_CODES = {}
_USER_CODE_MAX = 4096   # _CODES is emptied when it grows past this


def user_frame():
    """(file, line) of the innermost frame outside the ncsim package (the kernel's code)."""
    f = sys._getframe(1)
    while f is not None:
        fn = f.f_code.co_filename
        if not fn.startswith(_NCSIM_DIR) or fn.startswith(_EXAMPLES_DIR):
            return fn, _lineno(f)
        f = f.f_back
    return "<unknown>", 0


def error(code, msg):
    tr = _tracer[0]
    if tr is not None and tr.line_override is not None and tr.line_override > 0:
        fn, ln = tr.source, tr.line_override     # inside a deferred instruction: its own line
    else:
        fn, ln = user_frame()
    raise NkiError(f"{fn}:{ln}: error: [{code}] {msg}")


# --------------------------------------------------------------------------- options

class Policy:
    """The lowering choices that the NKI documentation leaves to the compiler (docs/nki.md).

    Every attribute can be overridden per call: `nki.simulate_kernel(k, ..., policy={...})`,
    `nki.jit(policy={...})`, or globally on `ncsim.nki.policy`."""

    def __init__(self, **kw):
        self.load_engine = "sp"          # engine that issues the loads (nl.load, dma_copy to SBUF)
        self.store_engine = "pool"       # engine that issues the stores (so they never block loads)
        self.load_queues = [0]           # the load engine's IO queue (the profiles' qSyncIO0)
        self.store_queues = [1]          # the store engine's IO queue (qGpSimdIO0)
        self.dma_split_partitions = 0    # 0: one dma per call; k: one dma per k partitions
        self.sbuf_bufs = 2               # physical buffers per allocation site (double buffering)
        self.psum_bufs = 2
        self.block_bufs = 2              # buffers beyond the live blocks of a block tensor
        self.spill_engine = "sp"         # engine that issues spill and reload DMAs
        self.spill_queue = 2             # their queue (the profiles' qSyncSpillReload0)
        self.psum_spill = True           # a PSUM block evicted when no bank is free is copied
                                         # to an SBUF buffer and back (docs/nki.md, "Spills
                                         # and reloads"); False: err_out_of_memory
        self.psum_spill_engine = "dve"   # engine of those copies ("dve" or "act")
        self.rematerialize = True        # an evicted block that holds an input's data is
                                         # reloaded from the input, not spilled
        self.reload_at_uses = True       # a block tensor of input loads that does not fit
                                         # beside the rest of the working set is not kept:
                                         # its loads are issued again at each use, for what
                                         # the use reads (docs/nki.md, "Loads issued at
                                         # their uses"); False: only evicted blocks are
                                         # reloaded
        self.resident_loads = "reuse"    # "reuse": a load's data stays in SBUF until the next
                                         # load of the same data when at most resident_bytes
                                         # per partition are loaded in between; "never"
        self.resident_bytes = SBUF_USABLE // 4
        self.sbuf_bytes = SBUF_USABLE
        self.copy_engine = "auto"        # nl.copy / tensor_copy / assignment copies from SBUF
        self.psum_copy_engine = "act"    # copies out of PSUM (the trn1 matmul profiles: VectorE idle)
        self.memset_engine = "dve"       # nl.zeros/ones/full/memset on SBUF
        self.elementwise_engine = "dve"  # tile-tile arithmetic (tensor_tensor)
        self.scalar_op_engine = "act"    # tile-scalar arithmetic (tensor_scalar add/sub/mul; the
                                         # adamw and silu profiles: all of it on ScalarE)
        self.per_partition_op_engine = "dve"  # tile-scalar arithmetic whose scalar is a
                                         # per-partition [P, 1] tile (x - mean, x * rstd): the
                                         # LayerNorm tutorial's (x - mean) * rstd on VectorE
        self.balance_engines = ("dve", "act")   # "auto": the less loaded of these
        self.transcendental_engine = "act"
        self.reciprocal_engine = "table"  # nisa.reciprocal: "table" = ScalarE when the ScalarE
                                         # function set in use holds reciprocal (after sqrt or
                                         # rsqrt: no table switch; the adamw profile), else
                                         # VectorE (silu's, after exp); or "dve" / "act"
        self.loop_buffers = "rotate"      # a block tensor declared in a loop body: each new
                                         # instance takes, block request by block request, the
                                         # buffers of the instance block_bufs (psum_bufs)
                                         # before it, when free (the fixed rotation of a rolled
                                         # body; docs/nki.md, "Block tensors"); "lru": the free
                                         # buffer of any site released longest ago
        self.lend_buffers = "share"       # a free buffer of another site taken when SBUF is
                                         # full becomes this site's too ("share": the fixed
                                         # buffers of a rolled loop body), or is lent for one
                                         # tensor only ("lend")
        self.schedule_window = 64        # the instruction scheduler's window (_sched.py): the
                                         # oldest unscheduled instructions it may reorder; 0 or
                                         # 1 keeps the kernel's order
        self.fold_loops = True           # repeated runs of instructions written as .loop nests
        self.fast_trace = True           # the tracer's optimised paths; False: the reference
                                         # ones (the same program text, slower; for tests)
        self.steady_state = True         # long loops: trace until a steady state is shown,
                                         # replay the middle iterations (_steady.py); False:
                                         # every iteration runs (the same program text)
        self.native_passes = "auto"      # scheduler, waits, streams, folding: "auto" = in C
                                         # when libncsim loads (else Python; $NCSIM_NKI_PASSES
                                         # overrides), "c", or "python" (_native.py; the same
                                         # program text)
        self.set(**kw)

    def set(self, **kw):
        for k, v in kw.items():
            if not hasattr(self, k):
                raise TypeError(f"unknown lowering policy option {k!r}")
            setattr(self, k, v)
        return self

    def copy(self, **kw):
        p = Policy()
        p.__dict__.update(self.__dict__)
        p.load_queues = list(self.load_queues)
        p.store_queues = list(self.store_queues)
        return p.set(**kw)


policy = Policy()

# --------------------------------------------------------------------------- index expressions


class Arange1D:
    """`nl.arange(...)` before it is given a 2-D layout with [:, None] or [None, :]."""

    def __init__(self, start, stop, step=1):
        self.start, self.stop, self.step = int(start), int(stop), int(step)
        if self.step == 0:
            error("err_invalid_shape", f"nl.arange({self.start}, {self.stop}, 0): a step of 0")
        self.size = max(0, -(-(self.stop - self.start) // self.step))
        if self.size == 0:
            # an index grid of no elements would make an empty tile (shapes are positive)
            error("err_invalid_shape", f"nl.arange({self.start}, {self.stop}, {self.step}) has no "
                  "elements")

    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        nd = len(key)
        axis = None
        for i, k in enumerate(key):
            if k is None:
                continue
            if isinstance(k, slice) and k == slice(None):
                if axis is not None:
                    error("err_1d_arange_not_supported", "an arange has one axis")
                axis = i
            else:
                error("err_1d_arange_not_supported", "index an arange with [:, None] or [None, :]")
        if axis is None:
            error("err_1d_arange_not_supported", "index an arange with [:, None] or [None, :]")
        shape = tuple(self.size if i == axis else 1 for i in range(nd))
        return IndexExpr(self.start, {axis: self.step}, shape)

    def _bad(self, *a):
        error("err_1d_arange_not_supported",
              "a 1-D nl.arange must be given a layout first: arange(n)[:, None] or arange(n)[None, :]")

    __add__ = __radd__ = __sub__ = __rsub__ = __mul__ = __rmul__ = __lt__ = __le__ = __gt__ = \
        __ge__ = _bad


_ADDS_MAX = 256     # IndexExpr.__add__'s sums kept per expression
_UIDS = itertools.count(1)   # IndexExpr.uid


def _bshape(a, b):
    n = max(len(a), len(b))
    a = (1,) * (n - len(a)) + tuple(a)
    b = (1,) * (n - len(b)) + tuple(b)
    out = []
    for x, y in zip(a, b):
        if x != y and x != 1 and y != 1:
            error("err_shape_mismatch", f"index shapes {a} and {b} do not broadcast")
        out.append(max(x, y))
    return tuple(out)


class IndexExpr:
    """An affine index: const + sum(coef[a] * i_a) over the axes a of a broadcast grid."""
    __slots__ = ("const", "coefs", "shape", "sk", "adds", "uid")

    def __init__(self, const, coefs, shape):
        self.const = const
        self.coefs = coefs
        self.shape = tuple(shape)
        self.sk = None          # _expr_sk's cache: the structure (shape, coefficients)
        self.adds = None        # __add__'s: {int: self + int} (expressions never change)
        self.uid = None         # _adv_index_memo: this expression's number in subscript keys

    def _aligned(self, n):
        s = n - len(self.shape)
        return {a + s: c for a, c in self.coefs.items()}

    def _comb(self, other, sign):
        if isinstance(other, (int, np.integer)):
            # a loop index (_steady.Idx) stays one: a mask that depends on it is noticed
            o = other if isinstance(other, int) else int(other)
            r = IndexExpr(self.const + sign * o, dict(self.coefs), self.shape)
            r.sk = self.sk if self.sk is not None else _expr_sk(self)   # the same structure
            return r
        if isinstance(other, IndexExpr):
            shape = _bshape(self.shape, other.shape)
            n = len(shape)
            co = self._aligned(n)
            for a, c in other._aligned(n).items():
                co[a] = co.get(a, 0) + sign * c
            return IndexExpr(self.const + sign * other.const, {a: c for a, c in co.items() if c},
                             shape)
        return NotImplemented

    def __add__(self, o):
        if type(o) is int:
            # _comb's common case (`bm * 128 + i.x`); coefficient dicts are never changed in
            # place, so the new expression shares this one's. An expression is never changed
            # once made, so the sum of a numbered one (an mgrid axis, such a sum, one seen in
            # a subscript before: uid) is kept per int (a loop body adds the same few to a
            # grid's `.x`), up to _ADDS_MAX of them, and numbered too
            if self.uid is None:
                r = IndexExpr(self.const + o, self.coefs, self.shape)
                sk = self.sk
                r.sk = sk if sk is not None else _expr_sk(self)
                return r
            m = self.adds
            if m is None:
                m = self.adds = {}
            else:
                r = m.get(o)
                if r is not None:
                    return r
            r = IndexExpr(self.const + o, self.coefs, self.shape)
            sk = self.sk
            r.sk = sk if sk is not None else _expr_sk(self)
            r.uid = next(_UIDS) + 0.5
            if len(m) < _ADDS_MAX:
                m[o] = r
            return r
        return self._comb(o, 1)

    __radd__ = __add__

    def __sub__(self, o):
        return self._comb(o, -1)

    def __rsub__(self, o):
        return (-self)._comb(o, 1)

    def __neg__(self):
        return IndexExpr(-self.const, {a: -c for a, c in self.coefs.items()}, self.shape)

    def __mul__(self, o):
        if isinstance(o, (int, np.integer)):
            o = o if isinstance(o, int) else int(o)
            return IndexExpr(self.const * o, {a: c * o for a, c in self.coefs.items() if c * o},
                             self.shape)
        if isinstance(o, IndexExpr):
            error("err_unsupported_index", "index expressions must be affine (no product of two aranges)")
        return NotImplemented

    __rmul__ = __mul__

    def __floordiv__(self, o):
        error("err_unsupported_index", "index expressions must be affine (no division)")

    def _cmp(self, o, op):
        e = self - o
        if _idx_dep(e):
            if op in ("==", "!="):
                _steady_refuse("a mask tests the loop index for equality")
            else:
                tr = _tracer[0]
                if tr is not None and tr.steady is not None:
                    tr.steady.masked()      # its truth may change in the last iterations
        return Pred([(e, op)])

    def __lt__(self, o):
        return self._cmp(o, "<")

    def __le__(self, o):
        return self._cmp(o, "<=")

    def __gt__(self, o):
        return self._cmp(o, ">")

    def __ge__(self, o):
        return self._cmp(o, ">=")

    def __eq__(self, o):
        return self._cmp(o, "==")

    def __ne__(self, o):
        return self._cmp(o, "!=")

    __hash__ = object.__hash__

    def __bool__(self):
        error("err_control_flow_condition_depending_on_arange",
              "a condition depends on an nl.arange/mgrid value; use a mask instead")

    def values(self):
        """The index values as a NumPy array of self.shape."""
        v = np.full(self.shape, self.const, dtype=np.int64)
        for a, c in self.coefs.items():
            sh = [1] * len(self.shape)
            sh[a] = self.shape[a]
            v = v + c * np.arange(self.shape[a]).reshape(sh)
        return v


_CMP = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "!=": operator.ne}


def _idx_dep(e):
    """Does the index expression depend on a loop index being traced (_steady.Idx)?"""
    return type(e.const) is _steady.Idx or any(type(c) is _steady.Idx for c in e.coefs.values())


def _steady_refuse(why):
    tr = _tracer[0]
    if tr is not None and tr.steady is not None:
        tr.steady.refuse(why)


class Pred:
    """A mask / affine predicate: a conjunction of `expr OP 0`. One inequality on a loop
    index changes its truth at most once over the loop (steady-state tracing checks the loop's
    last iterations); two may change it twice, so they are not replayed (_steady.py)."""

    def __init__(self, conds):
        self.conds = conds

    def __and__(self, o):
        if isinstance(o, bool):
            return self if o else Pred([(IndexExpr(1, {}, ()), "<")])  # never true
        if not isinstance(o, Pred):
            error("err_unsupported_mask", "combine masks with & only")
        conds = self.conds + o.conds
        if sum(1 for e, _ in conds if _idx_dep(e)) > 1:
            _steady_refuse("a mask has two conditions on the loop index")
        return Pred(conds)

    __rand__ = __and__

    def __or__(self, o):
        error("err_unsupported_mask", "masks combine with & only")

    __ror__ = __or__

    def __bool__(self):
        error("err_control_flow_condition_depending_on_arange",
              "use '&' (not 'and') to combine masks; a mask cannot drive Python control flow")

    def box(self, shape):
        """Per-axis [lo, hi) ranges of shape where the predicate holds; None if it never does.
        Predicates over two axes at once are not boxes (not supported as masks)."""
        box = [(0, n) for n in shape]
        n = len(shape)
        for e, op in self.conds:
            co = {a: c for a, c in e.coefs.items()}
            # align the predicate's axes with the instruction's (partition first)
            if len(e.shape) > n:
                error("err_unsupported_mask", f"mask has {len(e.shape)} axes but the tile has {n}")
            live = [a for a, c in co.items() if c and e.shape[a] > 1]
            if len(live) > 1:
                error("err_unsupported_mask",
                      "a mask comparing two index axes is not a rectangular region "
                      "(ncsim supports masks that bound each axis separately)")
            if not live:
                if not _CMP[op](e.const, 0):
                    return None
                continue
            a = live[0]
            if e.shape[a] != shape[a]:
                error("err_unsupported_mask",
                      f"mask axis {a} has size {e.shape[a]} but the tile's has {shape[a]}")
            lo, hi = box[a]
            vals = e.const + co[a] * np.arange(lo, hi)
            ok = np.nonzero(_CMP[op](vals, 0))[0]
            if len(ok) == 0:
                return None
            if ok[-1] - ok[0] + 1 != len(ok):
                error("err_unsupported_mask", "mask selects a non-contiguous range")
            box[a] = (lo + int(ok[0]), lo + int(ok[-1]) + 1)
        return box


_GRID_AXES = {"p": 0, "x": 1, "y": 2, "z": 3, "w": 4}


class Grid(tuple):
    """Result of nl.mgrid[...]: unpackable, and with .p, .x, .y, .z, .w for axes 0..4 (set as
    attributes when made: a kernel reads them in every iteration)."""

    def __new__(cls, items):
        g = tuple.__new__(cls, items)
        for name, i in _GRID_AXES.items():
            if i < len(g):
                g.__dict__[name] = g[i]
        return g

    def __getattr__(self, name):
        idx = _GRID_AXES.get(name)
        if idx is None or idx >= len(self):
            raise AttributeError(name)
        return self[idx]


def _grid_slice(s, axis):
    """(start, step, size) of an nl.mgrid slice: integers, a stop, a positive step, not empty."""
    st = 0 if s.start is None else s.start
    step = 1 if s.step is None else s.step
    if s.stop is None:
        error("err_unsupported_index", f"nl.mgrid axis {axis}: a slice needs a stop (0:128, not 0:)")
    for what, v in (("start", st), ("stop", s.stop), ("step", step)):
        if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
            error("err_unsupported_index",
                  f"nl.mgrid axis {axis}: the {what} must be an integer, not {v!r}")
    if step <= 0:
        error("err_unsupported_index", f"nl.mgrid axis {axis}: the step must be positive")
    size = -(-(int(s.stop) - int(st)) // int(step))
    if size <= 0:
        error("err_unsupported_index", f"nl.mgrid axis {axis}: the slice {st}:{s.stop} is empty")
    return int(st), int(step), size


class _MGrid:
    def __getitem__(self, key):
        if not isinstance(key, tuple):
            key = (key,)
        n = len(key)
        out = []
        for i, s in enumerate(key):
            if not isinstance(s, slice):
                error("err_unsupported_index", "nl.mgrid takes slices")
            st, step, size = _grid_slice(s, i)
            shape = tuple(size if j == i else 1 for j in range(n))
            e = IndexExpr(st, {i: step}, shape)
            e.uid = next(_UIDS) + 0.5       # kept by the kernel: its sums are kept too
            out.append(e)
        return Grid(out)


mgrid = _MGrid()


def is_index(x):
    return isinstance(x, (IndexExpr, Arange1D))


# --------------------------------------------------------------------------- memory

class Slot:
    """A physical buffer: bytes [offset, offset+size) of every partition of SBUF, or whole PSUM
    banks. Access records for dependences live here, so that reuse by another tensor is ordered."""
    __slots__ = ("id", "kind", "offset", "size", "_owner", "recs", "name", "site", "_freed",
                 "_tag", "heap", "held")

    def __init__(self, sid, kind, offset, size, site):
        self.id = sid
        self.kind = kind
        self.offset = offset
        self.size = size
        self.held = None            # PSUM: the plain tiles spilled from this bank, their home
        self.owner = None
        self.recs = None
        self.name = f"{'sb' if kind == 'sbuf' else 'ps'}{sid}"
        self.site = site
        self.heap = None            # the tracer's heap of free buffers of this kind and size
        self._freed = -1
        self.tag = None             # first pass: (site, key) of the load whose data it holds

    @property
    def freed(self):
        """The tick at which the buffer was last freed (the allocator prefers the buffer
        released longest ago)."""
        return self._freed

    @freed.setter
    def freed(self, tick):
        # every release sets owner to None and then the tick: the buffer enters its heap
        self._freed = tick
        h = self.heap
        if h is not None and self.owner is None:
            heapq.heappush(h, (tick, self.id, self))
            if len(h) > h.limit:
                h.compact()

    def now_free(self):
        """The buffer was freed without a new tick (a resident copy let go of it)."""
        h = self.heap
        if h is not None:
            heapq.heappush(h, (self._freed, self.id, self))
            if len(h) > h.limit:
                h.compact()

    # owner and tag: read as plain attributes; a change of a buffer of the kernel's (not a
    # first pass's private one) enters SLOT_DIRTY, from which the steady-state recorder's
    # snapshot learns what changed since its last one (_steady._SlotState)
    def _set_owner(self, o):
        if o is None and self.held:
            o = HELD                # its spilled tiles come back here: not free (Tracer._tile_out)
        self._owner = o
        if self.id >= 0:
            SLOT_DIRTY.add(self)

    def _set_tag(self, t):
        self._tag = t
        if self.id >= 0:
            SLOT_DIRTY.add(self)


Slot.owner = property(operator.attrgetter("_owner"), Slot._set_owner,
                      doc="what holds the buffer (an Alloc's token, a Resident), or None")
Slot.tag = property(operator.attrgetter("_tag"), Slot._set_tag,
                    doc="first pass: (site, key) of the load whose data it holds")
SLOT_DIRTY = set()     # buffers whose owner or tag was set since the recorder last looked
HELD = "held"          # owner of a PSUM bank that only spilled plain tiles call home


class _FreeHeap(list):
    """The free buffers of one kind and size (Tracer._other_free): a heap of (tick freed, id,
    buffer), an entry pushed whenever a buffer is freed; entries gone stale (the buffer taken,
    or freed again since) are dropped when met at the top, and all at once when the heap
    grows past twice what it held after the last such pass (so that it does not grow with
    every release of a size that is never searched)."""
    __slots__ = ("limit",)

    def __init__(self):
        super().__init__()
        self.limit = 64

    def compact(self):
        self[:] = [e for e in self if e[2].owner is None and e[2]._freed == e[0]]
        heapq.heapify(self)
        self.limit = 2 * len(self) + 64


class HbmBuf:
    __slots__ = ("name", "dtype", "shape", "kind", "addr", "recs", "param", "written", "read",
                 "id", "host")

    def __init__(self, name, dt, shape, kind, addr):
        self.name, self.dtype, self.shape, self.kind, self.addr = name, dt, tuple(shape), kind, addr
        self.recs = None
        self.param = None
        self.written = None        # (file, line) of the first store, for the immutability error
        self.read = False
        self.id = None
        self.host = None


class _Index:
    """Access records of one memory (slot or HBM tensor), bucketed along one dim."""
    __slots__ = ("dim", "width", "map")

    def __init__(self, key, box):
        ext = [(0, 128), (0, key.size)] if isinstance(key, Slot) else [(0, d) for d in key.shape]
        best, frac = len(box) - 1, 2.0
        for i, ((lo, hi), (_, n)) in enumerate(zip(box, ext)):
            f = (hi - lo) / max(1, n)
            if f < frac or (f == frac and i > best):
                best, frac = i, f
        n = ext[best][1]
        self.dim = best
        self.width = max(1, box[best][1] - box[best][0], -(-n // 1024))
        self.map = {}


_GRID_REFINE = 256    # records in a memory's only cell beyond which its cells are narrowed


class _Grid2:
    """Access records of a memory with two-dimensional regions, in cells along both dims (the
    tracer's fast path): a cell is the first access's extent, at least 1/64 of the memory's.
    A record sits in every cell it overlaps, so the cells are only an index: any widths give
    the same dependences (_access_ref's)."""
    __slots__ = ("wa", "wb", "map")

    def __init__(self, key, box):
        ext = (128, key.size) if isinstance(key, Slot) else key.shape
        (la, ha), (lb, hb) = box
        self.wa = max(1, ha - la, -(-ext[0] // 64))
        self.wb = max(1, hb - lb, -(-ext[1] // 64))
        self.map = {}

    def refine(self, key):
        """The first access covered the whole memory (a block's fill) and many small ones
        followed (a column written per loop iteration), none covering another: every access
        scanned them all. Narrow the cells along the free dimension to 1/64 of the memory's,
        and put each live record in the cells it now overlaps (in its order)."""
        ext = (128, key.size) if isinstance(key, Slot) else key.shape
        wb = max(1, -(-ext[1] // 64))
        if wb >= self.wb:
            return
        wa = self.wa
        m = {}
        for lst in self.map.values():
            for r in lst:
                if r[4]:
                    continue
                (la, ha), (lb, hb) = r[0]
                for a in range(la // wa, (ha - 1) // wa + 1):
                    for b in range(lb // wb, (hb - 1) // wb + 1):
                        c = (a, b)
                        q = m.get(c)
                        if q is None:
                            m[c] = [r]
                        else:
                            q.append(r)
        self.wb = wb
        self.map = m


class Alloc:
    """A logical on-chip tensor occupying one slot; when the last view of it dies, the slot is
    free for the next tensor of its allocation site."""
    __slots__ = ("slot", "kind", "lazy_zero", "acc_started", "token", "dead", "blk", "remat",
                 "spilled", "written", "pt", "__weakref__")

    def __init__(self, slot, kind):
        self.slot = slot
        self.kind = kind
        self.blk = None             # (BlockBuf, block number) for a block of a block tensor
        self.remat = None           # [(dst view, src view)]: the input loads that wrote it
        self.spilled = False        # its data is in the tensor's spill area in HBM
        self.written = False        # an instruction has written it (nl.loop_reduce)
        self.lazy_zero = False
        self.acc_started = set()
        self.token = weakref.ref(self)   # unique to this Alloc (_steady._owner_key finds it)
        self.dead = None            # (file, line) of the loop whose iteration ended its life
        self.pt = None              # a PSUM tile without block dimensions: its number (_tile_new)
        slot.owner = self.token     # a token, not the Alloc: the slot must not keep it alive
        slot.tag = None

    def release(self, where):
        """End the tensor's life before its views die (a loop iteration ended): the slot is free
        for the next allocation; the access records on the slot order the reuse."""
        self.dead = where
        s = self.slot
        if s is not None:
            if s.owner is self.token:
                s.owner = None
                t = _tracer[0]
                if t is not None:
                    s.freed = t.tick
                    if t.steady is not None:
                        t.steady.ev.append((("R", s), ()))
            elif type(s.owner) is Resident:
                s.owner.user_gone()

    def __del__(self):
        s = self.slot
        if s is not None:
            if s.owner is self.token:
                s.owner = None
                t = _tracer[0]
                if t is not None:
                    s.freed = t.tick
                    if t.steady is not None and self.blk is None:
                        t.steady.ev.append((("R", s), ()))
            elif type(s.owner) is Resident:
                self.slot = None
                s.owner.user_gone()


class Site:
    __slots__ = ("slots", "rr")

    def __init__(self):
        self.slots = []
        self.rr = 0


class BlockBuf:
    """The backing of an on-chip tensor with block dimensions (B..., P, F...).

    Block dimensions are logical (docs/nki.md, "Allocation"): a block gets a physical buffer
    when it is first touched and gives it back after its last access (known from the first
    tracing pass), so the tensor needs only as many buffers as blocks are live at once, plus
    `block_bufs - 1` for the overlap of iterations. Views of it that select one block resolve
    to that block's buffer (index_view)."""
    __slots__ = ("kind", "dtype", "bshape", "nblk", "P", "felems", "fbytes", "name", "ordinal",
                 "allocs", "site", "lazy_zero", "fill", "scratch", "line", "shape", "used",
                 "spilled", "reloaded", "remat_bytes", "peak", "live", "pure", "srcs", "sunk",
                 "reissued", "psave", "tpts", "direct", "tmpl", "took")

    def __init__(self, kind, dt, shape, pdim, name, ordinal, line):
        self.kind = kind
        self.dtype = dt
        self.shape = tuple(shape)
        self.bshape = tuple(shape[:pdim])
        self.nblk = _prod(self.bshape)
        self.P = shape[pdim]
        self.felems = _prod(shape[pdim + 1:])
        self.fbytes = self.felems * dt.itemsize
        self.name = name
        self.ordinal = ordinal
        self.line = line
        self.allocs = {}           # block number -> Alloc (while it has data)
        self.site = Site()
        self.lazy_zero = False     # PSUM zeros: each block starts an accumulation group
        self.fill = None           # SBUF zeros/ones/full: each block is set when first touched
        self.scratch = None        # HbmBuf of the spill area (when a block was spilled)
        self.used = set()          # ids of the physical buffers its blocks occupied
        self.spilled = 0           # bytes stored to the spill area
        self.reloaded = 0          # bytes reloaded from the spill area
        self.remat_bytes = 0       # bytes reloaded from the kernel's inputs instead of spilling
        self.peak = 0              # most blocks live at once
        self.live = 0
        self.pure = True           # first pass: every write was a whole-block input load
        self.srcs = set()          # first pass: the HBM tensors those loads read
        self.sunk = False          # its loads are issued at its uses (Tracer._choose_sunk)
        self.reissued = 0          # loads issued again at uses
        self.psave = None          # PSUM: the SBUF BlockBuf its spilled blocks are copied to
        self.tpts = None           # SBUF copies of plain PSUM tiles: block -> the tile's number
        self.direct = None         # compiler.Placed of a directly allocated tensor (with sunk
                                   # set, so that its views resolve through sunk_read)
        self.tmpl = None           # loop_buffers "rotate": the buffers the last `depth`
                                   # instances of its declaration took (oldest first), each
                                   # in request order (Tracer._block_slot)
        self.took = None           # the buffers its blocks took, in request order (a template
                                   # for the instance `depth` after it), when it has a site


# --------------------------------------------------------------------------- tensors

def _prod(xs):
    r = 1
    for x in xs:
        r *= x
    return r


def _row_strides(shape, pdim=None):
    """Element strides of a dense row-major layout of shape, the partition dimension pdim (if
    any) left out: its entry None, the free dimensions contiguous in order."""
    st, acc = [None] * len(shape), 1
    for i in range(len(shape) - 1, -1, -1):
        if i == pdim:
            continue
        st[i] = acc
        acc *= shape[i]
    return st


class par_dim:
    """Marks the partition dimension in a shape: (4, nl.par_dim(128), 512)."""

    def __init__(self, n):
        self.n = int(n)

    def __index__(self):
        return self.n

    def __int__(self):
        return self.n

    def __repr__(self):
        return f"par_dim({self.n})"


def split_shape(shape):
    """(dims as ints, partition dim index) of a shape that may contain a par_dim."""
    if type(shape) is tuple and _fast[0]:
        # a tuple of plain ints (a tile's shape, as `nl.zeros((128, 512), ...)` gives it
        # in every loop iteration): its answer, once it has been computed without error
        r = _SPLIT.get(shape)
        if r is not None:
            for d in shape:
                if type(d) is not int:
                    break
            else:
                return r
        r = _split_shape(shape)
        for d in shape:
            if type(d) is not int:
                return r
        if len(_SPLIT) < _MEMO_MAX:
            _SPLIT[shape] = r
        return r
    return _split_shape(shape)


_SPLIT = {}     # split_shape: a tuple of ints -> its (dims, partition dim)


def _split_shape(shape):
    if isinstance(shape, (int, np.integer, par_dim)):
        shape = (shape,)
    _check_shape(shape)
    dims, pd = [], None
    for i, d in enumerate(shape):
        if isinstance(d, par_dim):
            if pd is not None:
                error("err_invalid_shape", "only one nl.par_dim per shape")
            pd = i
            dims.append(d.n)
        else:
            dims.append(int(d))
    return tuple(dims), (0 if pd is None else pd)


def _check_shape(shape):
    """A shape is a tuple or list of positive integers (one may be an nl.par_dim)."""
    if not isinstance(shape, (tuple, list)) or not shape:
        error("err_invalid_shape", f"a shape is a tuple of sizes, not {shape!r}")
    for d in shape:
        n = d.n if isinstance(d, par_dim) else d
        if not isinstance(n, (int, np.integer)) or isinstance(n, (bool, np.bool_)) or n <= 0:
            error("err_invalid_shape", f"shape {tuple(shape)!r}: every size is a positive integer")


class Tensor:
    """An NKI tensor (nki.tensor): a view of an HBM tensor, or of an SBUF/PSUM allocation.

    Layout: `shape` per dim; for on-chip tensors `pdim` is the partition dim (its stride slot is
    None) and `p0` the first partition; `strides` are in elements; `off` the element offset
    (within a partition on chip, from the tensor's start in HBM)."""
    __slots__ = ("buf", "alloc", "dtype", "shape", "pdim", "p0", "strides", "off", "pend",
                 "inplace", "chk", "_txt", "_ab", "_bx", "_sp", "_lk", "__weakref__")

    def __init__(self, buf, alloc, dt, shape, pdim, p0, strides, off):
        self.buf = buf              # HbmBuf, or the Slot for on-chip tensors
        self.alloc = alloc          # Alloc (on chip) or None
        self.dtype = dt
        self.shape = tuple(shape)
        self.pdim = pdim
        self.p0 = p0
        self.strides = strides
        self.off = off
        self.pend = None            # a pending instruction (see Tracer.pending)
        self.inplace = False
        self.chk = None             # index ranges to check once masks are applied
        self._txt = None            # caches of text(), abox() and box() (a view never
        self._ab = None             # changes; box() is cached on the fast paths only)
        self._bx = None
        self._sp = None             # _block_span's result, when the view's maker knows it
        self._lk = None             # _adv_index_memo: the memo of its layout (shape, pdim,
                                    # strides), once it has one

    # ---- metadata
    @property
    def space(self):
        if self.pend is not None:
            return self.pend.space
        return "hbm" if isinstance(self.buf, HbmBuf) else self.buf.kind

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def is_onchip(self):
        return self.space in ("sbuf", "psum")

    @property
    def buffer(self):
        return self.space

    def __repr__(self):
        return f"nki.tensor(shape={self.shape}, dtype={self.dtype!r}, buffer={self.space})"

    def __len__(self):
        return self.shape[0]

    def __bool__(self):
        error("err_dynamic_control_flow_not_supported",
              "control flow cannot depend on tensor values")

    def __iter__(self):
        error("err_unsupported", "tensors cannot be iterated in Python; index them")

    # ---- helpers
    def _real(self):
        if self.pend is not None:
            T().flush(self)
        return self

    def psize(self):
        return self.shape[self.pdim] if self.pdim is not None else None

    def free_dims(self):
        """[(stride, count)] of the free dims (on chip) or all dims (HBM), outermost first."""
        self._real()
        return [(s, n) for i, (s, n) in enumerate(zip(self.strides, self.shape)) if i != self.pdim]

    def box(self):
        """(key, p0, p1, lo_byte, hi_byte): the bounding box of the view."""
        bx = self._bx
        if bx is not None:
            return bx
        bx = self._box()
        if _fast[0]:
            self._bx = bx
        return bx

    def _box(self):
        self._real()
        if type(self.buf) is BlockBuf:
            _block_view_error(self)
        lo, hi = _block_span(self)
        sz = self.dtype.itemsize
        if self.pdim is None:
            return (self.buf, 0, 1, lo * sz, (hi + 1) * sz)
        return (self.buf, self.p0, self.p0 + self.shape[self.pdim], lo * sz, (hi + 1) * sz)

    def abox(self):
        ab = self._ab
        if ab is None:
            ab = self._ab = self._abox()
        return ab

    def _abox(self):
        """(memory, box): the region the view touches, as per-dim [lo, hi) index ranges of the
        memory (HBM: the tensor's dims; on chip: (partition, byte)). Exact for views whose
        strides follow the tensor's dims, the enclosing box otherwise."""
        b = self.buf
        if not isinstance(b, HbmBuf):
            k, p0, p1, lo, hi = self.box()
            return k, ((p0, p1), (lo, hi))
        shape = b.shape
        n = len(shape)
        if n == 2 and len(self.shape) == 2 and shape[1] > 1 and _fast[0]:
            # a 2-D view of a 2-D tensor along its rows and columns (every tile of a matrix):
            # what the loops below find for it, when it lies within the tensor (the fast
            # paths; the reference ones, fast_trace=False, take the loops)
            W = shape[1]
            s0, s1 = self.strides
            if s0 == W and s1 == 1:
                r, c = self.shape
                lo0, lo1 = divmod(self.off, W)
                hi0 = lo0 + r if r > 1 else lo0 + 1
                hi1 = lo1 + c if c > 1 else lo1 + 1
                if lo0 >= 0 and hi0 <= shape[0] and hi1 <= W:
                    return b, ((lo0, hi0), (lo1, hi1))
        bst = [1] * n
        for i in range(n - 2, -1, -1):
            bst[i] = bst[i + 1] * shape[i + 1]
        # the first element's multi-index
        rem = self.off
        lo = [0] * n
        for i in range(n):
            lo[i], rem = divmod(rem, bst[i])
        hi = list(lo)
        for s, c in zip(self.strides, self.shape):
            if c <= 1 or not s:
                continue
            a = -s if s < 0 else s
            j = n - 1
            while j > 0 and a % bst[j - 1] == 0:
                j -= 1
            if a % bst[j]:
                return b, tuple((0, d) for d in shape)
            step = a // bst[j] * (c - 1)
            if s > 0:
                hi[j] += step
            else:
                lo[j] -= step
        box = []
        for i in range(n):
            if lo[i] < 0 or hi[i] >= shape[i]:
                # the view moves across a dim boundary: the rows it spans, all columns after
                return b, tuple([(lo2, hi2 + 1) for lo2, hi2 in zip(lo[:i], hi[:i])] +
                                [(0, d) for d in shape[i:]]) if i else tuple((0, d) for d in shape)
            box.append((lo[i], hi[i] + 1))
        return b, tuple(box)

    def text(self):
        t = self._txt
        if t is None:
            tr = _tracer[0]
            if tr is not None and tr.fast and tr.steady is None and _fast[0]:
                # a first pass that a second replaces keeps no text (and no loop is being
                # recorded, whose windows compare texts): the view's errors only
                self._check_text()
                return ""
            t = self._txt = self._text()
        return t

    def _check_text(self):
        """_text's errors, without the text (a first pass's instructions are thrown away)."""
        if self.pend is not None:
            T().flush(self)
        b = self.buf
        tb = type(b)
        if tb is BlockBuf:
            _block_view_error(self)
        if self.chk:
            self.check_bounds()
        if (self.shape, self.pdim, tuple(self.strides), tb is HbmBuf) not in _DIMS_TEXT:
            self._text()                               # its structural errors, then cached
        elif tb is not HbmBuf:
            p = self.shape[self.pdim]
            p0 = self.p0
            if p0 and ((p > 64) or (p > 32 and p0 % 64) or (p0 % 32)):
                self._text_ref()                       # its error

    def _text(self):
        """The raw NCA view of this tensor: _text_ref, with the free dims' text cached per
        layout (shape, partition dim, strides, HBM or on chip) once its checks have passed."""
        if not _fast[0]:
            return self._text_ref()
        if self.pend is not None:
            T().flush(self)
        b = self.buf
        tb = type(b)
        if tb is BlockBuf:
            _block_view_error(self)
        if self.chk:
            self.check_bounds()
        hbm = tb is HbmBuf
        k = (self.shape, self.pdim, tuple(self.strides), hbm)
        d = _DIMS_TEXT.get(k)
        if d is None:
            d = self._text_ref()                       # the structural errors, if any
            if len(_DIMS_TEXT) >= _MEMO_MAX:
                _DIMS_TEXT.clear()
            d = _DIMS_TEXT[k] = d[d.index("[") + 1:-1]
        off = self.off * self.dtype.itemsize
        if hbm:
            return f"hbm:{self.dtype.nca}+{b.addr + off}[{d}]"
        p = self.shape[self.pdim]
        p0 = self.p0
        if p0 and ((p > 64) or (p > 32 and p0 % 64) or (p0 % 32)):
            self._text_ref()                           # its error
        sp = "sb" if b.kind == "sbuf" else "ps"
        return f"{sp}:{self.dtype.nca}@{p0}:{p0 + p}+{b.offset + off}[{d}]"

    def _text_ref(self):
        self._real()
        if type(self.buf) is BlockBuf:
            _block_view_error(self)
        if self.chk:
            self.check_bounds()
        dims = []
        pd = self.pdim
        for i, n in enumerate(self.shape):
            if n == 1 or i == pd:
                continue
            s = self.strides[i]
            if dims and dims[-1][0] == s * n and dims[-1][1] * n <= 65535:
                dims[-1] = (s, dims[-1][1] * n)
            else:
                dims.append((s, n))
        if not dims:
            dims = [(1, 1)]
        sz = self.dtype.itemsize
        b = self.buf
        if isinstance(b, HbmBuf):
            if len(dims) > 5:
                error("err_unsupported_access", f"an HBM access pattern of {len(dims)} dims (NCA allows 5)")
            return raw_view("hbm", self.dtype.nca, b.addr + self.off * sz, dims)
        if len(dims) > 4:
            error("err_unsupported_access",
                  f"an on-chip access pattern with {len(dims)} free dims (the engines take 4)")
        for s, n in dims:
            if n > 65535:
                error("err_unsupported_access", f"a dimension of {n} elements (at most 65535)")
        sp = "sb" if b.kind == "sbuf" else "ps"
        p = self.shape[self.pdim]
        p0 = self.p0
        if p0 and ((p > 64) or (p > 32 and p0 % 64) or (p0 % 32)):
            error("err_partition_start",
                  f"a tile of {p} partitions cannot start at partition {p0} (allowed starts: 0 for "
                  "more than 64 partitions, 0 or 64 for 33..64, a multiple of 32 for 32 or fewer)")
        return raw_view(sp, self.dtype.nca, b.offset + self.off * sz, dims, self.p0, self.p0 + p)

    def clone_view(self, shape=None, strides=None, off=None, p0=None, pdim=-1, dt=None):
        t = Tensor(self.buf, self.alloc, self.dtype if dt is None else dt,
                   self.shape if shape is None else shape, self.pdim if pdim == -1 else pdim,
                   self.p0 if p0 is None else p0, self.strides if strides is None else strides,
                   self.off if off is None else off)
        t.chk = self.chk
        return t

    def check_bounds(self):
        """Static out-of-bounds accesses are errors once the mask has been applied."""
        for c, co, size, dim in self.chk:
            lo = c + sum(min(0, v * (self.shape[a] - 1)) for a, v in co.items() if a < len(self.shape))
            hi = c + sum(max(0, v * (self.shape[a] - 1)) for a, v in co.items() if a < len(self.shape))
            if lo < 0 or hi >= size:
                error("err_tensor_access_out_of_bound",
                      f"index range [{lo}, {hi}] is out of bounds for dim {dim} of size {size} "
                      "(use a mask for ragged tiles)")

    def restrict(self, box):
        """The sub-view over per-axis ranges box [(lo, hi)] (axes of this view)."""
        if box is None:
            return self
        self._real()
        shape, off, p0 = list(self.shape), self.off, self.p0
        for a, (lo, hi) in enumerate(box):
            if a >= len(shape):
                break
            if shape[a] == 1 and (lo, hi) != (0, 1):
                continue                  # a broadcast axis
            if a == self.pdim:
                p0 += lo
            else:
                off += self.strides[a] * lo
            shape[a] = hi - lo
        t = self.clone_view(shape=tuple(shape), off=off, p0=p0)
        if self.chk:
            t.chk = [(c + sum(v * box[a][0] for a, v in co.items() if a < len(box)), co, size, dim)
                     for c, co, size, dim in self.chk]
        return t

    def bcast(self, shape):
        """This view broadcast to `shape` (partition first: missing trailing dims are added)."""
        self._real()
        if self.shape == tuple(shape):
            return self
        n = len(shape)
        mys, myst = list(self.shape), list(self.strides)
        while len(mys) < n:
            mys.append(1)
            myst.append(0)
        if len(mys) > n:
            if all(d == 1 for d in mys[n:]):
                mys, myst = mys[:n], myst[:n]
            else:
                error("err_shape_mismatch", f"shape {self.shape} does not broadcast to {tuple(shape)}")
        for a in range(n):
            if mys[a] != shape[a]:
                if mys[a] != 1:
                    error("err_shape_mismatch", f"shape {self.shape} does not broadcast to {tuple(shape)}")
                if a == self.pdim:
                    error("err_shape_mismatch",
                          f"partition dim {self.shape} does not broadcast to {tuple(shape)} "
                          "(broadcast along partitions with .broadcast_to or nl.broadcast_to)")
                mys[a] = shape[a]
                myst[a] = 0
        return self.clone_view(shape=tuple(mys), strides=myst)

    # ---- indexing
    def __getitem__(self, key):
        if self.pend is not None:
            T().flush(self)
        if _fast[0]:
            # index_view's fast paths, without its tests
            if type(key) is tuple:
                v = _adv_index_memo(self, key, True)
                if v is not None:
                    return v if type(v.buf) is not BlockBuf else _resolve_block(v)
            elif key is Ellipsis:
                v = _full_view(self)
                return v if type(v.buf) is not BlockBuf else _resolve_block(v)
        return index_view(self, key)

    def _pred_view(self, key):
        """`tile[pred]`, NKI's operand masking of a matmul (`nl.matmul(x[i_f < 64], y)`): the
        operand keeps its shape and the instruction skips the elements outside the predicate.
        ncsim's views have no such per-operand mask; the instruction's own mask= does it."""
        error("err_unsupported_by_ncsim", "indexing a tile with a predicate (operand masking) "
              "is not supported: give the instruction mask= (for a matmul, a predicate on the "
              "result's partitions and columns)")

    def __setitem__(self, key, value):
        tb = type(self.buf)
        if tb is BlockBuf:
            if self.buf.sunk and T().sink_load(self, key, value):
                return
            if type(value) is Tensor and value.inplace == "resident" and \
                    T().alias_block(self, key, value):
                return
            if value.__class__ is Tensor and value.inplace is True:
                lb = _LAST_BLOCK_VIEW[0]
                if lb is not None and lb[2] is key and lb[0]() is value and lb[1]() is self and \
                        _fast[0] and value.pend is None:
                    # `blk_t[key] += x`, the write-back of the block view blk_t[key] (this very
                    # object, made by the last block subscript answered by key, of this
                    # tensor with this subscript object) updated in place: what assign does
                    # when self[key] is value's block buffer with value's layout, which it is
                    # while the block keeps that buffer (self[key] would be the same lookup
                    # and view; a released or moved block goes the general way, which
                    # allocates or reloads it)
                    a = value.alloc
                    bb, blk = a.blk
                    if a.slot is value.buf and bb.allocs.get(blk) is a:
                        T()
                        value.inplace = False
                        return
            if value.__class__ is Tensor and value.inplace is True and value.pend is None and \
                    _released_write_back(self, key, value):
                return
        elif key is Ellipsis and tb is Slot and type(value) is Tensor and value.inplace and \
                value.pend is None and not self.chk and _fast[0]:
            # `t[...] += x`, the write-back of a tile updated in place: assign's test of the
            # value against the view t[...] (which has t's layout) made against t itself
            T()
            if value.buf is self.buf and value.p0 == self.p0 and value.off == self.off and \
                    value.shape == self.shape and value.strides == list(self.strides):
                value.inplace = False
                return
        T().assign(self[key], value)

    # ---- arithmetic (operators map to nl functions)
    def _bin(self, other, op, rev=False):
        nl = _nl()
        if isinstance(other, Tensor) and other.space == "sbuf" and self.space == "sbuf":
            pass
        a, b = (other, self) if rev else (self, other)
        return nl._binary(op, a, b, None, None, operator=True)

    def __add__(self, o):
        return self._bin(o, "add")

    def __radd__(self, o):
        return self._bin(o, "add", True)

    def __sub__(self, o):
        return self._bin(o, "subtract")

    def __rsub__(self, o):
        return self._bin(o, "subtract", True)

    def __mul__(self, o):
        return self._bin(o, "multiply")

    def __rmul__(self, o):
        return self._bin(o, "multiply", True)

    def __truediv__(self, o):
        return self._bin(o, "divide")

    def __rtruediv__(self, o):
        return self._bin(o, "divide", True)

    def __pow__(self, o):
        return self._bin(o, "pow")

    def __neg__(self):
        nl = _nl()
        return nl.negative(self)

    def __lt__(self, o):
        return self._bin(o, "is_lt")

    def __le__(self, o):
        return self._bin(o, "is_le")

    def __gt__(self, o):
        return self._bin(o, "is_gt")

    def __ge__(self, o):
        return self._bin(o, "is_ge")

    def __eq__(self, o):
        return self._bin(o, "is_equal")

    def __ne__(self, o):
        return self._bin(o, "not_equal")

    __hash__ = object.__hash__

    def __and__(self, o):
        return self._bin(o, "bitwise_and")

    def __or__(self, o):
        return self._bin(o, "bitwise_or")

    def __xor__(self, o):
        return self._bin(o, "bitwise_xor")

    def __lshift__(self, o):
        return self._bin(o, "shift_left")

    def __rshift__(self, o):
        return self._bin(o, "shift_right")

    def __iadd__(self, o):
        return T().accumulate(self, o, "add")

    def __isub__(self, o):
        return T().accumulate(self, o, "subtract")

    def __imul__(self, o):
        return T().accumulate(self, o, "multiply")

    def __itruediv__(self, o):
        return T().accumulate(self, o, "divide")

    # ---- methods (nki.tensor)
    def reshape(self, shape):
        self._real()
        dims, pd = split_shape(shape)
        if _prod(dims) != _prod(self.shape):
            error("err_invalid_shape", f"cannot reshape {self.shape} into {dims}")
        if self.pdim is not None:
            if dims[pd] != self.shape[self.pdim]:
                error("err_invalid_shape", "reshape must keep the partition dimension")
            free = [n for i, n in enumerate(self.shape) if i != self.pdim]
            if not self._contig(free, [s for i, s in enumerate(self.strides) if i != self.pdim]):
                error("err_invalid_shape", "reshape of a non-contiguous view")
            return self.clone_view(shape=dims, strides=_row_strides(dims, pd), pdim=pd)
        if not self._contig(self.shape, self.strides):
            error("err_invalid_shape", "reshape of a non-contiguous view")
        return self.clone_view(shape=dims, strides=_row_strides(dims))

    @staticmethod
    def _contig(shape, strides):
        acc = 1
        for n, s in zip(reversed(shape), reversed(strides)):
            if n != 1 and s != acc:
                return False
            acc *= n
        return True

    def view(self, dt):
        self._real()
        dt = D.as_dtype(dt)
        if dt.itemsize != self.dtype.itemsize:
            error("err_unsupported", "ncsim supports .view() between types of the same size only")
        return self.clone_view(dt=dt)

    def astype(self, dt):
        from . import language as nl
        return nl.copy(self, dtype=dt)

    def broadcast_to(self, shape):
        from . import language as nl
        if self.space == "hbm":
            return self._hbm_broadcast(shape)
        return nl.broadcast_to(self, shape=shape)

    def _hbm_broadcast(self, shape):
        """An HBM view broadcast along its size-1 axes: a zero stride there (a DMA from it reads
        the same elements again, as a broadcast load on the chip does)."""
        self._real()
        shape = tuple(int(s) for s in shape)
        if len(shape) != len(self.shape):
            error("err_shape_mismatch", f"cannot broadcast {self.shape} to {shape}: an HBM view "
                  "is broadcast to a shape of as many axes")
        strides = list(self.strides)
        wide = set()
        for a, (have, want) in enumerate(zip(self.shape, shape)):
            if have != want:
                if have != 1:
                    error("err_shape_mismatch", f"cannot broadcast {self.shape} to {shape}")
                strides[a] = 0
                wide.add(a)
        t = self.clone_view(shape=shape, strides=strides)
        if self.chk:
            t.chk = [(c, {a: v for a, v in co.items() if a not in wide}, size, dim)
                     for c, co, size, dim in self.chk]
        return t

    def expand_dims(self, axis):
        from . import language as nl
        return nl.expand_dims(self, axis)

    def assert_shape(self, shape):
        if tuple(self.shape) != tuple(split_shape(shape)[0]):
            error("err_annotation_shape_mismatch", f"tensor has shape {self.shape}, expected {tuple(shape)}")
        return self


def index_view(t, key):
    """t[key] as a view (basic or affine advanced indexing); a view of one block of a block
    tensor is resolved to that block's buffer."""
    if _fast[0] and type(key) is tuple and type(t.buf) is BlockBuf:
        v = _adv_index_memo(t, key, True)
        if v is not None:
            # resolved already, unless it spans blocks or its tensor's loads are issued at
            # its uses (_resolve_block then makes that load: sunk_read)
            return v if type(v.buf) is not BlockBuf else _resolve_block(v)
    v = _index_view(t, key)
    if type(v.buf) is BlockBuf:
        v = _resolve_block(v)
    return v


def _index_view(t, key):
    if _fast[0]:
        return _index_view_fast(t, key)
    return _index_view_ref(t, key)


def _index_view_fast(t, key):
    """_index_view_ref for subscripts of ints, slices and affine indices (the common ones):
    the same views and errors, checked in one pass; anything else goes to the reference."""
    if type(key) is not tuple:
        if key is Ellipsis:
            return _full_view(t)
        key = (key,)
    else:
        v = _adv_index_memo(t, key)
        if v is not None:
            return v
    adv = False
    for k in key:
        tk = type(k)
        if tk is IndexExpr:
            adv = True
        elif tk is not slice and tk is not int:
            return _index_view_ref(t, key)
    n = len(t.shape)
    if len(key) > n:
        error("err_index_out_of_bound", f"{len(key)} indices for a tensor of {len(t.shape)} dims")
    if len(key) < n:
        key = key + (_FULL,) * (n - len(key))
    if adv:
        for k in key:
            if type(k) is slice and k != _FULL:
                error("err_unsupported_mixing_basic_advanced_tensor_indexing",
                      "mixing slices and index arrays in one subscript")
        return _adv_index_fast(t, key)
    return _basic_index(t, key)


_FULL = slice(None)


def _index_view_ref(t, key):
    if not isinstance(key, tuple):
        key = (key,)
    if any(type(k) is Pred for k in key):
        t._pred_view(key)           # refused by name (operand masking)
    # nl.ds and Ellipsis
    k2 = []
    for k in key:
        if k is Ellipsis:
            k2.extend([slice(None)] * (len(t.shape) - (len(key) - 1)))
        else:
            k2.append(k)
    key = k2
    if len(key) > len(t.shape):
        error("err_index_out_of_bound", f"{len(key)} indices for a tensor of {len(t.shape)} dims")
    key = key + [slice(None)] * (len(t.shape) - len(key))
    adv = any(isinstance(k, (IndexExpr, Arange1D)) for k in key)
    for k in key:
        if isinstance(k, Arange1D):
            k._bad()
        if isinstance(k, Tensor):
            error("err_unsupported_indirect_indexing",
                  "indexing with a tensor (indirect / dynamic access) is not supported by ncsim "
                  "(NCA has no dynamic addressing yet)")
    if adv:
        if any(isinstance(k, slice) and k != slice(None) for k in key):
            error("err_unsupported_mixing_basic_advanced_tensor_indexing",
                  "mixing slices and index arrays in one subscript")
        return _adv_index(t, key)
    return _basic_index(t, key)


index_view.__wrapped__ = _index_view


def _block_span(v):
    """[lo, hi] element offsets (in the tensor's logical layout) that view v touches, the
    partition dimension left out."""
    sp = v._sp
    if sp is not None:
        return sp
    lo = hi = v.off
    for i, (s, n) in enumerate(zip(v.strides, v.shape)):
        if i == v.pdim or n <= 1 or not s:
            continue
        if s > 0:
            hi += s * (n - 1)
        else:
            lo += s * (n - 1)
    return lo, hi


def _resolve_block(v):
    """A view of a block tensor that lies within one block: the same view of that block's
    physical buffer (allocated, or reloaded, now). Views across blocks stay logical."""
    bb = v.buf
    lo, hi = _block_span(v)
    blk = lo // bb.felems
    if hi // bb.felems != blk or lo < 0:
        return v
    if bb.sunk:
        r = T().sunk_read(bb, blk, v)
        if r is not None:
            return r
    return _on_block(bb, blk, v.dtype, v.shape, v.pdim, v.p0, v.strides, v.off, lo, hi, v.chk)


def _on_block(bb, blk, dt, shape, pdim, p0, strides, off, lo, hi, chk):
    """The view (dt, shape, pdim, p0, strides, offset off in the tensor's logical layout,
    spanning elements [lo, hi] of it) of block blk's buffer, allocated (or reloaded) now;
    the block's buffer taken directly when it has one (Tracer.block_alloc's first test)."""
    a = bb.allocs.get(blk)
    if a is None or a.slot is None or _tracer[0] is None:
        a = T().block_alloc(bb, blk)
    shift = blk * bb.felems
    r = Tensor(a.slot, a, dt, shape, pdim, p0, strides, off - shift)
    r.chk = chk
    sl = a.slot
    if _fast[0] and pdim is not None and sl.id >= 0:
        # box() and abox() of the resolved view, from the span already computed
        # (Tensor._box, _abox); not in a first pass, whose private buffers (id -1) no
        # dependence is recorded on
        sz = dt.itemsize
        p1 = p0 + shape[pdim]
        blo = (lo - shift) * sz
        bhi = (hi - shift + 1) * sz
        r._bx = (sl, p0, p1, blo, bhi)
        r._ab = (sl, ((p0, p1), (blo, bhi)))
    return r


def _released_write_back(t, key, value):
    """`blk_t[key] op= x` whose in-place instruction was the block's last use: the block was
    released (or evicted) when that instruction ended, so the write-back's subscript would
    allocate it again. The update is already in the block's buffer; when t[key] is value's
    view of that same block, the write-back has nothing to do (value.inplace cleared) and
    the answer is True."""
    a = value.alloc
    if a is None or a.blk is None or a.blk[0] is not t.buf:
        return False
    bb, blk = a.blk
    if a.slot is value.buf and bb.allocs.get(blk) is a:
        return False                # the block still has that buffer: the usual write-back
    one = _one_block(t, key)
    if one is None or one[3] != blk:
        return False
    v = one[0]
    if v.p0 != value.p0 or v.off - blk * bb.felems != value.off or v.shape != value.shape or \
            list(v.strides) != list(value.strides):
        return False
    T()
    value.inplace = False
    return True


def _one_block(t, key):
    """t[key] of a block tensor t as a logical view (not resolved to a buffer), when it has a
    partition dimension and lies within one block: (view, its first and last element, the
    block); else None."""
    v = index_view.__wrapped__(t, key)
    if type(v.buf) is not BlockBuf or v.pdim is None:
        return None
    lo, hi = _block_span(v)
    blk = lo // t.buf.felems
    if hi // t.buf.felems != blk:
        return None
    return v, lo, hi, blk


def _whole_block(bb, dv):
    """Does view dv (of one block, offsets within it) cover the whole block, laid out as the
    block is (partitions from 0, the free elements contiguous in order)?"""
    pd = dv.pdim
    if pd is None or dv.off or dv.p0 or dv.shape[pd] != bb.P:
        return False
    shape = [n for i, n in enumerate(dv.shape) if i != pd]
    strides = [st for i, st in enumerate(dv.strides) if i != pd]
    return _prod(shape) == bb.felems and Tensor._contig(shape, strides)


def _read_box(dv, v, lo, hi):
    """The box of dv's axes (dv: a whole-block load's destination, see _whole_block) that holds
    what view v of the block reads: v's partitions, and the smallest box of the free axes
    around elements [lo, hi] (v's span within the block, partitions left out): the axes before
    the first whose index differs at lo and hi take one index, that one the range, the later
    ones all of theirs."""
    pd = dv.pdim
    free = [i for i in range(len(dv.shape)) if i != pd]

    def unflat(x):
        idx = []
        for i in reversed(free):
            idx.append(x % dv.shape[i])
            x //= dv.shape[i]
        return idx[::-1]
    il, ih = unflat(lo), unflat(hi)
    box = [None] * len(dv.shape)
    box[pd] = (v.p0, v.p0 + v.shape[v.pdim])
    split = False
    for j, ax in enumerate(free):
        if split:
            box[ax] = (0, dv.shape[ax])
        elif il[j] != ih[j]:
            box[ax] = (il[j], ih[j] + 1)
            split = True
        else:
            box[ax] = (il[j], il[j] + 1)
    return box


def _block_view_error(v):
    bb = v.buf
    error("err_unsupported_block_access",
          f"this view of '{bb.name or 'tensor'}' {bb.shape} spans several blocks of its block "
          "dimensions; instructions take one (P, F) tile: index the block dimensions with "
          "integers or loop variables first")


def _norm_int(k, n, dim):
    k = int(k)
    if k < 0:
        k += n
    if not 0 <= k < n:
        error("err_tensor_access_out_of_bound", f"index {k} is out of bounds for dim {dim} of size {n}")
    return k


def _basic_index(t, key):
    if t.chk:
        t.check_bounds()
    shape, strides, off, p0, pdim = [], [], t.off, t.p0, None
    for i, k in enumerate(key):
        n = t.shape[i]
        if isinstance(k, slice):
            st, sp, step = k.start, k.stop, k.step
            step = 1 if step is None else int(step)
            if step <= 0:
                error("err_unsupported_index", "slices need a positive step")
            st = 0 if st is None else int(st)
            sp = n if sp is None else int(sp)
            if st < 0:
                st += n
            if sp < 0:
                sp += n
            if st < 0 or sp > n or st >= sp:
                error("err_tensor_access_out_of_bound",
                      f"slice {st}:{sp} is out of bounds (or empty) for dim {i} of size {n}")
            cnt = -(-(sp - st) // step)
            if i == t.pdim:
                if step != 1:
                    error("err_unsupported_index", "the partition dim cannot be strided")
                p0 += st
                pdim = len(shape)
                strides.append(None)
            else:
                off += t.strides[i] * st
                strides.append(t.strides[i] * step)
            shape.append(cnt)
        else:
            k = _norm_int(k, n, i)
            if i == t.pdim:
                # an integer on the partition dim keeps it (one partition)
                p0 += k
                pdim = len(shape)
                strides.append(None)
                shape.append(1)
            else:
                off += t.strides[i] * k
    if t.pdim is None:
        return t.clone_view(shape=tuple(shape), strides=strides, off=off)
    return t.clone_view(shape=tuple(shape), strides=strides, off=off, p0=p0, pdim=pdim)


def _adv_index(t, key):
    if _fast[0]:
        return _adv_index_fast(t, key)
    return _adv_index_ref(t, key)


def _adv_index_fast(t, key):
    """_adv_index_ref with the same results and errors, in fewer Python operations (the
    tracer's hot path: every nl.arange subscript)."""
    shape = ()
    for k in key:
        if type(k) is IndexExpr or isinstance(k, IndexExpr):
            ks = k.shape
            if ks != shape:
                if shape:
                    bk = (shape, ks)
                    r = _BSHAPES.get(bk)
                    if r is None:
                        r = _BSHAPES[bk] = _bshape(shape, ks)
                    shape = r
                else:
                    shape = ks
    R = len(shape)
    exprs = []
    for k in key:
        if type(k) is IndexExpr or isinstance(k, IndexExpr):
            ks = k.shape
            if len(ks) == R:
                exprs.append((k.const, k.coefs))
            else:
                exprs.append((k.const, k._aligned(R)))
        elif isinstance(k, slice):
            error("err_unsupported_mixing_basic_advanced_tensor_indexing",
                  "mixing slices and index arrays in one subscript")
        else:
            exprs.append((int(k), _NOCO))
    chk = []
    off = t.off
    strides = [0] * R
    tshape, tstrides, pdim = t.shape, t.strides, t.pdim
    for i, (c, co) in enumerate(exprs):
        if co:
            lo = hi = c
            for a, v in co.items():
                if v < 0:
                    lo += v * (shape[a] - 1)
                else:
                    hi += v * (shape[a] - 1)
            if i != pdim:
                st = tstrides[i]
                off += st * c
                for a, v in co.items():
                    strides[a] += st * v
        else:
            lo = hi = c
            if i != pdim:
                off += tstrides[i] * c
        if lo < 0 or hi >= tshape[i]:
            chk.append((c, co if co is not _NOCO else {}, tshape[i], i))
    if t.chk:
        t.check_bounds()
    if pdim is None:
        v = t.clone_view(shape=shape, strides=strides, off=off)
        v.chk = chk or None
        return v
    c, co = exprs[pdim]
    if R == 0:
        shape, strides, R = (1,), [0], 1
    if co and (len(co) != 1 or co.get(0) != 1):
        error("err_unsupported_index",
              "the partition dim must be indexed by the first (partition) index axis with step 1")
    if shape[0] > 1 and strides[0] != 0:
        error("err_unsupported_index", "the partition index axis also moves along a free dim")
    strides[0] = None
    v = t.clone_view(shape=shape, strides=strides, off=off, p0=t.p0 + c, pdim=0)
    v.chk = chk or None
    return v


def _full_view(t):
    """t[...]: _basic_index(t, all full slices), whose only possible error is t's own bounds."""
    if t.chk:
        t.check_bounds()
    v = Tensor(t.buf, t.alloc, t.dtype, t.shape, t.pdim, t.p0, list(t.strides), t.off)
    v.chk = t.chk
    if type(t.buf) is Slot:
        # the same layout: the same box, region, span and text, computed once on t (a tile
        # updated in place, `t[...] += ...`, is viewed so at every step)
        bx = t._bx
        if bx is None:
            bx = t._bx = t._box()
        tr = _tracer[0]
        if tr is not None and not tr.fast:
            if t._ab is None:
                t.abox()
            if t._txt is None and not t.chk and t.pdim is not None and _fast[0]:
                # t's text, when computing it cannot fail (its layout's checks passed before,
                # a partition start the engines take): the view's is the same, and every
                # later t[...] takes it too
                p = t.shape[t.pdim]
                p0 = t.p0
                if not (p0 and ((p > 64) or (p > 32 and p0 % 64) or (p0 % 32))) and \
                        (t.shape, t.pdim, tuple(t.strides), False) in _DIMS_TEXT:
                    t._txt = t._text()
        v._bx, v._ab, v._sp, v._txt = bx, t._ab, t._sp, t._txt
    return v


def _expr_sk(k):
    """The structure of an index expression (its shape and coefficients), cached on it; False
    when a coefficient is not a plain int (a traced loop index, _steady.Idx)."""
    sk = k.sk
    if sk is None:
        co = k.coefs
        sk = False
        if all(type(c) is int for c in co.values()):
            # a number per structure, so that a subscript's key is a tuple of small ints
            # (never renumbered: expressions keep theirs; past _SK_MAX, no more are cached)
            s = (k.shape, tuple(co.items()))
            sk = _SK_IDS.get(s)
            if sk is None:
                sk = False
                if len(_SK_IDS) < _SK_MAX:
                    sk = _SK_IDS[s] = len(_SK_IDS) + 1
        k.sk = sk
    return sk


def _adv_index_memo(t, key, resolve=False):
    """_adv_index_fast for a subscript of plain ints and index expressions (at least one), one
    per dim: what depends on the tensor's layout and the subscript's structure only (the
    view's shape and strides, each subscript's stride and bound offsets, the structural
    errors) is computed once per structure (_adv_memo_entry); per call, the constants give
    the offset, the first partition and the bounds to check. A subscript seen before (the
    same ints and the same expression objects: a loop body's `bm * 128 + i.x` is one object
    per value of bm, IndexExpr.__add__) takes those too from the memo, by its key (ints as
    they are, each expression by its number, a float n + 0.5 that no int equals, so that no
    expression is ever compared). None: not such a subscript.
    resolve: a view of a block tensor within one block is made directly as _resolve_block's
    view of that block's buffer (index_view)."""
    m = t._lk
    if m is None:
        m = t._lk = _ADV_MEMO.get((t.shape, t.pdim, tuple(t.strides)))
    kk = []
    ne = 0
    for k in key:
        tk = type(k)
        if tk is int:
            kk.append(k)
        elif tk is IndexExpr:
            if type(k.const) is not int:
                kk = None
                break
            u = k.uid
            if u is None:
                # an expression not numbered yet (made for this subscript, as
                # `nl.arange(128)[:, None]` is, or kept and seen for the first time): no
                # earlier subscript holds it; numbered now, keyed from its next one on
                k.uid = next(_UIDS) + 0.5
                kk = None
                break
            ne = 1
            kk.append(u)
        else:
            kk = None
            break
    if kk is not None and ne:
        kk = tuple(kk)
        if m is not None:
            hit = m.get(kk)
            if hit is not None:
                shape, strides, pd, dp0, doff, chk, elo, ehi, tc = hit
                if t.chk:
                    t.check_bounds()
                # (_adv_view, inlined)
                off = t.off + doff
                p0 = t.p0 + dp0
                bb = t.buf
                if resolve and type(bb) is BlockBuf and not bb.sunk:
                    lo, hi = off + elo, off + ehi
                    fe = bb.felems
                    blk = lo // fe
                    if hi // fe == blk and lo >= 0:
                        v = _on_block(bb, blk, t.dtype, shape, pd, p0, list(strides), off, lo,
                                      hi, chk)
                        if chk is None and pd is not None:
                            tr = _tracer[0]
                            if tr is not None and not tr.fast:
                                _known_text(v, tc)
                        _LAST_BLOCK_VIEW[0] = (_wref(v), _wref(t), key)
                        return v
                v = Tensor(bb, t.alloc, t.dtype, shape, pd, p0, list(strides), off)
                v.chk = chk
                v._sp = (off + elo, off + ehi)
                if chk is None and pd is not None and type(bb) is Slot:
                    tr = _tracer[0]
                    if tr is not None and not tr.fast:
                        _known_text(v, tc)
                return v
    sk = []
    idx = False
    for k in key:
        tk = type(k)
        if tk is IndexExpr:
            if type(k.const) is not int:
                if type(k.const) is not _steady.Idx:
                    return None
                idx = True
            e = k.sk
            if e is None:
                e = _expr_sk(k)
            if e is False:
                return None
            sk.append(e)
        elif tk is int:
            sk.append(None)
        elif tk is _steady.Idx:
            idx = True
            sk.append(None)
        else:
            return None
    if idx:
        key = _plain_key(key)
    sk = tuple(sk)
    ent = m.get(sk) if m is not None else None
    if ent is None:
        if len(key) != len(t.shape) or all(type(k) is int for k in key):
            return None
        v = _adv_index_fast(t, key)     # errors here are structural: nothing is cached
        if m is None:
            lk = (t.shape, t.pdim, tuple(t.strides))
            m = _ADV_MEMO.get(lk)
            if m is None:
                if len(_ADV_MEMO) >= _MEMO_MAX:
                    _ADV_MEMO.clear()
                m = _ADV_MEMO[lk] = {}
            t._lk = m
        if len(m) >= _MEMO_MAX:
            m.clear()
        ent = m[sk] = _adv_memo_entry(t, key, v)
    shape, strides, items, pc, elo, ehi = ent
    off = t.off
    chk = None
    for i, st, neg, pos, size, co in items:
        k = key[i]
        c = k if co is None else k.const
        if st is not None:
            off += st * c
        if c + neg < 0 or c + pos >= size:
            if chk is None:
                chk = []
            chk.append((c, {} if co is None else co, size, i))
    if t.chk:
        t.check_bounds()
    if pc is None:
        pd, p0 = None, t.p0
    else:
        k = key[pc]
        pd, p0 = 0, t.p0 + (k if type(k) is int else k.const)
    if kk is not None and ne:
        # (the structure's entry and this subscript's share the layout's dict: their keys,
        # tuples of ints and None against tuples holding a non-integer float, never compare
        # equal)
        if len(m) >= _MEMO_MAX:
            m.clear()
        m[kk] = (shape, strides, pd, p0 - t.p0, off - t.off, chk, elo, ehi, {})
    return _adv_view(t, shape, list(strides), pd, p0, off, chk, elo, ehi, resolve)


def _adv_view(t, shape, strides, pd, p0, off, chk, elo, ehi, resolve):
    """_adv_index_memo's view of t, from its layout, first partition, offset, bounds to check
    and lowest and highest element from the offset."""
    bb = t.buf
    if resolve and type(bb) is BlockBuf and not bb.sunk:
        lo, hi = off + elo, off + ehi
        fe = bb.felems
        blk = lo // fe
        if hi // fe == blk and lo >= 0:
            return _on_block(bb, blk, t.dtype, shape, pd, p0, strides, off, lo, hi, chk)
    v = Tensor(bb, t.alloc, t.dtype, shape, pd, p0, strides, off)
    v.chk = chk
    v._sp = (off + elo, off + ehi)
    return v


def _known_text(v, tc):
    """Give the on-chip view v (from _adv_index_memo's key memo, no bounds left to check) its
    text now, from tc, the texts of that key's views (keyed by what the text holds besides
    the layout: the byte offset in the buffer, the first partition, the type's name and the
    buffer's kind), when a second pass or a single one will write it; computed here when it
    cannot fail (the layout's checks passed before, a partition start the engines take).
    (Not called in a first pass, which keeps no text.)"""
    b = v.buf
    dt = v.dtype
    p0 = v.p0
    k = (b.offset + v.off * dt.itemsize, p0, dt.nca, b.kind)
    txt = tc.get(k)
    if txt is None:
        p = v.shape[v.pdim]
        if p0 and ((p > 64) or (p > 32 and p0 % 64) or (p0 % 32)):
            return                      # text() raises the error when asked
        if (v.shape, v.pdim, tuple(v.strides), False) not in _DIMS_TEXT:
            return
        txt = v._text()
        if len(tc) < _TEXTS_MAX:
            tc[k] = txt
    v._txt = txt


_TEXTS_MAX = 64     # _known_text: texts kept per subscript key


def _plain_key(key):
    """A subscript with the loop index of a loop being recorded (_steady.Idx, an int that
    notes what the kernel's code decides on it) as plain ints: ncsim's own arithmetic on it
    decides nothing the recording must see, and an Idx's operations are Python calls."""
    out = []
    for k in key:
        tk = type(k)
        if tk is _steady.Idx:
            k = int.__int__(k)
        elif tk is IndexExpr and type(k.const) is _steady.Idx:
            e = IndexExpr(int.__int__(k.const), k.coefs, k.shape)
            e.sk = k.sk
            k = e
        out.append(k)
    return tuple(out)


def _adv_memo_entry(t, key, v):
    """(shape, strides, [(dim, stride or None on the partition dim, lowest and highest
    offset of the subscript's values from its constant, the dim's size, its coefficients or
    None for an int)], the partition dim or None, the lowest and highest element from the
    view's offset) of the view v = _adv_index_fast(t, key)."""
    R = 0
    for k in key:
        if type(k) is IndexExpr and len(k.shape) > R:
            R = len(k.shape)
    # the broadcast shape before the partition dim's fix-up of an empty shape
    shape = v.shape if not (t.pdim is not None and R == 0) else ()
    items = []
    for i, k in enumerate(key):
        st = None if i == t.pdim else t.strides[i]
        if type(k) is IndexExpr:
            co = k.coefs if len(k.shape) == R else k._aligned(R)
            neg = pos = 0
            for a, c in co.items():
                if c < 0:
                    neg += c * (shape[a] - 1)
                else:
                    pos += c * (shape[a] - 1)
            items.append((i, st, neg, pos, t.shape[i], dict(co)))
        else:
            items.append((i, st, 0, 0, t.shape[i], None))
    lo, hi = _block_span(v)
    return v.shape, v.strides, tuple(items), t.pdim, lo - v.off, hi - v.off


_ADV_MEMO = {}      # _adv_index_memo: layout -> {subscript's structure -> _adv_memo_entry}
_LAST_BLOCK_VIEW = [None]  # _adv_index_memo: (view, block tensor, subscript) of the last
                           # block view answered by key (Tensor.__setitem__'s write-back); the
                           # tensors by weak reference, since the allocator counts references
_wref = weakref.ref
_SK_IDS = {}        # _expr_sk: an index expression's structure -> its number
_SK_MAX = 1 << 20
_DIMS_TEXT = {}     # Tensor._text: layout -> the text of its free dims
_MEMO_MAX = 1 << 16  # either cache is emptied when it reaches this many structures (they are
                     # pure functions of their keys: any entry can be computed again)
_NOCO = {}
_BSHAPES = {}       # (shape, shape) -> their broadcast shape, for those that broadcast
_fast = [True]      # the tracer's optimised paths (Policy.fast_trace); False: the reference ones
_DEPS_IN_C = [True]  # with them and the C passes: dependences from the access log (Tracer.acclog)


def _adv_index_ref(t, key):
    exprs = []
    shape = ()
    for k in key:
        if isinstance(k, IndexExpr):
            shape = _bshape(shape, k.shape)
    R = len(shape)
    for i, k in enumerate(key):
        if isinstance(k, IndexExpr):
            exprs.append((k.const, k._aligned(R)))
        elif isinstance(k, slice):
            # a full slice in advanced mode: only allowed on dims of size 1 or when nothing else
            error("err_unsupported_mixing_basic_advanced_tensor_indexing",
                  "mixing slices and index arrays in one subscript")
        else:
            exprs.append((int(k), {}))
    # bounds (static out-of-bounds is a compile error, checked when the access is emitted,
    # after its mask has shrunk it)
    chk = []
    for i, (c, co) in enumerate(exprs):
        lo = c + sum(min(0, v * (shape[a] - 1)) for a, v in co.items())
        hi = c + sum(max(0, v * (shape[a] - 1)) for a, v in co.items())
        if lo < 0 or hi >= t.shape[i]:
            chk.append((c, co, t.shape[i], i))
    off = t.off
    strides = [0] * R
    for i, (c, co) in enumerate(exprs):
        if i == t.pdim:
            continue
        off += t.strides[i] * c
        for a, v in co.items():
            strides[a] += t.strides[i] * v
    if t.chk:
        t.check_bounds()
    if t.pdim is None:
        v = t.clone_view(shape=shape, strides=strides, off=off)
        v.chk = chk or None
        return v
    c, co = exprs[t.pdim]
    if R == 0:
        shape, strides, R = (1,), [0], 1
    if co and (list(co) != [0] or co[0] != 1):
        error("err_unsupported_index",
              "the partition dim must be indexed by the first (partition) index axis with step 1")
    if shape[0] > 1 and strides[0] != 0:
        error("err_unsupported_index", "the partition index axis also moves along a free dim")
    strides = [None] + strides[1:]
    v = t.clone_view(shape=shape, strides=strides, off=off, p0=t.p0 + c, pdim=0)
    v.chk = chk or None
    return v


# --------------------------------------------------------------------------- the tracer

_tracer = [None]
_NL = []            # _nl(): the language module, once imported


def _nl():
    """ncsim.nki.language (which imports this module: imported on first use, then kept, so
    that the hot paths do not run an import statement per call)."""
    if not _NL:
        from . import language
        _NL.append(language)
    return _NL[0]



def _deref(r):
    return r()


_STORES = {}        # code object -> {call offset: name of the local the result is stored to}


def assigned_local(frame):
    """The current value of the local variable that the call running in `frame` is assigned
    to (`b = f(...)`), or None (a subscript assignment, an expression, another scope)."""
    code = frame.f_code
    m = _STORES.get(code)
    if m is None:
        import dis
        # f_lasti is the last code unit of the call (its inline caches included): the one
        # just before the STORE_FAST of its result
        m = {ins.offset - 2: ins.argval for ins in dis.get_instructions(code)
             if ins.opname == "STORE_FAST"}
        _STORES[code] = m
    name = m.get(frame.f_lasti)
    return None if name is None else frame.f_locals.get(name)


def T():
    t = _tracer[0]
    if t is None:
        error("err_nki_api_outside_of_nki_kernel", "NKI APIs can only be called inside a kernel")
    return t


def _out_of_scope(a):
    fn, ln = a.dead
    error("err_local_variable_used_out_of_scope",
          f"this tensor was created in an iteration of the loop at {os.path.basename(fn)}:{ln}, "
          "and a loop body's tensors die when its iteration ends; allocate it before the loop "
          "and update it in place (t[...] = ...) to keep it")


_CO_OPTIMIZED = 0x1


def _tensor_items(loc):
    """The (name, value) pairs of the dict loc whose value is a Tensor, in order, picked in C
    (a kernel's frame has tens of variables, few of them tensors)."""
    return itertools.compress(loc.items(), map(operator.is_, map(type, loc.values()),
                                               itertools.repeat(Tensor)))


class LoopRange:
    """nl.affine_range / sequential_range / static_range: a range whose iterations are scopes.

    A tensor allocated during an iteration dies when the iteration ends (NKI: local tensors are
    scoped to their block), so its buffer can take the next iteration's tensor even though the
    kernel's Python variable still names it. A tensor escapes (and lives on, freed when its last
    view dies) when something other than the loop's own local variables refers to it: a list or
    object made outside the iteration, or a variable that was bound before the loop started
    (`acc = acc + x`, a loop-carried value)."""
    __slots__ = ("r",)

    def __init__(self, r):
        self.r = r

    def __len__(self):
        return len(self.r)

    def __getitem__(self, i):
        return self.r[i]

    def __repr__(self):
        return repr(self.r)

    def __iter__(self):
        tr = _tracer[0]
        if tr is None or not self.r:
            return iter(self.r)
        return self._iterate(tr)

    def _iterate(self, tr):
        frame = sys._getframe(1)       # the frame running the for statement
        where = (frame.f_code.co_filename, _lineno(frame))
        outer = None
        if frame.f_code.co_flags & _CO_OPTIMIZED:
            if tr.pending is not None:
                tr.flush()
            loc = frame.f_locals
            # the variables of the enclosing scope; a name that still holds a dead tensor of an
            # earlier loop's iteration is not one (the tensors picked from the variables in C)
            outer = frozenset(loc)
            dead = [n for n, v in _tensor_items(loc) if v.alloc is not None and v.alloc.dead]
            if dead:
                outer = outer.difference(dead)
            loc.clear()
            del loc
        if tr.pol.steady_state:
            return (yield from _steady.iterate(tr, self.r, frame, outer, where))
        if tr.steady is not None:
            tr.steady.refuse("the body has a nested NKI loop")
        scopes = tr.scopes
        depth = len(scopes)
        try:
            for i in self.r:
                scopes.append([])
                yield i
                tr.end_iteration(sys._getframe(1), outer, where)
        finally:
            del scopes[depth:]


class Pending:
    """An instruction whose destination is not chosen yet: emitted into the tensor it is assigned
    to (`t[...] = nl.exp(x)`), or into a fresh tile when used otherwise."""
    __slots__ = ("space", "emit", "site", "matmul", "line")

    def __init__(self, space, emit, site, matmul=None, line=0):
        self.line = line
        self.space = space
        self.emit = emit            # emit(dest_view, box) -> None
        self.site = site
        self.matmul = matmul        # (stationary, moving) for PSUM accumulation


class Node:
    __slots__ = ("eng", "text", "line", "waits", "agent", "idx", "deps", "cost", "pin")

    def __init__(self, eng, text, line, waits, agent, idx, cost=0.0, pin=False):
        self.eng, self.text, self.line, self.waits, self.agent, self.idx = \
            eng, text, line, waits, agent, idx
        self.deps = None    # for the scheduler (_sched.py): [(agent, trace index)] it follows
        self.cost = cost    # its estimated ns
        self.pin = pin      # traced inside ncc.no_reorder()


class Resident:
    """Second pass: the SBUF copy of a load's data that the next load of the same data uses
    instead of a DMA. It owns the buffer (slot.owner is the Resident) until it is no longer
    kept and every tensor that used it is dead."""
    __slots__ = ("slot", "view", "src", "users", "kept")

    def __init__(self, slot, view, src):
        self.slot, self.view, self.src = slot, view, src
        self.users = []                # weakrefs to the Allocs of tensors that use it
        self.kept = True               # False once no later load will use it
        slot.owner = self

    def user_gone(self):
        if not self.kept and all(r() is None or r().slot is not self.slot or r().dead
                                 for r in self.users):
            if self.slot.owner is self:
                self.slot.owner = None
                self.slot.now_free()


def _free_slot(a, tick=-1):
    """Alloc a lets go of its buffer: freed if a owns it, or handed back to a resident copy."""
    s = a.slot
    if s is None:
        return
    o = s.owner
    if o is a.token:
        s.owner = None
        s.freed = tick
        t = _tracer[0]
        if t is not None and t.steady is not None and a.blk is None:
            t.steady.ev.append((("R", s), ()))
    elif type(o) is Resident:
        a.slot = None
        o.user_gone()


class Tracer:
    def __init__(self, pol, source, live=None, prev=None):
        if prev is not None:
            live = prev.uses
        self.pol = pol
        _fast[0] = bool(getattr(pol, "fast_trace", True))
        # Loads (docs/nki.md, "Repeated loads"): the first pass records, per load site, the
        # distinct data it loads and how often; the second keeps the data of sites that fit.
        self.loads = {}                # first pass: key -> [(site, load bytes before it)]
        self.loaded = 0                # bytes per partition loaded so far
        self.dirty = set()             # first pass: sites whose tiles are written after the load
        self.res = {}                  # second pass: key -> Resident
        self.prev_loads = prev.loads if prev is not None else {}
        self.prev_dirty = prev.dirty if prev is not None else set()
        self.nload = {}                # second pass: key -> loads of it so far
        self.elided_bytes = 0
        # Block tensors (docs/nki.md, "Allocation"). The first pass records, per block, the
        # ticks (kernel instructions) that access it; the second allocates by that liveness.
        self.live = live               # None in the first pass: {(ordinal, block): [ticks]}
        self.uses = {}                 # first pass: the same, being recorded
        self.tick = 0                  # kernel instructions emitted so far (not spills/reloads)
        self.fast = False              # a first pass that will be traced again: skip dependences
        self.blockbufs = []
        self.spill_bytes = 0
        self.reload_bytes = 0
        self.remat_bytes = 0
        self.psum_saves = []           # SBUF BlockBufs holding spilled PSUM blocks (_psum_save)
        self.psum_ident = {}           # partitions -> SBUF identity tile (_psum_identity)
        self.psum_spill_bytes = 0      # bytes copied PSUM -> SBUF by spills
        self.psum_reload_bytes = 0     # bytes copied back SBUF -> PSUM
        # PSUM tiles without block dimensions (docs/nki.md, "Spills and reloads"): numbered in
        # order of allocation; a first pass run without loop replay (so that it sees every
        # access) records when each is used and which are used together, and gives a tile
        # that finds PSUM full a buffer that uses no memory; the second spills by those uses
        self.npt = 0                   # plain PSUM tiles allocated so far
        self.trec = live is None and not pol.steady_state and pol.psum_spill
        self.tuses = {}                # first pass: tile number -> [ticks]
        self.tco = set()               # first pass: (tile, tile) used by one instruction
        self.tsite = []                # first pass: per tile (save key, index under it, dtype)
        self.tkeys = {}                # first pass: save key -> tiles under it
        self.tile_over = False         # first pass: a tile found PSUM full
        self.tprev = prev if prev is not None and prev.trec else None
        self.thook = self.trec         # emit calls _tiles_at (recording, or tiles are away)
        self.away = {}                 # second pass: spilled tile -> (save, block), () or None
        self.tsaves = {}               # second pass: save key -> SBUF BlockBuf of copies
        self.tsite_bytes = {}          # second pass: allocation site -> [spilled, reloaded]
        self.source = source           # the kernel's file: .source and the lines of .loc
        self.nodes = []
        self.count = [0] * N_AGENTS
        self.vc = [[-1] * N_AGENTS for _ in range(len(ENGINES))]
        self.qvc = [[-1] * N_AGENTS for _ in range(N_QUEUES)]
        self.selfknown = [-1] * len(ENGINES)   # per engine: its own last instruction known complete
        self.clocks = [[] for _ in range(N_AGENTS)]
        self.slots = []
        SLOT_DIRTY.clear()             # (another tracer's buffers)
        # free buffers, for _other_free: per (kind, size) a heap of (tick freed, id), entries
        # pushed whenever a buffer is freed and dropped, once stale, when met at the top
        self.free_heaps = {}
        self.free_sizes = {"sbuf": [], "psum": []}      # per kind: the sizes, ascending
        self.nheaped = 0                                # buffers of self.slots in the heaps
        self.sites = {}
        self.bsites = {}        # block tensors' declaration sites: their last instances
        self.sb_free = [(0, pol.sbuf_bytes)]
        self.ps_free = [True] * PSUM_BANKS
        self.hbm = []
        self.hbm_next = 0
        self.names = set()
        self.pending = None
        self.rr = {"load": 0, "store": 0}
        self.instance = 0
        self.shared_outputs = []       # per creation index: HbmBuf shared by all SPMD instances
        self.shared_idx = 0
        self.program_id = ()
        self.grid = ()
        self.const_tiles = {}
        self.line_override = None
        self.prints = []                       # nl.device_print: (prefix, HBM output name)
        self.load = [0.0] * len(ENGINES)       # estimated busy ns per engine (for "auto")
        self.consts = {}
        self.act_func = None                   # ScalarE's last function (its table set)
        self.scopes = []                       # per open loop iteration: weakrefs to its Allocs
        self.steady = None                     # _steady.Recorder of the loop being recorded
        self.slot_states = {}                  # _steady._slot_part's kept buffer lists
        self.steady_reused = 0                 # runs replayed from a remembered steady state
        self.steady_known = {}                 # _steady.iterate: per loop statement, the
                                               # steady states its earlier runs found
        self.steady_skipped = 0                # loop iterations replayed, not run (_steady.py)
        self.steady_log = {}                   # (file, line) of a loop -> _steady._log's entry
        self.steady_size = {}                  # _steady.iterate: per short loop statement, the
                                               # events of its first run's first iteration
        self.steady_short_refused = {}         # ... and why its recording found no replay
        self.rand_seed = 0                     # nl.random_seed's seed
        self.rand_calls = 0                    # nl.rand calls since it (each call's counter
                                               # base; advanced by the steady replay)
        self.replayable_internal = False       # emit: a compiler-made load the replay makes too
        self.pinned = 0                        # depth of ncc.no_reorder() blocks
        self.exact = None                      # emit: every earlier access it conflicts with
        # The access log (docs/nki.md, "Cost of lowering"): with the optimised paths and the C
        # passes, emit does not look for dependences but logs every access, and one C pass
        # (_native.deps_c) finds them all in Tracer.finish, as _access_ref would. Per node, in
        # the nodes' order: agent, index, its accesses (memory number, write + 2 * dims, the
        # box's (lo, hi) bounds), -1. A memory's number is kept in its .recs (which holds the
        # records of _access/_access_ref otherwise); mem_ext: per memory its extents along
        # dims 0 and 1 (the C pass's index cells follow them).
        self.acclog = None
        self.mem_ext = None
        if pol.fast_trace and pol.schedule_window > 1 and _DEPS_IN_C[0]:
            try:
                if _native.enabled(pol.native_passes):
                    self.acclog = []
                    self.mem_ext = []
            except (ValueError, ImportError):
                pass        # (Tracer.finish raises it, as without the log)
        # block tensors whose loads are issued at their uses (second pass; _choose_sunk)
        self.sunk = self._choose_sunk(prev) if prev is not None else frozenset()
        self.load_whole = False                # in the transfer of a whole nl.load (language.py)
        # direct allocation (compiler.py): {kind: the Slot covering that memory} once the
        # kernel places a tensor itself, and the placed tensors for report()
        self.direct = None
        self.direct_tensors = []
        self.force_auto = False                # @ncc.force_auto_alloc
        self.shared_lines = {}                 # shared_hbm tensor name -> its declaration's line

    # ---- loop scopes (LoopRange)
    def end_iteration(self, frame, outer, where):
        """Release the tensors allocated in the iteration that just ended, unless they escape."""
        if self.pending is not None:
            self.flush()
        refs = self.scopes.pop()
        if not refs:
            return                     # nothing allocated in the iteration (a loop of matmuls)
        live = [a for a in map(_deref, refs) if a is not None]
        if not live:
            return
        parent = self.scopes[-1] if self.scopes else None
        if outer is None:
            loc = None                 # module or class level: cannot see the variables
        else:
            loc = frame.f_locals       # a snapshot (refreshed by each read of f_locals)
        views = {}                     # id(alloc) -> number of references the variables explain
        carried = set()
        if loc is not None:
            names = {}
            v = None
            for name, v in loc.items():
                if type(v) is Tensor and v.alloc is not None:
                    names.setdefault(id(v), [v, 0])[1] += 1
                    if name in outer:
                        carried.add(id(v.alloc))
            for v, n in names.values():
                # references: one per variable plus one per entry of the snapshot, `v`, the
                # list in names and getrefcount's argument
                if sys.getrefcount(v) == 2 * n + 3:
                    k = id(v.alloc)
                    views[k] = views.get(k, 0) + 1
            names = v = None
        for a in live:
            k = id(a)
            # references to a: one per view, `live`, `a` and getrefcount's argument
            if k not in carried and sys.getrefcount(a) == views.get(k, -9) + 3:
                a.release(where)
            elif parent is not None:
                parent.append(weakref.ref(a))
        if loc is not None:
            loc.clear()                # the snapshot must not keep tensors alive

    def stats_steady(self, n):
        self.steady_skipped += n

    # ---- source lines
    def line(self):
        f = sys._getframe(2)
        src = self.source
        best = 0
        while f is not None:
            fn = f.f_code.co_filename
            if fn == src:
                return _lineno(f)
            if not best and not fn.startswith(_NCSIM_DIR):
                best = -1
            f = f.f_back
        return 0

    # ---- HBM
    def new_hbm(self, name, dt, shape, kind):
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in (name or "t")) or "t"
        if base[0].isdigit():
            base = "t_" + base
        n, i = base, 1
        while n in self.names:
            i += 1
            n = f"{base}_{i}"
        self.names.add(n)
        size = _prod(shape) * dt.itemsize
        addr = self.hbm_next
        self.hbm_next = (addr + size + 63) // 64 * 64
        b = HbmBuf(n, dt, shape, kind, addr)
        b.id = len(self.hbm)
        self.hbm.append(b)
        return b

    def hbm_tensor(self, b):
        return Tensor(b, None, b.dtype, b.shape, None, 0, _row_strides(b.shape), 0)

    # ---- on-chip allocation
    def _site_key(self, kind, nbytes):
        f = sys._getframe(2)
        key = [kind, nbytes]
        src = self.source
        while f is not None:
            code = f.f_code
            r = _CODES.get(id(code))
            if r is None:
                r = _code_rec(code)
            if r[1]:
                # (_lineno, inlined)
                m = r[2]
                i = f.f_lasti
                ln = m.get(i)
                if ln is None:
                    ln = m[i] = f.f_lineno
                fn = code.co_filename
                key.append((fn, ln))
                if fn == src:
                    break
            f = f.f_back
        return tuple(key)

    def _carve(self, kind, nbytes):
        if kind == "psum":
            nb = max(1, -(-nbytes // PSUM_BANK))
            for b in range(PSUM_BANKS - nb + 1):
                if all(self.ps_free[b:b + nb]):
                    for j in range(b, b + nb):
                        self.ps_free[j] = False
                    return b * PSUM_BANK, nb * PSUM_BANK
            return None
        need = (nbytes + 63) // 64 * 64
        for i, (s, e) in enumerate(self.sb_free):
            if e - s >= need:
                self.sb_free[i] = (s + need, e)
                return s, need
        return None

    def new_onchip(self, kind, dt, shape, pdim, site=None, name=""):
        shape = tuple(shape)
        if len(shape) < 2 and kind in ("sbuf", "psum"):
            shape = shape + (1,)
        P = shape[pdim]
        if P > PMAX:
            error("err_partition_dim_too_large",
                  f"Size of partition dimension {P} exceeds architecture limitation of {PMAX}")
        empty = P < 1
        nfree = 1           # the free dims' product
        i = 0
        for d in shape:
            if d < 1:
                empty = True
            if i != pdim:
                nfree *= d
            i += 1
        if empty:
            error("err_invalid_shape", f"empty shape {shape}")
        if pdim > 0 and site is None:
            bsite = None
            if self.live is not None and self.pol.loop_buffers == "rotate":
                # the declaration's site (its line and call path), whose instances rotate
                # through the same buffers (Tracer._block_slot)
                bsite = self._site_key("blocks-" + kind, _prod(shape[pdim + 1:]) * dt.itemsize)
            return self.new_blocks(kind, dt, shape, pdim, name, bsite)
        nbytes = nfree * dt.itemsize
        if kind == "psum" and nbytes > PSUM_BANK * PSUM_BANKS:
            error("err_psum_tensor_too_large",
                  f"a PSUM tensor of {nbytes} bytes per partition (PSUM holds {PSUM_BANK * PSUM_BANKS})")
        if kind == "sbuf" and nbytes > self.pol.sbuf_bytes:
            error("err_out_of_memory",
                  f"an SBUF tensor of {nbytes} bytes per partition (at most {self.pol.sbuf_bytes} usable)")
        key = site or self._site_key(kind, nbytes)
        s = self.sites.get(key)
        if s is None:
            s = self.sites[key] = Site()
        slot = self._pick_slot(kind, nbytes, s)
        a = Alloc(slot, kind)
        if kind == "psum":
            self._tile_new(a, key, shape, pdim, dt)
        if self.scopes:
            self.scopes[-1].append(weakref.ref(a))
        return Tensor(slot, a, dt, shape, pdim, 0, _row_strides(shape, pdim), 0)

    # ---- repeated loads
    def needs_second_pass(self):
        if self.blockbufs or self.tile_over:
            return True
        if self.pol.resident_loads == "never":
            return False
        # some load's data would be kept for the next load of it (see _keep)
        c = self.pol.resident_bytes
        for occ in self.loads.values():
            for a, b in zip(occ, occ[1:]):
                if a[0] not in self.dirty and b[1] - a[1] - a[2] <= c:
                    return True
        return False

    def load_key(self, sv, dt, shape):
        return (sv.buf.id, sv._txt or sv._text(), dt.name, tuple(shape))

    def _keep(self, key, n):
        """Second pass: is the data of this (the n-th) load of key kept for the next one? Yes
        when the next exists, its site writes none of its tiles, and at most resident_bytes
        per partition are loaded in between (a cache of recently loaded data)."""
        if self.pol.resident_loads == "never":
            return False
        if self.pol.resident_loads != "reuse":
            raise ValueError("resident_loads is 'reuse' or 'never'")
        occ = self.prev_loads.get(key)
        if occ is None or n + 1 >= len(occ) or occ[n][0] in self.prev_dirty:
            return False
        return occ[n + 1][1] - occ[n][1] - occ[n][2] <= self.pol.resident_bytes

    def resident_hit(self, key, site):
        """Second pass: a view of the kept copy of this load's data (no DMA), or None."""
        e = self.res.get(key)
        if e is None:
            return None
        if e.src.buf.written is not None:
            e.kept = False
            del self.res[key]
            e.user_gone()
            return None
        self.flush()
        if self.steady is not None:
            self.steady.refuse("a load uses a resident copy")
        self.tick += 1                 # the first pass's load instruction
        n = self.nload[key] = self.nload.get(key, 0) + 1
        v = e.view
        a = Alloc(e.slot, "sbuf")
        e.slot.owner = e               # the copy owns the buffer, not the tensor
        a.written = True
        if len(e.users) > 64:
            e.users = [r for r in e.users if r() is not None]
        e.users.append(weakref.ref(a))
        if self.scopes:
            self.scopes[-1].append(weakref.ref(a))
        if not self._keep(key, n - 1):
            e.kept = False
            del self.res[key]
        t = Tensor(e.slot, a, v.dtype, v.shape, 0, 0, v.strides, 0)
        t.inplace = "resident"
        self.elided_bytes += _prod(v.shape) * v.dtype.itemsize
        self.loaded += _prod(v.shape[1:]) * v.dtype.itemsize
        return t

    def load_done(self, key, site, d, sv):
        """After the DMA of a load that fills a whole tile or block: first pass, record it;
        second pass, keep the data if the next load of it comes soon enough."""
        a = d.alloc
        n = _prod(d.shape[1:]) * d.dtype.itemsize
        if a is None or d.off or d.p0 or not Tensor._contig(d.shape[1:], d.strides[1:]):
            whole = False
        else:
            whole = n == a.blk[0].fbytes if a.blk is not None else (n + 63) // 64 * 64 == d.buf.size
        rec = self.steady
        if not whole:
            if self.live is None:
                self.dirty.add(site)
            return
        if self.live is None:
            self.loads.setdefault(key, []).append((site, self.loaded - n, n))
            d.buf.tag = site
            if rec is not None:
                _steady.rec_load1(rec, key, site, self.loaded - n, n, d)
            return
        i = self.nload[key] = self.nload.get(key, 0) + 1
        if rec is not None:
            _steady.rec_load2(rec, key)
        if whole and d.buf.kind == "sbuf" and key not in self.res and self._keep(key, i - 1):
            if rec is not None:
                rec.refuse("a load's data is kept resident")
            v = d.clone_view()
            v.alloc = None
            e = self.res[key] = Resident(d.buf, v, sv)
            e.users.append(weakref.ref(a))

    def alias_block(self, t, key, value):
        """bt[key] = (a kept load): the block takes the copy's buffer, with no instruction,
        when the view is exactly one whole block laid out like the copy."""
        bb = t.buf
        one = _one_block(t, key)
        if one is None:
            return False
        v, _, _, blk = one
        if v.off != blk * bb.felems or v.p0 or v.shape[v.pdim] != bb.P or \
                value.shape[0] != bb.P:
            return False
        free = [(s, n) for i, (s, n) in enumerate(zip(v.strides, v.shape)) if i != v.pdim and n > 1]
        vfree = [(s, n) for s, n in zip(value.strides[1:], value.shape[1:]) if n > 1]
        if free != vfree or _prod(value.shape[1:]) != bb.felems:
            return False
        e = value.buf.owner
        if type(e) is not Resident:
            return False
        old = bb.allocs.get(blk)
        if old is not None and old.slot is not None:
            _free_slot(old, self.tick)
            old.slot = None
            bb.live -= 1
        a = Alloc(value.buf, "sbuf")
        value.buf.owner = e
        e.users.append(weakref.ref(a))
        a.blk = (bb, blk)
        a.remat = None
        a.written = True
        bb.allocs[blk] = a
        bb.used.add(value.buf.id)
        bb.live += 1
        if bb.live > bb.peak:
            bb.peak = bb.live
        return True

    # ---- loads issued at their uses (docs/nki.md, "Loads issued at their uses")
    def _choose_sunk(self, prev):
        """From the first pass (prev): the SBUF block tensors whose loads are issued at their
        uses. Live bytes per partition at each kernel instruction are the blocks between their
        first and last access plus one buffer of each tile allocation site; while their peak
        exceeds SBUF, the block tensor holding the most bytes at the peak among those whose
        every write loads a whole block from a kernel input that the kernel never writes is
        not kept: at its uses it needs only `sbuf_bufs` buffers of a block, from its first
        access to its last. Ordinals of the chosen tensors."""
        pol = self.pol
        if not (pol.rematerialize and pol.reload_at_uses):
            return frozenset()
        bbs = prev.blockbufs
        cand = sorted(bb.ordinal for bb in bbs if bb.kind == "sbuf" and bb.pure and bb.srcs
                      and all(b.written is None for b in bb.srcs))
        if not cand:
            return frozenset()
        spans = {}
        for (o, blk), ticks in prev.uses.items():
            if bbs[o].kind == "sbuf":
                spans.setdefault(o, []).append((ticks[0], ticks[-1]))
        tiles = sum(max(sl.size for sl in site.slots) for site in prev.sites.values()
                    if site.slots and site.slots[0].kind == "sbuf")
        budget = pol.sbuf_bytes - tiles
        sunk = set()
        while True:
            ev = []
            for o, sp in spans.items():
                f = bbs[o].fbytes
                if o in sunk:
                    f *= max(1, pol.sbuf_bufs)
                    sp = [(min(a for a, _ in sp), max(b for _, b in sp))]
                for a, b in sp:
                    ev.append((a, f))
                    ev.append((b + 1, -f))
            ev.sort()
            cur = peak = 0
            at = None
            for t, d in ev:
                cur += d
                if cur > peak:
                    peak, at = cur, t
            if peak <= budget:
                break
            best = None
            for o in cand:
                if o in sunk:
                    continue
                live = bbs[o].fbytes * sum(1 for a, b in spans.get(o, ()) if a <= at <= b)
                if live and (best is None or live > best[0]):
                    best = (live, o)
            if best is None:
                break
            sunk.add(best[1])
        return frozenset(sunk)

    def sink_load(self, t, key, value):
        """t[key] = nl.load(...) into a block tensor whose loads are issued at its uses: no
        instruction, the block records where its data is. False when the assignment is not
        such a load: the block then gets a buffer (and its data) as any block, and the
        assignment is emitted as usual."""
        bb = t.buf
        if bb.direct is not None:
            return False                   # a directly allocated tensor (compiler.Placed)
        one = _one_block(t, key)
        if one is None or one[1] < 0:
            return False
        v, _, _, blk = one
        a = bb.allocs.get(blk)
        if a is not None and a.slot is not None and a.slot.id >= 0:
            return False                   # a block with a buffer (_unsink): as any block
        sv = lkey = None
        load = False
        if type(value) is Tensor:
            if value.pend is not None and value is self.pending:
                sk = getattr(value.pend.emit, "sink", None)
                if sk is not None:
                    sv, lkey = sk
                    load = True
            elif value.inplace == "resident" and value.pend is None and \
                    type(value.buf.owner) is Resident:
                sv = value.buf.owner.src      # a kept load's data: its source
        dv = None
        if sv is not None:
            dv = v.clone_view(off=v.off - blk * bb.felems)
            if dv.shape != sv.shape:
                dv = _reshape_like(dv, sv.shape)
            if dv.shape != sv.shape or not _whole_block(bb, dv):
                dv = None
        if dv is None:
            self._unsink(bb, blk)
            return False
        if self.steady is not None and not load:
            self.steady.refuse("a block tensor's load at its uses reads a kept copy")
        if load:
            self.take_pending(value)
            self.tick += 1                 # the first pass's load instruction
            if lkey is not None:
                self.nload[lkey] = self.nload.get(lkey, 0) + 1
        if a is None:
            a = Alloc(Slot(-1, bb.kind, 0, bb.fbytes, None), bb.kind)    # no memory
            a.blk = (bb, blk)
            bb.allocs[blk] = a
        dv.buf = a.slot
        dv.alloc = None
        a.remat = [(dv, sv)]
        a.written = True
        if self.steady is not None:
            _steady.rec_sink(self.steady, bb, blk, dv, sv, lkey)
        return True

    def _unsink(self, bb, blk):
        """Block blk of a tensor whose loads are issued at its uses is written by something
        else: it gets a buffer, and the data its loads put there, and is a block as any."""
        a = bb.allocs.get(blk)
        if a is None or a.slot is None or a.slot.id >= 0:
            return
        if self.steady is not None:
            self.steady.refuse("a block of a tensor whose loads are issued at its uses is "
                               "written otherwise")
        a.slot = None
        self._block_alloc(bb, blk, a)

    def sunk_read(self, bb, blk, v):
        """View v of block blk of a tensor whose loads are issued at its uses: the load of
        what v reads, issued now into a buffer of its own, and v's view of that buffer, which
        is free again when the view dies. None when the block has a buffer or no data. A
        directly allocated tensor's view: that of the block's placed tile (compiler.Placed)."""
        if bb.direct is not None:
            return bb.direct.view(self, bb, blk, v)
        a = bb.allocs.get(blk)
        if a is None or a.slot is None or a.slot.id >= 0:
            return None
        dv, sv = a.remat[0]
        lo, hi = _block_span(v)
        base = blk * bb.felems
        box = _read_box(dv, v, lo - base, hi - base)
        slot = self._pick_slot(bb.kind, bb.fbytes, bb.site)
        u = Alloc(slot, bb.kind)
        u.written = True
        if self.scopes:
            self.scopes[-1].append(weakref.ref(u))
        d = dv.clone_view()
        d.buf, d.alloc = slot, u
        d = d.restrict(box)
        src = sv.restrict(box)
        pol = self.pol
        nbytes = _prod(src.shape) * src.dtype.itemsize
        if self.steady is not None:
            # (the load below is an instruction of the recorded iteration, replayed as such)
            _steady.rec_sunk_use(self.steady, bb, slot, nbytes)

        def issue():
            q = pol.load_queues[self.rr["load"] % len(pol.load_queues)]
            self.rr["load"] += 1
            self.replayable_internal = True
            try:
                self.emit(pol.load_engine, f"dma {d.text()}, {src.text()}, queue={q}",
                          reads=[src], writes=[d], queue=q, internal=True)
            finally:
                self.replayable_internal = False
        self._internal(issue)
        bb.remat_bytes += nbytes
        bb.reissued += 1
        bb.used.add(slot.id)
        r = v.clone_view(off=v.off - base)
        r.buf, r.alloc = slot, u
        return r

    # ---- block tensors
    def new_blocks(self, kind, dt, shape, pdim, name, bsite=None):
        """A tensor with block dimensions: logical; no memory until a block is touched. bsite:
        its declaration's site key (second pass, loop_buffers "rotate"): the instance takes
        the buffers of the instance `depth` before it at the same site, when free."""
        bb = BlockBuf(kind, dt, shape, pdim, name, len(self.blockbufs), self.line())
        if bsite is not None:
            gens = self.bsites.get(bsite)
            if gens is None:
                gens = self.bsites[bsite] = []
            depth = self._block_depth(kind)
            bb.tmpl = [g.took for g in gens]
            bb.took = []
            gens.append(bb)
            if len(gens) > depth:
                del gens[0]
        bb.sunk = bb.ordinal in self.sunk
        if self.live is None:
            self.fast = True           # a second pass will follow (needs_second_pass)
        if kind == "psum" and bb.fbytes > PSUM_BANK:
            error("err_psum_tensor_too_large",
                  f"a PSUM block of {bb.fbytes} bytes per partition (one block lives in one "
                  f"{PSUM_BANK}-byte bank)")
        if kind == "sbuf" and bb.fbytes > self.pol.sbuf_bytes:
            error("err_out_of_memory",
                  f"an SBUF block of {bb.fbytes} bytes per partition (at most "
                  f"{self.pol.sbuf_bytes} usable)")
        self.blockbufs.append(bb)
        if self.steady is not None:
            # an event of the recorded iteration (made again when replayed: _steady._windows)
            self.steady.made(bb, bsite)
        return Tensor(bb, None, dt, shape, pdim, 0, _row_strides(shape, pdim), 0)

    def _internal(self, fn):
        """Emit compiler-made instructions (fills, spills, reloads) now, ahead of a pending
        instruction of the kernel, which is left pending."""
        p = self.pending
        self.pending = None
        old = self.line_override
        try:
            fn()
        finally:
            self.pending = p
            self.line_override = old

    def block_alloc(self, bb, blk):
        """The Alloc of block `blk` of bb, with a physical buffer holding its data."""
        a = bb.allocs.get(blk)
        if a is not None and a.slot is not None:
            return a
        rec = self.steady
        if rec is not None:
            if a is not None:
                rec.refuse_window("a spilled block is reloaded")
            # a block filled when first touched: the fill is made by _block_alloc, here and
            # again when the allocation is replayed, at the line the fill's instruction has
            # (what emit() would give it), so it is not recorded as an instruction
            line = None
            if bb.fill is not None and not self.fast:
                line = self.line_override if self.line_override is not None else self.line()
            a = self._block_alloc(bb, blk, a)
            _steady.rec_block(rec, bb, blk, line)
            return a
        return self._block_alloc(bb, blk, a)

    def _block_alloc(self, bb, blk, a):
        if self.live is None:
            # first pass: a private buffer that uses no memory (the text is thrown away)
            slot = Slot(-1, bb.kind, 0, bb.fbytes, bb.site)
        else:
            slot = self._block_slot(bb, blk)
        bb.used.add(slot.id)
        bb.live += 1
        if bb.live > bb.peak:
            bb.peak = bb.live
        if a is None:
            a = Alloc(slot, bb.kind)
            a.blk = (bb, blk)
            a.remat = []
            bb.allocs[blk] = a
            if bb.lazy_zero:
                a.lazy_zero = True
            elif bb.fill is not None:
                from . import language as nl
                v = self._block_view(bb, slot)
                v.alloc = a
                # (not recorded by a loop's steady-state Recorder, nor checked by a replay's
                # Guard: the allocation's event stands for it, block_alloc)
                rec, self.steady = self.steady, None
                try:
                    self._internal(lambda: nl._memset_into(v, bb.fill, None))
                finally:
                    self.steady = rec
            return a
        a.slot = slot
        slot.owner = a.token
        self._internal(lambda: self._reload(a))
        return a

    def _block_view(self, bb, slot):
        """The whole of a block's buffer as a [P, F] view (F split when above 65535)."""
        F = bb.felems
        shape, st = (bb.P, F), [None, 1]
        if F > 65535:
            d = next(d for d in range(2, F) if F % d == 0 and F // d <= 65535)
            shape, st = (bb.P, d, F // d), [None, F // d, 1]
        return Tensor(slot, None, bb.dtype, shape, 0, 0, st, 0)

    def _spill_view(self, bb, blk):
        if bb.scratch is None:
            bb.scratch = self.new_hbm(f"spill_{bb.name or 't'}", bb.dtype, (bb.nblk, bb.P, bb.felems),
                                      "scratch")
        v = self.hbm_tensor(bb.scratch)[blk]
        if bb.felems > 65535:
            v = v.reshape(self._block_view(bb, None).shape)
        return v

    def _sdma(self, dst, src):
        q = self.pol.spill_queue
        self.emit(self.pol.spill_engine, f"dma {dst.text()}, {src.text()}, queue={q}",
                  reads=[src], writes=[dst], queue=q, internal=True)

    def _reload(self, a):
        bb, blk = a.blk
        self.line_override = bb.line
        if bb.kind == "psum" and not a.remat:
            if a.spilled:
                self._psum_reload(a)
            return
        if a.remat:
            for dv, sv in a.remat:
                d = dv.clone_view()
                d.buf = a.slot
                self._sdma(d, sv)
                bb.remat_bytes += _prod(dv.shape) * bb.dtype.itemsize
        else:
            self._sdma(self._block_view(bb, a.slot), self._spill_view(bb, blk))
            n = bb.P * bb.fbytes
            bb.reloaded += n
            self.reload_bytes += n

    def _evict(self, a):
        """Give up a block's buffer: spill its data to HBM unless it can be reloaded from the
        kernel's inputs (or holds nothing yet)."""
        bb, blk = a.blk
        slot = a.slot
        if a.remat and any(x is _steady.REPLAYED for x in a.remat):
            raise _steady.Mismatch("a block loaded in a replayed iteration is evicted")
        if bb.kind == "psum" and not (self.pol.rematerialize and a.remat and
                                      all(sv.buf.written is None for _, sv in a.remat)):
            self._psum_spill(a)
        elif not (self.pol.rematerialize and a.remat and
                  all(sv.buf.written is None for _, sv in a.remat)):
            a.remat = None
            old = self.line_override
            self.line_override = bb.line
            self._internal(lambda: self._sdma(self._spill_view(bb, blk), self._block_view(bb, slot)))
            self.line_override = old
            a.spilled = True
            n = bb.P * bb.fbytes
            bb.spilled += n
            self.spill_bytes += n
        slot.owner = None
        slot.freed = self.tick
        a.slot = None
        bb.live -= 1

    def _psum_save(self, bb):
        """The SBUF block tensor that holds bb's spilled PSUM blocks (block for block): an SBUF
        block tensor like the kernel's, so its blocks take buffers through the SBUF allocator
        and may themselves be evicted to HBM; each block's next access is that of its PSUM
        block (its reload; _victim)."""
        s = bb.psave
        if s is None:
            s = bb.psave = BlockBuf("sbuf", bb.dtype, bb.shape, len(bb.bshape),
                                    f"psum_spill_{bb.name or 't'}", ("psum", bb.ordinal), bb.line)
            self.psum_saves.append(s)
        return s

    def _save_block(self, s, blk):
        """Block blk of a PSUM spill buffer, in SBUF (reloaded from HBM if it was evicted)."""
        sa = s.allocs.get(blk)
        if sa is None or sa.slot is None:
            sa = self._block_alloc(s, blk, sa)
        return sa

    def _psum_spill(self, a):
        """Copy a PSUM block's data (partial sums included) to an SBUF buffer: the block keeps
        its accumulation state (lazy_zero, acc_started) and continues after _psum_reload. A block
        nothing has written yet (a lazy zero) is not copied."""
        bb, blk = a.blk
        if self.steady is not None:
            self.steady.refuse_window("a PSUM block is spilled")
        if a.remat is not None and not a.remat:
            a.spilled = False            # no data: it starts again from its lazy zero
            return
        s = self._psum_save(bb)
        sa = self._save_block(s, blk)
        eng = self.pol.psum_spill_engine
        old = self.line_override
        self.line_override = bb.line
        dst = self._block_view(s, sa.slot)
        src = self._block_view(bb, a.slot)
        self._internal(lambda: self.emit(eng, f"tensor_copy {dst.text()}, {src.text()}",
                                         reads=[src], writes=[dst], internal=True))
        self.line_override = old
        a.spilled = True
        n = bb.P * bb.fbytes
        bb.spilled += n
        self.psum_spill_bytes += n

    def _psum_identity(self, n):
        """An [n, n] fp32 identity in SBUF for reloads of accumulation groups: loaded once from
        a constant (on the spill queue) into a buffer kept for the rest of the kernel."""
        t = self.psum_ident.get(n)
        if t is None:
            from . import language as nl
            scopes, self.scopes = self.scopes, []
            try:
                t = self.new_onchip("sbuf", D.float32, (n, n), 0, site=("psum_identity", n))
            finally:
                self.scopes = scopes
            self.psum_ident[n] = t
            src = nl.shared_constant(np.eye(n, dtype=np.float32), dtype=D.float32)
            self._sdma(t, src)
        return t

    def _psum_reload(self, a):
        """Copy a spilled PSUM block back from its SBUF buffer (into a.slot), then free that."""
        bb, blk = a.blk
        if self.steady is not None:
            self.steady.refuse_window("a spilled PSUM block is reloaded")
        s = bb.psave
        sa = self._save_block(s, blk)
        src = self._block_view(s, sa.slot)
        dst = self._block_view(bb, a.slot)
        if a.acc_started and bb.dtype.name == "float32" and len(dst.shape) == 2:
            # an accumulation group continues after the reload: the ISA leaves a matmul that
            # accumulates onto PSUM another engine wrote undefined, so the data goes back by
            # a matmul against an identity (exact: one 1.0 term per element), which starts
            # the group again on the Tensor engine
            ident = self._psum_identity(bb.P)
            self.emit("pe", f"matmul {dst.text()}, {ident.text()}, {src.text()}",
                      reads=[ident, src], writes=[dst], internal=True)
        else:
            self.emit(self.pol.psum_spill_engine, f"tensor_copy {dst.text()}, {src.text()}",
                      reads=[src], writes=[dst], internal=True)
        _free_slot(sa, self.tick)
        sa.slot = None
        s.live -= 1
        del s.allocs[blk]
        a.spilled = False
        n = bb.P * bb.fbytes
        bb.reloaded += n
        self.psum_reload_bytes += n

    # ---- PSUM tiles without block dimensions (docs/nki.md, "Spills and reloads")
    #
    # A plain tile's views name its buffer, so the tile keeps that bank (its home) for its
    # whole life. When a tile finds PSUM full, a bank held by another plain tile is shared:
    # the tiles that call a bank home take turns in it, the one an instruction uses copied in
    # (from SBUF) at that instruction, the one there copied out. Which bank: the one whose
    # tiles are next needed furthest away, never one whose tiles an instruction uses together
    # with the new tile (both must be in PSUM at once). Next uses come from a first pass run
    # without loop replay, which sees every access (_tiles_at).
    def _tile_new(self, a, key, shape, pdim, dt):
        """Number a new plain PSUM tile; the first pass notes where its SBUF copy would go
        (one SBUF block tensor per allocating line, shape and type; a block per tile)."""
        pt = a.pt = self.npt
        self.npt = pt + 1
        if self.trec:
            sk = (key, tuple(shape), pdim, dt.name)
            n = self.tkeys.get(sk, 0)
            self.tkeys[sk] = n + 1
            self.tsite.append((sk, n, dt))

    def _tiles_at(self, reads, writes):
        """At a kernel instruction: the first pass records its plain PSUM tiles' use; the
        second copies back those of them that are spilled (before the instruction)."""
        allocs = []
        for ts in (reads, writes):
            for t in ts:
                if t is not None:
                    a = t.alloc
                    if a is not None and a.pt is not None and not a.dead:
                        allocs.append(a)
        if not allocs:
            return
        if self.live is None:
            tick = self.tick
            seen = []
            for a in allocs:
                p = a.pt
                if p in seen:
                    continue
                seen.append(p)
                lst = self.tuses.get(p)
                if lst is None:
                    self.tuses[p] = [tick]
                elif lst[-1] != tick:
                    lst.append(tick)
            for i, p in enumerate(seen):
                for q in seen[i + 1:]:
                    self.tco.add((p, q) if p < q else (q, p))
            return
        away = self.away
        for a in allocs:
            if a.pt in away:
                self._tile_back(a, allocs)

    def _tile_next(self, pt):
        """The tick of plain tile pt's next use (from the first pass), or None."""
        uses = self.tprev.tuses.get(pt, ())
        i = bisect.bisect_left(uses, self.tick)
        return uses[i] if i < len(uses) else None

    def _tile_full(self, site, nbytes):
        """A plain PSUM tile of at most one bank finds PSUM full: the buffer it gets."""
        if self.live is None:
            if not self.trec:
                # next uses need a first pass that sees every access: lower again without
                # loop replay (Kernel._lower_pol)
                raise _steady.Mismatch("a PSUM tile without block dimensions is spilled")
            self.tile_over = True
            self.fast = True                   # a second pass follows (needs_second_pass)
            return Slot(-1, "psum", 0, PSUM_BANK, site)
        a = self._victim("psum", nbytes)       # a block of a block tensor first, as before
        if a is not None:
            sl = a.slot
            self._evict(a)
            return sl
        sl = self._tile_victim(self.npt)
        if sl is None:
            self._oom("psum", nbytes)
        if site is not None and sl not in site.slots:
            site.slots.append(sl)              # (the site's entry in report() counts it)
        return sl

    def _tile_victim(self, n, with_uses=()):
        """The one-bank buffer a plain tile gives up, for new tile n (None: for a block, whose
        uses are with_uses), by the rule above; None when no plain tile can."""
        cands = []
        for sl in self.slots:
            if sl.kind != "psum" or sl.size != PSUM_BANK:
                continue
            o = sl.owner
            if o is HELD:
                cands.append((sl, None))
            elif type(o) is weakref.ref:
                r = o()
                if r is not None and r.pt is not None:
                    cands.append((sl, r))
        if not cands:
            return None
        if self.tprev is None:
            raise _steady.Mismatch("a PSUM tile without block dimensions is spilled")
        if self.steady is not None:
            self.steady.refuse_window("a PSUM tile is spilled")
        co = self.tprev.tco
        if with_uses:
            with_uses = set(with_uses)
        best, bnext = None, self.tick
        for sl, r in cands:
            tiles = list(sl.held or ())
            if r is not None:
                tiles.append(r.pt)
            if n is not None and any(((p, n) if p < n else (n, p)) in co for p in tiles):
                continue
            if with_uses and any(not with_uses.isdisjoint(self.tprev.tuses.get(p, ()))
                                 for p in tiles):
                continue
            nxt = 1 << 60
            for p in tiles:
                u = self._tile_next(p)
                if u is not None and u < nxt:
                    nxt = u
            if nxt > bnext:                    # (a bank needed by this instruction: never)
                best, bnext = (sl, r), nxt
        if best is None:
            return None
        sl, r = best
        if r is not None:
            self._tile_out(r)
        return sl

    def _tile_view(self, sl, dt, P, F):
        return Tensor(sl, None, dt, (P, F), 0, 0, [None, 1], 0)

    def _tile_out(self, r):
        """Plain tile r gives up its home bank: its data is copied to SBUF, unless it holds
        nothing yet (a lazy zero) or is not used again; it comes back at its next use."""
        sl = r.slot
        pt = r.pt
        nxt = self._tile_next(pt)
        self.thook = True
        if self.steady is not None:
            self.steady.refuse_window("a PSUM tile is spilled")
        if nxt is None:
            self.away[pt] = None
        elif not r.written:
            self.away[pt] = ()
        else:
            sk, idx, dt = self.tprev.tsite[pt]
            s = self.tsaves.get(sk)
            shape, pdim = sk[1], sk[2]
            if s is None:
                key = sk[0]
                where = [k for k in key[2:] if isinstance(k, tuple) and k[0] == self.source] \
                    if isinstance(key, tuple) else []
                line = where[-1][1] if where else 0
                P = shape[pdim]
                F = _prod(shape) // P
                s = BlockBuf("sbuf", dt, (self.tprev.tkeys[sk], P, F), 1,
                             f"psum_spill_line{line}", ("tile", len(self.tsaves)), line)
                s.tpts = {}
                self.tsaves[sk] = s
                self.psum_saves.append(s)
            s.tpts[idx] = pt
            sa = self._save_block(s, idx)
            dst = self._block_view(s, sa.slot)
            src = self._tile_view(sl, dt, s.P, s.felems)
            eng = self.pol.psum_spill_engine
            old = self.line_override
            self.line_override = s.line
            self._internal(lambda: self.emit(eng, f"tensor_copy {dst.text()}, {src.text()}",
                                             reads=[src], writes=[dst], internal=True))
            self.line_override = old
            n = s.P * s.fbytes
            self.psum_spill_bytes += n
            self.tsite_bytes.setdefault(sk[0], [0, 0])[0] += n
            self.away[pt] = (s, idx)
        if nxt is not None:
            if sl.held is None:
                sl.held = set()
            sl.held.add(pt)
        sl.owner = None                        # HELD while tiles call it home
        sl.freed = self.tick

    def _tile_back(self, a, inuse):
        """Spilled plain tile a is used: whatever holds its home bank gives it up, and its
        data (if any) is copied back (by an identity matmul if an accumulation group is open
        in it, as _psum_reload does)."""
        ent = self.away.pop(a.pt)
        if ent is None:
            raise RuntimeError("internal: a PSUM tile is used after its last use in the first pass")
        sl = a.slot
        o = sl.owner
        if o is not HELD and o is not None:
            r = o() if type(o) is weakref.ref else None
            if r is None or any(r is x for x in inuse) or \
                    (r.blk is not None and sys.getrefcount(r) > 3):
                error("err_out_of_memory",
                      "PSUM is full: a spilled PSUM tile and a tensor in use by the same "
                      "instruction need the same bank")
            if r.blk is not None:
                self._evict(r)
            else:
                self._tile_out(r)
        sl.held.discard(a.pt)
        sl.owner = a.token
        if not ent:
            return
        s, idx = ent
        sa = self._save_block(s, idx)
        src = self._block_view(s, sa.slot)
        dst = self._tile_view(sl, s.dtype, s.P, s.felems)

        def back():
            if a.acc_started and s.dtype.name == "float32":
                ident = self._psum_identity(s.P)
                self.emit("pe", f"matmul {dst.text()}, {ident.text()}, {src.text()}",
                          reads=[ident, src], writes=[dst], internal=True)
            else:
                self.emit(self.pol.psum_spill_engine, f"tensor_copy {dst.text()}, {src.text()}",
                          reads=[src], writes=[dst], internal=True)
        old = self.line_override
        self.line_override = s.line
        self._internal(back)
        self.line_override = old
        _free_slot(sa, self.tick)
        sa.slot = None
        s.live -= 1
        del s.allocs[idx]
        n = s.P * s.fbytes
        self.psum_reload_bytes += n
        self.tsite_bytes.setdefault(self.tprev.tsite[a.pt][0][0], [0, 0])[1] += n

    def _victim(self, kind, nbytes):
        """The block to evict for nbytes of `kind`: among blocks no live view refers to, the
        one whose next access is furthest away (known from the first pass)."""
        best, bnext = None, -1
        t = self.tick
        for bb in (self.blockbufs + self.psum_saves if self.psum_saves else self.blockbufs):
            if bb.kind != kind or bb.sunk:
                continue
            allocs = bb.allocs
            for blk in allocs:
                a = allocs[blk]           # references: the dict, `a`, getrefcount's argument
                if a.slot is None or a.slot.size < nbytes or a.slot.owner is not a.token or \
                        sys.getrefcount(a) > 3:
                    continue
                o = bb.ordinal
                if type(o) is tuple:
                    if o[0] == "tile":
                        # a plain PSUM tile's SBUF copy: next needed at the tile's next use
                        nxt = self._tile_next(bb.tpts[blk])
                        nxt = 1 << 60 if nxt is None else nxt
                        if nxt > bnext:
                            best, bnext = a, nxt
                        continue
                    o = o[1]          # a PSUM block's SBUF copy: next needed at its reload
                uses = self.live.get((o, blk), ())
                i = bisect.bisect_left(uses, t)
                nxt = uses[i] if i < len(uses) else 1 << 60
                if nxt > bnext:
                    best, bnext = a, nxt
        return best

    def _block_slot(self, bb, blk=None):
        took = bb.took
        if took is None:
            return self._block_slot1(bb, blk)
        # A block tensor declared in a loop (loop_buffers "rotate"): its n-th buffer request
        # takes, in order, (1) the buffer of the n-th request of the instance `depth` runs of
        # the declaration before it, if free; (2) a new buffer while the tensor has fewer than
        # its live blocks + `depth` (so the first `depth` instances make the rotation's sets);
        # (3) memory short: the n-th buffer of a later earlier instance (oldest first), if
        # free (a shallower rotation); (4) the rule of a tensor declared once (_block_slot1:
        # its own free buffers, another site's, an eviction).
        n = len(took)
        tms = bb.tmpl
        sl = None
        if tms:
            depth = self._block_depth(bb.kind)
            full = len(tms) >= depth
            if full and n < len(tms[0]):
                x = tms[0][n]
                if x.owner is None:
                    sl = x
            if sl is None:
                if len(bb.site.slots) < bb.live + depth:
                    c = self._carve(bb.kind, bb.fbytes)
                    if c is not None:
                        sl = self._add_slot(bb.kind, c, bb.site)
                        took.append(sl)
                        return sl
                for tm in (tms[1:] if full else tms):
                    if n < len(tm):
                        x = tm[n]
                        if x.owner is None:
                            sl = x
                            break
        if sl is None:
            sl = self._block_slot1(bb, blk)
        elif sl.id not in bb.used:
            bb.site.slots.append(sl)
        took.append(sl)
        return sl

    def _block_depth(self, kind):
        """How many buffers past its live blocks a block tensor of that memory takes (the
        policy's block_bufs, psum_bufs for PSUM), and the depth of a declaration's rotation."""
        return max(1, self.pol.block_bufs if kind == "sbuf" else self.pol.psum_bufs)

    def _block_slot1(self, bb, blk=None):
        site = bb.site
        depth = self._block_depth(bb.kind)
        nbytes = bb.fbytes
        free = [sl for sl in site.slots if sl.owner is None]
        if len(site.slots) < bb.live + depth or not free:
            c = self._carve(bb.kind, nbytes)
            if c is not None:
                return self._add_slot(bb.kind, c, site)
        if free:
            return min(free, key=lambda sl: sl.freed)      # the one released longest ago
        sl = self._other_free(bb.kind, nbytes)
        if sl is not None:
            return sl
        if self.steady is not None:
            self.steady.refuse_window("a block is evicted")
        a = self._victim(bb.kind, nbytes) if bb.kind == "sbuf" or self.pol.psum_spill else None
        if a is not None:
            sl = a.slot
            self._evict(a)
            return sl
        if bb.kind == "psum" and self.pol.psum_spill and nbytes <= PSUM_BANK:
            # no block to evict: a plain tile gives up its bank, if one can (not one used
            # by an instruction that uses this block)
            sl = self._tile_victim(None, self.live.get((bb.ordinal, blk), ()))
            if sl is not None:
                return sl
        self._oom(bb.kind, nbytes)

    def _other_free(self, kind, nbytes):
        """The free buffer of another site to reuse: the smallest that is large enough, of
        those the one released longest ago (whose readers are most likely done, so the new
        writes need not wait for them: the next iteration's tensor can be filled while the
        current one is still read), of those the first made. The heaps of free buffers per
        size (free_heaps) give it without a pass over every buffer (_other_free_ref)."""
        if not _fast[0]:
            return self._other_free_ref(kind, nbytes)
        slots = self.slots
        if self.nheaped != len(slots):
            self._heap_slots()
        heaps = self.free_heaps
        for size in self.free_sizes[kind]:
            if size < nbytes:
                continue
            h = heaps[(kind, size)]
            while h:
                tick, _, sl = h[0]
                if sl.owner is None and sl._freed == tick:
                    return sl
                heapq.heappop(h)        # stale: taken again, or freed again since
        return None

    def _heap_slots(self):
        """Every buffer of self.slots in the heap of its kind and size (those _add_slot did
        not make: a test's); a free one entered."""
        for sl in self.slots:
            if sl.heap is None:
                key = (sl.kind, sl.size)
                h = self.free_heaps.get(key)
                if h is None:
                    h = self.free_heaps[key] = _FreeHeap()
                    bisect.insort(self.free_sizes[sl.kind], sl.size)
                sl.heap = h
                if sl.owner is None:
                    sl.now_free()
        self.nheaped = len(self.slots)

    def _other_free_ref(self, kind, nbytes):
        best = None
        for sl in self.slots:
            if sl.kind == kind and sl.owner is None and sl.size >= nbytes:
                if best is None or (sl.size, sl.freed) < (best.size, best.freed):
                    best = sl
        return best

    def _oom(self, kind, nbytes):
        live = sum(sl.size for sl in self.slots if sl.kind == kind and sl.owner is not None)
        what = "PSUM (8 banks of 2 KiB per partition)" if kind == "psum" else \
            f"SBUF ({self.pol.sbuf_bytes} bytes per partition)"
        if kind == "psum" and not self.pol.psum_spill:
            extra = "; PSUM is not spilled (psum_spill=False)"
        elif kind == "psum" and nbytes > PSUM_BANK:
            extra = (f"; a PSUM tile of more than one bank ({PSUM_BANK} bytes) is not spilled, "
                     "nor does one give up its banks")
        elif kind == "psum":
            extra = ("; every tensor that could give up a bank is in use, or used together "
                     "with this one")
        else:
            extra = "; only blocks of block-dimension tensors are spilled, and every one is in use"
        error("err_out_of_memory",
              f"{what} is full: {live} bytes per partition are held by live tensors and "
              f"{nbytes} more are needed{extra} (free tensors by limiting their scope)")

    def block_used(self, a, write, load_src):
        """Bookkeeping of an instruction's access to a block (at emission)."""
        bb, blk = a.blk
        if self.live is None:
            lst = self.uses.get((bb.ordinal, blk))
            if lst is None:
                self.uses[(bb.ordinal, blk)] = [self.tick]
            elif lst[-1] != self.tick:
                lst.append(self.tick)
            if write and bb.pure:
                # can its loads be issued at its uses instead (_choose_sunk)? Only if every
                # write is an nl.load of a whole block from a kernel input (a replayed
                # iteration's loads are those of the traced ones, shifted)
                if load_src is None:
                    bb.pure = False
                elif load_src is not _steady.REPLAYED:
                    if self.load_whole and _whole_block(bb, load_src[0]):
                        bb.srcs.add(load_src[1].buf)
                    else:
                        bb.pure = False
        if write and a.remat is not None:
            if load_src is not None:
                a.remat.append(load_src)
            else:
                a.remat = None

    def release_blocks(self, allocs):
        """Free the buffers of blocks whose last access was this tick (second pass)."""
        t = self.tick
        for a in allocs:
            bb, blk = a.blk
            if a.slot is None:
                continue
            uses = self.live.get((bb.ordinal, blk))
            if uses is None or uses[-1] <= t:
                _free_slot(a, t)
                a.slot = None
                bb.live -= 1
                del bb.allocs[blk]

    def report(self):
        """Per block tensor and allocation site: logical size, physical buffers, spills."""
        out = []
        for bb in self.blockbufs + self.psum_saves:
            out.append({"name": bb.name, "line": bb.line, "space": bb.kind, "shape": bb.shape,
                        "dtype": bb.dtype.name, "blocks": bb.nblk,
                        "logical_bytes": bb.nblk * bb.fbytes,
                        "buffers": len(bb.used), "buffer_bytes": bb.fbytes,
                        "peak_live_blocks": bb.peak,
                        "spilled_bytes": bb.spilled, "reloaded_bytes": bb.reloaded,
                        "rematerialized_bytes": bb.remat_bytes,
                        "loads_at_uses": bb.sunk, "reissued_loads": bb.reissued})
        # tiles without block dimensions: one entry per allocation site (the line that
        # creates them), whose tensors share its buffers
        for key, site in self.sites.items():
            if not site.slots or not isinstance(key, tuple) or len(key) < 3 or \
                    key[0] not in ("sbuf", "psum") or not isinstance(key[1], int):
                continue
            where = [k for k in key[2:] if isinstance(k, tuple) and k[0] == self.source]
            moved = self.tsite_bytes.get(key, (0, 0))     # plain PSUM tiles spilled to SBUF
            out.append({"name": "", "line": where[-1][1] if where else 0, "space": key[0],
                        "shape": None, "dtype": None, "blocks": 0, "logical_bytes": key[1],
                        "buffers": len(site.slots), "buffer_bytes": site.slots[0].size,
                        "peak_live_blocks": None, "spilled_bytes": moved[0],
                        "reloaded_bytes": moved[1],
                        "rematerialized_bytes": 0, "loads_at_uses": False, "reissued_loads": 0})
        # directly allocated tensors (compiler.py): where the kernel placed them
        for name, line, kind, shape, dt, buf, table, fbytes, nblk in self.direct_tensors:
            out.append({"name": name, "line": line, "space": kind, "shape": shape,
                        "dtype": dt.name, "blocks": nblk,
                        "logical_bytes": len(table) * fbytes, "buffers": len(set(table)),
                        "buffer_bytes": fbytes, "peak_live_blocks": None, "spilled_bytes": 0,
                        "reloaded_bytes": 0, "rematerialized_bytes": 0, "loads_at_uses": False,
                        "reissued_loads": 0, "placement": repr(buf)})
        return out

    def _pick_slot(self, kind, nbytes, site):
        target = self.pol.psum_bufs if kind == "psum" else self.pol.sbuf_bufs
        n = len(site.slots)
        # 1. grow the site up to its buffer count
        if n < target:
            c = self._carve(kind, nbytes)
            if c is not None:
                return self._add_slot(kind, c, site)
        # 2. the next free slot of the site, round robin
        for j in range(n):
            sl = site.slots[(site.rr + j) % n]
            if sl.owner is None:
                site.rr = (site.rr + j + 1) % n
                return sl
        # 3. more memory
        c = self._carve(kind, nbytes)
        if c is not None:
            return self._add_slot(kind, c, site)
        # 4. a free slot of another site that is large enough (smallest such, released
        #    longest ago)
        if self.steady is not None:
            self.steady.refuse("an allocation takes another site's buffer")
        best = self._other_free(kind, nbytes)
        if best is not None:
            if self.pol.lend_buffers == "share" and site is not None and best not in site.slots:
                site.slots.append(best)            # both sites' own from now on
            return best
        if kind == "psum" and self.pol.psum_spill and nbytes <= PSUM_BANK:
            return self._tile_full(site, nbytes)
        if (kind == "sbuf" or self.pol.psum_spill) and self.live is not None:
            a = self._victim(kind, nbytes)
            if a is not None:
                sl = a.slot
                self._evict(a)
                return sl
        self._oom(kind, nbytes)

    def _add_slot(self, kind, c, site):
        off, size = c
        sl = Slot(len(self.slots), kind, off, size, site)
        h = self.free_heaps.get((kind, size))
        if h is None:
            h = self.free_heaps[(kind, size)] = _FreeHeap()
            bisect.insort(self.free_sizes[kind], size)
        sl.heap = h
        self.slots.append(sl)
        if self.nheaped == len(self.slots) - 1:
            self.nheaped += 1
        site.slots.append(sl)
        site.rr = len(site.slots) % max(1, len(site.slots))
        return sl

    def pick(self, setting, allowed=("dve", "act", "pool")):
        """The engine for an instruction: `setting` if fixed, else the least loaded of the
        policy's balance_engines (estimated busy time so far)."""
        if setting != "auto":
            return setting if setting in allowed else allowed[0]
        best = None
        for e in self.pol.balance_engines:
            if e in allowed and (best is None or self.load[ENG_ID[e]] < self.load[ENG_ID[best]]):
                best = e
        return best or "dve"

    # ---- pending results
    def make_pending(self, space, shape, dt, emit, matmul=None, nbytes=None):
        """A result tensor whose instruction is emitted once its destination is known (nbytes:
        its bytes per partition, when the caller has them)."""
        if self.pending is not None:
            self.flush()
        site = self._site_key(space, _prod(shape[1:]) * dt.itemsize if nbytes is None else nbytes)
        last = site[-1]
        t = Tensor(None, None, dt, shape, 0, 0, None, 0)
        t.pend = Pending(space, emit, site, matmul,
                         last[1] if type(last) is tuple and last[0] == self.source else 0)
        self.pending = t
        return t

    def flush(self, only=None):
        t = self.pending
        if t is None or (only is not None and only is not t):
            if only is not None and only.pend is not None and only is not t:
                # a pending tensor that is no longer the latest: should not happen
                raise RuntimeError("internal: stale pending tensor")
            return
        self.pending = None
        p = t.pend
        shape = t.shape
        real = self.new_onchip(p.space, t.dtype, shape, 0, site=p.site)
        t.pend = None
        t.buf, t.alloc, t.shape, t.pdim, t.p0, t.strides, t.off = \
            real.buf, real.alloc, real.shape, real.pdim, real.p0, real.strides, real.off
        t._lk = None
        real.alloc = None
        self.run_pending(p, t, None)

    def run_pending(self, p, dest, box):
        """Emit a pending instruction into dest, attributed to the line that created it."""
        old = self.line_override
        self.line_override = p.line
        try:
            p.emit(dest, box)
        finally:
            self.line_override = old

    def take_pending(self, t):
        """Claim the pending instruction of t (for emission into a chosen destination)."""
        if t is not self.pending:
            raise RuntimeError("internal: not the pending tensor")
        self.pending = None
        p = t.pend
        t.pend = None
        return p

    # ---- instruction emission with dependences
    def emit(self, eng, text, reads=(), writes=(), queue=None, internal=False, load_src=None):
        """Append an instruction; reads/writes are Tensors (views) it accesses. `internal`:
        made by the compiler (spill, reload), not a kernel instruction (no tick). `load_src`:
        (dst, src) of a load from an HBM input (a block written so can be reloaded from it)."""
        if self.pending is not None and not internal:
            self.flush()            # an earlier call's instruction comes first (trace order)
        if self.thook and not internal:
            self._tiles_at(reads, writes)      # plain PSUM tiles: uses, or spilled ones back
        ag = ENG_ID[eng] if queue is None else len(ENGINES) + queue
        idx = self.count[ag]
        fast = self.fast
        lg = self.acclog if not fast else None
        if lg is not None:
            deps = [ag, idx]        # the node's entry of the access log (_emit_tail)
            self.exact = None
        else:
            deps = {}
            self.exact = [] if not fast and self.pol.schedule_window > 1 else None
        blks = None
        rec = self.steady
        accs = [] if rec is not None else None
        brefs = [] if rec is not None else None
        # dependences
        for t in reads:
            if t is None:
                continue
            a = t.alloc
            if a is not None:
                if a.dead:
                    _out_of_scope(a)
                if a.blk is not None and not internal:
                    self.block_used(a, False, None)
                    if blks is None:
                        blks = [a]
                    else:
                        blks.append(a)
                    if rec is not None:
                        brefs.append((a.blk[0], a.blk[1], False, False))
                if rec is not None:
                    _steady.rec_alloc(rec, a)
            if not fast:
                if rec is None and _fast[0] and _among(t, writes):
                    # read and written (a matmul accumulating, a DMA accumulating): the write
                    # finds every record the read would and more, and covers the read's own;
                    # the read's only other effects are entries of self.exact that the
                    # write's repeat or that name this instruction (which the scheduler drops)
                    continue
                ab = t._ab
                key, bx = ab if ab is not None else t.abox()
                if lg is not None:
                    self._log(deps, key, bx, 0)
                else:
                    self._access(key, bx, False, ag, idx, deps)
                if accs is not None:
                    accs.append((key, bx, False, a.blk if a is not None else None))
        for t in writes:
            a = t.alloc
            if a is not None:
                if a.dead:
                    _out_of_scope(a)
                a.written = True
                if a.slot is not None and a.slot.tag is not None:
                    self.dirty.add(a.slot.tag)     # a loaded tile written over (first pass)
                if a.blk is not None and not internal:
                    self.block_used(a, True, load_src)
                    if blks is None:
                        blks = [a]
                    else:
                        blks.append(a)
                    if rec is not None:
                        brefs.append((a.blk[0], a.blk[1], True, load_src is not None))
                if rec is not None:
                    _steady.rec_alloc(rec, a)
            if not fast:
                ab = t._ab
                key, bx = ab if ab is not None else t.abox()
                if lg is not None:
                    self._log(deps, key, bx, 1)
                else:
                    self._access(key, bx, True, ag, idx, deps)
                if accs is not None:
                    accs.append((key, bx, True, a.blk if a is not None else None))
        if rec is not None and internal and not self.replayable_internal:
            rec.refuse_window("compiler-made instructions (spills, reloads)")
        # the scheduler's estimate (and, for a compute engine, the engine's load for "auto"):
        # ns of an engine's instruction, or (bytes, contiguous rows) of a transfer
        inc = 0.0
        if queue is None and not self.fast:
            v = writes[0] if writes else (reads[0] if reads else None)
            n = 1
            if v is not None:
                for d in v.shape:
                    n *= d
                if v.pdim is not None:
                    n //= v.shape[v.pdim]
            e = ENG_ID[eng]
            inc = (n if n > 64 else 64) / _CLOCK[e] + (107.0 if e == 4 else 0.0)
        elif not self.fast:
            inc = _sched.transfer_size(writes[0]) if writes else (0, 1)
        ln = self.line_override
        if not self.fast:
            ln = self.line() if ln is None else ln
        if rec is not None:
            _steady.rec_emit(rec, eng, text, queue, internal, accs, ln, inc, brefs)
        self._emit_tail(eng, text, ag, idx, deps, queue, internal, ln, inc, blks)

    def replay_emit(self, eng, text, accs, queue, internal, line, inc, brefs):
        """emit() of an instruction of a replayed loop iteration (_steady.py): its accesses
        [(memory, box, write)] and blocks [(BlockBuf, block, write, loaded)] given, no
        tensors. A loaded block's source views are not made: it is marked so that evicting it
        later (which would reload it from them) lowers the kernel again in full. In a first
        pass that a second replaces (self.fast), text and accs are None: not used. Neither
        with the access log (self.acclog) nor in a first pass does the replay call it
        (_steady._windows does that work inline)."""
        if self.acclog is not None and not self.fast:
            raise RuntimeError("internal: replay_emit with the access log")
        ag = ENG_ID[eng] if queue is None else len(ENGINES) + queue
        idx = self.count[ag]
        deps = {}
        self.exact = [] if self.pol.schedule_window > 1 and not self.fast else None
        blks = self._replayed_blocks(brefs) if brefs else None
        if not self.fast:
            for key, bx, w in accs:
                self._access(key, bx, w, ag, idx, deps)
        self._emit_tail(eng, text, ag, idx, deps, queue, internal, line, inc, blks)

    def _replayed_blocks(self, brefs):
        """The block uses of a replayed instruction (brefs: [(BlockBuf, block, write, loaded)]),
        made as emit makes them: their Allocs, in order."""
        blks = []
        for bb, blk, w, ld in brefs:
            a = bb.allocs.get(blk)
            if a is None or a.slot is None:
                raise _steady.Mismatch("a replayed instruction's block has no buffer")
            if w:
                a.written = True
            self.block_used(a, w, _steady.REPLAYED if ld else None)
            blks.append(a)
        return blks

    def _emit_tail(self, eng, text, ag, idx, deps, queue, internal, line, inc, blks):
        """What emit and replay_emit share once the dependences are known: the waits and the
        node (not in a first pass), then, for a kernel instruction, the release of the blocks
        it used (blks: their Allocs, or None) and the tick. deps: with the access log, the
        node's entry of it (appended here, with the node)."""
        if self.fast:
            # a first pass that a second will replace: no dependences, no text
            self.count[ag] = idx + 1
        else:
            e = ENG_ID[eng]
            if self.pol.schedule_window > 1:
                # the scheduler (_sched.run) computes every node's waits, in its order, by the
                # same rule: none here
                nd = Node(e, text, line, None, ag, idx)
                _sched.annotate(nd, self.exact, queue, inc, self.pinned)
                lg = self.acclog
                if lg is not None:
                    deps.append(-1)
                    lg += deps
            else:
                # waits (vector clocks, _sched.clock_waits) in the kernel's order
                nd = Node(e, text, line, _sched.clock_waits(
                    self.vc[e], self.selfknown, self.qvc, self.clocks, e, ag, idx, queue, deps),
                    ag, idx)
            self.count[ag] = idx + 1
            if queue is None:
                self.load[e] += inc
            self.nodes.append(nd)
        if not internal:
            if blks is not None and self.live is not None and not self.fast:
                self.release_blocks(blks)
            self.tick += 1

    def _mem(self, key):
        """The access log's number of memory key (a Slot or an HbmBuf), given at its first
        access: kept in key.recs, its extents along dims 0 and 1 in self.mem_ext."""
        m = key.recs = len(self.mem_ext) // 2
        if type(key) is Slot:
            self.mem_ext += (128, max(1, key.size))
        else:
            sh = key.shape
            self.mem_ext += (max(1, sh[0]) if sh else 1, max(1, sh[1]) if len(sh) > 1 else 1)
        return m

    def _log(self, ent, key, box, write):
        """Append an access to ent, a node's entry of the access log (Tracer.acclog)."""
        m = key.recs
        if m is None:
            m = self._mem(key)
        if len(box) == 2:
            (la, ha), (lb, hb) = box
            ent += (m, 4 + write, la, ha, lb, hb)
        else:
            ent += (m, 2 * len(box) + write)
            for lo, hi in box:
                ent += (lo, hi)

    def _access(self, key, box, write, ag, idx, deps):
        """_access_ref for memories with two-dimensional regions (every on-chip buffer, 2-D HBM
        tensors): records in cells along both dims (_Grid2), so that tiles of a big tensor
        that share a row or column of it are not compared. The records that overlap the
        access, and so the dependences and coverings, are those of _access_ref (a record sits
        in every cell it overlaps; the others never matter)."""
        if not _fast[0] or len(box) != 2:
            return self._access_ref(key, box, write, ag, idx, deps)
        ex = self.exact
        ix = key.recs
        if ix is None:
            ix = key.recs = _Grid2(key, box)
        (la, ha), (lb, hb) = box
        wa, wb = ix.wa, ix.wb
        a0, a1 = la // wa, (ha - 1) // wa
        b0, b1 = lb // wb, (hb - 1) // wb
        rec = [box, ag, idx, write, False]
        cells = ix.map
        # a record overlapping several cells is met once (the set of records seen; not
        # needed when the access lies in one cell, the common case)
        seen = set() if a0 != a1 or b0 != b1 else None
        for a in range(a0, a1 + 1):
            for b in range(b0, b1 + 1):
                c = (a, b)
                lst = cells.get(c)
                if not lst:
                    cells[c] = [rec]
                    continue
                alive = None        # the cell's list is rebuilt only when it holds records
                for i, r in enumerate(lst):     # covered before this access
                    if r[4]:
                        if alive is None:
                            alive = lst[:i]
                        continue
                    if alive is not None:
                        alive.append(r)
                    if seen is not None:
                        rid = id(r)
                        if rid in seen:
                            continue
                        seen.add(rid)
                    (l2a, h2a), (l2b, h2b) = r[0]
                    if l2a >= ha or la >= h2a or l2b >= hb or lb >= h2b:
                        continue
                    rag = r[1]
                    if r[3] or write:
                        if ex is not None:
                            ex.append((rag, r[2]))
                        elif rag != ag and deps.get(rag, -1) < r[2]:
                            deps[rag] = r[2]   # (used only without a scheduler: _emit_tail)
                    if (write or (not r[3] and rag == ag)) and l2a >= la and h2a <= ha and \
                            l2b >= lb and h2b <= hb:
                        r[4] = True
                        if ex is not None and not write:
                            ex.append((rag, r[2]))     # a read covering a read: keep their order
                if alive is None:
                    lst.append(rec)
                else:
                    alive.append(rec)
                    cells[c] = alive
        if seen is None and len(cells) == 1 and len(cells[(a0, b0)]) > _GRID_REFINE:
            ix.refine(key)      # a memory's only cell holds too many records: narrow it

    def _access_ref(self, key, box, write, ag, idx, deps):
        """Record an access and collect the earlier accesses it depends on (RAW, WAR, WAW of
        other agents). Records live in buckets along one dim of the memory (the one along which
        its first access was most selective), so disjoint tiles of a big tensor are not compared."""
        ex = self.exact
        ix = key.recs
        if ix is None:
            ix = key.recs = _Index(key, box)
        d, w = ix.dim, ix.width
        b0, b1 = box[d][0] // w, (box[d][1] - 1) // w
        seen = set() if b1 > b0 else None
        buckets = ix.map
        for b in range(b0, b1 + 1):
            lst = buckets.get(b)
            if not lst:
                continue
            alive = []
            for r in lst:
                if r[4]:
                    continue
                alive.append(r)
                if seen is not None:
                    rid = id(r)
                    if rid in seen:
                        continue
                    seen.add(rid)
                rb = r[0]
                ov = True
                cov = True
                for (l1, h1), (l2, h2) in zip(box, rb):
                    if l2 >= h1 or l1 >= h2:
                        ov = False
                        break
                    if l2 < l1 or h2 > h1:
                        cov = False
                if not ov:
                    continue
                rag = r[1]
                if r[3] or write:
                    if rag != ag and deps.get(rag, -1) < r[2]:
                        deps[rag] = r[2]
                    if ex is not None:
                        ex.append((rag, r[2]))
                if cov and (write or (not r[3] and rag == ag)):
                    r[4] = True            # covered: later accesses are ordered after this one
                    if ex is not None and not write:
                        ex.append((rag, r[2]))     # a read covering a read: keep their order
            buckets[b] = alive
        rec = [box, ag, idx, write, False]
        for b in range(b0, b1 + 1):
            lst = buckets.get(b)
            if lst is None:
                buckets[b] = [rec]
            else:
                lst.append(rec)

    # ---- DMA
    def dma(self, dst, src, kind, accumulate=False):
        """dst/src views with the same element count; kind 'load' or 'store' picks the policy."""
        pol = self.pol
        eng = pol.load_engine if kind == "load" else pol.store_engine
        queues = pol.load_queues if kind == "load" else pol.store_queues
        k = pol.dma_split_partitions
        parts = [(dst, src)]
        onchip = dst if dst.pdim is not None else src
        if k and k not in (32, 64):
            raise ValueError("dma_split_partitions must be 0, 32 or 64 (NCA's partition rules: "
                             "a view of 32 or fewer partitions starts at a multiple of 32)")
        if k and onchip.pdim == 0 and onchip.shape[0] > k and dst.shape[0] == src.shape[0] \
                and onchip.p0 % k == 0:
            n = onchip.shape[0]
            parts = [(dst.restrict([(i, min(n, i + k))]), src.restrict([(i, min(n, i + k))]))
                     for i in range(0, n, k)]
        if kind == "load" and dst.pdim is not None:
            self.loaded += _prod(dst.shape[i] for i in range(len(dst.shape)) if i != dst.pdim) * \
                dst.dtype.itemsize
        for d, s in parts:
            q = queues[self.rr[kind] % len(queues)]
            self.rr[kind] += 1
            txt = f"dma {d.text()}, {s.text()}, queue={q}" + (", accumulate" if accumulate else "")
            ls = None
            if d.alloc is not None and d.alloc.blk is not None and not accumulate and \
                    isinstance(s.buf, HbmBuf) and s.buf.kind == "input":
                dv = d.clone_view()
                dv.alloc = None
                ls = (dv, s)
            self.emit(eng, txt, reads=[s] + ([d] if accumulate else []), writes=[d], queue=q,
                      load_src=ls)

    # ---- output
    def finish(self, arch="trn1", comment=None):
        """The program text (run with the cycle collector paused, as the whole lowering is:
        Kernel._lower)."""
        SLOT_DIRTY.clear()        # (no snapshot follows: the buffers need not stay alive)
        # the scheduler, waits and folding in C where the policy lets them (_native.py); the
        # reference lowering (fast_trace False) keeps the Python passes they are checked against
        native = self.pol.fast_trace and _native.enabled(self.pol.native_passes) or \
            self.acclog is not None     # (the nodes' dependences are in the access log)
        sem_names = [f"s_{e}" for e in ENGINES] + [f"s_q{q}" for q in range(N_QUEUES)]
        tail = None               # the .sem lines and engine streams, when written in C
        if self.pol.schedule_window > 1:
            if native:
                deps = None
                if self.acclog is not None:
                    # every node's dependences from the access log, in one C pass
                    deps = _native.deps_c(self.acclog, len(self.nodes), self.mem_ext,
                                          len(ENGINES) + N_QUEUES)
                    self.acclog = None
                self.nodes, tail = _native.run_and_write(
                    self.nodes, self.pol.schedule_window, len(ENGINES), N_QUEUES,
                    _sched.ISSUE_NS, sem_names, ENGINES, self.pol.fold_loops, deps)
            else:
                self.nodes = _sched.run(self.nodes, self.pol.schedule_window, len(ENGINES),
                                        N_QUEUES)
        out = []
        if comment:
            out += ["; " + c for c in comment.splitlines()]
        if self.source:
            out.append(f".source {self.source}")
        out.append(f".arch {arch}")
        for b in self.hbm:
            kind = b.kind
            out.append(f".hbm {b.name} {b.dtype.nca} [{', '.join(str(d) for d in b.shape) or '1'}] "
                       f"{kind} @{b.addr}")
        # one line per block tensor; the instances of a declaration in a loop body that
        # report alike (loop_buffers "rotate": the same buffers in turn) share one line
        blines = {}
        bbs = self.blockbufs + self.psum_saves
        for bb, r in zip(bbs, self.report()[:len(bbs)]):
            blines.setdefault(
                f"; block tensor {r['name'] or '(unnamed)'} {r['space']} "
                       f"{list(r['shape'])} {r['dtype']} (line {r['line']}): {r['blocks']} blocks, "
                       f"{r['logical_bytes']} bytes/partition logical, {r['buffers']} buffers of "
                       f"{r['buffer_bytes']}, spilled {r['spilled_bytes']}, reloaded "
                       f"{r['reloaded_bytes']}, reloaded from inputs {r['rematerialized_bytes']} bytes"
                + (f" (its loads issued at its {r['reissued_loads']} uses)"
                   if r['loads_at_uses'] else ""), []).append(bb.used)
        for ln, used in blines.items():
            out.append(ln if len(used) == 1 else f"{ln}; {len(used)} tensors so (one per run "
                       f"of its declaration), {len(set().union(*used))} distinct buffers")
        for name, line, kind, shape, dt, buf, table, fbytes, nblk in self.direct_tensors:
            out.append(f"; placed tensor {name or '(unnamed)'} {kind} {list(shape)} {dt.name} "
                       f"(line {line}): {buf!r}, {len(table)} tiles of {fbytes} bytes on "
                       f"{len(set(table))} physical tiles")
        for sl in self.slots:
            if sl.kind == "sbuf":
                out.append(f".sbuf {sl.name} u8 [128, {sl.size}] +{sl.offset}")
            else:
                out.append(f".psum {sl.name} u8 [128, {sl.size}] +{sl.offset}")
        if tail is None:
            # the .sem lines and engine streams in Python (_sched.write)
            out += _sched.write(self.nodes, sem_names, ENGINES, self.pol.fold_loops,
                                self.pol.fast_trace, native)
        elif tail:
            out.append(tail)
        return "\n".join(out) + "\n"

    # ---- assignment and accumulation
    def assign(self, dst, value, mask=None):
        """dst[...] = value (dst already a view)."""
        nl = _nl()
        if dst.space == "hbm":
            error("err_unsupported_memory",
                  "cannot assign to an HBM tensor with '='; use nl.store")
        if dst.pend is not None:
            self.flush(dst)
        if isinstance(value, Tensor) and value.pend is not None and value is self.pending:
            p = self.take_pending(value)
            box = None
            if _prod(value.shape) > _prod(dst.shape) and not _fits(value.shape, dst.shape):
                error("err_store_dst_shape_smaller_than_other_shape",
                      f"assigning a {value.shape} value into a {dst.shape} destination")
            if p.space == "psum" and dst.space != "psum" or p.matmul and dst.space != "psum" \
                    or (p.space == "sbuf" and dst.space == "psum" and getattr(p.emit, "pool", False)):
                # the instruction cannot write there: materialise, then copy
                value.pend = p
                self.pending = value
                self.flush(value)
                return self.assign(dst, value, mask)
            if value.shape != dst.shape:
                dstv = _reshape_like(dst, value.shape)
            else:
                dstv = dst
            self.run_pending(p, dstv, box)
            return
        if isinstance(value, Tensor) and value.inplace and value.pend is None and \
                (value is dst or (value.buf is dst.buf and value.p0 == dst.p0 and value.off == dst.off
                                  and value.shape == dst.shape and value.strides == dst.strides)):
            value.inplace = False         # t[...] += x: already done in place
            return
        if isinstance(value, Tensor):
            value._real()
            if value.space == "hbm":
                error("err_unsupported_memory", "assigning an HBM tensor into an on-chip tensor: use nl.load")
            if _prod(value.shape) > _prod(dst.shape) and not _fits(value.shape, dst.shape):
                error("err_store_dst_shape_smaller_than_other_shape",
                      f"assigning a {value.shape} value into a {dst.shape} destination")
            nl._copy_into(dst, value, mask)
            return
        if isinstance(value, (int, float, np.integer, np.floating, bool)):
            nl._memset_into(dst, value, mask)
            return
        if is_index(value):
            error("err_cannot_assign_to_index", "an index expression cannot be assigned; use nisa.iota")
        error("err_unsupported", f"cannot assign a {type(value).__name__} to a tensor")

    def accumulate(self, dst, value, op):
        """dst += value (and -=, *=, /=): PSUM matmul accumulation, or an element-wise op."""
        if value is self.pending and value is not None and op == "add" and _fast[0] and \
                dst.pend is None and self._matmul_acc(dst, value):
            dst.inplace = True
            return dst
        nl = _nl()
        dst._real()
        if isinstance(value, Tensor) and value.pend is not None and value.pend.matmul is not None \
                and value is self.pending and op == "add":
            if dst.space != "psum":
                error("err_unsupported_memory", "matmul results accumulate in PSUM only")
            p = self.take_pending(value)
            stat, mov = p.matmul[0], p.matmul[1]
            mbox = p.matmul[2] if len(p.matmul) > 2 else None     # the matmul's mask
            dm = dst.restrict(mbox) if mbox else dst
            bx = dm.box()
            key = (bx[1], bx[3])
            a = dst.alloc
            if mbox is False:
                pass
            elif a is not None and (a.lazy_zero and key not in a.acc_started):
                a.acc_started.add(key)
                self._matmul_at(p.line, dm, stat, mov, False)
            elif a is not None and key in a.acc_started:
                self._matmul_at(p.line, dm, stat, mov, True)
            else:
                # PSUM written by another engine: matmul into a temporary, then add
                if self.direct is not None:
                    from . import compiler
                    compiler.hidden_tensor("a temporary for the product, added to PSUM that "
                                           "another engine wrote", "this += of a matmul")
                value.pend = p
                self.pending = value
                self.flush(value)
                nl._binary_into(dst, "add", dst, value, mbox)
            dst.inplace = True
            return dst
        if value.__class__ is Tensor and _fast[0] and self._tt_acc(dst, value, op):
            dst.inplace = True
            return dst
        nl._binary_into(dst, op, dst, value, None)
        dst.inplace = True
        return dst

    def _tt_acc(self, dst, value, op):
        """accumulate's element-wise case, `t[...] += u` (-=, *=, /=) of two on-chip tiles of
        one shape (two dims or more, the partition dim first, more than one element per
        partition, not both in PSUM, u not pending): the tensor_tensor that
        language._binary_into(dst, op, dst, value, None) emits, with its lazy-zero touches (dst's,
        then value's), its engine and its views (dst and value themselves: _binary_into's
        reshape, restrict and bcast give them back unchanged). False (nothing done) for any
        other case, which _binary_into handles, errors included."""
        if value.pend is not None or dst.pdim != 0 or value.pdim != 0:
            return False
        shape = dst.shape
        if value.shape != shape or len(shape) < 2:
            return False
        n = 1
        for d in shape[1:]:
            n *= d
        if n == 1:
            return False
        bd = dst.buf
        bv = value.buf
        if type(bd) is not Slot or type(bv) is not Slot:
            return False
        kd = bd.kind
        kv = bv.kind
        if kd == "psum" and kv == "psum" or op == "pow":
            return False
        a = dst.alloc
        if a is not None and a.lazy_zero:
            self.touch_lazy_zero(dst)
        a = value.alloc
        if a is not None and a.lazy_zero:
            self.touch_lazy_zero(value)
        eng = self.pol.elementwise_engine
        if eng == "pool" and (op not in ("add", "subtract", "multiply") or kd == "psum" or
                              kv == "psum"):
            eng = "dve"
        td = dst.text()
        self.emit(eng, f"tensor_tensor {td}, {td}, {value.text()}, {op}", reads=[dst, value],
                  writes=[dst])
        return True

    def _matmul_acc(self, dst, value):
        """accumulate's common case, `psum_tile[...] += nisa.nc_matmul(...)` with the
        pending matmul of two 2-D tiles, no mask, into a [M, N] fp32 PSUM view within one
        bank that starts or continues an accumulation group: the matmul emitted as
        _matmul_at would emit it. False (nothing done) for any other case."""
        p = value.pend
        mm = p.matmul
        if mm is None or len(mm) != 2:
            return False
        b = dst.buf
        if type(b) is not Slot or b.kind != "psum" or dst.dtype is not D.float32:
            return False
        a = dst.alloc
        if a is None:
            return False
        stat, mov = mm
        shape = dst.shape
        if len(shape) != 2 or shape[0] != stat.shape[1] or shape[1] != mov.shape[1]:
            return False
        bx = dst._bx
        if bx is None:
            bx = dst.box()
        p0, lo = bx[1], bx[3]
        if (b.offset + lo) // PSUM_BANK != (b.offset + bx[4] - 1) // PSUM_BANK:
            return False
        key = (p0, lo)
        started = a.acc_started
        if key in started:
            acc = True
        elif a.lazy_zero:
            acc = False
        else:
            return False
        self.pending = None                     # take_pending
        value.pend = None
        started.add(key)
        old = self.line_override
        self.line_override = p.line
        try:
            if self.fast and self.steady is None:
                # a first pass that a second replaces: the views' errors only (Tensor.text),
                # and the text text() would give, empty views
                dst._check_text()
                stat._check_text()
                mov._check_text()
                if not self.thook:
                    # what emit does in such a pass (no text, no dependences, no node): the
                    # blocks' uses, the tick
                    self._emit_first(stat, mov, dst, acc)
                    return True
                txt = "matmul , , , acc" if acc else "matmul , , "
            else:
                txt = f"matmul {dst.text()}, {stat.text()}, {mov.text()}, acc" if acc else \
                    f"matmul {dst.text()}, {stat.text()}, {mov.text()}"
                if self.acclog is not None and self.steady is None and not self.thook:
                    self._emit_logged(txt, stat, mov, dst, acc)
                    return True
            self.emit("pe", txt, reads=[stat, mov, dst] if acc else [stat, mov], writes=[dst])
        finally:
            self.line_override = old
        return True

    def _emit_first(self, stat, mov, dst, acc):
        """emit("pe", ..., reads=[stat, mov] (+ [dst] when acc), writes=[dst]) in a first pass
        that a second replaces (self.fast, no loop recorded, no PSUM tile hook, nothing
        pending): the same checks and bookkeeping in the same order, without the parts such
        a pass skips (dependences, accesses, the estimate, the line, the node)."""
        for t in (stat, mov, dst) if acc else (stat, mov):
            a = t.alloc
            if a is not None:
                if a.dead:
                    _out_of_scope(a)
                if a.blk is not None:
                    self.block_used(a, False, None)
        a = dst.alloc
        if a.dead:
            _out_of_scope(a)
        a.written = True
        sl = a.slot
        if sl is not None and sl.tag is not None:
            self.dirty.add(sl.tag)
        if a.blk is not None:
            self.block_used(a, True, None)
        self.count[_PE] += 1
        self.tick += 1

    def _emit_logged(self, text, stat, mov, dst, acc):
        """emit("pe", text, reads=[stat, mov] (+ [dst] when acc), writes=[dst]) with the access
        log (a second or single pass with the C passes), no loop recorded, no PSUM tile hook,
        nothing pending: the same checks, block uses, log entry and estimate, in the same
        order, then _emit_tail. (dst's read, when acc, is left out of the log as emit leaves
        a view both read and written.)"""
        ag = _PE
        idx = self.count[ag]
        deps = [ag, idx]
        self.exact = None
        blks = None
        for t in (stat, mov, dst) if acc else (stat, mov):
            a = t.alloc
            if a is not None:
                if a.dead:
                    _out_of_scope(a)
                if a.blk is not None:
                    self.block_used(a, False, None)
                    if blks is None:
                        blks = [a]
                    else:
                        blks.append(a)
            if t is dst:
                continue
            ab = t._ab
            key, bx = ab if ab is not None else t.abox()
            self._log(deps, key, bx, 0)
        a = dst.alloc
        if a.dead:
            _out_of_scope(a)
        a.written = True
        sl = a.slot
        if sl is not None and sl.tag is not None:
            self.dirty.add(sl.tag)
        if a.blk is not None:
            self.block_used(a, True, None)
            if blks is None:
                blks = [a]
            else:
                blks.append(a)
        ab = dst._ab
        key, bx = ab if ab is not None else dst.abox()
        self._log(deps, key, bx, 1)
        # the scheduler's estimate (emit's): ns of the instruction on the PE
        shape = dst.shape
        n = shape[0] * shape[1]
        if dst.pdim is not None:
            n //= shape[dst.pdim]
        inc = (n if n > 64 else 64) / _CLOCK[_PE] + 0.0
        ln = self.line_override
        if ln is None:
            ln = self.line()
        self._emit_tail("pe", text, ag, idx, deps, None, False, ln, inc, blks)

    def _matmul_at(self, line, dst, stat, mov, acc):
        """The matmul of a pending result into dst, attributed to the line that made it
        (run_pending of a Pending that emits it, without making one)."""
        nl = _nl()
        old = self.line_override
        self.line_override = line
        try:
            nl._emit_matmul(dst, stat, mov, acc=acc)
        finally:
            self.line_override = old

    def touch_lazy_zero(self, t):
        """A PSUM tensor from nl.zeros read or written by something other than a matmul."""
        a = t.alloc
        if a is not None and a.lazy_zero:
            a.lazy_zero = False
            if a.acc_started or a.slot.owner == "direct":
                return              # (a directly placed tile starts with what its bytes hold)
            whole = Tensor(a.slot, a, t.dtype, (PMAX, a.slot.size // 4), 0, 0, [None, 1], 0)
            whole.dtype = D.float32
            self.emit("dve", f"memset {whole.text()}, 0.0", writes=[whole])


def _among(t, views):
    """Is the view t (this very object) one of views? (`in` would compare tensors elementwise.)"""
    for v in views:
        if v is t:
            return True
    return False


def _fits(vshape, dshape):
    v = [d for d in vshape if d != 1]
    dd = [d for d in dshape if d != 1]
    return v == dd


def _reshape_like(dst, shape):
    """dst viewed with `shape` when the element counts per partition agree (e.g. [P] vs [P,1])."""
    if _prod(shape) == _prod(dst.shape) and shape[0] == dst.shape[dst.pdim or 0]:
        free = [(s, n) for s, n in dst.free_dims() if n != 1]
        fs = [d for d in shape[1:]]
        # rebuild strides for the new free dims from dst's (merged) pattern when possible
        st = []
        dims = list(free)
        for n in reversed(fs):
            if n == 1:
                st.append(0)
                continue
            if not dims:
                break
            s, c = dims[-1]
            if c == n:
                st.append(s)
                dims.pop()
            elif c % n == 0:
                st.append(s)
                dims[-1] = (s * n, c // n)
            else:
                break
        else:
            if not dims:
                st.reverse()
                return dst.clone_view(shape=tuple(shape), strides=[None] + st, pdim=0)
    if len(shape) >= len(dst.shape):
        return dst.bcast(shape)
    if shape and shape[0] != dst.shape[dst.pdim or 0]:
        error("err_shape_mismatch", f"a result of shape {tuple(shape)} cannot be written to a "
              f"destination of shape {tuple(dst.shape)} (their partition counts differ)")
    return dst


from . import _steady  # noqa: E402  (it uses this module's names at run time)
