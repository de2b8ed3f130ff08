"""A matmul with a SiLU epilogue, fp32, in the layout a generator gives a large matmul:
out = silu(A B) with A passed as [M/128, 128, K/128, 128] (row tile, row, k tile, k) and B as
[K/128, 128, N]. Per 1024-column block the B slab is loaded once; per row tile, A's rows are
loaded eight k tiles at a time with a 3-D index grid into a [128, 1024] block, each [128, 128]
piece transposed against an identity (`nc_matmul(is_transpose=True)`) into a block tensor
whose free part is two-dimensional (`(..., nl.par_dim(128), 8, 128)`, written with an integer
index on its first free axis); the products accumulate over K in 512-wide PSUM banks; the
epilogue reads the bank as the generator's SiLU does: exp(-x) (`nisa.activation` with
scale -1 and a zero bias column from `nisa.memset`), + 1 (`tensor_scalar`,
reverse0), `nisa.reciprocal`, times x (`nl.multiply` of the PSUM bank). Output [M/128, 128, N].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'A as [M/128,128,K/128,128] loaded with 3-D index grids, transposes into a block tensor with a 2-D free part, PSUM accumulation over K, the generator\'s SiLU (exp scale -1, +1 reverse0, reciprocal, multiply) read from PSUM'
SIZES = {"small": dict(M=256, K=1024, N=1024), "full": dict(M=4096, K=2048, N=4096)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(a, b):
    n_mt, _, n_kt, _ = a.shape
    n = b.shape[2]
    n_kc = n_kt // 8                      # chunks of eight k tiles per load of A
    n_nb = n // 1024                      # 1024-column blocks of the output
    out = nl.ndarray((n_mt, 128, n), dtype=np.float32, buffer=nl.shared_hbm)
    eye_hbm = nl.shared_constant(np.eye(128, dtype=np.float32))
    eye = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    zero_col = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, buffer=nl.sbuf)
    b_slab = nl.ndarray((n_nb, n_kt, nl.par_dim(128), 1024), dtype=np.float32, buffer=nl.sbuf)
    a_rows = nl.ndarray((n_nb, n_mt, n_kc, nl.par_dim(128), 1024), dtype=np.float32,
                        buffer=nl.sbuf)
    a_t_ps = nl.zeros((n_nb, n_mt, n_kc, 8, nl.par_dim(128), 128), dtype=np.float32,
                      buffer=nl.psum, lazy_initialization=True)
    a_t = nl.ndarray((n_nb, n_mt, n_kc, nl.par_dim(128), 8, 128), dtype=np.float32,
                     buffer=nl.sbuf)
    acc = nl.zeros((n_nb, n_mt, 2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum,
                   lazy_initialization=True)
    e_neg = nl.ndarray((n_nb, n_mt, 2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    denom = nl.ndarray((n_nb, n_mt, 2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    gate = nl.ndarray((n_nb, n_mt, 2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
    res = nl.ndarray((n_nb, n_mt, nl.par_dim(128), 1024), dtype=np.float32, buffer=nl.sbuf)

    sq = nl.mgrid[0:128, 0:128]           # a [128, 128] tile
    wide = nl.mgrid[0:128, 0:1024]        # a [128, 1024] row block
    half = nl.mgrid[0:128, 0:512]         # a [128, 512] PSUM bank
    p3 = nl.arange(128)[:, None, None]    # 3-D grid: row, k tile within the chunk, k
    t3 = nl.arange(8)[None, :, None]
    k3 = nl.arange(128)[None, None, :]

    eye[sq.p, sq.x] = nl.load(eye_hbm[sq.p, sq.x])
    zero_col[sq.p, 0] = nisa.memset(shape=(128, 1), value=0.0, dtype=np.float32)
    for nb in nl.affine_range(n_nb):
        for kt in nl.affine_range(n_kt):
            b_slab[nb, kt, wide.p, wide.x] = nl.load(b[kt, wide.p, 1024 * nb + wide.x])
        for mt in nl.affine_range(n_mt):
            for kc in nl.affine_range(n_kc):
                # eight k tiles of the row tile in one load, side by side in the free axis
                a_rows[nb, mt, kc, p3, 128 * t3 + k3] = nl.load(a[mt, p3, 8 * kc + t3, k3])
                for t in nl.affine_range(8):
                    a_t_ps[nb, mt, kc, t, sq.p, sq.x] = nisa.nc_matmul(
                        a_rows[nb, mt, kc, sq.p, 128 * t + sq.x], eye[sq.p, sq.x],
                        is_moving_onezero=True, is_transpose=True)
                    a_t[nb, mt, kc, sq.p, t, sq.x] = nl.copy(a_t_ps[nb, mt, kc, t, sq.p, sq.x])
            for h in nl.affine_range(2):
                for kc in nl.affine_range(n_kc):
                    for t in nl.affine_range(8):
                        acc[nb, mt, h, half.p, half.x] += nisa.nc_matmul(
                            a_t[nb, mt, kc, half.p, t, sq.x],
                            b_slab[nb, 8 * kc + t, half.p, 512 * h + half.x])
                # silu(x) = x / (1 + exp(-x)), read from the PSUM bank
                e_neg[nb, mt, h, half.p, half.x] = nisa.activation(
                    op=nl.exp, data=acc[nb, mt, h, half.p, half.x], bias=zero_col[half.p, 0],
                    scale=-1.0)
                denom[nb, mt, h, half.p, half.x] = nisa.tensor_scalar(
                    data=e_neg[nb, mt, h, half.p, half.x], op0=nl.add, operand0=1.0,
                    reverse0=True)
                gate[nb, mt, h, half.p, half.x] = nisa.reciprocal(
                    data=denom[nb, mt, h, half.p, half.x])
                res[nb, mt, half.p, 512 * h + half.x] = nl.multiply(
                    acc[nb, mt, h, half.p, half.x], gate[nb, mt, h, half.p, half.x])
            nl.store(out[mt, wide.p, 1024 * nb + wide.x], value=res[nb, mt, wide.p, wide.x])
    return out


def inputs(p, rng):
    M, K, N = p["M"], p["K"], p["N"]
    a = rng.normal(0.0, 1.0, size=(M, K)).astype(np.float32)
    b = rng.normal(0.0, 1.0 / np.sqrt(K), size=(K, N)).astype(np.float32)
    return [a.reshape(M // 128, 128, K // 128, 128), b.reshape(K // 128, 128, N)]


def reference(a, b):
    MT, P, KT, Q = a.shape
    y = a.reshape(MT * P, KT * Q).astype(np.float64) @ b.reshape(KT * Q, -1).astype(np.float64)
    return (y / (1.0 + np.exp(-y))).astype(np.float32).reshape(MT, P, -1)
