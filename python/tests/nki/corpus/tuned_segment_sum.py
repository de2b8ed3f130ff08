"""Segment sums of rows (an embedding-bag backward: rows of x added into G = 128 segments named
by an int32 id per row), as a rewrite that turns a scatter-add into matmuls writes it: for each
128-row tile the one-hot membership [128 rows, G] is made once by comparing an `iota` of the
segment numbers with the row's id (`tensor_scalar(np.equal)` against a [128, 1] operand) and
kept in a block tensor for every column block; the sums are one PSUM accumulation group per
512-column block over all row tiles, with the one-hot as the stationary operand
(`is_stationary_onezero=True`) and a row tile of x moving; a second output counts the rows of
each segment with a ones column as the moving operand (`is_moving_onezero=True`).

x [N, D] fp32, seg [N, 1] int32 in [0, 128); outputs sums [128, D], counts [128, 1] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('segment sums by one-hot matmuls: iota of segment numbers compared with int32 ids, '
        'one-hot block tensor reused for every column block, one PSUM group over all row tiles, '
        'onezero stationary and moving operands, two outputs')
SIZES = {"small": dict(N=1024, D=1024), "full": dict(N=16384, D=2048)}
TOL = (1e-3, 1e-5)


@nki.jit
def kernel(x, seg):
    N, D = x.shape
    NT = N // 128
    sums = nl.ndarray((128, D), dtype=nl.float32, buffer=nl.shared_hbm)
    counts = nl.ndarray((128, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    ig = nl.arange(128)[None, :]
    i512 = nl.arange(512)[None, :]
    segno = nisa.iota(0 * ip + ig, dtype=nl.float32)            # [128, 128]: g in every row
    ones_col = nisa.memset(shape=(128, 1), value=1.0, dtype=nl.float32)
    onehot = nl.ndarray((NT, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
    cnt = nl.zeros((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.psum)
    for t in nl.affine_range(NT):
        sid = nl.load(seg[t * 128 + ip, 0], dtype=nl.float32)
        onehot[t, ip, ig] = nisa.tensor_scalar(data=segno, op0=np.equal, operand0=sid)
        cnt += nisa.nc_matmul(onehot[t, ip, ig], ones_col, is_stationary_onezero=True,
                              is_moving_onezero=True)
    nl.store(counts[ip, 0], value=nisa.tensor_copy(cnt))
    for n in nl.affine_range(D // 512):
        acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        for t in nl.affine_range(NT):
            xt = nl.load(x[t * 128 + ip, n * 512 + i512])
            acc += nisa.nc_matmul(onehot[t, ip, ig], xt, is_stationary_onezero=True)
        nl.store(sums[ip, n * 512 + i512], value=nisa.tensor_copy(acc, engine=nisa.vector_engine))
    return sums, counts


def inputs(p, rng):
    N, D = p["N"], p["D"]
    x = rng.normal(size=(N, D)).astype(np.float32)
    seg = rng.integers(0, 128, size=(N, 1)).astype(np.int32)
    seg[:3, 0] = [0, 127, 127]
    return [x, seg]


def reference(x, seg):
    s = np.zeros((128, x.shape[1]))
    np.add.at(s, seg[:, 0], x.astype(np.float64))
    c = np.bincount(seg[:, 0], minlength=128).astype(np.float32)[:, None]
    return s.astype(np.float32), c
