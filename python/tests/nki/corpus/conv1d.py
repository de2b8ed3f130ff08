"""Depthwise 1-D convolution (valid, K taps) of C channels of length L + K - 1, the channels on
partitions: out[c, t] = sum_j w[c, j] x[c, t + j], as shifted multiply-adds. Each output block
starts as a per-partition product (`nisa.tensor_scalar` with a [128, 1] operand) and gathers
the other taps with `nisa.scalar_tensor_tensor` (x_shifted * w_j + acc) in a
`nl.sequential_range` loop over the taps, reading the input block at an offset. Inputs
x [C/128, 128, L + K - 1] and w [C/128, 128, K]; output [C/128, 128, L].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'depthwise conv as shifted multiply-adds: tensor_scalar and scalar_tensor_tensor with per-partition weights, sequential_range over taps'
SIZES = {"small": dict(C=256, L=1024, K=4), "full": dict(C=4096, L=4096, K=4)}
TOL = (1e-5, 1e-5)


@nki.jit
def kernel(v1, v2):
    T, P, LK = v1.shape
    K = v2.shape[2]
    L = LK - K + 1
    NB = L // 512
    v3 = nl.ndarray((T, P, L), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((T, nl.par_dim(128), K), dtype=np.float32, name='w_local', buffer=nl.sbuf)
    v5 = nl.ndarray((T, NB, nl.par_dim(128), 512 + K - 1), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v6 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='acc', buffer=nl.sbuf)
    for i0 in nl.affine_range(T):
        v4[i0, nl.arange(128)[:, None], nl.arange(K)[None, :]] = nl.load(v2[i0, nl.arange(128)[:, None], nl.arange(K)[None, :]], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(NB):
            v5[i0, i1, nl.arange(128)[:, None], nl.arange(512 + K - 1)[None, :]] = nl.load(v1[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512 + K - 1)[None, :]], dtype=np.float32, mask=None)
            v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=v4[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            for i2 in nl.sequential_range(K - 1):
                v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.scalar_tensor_tensor(data=v5[i0, i1, nl.arange(128)[:, None], 1 + i2 + nl.arange(512)[None, :]], op0=np.multiply, operand0=v4[i0, nl.arange(128)[:, None], 1 + i2], op1=np.add, operand1=v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
                ' end loop i2 '
            nl.store(v3[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], value=v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v3


def inputs(p, rng):
    C, L, K = p["C"], p["L"], p["K"]
    x = rng.normal(0.0, 1.0, size=(C, L + K - 1)).astype(np.float32)
    w = rng.normal(0.0, 1.0, size=(C, K)).astype(np.float32)
    return [x.reshape(C // 128, 128, L + K - 1), w.reshape(C // 128, 128, K)]


def reference(x, w):
    K = w.shape[2]
    L = x.shape[2] - K + 1
    x64, w64 = x.astype(np.float64), w.astype(np.float64)
    out = sum(x64[..., j:j + L] * w64[..., j:j + 1] for j in range(K))
    return out.astype(np.float32)
