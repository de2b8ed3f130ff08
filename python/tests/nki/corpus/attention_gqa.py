"""Causal grouped-query attention, fp32: H query heads share one key/value head of width
D = 128, out_h = softmax(mask(Q_h K^T / sqrt(D))) V over a sequence of S, keys after the query
masked out with `nisa.affine_select` (-9984, as the public attention kernels do).
K is transposed once per 128 rows with `nisa.nc_transpose` on the Tensor engine (into PSUM,
copied to a block tensor of [128, 512] pieces) and both K^T and V stay in SBUF for all heads
(loop-invariant); each 128-query tile is transposed the same way; the scores [128, S] come from
`nisa.nc_matmul` in 512-column PSUM banks, are scaled on their way to SBUF
(`nisa.activation(copy, scale=)`), masked, and get a softmax (`tensor_reduce` and `loop_reduce`
for the maximum, `nisa.activation_reduce` for exp with a negated-max bias and its row sum,
`loop_reduce`, reciprocal); P is transposed per 128 keys and
P V accumulated in PSUM over the key tiles; the 1/sum applied to the PSUM result on its way
out. Inputs q [H, S, D], k and v [S, D]; output [H, S, D].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'causal GQA: nc_transpose on PE, QK^T in PSUM banks, activation(copy, scale), affine_select, activation_reduce, P transposes, PV accumulated in PSUM'
SIZES = {"small": dict(H=2, S=512), "full": dict(H=8, S=2048)}
TOL = (1e-5, 1e-4)


@nki.jit
def kernel(v1, v2, v3):
    H, S, D = v1.shape
    NQ = S // 128
    NK = S // 512
    v4 = nl.ndarray((H, S, D), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((NQ, nl.par_dim(128), D), dtype=np.float32, name='k_local', buffer=nl.sbuf)
    v6 = nl.ndarray((NQ, nl.par_dim(D), 128), dtype=np.float32, name='', buffer=nl.psum)
    v7 = nl.ndarray((NK, nl.par_dim(D), 512), dtype=np.float32, name='kT', buffer=nl.sbuf)
    v8 = nl.ndarray((NQ, nl.par_dim(128), D), dtype=np.float32, name='v_local', buffer=nl.sbuf)
    v9 = nl.ndarray((H, NQ, nl.par_dim(128), D), dtype=np.float32, name='q_local', buffer=nl.sbuf)
    v10 = nl.ndarray((H, NQ, nl.par_dim(D), 128), dtype=np.float32, name='', buffer=nl.psum)
    v11 = nl.ndarray((H, NQ, nl.par_dim(D), 128), dtype=np.float32, name='qT', buffer=nl.sbuf)
    v12 = nl.zeros((H, NQ, NK, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v13 = nl.ndarray((H, NQ, NK, nl.par_dim(128), 512), dtype=np.float32, name='scores', buffer=nl.sbuf)
    v14 = nl.ndarray((H, NQ, NK, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v15 = nl.ndarray((H, NQ, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v16 = nl.ndarray((H, NQ, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v17 = nl.ndarray((H, NQ, NK, nl.par_dim(128), 512), dtype=np.float32, name='probs', buffer=nl.sbuf)
    v18 = nl.ndarray((H, NQ, NK, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v19 = nl.ndarray((H, NQ, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v20 = nl.ndarray((H, NQ, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v21 = nl.ndarray((H, NQ, NQ, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum)
    v22 = nl.ndarray((H, NQ, NQ, nl.par_dim(128), 128), dtype=np.float32, name='probsT', buffer=nl.sbuf)
    v23 = nl.zeros((H, NQ, nl.par_dim(128), D), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v24 = nl.ndarray((H, NQ, nl.par_dim(128), D), dtype=np.float32, name='', buffer=nl.sbuf)
    v25 = nl.ndarray((H, NQ, NK, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(NQ):
        v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v2[128 * i0 + nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        v8[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v3[128 * i0 + nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        v6[i0, nl.arange(D)[:, None], nl.arange(128)[None, :]] = nisa.nc_transpose(v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], engine=nki.isa.tensor_engine)
        v7[i0 // 4, nl.arange(D)[:, None], 128 * (i0 % 4) + nl.arange(128)[None, :]] = nl.copy(v6[i0, nl.arange(D)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
        ' end loop i0 '
    for i1 in nl.affine_range(H):
        for i2 in nl.affine_range(NQ):
            v9[i1, i2, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v1[i1, 128 * i2 + nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
            v10[i1, i2, nl.arange(D)[:, None], nl.arange(128)[None, :]] = nisa.nc_transpose(v9[i1, i2, nl.arange(128)[:, None], nl.arange(D)[None, :]], engine=nki.isa.tensor_engine)
            v11[i1, i2, nl.arange(D)[:, None], nl.arange(128)[None, :]] = nl.copy(v10[i1, i2, nl.arange(D)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
            for i3 in nl.affine_range(NK):
                v12[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.nc_matmul(v11[i1, i2, nl.arange(D)[:, None], nl.arange(128)[None, :]], v7[i3, nl.arange(D)[:, None], nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                v25[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.copy, data=v12[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=1.0 / np.sqrt(D), mask=None, dtype=np.float32)
                v13[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.affine_select(pred=(128 * i2 + nl.arange(128)[:, None] >= 512 * i3 + nl.arange(512)[None, :]), on_true_tile=v25[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], on_false_value=-9984.0, mask=None, dtype=np.float32)
                v14[i1, i2, i3, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.max, data=v13[i1, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=None)
                v15[i1, i2, nl.arange(128)[:, None], 0] = nl.loop_reduce(v14[i1, i2, i3, nl.arange(128)[:, None], 0], op=np.maximum, loop_indices=[i3], dtype=np.float32, mask=None)
                ' end loop i3 '
            v16[i1, i2, nl.arange(128)[:, None], 0] = nisa.tensor_scalar(data=v15[i1, i2, nl.arange(128)[:, None], 0], op0=np.multiply, operand0=-1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            for i4 in nl.affine_range(NK):
                v17[i1, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation_reduce(op=nl.exp, data=v13[i1, i2, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]], reduce_op=np.add, reduce_res=v18[i1, i2, i4, nl.arange(128)[:, None], 0], bias=v16[i1, i2, nl.arange(128)[:, None], 0], scale=1.0, mask=None, dtype=np.float32)
                v19[i1, i2, nl.arange(128)[:, None], 0] = nl.loop_reduce(v18[i1, i2, i4, nl.arange(128)[:, None], 0], op=np.add, loop_indices=[i4], dtype=np.float32, mask=None)
                ' end loop i4 '
            v20[i1, i2, nl.arange(128)[:, None], 0] = nisa.reciprocal(data=v19[i1, i2, nl.arange(128)[:, None], 0], mask=None, dtype=np.float32)
            for i5 in nl.affine_range(NQ):
                v21[i1, i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nisa.nc_transpose(v17[i1, i2, i5 // 4, nl.arange(128)[:, None], 128 * (i5 % 4) + nl.arange(128)[None, :]], engine=nki.isa.tensor_engine)
                v22[i1, i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v21[i1, i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                v23[i1, i2, nl.arange(128)[:, None], nl.arange(D)[None, :]] += nisa.nc_matmul(v22[i1, i2, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]], v8[i5, nl.arange(128)[:, None], nl.arange(D)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                ' end loop i5 '
            v24[i1, i2, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nisa.tensor_scalar(data=v23[i1, i2, nl.arange(128)[:, None], nl.arange(D)[None, :]], op0=np.multiply, operand0=v20[i1, i2, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            nl.store(v4[i1, 128 * i2 + nl.arange(128)[:, None], nl.arange(D)[None, :]], value=v24[i1, i2, nl.arange(128)[:, None], nl.arange(D)[None, :]], mask=None)
            ' end loop i2 '
        ' end loop i1 '
    return v4


def inputs(p, rng):
    H, S, D = p["H"], p["S"], 128
    q = rng.normal(0.0, 1.0, size=(H, S, D)).astype(np.float32)
    k = rng.normal(0.0, 1.0, size=(S, D)).astype(np.float32)
    v = rng.normal(0.0, 1.0, size=(S, D)).astype(np.float32)
    return [q, k, v]


def reference(q, k, v):
    q, k, v = (a.astype(np.float64) for a in (q, k, v))
    s = q @ k.T / np.sqrt(q.shape[-1])
    S = k.shape[0]
    s = np.where(np.arange(S)[:, None] >= np.arange(S)[None, :], s, -9984.0)
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return ((e / e.sum(axis=-1, keepdims=True)) @ v).astype(np.float32)
