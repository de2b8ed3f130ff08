"""A matmul as an autotuner's candidate writes it: bf16 operands (fp32 inputs cast on the DMA)
with fp32 accumulation in PSUM, hand-written double buffering of the moving operand (a block
tensor of two slots, slot `k % 2` written while the other is read), the stationary block of
lhsT for a row tile loaded once into a tensor with a two-dimensional free part, the moving
width `nl.tile_size.gemm_moving_fmax`, and the kernel decorated with `nki.benchmark(...)` as a
tuning harness leaves it.

lhsT [K, M], rhs [K, N], out [M, N] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('bf16 matmul with fp32 PSUM accumulation: casts on load, two-slot moving buffer indexed '
        'k % 2, resident lhsT row block with a 2-D free part, gemm_moving_fmax, nki.benchmark '
        'decorator')
SIZES = {"small": dict(M=256, K=512, N=1024), "full": dict(M=4096, K=2048, N=4096)}
TOL = (1e-3, 1e-4)


@nki.benchmark(warmup=2, iters=5)
def kernel(lhsT, rhs):
    K, M = lhsT.shape
    N = rhs.shape[1]
    TN = nl.tile_size.gemm_moving_fmax
    TM = nl.tile_size.gemm_stationary_fmax
    NK = K // 128
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    for m in nl.affine_range(M // TM):
        # the row block's stationary operand: [128 k, NK, 128 m]
        a_blk = nl.ndarray((nl.par_dim(128), NK, TM), dtype=nl.bfloat16, buffer=nl.sbuf)
        for k in nl.affine_range(NK):
            a_blk[ip, k, nl.arange(TM)[None, :]] = nl.load(
                lhsT[k * 128 + ip, m * TM + nl.arange(TM)[None, :]], dtype=nl.bfloat16)
        for n in nl.affine_range(N // TN):
            slots = nl.ndarray((2, nl.par_dim(128), TN), dtype=nl.bfloat16, buffer=nl.sbuf)
            acc = nl.zeros((nl.par_dim(TM), TN), dtype=nl.float32, buffer=nl.psum)
            for k in nl.affine_range(NK):
                slots[k % 2, ip, nl.arange(TN)[None, :]] = nl.load(
                    rhs[k * 128 + ip, n * TN + nl.arange(TN)[None, :]], dtype=nl.bfloat16)
                acc += nisa.nc_matmul(stationary=a_blk[ip, k, nl.arange(TM)[None, :]],
                                      moving=slots[k % 2, ip, nl.arange(TN)[None, :]])
            res = nisa.tensor_copy(acc, dtype=nl.float32, engine=nisa.vector_engine)
            nl.store(out[m * TM + nl.arange(TM)[:, None], n * TN + nl.arange(TN)[None, :]],
                     value=res)
    return out


def inputs(p, rng):
    lhsT = rng.normal(size=(p["K"], p["M"])).astype(np.float32)
    rhs = rng.normal(size=(p["K"], p["N"])).astype(np.float32)
    return [lhsT, rhs]


def _bf16(a):
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def reference(lhsT, rhs):
    return (_bf16(lhsT).astype(np.float64).T @ _bf16(rhs).astype(np.float64)).astype(np.float32)
