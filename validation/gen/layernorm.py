#!/usr/bin/python3
"""NKI LayerNorm tutorial, v1 (nki.language) and v2 (nki.isa), 4096 x 8192 fp32
(measurements.md section 4).

32 row tiles of [128 x 8192] (32 KiB per partition): one 4 MiB load, the per-tile operations
of the version, one 4 MiB store. gamma and beta are broadcast to all partitions once (one
DMA each, 2 x 4 MiB, about 1% of the run; the tutorial does not say how the compiler
broadcasts them). Every tile value of the source is single-buffered at a fixed address, as a
compiler must when 32 KiB tiles fill the 192 KiB partition (x, two working tiles, gamma,
beta); the dependencies between iterations then follow from the reuse of those buffers.
v1: mean (VectorE reduce + scale), square (ScalarE), mean of squares (VectorE), var and
rsqrt([P,1] ops), x - mean, * rstd (VectorE tensor_scalar), * gamma, + beta (VectorE
tensor_tensor). v2: 16 bn_stats of 512 columns, bn_aggr, rsqrt, one tensor_scalar
(x - mean) * rstd, * gamma, + beta. Loads and stores on queue 0 (the IO queue)."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--version", type=int, choices=[1, 2], required=True)
ap.add_argument("--rows", type=int, default=4096)
ap.add_argument("--cols", type=int, default=8192)
a = ap.parse_args()
R, D = a.rows, a.cols
hdr = f"""; LayerNorm v{a.version} {R} x {D} fp32 (NKI tutorial structure)
.arch trn1
.hbm x fp32 [{R}, {D}] input
.hbm y fp32 [{R}, {D}] output
.hbm gamma fp32 [128, {D}] input
.hbm beta fp32 [128, {D}] input
.core 0
.sbuf xs fp32 [128, {D}]
.sbuf ta fp32 [128, {D}]
.sbuf tb fp32 [128, {D}]
.sbuf gs fp32 [128, {D}]
.sbuf bs fp32 [128, {D}]
.sbuf st fp32 [128, {3 * (D // 512)}]
.sbuf sm fp32 [128, 8]
"""
k = Kernel(hdr)
k.dma(2, "gs", "gamma", writes=["g"])
k.dma(3, "bs", "beta", writes=["b"])
if a.version == 2:
    k.op("dve", "memset sm[:, 7:8], 1e-5", writes=["eps"])  # the eps bias column, once
for t in range(R // 128):
    rows = f"{t * 128}:{(t + 1) * 128}"
    k.dma(0, "xs", f"x[{rows}, :]", writes=["x"])
    if a.version == 1:
        k.op("dve", "tensor_reduce sm[:, 0:1], xs, add, axes=1", ["x"], ["sum"])
        k.op("act", "activate ta, xs, square", ["x"], ["A"])
        k.op("dve", f"tensor_scalar sm[:, 1:2], sm[:, 0:1], multiply, {1.0 / D}", ["sum"], ["mean"])
        k.op("dve", "tensor_reduce sm[:, 2:3], ta, add, axes=1", ["A"], ["sumsq"])
        k.op("dve", f"tensor_scalar sm[:, 3:4], sm[:, 2:3], multiply, {1.0 / D}", ["sumsq"], ["msq"])
        k.op("dve", "tensor_tensor sm[:, 4:5], sm[:, 1:2], sm[:, 1:2], multiply", ["mean"], ["m2"])
        k.op("dve", "tensor_tensor sm[:, 5:6], sm[:, 3:4], sm[:, 4:5], subtract", ["msq", "m2"], ["var"])
        k.op("dve", "tensor_scalar sm[:, 6:7], sm[:, 5:6], add, 1e-5", ["var"], ["ve"])
        k.op("act", "activate sm[:, 7:8], sm[:, 6:7], rsqrt", ["ve"], ["rstd"])
        k.op("dve", "tensor_scalar tb, xs, subtract, sm[:, 1:2]", ["x", "mean"], ["B"])
        k.op("dve", "tensor_scalar ta, tb, multiply, sm[:, 7:8]", ["B", "rstd"], ["A"])
        k.op("dve", "tensor_tensor tb, ta, gs, multiply", ["A", "g"], ["B"])
        k.op("dve", "tensor_tensor ta, tb, bs, add", ["B", "b"], ["A"])
    else:
        for c in range(D // 512):
            k.op("dve", f"bn_stats st[:, {3 * c}:{3 * c + 3}], xs[:, {c * 512}:{(c + 1) * 512}]",
                 ["x"], ["st"])
        k.op("dve", "bn_aggr sm[:, 0:2], st", ["st"], ["mv"])
        k.op("act", "activate sm[:, 2:3], sm[:, 1:2], rsqrt, bias=sm[:, 7:8]", ["mv", "eps"], ["rstd"])
        k.op("dve", "tensor_scalar ta, xs, subtract, sm[:, 0:1], multiply, sm[:, 2:3]",
             ["x", "mv", "rstd"], ["A"])
        k.op("dve", "tensor_tensor tb, ta, gs, multiply", ["A", "g"], ["B"])
        k.op("dve", "tensor_tensor ta, tb, bs, add", ["B", "b"], ["A"])
    k.dma(0, f"y[{rows}, :]", "ta", reads=["A"], engine="pool")
print(k.emit())
