"""Matrix multiplication, version 4: fully optimised.

Blocks on all three dimensions (by default BLOCK_M = 2048, BLOCK_N = 1024,
BLOCK_K = 1024). For each column block n the output block row stays in SBUF
(`result_tiles`) while the K blocks stream by: each rhs block is loaded once
per (n, k) and each lhsT block once per (n, k, m), so HBM traffic per matmul
is small enough for the Tensor engine to be the limit. Partial sums of one K
block are reduced in PSUM (8 matmuls per accumulation group), then added into
the SBUF result in the output dtype. The K-block loop is a sequential_range:
it carries the SBUF accumulation.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa


@nki.jit
def nki_matmul_fully_optimized_(lhsT, rhs, TILES_IN_BLOCK_M=16, TILES_IN_BLOCK_N=2,
                                TILES_IN_BLOCK_K=8):
    """lhsT [K, M], rhs [K, N] -> lhsT.T @ rhs [M, N]; each dim a multiple of its block."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "contraction sizes differ"
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    BLOCK_M = TILE_M * TILES_IN_BLOCK_M
    BLOCK_N = TILE_N * TILES_IN_BLOCK_N
    BLOCK_K = TILE_K * TILES_IN_BLOCK_K
    assert M % BLOCK_M == 0 and N % BLOCK_N == 0 and K % BLOCK_K == 0
    NUM_BLOCK_M = M // BLOCK_M
    NUM_BLOCK_N = N // BLOCK_N
    NUM_BLOCK_K = K // BLOCK_K

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    i_lhsT_blk = nl.mgrid[0:TILE_K, 0:BLOCK_M]
    i_rhs_blk = nl.mgrid[0:TILE_K, 0:BLOCK_N]
    i_lhsT = nl.mgrid[0:TILE_K, 0:TILE_M]
    i_rhs = nl.mgrid[0:TILE_K, 0:TILE_N]
    i_res = nl.mgrid[0:TILE_M, 0:TILE_N]
    i_res_packed = nl.mgrid[0:TILE_M, 0:BLOCK_N]

    for n in nl.affine_range(NUM_BLOCK_N):
        # The whole column block of the output, accumulated over K blocks.
        result_tiles = nl.zeros((NUM_BLOCK_M, TILES_IN_BLOCK_M, TILES_IN_BLOCK_N,
                                 nl.par_dim(TILE_M), TILE_N),
                                dtype=lhsT.dtype, buffer=nl.sbuf)

        # Sequential: every iteration adds into result_tiles.
        for k in nl.sequential_range(NUM_BLOCK_K):
            rhs_tiles = nl.ndarray((TILES_IN_BLOCK_K, nl.par_dim(TILE_K), BLOCK_N),
                                   dtype=rhs.dtype, buffer=nl.sbuf)
            for bk_r in nl.affine_range(TILES_IN_BLOCK_K):
                rhs_tiles[bk_r, i_rhs_blk.p, i_rhs_blk.x] = nl.load(
                    rhs[(TILES_IN_BLOCK_K * k + bk_r) * TILE_K + i_rhs_blk.p,
                        BLOCK_N * n + i_rhs_blk.x])

            for m in nl.affine_range(NUM_BLOCK_M):
                lhsT_tiles = nl.ndarray((TILES_IN_BLOCK_K, nl.par_dim(TILE_K), BLOCK_M),
                                        dtype=lhsT.dtype, buffer=nl.sbuf)
                for bk_l in nl.affine_range(TILES_IN_BLOCK_K):
                    lhsT_tiles[bk_l, i_lhsT_blk.p, i_lhsT_blk.x] = nl.load(
                        lhsT[(TILES_IN_BLOCK_K * k + bk_l) * TILE_K + i_lhsT_blk.p,
                             BLOCK_M * m + i_lhsT_blk.x])

                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    for bm in nl.affine_range(TILES_IN_BLOCK_M):
                        res_tile = nl.zeros((TILE_M, TILE_N), dtype=nl.float32, buffer=nl.psum)
                        for bk in nl.affine_range(TILES_IN_BLOCK_K):
                            res_tile[...] += nisa.nc_matmul(
                                lhsT_tiles[bk, i_lhsT.p, bm * TILE_M + i_lhsT.x],
                                rhs_tiles[bk, i_rhs.p, bn * TILE_N + i_rhs.x])
                        result_tiles[m, bm, bn, i_res.p, i_res.x] += res_tile[i_res.p, i_res.x]

        # Store one [128, BLOCK_N] row of tiles per DMA.
        for m in nl.affine_range(NUM_BLOCK_M):
            for bm in nl.affine_range(TILES_IN_BLOCK_M):
                result_packed = nl.ndarray((TILE_M, BLOCK_N), dtype=result_tiles.dtype,
                                           buffer=nl.sbuf)
                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    result_packed[i_res.p, bn * TILE_N + i_res.x] = nl.copy(
                        result_tiles[m, bm, bn, i_res.p, i_res.x])
                nl.store(result[(TILES_IN_BLOCK_M * m + bm) * TILE_M + i_res_packed.p,
                                BLOCK_N * n + i_res_packed.x],
                         value=result_packed)
    return result


def reference(lhsT, rhs, *blocking):
    """The blocking parameters change the order of the sums, not the product."""
    out = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    return out.astype(lhsT.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    lhs = rng.random((256, 512), dtype=np.float32)
    args = (np.ascontiguousarray(lhs.T), rng.random((512, 1024), dtype=np.float32), 2, 2, 2)
    out = nki.simulate_kernel(nki_matmul_fully_optimized_, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-4, rtol=1e-2)
    print("matmul_optimized matches NumPy")
