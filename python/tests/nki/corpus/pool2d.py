"""2 x 2 average and max pooling of an [N, C, H, W] image batch with C = 96 channels on the
partitions (fewer than 128), as the public AveragePool2D kernel's index form appears in generated
code: the image rows are loaded in chunks with 3-D index grids into a block tensor with a
two-dimensional free part, and each pooled chunk is one `nl.sum` / `nl.max` over the axes
[2, 4] of a 5-D `nl.mgrid` view (`x[c, 2*i + di, 2*j + dj]`: reduced axes that are not adjacent),
the mean a multiply by 1/4. Two outputs, written through 3-D index grids.

x [N, C, H, W] fp32; avg, max [N, C, H/2, W/2] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

WHAT = ('2x2 average and max pooling, 96 channels on the partitions: 3-D index-grid loads into a '
        'block tensor with a 2-D free part, nl.sum / nl.max over axes [2, 4] of a 5-D nl.mgrid '
        'view, two outputs')
SIZES = {"small": dict(N=2, C=96, H=32, W=64), "full": dict(N=16, C=96, H=128, W=128)}
TOL = (1e-6, 1e-6)
HC = 16      # image rows per chunk


@nki.jit
def kernel(v1):
    N, C, H, W = v1.shape
    NH = H // HC
    v2 = nl.ndarray((N, C, H // 2, W // 2), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((N, C, H // 2, W // 2), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((N, NH, nl.par_dim(C), HC, W), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v5 = nl.ndarray((N, NH, nl.par_dim(C), HC // 2, W // 2), dtype=np.float32, name='', buffer=nl.sbuf)
    v6 = nl.ndarray((N, NH, nl.par_dim(C), HC // 2, W // 2), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.ndarray((N, NH, nl.par_dim(C), HC // 2, W // 2), dtype=np.float32, name='', buffer=nl.sbuf)
    i0, i1, i2, i3, i4 = nl.mgrid[0:C, 0:HC // 2, 0:2, 0:W // 2, 0:2]
    for n in nl.affine_range(N):
        for h in nl.affine_range(NH):
            v4[n, h, nl.arange(C)[:, None, None], nl.arange(HC)[None, :, None], nl.arange(W)[None, None, :]] = nl.load(v1[n, nl.arange(C)[:, None, None], h * HC + nl.arange(HC)[None, :, None], nl.arange(W)[None, None, :]], dtype=np.float32, mask=None)
            v5[n, h, nl.arange(C)[:, None, None], nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]] = nl.sum(v4[n, h, i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4], dtype=np.float32, mask=None)
            v6[n, h, nl.arange(C)[:, None, None], nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]] = nl.multiply(v5[n, h, nl.arange(C)[:, None, None], nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]], 0.25, dtype=np.float32, mask=None)
            v7[n, h, nl.arange(C)[:, None, None], nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]] = nl.max(v4[n, h, i0, 2 * i1 + i2, 2 * i3 + i4], axis=[2, 4], dtype=np.float32, mask=None)
            nl.store(v2[n, nl.arange(C)[:, None, None], h * (HC // 2) + nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]], value=v6[n, h, nl.arange(C)[:, None, None], nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]], mask=None)
            nl.store(v3[n, nl.arange(C)[:, None, None], h * (HC // 2) + nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]], value=v7[n, h, nl.arange(C)[:, None, None], nl.arange(HC // 2)[None, :, None], nl.arange(W // 2)[None, None, :]], mask=None)
            ' end loop h '
        ' end loop n '
    return v2, v3


def inputs(p, rng):
    return [rng.normal(0.0, 1.0, size=(p["N"], p["C"], p["H"], p["W"])).astype(np.float32)]


def reference(x):
    N, C, H, W = x.shape
    w = x.reshape(N, C, H // 2, 2, W // 2, 2)
    avg = (w.astype(np.float64).sum(axis=(3, 5)) * 0.25).astype(np.float32)
    return avg, w.max(axis=(3, 5))
