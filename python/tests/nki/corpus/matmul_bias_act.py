"""A matmul with a bias and activation epilogue, fp32: out = gelu_tanh(x W + b), with x given
already transposed (lhsT [K, M], as a compiler passes a stationary operand) and the bias a row
[1, N]. The bias is added inside the accumulation: a K = 1 matmul of a row of ones (from
`nisa.memset`) against the bias row is accumulated into each PSUM bank after the K tiles of
x W; the activation (`nisa.activation(gelu_apprx_tanh)`) reads the bank and writes SBUF. The W
slab of a 1024-column block is loaded once and read by every row tile. Inputs lhsT [K, M],
w [K, N], b [1, N]; output [M, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'x W + b: stationary lhsT loaded directly, bias added in PSUM by a K=1 ones-row matmul, gelu_apprx_tanh from PSUM'
SIZES = {"small": dict(M=256, N=1024, K=256), "full": dict(M=4096, N=4096, K=2048)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2, v3):
    K, M = v1.shape
    N = v2.shape[1]
    MT = M // 128
    KT = K // 128
    NB = N // 1024
    v4 = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((nl.par_dim(1), 128), dtype=np.float32, name='ones', buffer=nl.sbuf)
    v6 = nl.ndarray((NB, nl.par_dim(1), 1024), dtype=np.float32, name='bias_local', buffer=nl.sbuf)
    v7 = nl.ndarray((NB, KT, nl.par_dim(128), 1024), dtype=np.float32, name='w_local', buffer=nl.sbuf)
    v8 = nl.ndarray((NB, MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='lhsT_local', buffer=nl.sbuf)
    v9 = nl.zeros((NB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v10 = nl.ndarray((NB, MT, nl.par_dim(128), 1024), dtype=np.float32, name='', buffer=nl.sbuf)
    v5[0, nl.arange(128)[None, :]] = nisa.memset(shape=(1, 128), value=1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(NB):
        v6[i0, 0, nl.arange(1024)[None, :]] = nl.load(v3[0, 1024 * i0 + nl.arange(1024)[None, :]], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(KT):
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(1024)[None, :]] = nl.load(v2[128 * i1 + nl.arange(128)[:, None], 1024 * i0 + nl.arange(1024)[None, :]], dtype=np.float32, mask=None)
            ' end loop i1 '
        for i2 in nl.affine_range(MT):
            for i3 in nl.affine_range(KT):
                v8[i0, i2, i3, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v1[128 * i3 + nl.arange(128)[:, None], 128 * i2 + nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                ' end loop i3 '
            for i4 in nl.affine_range(2):
                for i5 in nl.affine_range(KT):
                    v9[i0, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v8[i0, i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]], v7[i0, i5, nl.arange(128)[:, None], 512 * i4 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                    ' end loop i5 '
                v9[i0, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v5[0, nl.arange(128)[None, :]], v6[i0, 0, 512 * i4 + nl.arange(512)[None, :]], is_stationary_onezero=True, is_moving_onezero=False, mask=None)
                v10[i0, i2, nl.arange(128)[:, None], 512 * i4 + nl.arange(512)[None, :]] = nisa.activation(op=nl.gelu_apprx_tanh, data=v9[i0, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=1.0, mask=None, dtype=np.float32)
                ' end loop i4 '
            nl.store(v4[128 * i2 + nl.arange(128)[:, None], 1024 * i0 + nl.arange(1024)[None, :]], value=v10[i0, i2, nl.arange(128)[:, None], nl.arange(1024)[None, :]], mask=None)
            ' end loop i2 '
        ' end loop i0 '
    return v4


def inputs(p, rng):
    xT = rng.normal(0.0, 1.0, size=(p["K"], p["M"])).astype(np.float32)
    w = rng.normal(0.0, 1.0 / np.sqrt(p["K"]), size=(p["K"], p["N"])).astype(np.float32)
    b = rng.normal(0.0, 0.5, size=(1, p["N"])).astype(np.float32)
    return [xT, w, b]


def reference(xT, w, b):
    y = xT.astype(np.float64).T @ w.astype(np.float64) + b.astype(np.float64)
    return (0.5 * y * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (y + 0.044715 * y ** 3)))).astype(np.float32)
