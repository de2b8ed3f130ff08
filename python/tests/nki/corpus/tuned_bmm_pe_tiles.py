"""A batched matmul with a contraction of only 64, as a rewrite that fills the PE array writes
it: two batches share each 128-partition tile (batch 2j on partitions 0-63, batch 2j+1 on
64-127), one Tensor-engine transpose (`nc_matmul(is_transpose=True)` against an identity from
`affine_select`) turns both batches' [128 m, 64] row tiles into the stacked A^T at once, and
the two batches' matmuls run on separate 64-row quadrants of the PE array
(`tile_position=(0 | 64, 0)`, `tile_size=(64, 128)`), each reading its half of the
stationary and moving tiles. The moving tile of both batches is loaded once per pair and
column block and kept for all row tiles (a block tensor indexed by the row loop).

a [B, M, 64], b [B, 64, N]; out [B, M, N], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('K=64 bmm, two batches per PE array: stacked row tiles transposed once, nc_matmul with '
        'tile_position/tile_size on 64-row quadrants reading partition halves, identity from '
        'affine_select')
SIZES = {"small": dict(B=2, M=256, N=1024), "full": dict(B=8, M=2048, N=2048)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(a, b):
    B, M, K = a.shape
    N = b.shape[2]
    out = nl.ndarray((B, M, N), dtype=a.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    i128 = nl.arange(128)[None, :]
    k64 = nl.arange(64)[:, None]
    f64 = nl.arange(64)[None, :]
    i512 = nl.arange(512)[None, :]
    ones = nisa.memset(shape=(128, 128), value=1.0, dtype=nl.float32)
    lower = nisa.affine_select(pred=(ip >= i128), on_true_tile=ones, on_false_value=0.0)
    ident = nisa.affine_select(pred=(ip <= i128), on_true_tile=lower, on_false_value=0.0)
    for j in nl.affine_range(B // 2):
        # A^T of the pair: [128 = (batch, k), M]
        aT = nl.ndarray((nl.par_dim(128), M), dtype=nl.float32, buffer=nl.sbuf)
        for m in nl.affine_range(M // 128):
            pair = nl.ndarray((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
            pair[ip, f64] = nl.load(a[2 * j, m * 128 + ip, f64])
            pair[ip, 64 + f64] = nl.load(a[2 * j + 1, m * 128 + ip, f64])
            tp = nisa.nc_matmul(stationary=pair, moving=ident, is_transpose=True)
            aT[ip, m * 128 + i128] = nisa.tensor_copy(tp, engine=nisa.scalar_engine)
        for n in nl.affine_range(N // 512):
            mv = nl.ndarray((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.sbuf)
            mv[k64, i512] = nl.load(b[2 * j, k64, n * 512 + i512])
            mv[64 + k64, i512] = nl.load(b[2 * j + 1, k64, n * 512 + i512])
            for m in nl.affine_range(M // 128):
                r0 = nisa.nc_matmul(stationary=aT[k64, m * 128 + i128], moving=mv[k64, i512],
                                    tile_position=(0, 0), tile_size=(64, 128))
                r1 = nisa.nc_matmul(stationary=aT[64 + k64, m * 128 + i128],
                                    moving=mv[64 + k64, i512],
                                    tile_position=(64, 0), tile_size=(64, 128))
                nl.store(out[2 * j, m * 128 + ip, n * 512 + i512],
                         value=nisa.tensor_copy(r0, engine=nisa.vector_engine))
                nl.store(out[2 * j + 1, m * 128 + ip, n * 512 + i512],
                         value=nisa.tensor_copy(r1, engine=nisa.scalar_engine))
    return out


def inputs(p, rng):
    B, M, N = p["B"], p["M"], p["N"]
    return [rng.normal(size=(B, M, 64)).astype(np.float32),
            rng.normal(size=(B, 64, N)).astype(np.float32)]


def reference(a, b):
    return np.matmul(a.astype(np.float64), b.astype(np.float64)).astype(np.float32)
