"""Depthwise 1-D convolution written as the baseline of the public conv1d optimisation study
(measurements.md section 7, Step 0; trn1: 8.007 ms): N images of C channels and width W, a
3-tap filter per channel, one zero column of padding each side. Zero-filled SBUF block tensors
for every (image, channel tile) input and output (256 KiB per partition each, beyond SBUF),
the inputs loaded into columns 1..W; then, per output position, a [128, 3] multiply of the
window by the filter (`nisa.tensor_tensor`) and a `nisa.tensor_reduce` add into the output
column; finally one store per (image, channel tile). Written here from that description.
Inputs img [N, C, W], filt [C, 3]; output [N, C, W].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = "per-position [128, 3] tensor_tensor and tensor_reduce (65,536 of each at full size), zero-filled block tensors of the whole input and output (twice SBUF), loads into a padded block"
SIZES = {"small": dict(N=2, C=256, W=64), "full": dict(N=8, C=512, W=2048)}
TOL = (1e-5, 1e-5)
MEASURED_US = 8007.0      # trn1, measurements.md section 7, Step 0 (p99 of 10)


@nki.jit
def kernel(v1, v2):
    N, C, W = v1.shape
    K = v2.shape[1]
    CT = C // 128
    v3 = nl.ndarray((N, C, W), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.zeros((N, CT, nl.par_dim(128), W + K - 1), dtype=np.float32, name='img_local', buffer=nl.sbuf)
    v5 = nl.zeros((CT, nl.par_dim(128), K), dtype=np.float32, name='filt_local', buffer=nl.sbuf)
    v6 = nl.zeros((N, CT, nl.par_dim(128), W), dtype=np.float32, name='out_local', buffer=nl.sbuf)
    for i0 in nl.affine_range(N):
        for i1 in nl.affine_range(CT):
            v4[i0, i1, nl.arange(128)[:, None], 1 + nl.arange(W)[None, :]] = nl.load(v1[i0, 128 * i1 + nl.arange(128)[:, None], nl.arange(W)[None, :]], dtype=np.float32, mask=None)
            ' end loop i1 '
        ' end loop i0 '
    for i2 in nl.affine_range(CT):
        v5[i2, nl.arange(128)[:, None], nl.arange(K)[None, :]] = nl.load(v2[128 * i2 + nl.arange(128)[:, None], nl.arange(K)[None, :]], dtype=np.float32, mask=None)
        ' end loop i2 '
    for i3 in nl.affine_range(N):
        for i4 in nl.affine_range(CT):
            for i5 in nl.affine_range(W):
                v7 = nisa.tensor_tensor(v4[i3, i4, nl.arange(128)[:, None], i5 + nl.arange(K)[None, :]], v5[i4, nl.arange(128)[:, None], nl.arange(K)[None, :]], op=np.multiply, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
                v6[i3, i4, nl.arange(128)[:, None], i5] = nisa.tensor_reduce(np.add, data=v7, axis=(1,), dtype=np.float32, negate=False, mask=None)
                ' end loop i5 '
            ' end loop i4 '
        ' end loop i3 '
    for i6 in nl.affine_range(N):
        for i7 in nl.affine_range(CT):
            nl.store(v3[i6, 128 * i7 + nl.arange(128)[:, None], nl.arange(W)[None, :]], value=v6[i6, i7, nl.arange(128)[:, None], nl.arange(W)[None, :]], mask=None)
            ' end loop i7 '
        ' end loop i6 '
    return v3


def inputs(p, rng):
    N, C, W = p["N"], p["C"], p["W"]
    img = rng.uniform(0.0, 1.0, size=(N, C, W)).astype(np.float32)
    filt = rng.uniform(0.0, 1.0, size=(C, 3)).astype(np.float32)
    return [img, filt]


def reference(img, filt):
    x = np.pad(img.astype(np.float64), ((0, 0), (0, 0), (1, 1)))
    W = img.shape[2]
    f = filt.astype(np.float64)
    out = sum(x[:, :, j:j + W] * f[None, :, j:j + 1] for j in range(3))
    return out.astype(np.float32)
