"""LayerNorm, version 1: nki.language only.

out = (x - mean(x)) / sqrt(var(x) + eps) * gamma + beta over each row of an
[R, C] input, 128 rows per tile. gamma and beta are loaded once into one
partition and broadcast to 128 partitions. The variance is computed as
mean(x^2) - mean(x)^2: one Scalar-engine square and two Vector-engine
reductions over the row, then the shift/scale and the gamma/beta passes.
Rows past R in the last tile are masked on every instruction.
"""
import math

import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def nki_layernorm_kernel_v1(input_tensor, epsilon, gamma_vector, beta_vector):
    """input [R, C], gamma [C], beta [C] -> LayerNorm(input) [R, C] in input's dtype."""
    num_rows, num_cols = input_tensor.shape
    assert num_cols == gamma_vector.shape[0] == beta_vector.shape[0]
    output_tensor = nl.ndarray((num_rows, num_cols), dtype=input_tensor.dtype,
                               buffer=nl.shared_hbm)

    i_p_io = nl.arange(128)[:, None]
    i_f_io = nl.arange(num_cols)[None, :]
    i_p_param = nl.arange(1)[:, None]

    # Parameters: one row each, then broadcast over the partitions.
    # The one-partition copies are not kept: at C = 8192 fp32 each holds 32 KiB of every
    # partition's SBUF range, which the row tiles need.
    gamma_b = nl.load(gamma_vector.reshape((1, num_cols))[i_p_param, i_f_io]).broadcast_to(
        (128, num_cols))
    beta_b = nl.load(beta_vector.reshape((1, num_cols))[i_p_param, i_f_io]).broadcast_to(
        (128, num_cols))

    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + i_p_io < num_rows
        x = nl.load(input_tensor[i * 128 + i_p_io, i_f_io], mask=rows)

        mean = nl.mean(x, axis=[1], mask=rows)
        mean_sq = nl.mean(nl.square(x, mask=rows), axis=[1], mask=rows)
        var = nl.subtract(mean_sq, nl.multiply(mean, mean, mask=rows), mask=rows)
        rstd = nl.rsqrt(nl.add(var, epsilon, mask=rows), mask=rows)

        y = nl.multiply(nl.subtract(x, mean, mask=rows), rstd, mask=rows)
        # In place: one [128, C] temporary per tile besides x.
        y[...] = nl.multiply(y, gamma_b, mask=rows)
        y[...] = nl.add(y, beta_b, mask=rows)

        nl.store(output_tensor[i * 128 + i_p_io, i_f_io], value=y, mask=rows)
    return output_tensor


def reference(input_tensor, epsilon, gamma_vector, beta_vector):
    """Biased-variance LayerNorm in float64, cast to the input dtype."""
    x = input_tensor.astype(np.float64)
    mean = x.mean(axis=1, keepdims=True)
    var = x.var(axis=1, keepdims=True)
    y = (x - mean) / np.sqrt(var + epsilon) * gamma_vector + beta_vector
    return y.astype(input_tensor.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (rng.random((300, 1000), dtype=np.float32), 1e-5,
            rng.random(1000, dtype=np.float32), rng.random(1000, dtype=np.float32))
    out = nki.simulate_kernel(nki_layernorm_kernel_v1, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-3, rtol=1e-2)
    print("layernorm_v1 matches NumPy")
