"""Steady-state loop tracing (docs/nki.md, "Loops kept").

A loop of many iterations is traced until its steady state is shown: `NWIN` consecutive
windows of P iterations (after `WARM` warm-up iterations) that record the same events -- the
same instructions on the same engines, queues and buffers, the same load bookkeeping --
except for view offsets (`+N[` in the text, and the accessed regions) and integer immediates
(`base=N`, an integer operand: _OFF) that grow by the same amount from one window to the next, with the tracer's state at each window's end equal up to
counters that grow by the same amount. The middle windows are then not run: their events are
replayed, shifted, through the tracer's own bookkeeping (access records, dependences, vector
clocks, semaphores, load counts), so that the program text, waits and statistics are those
of the full trace; the last iterations run again for real, with their real indices, and must
continue the replayed sequence (else the kernel is lowered again without extrapolation).
Windows whose events ask the allocator nothing (no block allocated or used, no load at a
use) are replayed event by event for the first two and the last; the ones between are made
in bulk from those two (_bulk: the nodes, access-log entries, load records and counters they
would make).

Which loops are recorded: those of MIN_ITERS iterations or more, and those of MIN_SHORT or
more outside a recorded loop whose first iteration makes BIG_BODY events or more (measured
as it is traced, kept per loop statement: a short loop with a small body stops recording
after its first run's first iteration, and its later runs record nothing; nor do those of a
short loop whose first recorded run found no replay).

A loop statement's later runs (the same statement, trip count and index step): the tracer
remembers the steady states its runs found (_remember); a later run whose state after its
warm-up and one window equals its state before that window, whose counters grew as the
remembered run's did, and whose window's events are the remembered window's up to a renaming
of block tensors, sites and buffers (_known), is replayed with the remembered steps; its last
iterations are checked as a first run's are.

Block tensors: a block's allocation is an event, replayed by calling the allocator again (the
text's offsets in the block's buffer move with the buffer it gives); a block filled when first
touched (nl.zeros) is filled by that call, at the line the full trace gives the fill. An
eviction, spill or reload in a warm-up iteration (a loop's first, which no compared window
holds and the replay does not repeat) refuses only the enclosing loops. A PSUM block's
accumulation state (lazy zero, groups started) is carried in each instruction's template and
set again by the replay; a block the recording never saw refuses. A block tensor whose loads
are issued at its uses: its sunk nl.load ("S": the block's views rebuilt, a tick, a load
count) and each use's buffer ("U", then the load as an instruction) are events.

A block tensor made in an iteration ("N": Tracer.new_blocks) is an event too: the windows are
compared up to a renaming of the tensors made in them (_same_win), the snapshots leave those
tensors out (their buffers are compared as other buffers), and each replayed window makes its
tensors again (_remake) and uses them in place of the template window's. A block of a tensor
made in another recorded iteration, or a tensor made while an inner loop is recorded, refuses.

A loop is traced in full (refused) when anything in its windows is outside what the replay
reproduces: kept (resident) loads, PSUM blocks from before the loop,
evictions, spills and reloads of blocks, an allocation that looks beyond its
site's own buffers, a pending instruction at an iteration's end, a
variable bound before the loop that the body rebinds, a decision taken in the kernel's code
on the loop index (comparison, truth value, hash, floor division, modulo, formatting ...),
or a body whose code calls or mutates something the tracer cannot see (a list's append, an
attribute store, a call of a Python function that is not an NKI API; see _body_ok)."""
import builtins
import dis
import os
import re
import sys
import types
import weakref
from itertools import repeat
import operator

import numpy as np
from operator import add as _add, attrgetter

from . import _core as C
from . import _fold

MIN_ITERS = 20     # loops with fewer iterations are traced in full (recording costs more
                   # than a short loop saves: measured on the tutorial matmuls) ...
WARM = 1           # iterations traced before windows are compared (the first often differs)
MAXP = 4           # longest period searched, in iterations
NWIN = 3           # equal consecutive windows required
MIN_SHORT = 2 * (WARM + NWIN + 2)   # ... unless the body is large (BIG_BODY): then from
                   # the fewest iterations that replay as many as they record with period 1
                   # (the warm-up, NWIN windows, the last one checked and one more when a mask
                   # compares the index: 6 recorded, 6 replayed). Measured: the fully
                   # optimised tutorial matmul's 8-iteration outer loop recorded (6 recorded, 2
                   # replayed) took 1.3 -> 2.2 s; the blocked one's 16-iteration loop (5, 11)
                   # 1.3 -> 1.2 s
BIG_BODY = 1000    # events in a short loop's first iteration from which it is recorded:
                   # measured on the tutorial matmuls at full size, the fully optimised
                   # kernel's 16-iteration loops (256 runs each) make 4 and 11 events per
                   # iteration (recording them cost more than it saved: MIN_ITERS 16 tried),
                   # the blocked kernel's 16-iteration m loop 5,641 and the optimised kernel's
                   # 8-iteration n loop 5,913 (docs/nki.md, Speed, *Short loops with large bodies*)
LIMIT = WARM + NWIN * MAXP + MAXP   # iterations recorded before giving up
KNOWN = 4          # steady states remembered per loop statement (_known)
KNOWN_ON = True    # (tests) later runs of a loop statement checked against the remembered ones

# the numbers of an instruction's text that may grow from one window to the next: a raw view's
# offset (`+N[`) and the integer immediates -- `base=N` (nisa.iota's, affine_select's, nl.rand's
# counters) and an operand that is an integer (`, N` ending a field: a scalar of an integer
# operation; not an item of a [...] list: steps=, mask=): expressions of the loop index;
# floats (written with a `.` or an exponent) are not numbers here, so they must be equal
_OFF = re.compile(f"({_fold.OFFSET}|{_fold.IMMEDIATE})")     # (the folding's, less waits)


class Mismatch(Exception):
    """The iterations traced after a replay did not continue it: lower again in full."""


REPLAYED = ("replayed",)   # in Alloc.remat: loaded in a replayed iteration (no source views)


class Guard:
    """tr.steady while replaying: the allocator's choices the replay cannot stand for
    (another site's buffer, an eviction, a fill) stop it, and the kernel is lowered in full."""
    __slots__ = ("ev", "bbs", "psum")

    def __init__(self):
        self.ev = []
        self.bbs = {}
        self.psum = set()

    def refuse(self, why):
        raise Mismatch("while replaying: " + why)

    refuse_window = refuse

    def masked(self):
        pass

    def made(self, bb, bsite):
        pass        # (the replay's own new_blocks calls: _windows, "N")


class Recorder:
    """The events of the iterations of one loop being traced, and why it cannot be replayed."""
    __slots__ = ("ev", "bad", "allocs", "it", "local", "bbs", "parent", "warm", "psum", "mask",
                 "cnames", "check", "mord", "mine")

    def __init__(self):
        self.ev = []           # events of the current iteration: (template, values)
        self.bad = None        # a reason: no replay for this loop
        self.allocs = {}       # id -> weakref of on-chip tensors the events touched
        self.it = 0
        self.local = frozenset()   # names the body binds before using them
        self.bbs = {}              # ordinal -> BlockBuf used in the recorded iterations
        self.parent = None         # the Recorder of the enclosing loop, or None
        self.warm = False          # recording a warm-up iteration (before the windows)
        self.psum = set()          # (ordinal, block) of PSUM blocks allocated or used here
        self.mask = False          # a mask compares a loop index (masked)
        self.cnames = None         # the carried names _snapshot compares, sorted
        self.check = bool(os.environ.get("NCSIM_NKI_TRACE_ORACLE"))   # (tests) _SlotState
                                   # checked against the full walk at every snapshot
        self.mord = set()          # ordinals of the block tensors made in the recorded iterations
        self.mine = set()          # ... in the current one

    def masked(self):
        """A mask compares a loop index with a bound: its truth may change once, in the last
        iterations (a ragged last tile), so the replay leaves one more period to run freely."""
        r = self
        while r is not None:
            r.mask = True
            r = r.parent

    def refuse(self, why):
        """No replay for this loop, nor for the loops around it (whose windows hold its
        iterations' events)."""
        r = self
        while r is not None:
            if r.bad is None:
                r.bad = why
            r = r.parent

    def refuse_window(self, why):
        """What the replay does not reproduce (an eviction, a spill, a reload): no replay
        for this loop, unless it happens in a warm-up iteration, which no window compared
        holds and no replay repeats; the enclosing loops' windows hold it, so they are
        refused in any case."""
        if self.warm:
            if self.parent is not None:
                self.parent.refuse(why)
        else:
            self.refuse(why)

    def made(self, bb, bsite):
        """A block tensor made in the iteration (Tracer.new_blocks; bsite: its declaration's
        site key, second pass): an event, made again by the replay. Its blocks may be used by
        this iteration only; the windows are compared up to a renaming of the tensors made in
        them (_same_win)."""
        if self.parent is not None:
            # (an inner loop's replayed events are forwarded to the enclosing recording as
            # they were recorded: they would name the template's tensors)
            self.refuse("a block tensor is made in a loop inside a recorded loop")
            return
        self.mord.add(bb.ordinal)
        self.mine.add(bb.ordinal)
        self.ev.append((("N", bb, bsite), ()))

    def other(self, bb):
        """A block of bb is used: a tensor made in an earlier recorded iteration of this loop
        or of an enclosing one refuses."""
        o = bb.ordinal
        r = self
        while r is not None:
            if o in r.mord and o not in r.mine:
                self.refuse("a block tensor made in one iteration is used in another")
                return
            r = r.parent

    def forward(self, events):
        """Hand events (recorded, replayed or traced after a replay) to the enclosing loop's
        Recorder, as if its body had made them."""
        p = self.parent
        if p is not None:
            p.ev.extend(events)
            p.bbs.update(self.bbs)
            p.allocs.update(self.allocs)
            p.psum |= self.psum

    def seen(self, key):
        """Has this loop's recording, or an enclosing one's, allocated or used PSUM block key?"""
        r = self
        while r is not None:
            if key in r.psum:
                return True
            r = r.parent
        return False


