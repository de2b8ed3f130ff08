"""A matrix transpose done in 32 x 32 blocks shared between two engines, as a rewrite that
balances engines writes it: a [128, 128] tile loaded, its sixteen blocks transposed into the
places (j, i) of an output tile in a `nl.static_range` nest (unrolled at trace time), the
blocks of one checkerboard colour on the Vector engine (`nc_transpose(engine=vector)`, one
32-partition Reshape bank each) and the others on the Tensor engine (`nc_transpose(engine=
tensor)` of a [32, 32] block into PSUM, copied out on the Scalar engine); the output tile is
stored at the mirrored tile position. A second output is the
corner tile's transpose through the DMA (`nisa.dma_transpose` from HBM: element-wise
transfers, slow), as a tool keeps a reference path next to the fast one.

x [N, N]; outputs x^T [N, N] and x[:128, :128]^T [128, 128], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('transpose by 32x32 blocks in static_range nests, alternately nc_transpose on the Vector '
        'and the Tensor engine (PSUM, copied out), into mirrored tile places, and the corner tile by nisa.dma_transpose, two outputs')
SIZES = {"small": dict(N=256), "full": dict(N=2048)}
TOL = (0.0, 0.0)


@nki.jit
def kernel(x):
    N = x.shape[0]
    NT = N // 128
    xt_out = nl.ndarray((N, N), dtype=x.dtype, buffer=nl.shared_hbm)
    col_out = nl.ndarray((128, 128), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    i128 = nl.arange(128)[None, :]
    p32 = nl.arange(32)[:, None]
    f32 = nl.arange(32)[None, :]
    for r in nl.affine_range(NT):
        for c in nl.affine_range(NT):
            src = nl.load(x[r * 128 + ip, c * 128 + i128])
            dst = nl.ndarray((nl.par_dim(128), 128), dtype=x.dtype, buffer=nl.sbuf)
            for i in nl.static_range(4):
                for j in nl.static_range(4):
                    blk = src[i * 32 + p32, j * 32 + f32]
                    if (i + j) % 2 == 0:
                        dst[j * 32 + p32, i * 32 + f32] = nisa.nc_transpose(
                            blk, engine=nisa.vector_engine)
                    else:
                        t_ps = nisa.nc_transpose(blk, engine=nisa.tensor_engine)
                        dst[j * 32 + p32, i * 32 + f32] = nisa.tensor_copy(
                            t_ps, engine=nisa.scalar_engine)
            nl.store(xt_out[c * 128 + ip, r * 128 + i128], value=dst)
    corner = nisa.dma_transpose(x[ip, i128])
    nl.store(col_out[ip, i128], value=corner)
    return xt_out, col_out


def inputs(p, rng):
    return [rng.normal(size=(p["N"], p["N"])).astype(np.float32)]


def reference(x):
    return np.ascontiguousarray(x.T), np.ascontiguousarray(x[:128, :128].T)
