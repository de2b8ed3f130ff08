"""The lowering's instruction scheduler (python/ncsim/nki/_sched.py, docs/nki.md "Scheduling"):
an order worked out by hand, the same results as the kernel's order, `ncsim check` clean, and
`ncc.no_reorder()` pinning the order."""

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.compiler as ncc
import ncsim.nki.language as nl
from ncsim.nki import _sched
from ncsim.nki.examples.catalog import BY_NAME, CASES

import shared_kernels  # noqa: E402  (python/tests/nki: the public NKIBench kernels)

SP, PE, ACT, DVE, POOL = range(5)
N_ENG, N_Q = 5, 16
Q0 = N_ENG + 0


class N:
    """A hand-made node: what the tracer gives the scheduler."""

    def __init__(self, name, eng, idx, deps=(), cost=100.0, agent=None, pin=False):
        self.name, self.eng, self.idx = name, eng, idx
        self.agent = eng if agent is None else agent
        self.deps = list(deps)
        self.cost = cost
        self.pin = pin
        self.waits = None

    def __repr__(self):
        return self.name


def run(nodes, window):
    return _sched.run(list(nodes), window, N_ENG, N_Q)


def test_hand_made_order_and_waits():
    """ScalarE: a1; VectorE: d1 (reads a1's result, 300 ns); ScalarE: a2 (reads d1's), a3
    (independent). Estimates: a1 0-100, d1 100-400; at 100 ScalarE can start a3, but a2 not
    before 400, so the scheduler puts a3 ahead of a2. d1 and a3 both can start at 100: the
    older (d1) is taken first. Waits: d1 on a1 (ScalarE's 1st), a2 on d1 (VectorE's 1st)."""
    a1 = N("a1", ACT, 0)
    d1 = N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0)
    a2 = N("a2", ACT, 1, deps=[(DVE, 0)])
    a3 = N("a3", ACT, 2)
    order = run([a1, d1, a2, a3], 64)
    assert [n.name for n in order] == ["a1", "d1", "a3", "a2"]
    assert [n.idx for n in order] == [0, 0, 1, 2]          # new places in their streams
    assert d1.waits == [(ACT, 0)]
    assert a2.waits == [(DVE, 0)]
    assert a1.waits is None and a3.waits is None


def test_window_of_one_keeps_the_order():
    a1 = N("a1", ACT, 0)
    d1 = N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0)
    a2 = N("a2", ACT, 1, deps=[(DVE, 0)])
    a3 = N("a3", ACT, 2)
    assert [n.name for n in run([a1, d1, a2, a3], 1)] == ["a1", "d1", "a2", "a3"]


def test_window_bounds_the_lookahead():
    """With a window of 3 the independent a3 (4th in trace order) is not a candidate while a2
    waits: it enters only once a1 is scheduled, and then before a2 (which waits for d1)."""
    mk = lambda: [N("a1", ACT, 0), N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0),
                  N("a2", ACT, 1, deps=[(DVE, 0)]), N("p1", POOL, 0, cost=1000.0),
                  N("a3", ACT, 2)]
    assert [n.name for n in run(mk(), 64)] == ["a1", "p1", "d1", "a3", "a2"]
    # window 2: after a1 only d1 and a2 are candidates, then p1 and a3 enter one by one
    assert [n.name for n in run(mk(), 2)] == ["a1", "d1", "p1", "a2", "a3"]


def test_own_engine_dependence_kept():
    """a3 overwrites what a2 reads (a write after a read on the same engine): the tracer needs
    no wait for it, the scheduler must not put a3 first."""
    a1 = N("a1", ACT, 0)
    d1 = N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0)
    a2 = N("a2", ACT, 1, deps=[(DVE, 0)])
    a3 = N("a3", ACT, 2, deps=[(ACT, 1)])
    assert [n.name for n in run([a1, d1, a2, a3], 64)] == ["a1", "d1", "a2", "a3"]
    assert a3.waits is None


def test_nodes_without_dependences_keep_the_order():
    """A node the tracer did not annotate (deps None) could hide a dependence: nothing moves."""
    a1 = N("a1", ACT, 0)
    d1 = N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0)
    a2 = N("a2", ACT, 1, deps=[(DVE, 0)])
    a3 = N("a3", ACT, 2)
    a3.deps = None
    nodes = [a1, d1, a2, a3]
    assert run(nodes, 64) == nodes


def test_pinned_nodes_keep_their_order():
    a1 = N("a1", ACT, 0)
    d1 = N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0)
    a2 = N("a2", ACT, 1, deps=[(DVE, 0)], pin=True)
    a3 = N("a3", ACT, 2, pin=True)
    assert [n.name for n in run([a1, d1, a2, a3], 64)] == ["a1", "d1", "a2", "a3"]


def test_transfer_waits_recomputed():
    """A load on queue 0 issued by SP; ScalarE's a1 reads it, d1 reads a1's result; a2 is
    independent. The wait on the queue names the transfer's new place."""
    l0 = N("l0", SP, 0, agent=Q0, cost=(1000.0, 1300.0))
    l1 = N("l1", SP, 1, agent=Q0, cost=(1000.0, 1300.0))
    a1 = N("a1", ACT, 0, deps=[(Q0, 1)])
    a2 = N("a2", ACT, 1, deps=[(Q0, 0)])
    order = run([l0, l1, a1, a2], 64)
    # a2's load arrives first: ScalarE takes a2 before a1
    assert [n.name for n in order] == ["l0", "l1", "a2", "a1"]
    assert a2.waits == [(Q0, 0)] and a1.waits == [(Q0, 1)]



