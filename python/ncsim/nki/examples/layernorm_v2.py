"""LayerNorm, version 2: nki.isa bn_stats / bn_aggr.

Same result as version 1, but mean and variance come from one Vector-engine
pass: bn_stats over 512-column chunks (its free-size limit) into a [128, 6k]
statistics tile, bn_aggr to (mean, variance), and the shift and scale are one
tensor_scalar instruction with two per-partition operands.
"""
import math

import numpy as np

from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa


@nki.jit
def nki_layernorm_kernel_v2(input_tensor, epsilon, gamma_vector, beta_vector):
    """input [R, C], gamma [C], beta [C] -> LayerNorm(input) [R, C] in input's dtype."""
    num_rows, num_cols = input_tensor.shape
    assert num_cols == gamma_vector.shape[0] == beta_vector.shape[0]
    output_tensor = nl.ndarray((num_rows, num_cols), dtype=input_tensor.dtype,
                               buffer=nl.shared_hbm)

    i_p_io = nl.arange(128)[:, None]
    i_f_io = nl.arange(num_cols)[None, :]
    i_p_param = nl.arange(1)[:, None]

    # The one-partition copies are not kept: at C = 8192 fp32 each holds 32 KiB of every
    # partition's SBUF range, which the row tiles need.
    gamma_b = nl.load(gamma_vector.reshape((1, num_cols))[i_p_param, i_f_io]).broadcast_to(
        (128, num_cols))
    beta_b = nl.load(beta_vector.reshape((1, num_cols))[i_p_param, i_f_io]).broadcast_to(
        (128, num_cols))

    chunk = nl.tile_size.bn_stats_fmax   # 512
    n_chunks = math.ceil(num_cols / chunk)
    i_f_chunk = nl.arange(chunk)[None, :]
    i_f_stat = nl.arange(6)[None, :]
    i_f_stats = nl.arange(6 * n_chunks)[None, :]

    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + i_p_io < num_rows
        x = nl.load(input_tensor[i * 128 + i_p_io, i_f_io], mask=rows)

        stats = nl.ndarray((128, 6 * n_chunks), dtype=nl.float32)
        for j in nl.affine_range(n_chunks):
            # The last chunk may be partial: mask its columns past num_cols.
            stats[i_p_io, j * 6 + i_f_stat] = nisa.bn_stats(
                x[i_p_io, j * chunk + i_f_chunk],
                mask=rows & (j * chunk + i_f_chunk < num_cols), dtype=nl.float32)
        mean_var = nisa.bn_aggr(stats[i_p_io, i_f_stats], mask=rows)
        mean = mean_var[i_p_io, 0]
        var = mean_var[i_p_io, 1]
        rstd = nl.rsqrt(nl.add(var, epsilon, mask=rows), mask=rows)

        y = nisa.tensor_scalar(data=x, op0=np.subtract, operand0=mean,
                               op1=np.multiply, operand1=rstd, mask=rows)
        # In place: one [128, C] temporary per tile besides x.
        y[...] = nl.multiply(y, gamma_b, mask=rows)
        y[...] = nl.add(y, beta_b, mask=rows)

        nl.store(output_tensor[i * 128 + i_p_io, i_f_io], value=y, mask=rows)
    return output_tensor


def reference(input_tensor, epsilon, gamma_vector, beta_vector):
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
    out = nki.simulate_kernel(nki_layernorm_kernel_v2, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-3, rtol=1e-2)
    print("layernorm_v2 matches NumPy")