def _split(text):
    parts = _OFF.split(text)
    return tuple(parts[0::2]), tuple(int(v) for v in parts[1::2])


def _join(parts, vals):
    out = [parts[0]]
    for v, p in zip(vals, parts[1:]):
        out.append(str(v))
        out.append(p)
    return "".join(out)


# ---- recording hooks (called by the tracer while tr.steady is a Recorder)

# rec_emit and the load records: text -> (parts, numbers, the numbers that follow an SBUF or
# PSUM operand's name: ((j, in SBUF), ...)), for up to _SPLITS_MAX texts (then cleared)
_SPLITS = {}
_SPLITS_MAX = 8192


def _split_rec(text):
    """_split(text) and the numbers of the text that may be offsets in an on-chip buffer
    (those after an `sb:` or `ps:` operand's name), kept per text: the recorded iterations of
    a loop's runs repeat their instructions' texts."""
    got = _SPLITS.get(text)
    if got is None:
        parts, vals = _split(text)
        cand = []
        for j in range(len(vals)):
            last = parts[j].rsplit(" ", 1)[-1]
            if last.startswith("sb:"):
                cand.append((j, True))
            elif last.startswith("ps:"):
                cand.append((j, False))
        got = (parts, vals, tuple(cand))
        if len(_SPLITS) >= _SPLITS_MAX:
            _SPLITS.clear()
        _SPLITS[text] = got
    return got


def rec_emit(rec, eng, text, queue, internal, accs, line, inc, brefs):
    """An instruction: accs [(memory, box, write)] in the order the tracer recorded them,
    brefs [(BlockBuf, block, write, loaded)] the blocks it uses."""
    parts, vals, cand = _split_rec(text)
    keys = []
    bv = []
    for key, box, w, blk in accs:
        if blk is not None:
            # a block's buffer: named by (tensor, block); the allocator places it again
            keys.append((blk[0], len(box), w))
            bv.append(blk[1])
        else:
            keys.append((key, len(box), w))
        for lo, hi in box:
            bv.append(lo)
            bv.append(hi)
    # the text's offsets within a block's buffer: moved with the buffer the replay's allocator
    # gives the block
    tmap = []
    if cand:
        bacc = [(k, key) for k, (key, box, w, blk) in enumerate(accs) if blk is not None]
        if bacc:
            for j, sb in cand:
                n = vals[j]
                hit = {id(key): k for k, key in bacc
                       if (key.kind == "sbuf") == sb and key.offset <= n < key.offset + key.size}
                if len(hit) > 1:
                    rec.refuse("an offset in the text lies in two blocks' buffers")
                elif hit:
                    k = next(iter(hit.values()))
                    tmap.append((j, k))
    if tmap:
        vals = list(vals)
        for j, k in tmap:
            vals[j] -= accs[k][0].offset       # relative to the block's buffer
        vals = tuple(vals)
    bk = []
    other = rec.other
    for bb, blk, w, ld in brefs:
        rec.bbs[bb.ordinal] = bb
        other(bb)
        if bb.kind == "psum":
            # a PSUM block's accumulation state as this instruction finds it (Tracer.accumulate
            # has set it): whether a matmul starts a group or adds to one. Part of the
            # template, so the windows must agree on it; the replay sets it again. A block
            # from before the recording (its state made by code the windows do not show) is
            # allowed in a warm-up iteration only
            key = (bb.ordinal, blk)
            if not rec.warm and not rec.seen(key):
                rec.refuse("a PSUM block from before the loop is used")
            rec.psum.add(key)
            bk.append((bb, w, ld, _acc_state(bb.allocs.get(blk))))
        else:
            bk.append((bb, w, ld, None))
        bv.append(blk)
    rec.ev.append((("E", eng, parts, queue, internal, tuple(keys), line, inc, len(vals),
                    tuple(bk), tuple(tmap)), vals + tuple(bv)))


def _acc_state(a):
    """A PSUM block's per-block accumulation state: (lazy zero pending, the regions --
    (first partition, first byte) within its buffer -- whose accumulation group has started)."""
    if a is None:
        return None
    return a.lazy_zero, tuple(sorted(a.acc_started))


def rec_block(rec, bb, blk, line):
    """A block gets a buffer (chosen again by the allocator when replayed), and, for a
    tensor filled when first touched, the fill's instruction at `line` (made again by the
    allocator when replayed; None in a first pass that a second replaces)."""
    rec.bbs[bb.ordinal] = bb
    rec.other(bb)
    if bb.kind == "psum":
        rec.psum.add((bb.ordinal, blk))
    rec.ev.append((("B", bb, line), (blk,)))


def rec_sink(rec, bb, blk, dv, sv, lkey):
    """bt[...] = nl.load(...) into block blk of a tensor whose loads are issued at its uses
    (Tracer.sink_load): no instruction; the block records its destination view dv (within the
    block) and source view sv, and the load counts as the first pass's load instruction (a
    tick) and as a load of lkey (None: not counted)."""
    rec.bbs[bb.ordinal] = bb
    rec.other(bb)
    if lkey is not None:
        lparts, lv, _ = _split_rec(lkey[1])
        lt = (lkey[0], lparts, lkey[2], lkey[3])
    else:
        lt, lv = None, ()
    rec.ev.append((("S", bb, (dv.dtype, dv.shape, dv.pdim, dv.strides),
                    (sv.buf, sv.dtype, sv.shape, sv.pdim, sv.strides), lt, len(lv)),
                   lv + (blk, dv.p0, dv.off, sv.p0, sv.off)))


def rec_sunk_use(rec, bb, slot, nbytes):
    """A read of a block of a tensor whose loads are issued at its uses takes `slot` of the
    tensor's own site for the load of what it reads (nbytes), which follows as an internal
    instruction (Tracer.sunk_read)."""
    rec.bbs[bb.ordinal] = bb
    rec.other(bb)
    rec.ev.append((("U", bb, slot, nbytes), ()))


def rec_alloc(rec, a):
    if a is not None and a.blk is None:
        import weakref
        rec.allocs[id(a)] = weakref.ref(a)


def rec_load1(rec, key, site, before, n, d):
    parts, vals, _ = _split_rec(key[1])
    a = d.alloc
    if a is not None and a.blk is not None:
        ref = a.blk[0]
        vals = vals + (a.blk[1],)
        rec.other(ref)
    else:
        ref = d.buf
    rec.ev.append((("L1", key[0], parts, key[2], key[3], site, n, ref, len(vals)),
                   vals + (before,)))


def rec_load2(rec, key):
    parts, vals, _ = _split_rec(key[1])
    rec.ev.append((("L2", key[0], parts, key[2], key[3]), vals))


# ---- the loop index

_USER = None


def _user_frame(f):
    fn = f.f_code.co_filename
    return not fn.startswith(C._NCSIM_DIR) or fn.startswith(C._EXAMPLES_DIR)


class Idx(int):
    """A loop index that notes when the kernel's code decides something on it."""
    __slots__ = ()

    def _flag(self, what):
        f = sys._getframe(2)
        if _user_frame(f):
            tr = C._tracer[0]
            rec = tr.steady if tr is not None else None
            if rec is not None:
                rec.refuse(f"the loop index is used in a {what} at "
                           f"{f.f_code.co_filename}:{f.f_lineno}")

    def __add__(self, o):
        r = int.__add__(self, o)
        return r if r is NotImplemented else Idx(r)

    __radd__ = __add__

    def __sub__(self, o):
        r = int.__sub__(self, o)
        return r if r is NotImplemented else Idx(r)

    def __rsub__(self, o):
        r = int.__rsub__(self, o)
        return r if r is NotImplemented else Idx(r)

    def __mul__(self, o):
        r = int.__mul__(self, o)
        return r if r is NotImplemented or type(o) is float else Idx(r)

    __rmul__ = __mul__

    def __neg__(self):
        return Idx(-int(self))

    def __pos__(self):
        return self


def _flagging(name, what):
    base = getattr(int, name)

    def f(self, *a):
        self._flag(what)
        return base(self, *a)
    f.__name__ = name
    return f


