"""Matrix multiplication, version 0: one tile.

The smallest NKI matmul: load a [128, 64] transposed left operand and a
[128, 512] right operand into SBUF, multiply them on the Tensor engine into
a PSUM tile, copy the PSUM tile back to SBUF in the output dtype, store it.
The contraction dimension (128) sits on the partitions of both operands,
which is what the Tensor engine requires.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def nki_matmul_basic_(lhsT, rhs):
    """lhsT [128, 64], rhs [128, 512] -> lhsT.T @ rhs [64, 512]."""
    K, M = lhsT.shape
    K2, N = rhs.shape
    assert K == K2 == 128 and M == 64 and N == 512, "single-tile kernel"
    result = nl.ndarray((M, N), dtype=lhsT.dtype, buffer=nl.shared_hbm)

    # Index grids: axis 0 of each grid is the partition axis of the tile.
    i_lhsT_p, i_lhsT_f = nl.mgrid[0:128, 0:64]
    i_rhs_p, i_rhs_f = nl.mgrid[0:128, 0:512]
    i_res_p, i_res_f = nl.mgrid[0:64, 0:512]

    lhsT_tile = nl.load(lhsT[i_lhsT_p, i_lhsT_f])
    rhs_tile = nl.load(rhs[i_rhs_p, i_rhs_f])

    # [K, M].T @ [K, N] on the Tensor engine; the result is an fp32 PSUM tile.
    res_psum = nl.matmul(lhsT_tile, rhs_tile, transpose_x=True)

    res_sbuf = nl.copy(res_psum, dtype=result.dtype)
    nl.store(result[i_res_p, i_res_f], value=res_sbuf)
    return result


def reference(lhsT, rhs):
    """NumPy reference: fp32 product, rounded to the operands' dtype."""
    out = lhsT.astype(np.float32).T @ rhs.astype(np.float32)
    return out.astype(lhsT.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    lhs = rng.random((64, 128), dtype=np.float32)
    args = (np.ascontiguousarray(lhs.T), rng.random((128, 512), dtype=np.float32))
    out = nki.simulate_kernel(nki_matmul_basic_, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-4, rtol=1e-2)
    print("matmul_basic matches NumPy")
