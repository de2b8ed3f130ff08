"""A matmul as a loop-reordering generator may emit it: the contraction (K) loop outermost, one
PSUM accumulation group per [128, 512] output tile, all NT of them open across the whole K loop
(NT = 16 at the small size: 32 KiB per partition of accumulators against PSUM's 16 KiB, so
the compiler must spill PSUM). lhsT [K, M] is loaded a [128, 128] block at a time, rhs [K, N]
a [128, 512] block at a time, into block tensors; the results are copied out of PSUM by
`nisa.tensor_copy` and stored once K is done. Inputs lhsT [K, M], rhs [K, N]; output [M, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'K loop outermost with 16+ PSUM accumulation groups open at once (more than PSUM\'s 8 banks: PSUM spilled to SBUF and reloaded), block-tensor operands, tensor_copy out of PSUM'
SIZES = {"small": dict(M=256, K=512, N=8192), "full": dict(M=1024, K=4096, N=8192)}
TOL = (1e-3, 1e-4)


@nki.jit
def kernel(v1, v2):
    K, M = v1.shape
    _, N = v2.shape
    KT = K // 128
    MT = M // 128
    NT = N // 512
    v3 = nl.ndarray((M, N), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((KT, MT, nl.par_dim(128), 128), dtype=np.float32, name='lhsT_local', buffer=nl.sbuf)
    v5 = nl.ndarray((KT, NT, nl.par_dim(128), 512), dtype=np.float32, name='rhs_local', buffer=nl.sbuf)
    v6 = nl.zeros((MT, NT, nl.par_dim(128), 512), dtype=np.float32, name='acc', buffer=nl.psum, lazy_initialization=True)
    v7 = nl.ndarray((MT, NT, nl.par_dim(128), 512), dtype=np.float32, name='res', buffer=nl.sbuf)
    for i0 in nl.affine_range(KT):
        for i1 in nl.affine_range(MT):
            v4[i0, i1, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v1[128 * i0 + nl.arange(128)[:, None], 128 * i1 + nl.arange(128)[None, :]], dtype=np.float32, mask=None)
            ' end loop i1 '
        for i2 in nl.affine_range(NT):
            v5[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v2[128 * i0 + nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            for i3 in nl.affine_range(MT):
                v6[i3, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nisa.nc_matmul(v4[i0, i3, nl.arange(128)[:, None], nl.arange(128)[None, :]], v5[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                ' end loop i3 '
            ' end loop i2 '
        ' end loop i0 '
    for i4 in nl.affine_range(MT):
        for i5 in nl.affine_range(NT):
            v7[i4, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_copy(v6[i4, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            nl.store(v3[128 * i4 + nl.arange(128)[:, None], 512 * i5 + nl.arange(512)[None, :]], value=v7[i4, i5, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i5 '
        ' end loop i4 '
    return v3


def inputs(p, rng):
    return [rng.standard_normal((p["K"], p["M"])).astype(np.float32),
            rng.standard_normal((p["K"], p["N"])).astype(np.float32)]


def reference(lhsT, rhs):
    return (lhsT.T.astype(np.float64) @ rhs.astype(np.float64)).astype(np.float32)