def test_waits_computed_when_the_order_stays():
    """The tracer leaves every wait to the scheduler: when nothing moves, the scheduler still
    gives each node the waits of the kernel's order (d1 after a1; a2 after d1)."""
    a1 = N("a1", ACT, 0)
    d1 = N("d1", DVE, 0, deps=[(ACT, 0)], cost=300.0)
    a2 = N("a2", ACT, 1, deps=[(DVE, 0), (ACT, 0)])
    order = run([a1, d1, a2], 64)
    assert [n.name for n in order] == ["a1", "d1", "a2"]
    assert a1.waits is None and d1.waits == [(ACT, 0)] and a2.waits == [(DVE, 0)]


@pytest.mark.parametrize("name", ["matmul_basic", "transpose2d", "avgpool2d", "silu"])
def test_kernel_order_kept_gives_the_tracers_waits(name):
    """Kernels the scheduler leaves in their order: the program (its waits included) is the
    one lowered without a scheduler, whose waits the tracer computes as it emits."""
    kernel, _ = BY_NAME[name].load()
    args = BY_NAME[name].args("moderate", 0, timing=True)
    text = nki.lower(kernel, *args).text
    assert "wait " in text
    assert text == nki.lower(kernel, *args, policy={"schedule_window": 0}).text


# ---- kernels: the same results as in the kernel's order, and check-clean

def _outputs(case, size, policy):
    kernel, _ = case.load()
    out = nki.simulate_kernel(kernel, *case.args(size, 0), policy=policy)
    return [np.asarray(o) for o in (out if isinstance(out, (tuple, list)) else (out,))]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_scheduled_kernel_computes_what_the_unscheduled_one_does(case):
    """Every example at its small size: bit-identical outputs with and without the scheduler,
    those outputs match NumPy, and the scheduled program is `ncsim check` clean."""
    got = _outputs(case, "small", None)
    want = _outputs(case, "small", {"schedule_window": 0})
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert np.array_equal(g, w, equal_nan=True)
    kernel, ref = case.load()
    args = case.args("small", 0)
    r = ref(*args)
    atol, rtol = case.tol
    for g, w in zip(got, r if isinstance(r, (tuple, list)) else (r,)):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64),
                                   atol=atol, rtol=rtol)
    assert nki.check(kernel, *args) == []


def test_scheduler_reorders_adamw():
    """The adamw example's program changes order (the test above could not fail otherwise):
    ScalarE's scalings of the next sub-tile run ahead of this one's sqrt chain."""
    case = BY_NAME["adamw"]
    kernel, _ = case.load()
    args = case.args("small", 0)
    a = nki.lower(kernel, *args, policy={"fold_loops": False}).text
    b = nki.lower(kernel, *args, policy={"fold_loops": False, "schedule_window": 0}).text
    assert a != b
    # the same instructions per engine, in another order
    strip = lambda t: sorted(ln.split(" | ")[0].strip() for ln in t.splitlines()
                             if ln.startswith("    ") and not ln.strip().startswith((".loc", "nop")))
    assert strip(a) == strip(b)


def _body(x):
    out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    u = nl.exp(t)                   # ScalarE
    v = nl.multiply(u, u)           # VectorE, waits for u
    w = nl.exp(v)                   # ScalarE, waits for v
    z = nl.tanh(t)                  # ScalarE, independent: the scheduler puts it before w
    nl.store(out, value=nl.add(w, z))
    return out


@nki.jit
def _free(x):
    return _body(x)


@nki.jit
def _pinned(x):
    with ncc.no_reorder():
        return _body(x)


def test_no_reorder_pins_the_order():
    x = np.random.default_rng(3).random((128, 64), dtype=np.float32)
    opts = {"fold_loops": False}
    unscheduled = nki.lower(_free, x, policy=dict(opts, schedule_window=0)).text
    assert nki.lower(_free, x, policy=opts).text != unscheduled
    assert nki.lower(_pinned, x, policy=opts).text == \
        nki.lower(_pinned, x, policy=dict(opts, schedule_window=0)).text
    want = np.exp(np.exp(x) ** 2) + np.tanh(x)
    for k in (_free, _pinned):
        np.testing.assert_allclose(nki.simulate_kernel(k, x), want, rtol=1e-5)
        assert nki.check(k, x) == []


# ---- the public NKIBench kernels, run unmodified from where they are kept (not in the repository)

@pytest.mark.parametrize("name", ["adamw_M10944_N2048_0", "silu_M4096_N7168_0"])
def test_shared_kernels_scheduled(name):
    """The shared adamw and silu at their sizes: scheduled, the program is check-clean and
    computes the NumPy reference's values (both small enough to simulate functionally)."""
    mod = shared_kernels.kernel_module(name, "shared_" + name)
    ref = shared_kernels.reference_module(name, "ref_" + name)
    np.random.seed(0)
    inputs = ref.get_inputs()
    args = ref.transform_to_nki_inputs(inputs)
    want = ref.forward(*inputs)
    assert nki.check(mod.kernel, *args) == []
    got = nki.simulate_kernel(mod.kernel, *args)
    np.testing.assert_allclose(np.asarray(got, np.float64).reshape(want.shape), want,
                               rtol=2e-3, atol=2e-3)
