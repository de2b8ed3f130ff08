#!/usr/bin/python3
"""The NKI matmul tutorial's four kernels at the benchmarked size (measurements.md section 9):
C [M, N] = lhsT.T @ rhs with lhsT [K, M], rhs [K, N] bf16, M = 4096, K = N = 8192, fp32
accumulation in PSUM, bf16 result.

  --kernel tiled       every [128 k x 128 m] lhsT tile and [128 k x 512 n] rhs tile loaded for
                       each (m, n, k): 32,768 loads of each (256 B and 1 KiB per partition)
  --kernel hoisted     lhsT tiles loaded once per m (2,048 loads), rhs tiles once per (m, n)
  --kernel block_free  output blocks of 2 x 2 tiles: lhsT once per 256 rows, rhs once per
                       (256-row block, 1024-column block): 16,384 rhs loads
  --kernel optimized   blocks M 2048, N 1024, K 1024: rhs [128 x 1024] (2 KiB per partition)
                       once per (n, k), lhsT [128 x 2048] (4 KiB) once per (n, k, m); partial
                       sums of a K block added into an SBUF result block by VectorE

Choices (the tutorial's text leaves them to the compiler): every load on queue 0 triggered by
the Sync engine and every store on queue 0 triggered by GpSimd, as the published profiles of
NKI kernels show (one IO queue, `qSyncIO0`; measurements.md section 9, nki-allocation.md
section 8); PSUM-to-SBUF copies on ScalarE (the AccelOpt profiles show VectorE idle in
matmul kernels); tiles double-buffered where SBUF allows (the tiled kernel's tiles: 4 buffers
each; block_free's lhsT block (32 KiB per partition) and rhs block (128 KiB) only once, each
tile reloaded as soon as the previous block's matmuls have read it).

--lhs-reuse U (tiled only, default 1 = as written) is a study of the compiler-side reading of
the tiled kernel's measured time (docs/validation.md, "nca-matmul-tiled"): the n loop is taken
U tiles at a time, each lhsT tile loaded once for those U and the U products accumulated in U
PSUM banks at once (U <= 4: double-buffered, 2U of the 8 banks). No manifest entry uses it."""
import argparse
from dataflow import Kernel

ap = argparse.ArgumentParser()
ap.add_argument("--kernel", choices=["tiled", "hoisted", "block_free", "optimized"], required=True)
ap.add_argument("--m", type=int, default=4096)
ap.add_argument("--k", type=int, default=8192)
ap.add_argument("--n", type=int, default=8192)
ap.add_argument("--lhs-reuse", type=int, default=1, choices=[1, 2, 4],
                help="tiled: load each lhsT tile once per this many n tiles (a study)")
a = ap.parse_args()
if a.lhs_reuse != 1 and a.kernel != "tiled":
    ap.error("--lhs-reuse applies to --kernel tiled only")
M, K, N = a.m, a.k, a.n
MT, KT, NT = M // 128, K // 128, N // 512

hdr = f"""; NKI matmul tutorial, {a.kernel}: M={M} K={K} N={N} bf16 (measurements.md section 9)
.arch trn1
.hbm lhsT bf16 [{K}, {M}] input
.hbm rhs bf16 [{K}, {N}] input
.hbm res bf16 [{M}, {N}] output
.core 0
"""


def lt(k, m, w=128):
    """lhsT[k-tile, m columns from m*128, w wide]"""
    return f"lhsT[{k * 128}:{(k + 1) * 128}, {m * 128}:{m * 128 + w}]"


def rt(k, n, w=512):
    return f"rhs[{k * 128}:{(k + 1) * 128}, {n * 512}:{n * 512 + w}]"


def out(m, n, w=512):
    return f"res[{m * 128}:{(m + 1) * 128}, {n * 512}:{n * 512 + w}]"


if a.kernel == "tiled":
    NB = 4
    U = a.lhs_reuse
    k = Kernel(hdr + f""".sbuf ls bf16 [128, {NB}, 128]
.sbuf rs bf16 [128, {NB}, 512]
.sbuf cs bf16 [128, 2, 512]
.psum acc fp32 [128, {2 * U}, 512]
""")
    it = 0
    rt_i = 0
    g = 0
    for m in range(MT):
        for n0 in range(0, NT, U):
            us = [(g + j) % (2 * U) for j in range(U)]
            for kt in range(KT):
                b = it % NB
                k.dma(0, f"ls[:, {b}, :]", lt(kt, m), writes=[f"l{b}"])
                for j in range(U):
                    r = rt_i % NB
                    k.dma(0, f"rs[:, {r}, :]", rt(kt, n0 + j), writes=[f"r{r}"])
                    accf = ", acc" if kt else ""
                    k.op("pe", f"matmul acc[:, {us[j]}, :], ls[:, {b}, :], rs[:, {r}, :]{accf}",
                         [f"l{b}", f"r{r}"], [f"p{us[j]}"])
                    rt_i += 1
                it += 1
            for j in range(U):
                u, c = us[j], (g + j) % 2
                k.op("act", f"activate cs[:, {c}, :], acc[:, {u}, :], copy", [f"p{u}"], [f"c{c}"])
                k.dma(0, out(m, n0 + j), f"cs[:, {c}, :]", reads=[f"c{c}"], engine="pool")
            g += U

