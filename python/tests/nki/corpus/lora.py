"""A linear layer with a low-rank adapter (LoRA), fp32: out = x W + s (x A) B with a small rank
r = 16 and scale s. The output is produced in 1024-column blocks: per block the W slab
[D, 1024] and the B slab [r, 1024] are loaded once and read by every 128-row tile of x
(loop-invariant inside the block; A [D, r] for the whole kernel). Each x tile is transposed on
the Tensor engine against an identity (`nc_matmul(is_transpose=True)`, redone for every block as
the generator writes it); (x A)^T [r, 128] is accumulated over D in PSUM with A as the
stationary operand, scaled by s on its way to SBUF (`nisa.activation(copy, scale=)`), and its
K = 16 matmul with B is accumulated into the same PSUM bank as x W.
Inputs x [N, D], w [D, F], a [D, r], b [r, F]; output [N, F].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'x W + s (x A) B: PE transposes of x, (x A)^T accumulated with A stationary, scaled PSUM copy, a K=16 matmul accumulated into the x W bank, W slabs per 1024 columns'
SIZES = {"small": dict(N=256, D=512, F=1024, R=16), "full": dict(N=4096, D=2048, F=4096, R=16)}
TOL = (1e-4, 1e-4)
SCALE = 2.0


@nki.jit
def kernel(v1, v2, v3, v4):
    N, D = v1.shape
    F = v2.shape[1]
    R = v3.shape[1]
    MT = N // 128
    KD = D // 128
    FB = F // 1024
    v5 = nl.ndarray((N, F), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.shared_constant(np.eye(128, dtype=np.float32))
    v7 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    v8 = nl.ndarray((KD, nl.par_dim(128), R), dtype=np.float32, name='a_local', buffer=nl.sbuf)
    v9 = nl.ndarray((FB, KD, nl.par_dim(128), 1024), dtype=np.float32, name='w_local', buffer=nl.sbuf)
    v10 = nl.ndarray((FB, nl.par_dim(R), 1024), dtype=np.float32, name='b_local', buffer=nl.sbuf)
    v11 = nl.ndarray((FB, MT, KD, nl.par_dim(128), 128), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v12 = nl.zeros((FB, MT, KD, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v13 = nl.ndarray((FB, MT, KD, nl.par_dim(128), 128), dtype=np.float32, name='xT', buffer=nl.sbuf)
    v14 = nl.zeros((FB, MT, nl.par_dim(R), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v15 = nl.ndarray((FB, MT, nl.par_dim(R), 128), dtype=np.float32, name='xaT', buffer=nl.sbuf)
    v16 = nl.zeros((FB, MT, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v17 = nl.ndarray((FB, MT, nl.par_dim(128), 1024), dtype=np.float32, name='', buffer=nl.sbuf)
    v7[:, :] = nl.load(v6[:, :])
    for i0 in nl.affine_range(KD):
        v8[i0, nl.arange(128)[:, None], nl.arange(R)[None, :]] = nl.load(v3[128 * i0 + nl.arange(128)[:, None], nl.arange(R)[None, :]], dtype=np.float32, mask=None)
        ' end loop i0 '
    for i1 in nl.affine_range(FB):
        for i2 in nl.affine_range(KD):
            v9[i1, i2, nl.arange(128)[:, None], nl.arange(1024)[None, :]] = nl.load(v2[128 * i2 + nl.arange(128)[:, None], 1024 * i1 + nl.arange(1024)[None, :]], dtype=np.float32, mask=None)
            ' end loop i2 '
        v10[i1, nl.arange(R)[:, None], nl.arange(1024)[None, :]] = nl.load(v4[nl.arange(R)[:, None], 1024 * i1 + nl.arange(1024)[None, :]], dtype=np.float32, mask=None)
        for i3 in nl.affine_range(MT):
            for i4 in nl.affine_range(KD):
                v11[i1, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v1[128 * i3 + nl.arange(128)[:, None], 128 * i4 + nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                v12[i1, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v11[i1, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], v7[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, mask=None, is_transpose=True)
                v13[i1, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v12[i1, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                v14[i1, i3, nl.arange(R)[:, None], nl.arange(128)[None, :]] += nisa.nc_matmul(v8[i4, nl.arange(128)[:, None], nl.arange(R)[None, :]], v13[i1, i3, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                ' end loop i4 '
            v15[i1, i3, nl.arange(R)[:, None], nl.arange(128)[None, :]] = nisa.activation(op=nl.copy, data=v14[i1, i3, nl.arange(R)[:, None], nl.arange(128)[None, :]], bias=None, scale=SCALE, mask=None, dtype=np.float32)
            for i5 in nl.affine_range(2):
                for i6 in nl.affine_range(KD):
                    v16[i1, i3, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v13[i1, i3, i6, nl.arange(128)[:, None], nl.arange(128)[None, :]], v9[i1, i6, nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                    ' end loop i6 '
                v16[i1, i3, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v15[i1, i3, nl.arange(R)[:, None], nl.arange(128)[None, :]], v10[i1, nl.arange(R)[:, None], 512 * i5 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                v17[i1, i3, nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]] = nl.copy(v16[i1, i3, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
                ' end loop i5 '
            nl.store(v5[128 * i3 + nl.arange(128)[:, None], 1024 * i1 + nl.arange(1024)[None, :]], value=v17[i1, i3, nl.arange(128)[:, None], nl.arange(1024)[None, :]], mask=None)
            ' end loop i3 '
        ' end loop i1 '
    return v5


def inputs(p, rng):
    x = rng.normal(0.0, 1.0, size=(p["N"], p["D"])).astype(np.float32)
    w = rng.normal(0.0, 0.05, size=(p["D"], p["F"])).astype(np.float32)
    a = rng.normal(0.0, 0.05, size=(p["D"], p["R"])).astype(np.float32)
    b = rng.normal(0.0, 0.05, size=(p["R"], p["F"])).astype(np.float32)
    return [x, w, a, b]


def reference(x, w, a, b):
    x, w, a, b = (t.astype(np.float64) for t in (x, w, a, b))
    return (x @ w + SCALE * ((x @ a) @ b)).astype(np.float32)
