"""RMSNorm: out = a / sqrt(mean(a^2, axis=1)) * g (no epsilon).

128 rows per tile, the last tile masked. Per tile: square (Scalar engine),
row sum (Vector), divide by N and rsqrt on [128, 1], one tensor_scalar for
the per-row scale and one tensor_tensor for the weight, which was loaded once
into one partition and broadcast to 128.
"""
import math

import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def nki_rmsnorm_kernel(a_tensor, g_tensor):
    """a [R, N], g [N] -> RMSNorm(a) * g [R, N] in a's dtype."""
    num_rows, num_cols = a_tensor.shape
    assert num_cols == g_tensor.shape[0]
    out_tensor = nl.ndarray((num_rows, num_cols), dtype=a_tensor.dtype, buffer=nl.shared_hbm)

    ix = nl.arange(128)[:, None]
    iw = nl.arange(1)[:, None]
    iy = nl.arange(num_cols)[None, :]

    g_tile = nl.load(g_tensor.reshape((1, num_cols))[iw, iy])

    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + ix < num_rows
        a_tile = nl.load(a_tensor[i * 128 + ix, iy], mask=rows)

        in_square = nl.square(a_tile, mask=rows)
        square_sum = nl.sum(in_square, axis=[1], mask=rows)
        mean = nl.divide(square_sum, num_cols, mask=rows)
        rms_reciprocal = nl.rsqrt(mean, mask=rows)

        # [128, N] x [128, 1]: a tensor_scalar.
        out_tile = nl.multiply(a_tile, rms_reciprocal, mask=rows)
        # [128, N] x [128, N]: a tensor_tensor with the broadcast weight.
        g_bcast = g_tile.broadcast_to((128, num_cols))
        out_tile[...] = nl.multiply(out_tile, g_bcast, mask=rows)

        nl.store(out_tensor[i * 128 + ix, iy], value=out_tile, mask=rows)
    return out_tensor


def reference(a_tensor, g_tensor):
    a = a_tensor.astype(np.float64)
    rms = np.sqrt((a * a).mean(axis=1, keepdims=True))
    return (a / rms * g_tensor).astype(a_tensor.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (rng.random((250, 512), dtype=np.float32), rng.random(512, dtype=np.float32))
    out = nki.simulate_kernel(nki_rmsnorm_kernel, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-5, rtol=1e-3)
    print("rmsnorm matches NumPy")
