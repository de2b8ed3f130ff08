"""A 3 x 3 convolution without padding as matmuls accumulated over the taps, fp32: out[n, co,
y, x] = sum over ci, ky, kx of w[ky, kx, ci, co] img[n, ci, y + ky, x + kx], with 128 input
and 128 output channels on the partitions. Each image [128, H, W] is loaded into a block
tensor with a two-dimensional free part; the nine weight taps [ci, co] once; for each output
row and each of the nine taps a `nc_matmul` with the tap as the stationary operand and the
shifted input row (`img[ci, y + ky, kx : kx + W - 2]`, a view of the image block at a
row and column offset) as the moving one, accumulated in PSUM; the rows copied out into an
output block tensor and stored per image. Inputs img [N, 128, H, W], w [3, 3, 128, 128];
output [N, 128, H - 2, W - 2].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = '3x3 convolution as 9 shifted-view matmuls per output row accumulated in PSUM, image block tensor with a 2-D free part, weight taps resident'
SIZES = {"small": dict(N=2, H=16, W=34), "full": dict(N=8, H=64, W=130)}
TOL = (1e-4, 1e-4)


@nki.jit
def kernel(v1, v2):
    N, C, H, W = v1.shape
    HO, WO = H - 2, W - 2
    v3 = nl.ndarray((N, C, HO, WO), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((3, 3, nl.par_dim(128), 128), dtype=np.float32, name='w_local', buffer=nl.sbuf)
    v5 = nl.ndarray((N, nl.par_dim(128), H, W), dtype=np.float32, name='img_local', buffer=nl.sbuf)
    v6 = nl.zeros((N, HO, nl.par_dim(128), WO), dtype=np.float32, name='', buffer=nl.psum, lazy_initialization=True)
    v7 = nl.ndarray((N, nl.par_dim(128), HO, WO), dtype=np.float32, name='out_local', buffer=nl.sbuf)
    for i0 in nl.affine_range(3):
        for i1 in nl.affine_range(3):
            v4[i0, i1, nl.arange(128)[:, None], nl.arange(128)[None, :]] = nl.load(v2[i0, i1, nl.arange(128)[:, None], nl.arange(128)[None, :]], dtype=np.float32, mask=None)
            ' end loop i1 '
        ' end loop i0 '
    for i2 in nl.affine_range(N):
        v5[i2, nl.arange(128)[:, None, None], nl.arange(H)[None, :, None], nl.arange(W)[None, None, :]] = nl.load(v1[i2, nl.arange(128)[:, None, None], nl.arange(H)[None, :, None], nl.arange(W)[None, None, :]], dtype=np.float32, mask=None)
        for i3 in nl.affine_range(HO):
            for i4 in nl.affine_range(3):
                for i5 in nl.affine_range(3):
                    v6[i2, i3, nl.arange(128)[:, None], nl.arange(WO)[None, :]] += nisa.nc_matmul(v4[i4, i5, nl.arange(128)[:, None], nl.arange(128)[None, :]], v5[i2, nl.arange(128)[:, None], i3 + i4, i5 + nl.arange(WO)[None, :]], is_stationary_onezero=False, is_moving_onezero=False, mask=None)
                    ' end loop i5 '
                ' end loop i4 '
            v7[i2, nl.arange(128)[:, None], i3, nl.arange(WO)[None, :]] = nl.copy(v6[i2, i3, nl.arange(128)[:, None], nl.arange(WO)[None, :]], dtype=np.float32, mask=None)
            ' end loop i3 '
        nl.store(v3[i2, nl.arange(128)[:, None, None], nl.arange(HO)[None, :, None], nl.arange(WO)[None, None, :]], value=v7[i2, nl.arange(128)[:, None, None], nl.arange(HO)[None, :, None], nl.arange(WO)[None, None, :]], mask=None)
        ' end loop i2 '
    return v3


def inputs(p, rng):
    N, H, W = p["N"], p["H"], p["W"]
    img = rng.normal(0.0, 1.0, size=(N, 128, H, W)).astype(np.float32)
    w = rng.normal(0.0, 1.0 / 34.0, size=(3, 3, 128, 128)).astype(np.float32)
    return [img, w]


def reference(img, w):
    N, C, H, W = img.shape
    x, w = img.astype(np.float64), w.astype(np.float64)
    out = np.zeros((N, w.shape[3], H - 2, W - 2))
    for ky in range(3):
        for kx in range(3):
            out += np.einsum('nchw,co->nohw', x[:, :, ky:ky + H - 2, kx:kx + W - 2], w[ky, kx])
    return out.astype(np.float32)
