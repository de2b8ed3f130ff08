"""Group normalisation, fp32: x [N, C, HW] with C/16 groups of 16 channels, each group of each
image normalised over its channels and positions, then a per-channel affine (gamma, beta).
Channels are on the partitions (a tile of 128 channels holds 8 whole groups). Per
tile, the per-channel sum and sum of squares come from `nisa.tensor_reduce` and
`nisa.activation_reduce(square)` per 512-column block, carried with `nl.loop_reduce`; the group
totals are summed across partitions and broadcast back to every channel of the group by one
matmul against a block-diagonal ones matrix E E^T, built once: E^T [groups, 128] from two
`nisa.affine_select`s over a `nisa.memset` tile of ones, its square by `nisa.nc_matmul`. Then
mean, E[x^2] - mean^2, rsqrt (`nisa.activation`), the per-channel scale and shift, and
out = x * scale + shift as a two-op `nisa.tensor_scalar` with per-partition operands.
Inputs x [N, C, HW], gamma and beta [C/128, 128, 1]; output [N, C, HW].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'group statistics across partitions by a block-diagonal ones matmul built with memset + two affine_select + nc_matmul, loop_reduce sums, two-op tensor_scalar with per-partition scale and shift'
SIZES = {"small": dict(N=2, C=256, HW=1024), "full": dict(N=8, C=512, HW=4096)}
CG = 16          # channels per group (G = C / 16 groups)
TOL = (1e-4, 1e-4)
EPS = 1e-5


@nki.jit
def kernel(v1, v2, v3):
    N, C, HW = v1.shape
    GT = 128 // CG
    CT = C // 128
    HB = HW // 512
    v4 = nl.ndarray((N, C, HW), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((nl.par_dim(GT), 128), dtype=np.float32, name='ones', buffer=nl.sbuf)
    v6 = nl.ndarray((nl.par_dim(GT), 128), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.ndarray((nl.par_dim(GT), 128), dtype=np.float32, name='groupT', buffer=nl.sbuf)
    v8 = nl.zeros((nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v9 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, name='same_group', buffer=nl.sbuf)
    v10 = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, name='eps', buffer=nl.sbuf)
    v11 = nl.ndarray((CT, nl.par_dim(128), 1), dtype=np.float32, name='gamma_local', buffer=nl.sbuf)
    v12 = nl.ndarray((CT, nl.par_dim(128), 1), dtype=np.float32, name='beta_local', buffer=nl.sbuf)
    v13 = nl.ndarray((N, CT, HB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v14 = nl.ndarray((N, CT, HB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v15 = nl.ndarray((N, CT, HB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v16 = nl.ndarray((N, CT, HB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v17 = nl.ndarray((N, CT, nl.par_dim(128), 2), dtype=np.float32, name='stats', buffer=nl.sbuf)
    v18 = nl.zeros((N, CT, nl.par_dim(128), 2), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v19 = nl.ndarray((N, CT, nl.par_dim(128), 2), dtype=np.float32, name='gstats', buffer=nl.sbuf)
    v20 = nl.ndarray((N, CT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v21 = nl.ndarray((N, CT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v22 = nl.ndarray((N, CT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v23 = nl.ndarray((N, CT, nl.par_dim(128), 1), dtype=np.float32, name='scale', buffer=nl.sbuf)
    v24 = nl.ndarray((N, CT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v25 = nl.ndarray((N, CT, nl.par_dim(128), 1), dtype=np.float32, name='shift', buffer=nl.sbuf)
    v26 = nl.ndarray((N, CT, HB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v5[nl.arange(GT)[:, None], nl.arange(128)[None, :]] = nisa.memset(shape=(GT, 128), value=1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    v6[nl.arange(GT)[:, None], nl.arange(128)[None, :]] = nisa.affine_select(pred=(nl.arange(128)[None, :] - CG * nl.arange(GT)[:, None] >= 0), on_true_tile=v5[nl.arange(GT)[:, None], nl.arange(128)[None, :]], on_false_value=0.0, mask=None, dtype=np.float32)
    v7[nl.arange(GT)[:, None], nl.arange(128)[None, :]] = nisa.affine_select(pred=(CG * nl.arange(GT)[:, None] + (CG - 1) - nl.arange(128)[None, :] >= 0), on_true_tile=v6[nl.arange(GT)[:, None], nl.arange(128)[None, :]], on_false_value=0.0, mask=None, dtype=np.float32)
    v8[nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v7[nl.arange(GT)[:, None], nl.arange(128)[None, :]], v7[nl.arange(GT)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
    v9[nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v8[nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
    v10[nl.arange(128)[:, None], 0] = nisa.memset(shape=(128, 1), value=EPS, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(CT):
        v11[i0, nl.arange(128)[:, None], 0] = nl.load(v2[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        v12[i0, nl.arange(128)[:, None], 0] = nl.load(v3[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        ' end loop i0 '
    for i1 in nl.affine_range(N):
        for i2 in nl.affine_range(CT):
            for i3 in nl.affine_range(HB):
                v13[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[i1, 128 * i2 + nl.arange(128)[:, None], 512 * i3 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
                v14[i1, i2, i3, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.add, data=v13[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=None)
                v17[i1, i2, nl.arange(128)[:, None], 0] = nl.loop_reduce(v14[i1, i2, i3, nl.arange(128)[:, None], 0], op=np.add, loop_indices=[i3], dtype=np.float32, mask=None)
                v15[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation_reduce(op=nl.square, data=v13[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], reduce_op=np.add, reduce_res=v16[i1, i2, i3, nl.arange(128)[:, None], 0], bias=None, scale=1.0, mask=None, dtype=np.float32)
                v17[i1, i2, nl.arange(128)[:, None], 1] = nl.loop_reduce(v16[i1, i2, i3, nl.arange(128)[:, None], 0], op=np.add, loop_indices=[i3], dtype=np.float32, mask=None)
                ' end loop i3 '
            v18[i1, i2, nl.arange(128)[:, None], nl.arange(2)[None, :]] = nisa.nc_matmul(v9[nl.arange(128)[:, None], nl.arange(128)[None, :]], v17[i1, i2, nl.arange(128)[:, None], nl.arange(2)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
            v19[i1, i2, nl.arange(128)[:, None], nl.arange(2)[None, :]] = nisa.activation(op=nl.copy, data=v18[i1, i2, nl.arange(128)[:, None], nl.arange(2)[None, :]], bias=None, scale=1.0 / (CG * HW), mask=None, dtype=np.float32)
            v20[i1, i2, nl.arange(128)[:, None], 0] = nisa.activation(op=nl.square, data=v19[i1, i2, nl.arange(128)[:, None], 0], bias=None, scale=1.0, mask=None, dtype=np.float32)
            v21[i1, i2, nl.arange(128)[:, None], 0] = nl.subtract(v19[i1, i2, nl.arange(128)[:, None], 1], v20[i1, i2, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
            v22[i1, i2, nl.arange(128)[:, None], 0] = nisa.activation(op=nl.rsqrt, data=v21[i1, i2, nl.arange(128)[:, None], 0], bias=v10[nl.arange(128)[:, None], 0], scale=1.0, mask=None, dtype=np.float32)
            v23[i1, i2, nl.arange(128)[:, None], 0] = nl.multiply(v22[i1, i2, nl.arange(128)[:, None], 0], v11[i2, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
            v24[i1, i2, nl.arange(128)[:, None], 0] = nl.multiply(v19[i1, i2, nl.arange(128)[:, None], 0], v23[i1, i2, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
            v25[i1, i2, nl.arange(128)[:, None], 0] = nl.subtract(v12[i2, nl.arange(128)[:, None], 0], v24[i1, i2, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
            for i4 in nl.affine_range(HB):
                v26[i1, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v13[i1, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=v23[i1, i2, nl.arange(128)[:, None], 0], reverse0=False, op1=np.add, operand1=v25[i1, i2, nl.arange(128)[:, None], 0], reverse1=False, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
                nl.store(v4[i1, 128 * i2 + nl.arange(128)[:, None], 512 * i4 + nl.arange(512)[None, :]], value=v26[i1, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
                ' end loop i4 '
            ' end loop i2 '
        ' end loop i1 '
    return v4


def inputs(p, rng):
    N, C, HW = p["N"], p["C"], p["HW"]
    x = rng.normal(0.5, 1.0, size=(N, C, HW)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, size=(C // 128, 128, 1)).astype(np.float32)
    beta = rng.normal(0.0, 0.5, size=(C // 128, 128, 1)).astype(np.float32)
    return [x, gamma, beta]


def reference(x, gamma, beta):
    N, C, HW = x.shape
    G = C // CG
    xg = x.astype(np.float64).reshape(N, G, -1)
    mean = xg.mean(axis=-1, keepdims=True)
    var = xg.var(axis=-1, keepdims=True)
    y = ((xg - mean) / np.sqrt(var + EPS)).reshape(N, C, HW)
    return (y * gamma.reshape(1, C, 1) + beta.reshape(1, C, 1)).astype(np.float32)
