"""The lowering's dependence pass, scheduler, waits and loop folding in C
(python/ncsim/nki/_native.py over libncsim's api/nki_passes.c) against their Python references
(Tracer._access and _access_ref, _sched.py, _fold.py): the same dependences, order, waits and
folded lines, on the accesses, node lists and streams of the catalog and corpus kernels and on
random ones; bad arrays and logs refused with a message; the policy and environment switches;
lowering without the library."""
import os
import random
import subprocess
import sys

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.typing as nt
from ncsim.nki import _core, _fold, _native, _sched
from ncsim.nki.examples.catalog import CASES

from test_nki_corpus import NAMES as CORPUS_NAMES, load as load_corpus, kernel_of

N_ENG, N_Q = 5, 16

pytestmark = pytest.mark.skipif(not _native.available(), reason="libncsim did not load")


class Node:
    __slots__ = ("eng", "agent", "idx", "deps", "cost", "pin", "waits", "tag", "text", "line")

    def __init__(self, eng, agent, idx, deps, cost, pin, tag):
        self.eng, self.agent, self.idx, self.deps = eng, agent, idx, deps
        self.cost, self.pin, self.waits, self.tag = cost, pin, None, tag
        # a text whose offset steps with the node's place in its agent, so that runs fold
        self.text = f"op{agent % 3} sb:fp32@0:128+{64 * idx}[1x8]"
        self.line = 10 + tag // 50


def _fresh(spec):
    return [Node(*s, tag=k) for k, s in enumerate(spec)]


def _result(order):
    return [(nd.tag, nd.idx, nd.waits) for nd in order]


def _both(spec, window):
    """Schedule and wait the node list spec both ways; the results must agree."""
    py = _sched.run(_fresh(spec), window, N_ENG, N_Q, native=False)
    c = _sched.run(_fresh(spec), window, N_ENG, N_Q, native=True)
    assert _result(c) == _result(py)
    return py


def _capture(monkeypatch, lower):
    """The node lists and engine streams that lowering gives the scheduler and the fold."""
    specs, streams = [], []
    run, fold = _sched.run, _fold.fold

    def run_spy(nodes, window, n_engines, n_queues, native=False):
        specs.append(([(nd.eng, nd.agent, nd.idx, list(nd.deps), nd.cost, nd.pin)
                       for nd in nodes], window))
        return run(nodes, window, n_engines, n_queues, native)

    def fold_spy(lines, fast=True, native=False):
        streams.append(list(lines))
        return fold(lines, fast, native)
    monkeypatch.setattr(_sched, "run", run_spy)
    monkeypatch.setattr(_fold, "fold", fold_spy)
    text = lower()
    monkeypatch.undo()
    return text, specs, streams


def _check_kernel(monkeypatch, kernel, args):
    text_py, specs, streams = _capture(
        monkeypatch, lambda: nki.lower(kernel, *args, policy={"native_passes": "python"}).text)
    assert specs and streams
    for spec, window in specs:
        _both(spec, window)
        _both(spec, 3)           # a narrow window reorders differently
    for lines in streams:
        assert _native.fold(lines) == _fold.fold(lines, True, False)
    # with the C passes the tracer logs the accesses and the C dependence pass reads the log:
    # per node, the dependences the Python tracer found (its own accesses left out)
    logs = []
    real = _native.deps_c

    def deps_spy(log, n, mem_ext, n_agents):
        got = real(log, n, mem_ext, n_agents)
        logs.append(got)
        return got
    monkeypatch.setattr(_native, "deps_c", deps_spy)
    assert nki.lower(kernel, *args, policy={"native_passes": "c"}).text == text_py
    monkeypatch.undo()
    # (under NCSIM_NKI_TRACE_ORACLE each lowering runs the reference paths too: a second spec,
    # their dependences, which must be the same)
    assert len(logs) == 1 and len(specs) in (1, 2)
    for spec, _ in specs:
        _same_deps(spec, *logs[0])


