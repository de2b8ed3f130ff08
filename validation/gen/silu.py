#!/usr/bin/python3
"""AccelOpt/NKIBench silu baseline, M=4096 x N=7168 fp32 (measurements.md section 3.4).

x viewed as [128][32][7168] (row = p*32 + i). For each of 32 row groups and 7 column blocks of
1024: one 512 KiB load (4 KiB per partition, partition stride 896 KiB), two [128 x 512]
sub-tiles of exp(-x) (ScalarE, scale -1 and a zero bias column), + 1, reciprocal, x * r, and
one store. Engines as the profile implies: ScalarE 31% active (two instructions per sub-tile,
so the + 1 is on ScalarE), VectorE 74% (reciprocal and the product). Loads and stores
on queue 0 (the IO queue), loads issued by sp (the Sync engine), stores by GpSimd (its ~0.6-2.6% activity in the profiles is ~65 ns per store trigger); the block double-buffered, temporaries triple-buffered so ScalarE
runs ahead of VectorE."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--m", type=int, default=4096)
ap.add_argument("--n", type=int, default=7168)
ap.add_argument("--temps", type=int, default=3, help="temporary buffers")
a = ap.parse_args()
M, N = a.m, a.n
G = M // 128
NB = 2
hdr = f"""; silu M={M} N={N} fp32 (AccelOpt baseline structure)
.arch trn1
.hbm x fp32 [128, {G}, {N}] input
.hbm y fp32 [128, {G}, {N}] output
.core 0
.sbuf xb fp32 [128, {NB}, 1024]
.sbuf yb fp32 [128, {NB}, 1024]
.sbuf tmp fp32 [128, 3, 2, 512]
.sbuf zero fp32 [128, 1]
"""
k = Kernel(hdr)
k.op("dve", "memset zero, 0.0", writes=["zero"])
subs = []


def stage_a(b, j, s):
    u = s % a.temps
    xs = f"xb[:, {b}, {j * 512}:{(j + 1) * 512}]"
    k.op("act", f"activate tmp[:, {u}, 0, :], {xs}, exp, scale=-1.0, bias=zero",
         [f"xb{b}", "zero"], [f"e{u}"])
    k.op("act", f"tensor_scalar tmp[:, {u}, 0, :], tmp[:, {u}, 0, :], add, 1.0", [f"e{u}"], [f"e{u}"])


def stage_b(b, j, s):
    u = s % a.temps
    xs = f"xb[:, {b}, {j * 512}:{(j + 1) * 512}]"
    k.op("dve", f"reciprocal tmp[:, {u}, 1, :], tmp[:, {u}, 0, :]", [f"e{u}"], [f"r{u}"])
    k.op("dve", f"tensor_tensor yb[:, {b}, {j * 512}:{(j + 1) * 512}], {xs}, tmp[:, {u}, 1, :], multiply",
         [f"xb{b}", f"r{u}"], [f"yb{b}"])


h = 0
pending = []
for i in range(G):
    for c in range(N // 1024):
        b = h % NB
        cols = f"{c * 1024}:{(c + 1) * 1024}"
        k.dma(0, f"xb[:, {b}, :]", f"x[:, {i}, {cols}]", writes=[f"xb{b}"])
        for j in range(2):
            s = len(subs)
            subs.append((b, j, s))
            stage_a(b, j, s)
            if s >= 1:
                stage_b(*subs[s - 1])
            if s >= 1 and subs[s - 1][1] == 1:
                pi, pc, pb = pending.pop(0)
                k.dma(0, f"y[:, {pi}, {pc}]", f"yb[:, {pb}, :]", reads=[f"yb{pb}"], engine="pool")
        pending.append((i, cols, b))
        h += 1
stage_b(*subs[-1])
pi, pc, pb = pending.pop(0)
k.dma(0, f"y[:, {pi}, {pc}]", f"yb[:, {pb}, :]", reads=[f"yb{pb}"], engine="pool")
print(k.emit())
