"""Column statistics of an [R, C] fp32 matrix through the Tensor engine: the column sums and
the column sums of squares, each a matmul of a ones column ([128, 1], `nisa.memset`) against
a 512-wide block of rows, accumulated over all R/128 row tiles in a one-partition PSUM tile;
then the mean and the variance (E[x^2] - mean^2) on one partition, stored as two [1, C] rows.
The squares come from `nisa.activation(square)`; everything else from Vector-engine calls on
[1, 512] tiles. Inputs x [R, C]; outputs mean and var [1, C].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'column sums and sums of squares by ones-column matmuls accumulated over all row tiles in 1-partition PSUM tiles, mean and variance on one partition, two outputs'
SIZES = {"small": dict(R=512, C=1024), "full": dict(R=8192, C=4096)}
TOL = (1e-5, 1e-4)


@nki.jit
def kernel(v1):
    R, C = v1.shape
    RT = R // 128
    CB = C // 512
    v2 = nl.ndarray((1, C), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((1, C), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, name='ones', buffer=nl.sbuf)
    v5 = nl.ndarray((CB, RT, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v6 = nl.ndarray((CB, RT, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.zeros((CB, nl.par_dim(1), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v8 = nl.zeros((CB, nl.par_dim(1), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v9 = nl.ndarray((CB, nl.par_dim(1), 512), dtype=np.float32, name='mean', buffer=nl.sbuf)
    v10 = nl.ndarray((CB, nl.par_dim(1), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v11 = nl.ndarray((CB, nl.par_dim(1), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v12 = nl.ndarray((CB, nl.par_dim(1), 512), dtype=np.float32, name='var', buffer=nl.sbuf)
    v4[nl.arange(128)[:, None], 0] = nisa.memset(shape=(128, 1), value=1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(CB):
        for i1 in nl.affine_range(RT):
            v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[128 * i1 + nl.arange(128)[:, None], 512 * i0 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.square, data=v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=1.0, mask=None, dtype=np.float32)
            v7[i0, 0, nl.arange(512)[None, :]] += nisa.nc_matmul(v4[nl.arange(128)[:, None], 0], v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], is_stationary_onezero=True, is_moving_onezero=False, mask=None)
            v8[i0, 0, nl.arange(512)[None, :]] += nisa.nc_matmul(v4[nl.arange(128)[:, None], 0], v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], is_stationary_onezero=True, is_moving_onezero=False, mask=None)
            ' end loop i1 '
        v9[i0, 0, nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v7[i0, 0, nl.arange(512)[None, :]], op0=np.multiply, operand0=1.0 / R, reverse0=False, dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
        v10[i0, 0, nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v8[i0, 0, nl.arange(512)[None, :]], op0=np.multiply, operand0=1.0 / R, reverse0=False, dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
        v11[i0, 0, nl.arange(512)[None, :]] = nl.multiply(v9[i0, 0, nl.arange(512)[None, :]], v9[i0, 0, nl.arange(512)[None, :]], dtype=np.float32, mask=None)
        v12[i0, 0, nl.arange(512)[None, :]] = nl.subtract(v10[i0, 0, nl.arange(512)[None, :]], v11[i0, 0, nl.arange(512)[None, :]], dtype=np.float32, mask=None)
        nl.store(v2[0, 512 * i0 + nl.arange(512)[None, :]], value=v9[i0, 0, nl.arange(512)[None, :]], mask=None)
        nl.store(v3[0, 512 * i0 + nl.arange(512)[None, :]], value=v12[i0, 0, nl.arange(512)[None, :]], mask=None)
        ' end loop i0 '
    return v2, v3


def inputs(p, rng):
    return [rng.normal(0.25, 1.0, size=(p["R"], p["C"])).astype(np.float32)]


def reference(x):
    x = x.astype(np.float64)
    return (x.mean(axis=0, keepdims=True).astype(np.float32),
            x.var(axis=0, keepdims=True).astype(np.float32))
