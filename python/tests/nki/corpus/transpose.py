"""Transpose of an [N, N] fp32 matrix through the Tensor engine: each [128, 128] piece of a row
tile is multiplied by the identity with `nisa.nc_matmul(..., is_transpose=True)` (the identity
loaded from an `nl.shared_constant`), the PSUM result copied out and stored to the transposed
place. Input and output are [N/128, 128, N]; out[j, :, 128 i + c] = x[i, c, 128 j + :].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'nc_matmul(is_transpose=True) against a shared_constant identity, PSUM eviction, stores to transposed places'
SIZES = {"small": dict(N=1024), "full": dict(N=4096)}
TOL = (0.0, 0.0)


@nki.jit
def kernel(v1):
    T, P, N = v1.shape
    NB = N // 1024
    v2 = nl.ndarray((T, P, N), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.shared_constant(np.eye(128, dtype=np.float32))
    v4 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    v5 = nl.ndarray((T, NB, nl.par_dim(128), 1024), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v6 = nl.zeros((T, NB, 8, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v7 = nl.ndarray((T, NB, 8, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.sbuf)
    v4[:, :] = nl.load(v3[:, :])
    for i0 in nl.affine_range(T):
        for i1 in nl.affine_range(NB):
            v5[i0, i1, nl.arange(128)[:, None], nl.arange(1024)[None, :]] = nl.load(v1[i0, nl.arange(128)[:, None], 1024 * i1 + nl.arange(1024)[None, :]], dtype=np.float32, mask=None)
            for i2 in nl.affine_range(8):
                v6[i0, i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v5[i0, i1, nl.arange(128)[:, None], 128 * i2 + nl.arange(128)[None, :]], v4[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=None, is_transpose=True)
                v7[i0, i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v6[i0, i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                nl.store(v2[8 * i1 + i2, nl.arange(128)[:, None], 128 * i0 + nl.arange(128)[None, :]], value=v7[i0, i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]], mask=None)
                ' end loop i2 '
            ' end loop i1 '
        ' end loop i0 '
    return v2


def inputs(p, rng):
    x = rng.normal(0.0, 1.0, size=(p["N"], p["N"])).astype(np.float32)
    return [x.reshape(p["N"] // 128, 128, p["N"])]


def reference(x):
    T, P, N = x.shape
    return np.ascontiguousarray(x.reshape(N, N).T).reshape(T, P, N)
