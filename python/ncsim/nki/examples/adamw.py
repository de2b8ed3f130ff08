"""AdamW update step (the NKIBench `adamw` workload, M=10944, N=2048, fp32).

theta' = theta * (1 - 1e-5) - 0.01 * m' / (sqrt(1000 * v') + 1e-8)
with m' = 0.9 m + 0.1 g and v' = 0.999 v + 0.001 g^2.

Structure of the measured baseline: 128-row tiles (the last one partial,
masked), two 1024-column halves per tile with four [128, 1024] loads and one
store, and per 512-column sub-tile fifteen instructions: seven tensor_scalar,
six tensor_tensor, one Scalar-engine sqrt activation and one Vector-engine
reciprocal. Almost all of it is element-wise Vector-engine work.
"""
import math

import numpy as np

from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa


@nki.jit
def adamw_kernel(theta, grad, m, v):
    """theta, grad, m, v [M, N] fp32 -> updated theta [M, N]."""
    num_rows, num_cols = theta.shape
    HALF = 1024
    SUB = 512
    assert num_cols % HALF == 0
    out = nl.ndarray((num_rows, num_cols), dtype=theta.dtype, buffer=nl.shared_hbm)

    ip = nl.arange(128)[:, None]
    if_half = nl.arange(HALF)[None, :]
    if_sub = nl.arange(SUB)[None, :]

    # Zero bias column for the sqrt activation.
    zero_bias = nisa.memset((128, 1), 0.0, dtype=nl.float32)

    for i in nl.affine_range(math.ceil(num_rows / 128)):
        rows = i * 128 + ip < num_rows
        for h in nl.affine_range(num_cols // HALF):
            c0 = h * HALF
            theta_t = nl.load(theta[i * 128 + ip, c0 + if_half], mask=rows)
            m_t = nl.load(m[i * 128 + ip, c0 + if_half], mask=rows)
            v_t = nl.load(v[i * 128 + ip, c0 + if_half], mask=rows)
            g_t = nl.load(grad[i * 128 + ip, c0 + if_half], mask=rows)
            res = nl.ndarray((128, HALF), dtype=theta.dtype)

            for s in nl.affine_range(HALF // SUB):
                th = theta_t[ip, s * SUB + if_sub]
                mm = m_t[ip, s * SUB + if_sub]
                vv = v_t[ip, s * SUB + if_sub]
                gg = g_t[ip, s * SUB + if_sub]
                decay = nisa.tensor_scalar(th, np.multiply, 1e-5, mask=rows)
                th_d = nisa.tensor_tensor(th, decay, np.subtract, mask=rows)
                m_a = nisa.tensor_scalar(mm, np.multiply, 0.9, mask=rows)
                m_b = nisa.tensor_scalar(gg, np.multiply, 0.1, mask=rows)
                m_new = nisa.tensor_tensor(m_a, m_b, np.add, mask=rows)
                step = nisa.tensor_scalar(m_new, np.multiply, 0.01, mask=rows)
                v_a = nisa.tensor_scalar(vv, np.multiply, 0.999, mask=rows)
                v_b = nisa.tensor_scalar(gg, np.multiply, 0.001, mask=rows)
                v_b2 = nisa.tensor_tensor(v_b, gg, np.multiply, mask=rows)
                v_new = nisa.tensor_tensor(v_a, v_b2, np.add, mask=rows)
                denom = nisa.activation(np.sqrt, v_new, bias=zero_bias, scale=1000.0, mask=rows)
                denom_e = nisa.tensor_scalar(denom, np.add, 1e-8, mask=rows)
                recip = nisa.reciprocal(denom_e, mask=rows)
                upd = nisa.tensor_tensor(step, recip, np.multiply, mask=rows)
                res[ip, s * SUB + if_sub] = nisa.tensor_tensor(th_d, upd, np.subtract, mask=rows)

            nl.store(out[i * 128 + ip, c0 + if_half], value=res, mask=rows)
    return out


def reference(theta, grad, m, v):
    th, g, mm, vv = (a.astype(np.float64) for a in (theta, grad, m, v))
    m_new = 0.9 * mm + 0.1 * g
    v_new = 0.999 * vv + 0.001 * g * g
    out = th * (1 - 1e-5) - 0.01 * m_new / (np.sqrt(1000.0 * v_new) + 1e-8)
    return out.astype(theta.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (rng.standard_normal((200, 2048)).astype(np.float32), rng.standard_normal((200, 2048)).astype(np.float32),
            0.1 * rng.standard_normal((200, 2048)).astype(np.float32), 0.01 * rng.random((200, 2048)).astype(np.float32))
    out = nki.simulate_kernel(adamw_kernel, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-5, rtol=1e-4)
    print("adamw matches NumPy")