for _n, _w in (("__eq__", "comparison"), ("__ne__", "comparison"), ("__lt__", "comparison"),
               ("__le__", "comparison"), ("__gt__", "comparison"), ("__ge__", "comparison"),
               ("__bool__", "truth test"), ("__hash__", "hash (a dict or set key)"),
               ("__mod__", "modulo"), ("__rmod__", "modulo"), ("__floordiv__", "floor division"),
               ("__rfloordiv__", "floor division"), ("__divmod__", "divmod"),
               ("__rdivmod__", "divmod"), ("__truediv__", "division"),
               ("__rtruediv__", "division"), ("__pow__", "power"), ("__rpow__", "power"),
               ("__and__", "bit operation"), ("__rand__", "bit operation"),
               ("__or__", "bit operation"), ("__ror__", "bit operation"),
               ("__xor__", "bit operation"), ("__rxor__", "bit operation"),
               ("__lshift__", "shift"), ("__rlshift__", "shift"), ("__rshift__", "shift"),
               ("__rrshift__", "shift"), ("__invert__", "bit operation"), ("__abs__", "abs"),
               ("__format__", "string"), ("__str__", "string"), ("__repr__", "string"),
               ("__float__", "conversion"), ("__int__", "conversion"),
               ("__round__", "rounding"), ("__trunc__", "rounding"), ("__floor__", "rounding"),
               ("__ceil__", "rounding")):
    setattr(Idx, _n, _flagging(_n, _w))


# ---- the loop body's code

_MUTATORS = frozenset(("copyto", "place", "putmask", "append", "extend", "insert", "pop", "remove", "clear", "update", "add",
                       "discard", "setdefault", "sort", "reverse", "popitem", "write", "put",
                       "send", "appendleft", "extendleft", "popleft", "seed", "shuffle"))
_BUILTINS_OK = frozenset(("range", "len", "min", "max", "slice", "int", "tuple", "abs",
                          "divmod", "isinstance", "float", "bool", "zip", "enumerate",
                          "reversed", "sum", "any", "all", "map", "filter", "getattr",
                          "hasattr", "type", "AssertionError", "ValueError", "TypeError"))
_BODY = {}     # (code, FOR_ITER offset) -> None or the reason the body is refused


def _ncsim_obj(v):
    m = getattr(v, "__module__", None)
    if isinstance(v, types.ModuleType):
        m = v.__name__
    return isinstance(m, str) and (m == "ncsim" or m.startswith("ncsim."))


def _body_ok(frame):
    """None if the statically visible code of the loop body only computes and calls the NKI
    API, else why not."""
    code = frame.f_code
    off = frame.f_lasti
    key = (code, off)
    if key in _BODY:
        static = _BODY[key]
    else:
        static = _static(code, off)
        _BODY[key] = static
    if isinstance(static, str):
        return static
    loc = frame.f_locals
    try:
        return _names_ok(static[0], loc, frame.f_globals)
    finally:
        loc.clear()                # the snapshot must not keep tensors alive


def _names_ok(names, loc, g):
    for kind, name in names:
        if kind == "module":
            v = loc[name] if name in loc else g.get(name)
            if not (isinstance(v, types.ModuleType) and
                    (_ncsim_obj(v) or v.__name__ in ("numpy", "math"))):
                return f"the body calls a method of '{name}' that may change it"
            continue
        if kind == "fast":
            if name not in loc:
                continue
            v = loc[name]
        else:
            if name in loc:
                v = loc[name]
            elif name in g:
                v = g[name]
            elif hasattr(builtins, name):
                if name in _BUILTINS_OK:
                    continue
                return f"the body calls the builtin {name}"
            else:
                continue
        if isinstance(v, (list, dict, set, bytearray)) or type(v).__name__ == "ndarray":
            return f"the body uses the mutable {type(v).__name__} '{name}'"
        if type(v) in (tuple, str, bytes) and len(set(map(id, v))) > 1:
            # t[i] of a sequence whose items differ: what the body gets need not be periodic
            return f"the body uses the {type(v).__name__} '{name}', whose items differ"
        if isinstance(v, types.ModuleType):
            if not _ncsim_obj(v) and v.__name__ not in ("math", "numpy"):
                return f"the body uses the module {v.__name__}"
        elif callable(v) and not isinstance(v, (int, float, C.Tensor)) and not _ncsim_obj(v):
            return f"the body calls '{name}', which is not an NKI API"
        elif not (v is None or type(v) in (int, float, bool, complex, tuple, str, bytes) or
                  isinstance(v, type) or _ncsim_obj(type(v)) or
                  getattr(type(v), "__module__", "") == "numpy"):
            # an object of the kernel's: its attributes could change or differ per index
            return f"the body uses '{name}', a {type(v).__name__} the tracer cannot follow"
    return None


def _static(code, off):
    ins = list(dis.get_instructions(code))
    start = next((k for k, x in enumerate(ins) if x.offset == off), None)
    if start is None or ins[start].opname != "FOR_ITER":
        return "the loop's code is not a plain for statement"
    end = ins[start].argval
    names = set()
    local = set()
    seen = set()
    prev = None
    for x in ins[start + 1:]:
        if x.offset >= end:
            break
        op = x.opname
        if op in ("STORE_ATTR", "DELETE_ATTR", "STORE_GLOBAL", "DELETE_GLOBAL", "STORE_DEREF",
                  "DELETE_DEREF", "YIELD_VALUE", "DELETE_SUBSCR", "IMPORT_NAME", "RAISE_VARARGS"):
            return f"the body has {op} at line {_ln(x)}"
        if op in ("LOAD_ATTR", "LOAD_METHOD") and x.argval == "random":
            return f"the body uses a random generator at line {_ln(x)}"
        if op in ("LOAD_ATTR", "LOAD_METHOD") and x.argval in _MUTATORS:
            # nl.add is an NKI call; lst.add / lst.append mutate what the tracer cannot see
            p = prev
            if p is None or p.opname not in ("LOAD_FAST", "LOAD_GLOBAL", "LOAD_NAME",
                                             "LOAD_DEREF"):
                return f"the body calls .{x.argval} at line {_ln(x)}"
            names.add(("module", p.argval))
        prev = x
        if op == "STORE_FAST" and x.argval not in seen:
            local.add(x.argval)         # bound by the body before any use: not carried
        if op in ("LOAD_FAST", "STORE_FAST", "DELETE_FAST"):
            seen.add(x.argval)
        if op == "LOAD_FAST":
            names.add(("fast", x.argval))
        elif op in ("LOAD_GLOBAL", "LOAD_NAME", "LOAD_DEREF", "LOAD_CLOSURE"):
            names.add(("global", x.argval))
    return tuple(sorted(names)), frozenset(local)


def _ln(x):
    return getattr(x, "positions", None) and x.positions.lineno or x.starts_line


# ---- the tracer's state at an iteration's end

def _local_names(frame):
    s = _BODY.get((frame.f_code, frame.f_lasti))
    return s[1] if isinstance(s, tuple) else frozenset()


_MISSING = object()     # a carried name not bound (in _snapshot's ids of the carried values)


def _snapshot(tr, rec, frame, outer):
    """(what must be equal, counters that must grow by the same amount per window)."""
    if tr.pending is not None:
        rec.refuse("an instruction is pending at the iteration's end")
    allocs = []
    for k, r in sorted(rec.allocs.items()):
        a = r()
        if a is None or a.dead is not None:
            continue
        allocs.append((k, a.slot.id if a.slot is not None else None, a.written, a.lazy_zero,
                       frozenset(a.acc_started), a.spilled))
    carried = ()
    if outer:
        # the variables bound before the loop that the body does not bind first: the same
        # objects (the names are the same at every snapshot of this loop: `outer` and the
        # body's locals do not change)
        names = rec.cnames
        if names is None:
            names = rec.cnames = tuple(sorted(outer - rec.local))
        loc = frame.f_locals
        carried = tuple(map(id, map(loc.get, names, repeat(_MISSING))))
        loc.clear()                # the snapshot must not keep tensors alive
        del loc
    bbs = _bbs(rec)
    ids, owners, tags, nblk = _slot_part(tr, rec, bbs)
    st = (len(tr.scopes), ids, owners,
          tuple((bb.ordinal, bb.spilled, bb.reloaded, bb.scratch is None) for bb in bbs),
          tags,
          len(tr.sites), tuple([s.rr for s in tr.sites.values()]),
          # (free memory: only the replay's real block allocations carve it)
          tuple(tr.sb_free) if not bbs else None, tuple(tr.ps_free),
          len(tr.hbm), tr.hbm_next, tuple([(b.written is None, b.read) for b in tr.hbm]),
          len(tr.blockbufs) if not rec.mord else None, tr.spill_bytes, tr.reload_bytes, tr.remat_bytes, tr.elided_bytes,
          len(tr.res), tr.act_func, len(tr.consts), len(tr.const_tiles), len(tr.names),
          len(tr.prints), tr.shared_idx, frozenset(tr.dirty), tr.line_override, tr.fast,
          tuple(allocs), carried)
    return st, _nums(tr, bbs, nblk)


KEEP_STATES = 8    # _SlotStates kept per tracer (the last used): one per set of block tensors


