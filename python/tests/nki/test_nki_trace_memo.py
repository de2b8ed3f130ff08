"""The tracer's per-structure caches (docs/nki.md, "Cost of lowering"): index views memoised
per tensor layout and subscript structure (_core._adv_index_memo), a view of one block made
directly on its buffer, and the free dims' text cached per layout (Tensor._text). Each must
give the reference paths' views, program text and errors (Policy.fast_trace=False), also
when a cached structure comes back with constants that are out of bounds or start at a
partition the engines refuse, and must be used (the caches are hit)."""
import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.language as nl
from ncsim.nki import _core

F = 96


@nki.jit
def k_ragged(x):
    """Tiles of one subscript structure at every offset, the last one masked (ragged)."""
    P, N = x.shape
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:F]
    for t in nl.affine_range((N + F - 1) // F):
        m = F * t + jf < N
        a = nl.load(x[ip, F * t + jf], mask=m)
        nl.store(out[ip, F * t + jf], value=nl.multiply(a, 2.0, mask=m), mask=m)
    return out


@nki.jit
def k_blocks(x):
    """A block tensor written and read through subscripts of one structure per statement."""
    P, N = x.shape
    T = N // F
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.ndarray((T, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:128, 0:F]
    jh = nl.arange(F // 2)[None, :]
    for t in nl.affine_range(T):
        xb[t, ip, jf] = nl.load(x[ip, F * t + jf])
    for t in nl.affine_range(T):
        for h in nl.affine_range(2):
            y = nl.add(xb[T - 1 - t, ip, F // 2 * h + jh], 1.0)
            nl.store(out[ip, F * (T - 1 - t) + F // 2 * h + jh], value=y)
    return out


@nki.jit
def k_out_of_bounds(x):
    """In bounds for the first iterations, then past the end without a mask."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:F]
    for t in nl.affine_range(4):
        nl.store(out[ip, F * t + jf], value=nl.load(x[ip, F * t + jf]))
    return out


@nki.jit
def k_partition_start(x):
    """A 64-partition view of one layout at partition 0, then at 32 (not a legal start)."""
    out = nl.ndarray((64, F), dtype=x.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray((128, F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:64, 0:F]
    for k in nl.affine_range(2):
        s[32 * k + ip, jf] = nl.load(x[ip, jf])
    nl.store(out[ip, jf], value=s[ip, jf])
    return out


@nki.jit
def k_partition_coef(x):
    """A partition subscript with step 2: refused, on every lowering."""
    out = nl.ndarray((64, F), dtype=x.dtype, buffer=nl.shared_hbm)
    s = nl.ndarray((128, F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:64, 0:F]
    s[2 * ip, jf] = nl.load(x[ip, jf])
    nl.store(out[ip, jf], value=s[ip, jf])
    return out


def _lower(kernel, *args, fast=True):
    return nki.lower(kernel, *args, policy={"fast_trace": fast})


def _error(kernel, *args, fast=True):
    with pytest.raises(nki.NkiError) as e:
        _lower(kernel, *args, fast=fast)
    return str(e.value)


@pytest.fixture
def fresh(monkeypatch):
    """Empty caches, and no oracle run (the lowerings below pick their paths)."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    monkeypatch.setattr(_core, "_ADV_MEMO", {})
    monkeypatch.setattr(_core, "_DIMS_TEXT", {})


def _computed(monkeypatch, kernel, x, memo=True):
    """Views computed in full (_adv_index_fast) by a fast lowering, with or without the memo.
    (The spy is only used for lowerings that succeed: an error's location is the innermost
    frame outside the package, which the spy would be.)"""
    n = [0]
    full = _core._adv_index_fast

    def spy(*a):
        n[0] += 1
        return full(*a)
    with monkeypatch.context() as m:
        m.setattr(_core, "_adv_index_fast", spy)
        if not memo:
            m.setattr(_core, "_adv_index_memo", lambda *a: None)
        low = _lower(kernel, x)
    return n[0], low


def test_ragged_tiles_match_reference_and_numpy(fresh, monkeypatch):
    x = np.random.default_rng(1).random((128, 5 * F - 40), dtype=np.float32)
    views, _ = _computed(monkeypatch, k_ragged, x, memo=False)
    misses, fast = _computed(monkeypatch, k_ragged, x)
    assert 0 < 3 * misses < views                       # the structures are reused
    assert fast.text == _lower(k_ragged, x, fast=False).text
    out = nki.simulate_kernel(k_ragged, x)
    np.testing.assert_allclose(np.asarray(out), 2.0 * x, rtol=1e-6)


def test_block_views_match_reference_and_numpy(fresh, monkeypatch):
    x = np.random.default_rng(2).random((128, 6 * F), dtype=np.float32)
    views, _ = _computed(monkeypatch, k_blocks, x, memo=False)
    misses, fast = _computed(monkeypatch, k_blocks, x)
    assert 0 < 3 * misses < views
    ref = _lower(k_blocks, x, fast=False)
    assert fast.text == ref.text and fast.tensors == ref.tensors and fast.spill == ref.spill
    out = nki.simulate_kernel(k_blocks, x)
    np.testing.assert_allclose(np.asarray(out), x + 1.0, rtol=1e-6)


def test_out_of_bounds_after_a_cached_structure(fresh):
    x = np.zeros((128, 3 * F + 8), dtype=np.float32)
    msg = _error(k_out_of_bounds, x)
    assert "err_tensor_access_out_of_bound" in msg
    assert _core._ADV_MEMO                  # the failing subscript's structure was cached
    assert msg == _error(k_out_of_bounds, x, fast=False)


def test_partition_start_after_a_cached_text(fresh):
    x = np.zeros((64, F), dtype=np.float32)
    msg = _error(k_partition_start, x)
    assert "err_partition_start" in msg
    assert _core._DIMS_TEXT                 # the layout's text was cached before
    assert msg == _error(k_partition_start, x, fast=False)


def test_structural_errors_are_not_cached(fresh):
    x = np.zeros((64, F), dtype=np.float32)
    first = _error(k_partition_coef, x)
    assert "err_unsupported_index" in first
    assert _error(k_partition_coef, x) == first == _error(k_partition_coef, x, fast=False)
    # only x[ip, jf] (loaded) was cached, not the refused subscript of s
    assert [k[0] for k in _core._ADV_MEMO] == [(64, F)]


def test_caches_emptied_when_full_give_the_same_text(fresh, monkeypatch):
    """With room for two structures the caches are emptied again and again; the text stays."""
    x = np.random.default_rng(3).random((128, 6 * F), dtype=np.float32)
    ref = _lower(k_blocks, x, fast=False).text
    monkeypatch.setattr(_core, "_MEMO_MAX", 2)
    assert _lower(k_blocks, x).text == ref
    assert 0 < len(_core._ADV_MEMO) <= 2 and 0 < len(_core._DIMS_TEXT) <= 2


def test_read_and_written_view_gives_the_same_dependences(fresh, monkeypatch):
    """A view an instruction both reads and writes (a matmul accumulating in PSUM) has only its
    write recorded on the fast path: every instruction's dependences, as the scheduler takes
    them (a set, without the instruction itself), are the reference paths'."""
    from ncsim.nki import _sched
    from ncsim.nki.examples.catalog import BY_NAME
    seen = []
    run = _sched.run

    def spy(nodes, *a):
        seen.append([(nd.agent, nd.idx, frozenset(nd.deps) - {(nd.agent, nd.idx)})
                     for nd in nodes])
        return run(nodes, *a)
    monkeypatch.setattr(_sched, "run", spy)
    skipped = [0]
    among = _core._among

    def count(t, views):
        r = among(t, views)
        skipped[0] += r
        return r
    monkeypatch.setattr(_core, "_among", count)
    for name in ("matmul_tiled", "matmul_optimized"):
        case = BY_NAME[name]
        kernel, _ = case.load()
        args = case.args("small", 0, timing=True)
        seen.clear()
        # (the Python passes: the C ones take the nodes without _sched.run)
        fast = nki.lower(kernel, *args, policy={"steady_state": False, "native_passes": "python"})
        ref = nki.lower(kernel, *args, policy={"fast_trace": False, "steady_state": False})
        assert fast.text == ref.text
        assert len(seen) == 2 and seen[0] == seen[1]
    assert skipped[0] > 0
