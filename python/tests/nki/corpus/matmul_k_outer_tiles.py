"""The K-outermost matmul as a generator may write it with plain tiles: per 128-row output
block, a Python list of NT [128, 512] PSUM accumulators (nl.zeros, no block dimensions), all
open across the whole K loop (NT = 16: 32 KiB per partition against PSUM's 16 KiB), the N
loop a static_range that indexes the list. The compiler must spill PSUM tiles: each keeps
the bank its views name, and tiles sharing a bank take turns in it through SBUF. Operands
are loaded a tile at a time; results are copied out of PSUM by nisa.tensor_copy and stored.
Inputs lhsT [K, M], rhs [K, N]; output [M, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'K loop outermost with 16 plain PSUM tiles (a Python list of nl.zeros) open at once per row block: PSUM tiles without block dimensions spilled to SBUF and copied back, static_range indexing the list, tensor_copy out of PSUM'
SIZES = {"small": dict(M=256, K=512, N=8192), "full": dict(M=1024, K=4096, N=8192)}
TOL = (1e-3, 1e-4)


@nki.jit
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    KT = K // 128
    NT = N // 512
    out = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    for m in nl.affine_range(M // 128):
        acc = [nl.zeros((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
               for _ in nl.static_range(NT)]
        for k in nl.affine_range(KT):
            lt = nl.load(lhsT[128 * k:128 * (k + 1), 128 * m:128 * (m + 1)])
            for n in nl.static_range(NT):
                rt = nl.load(rhs[128 * k:128 * (k + 1), 512 * n:512 * (n + 1)])
                acc[n] += nisa.nc_matmul(lt, rt)
        for n in nl.static_range(NT):
            res = nisa.tensor_copy(acc[n], dtype=np.float32)
            nl.store(out[128 * m:128 * (m + 1), 512 * n:512 * (n + 1)], value=res)
    return out


def inputs(p, rng):
    return [rng.standard_normal((p["K"], p["M"])).astype(np.float32),
            rng.standard_normal((p["K"], p["N"])).astype(np.float32)]


def reference(lhsT, rhs):
    return (lhsT.T.astype(np.float64) @ rhs.astype(np.float64)).astype(np.float32)
