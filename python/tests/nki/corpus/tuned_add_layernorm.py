"""Residual add + LayerNorm with two outputs (the sum, kept for the next residual, and the
normalised rows), as a rewrite for fewer passes writes it: `bn_stats` over 512-column chunks
into one statistics tile, `bn_aggr`, the reciprocal standard deviation from an
`activation(rsqrt)` with an epsilon bias tile, centring and scaling in one two-op
`tensor_scalar`, and gamma and beta broadcast to the 128 partitions once by K=1 matmuls with
a ones row (`is_stationary_onezero=True`), then applied by `scalar_tensor_tensor` and
`tensor_tensor` straight from PSUM banks. Decorated `nki.baremetal`.

x, r [R, C], gamma, beta [1, C]; outputs h = x + r and LayerNorm(h) [R, C], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('residual add + LayerNorm, two outputs: bn_stats per 512 columns, bn_aggr, rsqrt with an '
        'eps bias tile, two-op tensor_scalar, gamma/beta broadcast by onezero K=1 matmuls read '
        'from PSUM, nki.baremetal')
SIZES = {"small": dict(R=256, C=1024), "full": dict(R=4096, C=2048)}
TOL = (1e-4, 1e-4)
EPS = 1e-5


@nki.baremetal
def kernel(x, r, gamma, beta):
    R, C = x.shape
    NB = C // 512
    h_out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    y_out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    ic = nl.arange(C)[None, :]
    i512 = nl.arange(512)[None, :]

    # gamma and beta on every partition: a ones row [1, 128] as the stationary of K=1 matmuls
    ones_row = nisa.memset(shape=(1, 128), value=1.0, dtype=nl.float32)
    g_row = nl.load(gamma[nl.arange(1)[:, None], ic])
    b_row = nl.load(beta[nl.arange(1)[:, None], ic])
    g_b = nl.ndarray((NB, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    b_b = nl.ndarray((NB, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
    for j in nl.affine_range(NB):
        g_b[j, ip, i512] = nisa.nc_matmul(ones_row, g_row[nl.arange(1)[:, None], j * 512 + i512],
                                          is_stationary_onezero=True)
        b_b[j, ip, i512] = nisa.nc_matmul(ones_row, b_row[nl.arange(1)[:, None], j * 512 + i512],
                                          is_stationary_onezero=True)
    eps = nisa.memset(shape=(128, 1), value=EPS, dtype=nl.float32)

    for t in nl.affine_range(R // 128):
        xt = nl.load(x[t * 128 + ip, ic])
        rt = nl.load(r[t * 128 + ip, ic])
        h = nisa.tensor_tensor(xt, rt, op=np.add)
        nl.store(h_out[t * 128 + ip, ic], value=h)
        stats = nl.ndarray((nl.par_dim(128), 6 * NB), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(NB):
            stats[ip, j * 6 + nl.arange(6)[None, :]] = nisa.bn_stats(h[ip, j * 512 + i512])
        mv = nisa.bn_aggr(stats)
        rstd = nisa.activation(op=nl.rsqrt, data=mv[ip, 1], bias=eps, scale=1.0)
        y = nl.ndarray((nl.par_dim(128), C), dtype=nl.float32, buffer=nl.sbuf)
        for j in nl.affine_range(NB):
            z = nisa.tensor_scalar(data=h[ip, j * 512 + i512], op0=np.subtract, operand0=mv[ip, 0],
                                   op1=np.multiply, operand1=rstd)
            zg = nisa.tensor_tensor(z, g_b[j, ip, i512], op=np.multiply)
            y[ip, j * 512 + i512] = nisa.tensor_tensor(zg, b_b[j, ip, i512], op=np.add)
        nl.store(y_out[t * 128 + ip, ic], value=y)
    return h_out, y_out


def inputs(p, rng):
    R, C = p["R"], p["C"]
    x = rng.normal(size=(R, C)).astype(np.float32)
    r = rng.normal(0.5, 1.0, size=(R, C)).astype(np.float32)
    g = rng.uniform(0.5, 1.5, size=(1, C)).astype(np.float32)
    b = rng.normal(size=(1, C)).astype(np.float32)
    return [x, r, g, b]


def reference(x, r, gamma, beta):
    h = x + r
    hd = h.astype(np.float64)
    mu = hd.mean(axis=1, keepdims=True)
    var = hd.var(axis=1, keepdims=True)
    y = (hd - mu) / np.sqrt(var + EPS) * gamma + beta
    return h, y.astype(np.float32)
