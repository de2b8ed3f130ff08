#!/usr/bin/python3
"""DMA streams (measurements.md sections 1 and 2).

--mode curve: N back-to-back DMA loads of a contiguous HBM tensor [128, B bytes] into an SBUF
  tile [128 partitions x B bytes] (the DMA throughput curve, section 1), all on one queue.
--mode loadstore: the perf guide's snippet repeated (fig30): load an fp32 [128, 1024] tile,
  copy it on ScalarE, store it; loads and stores on one queue (the profile shows one IO queue
  set), four tile buffers.
--mode tiny: N DMAs of one fp32 element (fig29's 4-byte transfers) on one queue."""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--mode", choices=["curve", "loadstore", "tiny"], required=True)
ap.add_argument("--bpp", type=int, default=4096, help="bytes per partition (curve)")
ap.add_argument("--n", type=int, default=64, help="number of DMAs (curve, tiny) or tiles")
a = ap.parse_args()
N = a.n
if a.mode == "curve":
    F = max(a.bpp // 4, 1)
    print(f"""; {N} DMA loads of [128, {a.bpp} B] on one queue
.arch trn1
.hbm x fp32 [128, {F}] input
.hbm y fp32 [128, 1] output
.core 0
.sbuf t fp32 [128, 2, {F}]
.sem ld
.engine sp
    .loop i = 0, {N}
        dma t[:, i % 2, :], x, queue=0 | post ld
    .endloop
    dma y, t[:, 0, 0:1], queue=1 | wait ld >= {N}
""")
elif a.mode == "tiny":
    print(f"""; {N} DMAs of 4 bytes on one queue
.arch trn1
.hbm x fp32 [{N}] input
.hbm y fp32 [1] output
.core 0
.sbuf t fp32 [1, {N}]
.sem ld
.engine sp
    .loop i = 0, {N}
        dma t[0:1, i:i+1], x[i:i+1], queue=0 | post ld
    .endloop
    dma y, t[0:1, 0:1], queue=1 | wait ld >= {N}
""")
else:
    NB = 4
    print(f"""; {N} tiles: load [128, 1024] fp32, copy on act, store; one queue
.arch trn1
.hbm x fp32 [{N}, 128, 1024] input
.hbm y fp32 [{N}, 128, 1024] output
.core 0
.sbuf a fp32 [128, {NB}, 1024]
.sbuf b fp32 [128, {NB}, 1024]
.sem ld
.sem cp
.sem st
.engine sp
    .loop t = 0, {N}
        dma a[:, t % {NB}, :], x[t], queue=0 | wait st >= t-{NB}+1 | post ld
        .if t >= 1
            dma y[t-1], b[:, (t-1) % {NB}, :], queue=0 | wait cp >= t | post st
        .endif
    .endloop
    dma y[{N}-1], b[:, ({N}-1) % {NB}, :], queue=0 | wait cp >= {N} | post st
.engine act
    .loop t = 0, {N}
        tensor_copy b[:, t % {NB}, :], a[:, t % {NB}, :] | wait ld >= t+1 | post cp
    .endloop
""")
