"""SiLU (the NKIBench `silu` workload, M=4096, N=7168, fp32): y = x / (1 + exp(-x)).

The measured baseline views x as [128, M/128, N] (row = p * M/128 + i), loads
[128, 1024] blocks and per 512-column sub-tile issues four instructions:
exp(-x) on the Scalar engine, + 1, a Vector-engine reciprocal and x * r.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa


@nki.jit
def silu_kernel(x):
    """x [M, N] fp32, M % 128 == 0, N % 1024 == 0 -> silu(x) [M, N]."""
    num_rows, num_cols = x.shape
    BLOCK = 1024
    SUB = 512
    assert num_rows % 128 == 0 and num_cols % BLOCK == 0
    groups = num_rows // 128
    out = nl.ndarray((num_rows, num_cols), dtype=x.dtype, buffer=nl.shared_hbm)

    # Row p * groups + g of x is element [p, g, :] of this view.
    x3 = x.reshape((128, groups, num_cols))
    out3 = out.reshape((128, groups, num_cols))

    ip = nl.arange(128)[:, None]
    if_blk = nl.arange(BLOCK)[None, :]
    if_sub = nl.arange(SUB)[None, :]

    zero_bias = nisa.memset((128, 1), 0.0, dtype=nl.float32)

    for g in nl.affine_range(groups):
        for b in nl.affine_range(num_cols // BLOCK):
            x_t = nl.load(x3[ip, g, b * BLOCK + if_blk])
            y_t = nl.ndarray((128, BLOCK), dtype=x.dtype)
            for s in nl.affine_range(BLOCK // SUB):
                xs = x_t[ip, s * SUB + if_sub]
                e = nisa.activation(np.exp, xs, bias=zero_bias, scale=-1.0)
                d = nisa.tensor_scalar(e, np.add, 1.0)
                r = nisa.reciprocal(d)
                y_t[ip, s * SUB + if_sub] = nisa.tensor_tensor(xs, r, np.multiply)
            nl.store(out3[ip, g, b * BLOCK + if_blk], value=y_t)
    return out


def reference(x):
    xf = x.astype(np.float64)
    return (xf / (1.0 + np.exp(-xf))).astype(x.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((256, 2048)).astype(np.float32),)
    out = nki.simulate_kernel(silu_kernel, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-5, rtol=1e-4)
    print("silu matches NumPy")