def _same_deps(spec, offsets, pairs):
    """The C pass's dependences (offsets, pairs) are, node by node, the distinct ones of spec
    [(eng, agent, index, deps, ...)] less the node's own."""
    assert len(offsets) == len(spec) + 1
    for p, (_, ag, idx, deps, *_) in enumerate(spec):
        got = list(zip(pairs[2 * offsets[p]:2 * offsets[p + 1]:2],
                       pairs[2 * offsets[p] + 1:2 * offsets[p + 1]:2]))
        assert len(got) == len(set(got)), f"node {p}: a dependence given twice"
        assert set(got) == set(deps) - {(ag, idx)}, f"node {p}"


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_catalog_kernels_both_ways(monkeypatch, case):
    """Every catalog kernel at its moderate size (small where it has no moderate one)."""
    size = "moderate" if "moderate" in case.sizes else "small"
    kernel, _ = case.load()
    _check_kernel(monkeypatch, kernel, case.args(size, 0, timing=True))


@pytest.mark.parametrize("name", CORPUS_NAMES)
def test_corpus_kernels_both_ways(monkeypatch, name):
    mod = load_corpus(name)
    args = mod.inputs(mod.SIZES["small"], np.random.default_rng(0))
    _check_kernel(monkeypatch, kernel_of(mod, "small"),   # an SPMD kernel on its grid
                  [nt.tensor[[*a.shape], str(a.dtype)] for a in args])


# ---- random node lists

def _random_spec(rng, n):
    """n nodes in trace order: engines and transfers (issued by an engine, on a queue), each
    depending on a few earlier instructions of any agent (its own included), costs with ties,
    some pinned."""
    count = [0] * (N_ENG + N_Q)
    spec = []
    for p in range(n):
        eng = rng.randrange(N_ENG)
        agent = eng if rng.random() < 0.6 else N_ENG + rng.randrange(4 if rng.random() < .8 else N_Q)
        deps = []
        for _ in range(rng.choice((0, 1, 1, 2, 3, 5))):
            a = rng.randrange(N_ENG + N_Q)
            if count[a]:
                deps.append((a, rng.randrange(max(0, count[a] - 6), count[a])))
        if agent >= N_ENG:
            cost = (float(rng.choice((100, 140, 280, 1000))), float(rng.choice((1300, 0, 50))))
        else:
            cost = float(rng.choice((0, 50, 64 / 1.4, 100, 300))) * rng.choice((1.0, 1.0, 3.0))
        spec.append((eng, agent, count[agent], deps, cost, rng.random() < 0.05))
        count[agent] += 1
    return spec


SEMS = [f"s_{e}" for e in ("sp", "pe", "act", "dve", "pool")] + [f"s_q{q}" for q in range(N_Q)]
ENGS = ("sp", "pe", "act", "dve", "pool")


def _write_both(spec, window, fold=True):
    """The .sem lines and engine streams written in C (_native.run_and_write) and in Python
    (_sched.write after _sched.run): the same lines."""
    py = _sched.write(_sched.run(_fresh(spec), window, N_ENG, N_Q), SEMS, ENGS, fold, True,
                      False)
    nodes, tail = _native.run_and_write(_fresh(spec), window, N_ENG, N_Q, _sched.ISSUE_NS,
                                        SEMS, ENGS, fold)
    assert tail is not None
    assert tail.split("\n") == py if py else tail == ""
    return py


@pytest.mark.parametrize("seed", range(40))
def test_random_node_lists(seed):
    rng = random.Random(seed)
    spec = _random_spec(rng, rng.choice((1, 2, 5, 30, 200, 800)))
    for window in (0, 1, 2, 3, 8, 64):
        _both(spec, window)
    for window in (2, 64):
        for fold in (True, False):
            _write_both(spec, window, fold)


