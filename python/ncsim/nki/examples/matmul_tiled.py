"""Matrix multiplication, version 1: tiled.

Any M (multiple of 128), K (multiple of 128) and N (multiple of 512): the
output is cut into [128, 512] tiles, one PSUM accumulation group each, and
the contraction runs over K in 128-row slices. Both operand tiles are loaded
again for every (m, n, k), so the kernel moves (M/128 + N/512) times more
data than it needs: it is bounded by DMA, not by the Tensor engine.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def nki_matmul_tiled_(lhsT, rhs):
    """lhsT [K, M], rhs [K, N] -> lhsT.T @ rhs [M, N] in lhsT's dtype."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2, "contraction sizes differ"
    TILE_M = nl.tile_size.gemm_stationary_fmax   # 128
    TILE_K = nl.tile_size.pmax                   # 128
    TILE_N = nl.tile_size.gemm_moving_fmax       # 512
    assert M % TILE_M == 0 and K % TILE_K == 0 and N % TILE_N == 0

    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    for m in nl.affine_range(M // TILE_M):
        for n in nl.affine_range(N // TILE_N):
            # A PSUM tile created with zeros and then `+=` matmuls inside an
            # affine_range loop is one matmul accumulation group.
            res_psum = nl.zeros((TILE_M, TILE_N), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // TILE_K):
                lhsT_tile = nl.ndarray((TILE_K, TILE_M), dtype=lhsT.dtype, buffer=nl.sbuf)
                rhs_tile = nl.ndarray((TILE_K, TILE_N), dtype=rhs.dtype, buffer=nl.sbuf)
                lhsT_tile[...] = nl.load(lhsT[k * TILE_K:(k + 1) * TILE_K,
                                              m * TILE_M:(m + 1) * TILE_M])
                rhs_tile[...] = nl.load(rhs[k * TILE_K:(k + 1) * TILE_K,
                                            n * TILE_N:(n + 1) * TILE_N])
                res_psum += nl.matmul(lhsT_tile[...], rhs_tile[...], transpose_x=True)

            res_sb = nl.copy(res_psum, dtype=result.dtype)
            nl.store(result[m * TILE_M:(m + 1) * TILE_M, n * TILE_N:(n + 1) * TILE_N],
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
    out = nki.simulate_kernel(nki_matmul_tiled_, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-4, rtol=1e-2)
    print("matmul_tiled matches NumPy")
