#!/usr/bin/python3
"""AccelOpt/NKIBench adamw baseline, M=10944 x N=2048 fp32 (measurements.md section 3.3).

86 row tiles (85 of 128 rows, one of 64) x 2 column halves of 1024: four 512 KiB loads
(theta, m, v, g; 256 KiB in the last row tile), then two [128 x 512] sub-tiles of 15
instructions each, then one store of the half. Engines as the profile implies: the seven
tensor_scalar ops, the sqrt and the reciprocal on ScalarE, the six tensor_tensor ops on VectorE.
ScalarE is 62% active = 5,010 ScalarE cycles per [128 x 512] sub-tile: nine instructions of
~N + 45 cycles, the per-instruction cost its PSUM copies show in the matmul and bmm profiles;
with the reciprocal on VectorE it would be eight of ~N + 115, and VectorE's 90% would leave
its six tensor_tensor ~1.2 N each, far from the published 2N (--recip dve for that port).
The reciprocal is the compiler's choice: the doc of the SDK 2.21 era allowed ScalarE or VectorE.
Loads on queues 0-3 (one per tensor), stores on queue 0 with the first input's loads (the rule of every kernel here: the compiler's IO queue carries the first input and the output), loads issued by sp (the Sync engine), stores by GpSimd (its ~0.6-2.6% activity in the profiles is ~65 ns per store trigger); inputs double-buffered
(two halves in flight), temporaries per sub-tile double-buffered."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--m", type=int, default=10944)
ap.add_argument("--n", type=int, default=2048)
ap.add_argument("--recip", choices=("act", "dve"), default="act",
                help="engine of the reciprocal (13): act (activate ..., reciprocal) or dve")
a = ap.parse_args()
M, N = a.m, a.n
NB = 2
hdr = f"""; adamw M={M} N={N} fp32 (AccelOpt baseline structure)
.arch trn1
.hbm theta fp32 [{M}, {N}] input
.hbm m fp32 [{M}, {N}] input
.hbm v fp32 [{M}, {N}] input
.hbm g fp32 [{M}, {N}] input
.hbm out fp32 [{M}, {N}] output
.core 0
.sbuf ith fp32 [128, {NB}, 1024]
.sbuf im fp32 [128, {NB}, 1024]
.sbuf iv fp32 [128, {NB}, 1024]
.sbuf ig fp32 [128, {NB}, 1024]
.sbuf ob fp32 [128, {NB}, 1024]
.sbuf tmp fp32 [128, 3, 12, 512]
.sbuf zero fp32 [128, 1]
"""
k = Kernel(hdr)
k.op("dve", "memset zero, 0.0", writes=["zero"])
subs = []       # (buffer, half, partitions, sub-tile index)
done = []
stores = []
stored = 0


def T(u, p, i):
    return f"tmp[{p}, {u}, {i}, :]"


def stage_a(b, j, p, s):
    """ScalarE's scalings of the inputs (no dependence on VectorE), then VectorE's first part."""
    u = s % 3
    x = lambda sb: f"{sb}[{p}, {b}, {j * 512}:{(j + 1) * 512}]"
    tk = lambda i: f"t{u}.{i}"
    th, mm, vv, gg = f"ith{b}", f"im{b}", f"iv{b}", f"ig{b}"
    k.op("act", f"tensor_scalar {T(u, p, 1)}, {x('ith')}, multiply, 1e-5", [th], [tk(1)])
    k.op("act", f"tensor_scalar {T(u, p, 3)}, {x('im')}, multiply, 0.9", [mm], [tk(3)])
    k.op("act", f"tensor_scalar {T(u, p, 4)}, {x('ig')}, multiply, 0.1", [gg], [tk(4)])
    k.op("act", f"tensor_scalar {T(u, p, 7)}, {x('iv')}, multiply, 0.999", [vv], [tk(7)])
    k.op("act", f"tensor_scalar {T(u, p, 8)}, {x('ig')}, multiply, 0.001", [gg], [tk(8)])
    k.op("dve", f"tensor_tensor {T(u, p, 2)}, {x('ith')}, {T(u, p, 1)}, subtract", [th, tk(1)], [tk(2)])
    k.op("dve", f"tensor_tensor {T(u, p, 5)}, {T(u, p, 3)}, {T(u, p, 4)}, add", [tk(3), tk(4)], [tk(5)])
    k.op("dve", f"tensor_tensor {T(u, p, 9)}, {T(u, p, 8)}, {x('ig')}, multiply", [tk(8), gg], [tk(9)])
    k.op("dve", f"tensor_tensor {T(u, p, 10)}, {T(u, p, 7)}, {T(u, p, 9)}, add", [tk(7), tk(9)], [tk(10)])


def stage_b(b, j, p, s):
    """The dependent tail: m_t scaling, sqrt, + eps on ScalarE; reciprocal, products on VectorE."""
    u = s % 3
    tk = lambda i: f"t{u}.{i}"
    k.op("act", f"tensor_scalar {T(u, p, 6)}, {T(u, p, 5)}, multiply, 0.01", [tk(5)], [tk(6)])
    k.op("act", f"activate {T(u, p, 11)}, {T(u, p, 10)}, sqrt, scale=1000.0, bias=zero[{p}, :]",
         [tk(10), "zero"], [tk(11)])
    k.op("act", f"tensor_scalar {T(u, p, 0)}, {T(u, p, 11)}, add, 1e-8", [tk(11)], [tk(0)])
    if a.recip == "act":
        k.op("act", f"activate {T(u, p, 11)}, {T(u, p, 0)}, reciprocal", [tk(0)], [tk(11)])
    else:
        k.op("dve", f"reciprocal {T(u, p, 11)}, {T(u, p, 0)}", [tk(0)], [tk(11)])
    k.op("dve", f"tensor_tensor {T(u, p, 4)}, {T(u, p, 6)}, {T(u, p, 11)}, multiply", [tk(6), tk(11)], [tk(4)])
    k.op("dve", f"tensor_tensor ob[{p}, {b}, {j * 512}:{(j + 1) * 512}], {T(u, p, 2)}, {T(u, p, 4)}, subtract",
         [tk(2), tk(4)], [f"ob{b}", f"out{s}"])


def flush_stores(final=False):
    """Store a column half once both its sub-tiles have run stage b."""
    global stored
    while stored < len(stores):
        r0, P, cols, b = stores[stored]
        last_sub = 2 * stored + 1
        if not final and last_sub > len(subs) - 2:
            break
        k.dma(0, f"out[{r0}:{r0 + P}, {cols}]", f"ob[0:{P}, {b}, :]", reads=[f"ob{b}", f"out{last_sub}"], engine="pool")
        stored += 1


h = 0
s = 0
for r0 in range(0, M, 128):
    P = min(128, M - r0)
    p = f"0:{P}"
    for c in range(N // 1024):
        b = h % NB
        cols = f"{c * 1024}:{(c + 1) * 1024}"
        for q, (t, sb) in enumerate([("theta", "ith"), ("m", "im"), ("v", "iv"), ("g", "ig")]):
            k.dma(q, f"{sb}[{p}, {b}, :]", f"{t}[{r0}:{r0 + P}, {cols}]", writes=[f"{sb}{b}"])
        for j in range(2):
            subs.append((b, j, p, s))
            s += 1
        # software pipeline: ScalarE's independent scalings of this sub-tile go ahead of the
        # dependent tail of the previous one (a compiler's list scheduler does the same)
        for (sb_, j, p_, s_) in subs[-2:]:
            stage_a(sb_, j, p_, s_)
            if s_ >= 1:
                stage_b(*subs[s_ - 1])
        done.append(h)
        stores.append((r0, P, cols, b))
        h += 1
        flush_stores()
stage_b(*subs[-1])
flush_stores(final=True)
print(k.emit())