def test_writer_declines_what_it_cannot_write():
    """A source line that is not an int, a text that is not ASCII or holds a line break: the
    C writer declines, and the nodes come back scheduled with their waits, for the Python
    writer (what _sched.run gives)."""
    spec = _random_spec(random.Random(3), 120)
    want = _result(_sched.run(_fresh(spec), 64, N_ENG, N_Q))
    for k, attr, value in ((5, "line", None), (7, "line", "file.py:3"), (9, "text", "op \u00e9"),
                           (11, "text", "op a\nb"), (13, "line", 2 ** 70)):
        nodes = _fresh(spec)
        setattr(nodes[k], attr, value)
        got, tail = _native.run_and_write(nodes, 64, N_ENG, N_Q, _sched.ISSUE_NS, SEMS, ENGS,
                                          True)
        assert tail is None and _result(got) == want, (attr, value)


def test_random_lists_do_reorder():
    """The comparison above is not vacuous: on these lists the scheduler changes the order
    and the waits name other instructions than in the trace order."""
    spec = _random_spec(random.Random(7), 400)
    wide = _both(spec, 64)
    assert [nd.tag for nd in wide] != list(range(400))
    assert sum(1 for nd in wide if nd.waits) > 50
    # and the writer's: nops for waits beyond two, posts, source lines
    lines = _write_both(spec, 64)
    for word in ("nop |", "| post", ".loc"):
        assert sum(word in ln for ln in lines) > 3, word


def _streaming_spec(iters):
    """A loop of `iters` iterations as the tracer gives it: SP loads a tile on queue 0, ScalarE
    and VectorE work on it, SP stores the result on queue 1, each following the one before;
    the next iteration's load overwrites the tile the store reads (double-buffered: two
    iterations back)."""
    spec = []
    for i in range(iters):
        ld = [(N_ENG + 1, i - 2)] if i >= 2 else []
        spec.append((0, N_ENG, i, ld, (1000.0, 1300.0), False))
        spec.append((2, 2, i, [(N_ENG, i)], 300.0, False))
        spec.append((3, 3, i, [(2, i)], 500.0, False))
        spec.append((0, N_ENG + 1, i, [(3, i)], (1000.0, 1300.0), False))
    return spec


def test_streaming_loop_written_as_loops():
    """The writer on a regular loop: the same lines as Python's, folded into .loop nests."""
    spec = _streaming_spec(60)
    lines = _write_both(spec, 64)
    assert sum(".loop" in ln for ln in lines) >= 3
    assert len(lines) * 2 < 4 * 60      # half the unfolded instruction lines
    for window in (0, 2, 5):
        _write_both(spec, window)


def _random_stream(rng):
    """Lines of one engine's stream with runs that repeat with periods, offsets and wait
    values stepping, nested, and the odd irregular line."""
    lines = []
    for _ in range(rng.randrange(1, 6)):
        outer, inner = rng.randrange(1, 6), rng.randrange(1, 12)
        base, so, si = rng.randrange(0, 4096), rng.choice((0, 64, 512, -64)), \
            rng.choice((0, 4, 128, 1))
        w = rng.randrange(1, 5)
        for o in range(outer):
            if rng.random() < 0.7:
                lines.append(f"    .loc {rng.choice((10, 11))}")
            lines.append(f"    act_op sb:fp32@0:128+{base + 4096 + o * so}[1x8] | wait s_pe >= "
                         f"{w + o}")
            for i in range(inner):
                off = base + o * so + i * si
                if off < 0:
                    off = 0
                lines.append(f"    dve_op sb:fp32@0:128+{off}[1x8], p:f32@0:128+00{i}[2x2]")
                if rng.random() < 0.03:
                    lines.append("    nop | wait s_q0 >= 3 | post s_dve")
    return lines


@pytest.mark.parametrize("seed", range(40))
def test_random_streams(seed):
    lines = _random_stream(random.Random(seed))
    out = _native.fold(lines)
    assert out == _fold.fold(lines, True, False) == _fold.fold(lines, False)


