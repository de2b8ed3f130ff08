"""A fused element-wise chain with several outputs, fp32 with an int32 mask: out = where(m,
leaky_relu(x), -1) , the number of kept elements per row, and x weighted by a ramp over its
column index, (1 + j / C). The mask is cast to fp32 on its load (`nl.load(..., dtype=)`); the
leaky ReLU is a `nisa.tensor_scalar` (x * 0.1) and `nl.maximum`; the select is `nl.where` with
a scalar for the false side; the per-row count a `nisa.tensor_reduce` carried by
`nl.loop_reduce`; the ramp an int32 `nisa.iota` over the column index converted with
`nisa.tensor_copy` on the GpSimd engine, scaled and offset by a two-op `nisa.tensor_scalar`,
then multiplied. Inputs x [R, C] fp32, m [R, C] int32; outputs out, weighted [R, C] and
count [R, 1].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'int32 mask cast to fp32 on load, nl.where with a scalar, nl.maximum, iota ramp converted by tensor_copy(engine=gpsimd), tensor_reduce + loop_reduce count, three outputs'
SIZES = {"small": dict(R=256, C=1024), "full": dict(R=4096, C=4096)}
TOL = (1e-6, 1e-6)


@nki.jit
def kernel(v1, v2):
    R, C = v1.shape
    RT = R // 128
    CB = C // 512
    v3 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((R, 1), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.ndarray((CB, nl.par_dim(128), 512), dtype=np.int32, name='col', buffer=nl.sbuf)
    v7 = nl.ndarray((CB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v8 = nl.ndarray((CB, nl.par_dim(128), 512), dtype=np.float32, name='ramp', buffer=nl.sbuf)
    v9 = nl.ndarray((RT, CB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v10 = nl.ndarray((RT, CB, nl.par_dim(128), 512), dtype=np.float32, name='m_local', buffer=nl.sbuf)
    v11 = nl.ndarray((RT, CB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v12 = nl.ndarray((RT, CB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v13 = nl.ndarray((RT, CB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v14 = nl.ndarray((RT, CB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v15 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v16 = nl.ndarray((RT, CB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(CB):
        v6[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.iota(512 * i0 + nl.arange(512)[None, :] + 0 * nl.arange(128)[:, None], dtype=np.int32, mask=None)
        v7[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_copy(v6[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None, engine=nki.isa.gpsimd_engine)
        v8[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v7[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=1.0 / C, reverse0=False, op1=np.add, operand1=1.0, reverse1=False, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
        ' end loop i0 '
    for i1 in nl.affine_range(RT):
        for i2 in nl.affine_range(CB):
            v9[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v10[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v2[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v11[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v9[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=np.dtype(np.float32).type(0.1), reverse0=False, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            v12[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.maximum(v9[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], v11[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v13[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.where(v10[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], v12[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], -1.0, dtype=np.float32, mask=None)
            nl.store(v3[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], value=v13[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            v14[i1, i2, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.add, data=v10[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=None)
            v15[i1, nl.arange(128)[:, None], 0] = nl.loop_reduce(v14[i1, i2, nl.arange(128)[:, None], 0], op=np.add, loop_indices=[i2], dtype=np.float32, mask=None)
            v16[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.multiply(v9[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], v8[i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            nl.store(v4[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], value=v16[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i2 '
        nl.store(v5[128 * i1 + nl.arange(128)[:, None], 0], value=v15[i1, nl.arange(128)[:, None], 0], mask=None)
        ' end loop i1 '
    return v3, v4, v5


def inputs(p, rng):
    R, C = p["R"], p["C"]
    x = rng.normal(0.0, 1.0, size=(R, C)).astype(np.float32)
    m = (rng.uniform(size=(R, C)) < 0.7).astype(np.int32)
    return [x, m]


def reference(x, m):
    C = x.shape[1]
    leaky = np.maximum(x, x * np.float32(0.1))
    out = np.where(m != 0, leaky, np.float32(-1.0)).astype(np.float32)
    count = m.sum(axis=1, keepdims=True).astype(np.float32)
    ramp = (np.arange(C, dtype=np.float32) * np.float32(1.0 / C) + np.float32(1.0)).astype(np.float32)
    return out, (x * ramp).astype(np.float32), count
