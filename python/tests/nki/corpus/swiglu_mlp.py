"""A gated MLP (SwiGLU), fp32: out = (silu(x W1) * (x W3)) W2 for N tokens of width D and a
hidden width F. The three weight matrices are loaded once into block tensors (64 KiB per
partition each at full size: together more than SBUF, so the compiler must re-load some of
them); each 128-token tile is transposed on the Tensor engine (`nc_matmul(...,
is_transpose=True)` against an identity), x W1 and x W3 accumulate in PSUM over D in 512-wide
hidden blocks, silu (`nisa.activation`) reads PSUM, the gate product is transposed back per 128
hidden columns and multiplied by W2, accumulated over F. Inputs x [N/128, 128, D],
w1 and w3 [D/128, 128, F], w2 [F/128, 128, D]; output [N/128, 128, D].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'PE transposes, x W1 and x W3 accumulated in PSUM, silu from PSUM, gate transposed back, W2; weights larger than SBUF together'
SIZES = {"small": dict(N=256, D=512, F=1024), "full": dict(N=2048, D=1024, F=2048)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2, v3, v4):
    T, P, D = v1.shape
    KD = D // 128
    F = v2.shape[2]
    KF = F // 128
    NF = F // 512
    ND = D // 512
    v5 = nl.ndarray((T, P, D), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.shared_constant(np.eye(128, dtype=np.float32))
    v7 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    v8 = nl.ndarray((KD, nl.par_dim(128), F), dtype=np.float32, name='w1_local', buffer=nl.sbuf)
    v9 = nl.ndarray((KD, nl.par_dim(128), F), dtype=np.float32, name='w3_local', buffer=nl.sbuf)
    v10 = nl.ndarray((KF, nl.par_dim(128), D), dtype=np.float32, name='w2_local', buffer=nl.sbuf)
    v11 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v12 = nl.zeros((T, KD, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v13 = nl.ndarray((T, KD, nl.par_dim(128), 128), dtype=np.float32, name='xT', buffer=nl.sbuf)
    v14 = nl.zeros((T, NF, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v15 = nl.zeros((T, NF, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v16 = nl.ndarray((T, NF, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v17 = nl.ndarray((T, NF, nl.par_dim(128), 512), dtype=np.float32, name='gate', buffer=nl.sbuf)
    v18 = nl.zeros((T, KF, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v19 = nl.ndarray((T, KF, nl.par_dim(128), 128), dtype=np.float32, name='gateT', buffer=nl.sbuf)
    v20 = nl.zeros((T, ND, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v21 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='', buffer=nl.sbuf)
    v7[:, :] = nl.load(v6[:, :])
    for i0 in nl.affine_range(KD):
        v8[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]] = nl.load(v2[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]], dtype=np.float32, mask=None)
        v9[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]] = nl.load(v3[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]], dtype=np.float32, mask=None)
        ' end loop i0 '
    for i1 in nl.affine_range(KF):
        v10[i1, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v4[i1, nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        ' end loop i1 '
    for i2 in nl.affine_range(T):
        v11[i2, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v1[i2, nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        for i3 in nl.affine_range(KD):
            v12[i2, i3, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v11[i2, nl.arange(128)[:, None], 128 * i3 + nl.arange(128)[None, :]], v7[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=None, is_transpose=True)
            v13[i2, i3, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v12[i2, i3, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
            ' end loop i3 '
        for i4 in nl.affine_range(NF):
            for i5 in nl.affine_range(KD):
                v14[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v13[i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]], v8[i5, nl.arange(128)[:, None], 512 * i4 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                v15[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v13[i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]], v9[i5, nl.arange(128)[:, None], 512 * i4 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                ' end loop i5 '
            v16[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.silu, data=v14[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=1.0, mask=None, dtype=np.float32)
            v17[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v16[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], v15[i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            for i6 in nl.affine_range(4):
                v18[i2, 4 * i4 + i6, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v17[i2, i4, nl.arange(128)[:, None], 128 * i6 + nl.arange(128)[None, :]], v7[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=None, is_transpose=True)
                v19[i2, 4 * i4 + i6, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v18[i2, 4 * i4 + i6, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                ' end loop i6 '
            ' end loop i4 '
        for i7 in nl.affine_range(ND):
            for i8 in nl.affine_range(KF):
                v20[i2, i7, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v19[i2, i8, nl.arange(128)[:, None], nl.arange(128)[None, :]], v10[i8, nl.arange(128)[:, None], 512 * i7 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                ' end loop i8 '
            v21[i2, nl.arange(128)[:, None], 512 * i7 + nl.arange(512)[None, :]] = nl.copy(v20[i2, i7, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            ' end loop i7 '
        nl.store(v5[i2, nl.arange(128)[:, None], nl.arange(D)[None, :]], value=v21[i2, nl.arange(128)[:, None], nl.arange(D)[None, :]], mask=None)
        ' end loop i2 '
    return v5


def inputs(p, rng):
    N, D, F = p["N"], p["D"], p["F"]
    x = rng.normal(0.0, 1.0, size=(N, D)).astype(np.float32)
    w1 = (rng.normal(0.0, 1.0, size=(D, F)) / np.sqrt(D)).astype(np.float32)
    w3 = (rng.normal(0.0, 1.0, size=(D, F)) / np.sqrt(D)).astype(np.float32)
    w2 = (rng.normal(0.0, 1.0, size=(F, D)) / np.sqrt(F)).astype(np.float32)
    return [x.reshape(N // 128, 128, D), w1.reshape(D // 128, 128, F), w3.reshape(D // 128, 128, F),
            w2.reshape(F // 128, 128, D)]


def reference(x, w1, w3, w2):
    T, P, D = x.shape
    x = x.reshape(T * P, D).astype(np.float64)
    w1 = w1.reshape(D, -1).astype(np.float64)
    w3 = w3.reshape(D, -1).astype(np.float64)
    w2 = w2.reshape(-1, D).astype(np.float64)
    h = x @ w1
    g = h / (1.0 + np.exp(-h)) * (x @ w3)
    return (g @ w2).reshape(T, P, D).astype(np.float32)
