"""Sinusoidal position encoding added to an [S, D] activation, with the positions made on the
chip, as a generated embedding kernel does it: the position of each partition from an `iota`
of an affine expression of the loop index (`t * 128 + p`, as fp32), the angles `pos * w` with
the frequencies w a [1, D/2] input broadcast to the partitions by the load, reduced to
[-pi, pi) (the Scalar engine's sine is valid there) by a two-op `tensor_scalar` (add pi, then
`np.mod` 2 pi) and a subtract, then `nl.sin` and `nl.cos` written to the even and odd columns
through strided views (`2 * i + 1`: the even/odd index form of the public examples) and added
to x.

x [S, D] fp32, w [1, D/2] fp32 -> x + PE [S, D] fp32, PE[s, 2i] = sin(s w_i), PE[s, 2i+1] = cos(s w_i).
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('sinusoidal position encoding: iota of t*128+p positions, angles range-reduced by a '
        'two-op tensor_scalar with np.mod, nl.sin and nl.cos into even and odd strided columns, '
        'frequencies broadcast by the load')
SIZES = {"small": dict(S=256, D=256), "full": dict(S=8192, D=2048)}
TOL = (3e-6, 1e-6)
PI = 3.141592653589793


@nki.jit
def kernel(v1, v2):
    S, D = v1.shape
    H = D // 2
    T = S // 128
    v3 = nl.ndarray((S, D), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((nl.par_dim(128), H), dtype=np.float32, name='freq', buffer=nl.sbuf)
    v5 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='pos', buffer=nl.sbuf)
    v6 = nl.ndarray((T, nl.par_dim(128), H), dtype=np.float32, name='angle', buffer=nl.sbuf)
    v7 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='pe', buffer=nl.sbuf)
    v8 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v9 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='', buffer=nl.sbuf)
    v4[nl.arange(128)[:, None], nl.arange(H)[None, :]] = nl.load(v2.broadcast_to((128, H)), dtype=np.float32, mask=None)
    for i0 in nl.affine_range(T):
        v5[i0, nl.arange(128)[:, None], 0] = nisa.iota(i0 * 128 + nl.arange(128)[:, None], dtype=np.float32)
        v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]] = nisa.tensor_scalar(data=v4[nl.arange(128)[:, None], nl.arange(H)[None, :]], op0=np.multiply, operand0=v5[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
        v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]] = nisa.tensor_scalar(data=v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]], op0=np.add, operand0=np.dtype(np.float32).type(PI), op1=np.mod, operand1=np.dtype(np.float32).type(2 * PI), dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
        v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]] = nl.subtract(v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]], np.dtype(np.float32).type(PI), dtype=np.float32, mask=None)
        v7[i0, nl.arange(128)[:, None], 2 * nl.arange(H)[None, :]] = nl.sin(v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]], dtype=np.float32, mask=None)
        v7[i0, nl.arange(128)[:, None], 2 * nl.arange(H)[None, :] + 1] = nl.cos(v6[i0, nl.arange(128)[:, None], nl.arange(H)[None, :]], dtype=np.float32, mask=None)
        v8[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        v9[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nisa.tensor_tensor(v8[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], v7[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], op=np.add, dtype=np.float32, mask=None)
        nl.store(v3[i0 * 128 + nl.arange(128)[:, None], nl.arange(D)[None, :]], value=v9[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], mask=None)
        ' end loop i0 '
    return v3


def inputs(p, rng):
    S, D = p["S"], p["D"]
    x = rng.normal(0.0, 1.0, size=(S, D)).astype(np.float32)
    w = (10000.0 ** (-2.0 * np.arange(D // 2) / D)).astype(np.float32).reshape(1, D // 2)
    return [x, w]


def reference(x, w):
    """The angle and its reduction in fp32 as the kernel computes them, sin and cos in fp64."""
    f = np.float32
    S, D = x.shape
    ang = np.arange(S, dtype=np.float32)[:, None] * w
    r = np.mod(ang + f(PI), f(2 * PI)) - f(PI)
    pe = np.empty((S, D), dtype=np.float64)
    pe[:, 0::2] = np.sin(r.astype(np.float64))
    pe[:, 1::2] = np.cos(r.astype(np.float64))
    return (x + pe.astype(np.float32)).astype(np.float32)
