"""Row softmax of an [R, C] fp32 matrix, as a kernel-optimising tool emits it.

Block tensors far larger than SBUF at full size (x is 32 x 8 blocks of [128, 512]: 512 KiB per
partition), the row maximum and the row sum each reduced per block (`nisa.tensor_reduce`) and
carried across the blocks with `nl.loop_reduce`, exp with the negated maximum as a
per-partition bias, reciprocal, and a per-partition scale. Input and output are [R/128, 128, C].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'row softmax over 512-column blocks: tensor_reduce max, loop_reduce, exp with negated-max bias, reciprocal, per-partition scale'
SIZES = {"small": dict(R=256, C=1024), "full": dict(R=4096, C=4096)}
TOL = (1e-6, 1e-4)


@nki.jit
def kernel(v1):
    T, P, C = v1.shape
    NB = C // 512
    v2 = nl.ndarray((T, P, C), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v4 = nl.ndarray((T, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v5 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v6 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v8 = nl.ndarray((T, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v9 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v10 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v11 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(T):
        for i1 in nl.affine_range(NB):
            v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v4[i0, i1, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.max, data=v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=None)
            v5[i0, nl.arange(128)[:, None], 0] = nl.loop_reduce(v4[i0, i1, nl.arange(128)[:, None], 0], op=np.maximum, loop_indices=[i1], dtype=np.float32, mask=None)
            ' end loop i1 '
        v6[i0, nl.arange(128)[:, None], 0] = nisa.tensor_scalar(data=v5[i0, nl.arange(128)[:, None], 0], op0=np.multiply, operand0=-1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
        for i2 in nl.affine_range(NB):
            v7[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.exp, data=v3[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=v6[i0, nl.arange(128)[:, None], 0], scale=1.0, mask=None, dtype=np.float32)
            v8[i0, i2, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.add, data=v7[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=None)
            v9[i0, nl.arange(128)[:, None], 0] = nl.loop_reduce(v8[i0, i2, nl.arange(128)[:, None], 0], op=np.add, loop_indices=[i2], dtype=np.float32, mask=None)
            ' end loop i2 '
        v10[i0, nl.arange(128)[:, None], 0] = nisa.reciprocal(data=v9[i0, nl.arange(128)[:, None], 0], mask=None, dtype=np.float32)
        for i3 in nl.affine_range(NB):
            v11[i0, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v7[i0, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=v10[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
            nl.store(v2[i0, nl.arange(128)[:, None], 512 * i3 + nl.arange(512)[None, :]], value=v11[i0, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i3 '
        ' end loop i0 '
    return v2


def inputs(p, rng):
    x = rng.normal(0.0, 2.0, size=(p["R"], p["C"])).astype(np.float32)
    return [x.reshape(p["R"] // 128, 128, p["C"])]


def reference(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)).astype(np.float32)
