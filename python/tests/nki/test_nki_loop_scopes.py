"""A tensor created in a loop iteration dies when the iteration ends (docs/nki.md, "Loop
scopes"): its buffer takes the next iteration's tensor although the Python variable still
names it, unless the tensor escapes the iteration."""
import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.language as nl
from ncsim.nki.examples import runner
from ncsim.nki.examples.catalog import BY_NAME

W = 20480          # fp32 columns: 80 KiB per partition, two of them fill most of SBUF
RANGES = {"affine": nl.affine_range, "sequential": nl.sequential_range, "static": nl.static_range}


def _big_tiles(rng_fn):
    @nki.jit
    def k(a):
        P, F = a.shape
        out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
        for i in rng_fn(F // W):
            buf = nl.ndarray((P, W), a.dtype, buffer=nl.sbuf)
            buf[...] = nl.load(a[:, i * W:(i + 1) * W])
            res = nl.ndarray((P, W), a.dtype, buffer=nl.sbuf)
            res[...] = nl.multiply(buf, 2.0)
            nl.store(out[:, i * W:(i + 1) * W], value=res)
        return out
    return k


@pytest.mark.parametrize("kind", sorted(RANGES))
def test_big_tile_per_iteration(kind):
    """Six iterations of 160 KiB of tiles per partition: only one iteration fits in SBUF."""
    k = _big_tiles(RANGES[kind])
    a = np.random.default_rng(1).random((128, 6 * W), dtype=np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, a), a * 2)
    assert nki.check(k, a) == []


@nki.jit
def k_nested(a):
    """The inner loop's tile names stay bound across iterations of the outer loop."""
    R, P, F = a.shape
    out = nl.ndarray((R, P, F), a.dtype, buffer=nl.shared_hbm)
    for r in nl.affine_range(R):
        for j in nl.affine_range(F // W):
            buf = nl.ndarray((P, W), a.dtype, buffer=nl.sbuf)
            buf[...] = nl.load(a[r, :, j * W:(j + 1) * W])
            res = nl.ndarray((P, W), a.dtype, buffer=nl.sbuf)
            res[...] = nl.add(buf, 1.0)
            nl.store(out[r, :, j * W:(j + 1) * W], value=res)
    return out


def test_nested_loops_release_inner_tiles():
    a = np.random.default_rng(2).random((2, 128, 3 * W), dtype=np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k_nested, a), a + 1)
    assert nki.check(k_nested, a) == []


@nki.jit
def k_escape_list(a):
    """Tiles kept in a list made before the loop escape their iteration and stay valid."""
    P, F = a.shape
    out = nl.ndarray((P, 512), a.dtype, buffer=nl.shared_hbm)
    tiles = []
    for i in nl.affine_range(F // 512):
        t = nl.load(a[:, i * 512:(i + 1) * 512])
        tiles.append(t)
    acc = nl.zeros((P, 512), a.dtype, buffer=nl.sbuf)
    for t in tiles:
        acc[...] = nl.add(acc, t)
    nl.store(out, value=acc)
    return out


def test_tiles_escaping_through_a_list_survive():
    a = np.random.default_rng(3).random((128, 4 * 512), dtype=np.float32)
    want = a.reshape(128, 4, 512).sum(axis=1)
    np.testing.assert_allclose(nki.simulate_kernel(k_escape_list, a), want, rtol=1e-6)
    assert nki.check(k_escape_list, a) == []


@nki.jit
def k_carried(a):
    """A value carried from one iteration to the next by rebinding an outer variable."""
    P, F = a.shape
    out = nl.ndarray((P, 512), a.dtype, buffer=nl.shared_hbm)
    acc = nl.zeros((P, 512), a.dtype, buffer=nl.sbuf)
    for i in nl.sequential_range(F // 512):
        acc = nl.add(acc, nl.load(a[:, i * 512:(i + 1) * 512]))
    nl.store(out, value=acc)
    return out


def test_loop_carried_rebinding_survives():
    a = np.random.default_rng(4).random((128, 5 * 512), dtype=np.float32)
    want = a.reshape(128, 5, 512).sum(axis=1)
    np.testing.assert_allclose(nki.simulate_kernel(k_carried, a), want, rtol=1e-6)
    assert nki.check(k_carried, a) == []


@nki.jit
def k_used_after_loop(a):
    P, F = a.shape
    out = nl.ndarray((P, 512), a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(F // 512):
        t = nl.exp(nl.load(a[:, i * 512:(i + 1) * 512]))
    nl.store(out, value=t)           # line 109: t died with its iteration
    return out


def test_local_used_after_its_loop_is_an_error():
    a = np.zeros((128, 1024), np.float32)
    with pytest.raises(nki.NkiError) as e:
        nki.lower(k_used_after_loop, a)
    msg = str(e.value)
    assert "err_local_variable_used_out_of_scope" in msg
    assert "test_nki_loop_scopes.py:109:" in msg, msg


def test_block_free_needs_reuse_and_is_correct():
    """fp32, K = 4096: one rhs block (128 KiB per partition) plus the lhsT block leave no room
    for the next n iteration's rhs block unless the previous one is released."""
    case = BY_NAME["matmul_block_free"]
    kernel, ref = case.load()
    args = case.make_args(dict(M=256, K=4096, N=2048), np.random.default_rng(5))
    runner.compare(case, nki.simulate_kernel(kernel, *args), ref(*args))
    assert nki.check(kernel, *args) == []


@pytest.mark.parametrize("name", ["matmul_block_free", "matmul_optimized"])
def test_matmul_lowers_at_tutorial_size(name):
    """The tutorial benchmark size (lhsT [8192, 4096], rhs [8192, 8192] bf16) lowers; the
    simulated figures are in docs/nki.md's table."""
    case = BY_NAME[name]
    kernel, _ = case.load()
    low = nki.lower(kernel, *case.args("tutorial", timing=True))
    assert low.instructions > 30000
