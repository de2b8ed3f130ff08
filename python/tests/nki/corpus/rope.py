"""Rotary position embedding of [S, H * D] fp32 activations (H heads of D = 128), the positions on
partitions: out1 = x1 cos - x2 sin, out2 = x2 cos + x1 sin over the two halves of each head.
Three-dimensional index grids ([128, 4 heads, 64]) from `nl.arange`, the cos/sin tables loaded
once per row tile with a zero stride along the heads (a broadcast DMA), element-wise
`nl.multiply`/`nl.subtract`/`nl.add` on strided views of a block. Inputs x [S/128, 128, H*D],
cos and sin [S/128, 128, D/2]; output like x.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = '3-D index grids, zero-stride broadcast loads, element-wise ops on strided half-head views'
SIZES = {"small": dict(S=256, H=8), "full": dict(S=4096, H=32)}
TOL = (1e-5, 1e-5)


@nki.jit
def kernel(v1, v2, v3):
    T, P, HD = v1.shape
    NB = HD // 512
    v4 = nl.ndarray((T, P, HD), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((T, nl.par_dim(128), 4, 64), dtype=np.float32, name='cos_local', buffer=nl.sbuf)
    v6 = nl.ndarray((T, nl.par_dim(128), 4, 64), dtype=np.float32, name='sin_local', buffer=nl.sbuf)
    v7 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v8 = nl.ndarray((T, NB, nl.par_dim(128), 4, 64), dtype=np.float32, name='', buffer=nl.sbuf)
    v9 = nl.ndarray((T, NB, nl.par_dim(128), 4, 64), dtype=np.float32, name='', buffer=nl.sbuf)
    v10 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    i_p = nl.arange(128)[:, None, None]
    i_h = nl.arange(4)[None, :, None]
    i_f = nl.arange(64)[None, None, :]
    for i0 in nl.affine_range(T):
        v5[i0, i_p, i_h, i_f] = nl.load(v2[i0, i_p, 0 * i_h + i_f], dtype=np.float32, mask=None)
        v6[i0, i_p, i_h, i_f] = nl.load(v3[i0, i_p, 0 * i_h + i_f], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(NB):
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v8[i0, i1, i_p, i_h, i_f] = nl.multiply(v7[i0, i1, i_p, 128 * i_h + i_f], v5[i0, i_p, i_h, i_f], dtype=np.float32, mask=None)
            v9[i0, i1, i_p, i_h, i_f] = nl.multiply(v7[i0, i1, i_p, 128 * i_h + 64 + i_f], v6[i0, i_p, i_h, i_f], dtype=np.float32, mask=None)
            v10[i0, i1, i_p, 128 * i_h + i_f] = nl.subtract(v8[i0, i1, i_p, i_h, i_f], v9[i0, i1, i_p, i_h, i_f], dtype=np.float32, mask=None)
            v8[i0, i1, i_p, i_h, i_f] = nl.multiply(v7[i0, i1, i_p, 128 * i_h + 64 + i_f], v5[i0, i_p, i_h, i_f], dtype=np.float32, mask=None)
            v9[i0, i1, i_p, i_h, i_f] = nl.multiply(v7[i0, i1, i_p, 128 * i_h + i_f], v6[i0, i_p, i_h, i_f], dtype=np.float32, mask=None)
            v10[i0, i1, i_p, 128 * i_h + 64 + i_f] = nl.add(v8[i0, i1, i_p, i_h, i_f], v9[i0, i1, i_p, i_h, i_f], dtype=np.float32, mask=None)
            nl.store(v4[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], value=v10[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v4


def inputs(p, rng):
    S, H, D = p["S"], p["H"], 128
    x = rng.normal(0.0, 1.0, size=(S, H * D)).astype(np.float32)
    inv = 1.0 / (10000.0 ** (np.arange(D // 2) * 2.0 / D))
    ang = np.arange(S)[:, None] * inv[None, :]
    cos, sin = np.cos(ang).astype(np.float32), np.sin(ang).astype(np.float32)
    return [x.reshape(S // 128, 128, H * D), cos.reshape(S // 128, 128, D // 2),
            sin.reshape(S // 128, 128, D // 2)]


def reference(x, cos, sin):
    T, P, HD = x.shape
    xh = x.astype(np.float64).reshape(T, P, HD // 128, 128)
    c, s = cos.astype(np.float64)[:, :, None, :], sin.astype(np.float64)[:, :, None, :]
    x1, x2 = xh[..., :64], xh[..., 64:]
    out = np.concatenate([x1 * c - x2 * s, x2 * c + x1 * s], axis=-1)
    return out.reshape(T, P, HD).astype(np.float32)
