"""Cumulative sums down the rows (axis 0) of a tall matrix on the Tensor engine, as a rewrite
that turns a serial scan into matmuls writes it: within a 128-row tile the prefix sums are
U^T x with U the upper-triangular ones matrix (built once: a ones `memset` and an
`affine_select` on a comparison of `nl.arange` grids), passed with `is_stationary_onezero=True`;
the sum of all earlier tiles, a [1, C] row carried from tile to tile through a
`sequential_range` (updated by a ones-column matmul's column sums and a `tensor_tensor` add),
is added into the same PSUM accumulation group by a K=1 matmul with a ones row. Columns are
512 wide (one PSUM bank).

x [R, C], out [R, C] = cumsum(x, axis=0), fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('cumulative sum down rows by matmuls: triangular ones from memset + affine_select, '
        'onezero stationaries, a [1, C] carry through sequential_range added by a K=1 matmul '
        'into the same PSUM group, ones-column column sums')
SIZES = {"small": dict(R=512, C=1024), "full": dict(R=8192, C=2048)}
TOL = (2e-4, 1e-4)


@nki.jit
def kernel(x):
    R, C = x.shape
    out = nl.ndarray((R, C), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    i1 = nl.arange(1)[:, None]
    i128 = nl.arange(128)[None, :]
    i512 = nl.arange(512)[None, :]
    ones = nisa.memset(shape=(128, 128), value=1.0, dtype=nl.float32)
    # tri[k, m] = 1 where k <= m: column m of the result sums rows 0..m
    tri = nisa.affine_select(pred=(ip <= i128), on_true_tile=ones, on_false_value=0.0)
    ones_col = nisa.memset(shape=(128, 1), value=1.0, dtype=nl.float32)
    ones_row = nisa.memset(shape=(1, 128), value=1.0, dtype=nl.float32)
    for c in nl.affine_range(C // 512):
        carry = nl.ndarray((nl.par_dim(1), 512), dtype=nl.float32, buffer=nl.sbuf)
        carry[...] = nisa.memset(shape=(1, 512), value=0.0, dtype=nl.float32)
        for t in nl.sequential_range(R // 128):
            xt = nl.load(x[t * 128 + ip, c * 512 + i512])
            acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
            acc += nisa.nc_matmul(tri, xt, is_stationary_onezero=True)
            acc += nisa.nc_matmul(ones_row, carry, is_stationary_onezero=True)
            nl.store(out[t * 128 + ip, c * 512 + i512], value=nisa.tensor_copy(acc))
            colsum = nisa.nc_matmul(ones_col, xt, is_stationary_onezero=True)     # [1, 512]
            carry[i1, i512] = nisa.tensor_tensor(carry, colsum, op=np.add)
    return out


def inputs(p, rng):
    return [rng.normal(size=(p["R"], p["C"])).astype(np.float32)]


def reference(x):
    return np.cumsum(x.astype(np.float64), axis=0).astype(np.float32)
