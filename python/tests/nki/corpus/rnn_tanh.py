"""An Elman RNN layer's recurrence, h_t = tanh(W^T h_{t-1} + u_t), over T steps for a batch
of B sequences with a hidden size of 128, as generated code writes it: the state carried
through a `sequential_range` (each step reads the previous step's result), two matmuls into one
PSUM accumulation group per step (the recurrent product with W stationary, then u_t added by a
matmul against an identity from `nl.shared_identity_matrix`), tanh read from PSUM on the Scalar
engine into the state, the state stored every step into a [T, 128, B] output, and the inputs
loaded 16 steps at a time into a block tensor (a 3-D load).

u [T, 128, B] fp32 (the input projection, precomputed), w [128, 128] fp32, h0 [128, B] fp32
-> hs [T, 128, B] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('RNN recurrence: state carried through a sequential_range and a PSUM accumulation group '
        'of two matmuls per step (W stationary, u added against a shared identity), tanh from '
        'PSUM, 3-D block loads of 16 steps')
SIZES = {"small": dict(T=32, B=64), "full": dict(T=1024, B=512)}
TOL = (2e-5, 1e-4)
TS = 16


@nki.jit
def kernel(v1, v2, v3):
    T, H, B = v1.shape
    NT = T // TS
    v4 = nl.ndarray((T, H, B), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, name='w', buffer=nl.sbuf)
    v6 = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, name='ident', buffer=nl.sbuf)
    v7 = nl.ndarray((nl.par_dim(128), B), dtype=np.float32, name='h', buffer=nl.sbuf)
    v8 = nl.ndarray((NT, nl.par_dim(128), TS, B), dtype=np.float32, name='u_local', buffer=nl.sbuf)
    v9 = nl.shared_identity_matrix(n=128, dtype=np.float32)
    v5[nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v2[nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
    v6[nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v9[nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
    v7[nl.arange(128)[:, None], nl.arange(B)[None, :]] = nl.load(v3[nl.arange(128)[:, None], nl.arange(B)[None, :]], dtype=np.float32, mask=None)
    for i0 in nl.sequential_range(NT):
        v8[i0, nl.arange(128)[:, None, None], nl.arange(TS)[None, :, None], nl.arange(B)[None, None, :]] = nl.load(v1[i0 * TS + nl.arange(TS)[None, :, None], nl.arange(128)[:, None, None], nl.arange(B)[None, None, :]], dtype=np.float32, mask=None)
        for i1 in nl.sequential_range(TS):
            v10 = nl.zeros((nl.par_dim(128), B), dtype=np.float32, buffer=nl.psum)
            v10[nl.arange(128)[:, None], nl.arange(B)[None, :]] += nisa.nc_matmul(v5[nl.arange(128)[:, None], nl.arange(128)[None, :]], v7[nl.arange(128)[:, None], nl.arange(B)[None, :]], mask=None)
            v10[nl.arange(128)[:, None], nl.arange(B)[None, :]] += nisa.nc_matmul(v6[nl.arange(128)[:, None], nl.arange(128)[None, :]], v8[i0, nl.arange(128)[:, None], i1, nl.arange(B)[None, :]], is_stationary_onezero=True, mask=None)
            v7[nl.arange(128)[:, None], nl.arange(B)[None, :]] = nisa.activation(op=nl.tanh, data=v10[nl.arange(128)[:, None], nl.arange(B)[None, :]], bias=None, scale=1.0, mask=None, dtype=np.float32)
            nl.store(v4[i0 * TS + i1, nl.arange(128)[:, None], nl.arange(B)[None, :]], value=v7[nl.arange(128)[:, None], nl.arange(B)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v4


def inputs(p, rng):
    T, B = p["T"], p["B"]
    u = rng.normal(0.0, 0.5, size=(T, 128, B)).astype(np.float32)
    w = rng.normal(0.0, 1.0 / np.sqrt(128), size=(128, 128)).astype(np.float32)
    h0 = rng.normal(0.0, 0.5, size=(128, B)).astype(np.float32)
    return [u, w, h0]


def reference(u, w, h0):
    h = h0.astype(np.float64)
    out = np.empty(u.shape, dtype=np.float32)
    for t in range(u.shape[0]):
        h = np.tanh(w.astype(np.float64).T @ h + u[t])
        out[t] = h
    return out
