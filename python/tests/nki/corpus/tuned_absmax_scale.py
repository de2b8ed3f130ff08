"""Scaling a tensor by its global absolute maximum (as before an 8-bit cast), in two passes
over HBM as a rewrite that fuses the first pass writes it: pass one multiplies by a per-column
weight row (broadcast once by a ones matmul), writes the product to a `nl.private_hbm` scratch
tensor, and keeps a running per-partition |max| (`activation(abs)`, `tensor_reduce(max)`,
`tensor_tensor(maximum)` into a [128, 1] tile carried through a `sequential_range`); the
partitions are then reduced by `tensor_partition_reduce(max)`, the scale 127/amax broadcast back
to the partitions by a ones matmul; pass two reads the scratch back and scales it. The global
maximum is a second output, written by `nisa.dma_copy` from SBUF. Decorated
`nki.jit(mode="simulation")`, as a tool that checks its rewrites in the simulator leaves it.

x [R, C], w [1, C]; outputs y = (x w) * 127 / max|x w| [R, C] and max|x w| [1, 1], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('two passes through a private_hbm scratch: running absolute maximum carried in sequential_range, '
        'tensor_partition_reduce, broadcast by ones matmuls, dma_copy of a [1, 1] result, '
        'nki.jit(mode="simulation")')
SIZES = {"small": dict(R=512, C=512), "full": dict(R=4096, C=4096)}
TOL = (1e-5, 1e-5)


@nki.jit(mode="simulation")
def kernel(x, w):
    R, C = x.shape
    NT = R // 128
    y = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    amax_out = nl.ndarray((1, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray((R, C), dtype=nl.float32, buffer=nl.private_hbm)
    ip = nl.arange(128)[:, None]
    i1 = nl.arange(1)[:, None]
    ic = nl.arange(C)[None, :]
    ones_row = nisa.memset(shape=(1, 128), value=1.0, dtype=nl.float32)
    w_row = nl.load(w[i1, ic])
    w_b = nl.ndarray((nl.par_dim(128), C), dtype=nl.float32, buffer=nl.sbuf)
    for j in nl.affine_range(C // 512):
        w_ps = nisa.nc_matmul(ones_row, w_row[i1, j * 512 + nl.arange(512)[None, :]],
                              is_stationary_onezero=True)
        w_b[ip, j * 512 + nl.arange(512)[None, :]] = nisa.tensor_copy(w_ps)
    run = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
    run[...] = nisa.memset(shape=(128, 1), value=0.0, dtype=nl.float32)
    for t in nl.sequential_range(NT):
        xt = nl.load(x[t * 128 + ip, ic])
        xw = nisa.tensor_tensor(xt, w_b, op=np.multiply)
        nl.store(scratch[t * 128 + ip, ic], value=xw)
        mag = nisa.activation(op=nl.abs, data=xw)
        tmax = nisa.tensor_reduce(np.max, data=mag, axis=(1,), keepdims=True)
        run[...] = nisa.tensor_tensor(run, tmax, op=np.maximum)
    gmax = nisa.tensor_partition_reduce(np.max, data=run)               # [1, 1]
    nisa.dma_copy(dst=amax_out, src=gmax)
    sc = nisa.reciprocal(data=gmax)
    sc127 = nisa.tensor_scalar(data=sc, op0=np.multiply, operand0=127.0)
    sc_ps = nisa.nc_matmul(ones_row, sc127, is_stationary_onezero=True)    # [128, 1]
    sc_b = nisa.tensor_copy(sc_ps, engine=nisa.scalar_engine)
    for t in nl.affine_range(NT):
        back = nl.load(scratch[t * 128 + ip, ic])
        nl.store(y[t * 128 + ip, ic],
                 value=nisa.tensor_scalar(data=back, op0=np.multiply, operand0=sc_b))
    return y, amax_out


def inputs(p, rng):
    x = rng.normal(size=(p["R"], p["C"])).astype(np.float32)
    w = rng.uniform(0.25, 2.0, size=(1, p["C"])).astype(np.float32)
    return [x, w]


def reference(x, w):
    xw = x * w                                     # fp32 product, as the kernel's
    m = np.abs(xw).max()
    scale = np.float32(127.0) * (np.float32(1.0) / m)
    return (xw * scale).astype(np.float32), np.array([[m]], dtype=np.float32)
