#!/usr/bin/python3
"""ScalarE chain of dependent 1-element activations (measurements.md section 6, fig16).

h[:, t+1] = identity(h[:, t] * a[:, t] + b[:, t]) on 128 partitions, K times: each instruction
reads the previous one's output (read-after-write on ScalarE), with a per-partition scale and
bias vector, as in the naive Mamba prefix scan of the perf guide."""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--k", type=int, default=256)
args = ap.parse_args()
K = args.k
print(f"""; act_chain: {K} dependent ScalarE activations of one element per partition
.arch trn1
.hbm a fp32 [128, {K}] input
.hbm b fp32 [128, {K}] input
.hbm h0 fp32 [128, 1] input
.hbm out fp32 [128, 1] output
.core 0
.sbuf as fp32 [128, {K}]
.sbuf bs fp32 [128, {K}]
.sbuf h fp32 [128, {K + 1}]
.sem ld
.sem chain                 ; ScalarE's own completion count (fig16's S[4])
.engine sp
    dma as, a, queue=0 | post ld
    dma bs, b, queue=1 | post ld
    dma h[:, 0:1], h0, queue=2 | post ld
    dma out, h[:, {K}:{K + 1}], queue=0 | wait chain >= {K}
.engine act
    .loop t = 0, {K}
        activate h[:, t+1:t+2], h[:, t:t+1], identity, scale=as[:, t:t+1], bias=bs[:, t:t+1] | wait ld >= 3 | wait chain >= t | post chain
    .endloop
""")