def _slot_part(tr, rec, bbs):
    """The buffers' part of a snapshot: the buffers other than those of the block tensors the
    loop uses (whose buffers the replay's allocator calls manage) must be as they were, up to
    their release ticks: their ids, owners (_owner_key) and tags; and how many buffers the
    block tensors have. Kept by the tracer per set of block tensors and brought up to date
    from the buffers changed since it was last used (_SlotState), so that a snapshot costs
    what changed, not what exists; the full walk (_slot_walk) with the reference paths, and
    beside it as a check under NCSIM_NKI_TRACE_ORACLE."""
    states = tr.slot_states
    d = C.SLOT_DIRTY
    if d:
        for sv in states.values():
            sv.dirty |= d
        d.clear()
    if not C._fast[0]:
        return _slot_walk(tr, rec, bbs)
    key = tuple([bb.ordinal for bb in bbs])
    sv = states.pop(key, None)
    if sv is None:
        sv = _SlotState(tr, rec, bbs)
        if len(states) >= KEEP_STATES:
            del states[next(iter(states))]       # the one used longest ago
    else:
        sv.update(tr.slots)
    states[key] = sv                             # (last in the order: used last)
    out = tuple(sv.ids), tuple(sv.owners), tuple(sv.tags), sv.nblk
    if rec.check:
        ref = _slot_walk(tr, rec, bbs)
        if ref != out:
            raise AssertionError("steady-state snapshot: the buffers kept up to date differ "
                                 "from a full walk of them")
    return out


def _blocks_ok(rec, bbs, tr):
    """May an owner be a block's token that counts as free (_owner_key)? Only in a second
    pass (a first pass gives every block a private buffer, outside tr.slots)."""
    return bool(bbs) and tr.live is not None


def _owner_key(o, bmap, blocks):
    """A buffer's owner as a snapshot compares it: "~" if the buffer is free or held by a
    block of the loop's block tensors (bmap: ordinal -> BlockBuf; the replay's allocator
    calls and releases keep such a buffer as the full trace would), else the owner's id."""
    if o is None:
        return "~"
    if blocks and type(o) is weakref.ref:
        a = o()                 # an Alloc's token: is the Alloc a live block of these tensors?
        if a is not None and a.blk is not None:
            bb, blk = a.blk
            if bmap.get(bb.ordinal) is bb and bb.allocs.get(blk) is a:
                return "~"
    return id(o)


_SL_ID, _SL_OWNER, _SL_TAG = attrgetter("id"), attrgetter("_owner"), attrgetter("_tag")


class _SlotState:
    """_slot_part's lists for one set of block tensors: the buffers outside their sites, in
    tr.slots order, with their ids, owners (_owner_key) and tags as of its last use. Made by
    one walk; then the buffers made since (tr.slots only grows) are appended and those whose
    owner or tag was set since (Slot.owner/tag enter _core.SLOT_DIRTY, which every kept
    state's `dirty` receives) are looked at again. A buffer's _owner_key can change only
    with its owner: a block's token owns its Alloc's buffer and no other, and an Alloc
    leaves its tensor's blocks (release_blocks) only after giving its buffer up."""
    __slots__ = ("bmap", "blocks", "bsites", "n", "pos", "ids", "owners", "tags", "nblk",
                 "dirty")

    # (no reference to the tracer, which holds it: a cycle would keep the whole trace alive
    # after the lowering, for the cycle collector to find)
    def __init__(self, tr, rec, bbs):
        self.dirty = set()
        self.bmap = {bb.ordinal: bb for bb in bbs}
        self.blocks = _blocks_ok(rec, bbs, tr)
        self.bsites = {id(bb.site) for bb in bbs}
        self.n = 0
        self.pos = {}
        self.ids, self.owners, self.tags = [], [], []
        self.nblk = 0
        self._grow(tr.slots)

    def _grow(self, slots):
        new = slots[self.n:]
        self.n = len(slots)
        bsites = self.bsites
        keep = [sl for sl in new if id(sl.site) not in bsites] if bsites else new
        self.nblk += len(new) - len(keep)
        j = len(self.ids)
        self.pos.update(zip(keep, range(j, j + len(keep))))
        self.ids.extend(map(_SL_ID, keep))
        self.tags.extend(map(_SL_TAG, keep))
        if self.blocks:
            bmap, wref = self.bmap, weakref.ref
            self.owners.extend(["~" if o is None else id(o) if type(o) is not wref else
                                _owner_key(o, bmap, True) for o in map(_SL_OWNER, keep)])
        else:
            self.owners.extend(["~" if o is None else id(o) for o in map(_SL_OWNER, keep)])

    def update(self, slots):
        if len(slots) != self.n:
            self._grow(slots)
        pos, owners, tags, bmap, blocks = self.pos, self.owners, self.tags, self.bmap, self.blocks
        for sl in self.dirty:
            j = pos.get(sl)
            if j is not None:
                owners[j] = _owner_key(sl._owner, bmap, blocks)
                tags[j] = sl._tag
        self.dirty.clear()


def _slot_walk(tr, rec, bbs):
    """_slot_part by a walk over every buffer of the kernel (the reference)."""
    bsites = {id(bb.site) for bb in bbs}
    # the tokens of these tensors' blocks, which may own a buffer of another site (a first
    # pass gives every block a private buffer, outside tr.slots, so none there)
    btok = {id(a.token) for bb in bbs for a in bb.allocs.values()} \
        if _blocks_ok(rec, bbs, tr) else None
    slots = [sl for sl in tr.slots if id(sl.site) not in bsites] if bsites else tr.slots
    if btok:
        owners = tuple(["~" if o is None or id(o) in btok else id(o)
                        for o in [sl.owner for sl in slots]])
    else:
        owners = tuple(["~" if o is None else id(o) for o in [sl.owner for sl in slots]])
    return (tuple([sl.id for sl in slots]), owners, tuple([sl.tag for sl in slots]),
            len(tr.slots) - len(slots))


def _bbs(rec):
    """The block tensors whose state the snapshots compare: those the recorded iterations
    used, less those they made (a tensor made in an iteration is used by it only: Recorder.other;
    the buffers its blocks held are compared as other buffers are, so a block still held at
    the iteration's end makes the windows differ)."""
    mord = rec.mord
    if mord:
        return [rec.bbs[k] for k in sorted(rec.bbs) if k not in mord]
    return [rec.bbs[k] for k in sorted(rec.bbs)]


def _nums(tr, bbs, nblk=None):
    """_snapshot's counters (nblk: the block tensors' buffers, counted here if None)."""
    if nblk is None:
        bsites = {id(bb.site) for bb in bbs}
        nblk = sum(1 for sl in tr.slots if id(sl.site) in bsites) if bsites else 0
    # last: nl.rand's call counter (the base of each call's counters; set by the replay)
    return (tr.tick, tr.loaded, tr.rr["load"], tr.rr["store"], len(tr.nodes)) + \
        tuple(tr.count) + (len(tr.uses), nblk) + \
        tuple(x for bb in bbs for x in (bb.live, bb.peak, len(bb.allocs), len(bb.used),
                                        bb.remat_bytes, bb.reissued)) + \
        (len(tr.blockbufs), tr.rand_calls)


def _period(iters, snaps):
    """The shortest period P (iterations) whose last NWIN windows agree, with the values'
    and the counters' steps per window; or None."""
    n = len(iters)
    for P in range(1, MAXP + 1):
        if n - WARM < NWIN * P:
            break
        w0 = n - NWIN * P
        # the snapshots first: comparing them costs little (the windows' events more)
        ss = [snaps[w0 + w * P] for w in range(NWIN + 1)]     # snaps[i]: before iteration i
        if any(s[0] != ss[0][0] for s in ss[1:]):
            continue
        dn = tuple(b - a for a, b in zip(ss[0][1], ss[1][1]))
        if any(tuple(b - a for a, b in zip(ss[w][1], ss[w + 1][1])) != dn
               for w in range(1, NWIN)):
            continue
        wins = []
        for w in range(NWIN):
            ev = []
            for it in iters[w0 + w * P:w0 + (w + 1) * P]:
                ev.extend(it)
            wins.append(ev)
        tpl = [t for t, _ in wins[0]]
        if any(not _same_win(tpl, [t for t, _ in wv]) for wv in wins[1:]):
            continue
        steps = [tuple(b - a for a, b in zip(x[1], y[1])) for x, y in zip(wins[0], wins[1])]
        ok = True
        for w in range(2, NWIN):
            for x, y, s in zip(wins[w - 1], wins[w], steps):
                if tuple(b - a for a, b in zip(x[1], y[1])) != s:
                    ok = False
                    break
            if not ok:
                break
        if not ok:
            continue
        return P, wins[-1], steps, dn
    return None


def _twin(x, y):
    """Are block tensors x and y (made in two windows) made alike?"""
    return (x.kind, x.dtype, x.shape, x.bshape, x.name, x.line, x.lazy_zero, x.fill, x.sunk) == \
        (y.kind, y.dtype, y.shape, y.bshape, y.name, y.line, y.lazy_zero, y.fill, y.sunk) and \
        x.direct is None and y.direct is None and x.psave is None and y.psave is None and \
        x.tpts is None and y.tpts is None and x.scratch is None and y.scratch is None


