"""Transpose2D: transpose a small matrix held in the free dimension.

Each partition row of in_tensor [P, F1*F2] holds a row-major F1 x F2 matrix;
the output holds its F2 x F1 transpose, in the same partition. This is a
free-dimension rearrangement: read with a 3-D index grid (p, f1, f2) at
f1*F2 + f2 and write at f2*F1 + f1, in one copy instruction.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def tensor_transpose2D_kernel_(in_tensor, shape2D):
    """in_tensor [P, F1*F2], shape2D = (F1, F2) -> [P, F2*F1]."""
    num_p, num_f = in_tensor.shape
    f1, f2 = shape2D
    assert f1 * f2 == num_f and num_p <= nl.tile_size.pmax
    out_tensor = nl.ndarray((num_p, f2 * f1), dtype=in_tensor.dtype, buffer=nl.shared_hbm)

    in_tile = nl.load(in_tensor)

    i_p = nl.arange(num_p)[:, None, None]
    i_f1 = nl.arange(f1)[None, :, None]
    i_f2 = nl.arange(f2)[None, None, :]

    out_tile = nl.ndarray((num_p, f2 * f1), dtype=out_tensor.dtype)
    out_tile[i_p, i_f2 * f1 + i_f1] = nl.copy(in_tile[i_p, i_f1 * f2 + i_f2])

    nl.store(out_tensor, value=out_tile)
    return out_tensor


def reference(in_tensor, shape2D):
    f1, f2 = shape2D
    p = in_tensor.shape[0]
    return in_tensor.reshape(p, f1, f2).transpose(0, 2, 1).reshape(p, f1 * f2)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (np.arange(5 * 3 * 4, dtype=np.int8).reshape(5, 12), (3, 4))
    out = nki.simulate_kernel(tensor_transpose2D_kernel_, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=0, rtol=0)
    print("transpose2d matches NumPy")
