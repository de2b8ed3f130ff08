"""Two linear layers on the same input written with the language-level calls, fp32:
out1 = relu(x W1) and out2 = x W2 with a narrow W2 [K, 128]. Each [128, 128] piece of a row
tile of x is transposed with `nl.transpose` into a block tensor, and out1's 512-wide PSUM banks
accumulate `nl.matmul(xT, W1, transpose_x=True)` over K, relu'd on the way out (`nl.relu`);
out2 accumulates `nl.matmul(x, W2)` on the untransposed pieces (the call transposes x itself).
W1 and W2 are loaded once. Inputs x [N, K], w1 [K, F], w2 [K, 128]; outputs [N, F], [N, 128].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'nl.transpose into a block tensor, nl.matmul(transpose_x=True) and nl.matmul(x, w) accumulated in PSUM, nl.relu from PSUM, two outputs'
SIZES = {"small": dict(N=256, K=256, F=1024), "full": dict(N=4096, K=1024, F=2048)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2, v3):
    N, K = v1.shape
    F = v2.shape[1]
    MT = N // 128
    KT = K // 128
    FB = F // 512
    v4 = nl.ndarray((N, F), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((N, 128), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.ndarray((KT, nl.par_dim(128), F), dtype=np.float32, name='w1_local', buffer=nl.sbuf)
    v7 = nl.ndarray((KT, nl.par_dim(128), 128), dtype=np.float32, name='w2_local', buffer=nl.sbuf)
    v8 = nl.ndarray((MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v9 = nl.ndarray((MT, KT, nl.par_dim(128), 128), dtype=np.float32, name='xT', buffer=nl.sbuf)
    v10 = nl.zeros((MT, FB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.psum)
    v11 = nl.ndarray((MT, FB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v12 = nl.zeros((MT, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.psum)
    v13 = nl.ndarray((MT, nl.par_dim(128), 128), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(KT):
        v6[i0, nl.arange(128)[:, None], nl.arange(F)[None, :]] = nl.load(v2[128 * i0 + nl.arange(128)[:, None], nl.arange(F)[None, :]])
        v7[i0, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v3[128 * i0 + nl.arange(128)[:, None], nl.arange(128)[None, :]])
    for i1 in nl.affine_range(MT):
        for i2 in nl.affine_range(KT):
            v8[i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v1[128 * i1 + nl.arange(128)[:, None], 128 * i2 + nl.arange(128)[None, :]])
            v9[i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.transpose(v8[i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]])
            v12[i1, nl.arange(128)[:, None], nl.arange(128)[None, :]] += nl.matmul(v8[i1, i2, nl.arange(128)[:, None], nl.arange(128)[None, :]], v7[i2, nl.arange(128)[:, None], nl.arange(128)[None, :]])
        for i3 in nl.affine_range(FB):
            for i4 in nl.affine_range(KT):
                v10[i1, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] += nl.matmul(v9[i1, i4, nl.arange(128)[:, None], nl.arange(128)[None, :]], v6[i4, nl.arange(128)[:, None], 512 * i3 + nl.arange(512)[None, :]], transpose_x=True)
            v11[i1, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.relu(v10[i1, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]])
            nl.store(v4[128 * i1 + nl.arange(128)[:, None], 512 * i3 + nl.arange(512)[None, :]], value=v11[i1, i3, nl.arange(128)[:, None], nl.arange(512)[None, :]])
        v13[i1, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.copy(v12[i1, nl.arange(128)[:, None], nl.arange(128)[None, :]])
        nl.store(v5[128 * i1 + nl.arange(128)[:, None], nl.arange(128)[None, :]], value=v13[i1, nl.arange(128)[:, None], nl.arange(128)[None, :]])
    return v4, v5


def inputs(p, rng):
    x = rng.normal(0.0, 1.0, size=(p["N"], p["K"])).astype(np.float32)
    w1 = rng.normal(0.0, 1.0 / np.sqrt(p["K"]), size=(p["K"], p["F"])).astype(np.float32)
    w2 = rng.normal(0.0, 1.0 / np.sqrt(p["K"]), size=(p["K"], 128)).astype(np.float32)
    return [x, w1, w2]


def reference(x, w1, w2):
    x64 = x.astype(np.float64)
    return (np.maximum(x64 @ w1.astype(np.float64), 0.0).astype(np.float32),
            (x64 @ w2.astype(np.float64)).astype(np.float32))
