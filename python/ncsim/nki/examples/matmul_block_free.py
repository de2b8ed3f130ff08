"""Matrix multiplication, version 3: blocked free dimensions.

Output blocks of 2 x 2 tiles ([256, 1024]): the lhsT tiles of one block row
are reused for two n-tiles and the rhs tiles of one block column for two
m-tiles, which halves the traffic of the hoisted version on each operand.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def nki_matmul_block_free_dimension_(lhsT, rhs):
    """lhsT [K, M], rhs [K, N] -> lhsT.T @ rhs [M, N]; M % 256 == 0, N % 1024 == 0."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "contraction sizes differ"
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    TILES_IN_BLOCK_M = 2
    TILES_IN_BLOCK_N = 2
    BLOCK_M = TILE_M * TILES_IN_BLOCK_M   # 256
    BLOCK_N = TILE_N * TILES_IN_BLOCK_N   # 1024
    assert M % BLOCK_M == 0 and N % BLOCK_N == 0 and K % TILE_K == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    i_lhsT = nl.mgrid[0:TILE_K, 0:TILE_M]
    i_rhs = nl.mgrid[0:TILE_K, 0:TILE_N]
    i_res = nl.mgrid[0:TILE_M, 0:TILE_N]

    for m in nl.affine_range(M // BLOCK_M):
        lhsT_tiles = nl.ndarray((TILES_IN_BLOCK_M, K // TILE_K, nl.par_dim(TILE_K), TILE_M),
                                dtype=lhsT.dtype, buffer=nl.sbuf)
        for bm in nl.affine_range(TILES_IN_BLOCK_M):
            for k in nl.affine_range(K // TILE_K):
                lhsT_tiles[bm, k, i_lhsT.p, i_lhsT.x] = nl.load(
                    lhsT[k * TILE_K + i_lhsT.p,
                         (TILES_IN_BLOCK_M * m + bm) * TILE_M + i_lhsT.x])

        for n in nl.affine_range(N // BLOCK_N):
            rhs_tiles = nl.ndarray((TILES_IN_BLOCK_N, K // TILE_K, nl.par_dim(TILE_K), TILE_N),
                                   dtype=rhs.dtype, buffer=nl.sbuf)
            for bn in nl.affine_range(TILES_IN_BLOCK_N):
                for k in nl.affine_range(K // TILE_K):
                    rhs_tiles[bn, k, i_rhs.p, i_rhs.x] = nl.load(
                        rhs[k * TILE_K + i_rhs.p,
                            (TILES_IN_BLOCK_N * n + bn) * TILE_N + i_rhs.x])

            for bm in nl.affine_range(TILES_IN_BLOCK_M):
                for bn in nl.affine_range(TILES_IN_BLOCK_N):
                    res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
                    for k in nl.affine_range(K // TILE_K):
                        res_psum += nl.matmul(lhsT_tiles[bm, k, i_lhsT.p, i_lhsT.x],
                                              rhs_tiles[bn, k, i_rhs.p, i_rhs.x],
                                              transpose_x=True)
                    res_sb = nl.copy(res_psum, dtype=result.dtype)
                    nl.store(result[(TILES_IN_BLOCK_M * m + bm) * TILE_M + i_res.p,
                                    (TILES_IN_BLOCK_N * n + bn) * TILE_N + i_res.x],
                             value=res_sb)
    return result


def reference(lhsT, rhs):
    out = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    return out.astype(lhsT.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    lhs = rng.random((256, 256), dtype=np.float32)
    args = (np.ascontiguousarray(lhs.T), rng.random((256, 1024), dtype=np.float32))
    out = nki.simulate_kernel(nki_matmul_block_free_dimension_, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-4, rtol=1e-2)
    print("matmul_block_free matches NumPy")
