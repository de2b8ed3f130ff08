"""GELU (tanh approximation) of an [R, C] fp32 matrix as a chain of element-wise instructions:
y = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). `nisa.tensor_tensor` and
`nisa.tensor_scalar` with and without `engine=`, `nisa.activation(tanh, scale=...)`, two-op
`tensor_scalar`. Input and output [R/128, 128, C].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'element-wise chain: tensor_tensor, two-op tensor_scalar with engine=, activation(tanh, scale)'
SIZES = {"small": dict(R=256, C=1024), "full": dict(R=4096, C=8192)}
TOL = (1e-5, 1e-4)


@nki.jit
def kernel(v1):
    T, P, C = v1.shape
    NB = C // 512
    v2 = nl.ndarray((T, P, C), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v4 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v5 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v6 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v8 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v9 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(T):
        for i1 in nl.affine_range(NB):
            v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v4[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v4[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.multiply, operand0=0.044715, op1=np.add, operand1=1.0, dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
            v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v5[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.tanh, data=v6[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=0.7978845608028654, mask=None, dtype=np.float32)
            v8[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_scalar(data=v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], op0=np.add, operand0=1.0, op1=np.multiply, operand1=0.5, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            v9[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.multiply(v8[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], v3[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            nl.store(v2[i0, nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], value=v9[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v2


def inputs(p, rng):
    x = rng.normal(0.0, 2.0, size=(p["R"], p["C"])).astype(np.float32)
    return [x.reshape(p["R"] // 128, 128, p["C"])]


def reference(x):
    x = x.astype(np.float64)
    return (0.5 * x * (1.0 + np.tanh(np.sqrt(2.0 / np.pi) * (x + 0.044715 * x ** 3)))).astype(np.float32)
