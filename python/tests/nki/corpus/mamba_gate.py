"""The pieces of a Mamba block around its selective scan, fp32, channels on the partitions:
the step size delta = softplus(dt + dt_bias) (`nisa.activation(softplus)` with the per-channel
bias column), returned; and the gated output y_out = (y + D * x) * silu(z) with D per channel
(`nisa.scalar_tensor_tensor`: x times the D column plus y in one instruction), silu from
`nisa.activation`, the product by `nisa.tensor_tensor` on the engine the compiler picks.
Inputs x, y, z, dt [C, L], dt_bias and d [C/128, 128, 1]; outputs y_out and delta [C, L].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'softplus with a per-channel bias, scalar_tensor_tensor (x * D + y), silu gate, tensor_tensor on an unknown engine, two outputs'
SIZES = {"small": dict(C=256, L=1024), "full": dict(C=2048, L=4096)}
TOL = (1e-5, 1e-5)


@nki.jit
def kernel(v1, v2, v3, v4, v5, v6):
    C, L = v1.shape
    CT = C // 128
    LB = L // 512
    v7 = nl.ndarray((C, L), dtype=np.float32, buffer=nl.shared_hbm)
    v8 = nl.ndarray((C, L), dtype=np.float32, buffer=nl.shared_hbm)
    v9 = nl.ndarray((CT, nl.par_dim(128), 1), dtype=np.float32, name='dt_bias_local', buffer=nl.sbuf)
    v10 = nl.ndarray((CT, nl.par_dim(128), 1), dtype=np.float32, name='d_local', buffer=nl.sbuf)
    v11 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='dt_local', buffer=nl.sbuf)
    v12 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v13 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v14 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='y_local', buffer=nl.sbuf)
    v15 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='z_local', buffer=nl.sbuf)
    v16 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v17 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v18 = nl.ndarray((CT, LB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(CT):
        v9[i0, nl.arange(128)[:, None], 0] = nl.load(v5[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        v10[i0, nl.arange(128)[:, None], 0] = nl.load(v6[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(LB):
            v11[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v4[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v12[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.softplus, data=v11[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=v9[i0, nl.arange(128)[:, None], 0], scale=1.0, mask=None, dtype=np.float32)
            nl.store(v8[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], value=v12[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            v13[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v14[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v2[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v15[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v3[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v16[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.scalar_tensor_tensor(data=v13[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=v10[i0, nl.arange(128)[:, None], 0], op1=np.add, operand1=v14[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v17[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.silu, data=v15[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=1.0, mask=None, dtype=np.float32)
            v18[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v16[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], v17[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            nl.store(v7[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], value=v18[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v7, v8


def inputs(p, rng):
    C, L = p["C"], p["L"]
    x, y, z = (rng.normal(0.0, 1.0, size=(C, L)).astype(np.float32) for _ in range(3))
    dt = rng.normal(-1.0, 1.0, size=(C, L)).astype(np.float32)
    dt_bias = rng.normal(0.0, 0.5, size=(C // 128, 128, 1)).astype(np.float32)
    d = rng.uniform(0.5, 1.5, size=(C // 128, 128, 1)).astype(np.float32)
    return [x, y, z, dt, dt_bias, d]


def reference(x, y, z, dt, dt_bias, d):
    x, y, z, dt = (t.astype(np.float64) for t in (x, y, z, dt))
    C = x.shape[0]
    gate = z / (1.0 + np.exp(-z))
    out = (y + d.reshape(C, 1) * x) * gate
    delta = np.log1p(np.exp(dt + dt_bias.reshape(C, 1)))
    return out.astype(np.float32), delta.astype(np.float32)
