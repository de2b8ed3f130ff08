#!/usr/bin/python3
"""AccelOpt/NKIBench bmm baseline, C[b] = A[b] @ B[b] with B=16, M=4096, K=64, N=4096 fp32
(measurements.md section 3.2).

Per batch: the A side hoisted out of the n-block loop, as the measured bytes and transpose
FLOPs show (512 A loads and transposes, not 2048): 32 loads of A[b] rows [128 x 64] (256 B
per partition, 32 KiB contiguous), TensorE transposes to PSUM [64 x 128], copied by ScalarE
into A^T [64 x 4096]. Then for each of 4 n-blocks: one B load [64 x 1024] (4 KiB per
partition, 256 KiB), and for each of 32 m-tiles two fp32 matmuls (contraction 64) into PSUM
[128 x 512], copied by ScalarE, and one 512 KiB store.
The compiler's spills (12.6 MB saved, 33.8 MB reloaded) are modelled as 3 saves of a
[64 x 1024] A^T block per batch after the transposes and 8 reloads per batch before the
n-blocks 1..3 (3, 3, 2), 256 KiB each: the measured byte counts within 1%.
Choices: A loads and stores on queue 0 (the IO queue), B loads and spill traffic on queue 1; copies
double-buffered, PSUM accumulators in 4 banks."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--b", type=int, default=16)
a = ap.parse_args()
NBAT, M, K, N = a.b, 4096, 64, 4096
MT = M // 128
hdr = f"""; bmm B={NBAT} M={M} K={K} N={N} fp32 (AccelOpt baseline structure)
.arch trn1
.hbm A fp32 [{NBAT}, {MT}, 128, {K}] input
.hbm B fp32 [{NBAT}, {K}, {N}] input
.hbm C fp32 [{NBAT}, {MT}, 128, {N}] output
.hbm ident fp32 [128, 128] input
.hbm spill fp32 [{NBAT}, 3, {K}, 1024] scratch
.core 0
.sbuf idn fp32 [128, 128]
.sbuf as fp32 [128, 4, {K}]
.sbuf at fp32 [{K}, 2, {M}]
.sbuf bs fp32 [{K}, 2, 1024]
.sbuf cs fp32 [128, 4, 1024]
.psum pt fp32 [{K}, 4, 128]
.psum pc fp32 [128, 4, 512]
"""
k = Kernel(hdr)
k.dma(3, "idn", "ident", writes=["idn"])
ta = 0
mm = 0
st = 0
nbk = 0
for b in range(NBAT):
    v = b % 2
    for j in range(MT):
        u = ta % 4
        k.dma(0, f"as[:, {u}, :]", f"A[{b}, {j}, :, :]", writes=[f"as{u}"])
        k.op("pe", f"transpose pt[:, {u}, :], as[:, {u}, :]", [f"as{u}", "idn"], [f"pt{u}"])
        k.op("act", f"activate at[:, {v}, {j * 128}:{(j + 1) * 128}], pt[:, {u}, :], copy",
             [f"pt{u}"], [f"at{v}.{j // 8}"])
        ta += 1
    for s in range(3):  # spill saves of three A^T blocks
        k.dma(1, f"spill[{b}, {s}, :, :]", f"at[:, {v}, {s * 1024}:{(s + 1) * 1024}]",
              reads=[f"at{v}.{s}"], writes=[f"sp{b}.{s}"])
    for nb in range(N // 1024):
        w = nbk % 2
        k.dma(1, f"bs[:, {w}, :]", f"B[{b}, :, {nb * 1024}:{(nb + 1) * 1024}]", writes=[f"bs{w}"])
        if nb >= 1:
            for s in range(3 if nb < 3 else 2):  # reloads
                k.dma(1, f"at[:, {v}, {s * 1024}:{(s + 1) * 1024}]", f"spill[{b}, {s}, :, :]",
                      reads=[f"sp{b}.{s}"], writes=[f"at{v}.{s}"])
        for j in range(MT):
            c = st % 4
            k.op("pe", f"ldweights at[:, {v}, {j * 128}:{(j + 1) * 128}]", [f"at{v}.{j // 8}"], [])
            for hh in range(2):
                p = mm % 4
                k.op("pe", f"matmul pc[:, {p}, :], bs[:, {w}, {hh * 512}:{(hh + 1) * 512}]",
                     [f"bs{w}"], [f"pc{p}"])
                k.op("act", f"activate cs[:, {c}, {hh * 512}:{(hh + 1) * 512}], pc[:, {p}, :], copy",
                     [f"pc{p}"], [f"cs{c}"])
                mm += 1
            k.dma(0, f"C[{b}, {j}, :, {nb * 1024}:{(nb + 1) * 1024}]", f"cs[:, {c}, :]",
                  reads=[f"cs{c}"], engine="pool")
            st += 1
        nbk += 1
print(k.emit())