def _ren(a, b, fwd):
    """_same_win's comparison of two templates' parts: block tensors through fwd."""
    if a is b:
        return True
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is tuple:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if x is not y and not _ren(x, y, fwd):
                return False
        return True
    if ta is C.BlockBuf:
        return fwd.get(id(a)) is b
    return a == b


def _same_win(ta, tb):
    """Are two windows' templates (lists) the same, up to a renaming of the block tensors made
    in them (the k-th made in one, at its "N" event, is the k-th made in the other, made alike:
    _twin)? Every other object must be the same. (A tensor made in an iteration is used by it
    only, Recorder.other, so the windows name disjoint made tensors.)"""
    if ta == tb:
        return True
    if len(ta) != len(tb):
        return False
    fwd = {}
    for t, u in zip(ta, tb):
        if t is u or t == u:
            continue
        if t[0] == "N":
            if u[0] != "N" or t[2] != u[2] or id(t[1]) in fwd or not _twin(t[1], u[1]):
                return False
            fwd[id(t[1])] = u[1]
        elif not _ren(t, u, fwd):
            return False
    return True


def _same_evs(got, exp):
    """The events of the iterations after a replay (got) are the predicted ones (exp), up to
    the block tensors made in them."""
    if got == exp:
        return True
    return len(got) == len(exp) and [v for _, v in got] == [v for _, v in exp] and \
        _same_win([t for t, _ in exp], [t for t, _ in got])


# ---- a loop statement's later runs (docs/nki.md, "Loops kept": *Later runs*)

# objects a later run may have anew or in another order: a block tensor made per run, its
# allocation site, a tile's buffer (a site's rotation in another phase)
_RENAMED = (C.BlockBuf, C.Site, C.Slot)


def _same(a, b, fwd, back):
    """Are templates a (a remembered run's) and b (this run's) the same, up to a consistent
    one-to-one renaming of block tensors and their sites (fwd: id(a's) -> b's; back: id(b's)
    -> a's)? Everything else must be equal (other buffers: the same objects)."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is tuple or ta is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b):
            if x is not y and not _same(x, y, fwd, back):
                return False
        return True
    if ta in _RENAMED:
        x = fwd.get(id(a))
        if x is not None:
            return x is b
        if id(b) in back:
            return False
        if ta is C.BlockBuf:
            if (a.kind, a.dtype, a.shape, a.lazy_zero, a.fill is None, a.sunk) != \
                    (b.kind, b.dtype, b.shape, b.lazy_zero, b.fill is None, b.sunk):
                return False
        elif ta is C.Slot:
            # a buffer of the same size and memory, of the same site up to the renaming
            if a.kind != b.kind or a.size != b.size or \
                    (a.site is not b.site and not _same(a.site, b.site, fwd, back)):
                return False
        fwd[id(a)] = b
        back[id(b)] = a
        return True
    return a == b


def _known(tr, key, iters, snaps):
    """A later run of a loop statement: after its warm-up and one window of a period P that an
    earlier run (the same statement, trip count and index step) proved steady, is the state at
    both ends of that window the same, do its counters grow as that run's did per window, and
    are its events that run's window's, up to the block tensors (made anew per run)? Then that
    run's steps stand for this window's, as `_period`'s result; else None (the recording goes
    on, windows compared as in a first run)."""
    known = tr.steady_known.get(key)
    if not known:
        return None
    n = len(iters)
    for P, tpl, steps, dn in known:
        if n != WARM + P:
            continue
        s0, s1 = snaps[WARM], snaps[n]
        if s0[0] != s1[0] or tuple(b - a for a, b in zip(s0[1], s1[1])) != dn:
            continue
        win = []
        for it in iters[WARM:]:
            win.extend(it)
        if len(win) != len(tpl):
            continue
        fwd, back = {}, {}
        if all(t is u or _same(t, u, fwd, back) for t, (u, _) in zip(tpl, win)):
            return P, win, steps, dn
    return None


def _remember(tr, key, found):
    P, win, steps, dn = found
    known = tr.steady_known.setdefault(key, [])
    tpl = [t for t, _ in win]
    _int = int.__int__
    steps = [tuple(map(_int, st)) for st in steps]
    dn = tuple(map(_int, dn))
    for k in known:
        if k[0] == P and k[3] == dn and k[2] == steps and k[1] == tpl:
            return
    if len(known) >= KNOWN:
        del known[0]
    known.append((P, tpl, steps, dn))


# ---- replay

def _fmt(parts):
    """A %-format that _join(parts, vals) equals as `fmt % vals` (ints)."""
    return "%d".join(p.replace("%", "%%") for p in parts)


def _replay(tr, win, steps, times, own, rec=None):
    """Run the bookkeeping of `times` more windows after `win` (the last traced one); own:
    the loop's Recorder; rec: the Recorder to forward the replayed events to its enclosing
    loop's (own, or None)."""
    sink = [] if rec is not None else None
    psum = own.psum        # PSUM blocks the recording saw, and those the replay allocates
    seen = own.seen
    # (plain ints: values made from the loop index are _steady.Idx, whose comparisons in the
    # dependence tracking would each be a Python call)
    _int = int.__int__
    win = [(tpl, tuple(map(_int, vals))) for tpl, vals in win]
    steps = [tuple(map(_int, st)) for st in steps]
    # per event, what does not change from one window to the next: its template's format
    # (`_join` as one %-format), and its numbers, advanced by their steps once per window
    prog = []
    log = tr.acclog is not None and not tr.fast
    for (tpl, vals), st in zip(win, steps):
        kind = tpl[0]
        if kind == "E" and log:
            prog.append((tpl, st, _fmt(tpl[2]), _log_plan(tr, tpl, vals)))
        elif kind == "E" and tr.fast:
            # (ag, internal, where the blocks' numbers start, the blocks (BlockBuf, write,
            # loaded), whether any carries a PSUM accumulation state)
            pb = tpl[8] + sum(2 * nd + (type(key) is C.BlockBuf) for key, nd, _ in tpl[5])
            ag = C.ENG_ID[tpl[1]] if tpl[3] is None else len(C.ENGINES) + tpl[3]
            prog.append((tpl, st, None, (ag, tpl[4], pb, tuple(x[:3] for x in tpl[9]),
                                         any(x[3] is not None for x in tpl[9]))))
        elif kind == "E":
            keys = tuple((key, nd, w, type(key) is C.BlockBuf) for key, nd, w in tpl[5])
            prog.append((tpl, st, _fmt(tpl[2]), keys))
        elif kind in ("L1", "L2"):
            prog.append((tpl, st, _fmt(tpl[2]), None))
        elif kind == "S":
            prog.append((tpl, st, _fmt(tpl[4][1]) if tpl[4] is not None else None, None))
        else:
            prog.append((tpl, st, None, None))
    cur = [vals for _, vals in win]
    prog = [(tpl, st if any(st) else None, fmt, keys) for tpl, st, fmt, keys in prog]
    memo = [None] * len(prog)   # per event whose numbers do not move: its log entry and text
    if times >= BULK_MIN and (log or tr.fast) and _bulk_ok(prog):
        # windows without allocator decisions: the first two replayed event by event, the
        # middle ones made in bulk from them (_bulk), the last event by event again (its
        # releases leave the buffers as the full trace does)
        n0, a0 = len(tr.nodes), len(tr.acclog) if log else 0
        _windows(tr, prog, cur, memo, 1, sink, psum, seen, log)
        n1, a1, t1, c1 = len(tr.nodes), len(tr.acclog) if log else 0, tr.tick, list(tr.count)
        _windows(tr, prog, cur, memo, 1, sink, psum, seen, log)
        _bulk(tr, prog, cur, times - 3, sink, log, (n0, n1, len(tr.nodes)),
              (a0, a1, len(tr.acclog) if log else 0), tr.tick - t1,
              [b - a for a, b in zip(c1, tr.count)])
        _windows(tr, prog, cur, memo, 1, sink, psum, seen, log)
    else:
        _windows(tr, prog, cur, memo, times, sink, psum, seen, log)
    if sink:
        rec.forward(sink)


