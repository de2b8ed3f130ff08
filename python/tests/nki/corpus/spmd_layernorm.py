"""LayerNorm launched as an SPMD grid, one program per 128-row tile (`kernel[G]`,
`nl.program_id(0)`), in the language-level form of the public LayerNorm v1 tutorial: gamma and
beta as [C] vectors reshaped on HBM to [1, C] (`tensor.reshape`), loaded once per program and
broadcast to the partitions as tiles (`.broadcast_to((128, C))`, a Tensor-engine partition
broadcast), `nl.mean` and `nl.var` over the row, `nl.rsqrt(var + eps)`, and operators on
tiles (`(x - mean) * rstd * g + b`). R = 1,000 (8,000 at full size): the last program's tile has
104 rows, masked on its load and store only, as in the tutorial (the computation runs over all
128 partitions).

x [R, C] fp32, gamma, beta [C] fp32 -> [R, C] fp32. Grid: ceil(R / 128).
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

WHAT = ('LayerNorm as an SPMD grid (program_id per row tile): HBM reshape of gamma/beta, tile '
        'broadcast_to on the Tensor engine, nl.mean, nl.var, nl.rsqrt, operators on tiles, '
        'masks on load and store only')
SIZES = {"small": dict(R=1000, C=512), "full": dict(R=8000, C=4096)}
GRID = {"small": (8,), "full": (63,)}
TOL = (1e-4, 1e-4)
EPS = 1e-5


@nki.jit
def kernel(x, gamma, beta):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    i = nl.program_id(0)
    i_p = nl.arange(128)[:, None]
    i_f = nl.arange(C)[None, :]
    i_1 = nl.arange(1)[:, None]
    g = nl.load(gamma.reshape((1, C))[i_1, i_f]).broadcast_to((128, C))
    b = nl.load(beta.reshape((1, C))[i_1, i_f]).broadcast_to((128, C))
    m = (i * 128 + i_p < R)
    t = nl.load(x[i * 128 + i_p, i_f], mask=m)
    mean = nl.mean(t, axis=[1])
    var = nl.var(t, axis=[1])
    rstd = nl.rsqrt(var + EPS)
    y = (t - mean) * rstd
    y = y * g + b
    nl.store(out[i * 128 + i_p, i_f], value=y, mask=m)
    return out


def inputs(p, rng):
    R, C = p["R"], p["C"]
    x = rng.normal(1.0, 3.0, size=(R, C)).astype(np.float32)
    g = rng.normal(1.0, 0.2, size=(C,)).astype(np.float32)
    b = rng.normal(0.0, 0.2, size=(C,)).astype(np.float32)
    return [x, g, b]


def reference(x, g, b):
    x64 = x.astype(np.float64)
    mu = x64.mean(axis=1, keepdims=True)
    var = x64.var(axis=1, keepdims=True)
    return ((x64 - mu) / np.sqrt(var + EPS) * g + b).astype(np.float32)