def _random_immediates(rng):
    """Lines with integer immediates `base=N` stepping (up or down, through negative values)
    beside offsets, and lines where base= does not form a progression."""
    lines = []
    for _ in range(rng.randrange(1, 5)):
        n, b0 = rng.randrange(1, 14), rng.randrange(-600, 600)
        sb, so = rng.choice((0, 1, 128, -128, 16384)), rng.choice((0, 512))
        square = rng.random() < 0.2
        for i in range(n):
            b = b0 + (i * i if square else i * sb)
            lines.append(f"    iota sb:i32@0:128+{1024 + i * so}[1x128], base={b}, pstep=128, "
                         f"steps=[1] | wait s_dve >= {i + 1}")
            if rng.random() < 0.5:
                lines.append(f"    affine_select sb:fp32@0:128+0[1x8], sb:fp32@0:128+64[1x8], "
                             f"base={-b}, pstep=-1, steps=[1], cmp=ge, fill=0.0")
            if rng.random() < 0.5:
                # integer operands (a field's end: ',', ' |' or the line's end), floats beside
                lines.append(f"    tensor_scalar sb:i32@0:128+0[1x8], sb:i32@0:128+0[1x8], "
                             f"bitwise_xor, {b}, add, {float(b)!r}" +
                             rng.choice(("", f" | wait s_pe >= {i}", ", 3")))
            if rng.random() < 0.3:
                # items of a [...] list are not immediates of the fold
                lines.append(f"    shuffle sb:fp32@0:128+0[1x8], sb:fp32@0:128+64[1x8], "
                             f"mask=[{b}, 1, {-b}], steps=[1, {i}]")
    return lines


@pytest.mark.parametrize("seed", range(30))
def test_random_streams_with_immediates(seed):
    lines = _random_immediates(random.Random(seed))
    out = _native.fold(lines)
    assert out == _fold.fold(lines, True, False) == _fold.fold(lines, False)


def test_fold_immediates_hand_made():
    """iota bases 5, 133, 261, ... fold as base=(5+128*iD); a negative start keeps its sign."""
    for b0, want in ((5, "base=(5+128*i0)"), (-300, "base=(-300+128*i0)")):
        lines = [f"    iota sb:i32@0:128+0[1x128], base={b0 + 128 * k}, pstep=0, steps=[1]"
                 for k in range(6)]
        out = _native.fold(lines)
        assert out == _fold.fold(lines, True, False)
        assert out[0] == "    .loop i0 = 0, 6" and want in out[1], out
    # floats are never numbers of the fold: written as they are, never as expressions
    for fl in (lambda k: f"{k + 0.5!r}", lambda k: f"{10.0 ** (20 + k)!r}", lambda k: "-inf"
               if k % 2 else "nan"):
        lines = [f"    tensor_scalar sb:fp32@0:128+0[1x8], sb:fp32@0:128+0[1x8], add, {fl(k)}"
                 for k in range(6)]
        assert _native.fold(lines) == _fold.fold(lines, True, False)
        out = "\n".join(_native.fold(lines))
        assert "*i0" not in out and all(fl(k) in out for k in range(6))
    # nor are the items of a [...] list (steps=, mask=): written as they are
    lines = [f"    iota sb:i32@0:128+0[1x128], base=0, pstep=0, steps=[1, {k}, 2]"
             for k in range(6)]
    assert _native.fold(lines) == _fold.fold(lines, True, False) == lines


def test_fold_hand_made():
    """test_nki_fold.test_inner_loops_first's stream, in C."""
    lines = []
    for r in range(2):
        lines.append(f"    act_op sb:fp32@0:128+{4096 * r}[1x8] | wait s_pe >= {r + 1}")
        lines += [f"    dve_op sb:fp32@0:128+{4096 * r + 64 * k}[1x8]" for k in range(8)]
    out = _native.fold(lines)
    assert out[0] == "    .loop i0 = 0, 2"
    assert "            dve_op sb:fp32@0:128+((0+4096*i0)+64*i1)[1x8]" in out
    assert len(out) == 6