def _windows(tr, prog, cur, memo, times, sink, psum, seen, log):
    """_replay's event-by-event path: `times` windows, cur (each event's numbers in the last
    window done) advanced."""
    emit = tr.replay_emit
    fast = tr.fast
    BlockBuf = C.BlockBuf
    Node = C.Node
    uses, count, live, load, nodes = tr.uses, tr.count, tr.live, tr.load, tr.nodes
    acclog = tr.acclog
    pin = tr.pinned > 0
    # the block tensors made in the window ("N"): the template's -> this window's
    ren = {}
    rg = ren.get
    for _k in range(times):
        for j, (tpl, st, fmt, keys) in enumerate(prog):
            if st is None:
                v = cur[j]      # (numbers that do not move: a release, a fixed load)
            else:
                v = cur[j] = tuple(map(_add, cur[j], st))
            if sink is not None:
                sink.append((tpl, v))
            kind = tpl[0]
            if kind == "E" and fast:
                # a first pass that a second will replace: no dependences and no text, only the
                # blocks' liveness and the counters (Tracer.replay_emit, _replayed_blocks,
                # block_used's first-pass part and _emit_tail, inlined)
                ag, internal, p, bk, acc = keys
                if bk:
                    if acc:
                        _set_acc(tpl[9], [(rg(bb, bb), v[p + jj], w, ld)
                                          for jj, (bb, w, ld) in enumerate(bk)], psum, seen)
                    tick = tr.tick
                    for bb, w, ld in bk:
                        if ren:
                            bb = rg(bb, bb)
                        blk = v[p]
                        p += 1
                        a = bb.allocs.get(blk)
                        if a is None or a.slot is None:
                            raise Mismatch("a replayed instruction's block has no buffer")
                        ukey = (bb.ordinal, blk)
                        lst = uses.get(ukey)
                        if lst is None:
                            uses[ukey] = [tick]
                        elif lst[-1] != tick:
                            lst.append(tick)
                        if w:
                            a.written = True
                            if not ld:
                                bb.pure = False
                            if a.remat is not None:
                                if ld:
                                    a.remat.append(REPLAYED)
                                else:
                                    a.remat = None
                count[ag] += 1
                if not internal:
                    tr.tick += 1
            elif kind == "E" and log:
                # the node's entry of the access log, picked from the event's numbers (the
                # boxes' bounds, already flat), its memories' numbers and flags (_log_plan)
                consts, blocks, pick, tmap, bpos, acc, head = keys
                got = memo[j] if st is None else None
                if got is not None:
                    # numbers that do not move and no block's buffer: the same accesses and
                    # text as the last time
                    picked, text, brefs = got
                else:
                    if blocks:
                        ms = []
                        for bb, pos in blocks:
                            if ren:
                                bb = rg(bb, bb)
                            a = bb.allocs.get(v[pos])
                            if a is None or a.slot is None:
                                raise Mismatch("a replayed instruction's block has no buffer")
                            sl = a.slot
                            m = sl.recs
                            ms.append(m if m is not None else tr._mem(sl))
                            if tmap:
                                ms.append(sl.offset)
                        x = v + consts + tuple(ms)
                    else:
                        x = v + consts
                    picked = pick(x) if pick is not None else ()
                    if tmap:
                        tv = list(v[:tpl[8]])
                        for jj, qq in tmap:
                            tv[jj] += x[qq]
                        text = fmt % tuple(tv)
                    else:
                        text = fmt % v[:tpl[8]]
                    if not bpos:
                        brefs = ()
                    elif ren:
                        brefs = [(rg(bb, bb), v[q], w, ld) for bb, q, w, ld in bpos]
                    else:
                        brefs = [(bb, v[q], w, ld) for bb, q, w, ld in bpos]
                    if st is None and not blocks:
                        memo[j] = (picked, text, brefs)
                # Tracer.replay_emit's work with the log, inlined: the blocks' uses
                # (_replayed_blocks, block_used's second-pass part), the log entry, the node,
                # the counters, the release of blocks last used here (release_blocks)
                e, ag, queue, internal, line, inc, cost = head
                if brefs:
                    if acc:
                        _set_acc(tpl[9], brefs, psum, seen)
                    if live is not None:
                        blks = []
                        for bb, blk, w, ld in brefs:
                            a = bb.allocs.get(blk)
                            if a is None or a.slot is None:
                                raise Mismatch("a replayed instruction's block has no buffer")
                            if w:
                                a.written = True
                                if a.remat is not None:
                                    if ld:
                                        a.remat.append(REPLAYED)
                                    else:
                                        a.remat = None
                            blks.append(a)
                    else:
                        blks = tr._replayed_blocks(brefs)
                else:
                    blks = None
                idx = count[ag]
                acclog.append(ag)
                acclog.append(idx)
                acclog += picked
                acclog.append(-1)
                nodes.append(Node(e, text, line, None, ag, idx, cost, pin))
                count[ag] = idx + 1
                if queue is None:
                    load[e] += inc
                if not internal:
                    if blks and live is not None:
                        tr.release_blocks(blks)
                    tr.tick += 1
            elif kind == "E":
                nt = tpl[8]
                p = nt
                accs = []
                for key, nd, w, isblk in keys:
                    if isblk:
                        a = rg(key, key).allocs.get(v[p])
                        if a is None or a.slot is None:
                            raise Mismatch("a replayed instruction's block has no buffer")
                        key = a.slot
                        p += 1
                    q = p + 2 * nd
                    accs.append((key, tuple(zip(v[p:q:2], v[p + 1:q:2])), w))
                    p = q
                tmap = tpl[10]
                if tmap:
                    tv = list(v[:nt])
                    for jj, qq in tmap:
                        tv[jj] += accs[qq][0].offset
                    text = fmt % tuple(tv)
                else:
                    text = fmt % v[:nt]
                bk = tpl[9]
                if bk:
                    brefs = [(rg(bb, bb), v[p + jj], w, ld) for jj, (bb, w, ld, _) in enumerate(bk)]
                    _set_acc(bk, brefs, psum, seen)
                else:
                    brefs = ()
                emit(tpl[1], text, accs, tpl[3], tpl[4], tpl[6], tpl[7], brefs)
            elif kind == "B":
                bb = rg(tpl[1], tpl[1])
                a = bb.allocs.get(v[0])
                if a is not None and a.slot is not None:
                    # the full trace allocates nothing here (block_alloc finds the block's
                    # buffer): the block existed before the loop, unlike the windows' ones
                    raise Mismatch("a replayed allocation finds its block allocated")
                if bb.kind == "psum":
                    psum.add((bb.ordinal, v[0]))
                if a is not None:
                    # (Tracer.block_alloc would reload it: not what the windows did)
                    raise Mismatch("while replaying: a spilled block is reloaded")
                # Tracer.block_alloc without its recording (tr.steady is the replay's Guard)
                if tpl[2] is None:
                    tr._block_alloc(bb, v[0], None)
                else:
                    # its fill's instruction gets the line the full trace gives it
                    old = tr.line_override
                    tr.line_override = tpl[2]
                    try:
                        tr._block_alloc(bb, v[0], None)
                    finally:
                        tr.line_override = old
            elif kind == "N":
                ren[tpl[1]] = _remake(tr, tpl[1], tpl[2])
            elif kind == "R":
                tpl[1].owner = None
                tpl[1].freed = tr.tick
            elif kind == "S":
                _replay_sink(tr, tpl, fmt, v, rg(tpl[1], tpl[1]))
            elif kind == "U":
                _, bb, slot, nbytes = tpl
                bb = rg(bb, bb)
                got = tr._pick_slot(bb.kind, bb.fbytes, bb.site)
                if got is not slot:
                    raise Mismatch("a replayed load at a use takes another buffer")
                slot.owner = object()      # an Alloc's token (Tracer.sunk_read's): until its R
                slot.tag = None
                bb.remat_bytes += nbytes
                bb.reissued += 1
                bb.used.add(slot.id)
            elif kind == "L1":
                _, bid, parts, dtn, shape, site, n, ref, nt = tpl
                if type(ref) is BlockBuf:
                    key = (bid, fmt % v[:nt - 1], dtn, shape)
                    a = rg(ref, ref).allocs.get(v[nt - 1])
                    if a is None or a.slot is None:
                        raise Mismatch("a replayed load's block has no buffer")
                    slot = a.slot
                else:
                    key = (bid, fmt % v[:nt], dtn, shape)
                    slot = ref
                tr.loads.setdefault(key, []).append((site, v[-1], n))
                slot.tag = site
            else:
                key = (tpl[1], fmt % v, tpl[3], tpl[4])
                tr.nload[key] = tr.nload.get(key, 0) + 1


BULK_MIN = 4       # replayed windows from which the middle ones are made in bulk (_bulk)


def _bulk_ok(prog):
    """May _bulk make this loop's middle windows? Only when no event of a window asks the
    allocator or a block anything: instructions that use no block, load records of plain
    tiles, load counts and releases (of tiles the replay never takes again)."""
    for tpl, st, fmt, keys in prog:
        kind = tpl[0]
        if kind == "E":
            if tpl[9] or tpl[10] or any(type(key) is C.BlockBuf for key, _, _ in tpl[5]):
                return False
        elif kind == "L1":
            if type(tpl[7]) is C.BlockBuf:
                return False
        elif kind not in ("L2", "R"):
            return False
    return True


_IDX, _ENG, _LINE, _AGENT, _COST, _PIN = (attrgetter(x) for x in
                                          ("idx", "eng", "line", "agent", "cost", "pin"))


def _cols(v, st, m):
    """Per number of an event, its values in the m windows after the one of v (st its steps
    per window): ranges, or repeats of a number that does not move."""
    return [range(a + s, a + (m + 1) * s, s) if s else repeat(a, m) for a, s in zip(v, st)]


def _rows(v, st, m):
    """The numbers of an event in the m windows after the one of v, one tuple per window
    (m copies of v when none moves, or when there are none)."""
    return zip(*_cols(v, st, m)) if any(st) else repeat(tuple(v), m)


def _kmajor(per, m):
    """Lists of m items per event -> one list, window by window (the events' order within)."""
    n = len(per)
    out = [None] * (n * m)
    for i, x in enumerate(per):
        out[i::n] = x
    return out


