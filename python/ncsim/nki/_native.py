"""The lowering's dependence pass, list scheduler, semaphore waits and loop folding in C
(libncsim's api/nki_passes.c), called through ctypes with the nodes as flat arrays (docs/nki.md,
"Cost of lowering").

The dependences: with the C passes the tracer logs every access (Tracer.acclog) instead of
finding each instruction's dependences as it emits it, and deps_c finds them all at the end;
the Python tracer's online search (Tracer._access, _access_ref) is the reference and the
fallback (fast_trace=False, native_passes="python", no libncsim, schedule_window 0 or 1).

The Python implementations (_sched.schedule and assign_waits, _fold.fold) stay: they are the
reference the C follows step by step (python/tests/nki/test_nki_native.py compares the two on
the catalog, the corpus and random node lists), and the fallback when libncsim cannot be loaded,
so that lowering to text needs no library. Which runs is Policy.native_passes:

- "auto" (the default): C when libncsim loads, else Python; the environment variable
  NCSIM_NKI_PASSES (auto, c or python) overrides it;
- "c": C, an ImportError when libncsim does not load;
- "python": the Python implementations.

The reference lowering (Policy.fast_trace=False, which the trace oracle compares with the
optimised one) always takes the Python implementations, so that every oracle run also checks
the C passes against them.

The C entry points (ncsim_nki_internal_*) are exported by libncsim but are not part of its
stable API (docs/api.md)."""
import ctypes
import os
from array import array
from itertools import accumulate, chain
from operator import attrgetter

CHOICES = ("auto", "c", "python")
ENV = "NCSIM_NKI_PASSES"
USAGE = 2                # NCSIM_USAGE (include/ncsim.h)

_lib = [None]            # the loaded library once tried (False: it did not load)
_why = [""]              # why it did not


def _load():
    if _lib[0] is None:
        try:
            from .. import _lib as L
            lib = L.lib
            vp, i32, i64, f64, sz = (ctypes.c_void_p, ctypes.c_int32, ctypes.c_int64,
                                     ctypes.c_double, ctypes.c_size_t)
            f = lib.ncsim_nki_internal_schedule
            f.restype = ctypes.c_int
            f.argtypes = [i64, vp, vp, vp, vp, vp, vp, i32, i32, i32, f64, vp]
            f = lib.ncsim_nki_internal_waits
            f.restype = ctypes.c_int
            f.argtypes = [i64, vp, vp, vp, vp, vp, vp, i32, i32, vp, vp, vp]
            f = lib.ncsim_nki_internal_streams
            f.restype = ctypes.c_int
            f.argtypes = [i64, vp, vp, vp, ctypes.c_char_p, sz, vp, vp, vp, vp,
                          ctypes.c_char_p, sz, i32, i32, ctypes.c_int, ctypes.POINTER(vp),
                          ctypes.POINTER(sz)]
            f = lib.ncsim_nki_internal_fold
            f.restype = ctypes.c_int
            f.argtypes = [ctypes.c_char_p, sz, i64, ctypes.POINTER(vp), ctypes.POINTER(sz)]
            f = lib.ncsim_nki_internal_deps
            f.restype = ctypes.c_int
            f.argtypes = [i64, vp, i64, i64, vp, i32, ctypes.POINTER(vp), ctypes.POINTER(vp)]
            _lib[0] = (lib, L)
        except (ImportError, OSError, AttributeError) as e:
            # AttributeError: a libncsim older than these entry points
            _lib[0] = False
            _why[0] = str(e)
    return _lib[0] or None


def available():
    """True when libncsim is loaded with the C passes."""
    return _load() is not None


def enabled(choice):
    """Whether the C passes run, for Policy.native_passes = choice."""
    if choice == "auto":
        choice = os.environ.get(ENV, "auto") or "auto"
        if choice not in CHOICES:
            raise ValueError(f"{ENV}={choice!r}: expected one of {', '.join(CHOICES)}")
    elif choice not in CHOICES:
        raise ValueError(f"lowering policy native_passes={choice!r}: expected one of "
                         f"{', '.join(CHOICES)}")
    if choice == "python":
        return False
    if choice == "c":
        if not available():
            raise ImportError("the lowering's C passes (native_passes='c') need libncsim, "
                              f"which did not load: {_why[0]}")
        return True
    return available()


def _fail(what):
    msg = _message() or "unknown error"
    raise RuntimeError(f"ncsim.nki: the C {what} refused the tracer's nodes (an internal "
                       f"error of the lowering): {msg}")


