"""Dropout of an [R, C] fp32 activation in the form a generated training kernel takes: the
hardware random-number generator seeded once (`nl.random_seed`), a [128, 512] tile of uniform
numbers per block (`nl.rand`) compared with the rate into a 0/1 keep mask
(`nl.greater_equal(..., dtype=float32)`), the kept values scaled by 1 / (1 - rate) with one
`scalar_tensor_tensor`, and, as a second path, `nisa.dropout` (the Vector engine's own dropout,
which does not rescale). Three outputs: the inverted-dropout result, its keep mask and the
`nisa.dropout` result.

Random outputs have no NumPy reference: `check_outputs` checks what holds for any generator:
the result is exactly x * mask / (1 - rate) with the mask the kernel returned, the mask is 0/1
with a keep fraction of 1 - rate within 5 standard deviations overall and in every row tile and
column block (so every block draws its own numbers), the mask differs between blocks, and
`nisa.dropout` leaves each element either 0 or x, dropping a fraction `rate` of them.

x [R, C] fp32 -> y, keep, z [R, C] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import neuronxcc.nki.isa as nisa
from neuronxcc.nki import trace
from neuronxcc.nki.language import par_dim

WHAT = ('dropout: nl.random_seed, nl.rand per block, greater_equal into a 0/1 mask, '
        'scalar_tensor_tensor rescale, nisa.dropout, three outputs checked statistically')
SIZES = {"small": dict(R=256, C=1024), "full": dict(R=4096, C=4096)}
TOL = (0.0, 0.0)
RATE = 0.25


@nki.jit
def kernel(v1):
    import numpy as np
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    import neuronxcc.nki.typing as nt
    import neuronxcc.nki.isa as nisa
    from neuronxcc.nki import trace
    from neuronxcc.nki.language import par_dim
    R, C = v1.shape
    T = R // 128
    NB = C // 512
    v2 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((T, NB, par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v6 = nl.ndarray((T, NB, par_dim(128), 512), dtype=np.float32, name='rnd', buffer=nl.sbuf)
    v7 = nl.ndarray((T, NB, par_dim(128), 512), dtype=np.float32, name='keep', buffer=nl.sbuf)
    v8 = nl.ndarray((T, NB, par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v9 = nl.ndarray((T, NB, par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    nl.random_seed(seed=1234)
    for i0 in nl.affine_range(T):
        for i1 in nl.affine_range(NB):
            v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], i1 * 512 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.rand((128, 512), dtype=np.float32)
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.greater_equal(v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], RATE, dtype=np.float32, mask=None)
            v8[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.scalar_tensor_tensor(data=v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=np.dtype(np.float32).type(1.0 / (1.0 - RATE)), op1=np.multiply, operand1=v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v9[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.dropout(v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], prob=RATE, dtype=np.float32, mask=None)
            nl.store(v2[i0 * 128 + nl.arange(128)[:, None], i1 * 512 + nl.arange(512)[None, :]], value=v8[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            nl.store(v3[i0 * 128 + nl.arange(128)[:, None], i1 * 512 + nl.arange(512)[None, :]], value=v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            nl.store(v4[i0 * 128 + nl.arange(128)[:, None], i1 * 512 + nl.arange(512)[None, :]], value=v9[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v2, v3, v4


def inputs(p, rng):
    # no zeros in x, so that a 0 in nisa.dropout's result is a dropped element
    x = rng.normal(0.0, 1.0, size=(p["R"], p["C"])).astype(np.float32)
    x[x == 0] = 1.0
    return [x]


def reference(x):
    """Shapes and types only: the values are random (check_outputs checks them)."""
    return tuple(np.zeros_like(x) for _ in range(3))


def _fraction_ok(k, n, p):
    return abs(k - n * p) <= 5.0 * np.sqrt(n * p * (1.0 - p))


def check_outputs(args, got):
    x, = args
    y, keep, z = (np.asarray(g) for g in got)
    assert y.shape == keep.shape == z.shape == x.shape
    assert y.dtype == keep.dtype == z.dtype == np.float32
    assert np.all((keep == 0.0) | (keep == 1.0)), "the keep mask is not 0/1"
    scale = np.float32(1.0 / (1.0 - RATE))
    np.testing.assert_array_equal(y, (keep * scale) * x)
    R, C = x.shape
    assert _fraction_ok(keep.sum(), keep.size, 1.0 - RATE), keep.mean()
    blocks = keep.reshape(R // 128, 128, C // 512, 512).transpose(0, 2, 1, 3).reshape(-1, 128 * 512)
    for b in blocks:
        assert _fraction_ok(b.sum(), b.size, 1.0 - RATE), b.mean()
    assert len({blk.tobytes() for blk in blocks}) == len(blocks), "blocks drew the same numbers"
    # neighbouring elements are not correlated (a stuck or periodic generator would be)
    a, b = keep[:, :-1].ravel() - keep.mean(), keep[:, 1:].ravel() - keep.mean()
    assert abs(np.mean(a * b)) / np.var(keep) < 0.05
    assert np.all((z == 0.0) | (z == x)), "nisa.dropout changed a kept value"
    assert _fraction_ok((z == 0.0).sum(), z.size, RATE), (z == 0.0).mean()
