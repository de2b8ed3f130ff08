"""nl.loop_reduce (docs/nki.md, "Lowering"): `b = loop_reduce(a, op, loop_indices)` is
`b = tensor_tensor(b, a, op)` on every iteration; a destination that nothing wrote yet takes
the first value."""
import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def k_rowmax_blocks(x):
    """Compiler style: per 128-row tile, the row maximum over 512-column chunks reduced into a
    block of a block tensor that is written nowhere else."""
    R, C = x.shape
    RT, CT = R // 128, C // 512
    out = nl.ndarray((R, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.ndarray((RT, CT, nl.par_dim(128), 512), dtype=x.dtype, buffer=nl.sbuf)
    mx = nl.ndarray((RT, nl.par_dim(128), 1), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.arange(128)[:, None], nl.arange(512)[None, :]
    j0 = nl.arange(1)[None, :]
    for r in nl.affine_range(RT):
        for c in nl.affine_range(CT):
            xb[r, c, ip, jf] = nl.load(x[128 * r + ip, 512 * c + jf])
            mx[r, ip, j0] = nl.loop_reduce(nl.max(xb[r, c, ip, jf], axis=1, keepdims=True),
                                           op=np.maximum, loop_indices=[c])
        nl.store(out[128 * r + ip, j0], value=mx[r, ip, j0])
    return out


@nki.jit
def k_sum_rebind(x):
    """The documented form `b = nl.loop_reduce(a, op=np.add, loop_indices=[k])`, b declared
    (and zeroed) before the loop."""
    K, P, F = x.shape
    out = nl.ndarray((P, F), dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.zeros((P, F), dtype=x.dtype, buffer=nl.sbuf)
    for k in nl.affine_range(K):
        a = nl.load(x[k])
        b = nl.loop_reduce(a, op=np.add, loop_indices=[k])
    nl.store(out, value=b)
    return out


def test_loop_reduce_max_into_blocks():
    x = np.random.default_rng(0).standard_normal((256, 2048), dtype=np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k_rowmax_blocks, x), x.max(1, keepdims=True))
    assert nki.check(k_rowmax_blocks, x) == []
    text = nki.lower(k_rowmax_blocks, x).text
    # per row tile: the first chunk's max is copied in, the three others are max-reduced
    assert text.count(", max\n") + text.count(", max |") == 2 * 3


def test_loop_reduce_add_rebinding():
    x = np.random.default_rng(1).standard_normal((6, 128, 256), dtype=np.float32)
    got = nki.simulate_kernel(k_sum_rebind, x)
    want = np.zeros((128, 256), np.float32)
    for k in range(6):
        want = want + x[k]               # the same order of fp32 additions
    np.testing.assert_array_equal(got, want)
    assert nki.check(k_sum_rebind, x) == []


def test_loop_reduce_needs_loop_variables():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        b = nl.zeros((128, 8), dtype=x.dtype, buffer=nl.sbuf)
        b[...] = nl.loop_reduce(nl.load(x), op=np.add, loop_indices=["k"])
        nl.store(out, value=b)
        return out
    with pytest.raises(nki.NkiError, match=r"test_nki_loop_reduce.py:\d+: error: \[err_invalid_loop_indices\]"):
        nki.lower(k, np.zeros((128, 8), np.float32))