def _bulk(tr, prog, cur, m, sink, log, nodes, acc, dtick, dcount):
    """The m windows after the last replayed one (cur: each event's numbers there) made in bulk
    from the two replayed before them, event by event (_bulk_ok: no allocator decisions):
    each node a copy of that window's with its index moved by its agent's instructions per
    window and its text's numbers by their steps; the access log's entries (every number in
    them moves by the same amount from one window to the next: the agents' indices, the
    boxes' bounds; the memories' numbers and flags do not) that window's plus a multiple of
    the difference from the one before; the load records and counts made from the keys'
    formats, window by window in the events' order as the event path makes them; the
    counters (tick, instructions per agent) advanced by m windows' worth, each engine's
    estimated load by its instructions' estimates added one by one (floats: the same sums).
    Releases are not repeated: the last window (event by event) frees the same buffers at
    the ticks the full trace gives, and the heaps' entries of the middle windows' releases
    would be stale."""
    n0, n1, n2 = nodes
    if m <= 0:
        return
    evs = [(tpl, st, fmt) for tpl, st, fmt, _ in prog]
    if log:
        nds = tr.nodes
        w1, w2 = nds[n0:n1], nds[n1:n2]
        texts = []
        k = 0
        for j, (tpl, st, fmt) in enumerate(evs):
            if tpl[0] != "E":
                continue
            nd = w2[k]
            k += 1
            nt = tpl[8]
            if st is None or not any(st[:nt]):
                texts.append(repeat(nd.text, m))
            else:
                texts.append(map(fmt.__mod__, zip(*_cols(cur[j][:nt], st[:nt], m))))
        if len(w2) != k or len(w1) != k:
            raise Mismatch("internal: a bulk window's nodes are not its instructions")
        # per window the same engines, lines, agents, costs and pins; the indices moved by
        # their agents' instructions per window
        i2 = np.fromiter(map(_IDX, w2), np.int64, k)
        di = i2 - np.fromiter(map(_IDX, w1), np.int64, k)
        idxs = (i2 + np.arange(1, m + 1, dtype=np.int64)[:, None] * di).ravel().tolist()
        nds += map(C.Node, list(map(_ENG, w2)) * m, _kmajor([list(x) for x in texts], m),
                   list(map(_LINE, w2)) * m, repeat(None), list(map(_AGENT, w2)) * m, idxs,
                   list(map(_COST, w2)) * m, list(map(_PIN, w2)) * m)
        a0, a1, a2 = acc
        lg = tr.acclog
        s1 = np.asarray(lg[a0:a1], dtype=np.int64)
        s2 = np.asarray(lg[a1:a2], dtype=np.int64)
        if s1.shape != s2.shape:
            raise Mismatch("internal: a bulk window's log entries differ in length")
        lg += (s2 + np.arange(1, m + 1, dtype=np.int64)[:, None] * (s2 - s1)).ravel().tolist()
        load = tr.load
        incs = [(C.ENG_ID[tpl[1]], tpl[7]) for tpl, _, _ in evs
                if tpl[0] == "E" and tpl[3] is None]
        for _ in range(m):
            for e, inc in incs:
                load[e] += inc
    # load records (first pass) and load counts (second), window by window
    recs = []
    for j, (tpl, st, fmt) in enumerate(evs):
        kind = tpl[0]
        if kind == "L1":
            nt = tpl[8]
            v = cur[j]
            s = st if st is not None else (0,) * len(v)
            keys = map(fmt.__mod__, _rows(v[:nt], s[:nt], m))
            bid, dtn, shape, site, n = tpl[1], tpl[3], tpl[4], tpl[5], tpl[6]
            b = v[-1]
            ds = s[-1]
            bs = range(b + ds, b + (m + 1) * ds, ds) if ds else repeat(b, m)
            recs.append([((bid, key, dtn, shape), (site, bb, n)) for key, bb in zip(keys, bs)])
        elif kind == "L2":
            v = cur[j]
            s = st if st is not None else (0,) * len(v)
            bid, dtn, shape = tpl[1], tpl[3], tpl[4]
            recs.append([((bid, key, dtn, shape), None)
                         for key in map(fmt.__mod__, _rows(v, s, m))])
    if recs:
        loads, nload = tr.loads, tr.nload
        for key, r in _kmajor(recs, m):
            if r is None:
                nload[key] = nload.get(key, 0) + 1
            else:
                x = loads.get(key)
                if x is None:
                    loads[key] = [r]
                else:
                    x.append(r)
    if sink is not None:
        per = []
        for j, (tpl, st, fmt) in enumerate(evs):
            v = cur[j]
            per.append(list(zip(repeat(tpl, m), zip(*_cols(v, st, m)) if st is not None
                                else repeat(v, m))))
        sink += _kmajor(per, m)
    for j, (tpl, st, fmt) in enumerate(evs):
        if st is not None:
            cur[j] = tuple(a + m * s for a, s in zip(cur[j], st))
    tr.tick += m * dtick
    cnt = tr.count
    for ag, d in enumerate(dcount):
        if d:
            cnt[ag] += m * d


def _log_plan(tr, tpl, vals):
    """How a replayed instruction (event template tpl, vals its numbers in a window) makes its entry
    of the tracer's access log (Tracer._log: per access its memory's number, write + 2 * dims,
    the box's bounds) from its numbers v: (consts, blocks, pick, tmap, bpos, acc, head). The
    entry's accesses are pick(v + consts + ms): consts the memories' numbers and the flags
    known now, ms per block access its buffer's number (followed by the buffer's offset when
    tmap), the buffer found by blocks [(BlockBuf, where its block number is in v)]; tmap [(j,
    where in that tuple)]: the text's numbers j moved by a block buffer's offset (rec_emit);
    bpos: the blocks the instruction uses, (BlockBuf, where its number is in v, write,
    loaded); acc: whether one of them carries a PSUM accumulation state (_set_acc); head: the
    engine, agent, queue, internal, line, estimate and the scheduler's cost, which is the
    event's (its instruction's name and operand types are the template's)."""
    p = tpl[8]
    consts = []
    blocks = []
    idx = []
    boff = {}               # access -> where its block buffer's offset is
    per = 2 if tpl[10] else 1
    for k, (key, nd, w) in enumerate(tpl[5]):
        if type(key) is C.BlockBuf:
            b = per * len(blocks)
            blocks.append((key, p))
            p += 1
            idx.append(("m", b))
            boff[k] = ("m", b + 1)
        else:
            m = key.recs
            consts.append(m if m is not None else tr._mem(key))
            idx.append(("c", len(consts) - 1))
        consts.append(2 * nd + (1 if w else 0))
        idx.append(("c", len(consts) - 1))
        idx.extend(range(p, p + 2 * nd))
        p += 2 * nd
    nc = len(consts)
    nv = len(vals)

    def at(x):
        if type(x) is int:
            return x
        return nv + x[1] if x[0] == "c" else nv + nc + x[1]
    idx = [at(x) for x in idx]
    pick = operator.itemgetter(*idx) if idx else None      # (never one index: two per access)
    tmap = tuple((j, at(boff[q])) for j, q in tpl[10])
    eng, queue, inc = tpl[1], tpl[3], tpl[7]
    e = C.ENG_ID[eng]
    ag = e if queue is None else len(C.ENGINES) + queue
    nd = C.Node(e, _fmt(tpl[2]) % vals[:tpl[8]], 0, None, ag, 0)
    C._sched.annotate(nd, None, queue, inc, 0)
    head = (e, ag, queue, tpl[4], tpl[6], inc, nd.cost)
    bpos = tuple((bb, p + jj, w, ld) for jj, (bb, w, ld, _) in enumerate(tpl[9]))
    acc = any(x[3] is not None for x in tpl[9])
    return tuple(consts), tuple(blocks), pick, tmap, bpos, acc, head


def _set_acc(bk, brefs, psum, seen):
    """Before a replayed instruction: its PSUM blocks' accumulation state as the recorded
    instruction found it (rec_emit). A block neither allocated by the replay nor seen by the
    recording holds a state made before the loop, which the windows did not show: the kernel
    is lowered again in full."""
    for (_, _, _, st), (bb, blk, _, _) in zip(bk, brefs):
        if st is not None:
            a = bb.allocs.get(blk)
            if a is None:
                raise Mismatch("a replayed instruction's PSUM block has no buffer")
            if (bb.ordinal, blk) not in psum and not seen((bb.ordinal, blk)):
                raise Mismatch("a replayed instruction uses a PSUM block from before the loop")
            a.lazy_zero = st[0]
            a.acc_started = set(st[1])


def _remake(tr, tb, bsite):
    """A block tensor made in a replayed window, as the window's template tb was made
    (Tracer.new_blocks, then what the kernel's call set: a fill or a lazy zero)."""
    if tb.direct is not None or tb.psave is not None or tb.tpts is not None or \
            tb.scratch is not None:
        raise Mismatch("a block tensor made in a replayed window was spilled or placed")
    bb = tr.new_blocks(tb.kind, tb.dtype, tb.shape, len(tb.bshape), tb.name, bsite).buf
    bb.line = tb.line
    bb.lazy_zero = tb.lazy_zero
    bb.fill = tb.fill
    if bb.sunk != tb.sunk:
        raise Mismatch("a block tensor made in a replayed window has its loads elsewhere")
    return bb


