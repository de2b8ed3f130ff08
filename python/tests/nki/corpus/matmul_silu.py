"""A matmul with a SiLU epilogue, fp32, in the layout a generator gives a large matmul:
out = silu(A B) with A passed as [M/128, 128, K/128, 128] (row tile, row, k tile, k) and B as
[K/128, 128, N]. Per 1024-column block the B slab is loaded once; per row tile, A's rows are
loaded eight k tiles at a time with a 3-D index grid into a [128, 1024] block, each [128, 128]
piece transposed against an identity (`nc_matmul(is_transpose=True)`) into a block tensor
whose free part is two-dimensional (`(..., nl.par_dim(128), 8, 128)`, written with an integer
index on its first free axis); the products accumulate over K in 512-wide PSUM banks; the
epilogue reads the bank as the generator's SiLU does: exp(-x) (`nisa.activation` with
scale -1 and a zero bias column from `nisa.memset` with a uint16 value), + 1 (`tensor_scalar`,
reverse0), `nisa.reciprocal`, times x (`nl.multiply` of the PSUM bank). Output [M/128, 128, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'A as [M/128,128,K/128,128] loaded with 3-D index grids, transposes into a block tensor with a 2-D free part, PSUM accumulation over K, the generator\'s SiLU (exp scale -1, +1 reverse0, reciprocal, multiply) read from PSUM'
SIZES = {"small": dict(M=256, K=1024, N=1024), "full": dict(M=4096, K=2048, N=4096)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2):
    MT, P, KT, Q = v1.shape
    N = v2.shape[2]
    KC = KT // 8
    NB = N // 1024
    v3 = nl.ndarray((MT, 128, N), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.shared_constant(np.identity(128, dtype=np.float32))
    v5 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, name='identity_local', buffer=nl.sbuf)
    v6 = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, name='memset.17', buffer=nl.sbuf)
    v7 = nl.ndarray((NB, KT, nl.par_dim(128), 1024), dtype=np.float32, name='rhs_local', buffer=nl.sbuf)
    v8 = nl.ndarray((NB, MT, KC, nl.par_dim(128), 1024), dtype=np.float32, name='lhs_local', buffer=nl.sbuf)
    v9 = nl.zeros((NB, MT, KC, 8, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v10 = nl.ndarray((NB, MT, KC, nl.par_dim(128), 8, 128), dtype=np.float32, name='', buffer=nl.sbuf)
    v11 = nl.zeros((NB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v12 = nl.ndarray((NB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v13 = nl.ndarray((NB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v14 = nl.ndarray((NB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v15 = nl.ndarray((NB, MT, nl.par_dim(128), 1024), dtype=np.float32, name='', buffer=nl.sbuf)
    v5[nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v4[nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
    v6[nl.arange(128)[:, None], 0] = nisa.memset(shape=(128, 1), value=np.dtype(np.uint16).type(0), dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(NB):
        for i1 in nl.affine_range(KT):
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(1024)[None, :]] = nl.load(v2[i1, nl.arange(128)[:, None], nl.arange(1024)[None, :] + 1024 * i0], dtype=np.float32, mask=None)
            ' end loop i1 '
        for i2 in nl.affine_range(MT):
            for i3 in nl.affine_range(KC):
                v8[i0, i2, i3, nl.arange(128)[:, None, None], 128 * nl.arange(8)[None, :, None] + nl.arange(128)[None, None, :]] = nl.load(v1[i2, nl.arange(128)[:, None, None], nl.arange(8)[None, :, None] + 8 * i3, nl.arange(128)[None, None, :]], dtype=np.float32, mask=None)
                for i4 in nl.affine_range(8):
                    v9[i0, i2, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v8[i0, i2, i3, nl.arange(128)[:, None], 128 * i4 + nl.arange(128)[None, :]], v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=None, is_transpose=True)
                    v10[i0, i2, i3, nl.arange(128)[:, None], i4, nl.arange(128)[None, :]] = nl.copy(v9[i0, i2, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                    ' end loop i4 '
                ' end loop i3 '
            for i5 in nl.affine_range(2):
                for i6 in nl.affine_range(KC):
                    for i7 in nl.affine_range(8):
                        v11[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v10[i0, i2, i6, nl.arange(128)[:, None], i7, nl.arange(128)[None, :]], v7[i0, 8 * i6 + i7, nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                        ' end loop i7 '
                    ' end loop i6 '
                v12[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.exp, data=v11[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=v6[nl.arange(128)[:, None], 0], scale=-1.0, mask=None, dtype=np.float32)
                v13[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v12[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=nl.add, operand0=np.dtype(np.float32).type(1), reverse0=True, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
                v14[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.reciprocal(data=v13[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None, dtype=np.float32)
                v15[i0, i2, nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]] = nl.multiply(v11[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], v14[i0, i2, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None, dtype=np.float32)
                ' end loop i5 '
            nl.store(v3[i2, nl.arange(128)[:, None], nl.arange(1024)[None, :] + 1024 * i0], value=v15[i0, i2, nl.arange(128)[:, None], nl.arange(1024)[None, :]], mask=None)
            ' end loop i2 '
        ' end loop i0 '
    return v3


def inputs(p, rng):
    M, K, N = p["M"], p["K"], p["N"]
    a = rng.normal(0.0, 1.0, size=(M, K)).astype(np.float32)
    b = rng.normal(0.0, 1.0 / np.sqrt(K), size=(K, N)).astype(np.float32)
    return [a.reshape(M // 128, 128, K // 128, 128), b.reshape(K // 128, 128, N)]


def reference(a, b):
    MT, P, KT, Q = a.shape
    y = a.reshape(MT * P, KT * Q).astype(np.float64) @ b.reshape(KT * Q, -1).astype(np.float64)
    return (y / (1.0 + np.exp(-y))).astype(np.float32).reshape(MT, P, -1)
