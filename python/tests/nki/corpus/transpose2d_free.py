"""The public Transpose2D kernel's operation at scale, as generated code writes it: every row of
an [R, F1 * F2] int32 matrix holds a row-major F1 x F2 matrix, and the output row holds its
F2 x F1 transpose. The transpose is a copy within each partition through 3-D index grids
(`out[p, f2 * F1 + f1] = nl.copy(in[p, f1 * F2 + f2])`: an access pattern with a transposed
free part, no Tensor engine), on int32 data (exact), with R = 1,000 rows (4,000 at full size)
so that the last row tile is masked on its load, copy and store.

x [R, F1 * F2] int32 -> [R, F2 * F1] int32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

WHAT = ('free-axis 2-D transpose inside each partition: nl.copy through 3-D index '
        'grids with a transposed free pattern, int32 data, ragged last row tile masked on load, '
        'copy and store')
SIZES = {"small": dict(R=1000, F1=16, F2=24), "full": dict(R=4000, F1=64, F2=96)}
TOL = (0.0, 0.0)


@nki.jit
def kernel(v1, v2):
    # v2 is a [F1, F2] int32 tensor whose shape carries the 2-D shape of each row (its values
    # are not read): generated code passes shapes as tensors' shapes.
    R, F = v1.shape
    F1, F2 = v2.shape
    T = (R + 127) // 128
    v3 = nl.ndarray((R, F), dtype=np.int32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((T, nl.par_dim(128), F), dtype=np.int32, name='in_tile', buffer=nl.sbuf)
    v5 = nl.ndarray((T, nl.par_dim(128), F), dtype=np.int32, name='out_tile', buffer=nl.sbuf)
    i_p0 = nl.arange(128)[:, None, None]
    i_f1 = nl.arange(F1)[None, :, None]
    i_f2 = nl.arange(F2)[None, None, :]
    for i0 in nl.affine_range(T):
        v4[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], nl.arange(F)[None, :]], dtype=np.int32, mask=(i0 * 128 + nl.arange(128)[:, None] < R))
        v5[i0, i_p0, i_f2 * F1 + i_f1] = nl.copy(v4[i0, i_p0, i_f1 * F2 + i_f2], dtype=np.int32, mask=(i0 * 128 + i_p0 < R))
        nl.store(v3[i0 * 128 + nl.arange(128)[:, None], nl.arange(F)[None, :]], value=v5[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]], mask=(i0 * 128 + nl.arange(128)[:, None] < R))
        ' end loop i0 '
    return v3


def inputs(p, rng):
    x = rng.integers(-2**31, 2**31 - 1, size=(p["R"], p["F1"] * p["F2"]), dtype=np.int64)
    return [x.astype(np.int32), np.zeros((p["F1"], p["F2"]), dtype=np.int32)]


def reference(x, shape):
    F1, F2 = shape.shape
    return x.reshape(-1, F1, F2).transpose(0, 2, 1).reshape(x.shape[0], F1 * F2).copy()
