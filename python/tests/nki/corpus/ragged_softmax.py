"""Row softmax of an [R, C] fp32 matrix whose sides are both ragged (R = 4000: the last row tile
has 32 rows; C = 4000: the last 512-column block has 416 columns), written as a generator does:
every instruction of a row tile carries the rows' mask (`-128 * i + -1 * p + (R - 1) >= 0`),
and those of a column block also the columns' (`&` of the two predicates): masked loads,
`nisa.tensor_reduce` of the live columns, `nl.loop_reduce` of the row maxima and sums under the
rows' mask, exp through `nisa.activation` with the negated maximum as bias, `nisa.reciprocal`,
a per-partition `nisa.tensor_scalar` and masked stores. Input and output [R, C].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'ragged rows and columns: masks with & of a row and a column predicate on loads, tensor_reduce, activation and stores; loop_reduce, reciprocal and per-partition scale under the row mask'
SIZES = {"small": dict(R=200, C=1000), "full": dict(R=4000, C=4000)}
TOL = (1e-6, 1e-4)


@nki.jit
def kernel(v1):
    R, C = v1.shape
    RT = (R + 127) // 128
    NB = (C + 511) // 512
    v2 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((RT, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v4 = nl.ndarray((RT, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v5 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v6 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.ndarray((RT, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v8 = nl.ndarray((RT, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v9 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v10 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v11 = nl.ndarray((RT, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(RT):
        for i1 in nl.affine_range(NB):
            v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=((-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0) & (-512 * i1 + -1 * nl.arange(512)[None, :] + (C - 1) >= 0)))
            v4[i0, i1, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.max, data=v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=((-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0) & (-512 * i1 + -1 * nl.arange(512)[None, :] + (C - 1) >= 0)))
            v5[i0, nl.arange(128)[:, None], 0] = nl.loop_reduce(v4[i0, i1, nl.arange(128)[:, None], 0], op=np.maximum, loop_indices=[i1], dtype=np.float32, mask=(-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0))
            ' end loop i1 '
        v6[i0, nl.arange(128)[:, None], 0] = nisa.tensor_scalar(data=v5[i0, nl.arange(128)[:, None], 0], op0=np.multiply, operand0=np.dtype(np.float32).type(-1.0), reverse0=False, dtype=np.float32, mask=(-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0), engine=nki.isa.unknown_engine)
        for i2 in nl.affine_range(NB):
            v7[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.exp, data=v3[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=v6[i0, nl.arange(128)[:, None], 0], scale=1.0, mask=((-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0) & (-512 * i2 + -1 * nl.arange(512)[None, :] + (C - 1) >= 0)), dtype=np.float32)
            v8[i0, i2, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.add, data=v7[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=((-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0) & (-512 * i2 + -1 * nl.arange(512)[None, :] + (C - 1) >= 0)))
            v9[i0, nl.arange(128)[:, None], 0] = nl.loop_reduce(v8[i0, i2, nl.arange(128)[:, None], 0], op=np.add, loop_indices=[i2], dtype=np.float32, mask=(-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0))
            ' end loop i2 '
        v10[i0, nl.arange(128)[:, None], 0] = nisa.reciprocal(data=v9[i0, nl.arange(128)[:, None], 0], mask=(-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0), dtype=np.float32)
        for i3 in nl.affine_range(NB):
            v11[i0, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v7[i0, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=v10[i0, nl.arange(128)[:, None], 0], reverse0=False, dtype=np.float32, mask=((-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0) & (-512 * i3 + -1 * nl.arange(512)[None, :] + (C - 1) >= 0)), engine=nki.isa.unknown_engine)
            nl.store(v2[128 * i0 + nl.arange(128)[:, None], 512 * i3 + nl.arange(512)[None, :]], value=v11[i0, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=((-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0) & (-512 * i3 + -1 * nl.arange(512)[None, :] + (C - 1) >= 0)))
            ' end loop i3 '
        ' end loop i0 '
    return v2


def inputs(p, rng):
    return [rng.normal(0.0, 2.0, size=(p["R"], p["C"])).astype(np.float32)]


def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
