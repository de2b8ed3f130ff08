"""A matmul with both operands stored row-major along the contraction, fp32: out = A B^T with
A [M, K] and B [N, K] (a linear layer whose weight is kept [out, in]). Both need K on the
partitions: per 1024-column block of the output, the eight [128, K] row tiles of B are loaded
and each [128, 128] piece transposed on the Tensor engine with `nisa.nc_transpose`, copied out of
PSUM into a block tensor B^T [K/128, 128, 1024] that every row tile of A reads; each row tile of
A is loaded and transposed against an identity (`nc_matmul(is_transpose=True)`); the products
accumulate over K in two 512-wide PSUM banks, copied out with `nisa.tensor_copy` on the Scalar
engine and stored. Inputs a [M, K], b [N, K]; output [M, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'A B^T: nc_transpose of B into a block tensor read by every row tile, identity-matmul transposes of A, PSUM accumulation over K, tensor_copy(engine=scalar) eviction'
SIZES = {"small": dict(M=256, N=1024, K=256), "full": dict(M=4096, N=4096, K=2048)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2):
    M, K = v1.shape
    N = v2.shape[0]
    MT = M // 128
    KT = K // 128
    NB = N // 1024
    v3 = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.shared_constant(np.eye(128, dtype=np.float32))
    v5 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    v6 = nl.ndarray((NB, 8, nl.par_dim(128), K), dtype=np.float32, name='b_local', buffer=nl.sbuf)
    v7 = nl.ndarray((NB, 8, KT, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum)
    v8 = nl.ndarray((NB, KT, nl.par_dim(128), 1024), dtype=np.float32, name='bT', buffer=nl.sbuf)
    v9 = nl.ndarray((NB, MT, nl.par_dim(128), K), dtype=np.float32, name='a_local', buffer=nl.sbuf)
    v10 = nl.zeros((NB, MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v11 = nl.ndarray((NB, MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='aT', buffer=nl.sbuf)
    v12 = nl.zeros((NB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v13 = nl.ndarray((NB, MT, nl.par_dim(128), 1024), dtype=np.float32, name='', buffer=nl.sbuf)
    v5[:, :] = nl.load(v4[:, :])
    for i0 in nl.affine_range(NB):
        for i1 in nl.affine_range(8):
            v6[i0, i1, nl.arange(128)[:, None], nl.arange(K)[None, :]] = nl.load(v2[1024 * i0 + 128 * i1 + nl.arange(128)[:, None], nl.arange(K)[None, :]], dtype=np.float32, mask=None)
            for i2 in nl.affine_range(KT):
                v7[i0, i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_transpose(v6[i0, i1, nl.arange(128)[:, None], 128 * i2 + nl.arange(128)[None, :]], engine=nki.isa.tensor_engine)
                v8[i0, i2, nl.arange(128)[:, None], 128 * i1 + nl.arange(128)[None, :]] = nl.copy(v7[i0, i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                ' end loop i2 '
            ' end loop i1 '
        for i3 in nl.affine_range(MT):
            v9[i0, i3, nl.arange(128)[:, None], nl.arange(K)[None, :]] = nl.load(v1[128 * i3 + nl.arange(128)[:, None], nl.arange(K)[None, :]], dtype=np.float32, mask=None)
            for i4 in nl.affine_range(KT):
                v10[i0, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v9[i0, i3, nl.arange(128)[:, None], 128 * i4 + nl.arange(128)[None, :]], v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=None, is_transpose=True)
                v11[i0, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v10[i0, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                ' end loop i4 '
            for i5 in nl.affine_range(2):
                for i6 in nl.affine_range(KT):
                    v12[i0, i3, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v11[i0, i3, i6, nl.arange(128)[:, None], nl.arange(128)[None, :]], v8[i0, i6, nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                    ' end loop i6 '
                v13[i0, i3, nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]] = nisa.tensor_copy(v12[i0, i3, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None, engine=nki.isa.scalar_engine)
                ' end loop i5 '
            nl.store(v3[128 * i3 + nl.arange(128)[:, None], 1024 * i0 + nl.arange(1024)[None, :]], value=v13[i0, i3, nl.arange(128)[:, None], nl.arange(1024)[None, :]], mask=None)
            ' end loop i3 '
        ' end loop i0 '
    return v3


def inputs(p, rng):
    a = rng.normal(0.0, 1.0, size=(p["M"], p["K"])).astype(np.float32)
    b = rng.normal(0.0, 1.0, size=(p["N"], p["K"])).astype(np.float32)
    return [a, b]


def reference(a, b):
    return (a.astype(np.float64) @ b.astype(np.float64).T).astype(np.float32)
