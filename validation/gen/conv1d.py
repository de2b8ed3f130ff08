#!/usr/bin/python3
"""Depthwise conv1d, N=8, C=512, W=2048, filter width 3, fp32 (measurements.md section 7),
the Autocomp Step-5 kernel (--step 5) or Step 6 (--step 6).

For each of 4 channel tiles: memset and load the filter [128 x 3], memset a PSUM [128 x 3]
and copy the filter into it (VectorE). For each of 8 images: memset the image tile
[128 x 2050], load the image [128 x 2048] (1 MiB) into columns 1..2048, memset the output tile
[128 x 2048], then the products and sums, then one 1 MiB store.
Step 5: 2048 VectorE tensor_tensor multiplies of a [128 x 3] window by the PSUM filter, and
one tensor_reduce add per 4 positions (the profile counts 16,384 reduces: the compiler fused
4 positions into one [128 x 4 x 3] reduce). Step 6: the same over 16 blocks of 128 positions,
one tensor_tensor and one tensor_reduce per block (the profile's 512 of each).
Choices: memsets and the filter copy on VectorE (the compiler's choice), loads and stores on
queue 0 (the IO queue); tiles single-buffered as in the kernel source."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--step", type=int, choices=[5, 6], default=5)
ap.add_argument("--images", type=int, default=8)
a = ap.parse_args()
NI, CT, W = a.images, 4, 2048
IMG_END = 64 + 4 * (W + 2 + 14)  # img at byte 64 of each partition, 64-byte aligned end
hdr = f"""; depthwise conv1d step {a.step}: N={NI} C=512 W={W} K=3 fp32 (Autocomp structure)
.arch trn1
.hbm x fp32 [{NI}, 512, {W}] input
.hbm f fp32 [512, 3] input
.hbm y fp32 [{NI}, 512, {W}] output
.core 0
.sbuf fs fp32 [128, 3] +0
.psum fp fp32 [128, 3] +0
.sbuf img fp32 [128, {W + 2}] +64
.sbuf o fp32 [128, {W}] +{IMG_END}
.sbuf prod fp32 [128, 2, 128, 3] +{IMG_END + 4 * W}
"""
k = Kernel(hdr)
t = 0
for ct in range(CT):
    ch = f"{ct * 128}:{(ct + 1) * 128}"
    k.op("dve", "memset fs, 0.0", [], ["fs"])
    k.dma(2, "fs", f"f[{ch}, :]", writes=["fs"])
    k.op("dve", "memset fp, 0.0", [], ["fp"])
    k.op("dve", "tensor_copy fp, fs", ["fs"], ["fp"])
    for n in range(NI):
        k.op("dve", "memset img, 0.0", [], ["img"])
        k.dma(0, f"img[:, 1:{W + 1}]", f"x[{n}, {ch}, :]", writes=["img"])
        k.op("dve", "memset o, 0.0", [], ["o"])
        if a.step == 5:
            for g in range(W // 4):
                u = t % 2
                for i in range(4):
                    pos = 4 * g + i
                    k.op("dve", f"tensor_tensor prod[:, {u}, {i}, :], img[:, {pos}:{pos + 3}], fp, multiply",
                         ["img", "fp"], [f"pr{u}"])
                k.op("dve", f"tensor_reduce o[:, {4 * g}:{4 * g + 4}], prod[:, {u}, 0:4, :], add, axes=1",
                     [f"pr{u}"], ["o"])
                t += 1
        else:
            for g in range(W // 128):
                u = t % 2
                # overlapping windows: 128 positions x 3 taps, both stride 1 (a raw view)
                win = f"sb:fp32@0:128+{64 + 4 * g * 128}[1x128, 1x3]"
                filt = "ps:fp32@0:128+0[0x128, 1x3]"  # the filter repeated for every position
                k.op("dve", f"tensor_tensor prod[:, {u}, :, :], {win}, {filt}, multiply",
                     ["img", "fp"], [f"pr{u}"])
                k.op("dve", f"tensor_reduce o[:, {g * 128}:{(g + 1) * 128}], prod[:, {u}, :, :], add, axes=1",
                     [f"pr{u}"], ["o"])
                t += 1
        k.dma(0, f"y[{n}, {ch}, :]", "o", reads=["o"], engine="pool")
print(k.emit())
