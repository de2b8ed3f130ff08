"""A split-K matmul with a ragged row count, as a rewrite that splits a long contraction writes
it: the two halves of K multiplied in separate passes into a `nl.shared_hbm` scratch tensor
[2, M, N] (written by one pass, read back by the next), then the halves loaded again, added,
and stored. The last row tile is partial (M = 1000 at the small size): every load, matmul and
store of it carries a mask built from an `nl.arange` comparison (`m * 128 + i_p < M` on the
partitions of loads, matmul results and stores; `m * 128 + i_m < M` on the columns of the
stationary's loads). The scratch's second half is also copied to a second
output HBM to HBM by `nisa.dma_copy`, as a tool that checks partial results keeps it.

lhsT [K, M], rhs [K, N]; outputs out [M, N] and the second partial [M, N], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('split-K matmul through a shared_hbm scratch written then read back, ragged last row '
        'tile masked by arange comparisons on loads, matmuls and stores, HBM-to-HBM dma_copy, '
        'two outputs')
SIZES = {"small": dict(M=1000, K=512, N=512), "full": dict(M=4000, K=4096, N=2048)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    KH = K // 2
    NM = (M + 127) // 128
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    part1 = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    scratch = nl.ndarray((2, M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ik = nl.arange(128)[:, None]
    im = nl.arange(128)[None, :]
    ip = nl.arange(128)[:, None]
    i512 = nl.arange(512)[None, :]
    for h in nl.affine_range(2):
        for m in nl.affine_range(NM):
            cols_ok = (m * 128 + im < M)
            rows_ok = (m * 128 + ip < M)
            stat = nl.ndarray((KH // 128, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
            for k in nl.affine_range(KH // 128):
                stat[k, ik, im] = nl.load(lhsT[h * KH + k * 128 + ik, m * 128 + im], mask=cols_ok)
            for n in nl.affine_range(N // 512):
                acc = nl.zeros((nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
                for k in nl.affine_range(KH // 128):
                    mv = nl.load(rhs[h * KH + k * 128 + ik, n * 512 + i512])
                    acc[ip, i512] += nisa.nc_matmul(stat[k, ik, im], mv, mask=rows_ok)
                res = nisa.tensor_copy(acc, mask=rows_ok)
                nl.store(scratch[h, m * 128 + ip, n * 512 + i512], value=res, mask=rows_ok)
    for m in nl.affine_range(NM):
        rows_ok = (m * 128 + ip < M)
        for n in nl.affine_range(N // 512):
            p0 = nl.load(scratch[0, m * 128 + ip, n * 512 + i512], mask=rows_ok)
            p1 = nl.load(scratch[1, m * 128 + ip, n * 512 + i512], mask=rows_ok)
            s = nisa.tensor_tensor(p0, p1, op=np.add, mask=rows_ok)
            nl.store(out[m * 128 + ip, n * 512 + i512], value=s, mask=rows_ok)
    nisa.dma_copy(dst=part1, src=scratch[1])
    return out, part1


def inputs(p, rng):
    return [rng.normal(size=(p["K"], p["M"])).astype(np.float32),
            rng.normal(size=(p["K"], p["N"])).astype(np.float32)]


def reference(lhsT, rhs):
    a, b = lhsT.astype(np.float64), rhs.astype(np.float64)
    KH = a.shape[0] // 2
    p1 = (a[KH:].T @ b[KH:]).astype(np.float32)
    return (a.T @ b).astype(np.float32), p1