def test_fold_texts_it_leaves_to_python():
    """Non-ASCII text, a line break inside a line, a number of 2^62 or more: the C fold
    declines (None) and _fold.fold gives the Python result."""
    base = [f"    op x+{64 * k}[1] | wait s_pe >= {k}" for k in range(6)]
    for lines in (base + ["    op \u00e9+1[2]"], base[:3] + ["    op a\nb"] + base[3:],
                  base + [f"    op x+{2 ** 62}[1]"]):
        assert _native.fold(lines) is None
        assert _fold.fold(lines, True, True) == _fold.fold(lines, True, False)
    for lines in ([], [""], ["", ""], ["  ", "x"] * 3):
        assert _native.fold(lines) == _fold.fold(lines, True, False)
    # leading zeros and blanks: the numbers are rewritten as Python's int() and str() do
    odd = ["\t  op x+007[1]", "op x+008[1]", "op x+009[1]", "op x+010[1]", "op x+011[1]"]
    assert _native.fold(odd) == _fold.fold(odd, True, False)


# ---- the dependence pass on random access logs

class _RefTracer:
    """What Tracer._access and _access_ref read of the tracer."""
    _access = _core.Tracer._access
    _access_ref = _core.Tracer._access_ref

    def __init__(self):
        self.exact = None


def _memories():
    """Two SBUF buffers and HBM tensors of 1, 2 and 3 dims; per memory its box's dims."""
    return [(_core.Slot(0, "sbuf", 0, 256, None), 2), (_core.Slot(1, "sbuf", 256, 64, None), 2),
            (_core.HbmBuf("a", None, (300, 40), "input", 0), 2),
            (_core.HbmBuf("b", None, (4, 6, 10), "output", 0), 3),
            (_core.HbmBuf("c", None, (50,), "input", 0), 1)]


def _extents(key):
    if isinstance(key, _core.Slot):
        return [128, key.size]
    sh = key.shape
    return [sh[0], sh[1] if len(sh) > 1 else 1]


def _random_box(rng, ext):
    box = []
    for n in ext:
        k = rng.random()
        if k < 0.2:
            lo, hi = 0, n                            # the whole dim
        elif k < 0.6:
            lo = rng.randrange(n)
            hi = lo + 1 + rng.randrange(max(1, min(n - lo, 4)))   # a narrow slice
        else:
            lo = rng.randrange(n)
            hi = rng.randrange(lo + 1, n + 1)
        box.append((lo, hi))
    return tuple(box)


def _random_log(rng, n):
    """n nodes of 0-3 accesses each to the memories of _memories: [(agent, index, [(memory,
    box, write)])]."""
    count = [0] * (N_ENG + N_Q)
    out = []
    mems = _memories()
    for _ in range(n):
        ag = rng.randrange(N_ENG + N_Q) if rng.random() < 0.5 else rng.randrange(4)
        accs = []
        for _ in range(rng.randrange(4)):
            m = rng.randrange(len(mems))
            key, nd = mems[m]
            ext = [128, key.size] if isinstance(key, _core.Slot) else list(key.shape)
            accs.append((m, _random_box(rng, ext), rng.random() < 0.4))
        out.append((ag, count[ag], accs))
        count[ag] += 1
    return out


def _python_deps(nodes, grid):
    """Per node, the dependences Tracer._access (grid) or _access_ref finds: a spec as
    _same_deps reads it."""
    mems = [k for k, _ in _memories()]
    t = _RefTracer()
    spec = []
    for ag, idx, accs in nodes:
        t.exact = []
        for m, box, w in accs:
            (t._access if grid else t._access_ref)(mems[m], box, w, ag, idx, {})
        spec.append((0, ag, idx, list(t.exact)))
    return spec