def _addr(a):
    return a.buffer_info()[0]


_agent, _eng, _idx, _deps, _cost, _pin = (attrgetter(x) for x in
                                          ("agent", "eng", "idx", "deps", "cost", "pin"))


class Nodes:
    """The tracer's nodes as the flat arrays the C passes read: agent, issuing engine, trace
    index, dependences (offsets + (agent, index) pairs), estimated cost (two per node: an
    engine's ns and 0, or a transfer's occupancy and latency), pinned. deps: the dependences
    as deps_c gives them ((offsets, pairs)), or None to take the nodes' .deps."""

    def __init__(self, nodes, deps=None):
        self.n = len(nodes)
        self.agent = array("i", map(_agent, nodes))
        self.eng = array("i", map(_eng, nodes))
        self.idx = array("i", map(_idx, nodes))
        if deps is not None:
            self.offsets, self.deps = deps
        else:
            deps = list(map(_deps, nodes))
            self.offsets = array("q", [0])
            self.offsets.extend(accumulate(map(len, deps)))
            self.deps = array("i", chain.from_iterable(chain.from_iterable(deps)))
        if len(self.offsets) != self.n + 1 or len(self.deps) != 2 * self.offsets[-1]:
            raise RuntimeError("ncsim.nki: a dependence that is not an (agent, index) pair "
                               "(an internal error of the lowering)")
        self.cost = array("d", chain.from_iterable(
            c if c.__class__ is tuple else (c, 0.0) for c in map(_cost, nodes)))
        self.pin = array("B", map(_pin, nodes))


def deps_c(log, n, mem_ext, n_agents):
    """Every node's dependences from the tracer's access log (Tracer.emit with
    Tracer.acclog; api/nki_passes.h, ncsim_nki_internal_deps): (offsets, pairs), arrays of n + 1
    int64 and 2 * offsets[n] int32, each node's distinct (agent, index) pairs. log: a sequence
    of ints (per node: agent, index, its accesses as (memory, write + 2 * dims, lo, hi, ...),
    -1); mem_ext: per memory its extents along dims 0 and 1."""
    lib, L = _load()
    lg = array("q", log)
    ext = array("q", mem_ext)
    po, pd = ctypes.c_void_p(), ctypes.c_void_p()
    st = lib.ncsim_nki_internal_deps(n, _addr(lg) if lg else None, len(lg), len(ext) // 2,
                                     _addr(ext) if ext else None, n_agents, ctypes.byref(po),
                                     ctypes.byref(pd))
    if st:
        _fail("dependence pass")
    offsets = array("q")
    offsets.frombytes(L.take_bytes(po, 8 * (n + 1)))
    deps = array("i")
    deps.frombytes(L.take_bytes(pd, 8 * offsets[-1]))
    return offsets, deps


def schedule_c(a, window, n_engines, n_queues, issue_ns):
    """The C list scheduler on Nodes a: the trace positions in the new order (an array)."""
    lib, _ = _load()
    order = array("q", bytes(8 * a.n))
    st = lib.ncsim_nki_internal_schedule(
        a.n, _addr(a.agent), _addr(a.eng), _addr(a.offsets), _addr(a.deps), _addr(a.cost),
        _addr(a.pin), window, n_engines, n_queues, issue_ns, _addr(order))
    if st:
        _fail("scheduler")
    return order


def waits_c(a, order, n_engines, n_queues):
    """The C semaphore waits of Nodes a in the given order: (new indices, wait offsets, wait
    pairs), each per position in that order."""
    lib, _ = _load()
    new_index = array("i", bytes(4 * a.n))
    offsets = array("q", bytes(8 * (a.n + 1)))
    waits = array("i", bytes(8 * max(1, a.offsets[-1])))
    st = lib.ncsim_nki_internal_waits(
        a.n, _addr(a.agent), _addr(a.eng), _addr(a.idx), _addr(a.offsets), _addr(a.deps),
        _addr(order), n_engines, n_queues, _addr(new_index), _addr(offsets), _addr(waits))
    if st:
        _fail("semaphore waits")
    return new_index, offsets, waits


