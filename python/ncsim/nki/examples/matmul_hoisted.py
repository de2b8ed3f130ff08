"""Matrix multiplication, version 2: loads hoisted out of the inner loops.

Same tiling as the tiled version, but each [128, 128] slice of lhsT is
loaded once per m (into a tensor with a block dimension over k) and each
[128, 512] slice of rhs once per (m, n): the left operand is no longer
reloaded for every n. The right operand is still reloaded M/128 times.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def nki_matmul_hoist_load_(lhsT, rhs):
    """lhsT [K, M], rhs [K, N] -> lhsT.T @ rhs [M, N] in lhsT's dtype."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "contraction sizes differ"
    TILE_M = nl.tile_size.gemm_stationary_fmax
    TILE_K = nl.tile_size.pmax
    TILE_N = nl.tile_size.gemm_moving_fmax
    assert M % TILE_M == 0 and K % TILE_K == 0 and N % TILE_N == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    i_lhsT = nl.mgrid[0:TILE_K, 0:TILE_M]
    i_rhs = nl.mgrid[0:TILE_K, 0:TILE_N]
    i_res = nl.mgrid[0:TILE_M, 0:TILE_N]

    for m in nl.affine_range(M // TILE_M):
        # Every k-slice of this m column of lhsT stays live for all n.
        lhsT_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_M),
                                dtype=lhsT.dtype, buffer=nl.sbuf)
        for k in nl.affine_range(K // TILE_K):
            lhsT_tiles[k, i_lhsT.p, i_lhsT.x] = nl.load(
                lhsT[k * TILE_K + i_lhsT.p, m * TILE_M + i_lhsT.x])

        for n in nl.affine_range(N // TILE_N):
            rhs_tiles = nl.ndarray((K // TILE_K, nl.par_dim(TILE_K), TILE_N),
                                   dtype=rhs.dtype, buffer=nl.sbuf)
            for k in nl.affine_range(K // TILE_K):
                rhs_tiles[k, i_rhs.p, i_rhs.x] = nl.load(
                    rhs[k * TILE_K + i_rhs.p, n * TILE_N + i_rhs.x])

            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                res_psum[...] += nl.matmul(lhsT_tiles[k, i_lhsT.p, i_lhsT.x],
                                           rhs_tiles[k, i_rhs.p, i_rhs.x],
                                           transpose_x=True)

            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M + i_res.p, n * TILE_N + i_res.x], value=res_sb)
    return result


def reference(lhsT, rhs):
    out = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    return out.astype(lhsT.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    lhs = rng.random((256, 256), dtype=np.float32)
    args = (np.ascontiguousarray(lhs.T), rng.random((256, 1024), dtype=np.float32))
    out = nki.simulate_kernel(nki_matmul_hoist_load_, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-4, rtol=1e-2)
    print("matmul_hoisted matches NumPy")
