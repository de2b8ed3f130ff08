"""A linear layer whose row count is not a multiple of 128, fp32, written as a generator does
for a ragged last tile: out = x W + b with M = 4000 rows (31 full tiles and one of 32 rows),
every instruction of a row tile carrying the tile's mask (`-128 * i + -1 * p + (M - 1) >= 0`
on the partitions, or on the free axis once the tile is transposed). The row tile is loaded
masked, transposed against an identity (`nc_matmul(is_transpose=True)`) with the mask on the
transposed tile's columns, the products accumulated over K in PSUM (masked `nc_matmul`), the
bias row added by `nisa.tensor_tensor` from a [128, 1024] broadcast of it made once by a K = 1
ones matmul, and the result stored masked. Inputs x [M, K], w [K, N], b [1, N]; output [M, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'ragged last row tile: masks on loads, identity-matmul transposes (free-axis mask), masked nc_matmul accumulation, copies and stores; bias broadcast by a K=1 matmul'
SIZES = {"small": dict(M=200, K=256, N=1024), "full": dict(M=4000, K=1024, N=4096)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2, v3):
    M, K = v1.shape
    N = v2.shape[1]
    MT = (M + 127) // 128
    KT = K // 128
    NB = N // 1024
    v4 = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.shared_constant(np.eye(128, dtype=np.float32))
    v6 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    v7 = nl.ndarray((nl.par_dim(1), 128), dtype=np.float32, name='ones', buffer=nl.sbuf)
    v8 = nl.ndarray((NB, nl.par_dim(1), 1024), dtype=np.float32, name='b_local', buffer=nl.sbuf)
    v9 = nl.zeros((NB, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v10 = nl.ndarray((NB, nl.par_dim(128), 1024), dtype=np.float32, name='b_bcast', buffer=nl.sbuf)
    v11 = nl.ndarray((KT, nl.par_dim(128), N), dtype=np.float32, name='w_local', buffer=nl.sbuf)
    v12 = nl.ndarray((MT, nl.par_dim(128), K), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v13 = nl.zeros((MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v14 = nl.ndarray((MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='xT', buffer=nl.sbuf)
    v15 = nl.zeros((MT, NB, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v16 = nl.ndarray((MT, NB, nl.par_dim(128), 1024), dtype=np.float32, name='', buffer=nl.sbuf)
    v6[:, :] = nl.load(v5[:, :])
    v7[0, nl.arange(128)[None, :]] = nisa.memset(shape=(1, 128), value=1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(NB):
        v8[i0, 0, nl.arange(1024)[None, :]] = nl.load(v3[0, 1024 * i0 + nl.arange(1024)[None, :]], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(2):
            v9[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.nc_matmul(v7[0, nl.arange(128)[None, :]], v8[i0, 0, 512 * i1 + nl.arange(512)[None, :]], is_stationary_onezero=True, is_moving_onezero=False, mask=None)
            v10[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]] = nl.copy(v9[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            ' end loop i1 '
        ' end loop i0 '
    for i2 in nl.affine_range(KT):
        v11[i2, nl.arange(128)[:, None], nl.arange(N)[None, :]] = nl.load(v2[128 * i2 + nl.arange(128)[:, None], nl.arange(N)[None, :]], dtype=np.float32, mask=None)
        ' end loop i2 '
    for i3 in nl.affine_range(MT):
        v12[i3, nl.arange(128)[:, None], nl.arange(K)[None, :]] = nl.load(v1[128 * i3 + nl.arange(128)[:, None], nl.arange(K)[None, :]], dtype=np.float32, mask=-128 * i3 + -1 * nl.arange(128)[:, None] + (M - 1) >= 0)
        for i4 in nl.affine_range(KT):
            v13[i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v12[i3, nl.arange(128)[:, None], 128 * i4 + nl.arange(128)[None, :]], v6[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=-128 * i3 + -1 * nl.arange(128)[None, :] + (M - 1) >= 0, is_transpose=True)
            v14[i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v13[i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=-128 * i3 + -1 * nl.arange(128)[None, :] + (M - 1) >= 0)
            ' end loop i4 '
        for i5 in nl.affine_range(NB):
            for i6 in nl.affine_range(2):
                for i7 in nl.affine_range(KT):
                    v15[i3, i5, i6, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v14[i3, i7, nl.arange(128)[:, None], nl.arange(128)[None, :]], v11[i7, nl.arange(128)[:, None], 1024 * i5 + 512 * i6 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=-128 * i3 + -1 * nl.arange(128)[:, None] + (M - 1) >= 0)
                    ' end loop i7 '
                v16[i3, i5, nl.arange(128)[:, None], 512 * i6 + nl.arange(512)[None, :]] = nisa.tensor_tensor(v15[i3, i5, i6, nl.arange(128)[:, None], nl.arange(512)[None, :]], v10[i5, nl.arange(128)[:, None], 512 * i6 + nl.arange(512)[None, :]], op=np.add, dtype=np.float32, mask=-128 * i3 + -1 * nl.arange(128)[:, None] + (M - 1) >= 0, engine=nki.isa.unknown_engine)
                ' end loop i6 '
            nl.store(v4[128 * i3 + nl.arange(128)[:, None], 1024 * i5 + nl.arange(1024)[None, :]], value=v16[i3, i5, nl.arange(128)[:, None], nl.arange(1024)[None, :]], mask=-128 * i3 + -1 * nl.arange(128)[:, None] + (M - 1) >= 0)
            ' end loop i5 '
        ' end loop i3 '
    return v4


def inputs(p, rng):
    x = rng.normal(0.0, 1.0, size=(p["M"], p["K"])).astype(np.float32)
    w = rng.normal(0.0, 1.0 / np.sqrt(p["K"]), size=(p["K"], p["N"])).astype(np.float32)
    b = rng.normal(0.0, 0.5, size=(1, p["N"])).astype(np.float32)
    return [x, w, b]


def reference(x, w, b):
    return (x.astype(np.float64) @ w.astype(np.float64) + b).astype(np.float32)
