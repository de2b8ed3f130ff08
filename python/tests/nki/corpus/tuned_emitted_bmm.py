"""A batched matmul with K = 64 in the generator's form (numbered variables, index grids,
`' end loop '` markers, PSUM block tensors `nl.zeros(..., lazy_initialization=True)`) after an
optimising pass moved work out of loops: the transposes of A (`nc_matmul` against an identity
from `nl.shared_identity_matrix`, loaded with a cast) done once per row block and kept in a
block tensor that every column block reads, instead of once per (row block, column block); B
loaded once per batch as a [64, N] slab; the column-block loop turned into a
`nl.sequential_range` as such passes do to keep the compiler from reordering it; PSUM copied
out alternately by `nl.copy` and `nisa.tensor_copy(engine=vector)`.

a [B, M, 64], b [B, 64, N]; out [B, M, N], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ("generator's form after a rewrite: transposes of A hoisted out of the column loop into "
        "a block tensor, B slab loaded once per batch, shared_identity_matrix loaded with a cast, "
        "PSUM block tensors with lazy_initialization, a sequential_range column loop")
SIZES = {"small": dict(B=2, M=1024, N=1024), "full": dict(B=8, M=2048, N=4096)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2):
    B, M, K = v1.shape
    N = v2.shape[2]
    NM, NN = M // 1024, N // 1024
    v3 = nl.ndarray((B, M, N), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.shared_identity_matrix(128, dtype=np.uint8)
    v5 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, name='ident_local', buffer=nl.sbuf)
    v6 = nl.ndarray((B, nl.par_dim(64), N), dtype=np.float32, name='b_local', buffer=nl.sbuf)
    v7 = nl.ndarray((B, NM, 8, nl.par_dim(128), 64), dtype=np.float32, name='a_local', buffer=nl.sbuf)
    v8 = nl.zeros((B, NM, 8, nl.par_dim(64), 128), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v9 = nl.ndarray((B, NM, nl.par_dim(64), 1024), dtype=np.float32, name='aT', buffer=nl.sbuf)
    v10 = nl.zeros((B, NM, NN, 8, 2, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v11 = nl.ndarray((B, NM, NN, 8, nl.par_dim(128), 1024), dtype=np.float32, name='', buffer=nl.sbuf)
    v5[nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v4[nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
    for i0 in nl.affine_range(B):
        v6[i0, nl.arange(64)[:, None], nl.arange(N)[None, :]] = nl.load(v2[i0, nl.arange(64)[:, None], nl.arange(N)[None, :]], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(NM):
            for i2 in nl.affine_range(8):
                v7[i0, i1, i2, nl.arange(128)[:, None], nl.arange(64)[None, :]] = nl.load(v1[i0, 1024 * i1 + 128 * i2 + nl.arange(128)[:, None], nl.arange(64)[None, :]], dtype=np.float32, mask=None)
                v8[i0, i1, i2, nl.arange(64)[:, None], nl.arange(128)[None, :]] = nisa.nc_matmul(v7[i0, i1, i2, nl.arange(128)[:, None], nl.arange(64)[None, :]], v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], is_stationary_onezero=False, is_moving_onezero=True, is_transpose=True, mask=None)
                v9[i0, i1, nl.arange(64)[:, None], 128 * i2 + nl.arange(128)[None, :]] = nl.copy(v8[i0, i1, i2, nl.arange(64)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
                ' end loop i2 '
            for i3 in nl.sequential_range(NN):
                for i4 in nl.affine_range(8):
                    for i5 in nl.affine_range(2):
                        v10[i0, i1, i3, i4, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.nc_matmul(v9[i0, i1, nl.arange(64)[:, None], 128 * i4 + nl.arange(128)[None, :]], v6[i0, nl.arange(64)[:, None], 1024 * i3 + 512 * i5 + nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                        ' end loop i5 '
                    v11[i0, i1, i3, i4, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.copy(v10[i0, i1, i3, i4, 0, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
                    v11[i0, i1, i3, i4, nl.arange(128)[:, None], 512 + nl.arange(512)[None, :]] = nisa.tensor_copy(v10[i0, i1, i3, i4, 1, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
                    nl.store(v3[i0, 1024 * i1 + 128 * i4 + nl.arange(128)[:, None], 1024 * i3 + nl.arange(1024)[None, :]], value=v11[i0, i1, i3, i4, nl.arange(128)[:, None], nl.arange(1024)[None, :]], mask=None)
                    ' end loop i4 '
                ' end loop i3 '
            ' end loop i1 '
        ' end loop i0 '
    return v3


def inputs(p, rng):
    B, M, N = p["B"], p["M"], p["N"]
    return [rng.normal(size=(B, M, 64)).astype(np.float32),
            rng.normal(size=(B, 64, N)).astype(np.float32)]


def reference(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
