"""A residual add with broadcast operands, fp32: out = (x + r) * s + b, with s one scale per
row (a column [N, 1]) and b one bias per column (a row [1, D]) broadcast over the rows.
The bias row is loaded once to a single partition and broadcast to 128 partitions with
`nl.broadcast_to` (a partition broadcast the compiler does with a copy), the row scales are
loaded as [128, 1] columns per row tile; x + r by `nl.add`, the scale and the bias in one
`nisa.scalar_tensor_tensor`. Inputs x, r [N, D], s [N, 1], b [1, D]; output [N, D].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'x + r, a per-row scale column and a bias row broadcast to 128 partitions by nl.broadcast_to, scalar_tensor_tensor'
SIZES = {"small": dict(N=256, D=1024), "full": dict(N=4096, D=8192)}
TOL = (1e-6, 1e-6)


@nki.jit
def kernel(v1, v2, v3, v4):
    N, D = v1.shape
    MT = N // 128
    DB = D // 512
    v5 = nl.ndarray((N, D), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.ndarray((DB, nl.par_dim(1), 512), dtype=np.float32, name='b_local', buffer=nl.sbuf)
    v7 = nl.ndarray((DB, nl.par_dim(128), 512), dtype=np.float32, name='b_bcast', buffer=nl.sbuf)
    v8 = nl.ndarray((MT, nl.par_dim(128), 1), dtype=np.float32, name='s_local', buffer=nl.sbuf)
    v9 = nl.ndarray((MT, DB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v10 = nl.ndarray((MT, DB, nl.par_dim(128), 512), dtype=np.float32, name='r_local', buffer=nl.sbuf)
    v11 = nl.ndarray((MT, DB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v12 = nl.ndarray((MT, DB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(DB):
        v6[i0, 0, nl.arange(512)[None, :]] = nl.load(v4[0, 512 * i0 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
        v7[i0, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.broadcast_to(v6[i0, 0, nl.arange(512)[None, :]], shape=(128, 512))
        ' end loop i0 '
    for i1 in nl.affine_range(MT):
        v8[i1, nl.arange(128)[:, None], 0] = nl.load(v3[128 * i1 + nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        for i2 in nl.affine_range(DB):
            v9[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v10[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v2[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v11[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.add(v9[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], v10[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v12[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.scalar_tensor_tensor(data=v11[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=v8[i1, nl.arange(128)[:, None], 0], op1=np.add, operand1=v7[i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            nl.store(v5[128 * i1 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], value=v12[i1, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i2 '
        ' end loop i1 '
    return v5


def inputs(p, rng):
    N, D = p["N"], p["D"]
    x = rng.normal(0.0, 1.0, size=(N, D)).astype(np.float32)
    r = rng.normal(0.0, 1.0, size=(N, D)).astype(np.float32)
    s = rng.uniform(0.5, 1.5, size=(N, 1)).astype(np.float32)
    b = rng.normal(0.0, 1.0, size=(1, D)).astype(np.float32)
    return [x, r, s, b]


def reference(x, r, s, b):
    return ((x + r) * s + b).astype(np.float32)