elif a.kernel == "hoisted":
    k = Kernel(hdr + f""".sbuf ls bf16 [128, 2, {KT}, 128]
.sbuf rs bf16 [128, 2, {KT}, 512]
.sbuf cs bf16 [128, 2, 512]
.psum acc fp32 [128, 2, 512]
""")
    g = 0
    for m in range(MT):
        v = m % 2
        for kt in range(KT):
            k.dma(0, f"ls[:, {v}, {kt}, :]", lt(kt, m), writes=[f"l{v}.{kt}"])
        for n in range(NT):
            u = g % 2
            for kt in range(KT):
                k.dma(0, f"rs[:, {u}, {kt}, :]", rt(kt, n), writes=[f"r{u}.{kt}"])
            for kt in range(KT):
                accf = ", acc" if kt else ""
                k.op("pe", f"matmul acc[:, {u}, :], ls[:, {v}, {kt}, :], rs[:, {u}, {kt}, :]{accf}",
                     [f"l{v}.{kt}", f"r{u}.{kt}"], [f"p{u}"])
            k.op("act", f"activate cs[:, {u}, :], acc[:, {u}, :], copy", [f"p{u}"], [f"c{u}"])
            k.dma(0, out(m, n), f"cs[:, {u}, :]", reads=[f"c{u}"], engine="pool")
            g += 1

elif a.kernel == "block_free":
    BM, BN = 2, 2
    k = Kernel(hdr + f""".sbuf ls bf16 [128, {BM}, {KT}, 128]
.sbuf rs bf16 [128, {BN}, {KT}, 512]
.sbuf cs bf16 [128, 2, 512]
.psum acc fp32 [128, 2, 512]
""")
    g = 0
    for mb in range(MT // BM):
        for bm in range(BM):
            for kt in range(KT):
                k.dma(0, f"ls[:, {bm}, {kt}, :]", lt(kt, mb * BM + bm), writes=[f"l{bm}.{kt}"])
        for nb in range(NT // BN):
            for bn in range(BN):
                for kt in range(KT):
                    k.dma(0, f"rs[:, {bn}, {kt}, :]", rt(kt, nb * BN + bn), writes=[f"r{bn}.{kt}"])
            for bm in range(BM):
                for bn in range(BN):
                    u = g % 2
                    for kt in range(KT):
                        accf = ", acc" if kt else ""
                        k.op("pe", f"matmul acc[:, {u}, :], ls[:, {bm}, {kt}, :], "
                             f"rs[:, {bn}, {kt}, :]{accf}",
                             [f"l{bm}.{kt}", f"r{bn}.{kt}"], [f"p{u}"])
                    k.op("act", f"activate cs[:, {u}, :], acc[:, {u}, :], copy", [f"p{u}"],
                         [f"c{u}"])
                    k.dma(0, out(mb * BM + bm, nb * BN + bn), f"cs[:, {u}, :]", reads=[f"c{u}"],
                          engine="pool")
                    g += 1

else:
    TM, TN, TK = 16, 2, 8                # tiles per block
    NBM, NBN, NBK = MT // TM, NT // TN, KT // TK
    k = Kernel(hdr + f""".sbuf rs bf16 [128, 2, {TK}, {TN * 512}]
.sbuf ls bf16 [128, 2, {TK}, {TM * 128}]
.sbuf ct bf16 [128, {NBM}, {TM}, {TN}, 512]
.sbuf cp bf16 [128, 2, {TN * 512}]
.psum acc fp32 [128, 4, 512]
""")
    g = 0
    lb = 0
    for nb in range(NBN):
        # result_tiles = zeros (VectorE memset of the block row)
        for mb in range(NBM):
            k.op("dve", f"memset ct[:, {mb}, :, :, :], 0.0", [], [f"ct{mb}"])
        for kb in range(NBK):
            w = kb % 2
            for bk in range(TK):
                kt = kb * TK + bk
                k.dma(0, f"rs[:, {w}, {bk}, :]",
                      f"rhs[{kt * 128}:{(kt + 1) * 128}, {nb * TN * 512}:{(nb + 1) * TN * 512}]",
                      writes=[f"r{w}.{bk}"])
            for mb in range(NBM):
                v = lb % 2
                for bk in range(TK):
                    kt = kb * TK + bk
                    k.dma(0, f"ls[:, {v}, {bk}, :]",
                          f"lhsT[{kt * 128}:{(kt + 1) * 128}, {mb * TM * 128}:{(mb + 1) * TM * 128}]",
                          writes=[f"l{v}.{bk}"])
                for bn in range(TN):
                    for bm in range(TM):
                        u = g % 4
                        for bk in range(TK):
                            accf = ", acc" if bk else ""
                            k.op("pe", f"matmul acc[:, {u}, :], ls[:, {v}, {bk}, {bm * 128}:{(bm + 1) * 128}], "
                                 f"rs[:, {w}, {bk}, {bn * 512}:{(bn + 1) * 512}]{accf}",
                                 [f"l{v}.{bk}", f"r{w}.{bk}"], [f"p{u}"])
                        k.op("dve", f"tensor_tensor ct[:, {mb}, {bm}, {bn}, :], ct[:, {mb}, {bm}, {bn}, :], "
                             f"acc[:, {u}, :], add", [f"p{u}", f"ct{mb}"], [f"ct{mb}"])
                        g += 1
                lb += 1
        for mb in range(NBM):
            for bm in range(TM):
                c = (mb * TM + bm) % 2
                for bn in range(TN):
                    k.op("act", f"activate cp[:, {c}, {bn * 512}:{(bn + 1) * 512}], "
                         f"ct[:, {mb}, {bm}, {bn}, :], copy", [f"ct{mb}"], [f"cp{c}"])
                m = mb * TM + bm
                k.dma(0, f"res[{m * 128}:{(m + 1) * 128}, {nb * TN * 512}:{(nb + 1) * TN * 512}]",
                      f"cp[:, {c}, :]", reads=[f"cp{c}"], engine="pool")

print(k.emit())