def _c_deps(nodes):
    mems = [k for k, _ in _memories()]
    log = []
    for ag, idx, accs in nodes:
        log += [ag, idx]
        for m, box, w in accs:
            log += [m, 2 * len(box) + w]
            for lo, hi in box:
                log += [lo, hi]
        log.append(-1)
    ext = [e for k in mems for e in _extents(k)]
    return _native.deps_c(log, len(nodes), ext, N_ENG + N_Q)


@pytest.mark.parametrize("seed", range(12))
def test_random_access_logs(seed):
    """The C dependence pass against Tracer._access and _access_ref on random accesses (boxes
    of whole dims, narrow slices and ranges; reads and writes; many agents and few)."""
    rng = random.Random(seed)
    nodes = _random_log(rng, rng.choice((5, 40, 400)))
    got = _c_deps(nodes)
    _same_deps(_python_deps(nodes, True), *got)
    _same_deps(_python_deps(nodes, False), *got)


def test_many_records_in_one_cell():
    """A write of a whole buffer, then hundreds of reads of its columns by one engine, none
    covering another (the index's cells narrowed in both passes), then writes and reads."""
    rng = random.Random(5)
    nodes = [(0, 0, [(0, ((0, 128), (0, 256)), True)])]
    for k in range(600):
        c = rng.randrange(256)
        nodes.append((1, k, [(0, ((0, 128), (c, c + 1)), False)]))
    for k in range(50):
        lo = rng.randrange(256)
        nodes.append((2 + k % 2, k // 2, [(0, ((0, 128), (lo, min(256, lo + 5))), k % 3 == 0)]))
    got = _c_deps(nodes)
    _same_deps(_python_deps(nodes, True), *got)
    _same_deps(_python_deps(nodes, False), *got)


def test_bad_logs_are_refused():
    with pytest.raises(RuntimeError, match="dependence pass refused.*memory 3 out of range"):
        _native.deps_c([0, 0, 3, 4, 0, 1, 0, 1, -1], 1, [128, 64], N_ENG + N_Q)
    with pytest.raises(RuntimeError, match="the log ends at node 1"):
        _native.deps_c([0, 0, -1], 2, [], N_ENG + N_Q)
    offsets, pairs = _native.deps_c([], 0, [], N_ENG + N_Q)
    assert list(offsets) == [0] and len(pairs) == 0


# ---- bad arrays: refused with a message, no crash

def _nodes(spec):
    return _native.Nodes(_fresh(spec))


def test_bad_arrays_are_refused():
    good = [(0, 0, 0, [], 10.0, False), (1, 1, 0, [(0, 0)], 10.0, False)]
    a = _nodes(good)
    order = _native.schedule_c(a, 64, N_ENG, N_Q, 50.0)
    assert list(order) == [0, 1]
    cases = [
        ([(0, 0, 0, [], 10.0, False), (1, 1, 0, [(0, 5)], 10.0, False)], "dependence on instruction 5"),
        ([(0, 0, 0, [], 10.0, False), (1, 1, 0, [(99, 0)], 10.0, False)], "agent 99"),
        ([(0, 40, 0, [], 10.0, False)], "agent 40"),
        ([(9, 0, 0, [], 10.0, False)], "engine 9"),
        ([(0, 0, 0, [], float("nan"), False)], "cost"),
        ([(0, 0, 0, [(1, 0)], 1.0, False), (1, 1, 0, [(0, 0)], 1.0, False)], "cycle"),
    ]
    for spec, words in cases:
        with pytest.raises(RuntimeError, match=words):
            _native.schedule_c(_nodes(spec), 64, N_ENG, N_Q, 50.0)
    # the waits: indices given twice, an order that is not a permutation or puts a
    # dependence after its node
    twice = _nodes([(0, 0, 0, [], 1.0, False), (0, 0, 0, [], 1.0, False)])
    with pytest.raises(RuntimeError, match="given twice"):
        _native.waits_c(twice, _native.array("q", [0, 1]), N_ENG, N_Q)
    with pytest.raises(RuntimeError, match="order"):
        _native.waits_c(a, _native.array("q", [1, 1]), N_ENG, N_Q)
    with pytest.raises(RuntimeError, match="puts later"):
        _native.waits_c(a, _native.array("q", [1, 0]), N_ENG, N_Q)
    with pytest.raises(RuntimeError, match="engines"):
        _native.schedule_c(a, 64, 0, N_Q, 50.0)
    with pytest.raises(RuntimeError, match="not an .agent, index. pair"):
        _nodes([(0, 0, 0, [(0, 0, 0)], 1.0, False)])


# ---- which implementation runs

def test_policy_and_environment_pick_the_implementation(monkeypatch):
    from ncsim.nki.examples.catalog import BY_NAME
    case = BY_NAME["adamw"]
    kernel, _ = case.load()
    args = case.args("small", 0, timing=True)
    calls = []
    real = _native.schedule_c
    monkeypatch.setattr(_native, "schedule_c", lambda *a: calls.append(1) or real(*a))
    logged = []
    real_deps = _native.deps_c
    monkeypatch.setattr(_native, "deps_c", lambda *a: logged.append(1) or real_deps(*a))
    nki.lower(kernel, *args)
    assert calls, "the default (auto) runs the C passes where libncsim loads"
    assert logged, "... and finds the dependences from the access log in C"
    calls.clear()
    nki.lower(kernel, *args, policy={"native_passes": "python"})
    nki.lower(kernel, *args, policy={"fast_trace": False})     # the reference: Python
    monkeypatch.setenv("NCSIM_NKI_PASSES", "python")
    nki.lower(kernel, *args)
    assert not calls
    assert len(logged) == 1, "the access log goes with the C passes"
    monkeypatch.setenv("NCSIM_NKI_PASSES", "c")
    nki.lower(kernel, *args)
    assert calls
    monkeypatch.setenv("NCSIM_NKI_PASSES", "fortran")
    # (errors while lowering reach the user as an NkiError naming the kernel and the cause)
    with pytest.raises(Exception, match="NCSIM_NKI_PASSES='fortran': expected one of"):
        nki.lower(kernel, *args)
    monkeypatch.delenv("NCSIM_NKI_PASSES")
    with pytest.raises(nki.NkiError,
                       match="err_invalid_policy.*native_passes='fast': must be auto, c or python"):
        nki.lower(kernel, *args, policy={"native_passes": "fast"})
    monkeypatch.setattr(_native, "_lib", [False])
    monkeypatch.setattr(_native, "_why", ["(test: not loaded)"])
    with pytest.raises(Exception, match="need libncsim, which did not load: .test: not"):
        nki.lower(kernel, *args, policy={"native_passes": "c"})
    assert nki.lower(kernel, *args).text      # auto: Python


def test_lowering_without_the_library(tmp_path):
    """With no libncsim to load, lowering to text still works (the Python passes) and gives
    the text the C passes give."""
    code = ("import sys; sys.path.insert(0, %r)\n"
            "from ncsim import nki\n"
            "from ncsim.nki import _native\n"
            "from ncsim.nki.examples.catalog import BY_NAME\n"
            "c = BY_NAME['matmul_tiled']; k, _ = c.load()\n"
            "assert not _native.available()\n"
            "sys.stdout.write(nki.lower(k, *c.args('moderate', 0, timing=True)).text)\n"
            % os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(nki.__file__)))))
    env = dict(os.environ, NCSIM_LIBRARY=str(tmp_path / "no-such-libncsim.so"))
    env.pop("NCSIM_NKI_TRACE_ORACLE", None)
    r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    from ncsim.nki.examples.catalog import BY_NAME
    c = BY_NAME["matmul_tiled"]
    k, _ = c.load()
    assert r.stdout == nki.lower(k, *c.args("moderate", 0, timing=True)).text