def _replay_sink(tr, tpl, fmt, v, bb):
    """Tracer.sink_load of a replayed iteration: the block records its views (made from the
    recorded ones' layouts and the shifted offsets), the load counts as a tick and a load."""
    _, _, (ddt, dshape, dpdim, dst), (sbuf, sdt, sshape, spdim, sst), lt, nl = tpl
    blk, dp0, doff, sp0, soff = v[nl:]
    a = bb.allocs.get(blk)
    if a is not None and a.slot is not None and a.slot.id >= 0:
        raise Mismatch("a replayed load at uses finds a block with a buffer")
    if a is None:
        a = C.Alloc(C.Slot(-1, bb.kind, 0, bb.fbytes, None), bb.kind)    # no memory
        a.blk = (bb, blk)
        bb.allocs[blk] = a
    dv = C.Tensor(a.slot, None, ddt, dshape, dpdim, dp0, dst, doff)
    sv = C.Tensor(sbuf, None, sdt, sshape, spdim, sp0, sst, soff)
    a.remat = [(dv, sv)]
    a.written = True
    tr.tick += 1
    if lt is not None:
        key = (lt[0], fmt % v[:nl], lt[2], lt[3])
        tr.nload[key] = tr.nload.get(key, 0) + 1


def _keeps(tr, win, steps, times):
    """Would any replayed load (second pass) keep its data resident? Then no replay."""
    if tr.live is None:
        return False
    # per load count of the windows: its key's parts, %-format, numbers and steps (plain ints)
    evs = []
    _int = int.__int__
    for (tpl, vals), st in zip(win, steps):
        if tpl[0] == "S" and tpl[4] is not None:
            # a load at uses counts as a load of its data (Tracer.sink_load)
            lt, nl = tpl[4], tpl[5]
            evs.append((False, lt[0], _fmt(lt[1]), lt[2], lt[3],
                        tuple(map(_int, vals[:nl])), tuple(map(_int, st[:nl]))))
        elif tpl[0] == "L2":
            evs.append((True, tpl[1], _fmt(tpl[2]), tpl[3], tpl[4],
                        tuple(map(_int, vals)), tuple(map(_int, st))))
    if not evs:
        return False
    counts = {}
    nload = tr.nload
    keep = tr._keep
    for k in range(1, times + 1):
        for chk, bid, fmt, dtn, shape, vals, st in evs:
            key = (bid, fmt % tuple([a + k * s for a, s in zip(vals, st)]), dtn, shape)
            n = counts.get(key)
            if n is None:
                n = nload.get(key, 0)
            n += 1
            counts[key] = n
            if chk and keep(key, n - 1):
                return True
    return False


# ---- the loop

def iterate(tr, r, frame, outer, where):
    """LoopRange._iterate's body with steady-state tracing: yields the indices the kernel's
    code sees (all of them, or a prefix and the last ones)."""
    n = len(r)
    scopes = tr.scopes
    depth = len(scopes)
    parent = tr.steady
    rec = None
    why = None
    # a short loop (MIN_SHORT..MIN_ITERS-1 iterations, outside any recorded loop) is recorded
    # when its body is large: its first run's first iteration is recorded and measured, and
    # the recording stops there below BIG_BODY events (later runs of the statement then record
    # nothing). (Inside a recorded loop, a short loop's iterations are in the enclosing
    # windows: the enclosing replay saves them.)
    short = MIN_SHORT <= n < MIN_ITERS and parent is None
    size = tr.steady_size.get(where) if short else None
    if short and size is not None and (size < BIG_BODY or where in tr.steady_short_refused):
        why = tr.steady_short_refused.get(where) or _small(n, size)
    elif n >= MIN_ITERS or short:
        why = _body_ok(frame)
        if why is None:
            rec = Recorder()
            rec.local = _local_names(frame)
            rec.parent = parent
    skipped = 0
    iters, snaps = [], []
    found = None
    i = 0
    tail_check = None
    kkey = (where, n, r[1] - r[0] if n > 1 else 0) if rec is not None and KNOWN_ON else None
    known = kkey is not None and kkey in tr.steady_known
    try:
        if rec is not None:
            tr.steady = rec
            # (the state before a warm-up iteration is never compared: _period's windows
            # start after them)
            if tr.pending is not None:
                rec.refuse("an instruction is pending at the iteration's end")
            snaps.append(None if WARM > 0 else _snapshot(tr, rec, frame, outer))
            while i < n and rec.bad is None and i < LIMIT:
                rec.warm = i < WARM
                scopes.append([])
                yield Idx(r[i])
                tr.end_iteration(frame, outer, where)
                rec.warm = False
                i += 1
                iters.append(rec.ev)
                rec.ev = []
                rec.mine = set()
                if size is None and short:
                    size = tr.steady_size[where] = len(iters[0])
                    if size < BIG_BODY:
                        break
                snaps.append(_snapshot(tr, rec, frame, outer) if i >= WARM else None)
                if rec.bad is None and known and i - WARM <= MAXP:
                    found = _known(tr, kkey, iters, snaps)
                    if found is not None:
                        tr.steady_reused += 1
                        break
                if rec.bad is None and i - WARM >= NWIN:
                    found = _period(iters, snaps)
                    if found is not None:
                        if kkey is not None:
                            _remember(tr, kkey, found)
                        break
            tr.steady = parent
            for it in iters:
                rec.forward(it)
            why = rec.bad or (None if found is not None else _small(n, size)
                              if short and size < BIG_BODY else "no steady state within "
                              f"{i} iterations")
            if short and found is None and size >= BIG_BODY:
                # a short loop's recording that did not pay is not tried again in this pass
                # (its first iteration's recording could refuse an inner loop's replay in
                # every run)
                tr.steady_short_refused[where] = why
            if found is not None and rec.bad is None:
                P, win, steps, dn = found
                # windows replayed: at least P iterations stay, checked to continue the
                # replayed sequence; P + 1 when a mask compares the index, the last of them
                # run freely (a mask's condition on the index changes once at most: a ragged
                # last tile is the last iteration)
                times = (n - i - P - (1 if rec.mask else 0)) // P
                if times > 0 and not _keeps(tr, win, steps, times):
                    before = snaps[-1][1]
                    tr.steady = Guard()
                    try:
                        _replay(tr, win, steps, times, rec, rec if parent is not None else None)
                    finally:
                        tr.steady = parent
                    after = _nums(tr, _bbs(rec))
                    want = tuple(b + times * d for b, d in zip(before, dn))
                    # replayed: tick, nodes, counts; set: the others (loaded, rr, freed)
                    _set_counters(tr, want)
                    # (the block tensors' counters -- live blocks, buffers -- are the
                    # allocator's own, run by the replay)
                    chk = (0, 4) + tuple(range(5, 5 + len(tr.count)))
                    if any(after[j] != want[j] for j in chk):
                        raise Mismatch("the replay's counters differ from the prediction")
                    i += times * P
                    skipped = times * P
                    tail_check = (rec, win, steps, times + 1, P, snaps[-1], dn, times)
                    tr.stats_steady(times * P)
        if tail_check is not None:
            rec, win, steps, k, P, snap0, dn, times = tail_check
            rec.ev = []
            rec.bad = None
            tr.steady = rec
            got = []
            for j in range(P):
                scopes.append([])
                yield Idx(r[i])
                tr.end_iteration(frame, outer, where)
                i += 1
                got.extend(rec.ev)
                rec.ev = []
                rec.mine = set()
            tr.steady = parent
            rec.forward(got)
            exp = [(t, tuple(a + k * s for a, s in zip(v, st))) for (t, v), st in zip(win, steps)]
            snap = _snapshot(tr, rec, frame, outer)
            if rec.bad is not None or not _same_evs(got, exp) or snap[0] != snap0[0] or \
                    snap[1][:5 + len(tr.count)] != tuple(
                        b + (times + 1) * d for b, d in zip(snap0[1], dn))[:5 + len(tr.count)]:
                raise Mismatch(rec.bad or "the iterations after the replay do not continue it")
        while i < n:
            scopes.append([])
            yield r[i]
            tr.end_iteration(frame, outer, where)
            i += 1
        if n >= MIN_ITERS or short:
            _log(tr, where, n, skipped, why)
    finally:
        tr.steady = parent
        del scopes[depth:]


def _small(n, size):
    return (f"a short loop ({n} iterations) whose first iteration made {size} events "
            f"(recorded from {BIG_BODY})")


def _set_counters(tr, want):
    tr.loaded = want[1]
    tr.rr["load"] = want[2]
    tr.rr["store"] = want[3]
    tr.rand_calls = want[-1]    # nl.rand calls the replayed windows stand for


def _log(tr, where, n, skipped, why):
    """Per loop statement (file, line): iterations, how many were replayed, and the first
    reason one of its runs was traced in full (Lowered.loops)."""
    e = tr.steady_log.get(where)
    if e is None:
        e = tr.steady_log[where] = {"file": where[0], "line": where[1], "runs": 0,
                                    "iterations": 0, "replayed": 0, "refused": None}
    e["runs"] += 1
    e["iterations"] += n
    e["replayed"] += skipped
    if not skipped and e["refused"] is None:
        e["refused"] = why
