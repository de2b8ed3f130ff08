"""Swish with a learned per-channel slope and gain (y = g_c x sigmoid(beta_c x)) over
channel-major activations, as an autotuner's fully unrolled candidate writes it: every loop a
`nl.static_range` (unrolled at trace time), the per-channel slope as a [128, 1] `scale` tile of
`activation(sigmoid)`, the gain and the product in one `scalar_tensor_tensor`, the columns
processed in 2048-wide pieces with the loads alternating between two tensors (`i % 2`), and
the result copied out on the GpSimd engine (`tensor_copy(engine=gpsimd)`) before the store.

x [C, L], beta [C, 1], g [C, 1]; out [C, L], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('per-channel swish: static_range everywhere, activation(sigmoid) with a [128, 1] scale '
        'tile, scalar_tensor_tensor with a per-partition gain, two tensors alternating by i % 2, '
        'tensor_copy(engine=gpsimd)')
SIZES = {"small": dict(C=256, L=4096), "full": dict(C=1024, L=16384)}
TOL = (1e-6, 1e-5)
W = 2048


@nki.jit
def kernel(x, beta, g):
    C, L = x.shape
    out = nl.ndarray((C, L), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    iw = nl.arange(W)[None, :]
    for c in nl.static_range(C // 128):
        b_t = nl.load(beta[c * 128 + ip, 0])
        g_t = nl.load(g[c * 128 + ip, 0])
        even = nl.ndarray((nl.par_dim(128), W), dtype=nl.float32, buffer=nl.sbuf)
        odd = nl.ndarray((nl.par_dim(128), W), dtype=nl.float32, buffer=nl.sbuf)
        for i in nl.static_range(L // W):
            buf = even if i % 2 == 0 else odd
            buf[ip, iw] = nl.load(x[c * 128 + ip, i * W + iw])
            sg = nisa.activation(op=nl.sigmoid, data=buf, scale=b_t)
            y = nisa.scalar_tensor_tensor(data=buf, op0=np.multiply, operand0=g_t,
                                          op1=np.multiply, operand1=sg)
            o = nisa.tensor_copy(y, engine=nisa.gpsimd_engine)
            nl.store(out[c * 128 + ip, i * W + iw], value=o)
    return out


def inputs(p, rng):
    C, L = p["C"], p["L"]
    return [rng.normal(size=(C, L)).astype(np.float32),
            rng.uniform(0.5, 2.0, size=(C, 1)).astype(np.float32),
            rng.uniform(0.5, 1.5, size=(C, 1)).astype(np.float32)]


def reference(x, beta, g):
    xd = x.astype(np.float64)
    return (g * xd / (1.0 + np.exp(-beta * xd))).astype(np.float32)