def run(nodes, window, n_engines, n_queues, issue_ns, deps=None):
    """_sched.run's scheduling and waits in C: the nodes in their new order, each with its new
    index and waits (None or [(agent, index)]), as the Python passes leave them. deps: the
    nodes' dependences as deps_c gives them, or None to take their .deps."""
    if not nodes:
        return list(nodes)
    if deps is None and None in map(_deps, nodes):
        # an instruction without its dependences (_sched.run): the order and waits given stand
        return nodes
    a = Nodes(nodes, deps)
    order = schedule_c(a, window, n_engines, n_queues, issue_ns)
    return _apply(nodes, order, *waits_c(a, order, n_engines, n_queues))


_text, _line = attrgetter("text"), attrgetter("line")


def run_and_write(nodes, window, n_engines, n_queues, issue_ns, sem_names, engine_names,
                  fold, deps=None):
    """Tracer.finish's scheduling, waits and engine streams in C: (nodes, text), the text being
    the program's .sem declarations and .engine sections (folded into loops if fold), as
    Tracer.finish writes them from the scheduled nodes. The nodes come back in their new
    order, their idx and waits not updated (the text has them). (nodes, None) when the C
    writer does not take these nodes (an instruction without its dependences, a source line
    that is not an int, a text that is not ASCII or holds a line break, a number the fold does
    not take): the nodes are then scheduled and given their waits, for Tracer.finish to write.
    deps: the nodes' dependences as deps_c gives them, or None to take their .deps."""
    if not nodes or deps is None and None in map(_deps, nodes):
        return run(nodes, window, n_engines, n_queues, issue_ns, deps), None
    a = Nodes(nodes, deps)
    order = schedule_c(a, window, n_engines, n_queues, issue_ns)
    new_index, offsets, waits = waits_c(a, order, n_engines, n_queues)
    text = streams_c(nodes, a, order, new_index, offsets, waits, sem_names, engine_names,
                     fold)
    if text is None:
        return _apply(nodes, order, new_index, offsets, waits), None
    return list(map(nodes.__getitem__, order)), text


def streams_c(nodes, a, order, new_index, offsets, waits, sem_names, engine_names, fold):
    """The C writer of the .sem lines and engine streams (run_and_write), or None when it
    does not take these nodes."""
    try:
        lines = array("q", map(_line, nodes))
    except (TypeError, OverflowError):  # a source line that is not an int (of 64 bits)
        return None
    texts = "\n".join(map(_text, nodes))
    if not texts.isascii() or texts.count("\n") != len(nodes) - 1:
        return None
    lib, L = _load()
    tb = texts.encode("ascii")
    nb = "\n".join(list(sem_names) + list(engine_names)).encode("ascii")
    out, n = ctypes.c_void_p(), ctypes.c_size_t()
    st = lib.ncsim_nki_internal_streams(
        a.n, _addr(a.agent), _addr(a.eng), _addr(lines), tb, len(tb), _addr(order),
        _addr(new_index), _addr(offsets), _addr(waits), nb, len(nb), len(engine_names),
        len(sem_names) - len(engine_names), 1 if fold else 0, ctypes.byref(out),
        ctypes.byref(n))
    if st == USAGE and "not ASCII" in _message() or st == USAGE and "2^62" in _message():
        return None
    if st:
        _fail("program writer")
    return L.take_bytes(out, n.value).decode("ascii")


def _message():
    lib, _ = _load()
    info = lib.ncsim_last_error_info().contents
    return info.message.decode("utf-8", "replace") if info.message else ""


def _apply(nodes, order, new_index, offsets, waits):
    out = list(map(nodes.__getitem__, order))
    wo = offsets.tolist()
    wl = waits.tolist()
    pairs = list(zip(wl[0::2], wl[1::2]))
    for nd, i, lo, hi in zip(out, new_index.tolist(), wo, wo[1:]):
        nd.idx = i
        nd.waits = pairs[lo:hi] if hi > lo else None
    return out


def fold(lines):
    """_fold.fold(lines) in C: the folded lines, or None when the C fold does not take this
    text (not ASCII, a line holding a line break, a number of 2^62 or more): the Python fold
    then does."""
    if not lines:
        return []
    text = "\n".join(lines)
    if not text.isascii():
        return None
    lib, L = _load()
    b = text.encode("ascii")
    out, n = ctypes.c_void_p(), ctypes.c_size_t()
    st = lib.ncsim_nki_internal_fold(b, len(b), len(lines), ctypes.byref(out), ctypes.byref(n))
    if st == USAGE:                    # a text this fold does not take
        return None
    if st:
        _fail("fold")
    return L.take_bytes(out, n.value).decode("ascii").split("\n")
