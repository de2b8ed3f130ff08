"""A Mamba-like selective scan over C channels (on partitions), S states and a sequence of L:
h_s[t] = exp(dt[t] A[c, s]) h_s[t-1] + dt[t] B[s, t] x[t],  y[t] = sum_s C[s, t] h_s[t].
The sequence in 512-long blocks of a `nl.sequential_range` loop, the scan state of every
(channel tile, state) carried between blocks in a [128, 1] block of a block tensor
(`initial=` of `nisa.tensor_tensor_scan`); exp with a per-partition `scale`
(`nisa.activation`); the B and C rows broadcast to 128 partitions by matmuls with a ones row,
read from PSUM; the sum over states with `nl.loop_reduce`. Inputs x, dt [C/128, 128, L],
A [C/128, 128, S], B and C [S, L]; output [C/128, 128, L].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'Mamba-like scan: exp with per-partition scale, ones-row broadcasts read from PSUM, tensor_tensor_scan with carried state, loop_reduce over states'
SIZES = {"small": dict(C=256, L=1024, S=4), "full": dict(C=1024, L=4096, S=16)}
TOL = (1e-4, 1e-3)


@nki.jit
def kernel(v1, v2, v3, v4, v5):
    T, P, L = v1.shape
    S = v3.shape[2]
    NB = L // 512
    v6 = nl.ndarray((T, P, L), dtype=np.float32, buffer=nl.shared_hbm)
    v7 = nl.ndarray((nl.par_dim(1), 128), dtype=np.float32, name='ones', buffer=nl.sbuf)
    v8 = nl.ndarray((T, nl.par_dim(128), S), dtype=np.float32, name='A_local', buffer=nl.sbuf)
    v9 = nl.ndarray((T, S, nl.par_dim(128), 1), dtype=np.float32, name='state', buffer=nl.sbuf)
    v10 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v11 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='dt_local', buffer=nl.sbuf)
    v12 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v13 = nl.ndarray((T, NB, S, nl.par_dim(1), 512), dtype=np.float32, name='B_local', buffer=nl.sbuf)
    v14 = nl.ndarray((T, NB, S, nl.par_dim(1), 512), dtype=np.float32, name='C_local', buffer=nl.sbuf)
    v15 = nl.zeros((T, NB, S, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v16 = nl.zeros((T, NB, S, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v17 = nl.ndarray((T, NB, S, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v18 = nl.ndarray((T, NB, S, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v19 = nl.ndarray((T, NB, S, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v20 = nl.ndarray((T, NB, S, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v21 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v7[0, nl.arange(128)[None, :]] = nisa.memset(shape=(1, 128), value=1.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(T):
        v8[i0, nl.arange(128)[:, None], nl.arange(S)[None, :]] = nl.load(v3[i0, nl.arange(128)[:, None], nl.arange(S)[None, :]], dtype=np.float32, mask=None)
        for i1 in nl.affine_range(S):
            v9[i0, i1, nl.arange(128)[:, None], 0] = nisa.memset(shape=(128, 1), value=0.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            ' end loop i1 '
        for i2 in nl.sequential_range(NB):
            v10[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[i0, nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v11[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v2[i0, nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v12[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v11[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], v10[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
            for i3 in nl.affine_range(S):
                v13[i0, i2, i3, 0, nl.arange(512)[None, :]] = nl.load(v4[i3, 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
                v14[i0, i2, i3, 0, nl.arange(512)[None, :]] = nl.load(v5[i3, 512 * i2 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
                v15[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.nc_matmul(v7[0, nl.arange(128)[None, :]], v13[i0, i2, i3, 0, nl.arange(512)[None, :]], is_stationary_onezero=True, is_moving_onezero=False, mask=None)
                v17[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.activation(op=nl.exp, data=v11[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], bias=None, scale=v8[i0, nl.arange(128)[:, None], i3], mask=None, dtype=np.float32)
                v18[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v12[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], v15[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
                v19[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor_scan(v17[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], v18[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], initial=v9[i0, i3, nl.arange(128)[:, None], 0], op0=np.multiply, op1=np.add, dtype=np.float32, mask=None)
                v9[i0, i3, nl.arange(128)[:, None], 0] = nl.copy(v19[i0, i2, i3, nl.arange(128)[:, None], 511], dtype=np.float32, mask=None)
                v16[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.nc_matmul(v7[0, nl.arange(128)[None, :]], v14[i0, i2, i3, 0, nl.arange(512)[None, :]], is_stationary_onezero=True, is_moving_onezero=False, mask=None)
                v20[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor(v19[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], v16[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
                v21[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.loop_reduce(v20[i0, i2, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]], op=np.add, loop_indices=[i3], dtype=np.float32, mask=None)
                ' end loop i3 '
            nl.store(v6[i0, nl.arange(128)[:, None], 512 * i2 + nl.arange(512)[None, :]], value=v21[i0, i2, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            ' end loop i2 '
        ' end loop i0 '
    return v6


def inputs(p, rng):
    C, L, S = p["C"], p["L"], p["S"]
    x = rng.normal(0.0, 1.0, size=(C, L)).astype(np.float32)
    dt = rng.uniform(0.001, 0.1, size=(C, L)).astype(np.float32)
    A = -rng.uniform(0.5, 8.0, size=(C, S)).astype(np.float32)
    B = rng.normal(0.0, 1.0, size=(S, L)).astype(np.float32)
    Cm = rng.normal(0.0, 1.0, size=(S, L)).astype(np.float32)
    return [x.reshape(C // 128, 128, L), dt.reshape(C // 128, 128, L), A.reshape(C // 128, 128, S),
            B, Cm]


def reference(x, dt, A, B, Cm):
    T, P, L = x.shape
    S = A.shape[2]
    x, dt = x.reshape(T * P, L).astype(np.float64), dt.reshape(T * P, L).astype(np.float64)
    A = A.reshape(T * P, S).astype(np.float64)
    y = np.zeros_like(x)
    for s in range(S):
        a = np.exp(dt * A[:, s:s + 1])
        b = dt * x * B[s][None, :]
        h = np.zeros(T * P)
        hs = np.empty_like(x)
        for t in range(L):
            h = a[:, t] * h + b[:, t]
            hs[:, t] = h
        y += hs * Cm[s][None, :]
    return y.reshape(T, P, L).astype(np.float32)
