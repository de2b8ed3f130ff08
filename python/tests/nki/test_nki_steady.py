"""Steady-state loop tracing (docs/nki.md, "Loops kept"): a long loop's middle iterations are
replayed instead of run, and the program is exactly the one of the full trace
(Policy.steady_state=False). Where the replay cannot be shown to reproduce the iterations,
every iteration runs, and the program is again the full trace's."""
import re

import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl
from ncsim.nki import _steady
from ncsim.nki.examples.catalog import CASES

import shared_kernels  # noqa: E402  (python/tests/nki: the public NKIBench kernels)


def _both(kernel, *args, **pol):
    a = nki.lower(kernel, *args, policy=dict(pol, steady_state=True))
    b = nki.lower(kernel, *args, policy=dict(pol, steady_state=False))
    assert a.text == b.text
    assert a.tensors == b.tensors
    assert a.spill == b.spill
    assert b.loops == []
    return a


def _loop(low, line=None):
    ls = [e for e in low.loops if line is None or e["line"] == line]
    assert len(ls) == 1, low.loops
    return ls[0]


@pytest.mark.parametrize("min_iters", [4, 12])
@pytest.mark.parametrize("size", ["small", "moderate"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_catalog_same_program(case, size, min_iters, monkeypatch):
    """Every kernel of the catalog: the same program text, tensor report and spill figures
    with and without replay (with replay tried on loops of 4 iterations too, so that the
    small sizes exercise it)."""
    if size not in case.sizes:
        pytest.skip(f"{case.name} has no {size} size")
    monkeypatch.setattr(_steady, "MIN_ITERS", min_iters)
    kernel, _ = case.load()
    _both(kernel, *case.args(size, 0, timing=True))


def test_catalog_replays_something(monkeypatch):
    """The comparison above is not vacuous: the moderate catalog replays loop iterations."""
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    total = 0
    for case in CASES:
        if "moderate" not in case.sizes:
            continue
        kernel, _ = case.load()
        low = nki.lower(kernel, *case.args("moderate", 0, timing=True))
        total += sum(e["replayed"] for e in low.loops)
    assert total > 100


@nki.jit
def k_scale(a):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        u = nl.multiply(t, 3.0)
        nl.store(out[:, i * 128:(i + 1) * 128], value=u)
    return out


def test_replayed_loop_runs_right():
    a = np.random.default_rng(1).random((128, 128 * 40), dtype=np.float32)
    low = _both(k_scale, a)
    e = _loop(low)
    assert e["iterations"] == 40 and e["replayed"] >= 24 and e["refused"] is None
    out = nki.simulate_kernel(k_scale, a)
    np.testing.assert_allclose(out, a * 3.0, rtol=1e-6)
    assert ".loop" in low.text           # the program keeps the loop


def test_policy_switch_off_runs_every_iteration():
    a = np.zeros((128, 128 * 40), np.float32)
    low = nki.lower(k_scale, a, policy={"steady_state": False})
    assert low.loops == []


@nki.jit
def k_masked(x):
    R, C = x.shape
    out = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    iff = nl.arange(C)[None, :]
    for i in nl.affine_range((R + 127) // 128):
        m = i * 128 + ip < R
        t = nl.load(x[i * 128 + ip, iff], mask=m)
        nl.store(out[i * 128 + ip, iff], value=nl.exp(t, mask=m), mask=m)
    return out


def test_mask_on_the_index_changes_once():
    """One inequality on the loop index changes its truth once over the loop: here in the
    last iteration. A mask on the index was seen, so the replay leaves one iteration more
    than the period it checks, which runs freely: the kernel is not lowered again."""
    x = np.random.default_rng(2).random((128 * 20 - 50, 64), dtype=np.float32)
    low = _both(k_masked, x)
    assert low.steady_fallback is None
    e = _loop(low)
    assert e["replayed"] >= 8 and e["refused"] is None, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_masked, x), np.exp(x), rtol=1e-3)


@nki.jit
def k_band(x):
    R, C = x.shape
    out = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    iff = nl.arange(C)[None, :]
    for i in nl.affine_range(R // 128):
        t = nl.load(x[i * 128 + ip, iff])
        m = (i * 128 + ip >= 1280) & (i * 128 + ip < 1920)     # true in the middle only
        nl.store(out[i * 128 + ip, iff], value=nl.exp(t), mask=m)
        nl.store(out[i * 128 + ip, iff], value=t, mask=(i * 128 + ip < 1280))
        nl.store(out[i * 128 + ip, iff], value=t, mask=(i * 128 + ip >= 1920))
    return out


def test_refuses_mask_with_two_conditions_on_the_index():
    x = np.random.default_rng(6).random((128 * 30, 64), dtype=np.float32)
    low = _both(k_band, x)
    e = _loop(low)
    assert e["replayed"] == 0 and "two conditions" in e["refused"]
    ref = x.copy()
    ref[1280:1920] = np.exp(x[1280:1920])
    np.testing.assert_allclose(nki.simulate_kernel(k_band, x), ref, rtol=1e-3)


@nki.jit
def k_append(a):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    seen = []
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        seen.append(i)
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.multiply(t, 2.0))
    assert len(seen) == F // 128        # every iteration ran
    return out


def test_refuses_list_append():
    low = _both(k_append, np.zeros((128, 128 * 30), np.float32))
    e = _loop(low)
    assert e["replayed"] == 0 and ("append" in e["refused"] or "seen" in e["refused"])


@nki.jit
def k_carried(a):
    P, F = a.shape
    out = nl.ndarray((P, 128), a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((P, 128), a.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        acc = nl.add(acc, t)            # rebinds a variable bound before the loop
    nl.store(out, value=acc)
    return out


def test_refuses_loop_carried_rebinding():
    a = np.random.default_rng(3).random((128, 128 * 24), dtype=np.float32)
    low = _both(k_carried, a)
    e = _loop(low)
    assert e["replayed"] == 0
    ref = a.reshape(128, 24, 128).sum(axis=1)
    np.testing.assert_allclose(nki.simulate_kernel(k_carried, a), ref, rtol=1e-5)


@nki.jit
def k_branch(a):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        if i == 25:                     # Python control flow on the index
            t = nl.multiply(t, 5.0)
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.multiply(t, 1.0))
    return out


def test_refuses_python_branch_on_index():
    a = np.random.default_rng(4).random((128, 128 * 30), dtype=np.float32)
    low = _both(k_branch, a)
    e = _loop(low)
    assert e["replayed"] == 0 and "comparison" in e["refused"]
    ref = a.copy()
    ref[:, 25 * 128:26 * 128] *= 5.0
    np.testing.assert_allclose(nki.simulate_kernel(k_branch, a), ref, rtol=1e-6)


def test_refuses_period_longer_than_searched():
    """Five buffers per allocation site: the buffers rotate with a period of five iterations,
    longer than the longest period searched (MAXP)."""
    assert _steady.MAXP < 5
    low = _both(k_scale, np.zeros((128, 128 * 40), np.float32), sbuf_bufs=5)
    e = _loop(low)
    assert e["replayed"] == 0 and "no steady state" in e["refused"]


@nki.jit
def k_negative(a):
    n, P, F = a.shape
    out = nl.ndarray((n, P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(n):
        t = nl.load(a[i - 35])          # negative indices wrap: not affine across the loop
        nl.store(out[i], value=nl.multiply(t, 1.0))
    return out


def test_tail_that_does_not_continue_falls_back():
    """The last iterations do not continue the replayed steady state (the block index wraps
    from negative to positive late in the loop): the kernel is lowered again in full."""
    a = np.random.default_rng(5).random((40, 128, 128), dtype=np.float32)
    low = _both(k_negative, a)
    assert low.loops == []             # the full lowering's (no loop replayed)
    assert low.steady_fallback
    np.testing.assert_allclose(nki.simulate_kernel(k_negative, a), np.roll(a, 35, axis=0))


@nki.jit
def k_tuple(a, scales):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.multiply(t, scales[i]))
    return out


def test_refuses_a_sequence_indexed_by_the_index():
    """A tuple indexed by the loop index: its 17th item differs, which no prefix shows."""
    scales = tuple(2.0 if j == 17 else 1.0 for j in range(30))
    a = np.random.default_rng(7).random((128, 128 * 30), dtype=np.float32)
    low = _both(k_tuple, a, scales)
    e = _loop(low)
    assert e["replayed"] == 0 and "scales" in e["refused"]
    ref = a.copy()
    ref[:, 17 * 128:18 * 128] *= 2.0
    np.testing.assert_allclose(nki.simulate_kernel(k_tuple, a, scales), ref, rtol=1e-6)


@nki.jit
def k_held(a, b):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    held = nl.ndarray((2, nl.par_dim(P), 512), a.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(2):
        held[j, :, :] = nl.load(b[:, j * 512:(j + 1) * 512])
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        u = nl.add(held[0, :, i * 4:i * 4 + 128], held[1, :, i * 8:i * 8 + 128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(t, u))
    return out


def test_replayed_views_of_block_tensors():
    """Two views of blocks per instruction, each at an offset that moves with the index:
    many replayed windows place both in their blocks' buffers."""
    rng = np.random.default_rng(8)
    a = rng.random((128, 128 * 40), dtype=np.float32)
    b = rng.random((128, 1024), dtype=np.float32)
    low = _both(k_held, a, b)
    e = [x for x in low.loops if x["iterations"] == 40][0]
    assert e["replayed"] >= 24, low.loops
    ref = a.copy()
    for i in range(40):
        ref[:, i * 128:(i + 1) * 128] += b[:, i * 4:i * 4 + 128] + b[:, 512 + i * 8:512 + i * 8 + 128]
    np.testing.assert_allclose(nki.simulate_kernel(k_held, a, b), ref, rtol=1e-5)


@nki.jit
def k_nest(a):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(24):
        for j in nl.affine_range(20):
            c = (i * 20 + j) * 8
            t = nl.load(a[:, c:c + 8])
            nl.store(out[:, c:c + 8], value=nl.multiply(t, 2.0))
    return out


def test_nested_loops_replay_the_outer_too():
    a = np.random.default_rng(9).random((128, 24 * 20 * 8), dtype=np.float32)
    low = _both(k_nest, a)
    outer = [e for e in low.loops if e["iterations"] == 24][0]
    inner = [e for e in low.loops if e["iterations"] != 24][0]
    assert outer["replayed"] >= 12 and inner["replayed"] > 0, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_nest, a), 2 * a, rtol=1e-6)


# ---- block tensors filled when first touched (nl.zeros / nl.full with block dimensions)

def _corpus(name):
    import os
    import importlib.util
    nki.install_neuronxcc_alias()
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    spec = importlib.util.spec_from_file_location("ncsim_steady_corpus_" + name,
                                                  os.path.join(d, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _corpus_names():
    import os
    d = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")
    return sorted(f[:-3] for f in os.listdir(d) if f.endswith(".py") and not f.startswith("_"))


@pytest.mark.parametrize("min_iters", [4, 20])
@pytest.mark.parametrize("name", _corpus_names())
def test_corpus_same_program(name, min_iters, monkeypatch):
    """Every kernel of the compiler-style corpus at its small size: the same program text,
    tensor report and spill figures with and without replay."""
    monkeypatch.setattr(_steady, "MIN_ITERS", min_iters)
    mod = _corpus(name)
    args = mod.inputs(mod.SIZES["small"], np.random.default_rng(0))
    grid = getattr(mod, "GRID", None)          # an SPMD kernel, launched on its grid
    _both(mod.kernel[grid["small"]] if grid else mod.kernel, *args)


def test_corpus_conv1d_baseline_replays_its_position_loop(monkeypatch):
    """The conv1d baseline's per-position loop, whose output block is zero-filled when the
    loop's first iteration touches it, is replayed (it was refused: "a block is filled when
    first touched"), and the program still computes the convolution."""
    monkeypatch.setattr(_steady, "MIN_ITERS", 20)
    mod = _corpus("conv1d_baseline")
    args = mod.inputs(dict(N=2, C=256, W=96), np.random.default_rng(3))
    low = _both(mod.kernel, *args)
    e = [x for x in low.loops if x["iterations"] == 4 * 96][0]
    assert e["runs"] == 4 and e["replayed"] >= 4 * 60 and e["refused"] is None, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(mod.kernel, *args),
                               mod.reference(*args), rtol=1e-5, atol=1e-5)


@nki.jit
def k_fill_each(a):
    """Each iteration touches a new block of a zero-filled block tensor (its fill is an
    instruction of every iteration) and adds into it."""
    P, F = a.shape
    n = F // 128
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((n, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        acc[i, :, :] += nl.multiply(t, 2.0)
        nl.store(out[:, i * 128:(i + 1) * 128], value=acc[i, :, :])
    return out


def test_replays_a_fill_in_every_iteration():
    a = np.random.default_rng(10).random((128, 128 * 40), dtype=np.float32)
    low = _both(k_fill_each, a)
    e = _loop(low)
    assert e["replayed"] >= 24 and e["refused"] is None, low.loops
    assert low.text.count("memset") >= 1
    np.testing.assert_allclose(nki.simulate_kernel(k_fill_each, a), 2 * a, rtol=1e-6)


@nki.jit
def k_fill_first(a):
    """A zero-filled output row block, first touched (filled) in the loop's first iteration,
    written one column per iteration (the conv1d baseline's pattern)."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    row = nl.zeros((2, nl.par_dim(P), F), a.dtype, buffer=nl.sbuf)
    x = nl.load(a)
    for j in nl.affine_range(2):
        for i in nl.affine_range(F):
            row[j, :, i] = nl.multiply(x[:, i], 3.0 + j)
    nl.store(out, value=nl.add(row[0, :, :], row[1, :, :]))
    return out


def test_replays_a_fill_in_the_first_iteration():
    a = np.random.default_rng(11).random((128, 48), dtype=np.float32)
    low = _both(k_fill_first, a)
    e = _loop(low)
    assert e["runs"] == 2 and e["replayed"] >= 2 * 24 and e["refused"] is None, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_fill_first, a), 7 * a, rtol=1e-6)


@nki.jit
def k_fill_evict(a):
    """Zero-filled blocks all kept to the end (read by a second loop) and more of them than
    SBUF holds: the first loop's allocations evict blocks and the second reloads them,
    neither of which is replayed."""
    P, F = a.shape
    n = F // 2048
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    big = nl.zeros((n, nl.par_dim(P), 2048), a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        big[i, :, 0:512] += nl.load(a[:, i * 2048:i * 2048 + 512])
    for i in nl.affine_range(n):
        nl.store(out[:, i * 2048:(i + 1) * 2048], value=big[i, :, :])
    return out


def test_still_refuses_evicting_filled_blocks():
    a = np.random.default_rng(12).random((128, 2048 * 28), dtype=np.float32)
    low = _both(k_fill_evict, a, sbuf_bytes=20 * 1024)
    assert [(e["replayed"], e["refused"]) for e in low.loops] == \
        [(0, "a block is evicted"), (0, "a spilled block is reloaded")], low.loops
    assert low.spill["spill_save_bytes"] + low.spill["rematerialized_bytes"] > 0, low.spill
    ref = np.zeros_like(a)
    for i in range(28):
        ref[:, i * 2048:i * 2048 + 512] = a[:, i * 2048:i * 2048 + 512]
    np.testing.assert_allclose(nki.simulate_kernel(k_fill_evict, a,
                                                   policy={"sbuf_bytes": 20 * 1024}), ref)


def test_replays_after_a_spill_in_the_warm_up_iteration(monkeypatch):
    """The conv1d baseline with SBUF narrowed: filling each output block in the position
    loop's first iteration evicts (spills) an input block, and later runs of the loop reload
    one in their first iteration. Both happen in the warm-up iteration, before the windows
    compared, so the loop is still replayed; the program is the full trace's."""
    monkeypatch.setattr(_steady, "MIN_ITERS", 20)
    mod = _corpus("conv1d_baseline")
    args = mod.inputs(dict(N=2, C=256, W=96), np.random.default_rng(3))
    low = _both(mod.kernel, *args, sbuf_bytes=1600)
    assert low.spill["spill_save_bytes"] > 0 and low.spill["spill_reload_bytes"] > 0
    e = _loop(low)
    assert e["replayed"] >= 4 * 60 and e["refused"] is None, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(mod.kernel, *args,
                                                   policy={"sbuf_bytes": 1600}),
                               mod.reference(*args), rtol=1e-5, atol=1e-5)


def test_narrowed_dependence_cells_give_the_reference_dependences(monkeypatch):
    """A block filled (one access over the whole buffer) and then written a column per
    iteration: past _GRID_REFINE records the fast path's one cell is narrowed
    (_Grid2.refine); the program is the one the reference path (_access_ref, fast_trace=False)
    gives, with and without replay, and still computes the right values. The same with the
    access log and the C dependence pass (the default with libncsim; it narrows its cells
    likewise, tests/unit/test_nki_passes.c)."""
    from ncsim.nki import _core
    calls = []
    orig = _core._Grid2.refine

    def spy(self, key):
        calls.append(self.wb)
        return orig(self, key)
    monkeypatch.setattr(_core._Grid2, "refine", spy)
    a = np.random.default_rng(13).random((128, 600), dtype=np.float32)
    low = _both(k_fill_first, a, native_passes="python")    # the dependences in Python
    assert calls, "the cells were not narrowed"
    ref = nki.lower(k_fill_first, a, policy={"fast_trace": False, "steady_state": False})
    assert low.text == ref.text
    assert _both(k_fill_first, a).text == ref.text
    np.testing.assert_allclose(nki.simulate_kernel(k_fill_first, a), 7 * a, rtol=1e-6)


@nki.jit
def k_fill_nest(a):
    """k_fill_each's fill per iteration inside an inner loop, the outer loop replayed too (its
    windows hold the inner loops' allocation events, which refill the blocks)."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((24 * 20, nl.par_dim(P), 8), a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(24):
        for j in nl.affine_range(20):
            c = (i * 20 + j) * 8
            acc[i * 20 + j, :, :] += nl.load(a[:, c:c + 8])
            nl.store(out[:, c:c + 8], value=nl.multiply(acc[i * 20 + j, :, :], 2.0))
    return out


def test_nested_loops_replay_fills():
    a = np.random.default_rng(14).random((128, 24 * 20 * 8), dtype=np.float32)
    low = _both(k_fill_nest, a)
    outer = [e for e in low.loops if e["iterations"] == 24][0]
    inner = [e for e in low.loops if e["iterations"] != 24][0]
    assert outer["replayed"] >= 12 and inner["replayed"] > 0, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_fill_nest, a), 2 * a, rtol=1e-6)


# ---- PSUM block tensors (a matmul's accumulation state is per block)

@nki.jit
def k_psum_blocks(a, b):
    """Per output tile i (24 of them) a fresh PSUM block, accumulated over 4 K tiles by an
    inner loop: the first matmul of each block starts its group, the others add to it."""
    K, M = a.shape                      # a: [K, M] (stationary, K on partitions)
    _, N = b.shape                      # b: [K, N]
    T = N // 128
    out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((T, nl.par_dim(M), 128), nl.float32, buffer=nl.psum, lazy_initialization=True)
    res = nl.ndarray((T, nl.par_dim(M), 128), nl.float32, buffer=nl.sbuf)
    for i in nl.affine_range(T):
        for k in nl.affine_range(K // 128):
            lt = nl.load(a[k * 128:(k + 1) * 128, :])
            rt = nl.load(b[k * 128:(k + 1) * 128, i * 128:(i + 1) * 128])
            acc[i, :, :] += nisa.nc_matmul(lt, rt)
        res[i, :, :] = nl.copy(acc[i, :, :])
        nl.store(out[:, i * 128:(i + 1) * 128], value=res[i, :, :])
    return out


def test_replays_psum_blocks():
    rng = np.random.default_rng(20)
    a = rng.random((512, 128), dtype=np.float32)
    b = rng.random((512, 128 * 24), dtype=np.float32)
    # (the lhsT tiles, loaded again for every i, would be kept resident, which is not replayed)
    pol = {"resident_loads": "never"}
    low = _both(k_psum_blocks, a, b, **pol)
    e = [x for x in low.loops if x["iterations"] == 24][0]
    assert e["replayed"] >= 12 and e["refused"] is None, low.loops
    assert [t["space"] for t in low.tensors if t["blocks"]][:1] == ["psum"]
    np.testing.assert_allclose(nki.simulate_kernel(k_psum_blocks, a, b, policy=pol), a.T @ b,
                               rtol=1e-4)


@nki.jit
def k_psum_carried(a):
    """One PSUM block accumulated across all iterations of the loop (a column sum by a matmul
    with a ones vector, the batchnorm corpus kernel's pattern): its group starts in the first
    iteration and every later one adds to it; read after the loop."""
    n, P, F = a.shape
    out = nl.ndarray((1, F), nl.float32, buffer=nl.shared_hbm)
    ones = nl.ndarray((nl.par_dim(P), 1), nl.float32, buffer=nl.sbuf)
    ones[...] = nisa.memset(shape=(P, 1), value=1.0, dtype=nl.float32)
    s = nl.zeros((2, nl.par_dim(1), F), nl.float32, buffer=nl.psum, lazy_initialization=True)
    for i in nl.affine_range(n):
        t = nl.load(a[i])
        s[0, :, :] += nisa.nc_matmul(ones, t)
    r = nl.copy(s[0, :, :])
    nl.store(out, value=r)
    return out


def test_replays_a_psum_block_accumulated_across_the_loop():
    a = np.random.default_rng(21).random((30, 128, 512), dtype=np.float32)
    low = _both(k_psum_carried, a)
    e = _loop(low)
    assert e["replayed"] >= 12 and e["refused"] is None, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_psum_carried, a),
                               a.sum(axis=(0, 1))[None, :], rtol=1e-4)


@nki.jit
def k_psum_columns(a):
    """Each iteration starts an accumulation group in a new column range of the same PSUM
    block: the block's state (the groups started) grows every iteration, so no two windows
    agree and the loop is traced in full."""
    n, P, F = a.shape
    out = nl.ndarray((1, n * F), nl.float32, buffer=nl.shared_hbm)
    ones = nl.ndarray((nl.par_dim(P), 1), nl.float32, buffer=nl.sbuf)
    ones[...] = nisa.memset(shape=(P, 1), value=1.0, dtype=nl.float32)
    s = nl.zeros((1, nl.par_dim(1), n * F), nl.float32, buffer=nl.psum, lazy_initialization=True)
    for i in nl.affine_range(n):
        t = nl.load(a[i])
        s[0, :, i * F:(i + 1) * F] += nisa.nc_matmul(ones, t)
    nl.store(out, value=nl.copy(s[0, :, :]))
    return out


def test_refuses_a_psum_block_whose_state_grows():
    a = np.random.default_rng(22).random((24, 128, 16), dtype=np.float32)
    low = _both(k_psum_columns, a)
    e = _loop(low)
    assert e["replayed"] == 0 and "no steady state" in e["refused"], low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_psum_columns, a),
                               a.sum(axis=1).reshape(1, -1), rtol=1e-4)


@nki.jit
def k_psum_before(a):
    """PSUM blocks whose groups start before the loop: the loop adds to block i, whose state
    was made by code the windows do not show. Refused (with replay tried from 4 iterations)."""
    n, P, F = a.shape
    out = nl.ndarray((n, 1, F), nl.float32, buffer=nl.shared_hbm)
    ones = nl.ndarray((nl.par_dim(P), 1), nl.float32, buffer=nl.sbuf)
    ones[...] = nisa.memset(shape=(P, 1), value=1.0, dtype=nl.float32)
    s = nl.zeros((n, nl.par_dim(1), F), nl.float32, buffer=nl.psum, lazy_initialization=True)
    for j in nl.affine_range(n):
        t = nl.load(a[j])
        s[j, :, :] += nisa.nc_matmul(ones, t)
    for i in nl.affine_range(n):
        t2 = nl.load(a[i])
        s[i, :, :] += nisa.nc_matmul(ones, t2)
        nl.store(out[i], value=nl.copy(s[i, :, :]))
    return out


def test_refuses_psum_blocks_from_before_the_loop(monkeypatch):
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    a = np.random.default_rng(23).random((6, 128, 128), dtype=np.float32)
    pol = {"resident_loads": "never"}
    low = _both(k_psum_before, a, **pol)
    second = low.loops[-1]
    assert second["replayed"] == 0 and "PSUM block from before the loop" in second["refused"], \
        low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_psum_before, a, policy=pol),
                               2 * a.sum(axis=1)[:, None, :], rtol=1e-4)


# ---- block tensors whose loads are issued at their uses

@nki.jit
def k_at_uses(a):
    """A block tensor of input loads (n blocks of [128, 2048] fp32: 8 KiB per partition
    each) larger than SBUF, loaded in one loop and read in another: its loads are issued at
    the reads, and both loops are replayed."""
    n, P, F = a.shape
    out = nl.ndarray((n, P, F), a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray((n, nl.par_dim(P), F), a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        x[i, :, :] = nl.load(a[i])
    for j in nl.affine_range(n):
        y = nl.multiply(x[j, :, 0:F // 2], 2.0)
        z = nl.add(x[j, :, F // 2:F], 1.0)
        nl.store(out[j, :, 0:F // 2], value=y)
        nl.store(out[j, :, F // 2:F], value=z)
    return out


def test_replays_loads_issued_at_their_uses():
    a = np.random.default_rng(24).random((24, 128, 2048), dtype=np.float32)
    low = _both(k_at_uses, a)
    sunk = [t for t in low.tensors if t["loads_at_uses"]]
    assert len(sunk) == 1 and sunk[0]["reissued_loads"] == 2 * 24, low.tensors
    assert [(e["replayed"] >= 8, e["refused"]) for e in low.loops] == [(True, None)] * 2, \
        low.loops
    ref = a.copy()
    ref[:, :, :1024] *= 2.0
    ref[:, :, 1024:] += 1.0
    np.testing.assert_allclose(nki.simulate_kernel(k_at_uses, a), ref, rtol=1e-6)


@nki.jit
def k_at_uses_inside(a):
    """Loaded and read in the same iteration, the reads inside a loop of their own (each
    iteration of the outer loop reads its block at two places)."""
    n, P, F = a.shape
    out = nl.ndarray((n, P, F), a.dtype, buffer=nl.shared_hbm)
    x = nl.ndarray((n, nl.par_dim(P), F), a.dtype, buffer=nl.sbuf)
    keep = nl.ndarray((n, nl.par_dim(P), F), a.dtype, buffer=nl.sbuf)
    for i in nl.affine_range(n):
        x[i, :, :] = nl.load(a[i])
    for i in nl.affine_range(n):
        for h in nl.affine_range(2):
            keep[i, :, h * (F // 2):(h + 1) * (F // 2)] = nl.multiply(
                x[i, :, h * (F // 2):(h + 1) * (F // 2)], 3.0)
        nl.store(out[i], value=keep[i, :, :])
    return out


def test_replays_loads_at_uses_read_in_an_inner_loop():
    a = np.random.default_rng(25).random((22, 128, 2048), dtype=np.float32)
    low = _both(k_at_uses_inside, a, sbuf_bytes=100 * 1024)
    assert any(t["loads_at_uses"] for t in low.tensors), low.tensors
    assert all(e["refused"] is None and e["replayed"] > 0 for e in low.loops), low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_at_uses_inside, a,
                                                   policy={"sbuf_bytes": 100 * 1024}),
                               3 * a, rtol=1e-6)


def test_replays_ragged_last_tile():
    """A mask cuts the last tile (the NKIBench adamw's pattern): the replay leaves the last
    iteration to run freely after the P it checks, so the kernel is not lowered again."""
    a = np.random.default_rng(26).random((128 * 30 - 40, 64), dtype=np.float32)
    low = _both(k_ragged, a)
    assert low.steady_fallback is None
    e = _loop(low)
    assert e["replayed"] >= 12 and e["refused"] is None, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_ragged, a), a * 2.0, rtol=1e-6)


@nki.jit
def k_ragged(a):
    R, F = a.shape
    out = nl.ndarray((R, F), a.dtype, buffer=nl.shared_hbm)
    n = (R + 127) // 128
    for i in nl.affine_range(n):
        ip = nl.arange(128)[:, None]
        jf = nl.arange(F)[None, :]
        t = nl.load(a[i * 128 + ip, jf], mask=(i * 128 + ip < R))
        nl.store(out[i * 128 + ip, jf], value=nl.multiply(t, 2.0), mask=(i * 128 + ip < R))
    return out


@nki.jit
def k_block_before(a):
    """A zero-filled block tensor whose block 20 is touched (filled) before the loop: the loop
    fills block i when it first touches it, except at i = 20, which the windows cannot show.
    The replay meets that block already allocated and the kernel is lowered again in full."""
    P, F = a.shape
    n = F // 128
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((n, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
    acc[20, :, :] += nl.load(a[:, 0:128])
    for i in nl.affine_range(n):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        acc[i, :, :] += nl.multiply(t, 2.0)
        nl.store(out[:, i * 128:(i + 1) * 128], value=acc[i, :, :])
    return out


def test_block_allocated_before_the_loop_falls_back():
    a = np.random.default_rng(27).random((128, 128 * 30), dtype=np.float32)
    low = _both(k_block_before, a)
    assert low.steady_fallback and "allocated" in low.steady_fallback, low.steady_fallback
    ref = 2 * a
    ref[:, 20 * 128:21 * 128] += a[:, 0:128]
    np.testing.assert_allclose(nki.simulate_kernel(k_block_before, a), ref, rtol=1e-6)


# ---- the public NKIBench kernels, run unmodified from where they are kept (not in the
# repository; skipped when absent)

@pytest.mark.parametrize("name,shapes,least", [
    # the m-tile loop (12 runs of 32 iterations): two PSUM block tensors, B's loads at uses;
    # the 12-iteration n-block loop around it has a large body, so it is recorded too (7 of
    # its iterations replayed, the m-tile loop run in the other 5: 142 of 160 replayed)
    ("matmul_M4096_N12288_K5120_0", [(32, 128, 40, 128), (40, 128, 12288)], 140),
    # the row-tile loop (86 iterations), whose last tile a mask cuts
    ("adamw_M10944_N2048_0", [(10944, 2048)] * 4, 70),
], ids=["matmul", "adamw"])
def test_shared_kernels_replayed(name, shapes, least):
    import os
    import ncsim.nki.typing as nt
    if os.environ.get("NCSIM_NKI_TRACE_ORACLE"):
        pytest.skip("too long under the trace oracle (every lowering done twice more)")
    mod = shared_kernels.kernel_module(name, "ncsim_steady_shared_" + name)
    low = _both(mod.kernel, *[nt.tensor[list(s), np.float32] for s in shapes])
    assert low.steady_fallback is None
    assert sum(e["replayed"] for e in low.loops) >= least, low.loops
    assert all(e["refused"] is None for e in low.loops), low.loops


# ---- the snapshot's buffers, kept up to date from the changed ones (_steady._slot_part)

class _BB:
    """What a snapshot reads of a block tensor (a BlockBuf's counters, its site, its blocks)."""

    def __init__(self, ordinal):
        from ncsim.nki import _core
        self.ordinal, self.site, self.allocs = ordinal, _core.Site(), {}
        self.spilled = self.reloaded = self.remat_bytes = self.reissued = 0
        self.scratch, self.live, self.peak, self.used = None, 0, 0, set()


def _second_pass_tracer():
    from ncsim.nki import _core
    return _core.Tracer(_core.Policy(), "kernel.py", live={})


def test_snapshot_buffers_kept_up_to_date_are_a_full_walk():
    """Through random changes of the kind the allocator makes -- buffers taken by tiles, by
    blocks of the recorded loop's block tensors and of others, released (as release_blocks
    does: the buffer given up, then the block dropped), tagged, made, and the set of block
    tensors the loop uses growing or changing -- the buffers' part of every snapshot kept
    up to date equals the one a walk over every buffer gives (_slot_walk)."""
    import random
    from ncsim.nki import _core
    rng = random.Random(11)
    tr = _second_pass_tracer()
    bbs = [_BB(k) for k in range(4)]
    sites = [_core.Site() for _ in range(3)] + [bb.site for bb in bbs]
    tiles = []                        # Allocs kept alive (their tokens own buffers)
    nblk = [0] * len(bbs)
    for i in range(20):
        tr._add_slot("sbuf", (i * 1024, 1024), rng.choice(sites))
    rec = _steady.Recorder()
    rec.check = False
    compared = 0
    for step in range(3000):
        r = rng.random()
        sl = rng.choice(tr.slots)
        if r < 0.2:
            tiles.append(_core.Alloc(sl, "sbuf"))           # a tile takes it
            if len(tiles) > 12:
                tiles.pop(rng.randrange(len(tiles)))        # (its token stays the owner)
        elif r < 0.4:
            bb = rng.choice(bbs)                            # a block takes it
            a = _core.Alloc(sl, "sbuf")
            a.blk = (bb, nblk[bb.ordinal])
            bb.allocs[nblk[bb.ordinal]] = a
            nblk[bb.ordinal] += 1
        elif r < 0.55:
            bb = rng.choice(bbs)                            # a block released
            if bb.allocs:
                blk = rng.choice(sorted(bb.allocs))
                _core._free_slot(bb.allocs[blk], step)
                del bb.allocs[blk]
        elif r < 0.65:
            sl.owner = None
            sl.freed = step
        elif r < 0.75:
            sl.tag = rng.choice([None, ("site", step), ("site", 1)])
        elif r < 0.8:
            tr._add_slot("sbuf", (len(tr.slots) * 1024, 1024), rng.choice(sites))
        elif r < 0.9:
            rec.bbs = {bb.ordinal: bb for bb in rng.sample(bbs, rng.randrange(len(bbs) + 1))}
        else:
            use = _steady._bbs(rec)
            assert _steady._slot_part(tr, rec, use) == _steady._slot_walk(tr, rec, use)
            compared += 1
    assert compared > 200
    # a change made behind the tracking's back (the attribute written directly): the kept
    # state no longer is the walk's, and the check under NCSIM_NKI_TRACE_ORACLE says so
    use = _steady._bbs(rec)
    _steady._slot_part(tr, rec, use)
    free = next(sl for sl in tr.slots if id(sl.site) not in {id(bb.site) for bb in use})
    free._owner = object() if free._owner is None else None
    assert _steady._slot_part(tr, rec, use) != _steady._slot_walk(tr, rec, use)
    rec.check = True
    with pytest.raises(AssertionError, match="full walk"):
        _steady._slot_part(tr, rec, use)


def test_snapshots_differ_when_a_buffer_changes_between_windows(monkeypatch):
    """A buffer whose owner or tag is set between two window ends makes the two snapshots
    differ, so the windows are not taken as equal; the same test with Slot.owner and
    Slot.tag not marking what they change (a tracking that misses a change) fails."""
    from ncsim.nki import _core

    def differs():
        tr = _second_pass_tracer()
        site = _core.Site()
        slots = [tr._add_slot("sbuf", (i * 1024, 1024), site) for i in range(8)]
        rec = _steady.Recorder()
        rec.check = False
        base = _steady._snapshot(tr, rec, None, None)
        assert _steady._snapshot(tr, rec, None, None) == base      # nothing changed
        held = _core.Alloc(slots[5], "sbuf")                       # a tile takes a buffer
        got = [_steady._snapshot(tr, rec, None, None)[0] != base[0]]
        _core._free_slot(held, 3)
        assert _steady._snapshot(tr, rec, None, None)[0] == base[0]
        slots[2].tag = ("site", "key")                             # a load's data in one
        got.append(_steady._snapshot(tr, rec, None, None)[0] != base[0])
        return got

    assert differs() == [True, True]
    # the mutant: owner and tag written without entering SLOT_DIRTY
    monkeypatch.setattr(_core.Slot, "owner", property(
        lambda s: s._owner, lambda s, o: object.__setattr__(s, "_owner", o)))
    monkeypatch.setattr(_core.Slot, "tag", property(
        lambda s: s._tag, lambda s, t: object.__setattr__(s, "_tag", t)))
    assert differs() == [False, False]


def test_no_tracer_left_for_the_cycle_collector(monkeypatch):
    """The buffer lists the snapshots keep (Tracer.slot_states) make no reference cycle with
    the tracer: with the collector paused, no tracer outlives its lowering (one did, and the
    collector's pass over the whole trace then took 0.4-0.8 s after a tutorial matmul)."""
    import gc
    from ncsim.nki import _core
    from ncsim.nki.examples.catalog import BY_NAME
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    case = BY_NAME["matmul_hoisted"]
    kernel, _ = case.load()
    args = case.args("moderate", 0, timing=True)
    gc.collect()
    was = gc.isenabled()
    gc.disable()
    try:
        low = nki.lower(kernel, *args)
        assert any(e["replayed"] for e in low.loops)
        assert not [o for o in gc.get_objects() if type(o) is _core.Tracer]
    finally:
        if was:
            gc.enable()


# ---- the middle windows made in bulk (_steady._bulk) against the event-by-event replay

_BULK, _BULK_MIN = _steady._bulk, _steady.BULK_MIN


def _tracer_states(monkeypatch, kernel, *args):
    """Lower kernel; per tracer (a first pass's, then the second's) its state at the end of
    tracing: every node's fields, the access log, the load records and counts, the liveness,
    the counters."""
    from ncsim.nki import _core
    made = []
    init, finish = _core.Tracer.__init__, _core.Tracer.finish

    def init2(self, *a, **k):
        init(self, *a, **k)
        made.append(self)
        self.acclog_kept = None

    def finish2(self, *a, **k):
        self.acclog_kept = list(self.acclog) if self.acclog is not None else None
        self.nodes_kept = [(n.eng, n.text, n.line, n.waits, n.agent, n.idx, n.cost, n.pin)
                           for n in self.nodes]
        return finish(self, *a, **k)
    monkeypatch.setattr(_core.Tracer, "__init__", init2)
    monkeypatch.setattr(_core.Tracer, "finish", finish2)
    low = nki.lower(kernel, *args)
    monkeypatch.setattr(_core.Tracer, "__init__", init)
    monkeypatch.setattr(_core.Tracer, "finish", finish)
    out = []
    for tr in made:
        out.append({"nodes": getattr(tr, "nodes_kept", None), "acclog": tr.acclog_kept,
                    "loads": {k: list(v) for k, v in tr.loads.items()},
                    "loads_order": list(tr.loads), "nload": dict(tr.nload),
                    "nload_order": list(tr.nload), "uses": {k: list(v) for k, v in tr.uses.items()},
                    "tick": tr.tick, "count": list(tr.count), "load": list(tr.load),
                    "freed": [(s.id, s.freed, s.owner is None, s.tag) for s in tr.slots],
                    "blocks": [(bb.name, bb.kind, sorted(bb.used), bb.live, bb.peak, bb.pure,
                                [s.id for s in bb.took] if bb.took is not None else None,
                                [s.id for s in bb.site.slots],
                                sorted((k, a.slot.id if a.slot is not None else None,
                                        a.written, a.lazy_zero, a.spilled,
                                        a.slot.owner is a.token if a.slot is not None else None,
                                        len(a.remat) if a.remat is not None else None)
                                       for k, a in bb.allocs.items()))
                               for bb in tr.blockbufs]})
    return low, out


def _bulk_vs_events(monkeypatch, kernel, *args, min_iters=None):
    """The same kernel with the middle windows made in bulk and with every window replayed
    event by event: the same tracer states, node by node, and the same program. Returns the
    bulk calls per pass kind ("fast": a first pass, "log": with the access log)."""
    if min_iters is not None:
        monkeypatch.setattr(_steady, "MIN_ITERS", min_iters)
    calls = []
    bulk = _BULK
    monkeypatch.setattr(_steady, "BULK_MIN", _BULK_MIN)

    def spy(tr, prog, cur, m, sink, log, *a):
        calls.append(("fast" if tr.fast else "log", m, sink is not None))
        return bulk(tr, prog, cur, m, sink, log, *a)
    monkeypatch.setattr(_steady, "_bulk", spy)
    low_b, st_b = _tracer_states(monkeypatch, kernel, *args)
    monkeypatch.setattr(_steady, "BULK_MIN", 10 ** 9)
    n = len(calls)
    low_e, st_e = _tracer_states(monkeypatch, kernel, *args)
    assert len(calls) == n                # the event path made every window
    assert low_b.text == low_e.text
    assert low_b.tensors == low_e.tensors
    assert len(st_b) == len(st_e)
    for b, e in zip(st_b, st_e):
        if b["nodes"] is not None:
            assert len(b["nodes"]) == len(e["nodes"])
            for x, y in zip(b["nodes"], e["nodes"]):
                assert x == y
        assert b == e
    return calls, low_b


def test_bulk_windows_are_the_event_path_node_by_node(monkeypatch):
    """A loop of plain tiles (loads, instructions, stores, releases) and nested loops: the
    bulk path makes the middle windows, with and without an enclosing loop recording them."""
    a = np.random.default_rng(3).random((128, 128 * 40), dtype=np.float32)
    calls, low = _bulk_vs_events(monkeypatch, k_scale, a)
    assert any(c[0] == "log" and c[1] >= 8 for c in calls), calls
    a = np.random.default_rng(9).random((128, 24 * 20 * 8), dtype=np.float32)
    calls, low = _bulk_vs_events(monkeypatch, k_nest, a)
    assert any(c[2] for c in calls) and any(not c[2] for c in calls), calls
    np.testing.assert_allclose(nki.simulate_kernel(k_nest, a), 2 * a, rtol=1e-6)


def test_bulk_windows_of_the_tiled_matmul(monkeypatch):
    """The tiled tutorial matmul (loads recorded for the kept-load decision, PSUM
    accumulation into one tile, copies out, stores) at its moderate size, loops from 4
    iterations replayed."""
    case = [c for c in CASES if c.name == "matmul_tiled"][0]
    kernel, _ = case.load()
    calls, _ = _bulk_vs_events(monkeypatch, kernel, *case.args("moderate", 0, timing=True),
                               min_iters=4)
    assert calls, "no window made in bulk"


@nki.jit
def k_two_pass(a, b):
    """A block tensor (so two tracing passes) and a long loop of plain tiles: the first
    pass's replay (no text, no log) records the loads, the second counts them."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    held = nl.ndarray((2, nl.par_dim(P), 512), a.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(2):
        held[j, :, :] = nl.load(b[:, j * 512:(j + 1) * 512])
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.multiply(t, 2.0))
    u = nl.add(held[0, :, 0:128], held[1, :, 0:128])
    nl.store(out[:, 0:128], value=u)
    return out


def test_bulk_windows_in_both_passes(monkeypatch):
    rng = np.random.default_rng(4)
    a = rng.random((128, 128 * 40), dtype=np.float32)
    b = rng.random((128, 1024), dtype=np.float32)
    calls, low = _bulk_vs_events(monkeypatch, k_two_pass, a, b)
    kinds = {c[0] for c in calls}
    assert kinds == {"fast", "log"}, calls
    ref = 2 * a
    ref[:, 0:128] = b[:, 0:128] + b[:, 512:640]
    np.testing.assert_allclose(nki.simulate_kernel(k_two_pass, a, b), ref, rtol=1e-5)


def test_windows_with_allocator_decisions_replay_event_by_event(monkeypatch):
    """Windows that allocate blocks or use them (the hoisted tutorial matmul's loops) are not
    made in bulk: the event path replays them, and the program is the full trace's."""
    case = [c for c in CASES if c.name == "matmul_hoisted"][0]
    kernel, _ = case.load()
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    calls = []
    monkeypatch.setattr(_steady, "_bulk", lambda *a: calls.append(a))
    windows = []
    w = _steady._windows
    monkeypatch.setattr(_steady, "_windows",
                        lambda tr, prog, *a: (windows.append([t[0][0] for t in prog]),
                                              w(tr, prog, *a))[1])
    args = case.args("moderate", 0, timing=True)
    low = _both(kernel, *args)
    assert sum(e["replayed"] for e in low.loops) > 0
    assert not calls
    assert any("B" in kinds for kinds in windows)
    assert not _steady._bulk_ok([(("B", None, None), None, None, None)])


@nki.jit
def k_fixed_load(a, b):
    """A load that repeats the same data in every iteration (a key whose numbers do not move)
    beside one that moves."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        c = nl.load(b[:, 0:128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(t, c))
    return out


def test_bulk_windows_with_a_load_that_does_not_move(monkeypatch):
    rng = np.random.default_rng(5)
    a = rng.random((128, 128 * 40), dtype=np.float32)
    b = rng.random((128, 128), dtype=np.float32)
    calls, low = _bulk_vs_events(monkeypatch, k_fixed_load, a, b)
    assert calls, "no window made in bulk"
    np.testing.assert_allclose(nki.simulate_kernel(k_fixed_load, a, b),
                               a + np.tile(b, 40), rtol=1e-5)


# ---- a loop statement's later runs replayed from the steady state an earlier run found
# (_steady._known)

def _known_spy(monkeypatch):
    """Record each _known call's trip count and whether it found the remembered state."""
    calls = []
    known = _steady._known

    def spy(tr, key, iters, snaps):
        got = known(tr, key, iters, snaps)
        calls.append((key[1], got is not None))
        return got
    monkeypatch.setattr(_steady, "_known", spy)
    return calls


def _known_vs_recorded(monkeypatch, kernel, *args):
    """The same kernel with later runs replayed from the remembered state and with every run
    recorded anew: the same tracer states node by node, and the same program as the full
    trace. Returns (_known's calls, the lowering with reuse, the one without)."""
    calls = _known_spy(monkeypatch)
    monkeypatch.setattr(_steady, "KNOWN_ON", True)
    low_k, st_k = _tracer_states(monkeypatch, kernel, *args)
    n = len(calls)
    monkeypatch.setattr(_steady, "KNOWN_ON", False)
    low_r, st_r = _tracer_states(monkeypatch, kernel, *args)
    assert len(calls) == n                # no remembered state used
    monkeypatch.setattr(_steady, "KNOWN_ON", True)
    full = nki.lower(kernel, *args, policy={"steady_state": False})
    for low in (low_k, low_r):
        assert low.text == full.text and low.tensors == full.tensors
        assert low.spill == full.spill and low.steady_fallback is None
    assert len(st_k) == len(st_r)
    for k, r in zip(st_k, st_r):
        if k["nodes"] is not None:
            assert len(k["nodes"]) == len(r["nodes"])
            for x, y in zip(k["nodes"], r["nodes"]):
                assert x == y
        assert k == r
    return calls, low_k, low_r


@nki.jit
def k_runs(a, b):
    """An outer loop (below MIN_ITERS, traced) whose runs of two inner loops use a block
    tensor made anew per run, as the hoisted tutorial matmul's k loops do (two passes)."""
    P, F = a.shape
    out = nl.ndarray((P, b.shape[1]), a.dtype, buffer=nl.shared_hbm)
    for j in nl.affine_range(b.shape[1] // 128):
        held = nl.ndarray((F // 128, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(F // 128):
            held[i, :, :] = nl.load(a[:, i * 128:(i + 1) * 128])
        acc = nl.zeros((P, 128), nl.float32, buffer=nl.psum)
        w = nl.load(b[:, j * 128:(j + 1) * 128])
        for i in nl.affine_range(F // 128):
            acc += nl.matmul(held[i, :, :], w, transpose_x=True)
        nl.store(out[:, j * 128:(j + 1) * 128], value=nl.copy(acc, dtype=a.dtype))
    return out


def test_later_runs_reuse_the_steady_state_node_by_node(monkeypatch):
    rng = np.random.default_rng(11)
    a = rng.random((128, 128 * 24), dtype=np.float32)
    b = rng.random((128, 128 * 4), dtype=np.float32)
    calls, low_k, low_r = _known_vs_recorded(monkeypatch, k_runs, a, b)
    assert any(hit for _, hit in calls), calls
    replayed = lambda low: sum(e["replayed"] for e in low.loops)   # noqa: E731
    assert replayed(low_k) > replayed(low_r)
    ref = np.zeros((128, 512), np.float32)
    for j in range(4):
        for i in range(24):
            ref[:, j * 128:(j + 1) * 128] += a[:, i * 128:(i + 1) * 128].T @ b[:, j * 128:(j + 1) * 128]
    np.testing.assert_allclose(nki.simulate_kernel(k_runs, a, b), ref, rtol=1e-4)


def test_later_runs_of_the_tutorial_matmuls(monkeypatch):
    """The hoisted and blocked tutorial matmuls at their moderate size, loops from 4
    iterations replayed: their k loops' later runs take the remembered state."""
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    for name in ("matmul_hoisted", "matmul_block_free"):
        case = [c for c in CASES if c.name == name][0]
        kernel, _ = case.load()
        calls, _, _ = _known_vs_recorded(monkeypatch, kernel,
                                         *case.args("moderate", 0, timing=True))
        assert any(hit for _, hit in calls), (name, calls)


def k_outer_branch(a):
    """Four runs of one loop; the odd ones take a branch on the outer (plain) index: the
    same instructions and counters, another operation in one of them."""
    P, F = a.shape
    R = F // 128 // 4
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for j in range(4):
        for i in nl.affine_range(R):
            c = (j * R + i) * 128
            t = nl.load(a[:, c:c + 128])
            if j % 2 == 1:
                t = nl.add(t, 1.0)
            else:
                t = nl.multiply(t, 1.0)
            nl.store(out[:, c:c + 128], value=t)
    return out


def k_trips(a):
    """Runs of one loop statement with different trip counts."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    base = 0
    for n in (24, 28, 24, 32):
        for i in nl.affine_range(n):
            c = (base + i) * 128
            t = nl.load(a[:, c:c + 128])
            nl.store(out[:, c:c + 128], value=nl.multiply(t, 2.0))
        base += n
    return out


def k_other_buffer(a, s):
    """Four runs of one loop reading a tile loaded before it: in the second run that tile is
    a block of a block tensor, not a plain tile (another kind of buffer, so other events)."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    blk = nl.ndarray((2, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
    blk[1, :, :] = nl.load(s[:, 0:128])
    for j in range(4):
        sc = nl.load(s[:, j * 128:(j + 1) * 128])
        for i in nl.affine_range(24):
            c = (j * 24 + i) * 128
            t = nl.load(a[:, c:c + 128])
            if j == 1:
                r = nl.multiply(t, blk[1, :, :])
            else:
                r = nl.multiply(t, sc)
            nl.store(out[:, c:c + 128], value=r)
    return out


def test_later_runs_that_differ_fall_back(monkeypatch):
    """A run whose events or trip count differ from the remembered run's is recorded as a
    first run is (and remembered in its turn); the program is the full trace's."""
    rng = np.random.default_rng(12)
    a = rng.random((128, 128 * 96), dtype=np.float32)
    ref = a.copy()
    for j in (1, 3):
        ref[:, j * 24 * 128:(j + 1) * 24 * 128] += 1.0
    # run 2 (a new site's buffers still being made: not steady after one window) is
    # recorded; runs 3 and 4 find the state of runs 1 and 2
    calls, low, _ = _known_vs_recorded(monkeypatch, k_outer_branch, a)
    assert calls.count((24, True)) == 2 and (24, False) in calls, calls
    assert _loop(low)["replayed"] > 0
    np.testing.assert_allclose(nki.simulate_kernel(k_outer_branch, a), ref, rtol=1e-6)
    # one state remembered: each later run finds the other branch's, whose events differ
    monkeypatch.setattr(_steady, "KNOWN", 1)
    calls, low, _ = _known_vs_recorded(monkeypatch, k_outer_branch, a)
    assert calls and (24, True) not in calls, calls
    monkeypatch.setattr(_steady, "KNOWN", 4)

    a = rng.random((128, 128 * 108), dtype=np.float32)
    calls, low, _ = _known_vs_recorded(monkeypatch, k_trips, a)
    # only the third run (24 iterations again) has a remembered state to check
    assert calls and all(n == 24 for n, _ in calls) and (24, True) in calls, calls
    e = _loop(low)
    assert e["runs"] == 4 and e["refused"] is None
    np.testing.assert_allclose(nki.simulate_kernel(k_trips, a), 2 * a, rtol=1e-6)

    a = rng.random((128, 128 * 96), dtype=np.float32)
    s = rng.random((128, 512), dtype=np.float32)
    calls, low, _ = _known_vs_recorded(monkeypatch, k_other_buffer, a, s)
    assert (24, False) in calls and (24, True) in calls, calls
    ref = a * np.repeat(s.reshape(128, 4, 128), 24, axis=1).reshape(128, -1)
    ref[:, 24 * 128:48 * 128] = a[:, 24 * 128:48 * 128] * np.tile(s[:, 0:128], 24)
    np.testing.assert_allclose(nki.simulate_kernel(k_other_buffer, a, s), ref, rtol=1e-6)


def test_a_remembered_state_that_does_not_hold_lowers_again(monkeypatch):
    """Steps remembered wrong (doubled): a later run replayed from them is not continued by
    its last iterations, so the kernel is lowered again in full, with the full program."""
    remember = _steady._remember

    def wrong(tr, key, found):
        P, win, steps, dn = found
        remember(tr, key, (P, win, [tuple(2 * x for x in st) for st in steps], dn))
    monkeypatch.setattr(_steady, "_remember", wrong)
    calls = _known_spy(monkeypatch)
    a = np.random.default_rng(13).random((128, 128 * 96), dtype=np.float32)
    low = nki.lower(k_outer_branch, a)
    full = nki.lower(k_outer_branch, a, policy={"steady_state": False})
    assert (24, True) in calls
    assert low.steady_fallback is not None and "continue" in low.steady_fallback
    assert low.text == full.text


def _split_ref(text):
    """The recorder's reading of an instruction's text before texts were kept (rec_emit): the
    parts between the numbers of `+N[` offsets, the numbers, and per number whether it
    follows an SBUF (`sb:`) or PSUM (`ps:`) operand's name."""
    parts = _steady._OFF.split(text)
    parts, vals = tuple(parts[0::2]), tuple(int(v) for v in parts[1::2])
    cand = []
    for j in range(len(vals)):
        sp = "sb" if ":" in parts[j] and parts[j].rsplit(" ", 1)[-1].startswith("sb:") else \
            "ps" if parts[j].rsplit(" ", 1)[-1].startswith("ps:") else None
        if sp is not None:
            cand.append((j, sp == "sb"))
    return parts, vals, tuple(cand)


def test_recorded_texts_are_read_once_per_text(monkeypatch):
    """rec_emit and the load records read a text once (_steady._split_rec keeps the reading
    per text, bounded): every text the recordings of the moderate hoisted matmul meet reads
    as before, a text met again is answered from what was kept, and the program, tensor
    report, spill figures and loop report are those of a lowering that reads every text
    anew."""
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    case = next(c for c in CASES if c.name == "matmul_hoisted")
    kernel, _ = case.load()
    args = case.args("moderate", 0, timing=True)
    seen = []
    real = _steady._split_rec
    monkeypatch.setattr(_steady, "_split_rec", lambda t: seen.append(t) or real(t))
    _steady._SPLITS.clear()
    kept = nki.lower(kernel, *args)
    assert len(seen) > 100 and len(set(seen)) < len(seen)      # texts met again
    for t in set(seen):
        assert _steady._SPLITS[t] == _split_ref(t)
        assert real(t) is _steady._SPLITS[t]                   # answered from what was kept
    assert any(c for _, _, c in _steady._SPLITS.values())      # offsets in on-chip buffers
    monkeypatch.setattr(_steady, "_SPLITS_MAX", 0)              # (nothing kept)
    _steady._SPLITS.clear()
    anew = nki.lower(kernel, *args)
    assert len(_steady._SPLITS) <= 1
    assert (kept.text, kept.tensors, kept.spill, kept.loops) == \
        (anew.text, anew.tensors, anew.spill, anew.loops)
    assert sum(e["replayed"] for e in kept.loops) > 0
    _steady._SPLITS.clear()


# ---- block tensors made in every iteration of a recorded loop (docs/nki.md, "Loops kept")

@nki.jit
def k_make(a, w):
    """Each of 24 iterations makes a block tensor, fills its 4 blocks (from data of its own)
    and reads them all."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        blocks = nl.ndarray((4, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
        for j in nl.affine_range(4):
            blocks[j, :, :] = nl.load(w[:, (i * 4 + j) * 128:(i * 4 + j + 1) * 128])
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        s = nl.add(nl.add(blocks[0, :, :], blocks[1, :, :]), nl.add(blocks[2, :, :], blocks[3, :, :]))
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.multiply(t, s))
    return out


def _k_make_ref(a, w):
    s = w.reshape(128, -1, 4, 128).sum(axis=2).reshape(128, -1)
    return a * s


@pytest.mark.parametrize("rule", ["rotate", "lru"])
def test_replays_a_loop_that_makes_a_block_tensor(rule):
    """The tensors made in the windows are made again for each replayed window: the same
    program, tensor report (one entry per tensor made) and spill figures as the full trace
    (loop_buffers "rotate"; under "lru" the buffers are not periodic: refused, the same
    program)."""
    rng = np.random.default_rng(21)
    a = rng.random((128, 128 * 24), dtype=np.float32)
    w = rng.random((128, 512 * 24), dtype=np.float32)
    low = _both(k_make, a, w, loop_buffers=rule)
    e = _loop(low)
    if rule == "rotate":
        assert e["refused"] is None and e["replayed"] >= 12, low.loops
    else:
        # each instance takes the free buffers released longest ago, a ring longer than the
        # periods searched: the state after a window never repeats, and every iteration runs
        assert e["replayed"] == 0 and e["refused"].startswith("no steady state"), low.loops
    assert sum(1 for t in low.tensors if t.get("blocks")) == 24
    np.testing.assert_allclose(nki.simulate_kernel(k_make, a, w, policy={"loop_buffers": rule}),
                               _k_make_ref(a, w), rtol=1e-5)


def test_replays_the_hoisted_matmul_outer_loop():
    """The hoisted tutorial matmul's m loop (a block tensor made per m and per n) with 24
    iterations: replayed, with the full trace's program, and right against NumPy (its loads
    not kept resident, as at the tutorial size: at this size they would be)."""
    from ncsim.nki.examples.catalog import BY_NAME
    case = BY_NAME["matmul_hoisted"]
    kernel, ref = case.load()
    rng = np.random.default_rng(22)
    lhsT = rng.random((256, 128 * 24), dtype=np.float32)
    rhs = rng.random((256, 1024), dtype=np.float32)
    pol = {"resident_loads": "never"}
    low = _both(kernel, lhsT, rhs, **pol)
    e = [x for x in low.loops if x["iterations"] == 24][0]
    assert e["refused"] is None and e["replayed"] >= 12, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(kernel, lhsT, rhs, policy=pol),
                               lhsT.T @ rhs, rtol=1e-4, atol=1e-3)


@nki.jit
def k_make_grow(a):
    """The tensor made in each iteration is larger than the last one's: no two windows alike."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        g = nl.ndarray((2, nl.par_dim(P), 128 + 4 * i), a.dtype, buffer=nl.sbuf)
        g[0, :, 0:128] = nl.load(a[:, i * 128:(i + 1) * 128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.multiply(g[0, :, 0:128], 3.0))
    return out


def test_refuses_windows_whose_made_tensors_differ():
    a = np.random.default_rng(23).random((128, 128 * 24), dtype=np.float32)
    low = _both(k_make_grow, a)
    e = _loop(low)
    assert e["replayed"] == 0 and e["refused"].startswith("no steady state"), low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_make_grow, a), 3 * a, rtol=1e-6)


@nki.jit
def k_make_escape(a, b):
    """Each iteration reads the tensor the iteration before it made."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    prev = nl.ndarray((2, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
    prev[0, :, :] = nl.load(b)
    for i in nl.affine_range(F // 128):
        cur = nl.ndarray((2, nl.par_dim(P), 128), a.dtype, buffer=nl.sbuf)
        cur[0, :, :] = nl.load(a[:, i * 128:(i + 1) * 128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(prev[0, :, :], cur[0, :, :]))
        prev = cur
    return out


def test_refuses_a_made_tensor_used_by_the_next_iteration():
    """(Through a variable bound before the loop and rebound by the body, which the snapshots
    would refuse too; the recorder refuses at the use.)"""
    rng = np.random.default_rng(24)
    a = rng.random((128, 128 * 24), dtype=np.float32)
    b = rng.random((128, 128), dtype=np.float32)
    low = _both(k_make_escape, a, b)
    e = _loop(low)
    assert e["replayed"] == 0, low.loops
    assert e["refused"] == "a block tensor made in one iteration is used in another"
    ref = a.copy()
    ref[:, 0:128] += b
    ref[:, 128:] += a[:, :-128]
    np.testing.assert_allclose(nki.simulate_kernel(k_make_escape, a, b), ref, rtol=1e-6)


def test_recorder_refuses_a_made_tensor_of_another_iteration():
    """Recorder.other: a block of a tensor made in an earlier recorded iteration; and the
    windows' comparison renames only the tensors made in them, k-th to k-th, made alike."""
    class BB:
        def __init__(self, o):
            self.ordinal = o
    rec = _steady.Recorder()
    rec.mord, rec.mine = {1, 2}, {2}
    rec.other(BB(2))
    rec.other(BB(5))
    assert rec.bad is None
    rec.other(BB(1))
    assert rec.bad == "a block tensor made in one iteration is used in another"
    from ncsim.nki import _core as C
    f32 = np.dtype(np.float32)

    def bb(o, shape=(2, 128, 64)):
        return C.BlockBuf("sbuf", f32, shape, 1, "t", o, 10)
    x0, x1, z, y = bb(1), bb(2), bb(0), bb(3)
    wa = [("N", x0, "s"), ("B", x0, None), ("B", z, None)]
    assert _steady._same_win(wa, [("N", x1, "s"), ("B", x1, None), ("B", z, None)])
    # a tensor not made in the windows is the same object in both
    assert not _steady._same_win(wa, [("N", x1, "s"), ("B", x1, None), ("B", y, None)])
    # made at another site, or with another shape
    assert not _steady._same_win(wa, [("N", x1, "s2"), ("B", x1, None), ("B", z, None)])
    x2 = bb(4, (2, 128, 32))
    assert not _steady._same_win(wa, [("N", x2, "s"), ("B", x2, None), ("B", z, None)])


@nki.jit
def k_make_escape_inner(a, b, d):
    """An inner loop reads the tensor the previous outer iteration made."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    prev = nl.ndarray((2, nl.par_dim(P), 8), a.dtype, buffer=nl.sbuf)
    prev[0, :, :] = nl.load(b)
    for i in nl.affine_range(20):
        cur = nl.ndarray((2, nl.par_dim(P), 8), a.dtype, buffer=nl.sbuf)
        cur[0, :, :] = nl.load(d[:, i * 8:i * 8 + 8])
        for j in nl.affine_range(20):
            c = i * 160 + j * 8
            nl.store(out[:, c:c + 8], value=nl.add(nl.load(a[:, c:c + 8]), prev[0, :, :]))
        prev = cur
    return out


def test_refuses_a_made_tensor_used_by_an_inner_loop_of_the_next_iteration():
    rng = np.random.default_rng(25)
    a = rng.random((128, 3200), dtype=np.float32)
    b = rng.random((128, 8), dtype=np.float32)
    d = rng.random((128, 160), dtype=np.float32)
    low = _both(k_make_escape_inner, a, b, d)
    # the outer loop; and the inner loop's runs while the outer one was recorded (once the
    # outer loop is refused it is no longer recorded, and for the inner loop's later runs the
    # previous outer iteration's tensor is one made before them: replayed)
    e = _loop(low, [x["line"] for x in low.loops if x["iterations"] == 20][0])
    assert e["replayed"] == 0, low.loops
    assert e["refused"] == "a block tensor made in one iteration is used in another", low.loops
    inner = [x for x in low.loops if x["iterations"] == 400][0]
    assert inner["refused"] == e["refused"] and inner["replayed"] > 0, low.loops
    ref = a.copy()
    for i in range(20):
        ref[:, i * 160:(i + 1) * 160] += np.tile(b if i == 0 else d[:, (i - 1) * 8:i * 8], 20)
    np.testing.assert_allclose(nki.simulate_kernel(k_make_escape_inner, a, b, d), ref, rtol=1e-6)


# ---- integer immediates that grow with the loop index (docs/nki.md, "Loops kept")

@nki.jit
def k_iota_index(a):
    P, F = a.shape
    out = nl.ndarray((P, F), nl.float32, buffer=nl.shared_hbm)
    p = nl.arange(P)[:, None]
    f = nl.arange(128)[None, :]
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        pos = nisa.iota(i * 128 + p * F + f, dtype=nl.float32)
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(t, pos))
    return out


@nki.jit
def k_iota_square(a):
    P, F = a.shape
    out = nl.ndarray((P, F), nl.float32, buffer=nl.shared_hbm)
    p = nl.arange(P)[:, None]
    f = nl.arange(128)[None, :]
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        pos = nisa.iota(i * i + p * 0 + f, dtype=nl.float32)
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(t, pos))
    return out


@nki.jit
def k_rand_loop(a):
    P, F = a.shape
    out = nl.ndarray((P, F), nl.float32, buffer=nl.shared_hbm)
    nl.random_seed(7)
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        r = nl.rand((P, 128), dtype=nl.float32)
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(t, r))
    return out


def _program(text):
    import ncsim
    return ncsim.assemble(text).disassemble()


def test_iota_of_the_index_is_replayed_and_folded():
    """An iota of i * 128 + ...: its base= grows by 128 per iteration; the loop is kept (the
    base an expression of the loop variable in the .loop text), the program the full trace's."""
    a = np.random.default_rng(3).random((128, 128 * 40), dtype=np.float32)
    low = _both(k_iota_index, a)
    e = _loop(low)
    assert e["iterations"] == 40 and e["replayed"] >= 24 and e["refused"] is None
    assert re.search(r"iota .*, base=\(.*128\*i\d", low.text), low.text
    flat = nki.lower(k_iota_index, a, policy={"fold_loops": False, "steady_state": False})
    assert "base=" in flat.text and ".loop" not in flat.text
    assert _program(low.text) == _program(flat.text)
    out = nki.simulate_kernel(k_iota_index, a)
    F = a.shape[1]
    want = a + (np.arange(128)[:, None] * F + np.arange(F)[None, :]).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_iota_not_a_progression_is_written_out():
    """base = i * i changes by a different amount each iteration: no steady state, every
    iteration traced, and the values right."""
    a = np.random.default_rng(4).random((128, 128 * 24), dtype=np.float32)
    low = _both(k_iota_square, a)
    e = _loop(low)
    assert e["replayed"] == 0 and e["refused"].startswith("no steady state"), e
    flat = nki.lower(k_iota_square, a, policy={"fold_loops": False, "steady_state": False})
    assert all(f"base={i * i}," in flat.text for i in range(24))
    assert _program(low.text) == _program(flat.text)
    out = nki.simulate_kernel(k_iota_square, a)
    i = np.repeat(np.arange(24), 128)
    want = a + (i * i + np.tile(np.arange(128), 24))[None, :].astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_rand_in_a_loop_is_replayed():
    """nl.rand's counters start where the previous call's ended: the replay advances the call
    counter as the windows it stands for would have; the values are the full trace's."""
    a = np.zeros((128, 128 * 40), np.float32)
    low = _both(k_rand_loop, a)
    e = _loop(low)
    assert e["iterations"] == 40 and e["replayed"] >= 24 and e["refused"] is None
    assert re.search(r"iota .*, base=\(.*16384\*i\d", low.text), low.text
    flat = nki.lower(k_rand_loop, a, policy={"fold_loops": False, "steady_state": False})
    assert _program(low.text) == _program(flat.text)
    got = nki.simulate_kernel(k_rand_loop, a)
    ref = nki.simulate_kernel(k_rand_loop, a, policy={"steady_state": False,
                                                      "fold_loops": False})
    np.testing.assert_array_equal(got, ref)
    # distinct draws per iteration, in [0, 1)
    assert got.min() >= 0.0 and got.max() < 1.0
    assert not np.array_equal(got[:, :128], got[:, 128:256])


def test_rand_after_a_replayed_loop_continues_the_counters():
    """A rand call after the loop takes the counters the full trace gives it (the replayed
    calls counted)."""
    @nki.jit
    def k(a):
        P, F = a.shape
        out = nl.ndarray((P, F + 128), nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(F // 128):
            r = nl.rand((P, 128), dtype=nl.float32)
            nl.store(out[:, i * 128:(i + 1) * 128], value=r)
        nl.store(out[:, F:F + 128], value=nl.rand((P, 128), dtype=nl.float32))
        return out

    a = np.zeros((128, 128 * 30), np.float32)
    low = _both(k, a)
    assert _loop(low)["replayed"] > 0
    assert "base=491520," in low.text      # the 31st call: 30 * 128 * 128 counters before it


@nki.jit
def k_xor_index(a):
    P, F = a.shape
    out = nl.ndarray((P, F), nl.int32, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 128):
        t = nl.load(a[:, i * 128:(i + 1) * 128])
        nl.store(out[:, i * 128:(i + 1) * 128], value=nl.bitwise_xor(t, i * 3 + 1))
    return out


def test_integer_operand_of_the_index_is_replayed_and_folded():
    """An integer scalar operand (a bitwise operation's) computed from the index: the loop is
    kept, the operand an expression in the .loop text, the program the full trace's."""
    a = np.random.default_rng(5).integers(-1000, 1000, (128, 128 * 40)).astype(np.int32)
    low = _both(k_xor_index, a)
    e = _loop(low)
    assert e["iterations"] == 40 and e["replayed"] >= 24 and e["refused"] is None
    assert re.search(r"bitwise_xor, \(.*6\*i\d", low.text), low.text
    flat = nki.lower(k_xor_index, a, policy={"fold_loops": False, "steady_state": False})
    assert _program(low.text) == _program(flat.text)
    out = nki.simulate_kernel(k_xor_index, a)
    np.testing.assert_array_equal(out, a ^ (np.repeat(np.arange(40), 128) * 3 + 1)[None, :])


def test_float_operand_of_the_index_is_not_folded():
    """A float immediate computed from the index (nl.add of an fp32 tile): floats are never
    folded nor extrapolated, so the loop is traced in full; values right."""
    @nki.jit
    def k(a):
        P, F = a.shape
        out = nl.ndarray((P, F), nl.float32, buffer=nl.shared_hbm)
        for i in nl.affine_range(F // 128):
            t = nl.load(a[:, i * 128:(i + 1) * 128])
            nl.store(out[:, i * 128:(i + 1) * 128], value=nl.add(t, i * 3 + 1))
        return out

    a = np.random.default_rng(6).random((128, 128 * 24), dtype=np.float32)
    low = _both(k, a)
    assert _loop(low)["replayed"] == 0
    assert all(f"add, {float(3 * i + 1)!r}" in low.text for i in range(24))
    out = nki.simulate_kernel(k, a)
    np.testing.assert_array_equal(out, a + (np.repeat(np.arange(24), 128) * 3 + 1)[None, :]
                                  .astype(np.float32))


def test_replayed_windows_allocations_repeat_with_the_rotation(monkeypatch):
    """What a per-window allocation (docs/nki.md, "Speed": *Replayed windows that allocate*)
    would rest on: in k_make's replayed windows (second pass, loop_buffers "rotate") the
    blocks allocated take, in order, the buffers the window before took (a window here is one
    turn of the rotation; in the hoisted tutorial matmul's m loop, a window is one iteration
    and takes the buffers of the window two before)."""
    from ncsim.nki import _core
    wins, cur = [], []
    windows = _steady._windows

    def one_by_one(tr, prog, c, memo, times, *a):
        if tr.live is None or not any(p[0][0] == "B" for p in prog):
            return windows(tr, prog, c, memo, times, *a)
        for _ in range(times):
            cur.clear()
            windows(tr, prog, c, memo, 1, *a)
            wins.append(list(cur))
    alloc = _core.Tracer._block_alloc

    def spy(self, bb, blk, a):
        got = alloc(self, bb, blk, a)
        if type(self.steady) is _steady.Guard:
            cur.append(got.slot.id)
        return got
    monkeypatch.setattr(_steady, "_windows", one_by_one)
    monkeypatch.setattr(_core.Tracer, "_block_alloc", spy)
    rng = np.random.default_rng(31)
    a = rng.random((128, 128 * 24), dtype=np.float32)
    w = rng.random((128, 512 * 24), dtype=np.float32)
    low = nki.lower(k_make, a, w)
    depth = _core.Policy().block_bufs
    assert depth == 2
    # a window is one turn of the rotation: `depth` iterations of 4 blocks each, on disjoint
    # buffers, and every replayed window takes the buffers of the one before, in order
    assert len(wins) >= 4 and _loop(low)["replayed"] == depth * len(wins), (wins, low.loops)
    for x in wins:
        assert len(x) == 4 * depth and len(set(x)) == len(x), wins
        assert x == wins[0]


# ---- short loops with large bodies (MIN_SHORT..MIN_ITERS-1 iterations, BIG_BODY events)

def _size_of(low):
    """The events of a short loop's first iteration, as its .loops refusal names them."""
    import re
    e = _loop(low)
    m = re.search(r"first iteration made (\d+) events", e["refused"] or "")
    assert m, low.loops
    return int(m.group(1))


def _k_make_args(iters):
    rng = np.random.default_rng(31)
    return (rng.random((128, 128 * iters), dtype=np.float32),
            rng.random((128, 512 * iters), dtype=np.float32))


def test_short_loop_with_a_small_body_is_not_recorded(monkeypatch):
    """k_make with 16 iterations (fewer than MIN_ITERS) and a body below BIG_BODY: traced in
    full, its .loops entry saying why; the program is the full trace's."""
    assert _steady.MIN_SHORT <= 16 < _steady.MIN_ITERS
    args = _k_make_args(16)
    low = _both(k_make, *args)
    e = _loop(low)
    size = _size_of(low)
    assert 0 < size < _steady.BIG_BODY
    assert e["replayed"] == 0 and e["iterations"] == 16 and e["runs"] == 1
    assert e["refused"] == (f"a short loop (16 iterations) whose first iteration made {size} "
                            f"events (recorded from {_steady.BIG_BODY})")


def test_short_loop_with_a_large_body_is_replayed(monkeypatch):
    """The same loop with BIG_BODY at its body's size (the boundary: recorded from BIG_BODY
    events on): replayed, with the full trace's program, tensor report (16 tensors made) and
    spill figures, and right against NumPy; one event more than its body and it is not."""
    args = _k_make_args(16)
    size = _size_of(nki.lower(k_make, *args))
    monkeypatch.setattr(_steady, "BIG_BODY", size + 1)
    e = _loop(_both(k_make, *args))
    assert e["replayed"] == 0 and e["refused"].startswith("a short loop"), e
    monkeypatch.setattr(_steady, "BIG_BODY", size)
    low = _both(k_make, *args)
    e = _loop(low)
    # period 2 (two tensors made alternate their buffers): the warm-up, 3 windows and the
    # last period checked traced, 6 of 16 replayed
    assert e["refused"] is None and e["replayed"] == 6, low.loops
    assert sum(1 for t in low.tensors if t.get("blocks")) == 16
    np.testing.assert_allclose(nki.simulate_kernel(k_make, *args), _k_make_ref(*args),
                               rtol=1e-5)


@pytest.mark.parametrize("iters", [_steady.MIN_SHORT - 1, _steady.MIN_SHORT])
def test_short_loop_boundary_in_iterations(iters, monkeypatch):
    """A large body (BIG_BODY 1) makes a loop of MIN_SHORT iterations recorded and replayed;
    one iteration fewer and it is not even measured (no .loops entry)."""
    monkeypatch.setattr(_steady, "BIG_BODY", 1)
    args = _k_make_args(iters)
    low = _both(k_make, *args)
    if iters < _steady.MIN_SHORT:
        assert low.loops == []
    else:
        e = _loop(low)
        assert e["refused"] is None and e["replayed"] > 0, low.loops
    np.testing.assert_allclose(nki.simulate_kernel(k_make, *args), _k_make_ref(*args),
                               rtol=1e-5)


@nki.jit
def k_short_runs(a):
    """A 14-iteration loop run 3 times (by an outer loop too short to be recorded)."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(3):
        for i in nl.affine_range(14):
            c = (r * 14 + i) * 128
            t = nl.load(a[:, c:c + 128])
            nl.store(out[:, c:c + 128], value=nl.add(nl.multiply(t, t), 1.0))
    return out


def _count_recorders(monkeypatch):
    """A list that gets an item for every Recorder made from now on."""
    made = []

    class Counted(_steady.Recorder):
        __slots__ = ()

        def __init__(self):
            made.append(1)
            super().__init__()
    monkeypatch.setattr(_steady, "Recorder", Counted)
    return made


def test_short_loop_later_runs(monkeypatch):
    """Later runs of a short loop statement: with a small body, measured once per pass and not
    recorded again (one Recorder per pass); with a large body, recorded in every run, the
    later runs replayed from the first run's steady state (_known) -- the same program in
    both, and right against NumPy."""
    a = np.random.default_rng(32).random((128, 128 * 42), dtype=np.float32)
    made = _count_recorders(monkeypatch)
    low = _both(k_short_runs, a)
    e = _loop(low)
    passes = e["runs"] // 3
    assert e["runs"] == 3 * passes and e["replayed"] == 0 and \
        e["refused"].startswith("a short loop")
    assert len(made) == passes, low.loops        # one per pass: the first run of each
    made.clear()
    monkeypatch.setattr(_steady, "BIG_BODY", 1)
    reused = []
    orig = _steady._known

    def known(*x):
        got = orig(*x)
        reused.append(got is not None)
        return got
    monkeypatch.setattr(_steady, "_known", known)
    low = _both(k_short_runs, a)
    e = _loop(low)
    assert e["refused"] is None and e["replayed"] >= 3 * passes * 6, low.loops
    assert len(made) == 3 * passes and any(reused)
    np.testing.assert_allclose(nki.simulate_kernel(k_short_runs, a), a * a + 1.0, rtol=1e-6)


@nki.jit
def k_short_refused(a):
    """A 14-iteration loop run 3 times whose body decides on the index (refused)."""
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(3):
        for i in nl.affine_range(14):
            c = (r * 14 + i) * 128
            t = nl.load(a[:, c:c + 128])
            if i % 2:
                t = nl.multiply(t, 2.0)
            nl.store(out[:, c:c + 128], value=t)
    return out


def test_short_loop_refused_is_not_recorded_again(monkeypatch):
    """A short loop with a large body whose first run is refused: its later runs in the pass
    are not recorded (one Recorder per pass), and .loops gives the first refusal's reason."""
    a = np.random.default_rng(33).random((128, 128 * 42), dtype=np.float32)
    made = _count_recorders(monkeypatch)
    monkeypatch.setattr(_steady, "BIG_BODY", 1)
    low = _both(k_short_refused, a)
    e = _loop(low)
    passes = e["runs"] // 3
    assert e["replayed"] == 0 and "modulo" in e["refused"], low.loops
    assert len(made) == passes, low.loops
    ref = a.reshape(128, 42, 128) * np.where(np.arange(14) % 2, 2.0, 1.0)[None, None, :].repeat(3, 0).reshape(1, 42, 1)
    np.testing.assert_allclose(nki.simulate_kernel(k_short_refused, a), ref.reshape(128, -1),
                               rtol=1e-6)
