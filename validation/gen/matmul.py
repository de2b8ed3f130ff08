#!/usr/bin/python3
"""AccelOpt/NKIBench matmul baseline, C = A @ B with M=4096, N=12288, K=5120 fp32
(measurements.md section 3.1).

For each of 12 column blocks of 1024 and each of 32 row tiles of 128: five 512 KiB loads of A
(8 k-tiles each), 40 TensorE transposes of A blocks [128 m x 128 k] (each copied from PSUM to
SBUF by ScalarE), the B slab of the column block loaded again for every row tile (40 loads of
[128 k x 1024], 512 KiB each: the measured HBM read bytes equal exactly 32 reads of B, because
the 160 KiB slab does not fit beside A and A^T), 80 fp32 matmuls into two PSUM accumulators
(one per 512-column half) copied out by ScalarE, and one 512 KiB store.
Choices: k-tile outer and the two halves inner, so each B k-tile is consumed as soon as it
lands (a ring of 16 B tiles streams the slab) and one LoadStationary of A^T serves both halves;
A double-buffered, A^T double-buffered; A loads and stores on queue 0 (the IO queue), B on queue 1."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--m", type=int, default=4096)
ap.add_argument("--n", type=int, default=12288)
ap.add_argument("--k", type=int, default=5120)
a = ap.parse_args()
M, N, K = a.m, a.n, a.k
MT, NBLK, KT = M // 128, N // 1024, K // 128
NBR = 16  # B ring
hdr = f"""; matmul M={M} N={N} K={K} fp32 (AccelOpt baseline structure)
.arch trn1
.hbm A fp32 [{MT}, 128, {KT}, 128] input
.hbm B fp32 [{KT}, 128, {N}] input
.hbm C fp32 [{MT}, 128, {N}] output
.hbm ident fp32 [128, 128] input
.core 0
.sbuf idn fp32 [128, 128]
.sbuf as fp32 [128, 2, {KT}, 128]
.sbuf at fp32 [128, 2, {KT}, 128]
.sbuf bs fp32 [128, {NBR}, 1024]
.sbuf cs fp32 [128, 2, 1024]
.psum pt fp32 [128, 8, 128]
.psum pc fp32 [128, 2, 2, 512]
"""
k = Kernel(hdr)
k.dma(3, "idn", "ident", writes=["idn"])
nb_ = 0
tr = 0
it = 0
for nb in range(NBLK):
    for mt in range(MT):
        u = it % 2
        for j in range(KT // 8):
            k.dma(0, f"as[:, {u}, {8 * j}:{8 * j + 8}, :]", f"A[{mt}, :, {8 * j}:{8 * j + 8}, :]",
                  writes=[f"as{u}.{j}"])
        for kt in range(KT):
            s = tr % 8
            k.op("pe", f"transpose pt[:, {s}, :], as[:, {u}, {kt}, :]", [f"as{u}.{kt // 8}", "idn"],
                 [f"pt{s}"])
            k.op("act", f"activate at[:, {u}, {kt}, :], pt[:, {s}, :], copy", [f"pt{s}"],
                 [f"at{u}.{kt}"])
            tr += 1
        for kt in range(KT):
            r = nb_ % NBR
            k.dma(1, f"bs[:, {r}, :]", f"B[{kt}, :, {nb * 1024}:{(nb + 1) * 1024}]", writes=[f"b{r}"])
            k.op("pe", f"ldweights at[:, {u}, {kt}, :]", [f"at{u}.{kt}"], [])
            for hh in range(2):
                acc = ", acc" if kt else ""
                k.op("pe", f"matmul pc[:, {u}, {hh}, :], bs[:, {r}, {hh * 512}:{(hh + 1) * 512}]{acc}",
                     [f"b{r}"], [f"pc{u}.{hh}"])
            nb_ += 1
        for hh in range(2):
            k.op("act", f"activate cs[:, {u}, {hh * 512}:{(hh + 1) * 512}], pc[:, {u}, {hh}, :], copy",
                 [f"pc{u}.{hh}"], [f"cs{u}"])
        k.dma(0, f"C[{mt}, :, {nb * 1024}:{(nb + 1) * 1024}]", f"cs[:, {u}, :]", reads=[f"cs{u}"], engine="pool")
        it += 1
print(k.emit())
