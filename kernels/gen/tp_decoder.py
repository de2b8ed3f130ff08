#!/usr/bin/python3
r"""Generate tp_decoder_layer: one transformer decoder layer (Llama style, prefill), split
tensor-parallel (Megatron) over NC NeuronCores: 2 (one chip), 8 (4 chips) or 16 (8 chips).

    /usr/bin/python3 kernels/gen/tp_decoder.py --cores 16 [H=4096 S=2048 F=14336] -o tp16.nca
    build/ncsim run tp16.nca --arch trn1-32xl --timing-only --random-inputs 1 --stats s.json

Why a generator and not a `.let`-sized .nca: a core reaches only its own chip's HBM, and HBM
tensors are global names placed on one chip, so every chip needs its own copies of the
inputs, weights shards, scratch and output, under its own names (`xT_c0`, `xT_c1`, ...). The
program body is the same on every core; this script writes it once per chip (`.core 2c..2c+1`,
`li = core % 2` selects the core's shard) with that chip's names. The body is a statically
scheduled software pipeline whose semaphore counts this script derives (see "Scheduling").

Layer (x is the residual stream, fp32):
    h = x + Wo-proj(attention(rmsnorm(x) * g1))          # attention block
    y = h + Wd-proj(silu(xn2 Wg) * (xn2 Wu)),  xn2 = rmsnorm(h) * g2
Attention: NH = H/128 heads of 128, causal softmax(q k^T / sqrt(128)) v, no rotary embedding.
rmsnorm(v) = v / sqrt(mean(v^2) + 1e-6).

Tensor parallelism (Megatron): core r of the group owns heads r*HPC .. (r+1)*HPC-1 (HPC = NH/NC)
and MLP columns r*FPC .. (r+1)*FPC-1 (FPC = F/NC). QKV and gate/up projections are
column-parallel (each core computes its heads / its hidden columns for every token), attention
runs per head on its core, the output projection Wo and the down projection Wd are row-parallel:
each core produces a partial [H, tokens] sum, and `all_reduce` (ring, over the `tp` group) adds
the partials of all cores. The residual stream and both RMSNorms are replicated on every core.

Layout. Activations are feature-major (xT [H, S]: features on partitions, tokens in the free
dim), so every GEMM contracts over partitions without transposes. The hidden dimension is
*grouped* in SBUF: tile kt of a [H, w] block holds rows h = KH*p + kt in partition p (one DMA
`x[kt:H:KH, ...]` per tile; weights [H, 128] -> [128, KH, 128] in one contiguous DMA). Token
blocks are TB = 512 tokens (one PSUM bank of fp32). All GEMM inputs are bf16, accumulation is
fp32 in PSUM.

Per core and token block b (4 blocks at S = 2048):
  norm1     x tiles (fp32) -> act: x^2 (bf16) and dve: xg = x * g1 (bf16, grouped tiles);
            pe: sum over h of x^2 as ones[128,128]^T . x^2 (accumulated over the KH tiles: the
            column sums land broadcast on all 128 partitions); dve: rstd = (ss/H + eps)^-0.5.
            rstd is applied *after* the projections (they are linear in each token): the
            epilogue that takes the GEMM out of PSUM multiplies by rstd, so xn is never
            materialised and the GEMMs start before the statistics are complete.
  QKV       per local head: qT, kT [128, TB] = W^T . xg (stationary W tile, moving xg, N=512),
            v [tokens, 128] token-major (stationary xg tile, moving W tile; epilogue scales by
            the per-partition rstd column, which a pe transpose of the rstd row provides).
            q stays in SBUF; k and v go to an HBM scratch (k cache) and come back for attention.
  attention per (head, 128-query tile), keys 0 .. end of the tile, two passes with the exact
            max: pass 1 S = q k^T [128q, 512k] blocks (+ causal mask on the diagonal tile by an
            accumulating identity matmul) and the row max; pass 2 S^T [128k, 128q] tiles minus
            the max (a rank-1 matmul with the bf16 max row), P^T = exp(scale * .) straight out
            of PSUM (act), and [O | l] += P . [v | 1] accumulated in one PSUM group over all
            keys (no rescaling: the max is final); o = O / l, transposed by pe into oT.
  Wo        partial[H rows, TB] = Wo_local^T . oT (output tiles of 128 rows), bf16 -> HBM,
            then all_reduce(partial) over the tp group (one collective per token block, so the
            communication of block b overlaps the compute of block b+1).
  norm2     h = x + all_reduced partial is built in the norm's input tile by two DMAs on one
            queue (x, then the partial with `accumulate`: the DMA engines add, in fp32); then
            as norm1 with g2. h is never stored.
  MLP       per local 128-column tile f: gate and up [128 f, TB]; a = silu(gate*rstd) *
            (up*rstd) (bf16, stays in SBUF); then Wd partial [H, TB] = Wd_local^T . a ->
            all_reduce.
  residual  y = x + attention partial + MLP partial (both all_reduced; the same fp32 additions
            as h + MLP) by DMAs: load x, accumulate the two partials, store; core li of each
            chip writes half of the rows, in chunks of 256 rows on four queues.
The attention block runs over all token blocks, then the MLP block: the all_reduce of each
block hides behind the compute of the next, and the last attention all_reduce behind the first
MLP blocks; only the last MLP all_reduce and the residual after it are exposed.

HBM tensors of chip c (global core k = 2c + li, li = 0, 1):
    xT_c   fp32 [H, S]    input, the layer input transposed (the same on every chip)
    g1_c, g2_c fp32 [H]   input, RMSNorm weights
    wqkv_c bf16 [2, HPC, 3, H, 128]   wqkv_c[li, j, m] = W_m[:, cols of global head k*HPC+j]
                                      (m = 0, 1, 2: Wq, Wk, Wv; q = xn Wq)
    wo_c   bf16 [2, KH, 128, HPC, 128]  wo_c[li, kt, d, j, n] = Wo[(k*HPC+j)*128+d, kt*128+n]
    wgu_c  bf16 [2, FT, 2, H, 128]    wgu_c[li, j, m] = (Wg, Wu)[:, k*FPC + j*128 ...+128]
    wd_c   bf16 [2, KH, 128, FT, 128] wd_c[li, kt, p, j, n] = Wd[k*FPC + j*128 + p, kt*128 + n]
    yT_c   fp32 [H, S]    output (every chip holds the whole result)
    kT_c, vv_c, p1_c, p2_c            scratch (k and [v | 1] caches, partial sums, reduced in place)
The weight layouts are the kernel's: each DMA of a weight tile reads one contiguous run per
partition. kernels/tp_decoder_ref.py packs plain matrices into them.

Scheduling. The script walks the whole layer once in a global order in which every consumer
comes after its producers and every buffer reuse after the last use of the previous contents,
appending each instruction to its engine's stream with waits on the counts of semaphores that
the producers post. Because every wait refers to an earlier point of that global order, the
program cannot deadlock. Loads are "pumped": a DMA is emitted as early as the ring slot it
fills is released (maximum prefetch). Waits implied by an engine's own program order are
dropped; semaphores nobody waits on are not posted. A queue's transfers move one after another,
which orders the two DMAs that build h and the four of each residual chunk without semaphores.
Engines: sp issues the loads (weights, norm inputs, k/v caches); pe the matmuls and transposes;
act the squares, the v epilogue, exp, silu and the oT copies; dve the other PSUM epilogues, row
max and normalisations; pool the stores and the residual DMAs; cc the all_reduces. An engine
that waits for an all_reduce (sp for norm2's inputs, pool for the residual) delays only work the
collective chain is waiting for anyway.
The norm of block b+1 is interleaved with the GEMMs of block b: with one buffer of normalised
activations behind the output projection (one norm tile per output tile), when it has at least
three matmuls per output tile (HPC, FT >= 3); otherwise double-buffered, behind the
column-parallel projections. W tiles (8 slots), norm inputs (12) and the Wo/Wd chunks are then
ring buffers as deep as SBUF allows. Attention and MLP buffers share SBUF (the MLP's first
writes wait for the last output projection of the attention block).

Sizes: H a multiple of 512 with NH = H/128 a multiple of NC; S a multiple of TB (TB = 512 by
default, or 256/128); F a multiple of 128*NC; SBUF permitting (the header of the output states
the budget). NC even (whole chips): 2 on trn1, 8 and 16 on trn1-32xl (the group is a ring
through the chips, in snake order over the rows of the 4x4 torus, so that every hop is one
link). Full size (the defaults): H = 4096 (32 heads), S = 2048, F = 14336 (Llama-3-8B's MLP).
"""
import argparse
import math
import os
import sys


def _load_builder():
    """python/ncsim/builder.py on its own: it needs nothing else of the package (so no libncsim)."""
    import importlib.util
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python", "ncsim",
                        "builder.py")
    spec = importlib.util.spec_from_file_location("ncsim_builder", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


_b = _load_builder()
ENGINES, Emitter, Pump, Ring = _b.ENGINES, _b.EventEmitter, _b.Pump, _b.Ring

SCALE = 1.0 / math.sqrt(128.0)
EPS = 1e-6
SBUF_BYTES = 196608

# DMA queues (each semaphore is posted by one queue, so that its counts are in FIFO order)
Q_X, Q_W, Q_WO, Q_K, Q_V, Q_G = 0, 1, 2, 3, 4, 5          # loads issued by sp
Q_KST, Q_VST, Q_PST, Q_Y = 6, 7, 8, 11                       # issued by pool (Y: 11-14)
Q_N2 = 9                                                        # sp, norm2 inputs (9, 10)


def ring_order(nc):
    """Core ids of the tp group in ring order: chips in a snake over the rows of a 4-wide torus
    (0 1 2 3 7 6 5 4 ...), both cores of a chip next to each other."""
    chips = nc // 2
    order = []
    for r in range((chips + 3) // 4):
        row = list(range(4 * r, min(4 * r + 4, chips)))
        order += row if r % 2 == 0 else row[::-1]
    return [2 * c + i for c in order for i in (0, 1)]


class Layer:
    def __init__(self, P):
        self.P = P
        H, S, F, NC, TB = P["H"], P["S"], P["F"], P["NC"], P["TB"]
        self.KH = H // 128
        self.NH = self.KH
        self.HPC = self.NH // NC
        self.NT = S // TB
        self.QT = TB // 128
        self.NQ = S // 128
        self.FPC = F // NC
        self.FT = self.FPC // 128
        self.YR = 2                             # 128-row tiles per chunk of the final residual
        self.NG = (S + 511) // 512              # key blocks of 512 in pass 1
        err = []
        if H % 512:
            err.append("H must be a multiple of 512")
        if NC < 2 or NC % 2:
            err.append("NC must be an even number of cores (whole chips)")
        if self.NH % NC:
            err.append(f"the {self.NH} heads (H/128) must split evenly over {NC} cores")
        if TB not in (128, 256, 512) or S % TB:
            err.append("TB must be 128, 256 or 512 and divide S")
        if F % (128 * NC):
            err.append(f"F must be a multiple of 128*NC = {128 * NC}")
        if err:
            raise SystemExit("tp_decoder.py: " + "; ".join(err))

    # ---------------------------------------------------------------- memory plan

    def plan(self, nxg, nw, fj, nin):
        """SBUF tensors (name, dtype, free shape, region) and their byte sizes per partition."""
        KH, TB, HPC, QT, NQ, S, FT = self.KH, self.P["TB"], self.HPC, self.QT, self.NQ, self.P["S"], self.FT
        nsq = max(2, self.norm_batch(nxg) + 1)
        common = [
            ("g1s", "fp32", [KH]), ("g2s", "fp32", [KH]),
            ("ones", "bf16", [128]), ("ident", "bf16", [128]), ("zer", "bf16", [128]),
            ("maskd", "bf16", [128]), ("maskt", "bf16", [128]),
            ("nin", "fp32", [nin, TB]), ("sq", "bf16", [nsq, TB]),
            ("xg", "bf16", [nxg, KH, TB]), ("rs", "fp32", [2, TB]), ("rsc", "fp32", [2, QT]),
            ("wring", "bf16", [nw, KH, 128]), ("ost", "bf16", [3, TB]),
            ("ones1", "bf16", [128], 1), ("negm", "bf16", [2, 512], 1),
        ]
        a_only = [
            ("qbuf", "bf16", [HPC, TB]), ("kst", "bf16", [2, TB]), ("vst", "bf16", [2, QT, 129]),
            ("kbuf", "bf16", [2, S]), ("vaug", "bf16", [2, NQ, 129]),
            ("bm", "fp32", [2, self.NG]), ("mb", "bf16", [2]), ("pT", "bf16", [2, 4, 128]),
            ("rl", "fp32", [2]), ("ob", "bf16", [2, 128]), ("oT", "bf16", [HPC, TB]),
            ("woring", "bf16", [2, HPC, 128]),
        ]
        m_only = [
            ("gs", "fp32", [2, TB]), ("us", "fp32", [2, TB]), ("sg", "fp32", [2, TB]),
            ("aT", "bf16", [FT, TB]), ("wdring", "bf16", [3, fj, 128]),
            ("yb", "fp32", [4, self.YR, TB]),
        ]
        size = {"fp32": 4, "bf16": 2}

        def place(lst, off):
            out = []
            for name, dt, shape, *pc in lst:
                n = size[dt] * math.prod(shape)
                out.append((name, dt, shape, off, pc[0] if pc else 128))
                off += (n + 63) // 64 * 64
            return out, off

        c, off = place(common, 0)
        a, a_end = place(a_only, off)
        m, m_end = place(m_only, off)
        return c + a + m, max(a_end, m_end), (off, a_end, m_end)

    def norm_batch(self, nxg):
        """Norm tiles per host position: after each projection (q, k, v of a head; gate, up of
        an MLP tile) with two buffers, after each output tile with one."""
        hosts = (3 * self.HPC if nxg == 2 else self.KH)
        hosts_m = (2 * self.FT if nxg == 2 else self.KH)
        return max(-(-self.KH // hosts), -(-self.KH // hosts_m))

    def choose(self):
        fj = min(self.FT, 16)
        while self.FT % fj:
            fj -= 1
        # Where the norm of the next block hides: behind the output projections (one buffer of
        # normalised activations, one norm tile per output tile) when they are long enough, i.e.
        # when an output tile takes at least ~3 matmuls (HPC and FT >= 3: ~0.55 us of pe against
        # ~0.5 us of act/dve per norm tile); otherwise behind the column-parallel projections (two
        # buffers, since the next block's xg is written while this block's is read). Then the
        # deepest W ring and norm input ring that fit.
        first = 1 if min(self.HPC, self.FT) >= 3 else 2
        order = (first, 3 - first) if not self.P.get("NXG") else (self.P["NXG"],)
        total = None
        for nxg in order:
            for nw, nin in ((8, 12), (8, 8), (6, 8), (4, 8), (3, 8)):
                sb, total, regions = self.plan(nxg, nw, fj, nin)
                if total <= SBUF_BYTES:
                    self.NIN = nin
                    return nxg, nw, fj, sb, total, regions
        raise SystemExit(f"tp_decoder.py: SBUF budget exceeded ({total} bytes per partition "
                         f"> {SBUF_BYTES}); use fewer tokens per block (TB) or more cores")

    # ---------------------------------------------------------------- the walk

    def build(self, needed):
        P = self.P
        H, TB = P["H"], P["TB"]
        KH, HPC, NT, QT, FT = self.KH, self.HPC, self.NT, self.QT, self.FT
        nxg, nw, fj = self.nxg, self.nw, self.fj
        nsq = max(2, self.norm_batch(nxg) + 1)
        g = Emitter(needed)
        self.g = g
        # rings
        NIN = self.NIN
        # buffers whose reuse waits for the release of the previous contents (sizes as declared)
        R = {"sq": Ring(nsq), "w": Ring(nw), "ost": Ring(3), "pd": Ring(3), "pa": Ring(2),
             "kst": Ring(2), "vst": Ring(2), "kv": Ring(2), "wo": Ring(2), "wd": Ring(3),
             "pT": Ring(2), "po": Ring(2), "ob": Ring(2), "gs": Ring(2), "sg": Ring(2),
             "poT": Ring(1)}
        self.R = R
        ctr = {"pd": 0, "w": 0, "ost": 0}
        pumps = {k: Pump(g) for k in ("x", "h", "w", "wo", "kv")}

        def run_pumps():
            for p in pumps.values():
                p.run()

        # ---- setup: constants (pool) and gammas (sp)
        g.emit("pool", "memset ones, 1.0")
        g.emit("pool", "memset zer, 0.0")
        g.emit("pool", "memset ident, 1.0")
        g.emit("pool", "affine_select ident, ident, base=0, pstep=1, steps=[-1], cmp=eq, fill=0.0")
        g.emit("pool", "memset ones1, 1.0")
        g.emit("pool", "memset vst[:, :, :, 128], 1.0")
        g.emit("pool", "affine_select maskd, zer, base=0, pstep=1, steps=[-1], cmp=ge, fill=-30000.0")
        g.emit("pool", "affine_select maskt, zer, base=0, pstep=-1, steps=[1], cmp=ge, fill=-30000.0",
               posts=[(("setup",), "setup")])
        g.emit("sp", "dma g1s, g1§, queue=%d" % Q_G, posts=[(("g1",), "g_ld")], queue=Q_G)
        g.emit("sp", "dma g2s, g2§, queue=%d" % Q_G, posts=[(("g2",), "g_ld")], queue=Q_G)

        # ---- pumps: input tiles of the norms (sp). norm1: x. norm2: h = x + all_reduced attention
        # partial, built in the tile by two transfers on one queue (FIFO), the second accumulating.
        # (sp may then wait for an all_reduce: only work the collective chain waits for anyway.)
        def nin_before(n):
            """Releases of the previous contents of item n's slot (act and dve read it)."""
            m = n - NIN
            return [] if m < 0 else [("sq", m), ("xgw", m)]

        for nb in range(2 * NT):
            for kt in range(KH):
                n = nb * KH + kt
                b = nb % NT
                xsrc = f"xT§[{kt}:{H}:{KH}, {b * TB}:{(b + 1) * TB}]"
                if nb < NT:
                    def fx(n=n, xsrc=xsrc):
                        g.emit("sp", f"dma nin[:, {n % NIN}, :], {xsrc}, queue={Q_X}", nin_before(n),
                               [(("nin", n), "x_ld")], queue=Q_X)
                    pumps["x"].add(lambda n=n: nin_before(n), fx)
                else:
                    def fh(n=n, b=b, kt=kt, xsrc=xsrc):
                        q = Q_N2 + kt % 2
                        g.emit("sp", f"dma nin[:, {n % NIN}, :], {xsrc}, queue={q}", nin_before(n), (),
                               queue=q)
                        g.emit("sp", f"dma nin[:, {n % NIN}, :], p1§[li, {b}, {kt}:{H}:{KH}, :], queue={q}, "
                               "accumulate", [("ar1", b)], [(("nin", n), f"h_ld{kt % 2}")], queue=q)
                    pumps["h"].add(lambda n=n, b=b: [("ar1", b), ("host", NT + b - 1)] + nin_before(n), fh)

        # ---- pumps: W column tiles (sp), in GEMM order
        witems = []
        for b in range(NT):
            for j in range(HPC):
                for m in range(3):
                    witems.append(f"wqkv§[li, {j}, {m}]")
        for b in range(NT):
            for j in range(FT):
                for m in range(2):
                    witems.append(f"wgu§[li, {j}, {m}]")
        for i, src in enumerate(witems):
            def fw(i=i, src=src):
                s = R["w"].slot(i)
                g.emit("sp", f"dma wring[:, {s}, :, :], {src}, queue={Q_W}", R["w"].before(i),
                       [(("w", i), "w_ld")], queue=Q_W)
            pumps["w"].add(lambda i=i: self.ring_keys("w", i), fw)

        # ---- pumps: Wo and Wd chunks (sp)
        for b in range(NT):
            for kt in range(KH):
                i = b * KH + kt

                def fo(i=i, kt=kt):
                    s = R["wo"].slot(i)
                    g.emit("sp", f"dma woring[:, {s}, :, :], wo§[li, {kt}], queue={Q_WO}",
                           R["wo"].before(i), [(("wo", i), "wo_ld")], queue=Q_WO)
                pumps["wo"].add(lambda i=i: self.ring_keys("wo", i), fo)
        nd = 0
        for b in range(NT):
            for kt in range(KH):
                for j0 in range(0, FT, fj):
                    def fd(i=nd, kt=kt, j0=j0):
                        s = R["wd"].slot(i)
                        w = [("a_done",)] if i < R["wd"].n else R["wd"].before(i)
                        g.emit("sp", f"dma wdring[:, {s}, :, :], wd§[li, {kt}, :, {j0}:{j0 + fj}, :], "
                               f"queue={Q_WO}", w, [(("wd", i), "wo_ld")], queue=Q_WO)
                    pumps["wo"].add(lambda i=nd: ([("a_done",)] if i < R["wd"].n
                                                  else self.ring_keys("wd", i)), fd)
                    nd += 1

        # ---- pumps: k and v caches back from HBM (sp), per (block, head)
        for b in range(NT):
            for j in range(HPC):
                i = b * HPC + j

                def fk(i=i, b=b, j=j):
                    s = R["kv"].slot(i)
                    pre = R["kv"].before(i)
                    g.emit("sp", f"dma kbuf[:, {s}, 0:{(b + 1) * TB}], kT§[li, {j}, :, 0:{(b + 1) * TB}], "
                           f"queue={Q_K}", [("kst_l", b, j)] + pre, [(("kb", i), "kb_ld")], queue=Q_K)
                    g.emit("sp", f"dma vaug[:, {s}, 0:{(b + 1) * QT}, :], vv§[li, {j}, :, 0:{(b + 1) * QT}, :], "
                           f"queue={Q_V}", [("vst_l", b, j)] + pre, [(("vb", i), "vb_ld")], queue=Q_V)
                pumps["kv"].add(lambda i=i, b=b, j=j: [("kst_l", b, j), ("vst_l", b, j)]
                                + self.ring_keys("kv", i), fk)

        # ---------------------------------------------------------------- norm tasks
        # norm block nb: nb < NT is norm1 of token block nb, else norm2 of block nb - NT.
        self.norm_emitted = {}     # nb -> number of tiles emitted
        self.ss_emitted = {}       # nb -> number of SS matmuls emitted

        def norm_ready(nb, kt):
            return g.has(("nin", nb * KH + kt))

        def norm_tile(nb, kt):
            """act: x^2 -> bf16 (for the sum of squares on pe); dve: x * g -> bf16 into xg."""
            n = nb * KH + kt
            s = n % NIN
            x = nb % nxg
            sqs = R["sq"].slot(n)
            g.emit("act", f"activate sq[:, {sqs}, :], nin[:, {s}, :], square",
                   [("nin", n)] + R["sq"].before(n), [(("sq", n), "sq_rdy")])
            gam = "g1s" if nb < NT else "g2s"
            w = [("nin", n), ("g1",) if nb < NT else ("g2",)]
            if kt == 0 and nb >= nxg:
                w.append(("xg_rel", nb - nxg))
            posts = [(("xgw", n), "xg_w")]
            if kt == KH - 1:
                posts.append((("xg_rdy", nb), "xg_rdy"))
            g.emit("dve", f"tensor_scalar xg[:, {x}, {kt}, :], nin[:, {s}, :], multiply, {gam}[:, {kt}:{kt + 1}]",
                   w, posts)
            self.norm_emitted[nb] = self.norm_emitted.get(nb, 0) + 1
            run_pumps()

        def ss_matmul(nb, kt):
            n = nb * KH + kt
            sqs = R["sq"].slot(n)
            w = [("sq", n)]
            if kt == 0:
                w += [("setup",)] + ([("ss_rel", nb - 1)] if nb > 0 else [])
            g.emit("pe", "ldweights ones", w)
            posts = [(("ssm", n), "ss_mm")]
            if kt == KH - 1:
                posts.append((("ss_full", nb), "ss_full"))
            g.emit("pe", f"matmul pss[:, 0:{TB}], sq[:, {sqs}, :]" + (", acc" if kt else ""), (), posts)
            R["sq"].release(n, ("ssm", n))
            self.ss_emitted[nb] = self.ss_emitted.get(nb, 0) + 1

        def host(nb_next, batch):
            """At a host position of GEMM block nb_next - 1: the SS matmuls of the tiles emitted at
            the previous position, then up to `batch` more norm tiles of block nb_next."""
            if nb_next >= 2 * NT:
                return
            for kt in range(self.ss_emitted.get(nb_next, 0), self.lagged.get(nb_next, 0)):
                ss_matmul(nb_next, kt)
            k = 0
            run_pumps()
            while k < batch and self.norm_emitted.get(nb_next, 0) < KH:
                kt = self.norm_emitted.get(nb_next, 0)
                if not norm_ready(nb_next, kt):
                    break
                norm_tile(nb_next, kt)
                k += 1
            self.lagged[nb_next] = self.norm_emitted.get(nb_next, 0)

        def flush_norm(nb):
            """Everything of norm block nb that has not been hosted, then rstd."""
            run_pumps()
            while self.norm_emitted.get(nb, 0) < KH:
                kt = self.norm_emitted.get(nb, 0)
                if not norm_ready(nb, kt):
                    raise RuntimeError(f"norm block {nb} tile {kt}: inputs not emitted")
                # the SS matmuls trail the squares by one ring slot
                for k2 in range(self.ss_emitted.get(nb, 0), kt - nsq + 2):
                    ss_matmul(nb, k2)
                norm_tile(nb, kt)
            for kt in range(self.ss_emitted.get(nb, 0), KH):
                ss_matmul(nb, kt)
            r = nb % 2
            w = [("ss_full", nb)]
            if nb >= 2 and nb - 2 < NT:
                w.append(("rt", nb - 2))
            g.emit("dve", f"tensor_scalar rs[:, {r}, :], pss[:, 0:{TB}], divide, {H}, add, {EPS}", w,
                   [(("ss_rel", nb), "ss_rel")])
            g.emit("dve", f"tensor_scalar rs[:, {r}, :], rs[:, {r}, :], pow, -0.5", (),
                   [(("rs", nb), "rs_rdy")])

        self.lagged = {}

        # ---------------------------------------------------------------- GEMM helpers
        def pd_acquire():
            u = ctr["pd"]
            ctr["pd"] += 1
            return u, R["pd"].slot(u), R["pd"].before(u)

        def pd_release(u, key):
            R["pd"].release(u, key)

        def w_item():
            i = ctr["w"]
            ctr["w"] += 1
            return i, R["w"].slot(i)

        def proj_T(x, i_w, s_w, extra_waits, extra_posts=()):
            """qT/kT/gate/up tile: pd[u] = sum_kt wring[s_w, kt]^T . xg[x, kt]. Returns u."""
            u, su, pre = pd_acquire()

            def body(k, first, last):
                return [f"ldweights wring[:, {s_w}, {k}, :]",
                        f"matmul pd[:, {su}, 0:{TB}], xg[:, {x}, {k}, :]" + ("" if first else ", acc")]
            g.chain("pe", KH, body, [("w", i_w)] + pre + list(extra_waits),
                    [(("pd", u), "pd_full"), (("w_rel", i_w), "w_rel")] + list(extra_posts))
            R["w"].release(i_w, ("w_rel", i_w))
            return u, su

        def store_out(u, su, dst, b):
            """dve: PSUM -> bf16 staging; pool: staging -> HBM (a partial-sum row tile)."""
            i = ctr["ost"]
            ctr["ost"] += 1
            s = R["ost"].slot(i)
            g.emit("dve", f"tensor_copy ost[:, {s}, :], pd[:, {su}, 0:{TB}]",
                   [("pd", u)] + R["ost"].before(i), [(("pd_rel", u), "pd_rel"), (("ost", i), "ost_rdy")])
            pd_release(u, ("pd_rel", u))
            g.emit("pool", f"dma {dst}, ost[:, {s}, :], queue={Q_PST}", [("ost", i)],
                   [(("pst", i), "p_st")], queue=Q_PST)
            R["ost"].release(i, ("pst", i))
            return i

        # ---------------------------------------------------------------- the layer
        flush_norm(0)                   # norm1 of block 0: nothing to hide it behind
        for nb in range(2 * NT):
            g.mark(("host", nb))        # GEMM block nb hosts norm block nb + 1
            run_pumps()
            if nb < NT:
                self.a_block(nb, host, proj_T, pd_acquire, pd_release, w_item, store_out, run_pumps)
            else:
                self.m_block(nb - NT, host, proj_T, pd_acquire, pd_release, w_item, store_out, run_pumps)
            if nb + 1 < 2 * NT:
                g.mark(("host", nb + 1))
                flush_norm(nb + 1)
        # last final residual
        self.residual(NT - 1, run_pumps)
        run_pumps()
        g.drain()
        for name, p in pumps.items():
            assert not p.items, f"pump {name} has {len(p.items)} items left"
        return g

    def ring_keys(self, ring, i):
        r = self.R[ring]
        if i < r.n:
            return []
        return r.rel.get(i - r.n) or [("never",)]

    # ---------------------------------------------------------------- attention block
    def a_block(self, b, host, proj_T, pd_acquire, pd_release, w_item, store_out, run_pumps):
        g, R, P = self.g, self.R, self.P
        TB = P["TB"]
        KH, HPC, NT, QT = self.KH, self.HPC, self.NT, self.QT
        nxg = self.nxg
        nb = b
        x = nb % nxg
        r = nb % 2
        batch = self.norm_batch(nxg)
        for j in range(HPC):
            iq, sq_ = w_item()
            ik, sk = w_item()
            iv, sv = w_item()
            run_pumps()
            uq, suq = proj_T(x, iq, sq_, [("xg_rdy", nb)])
            if nxg == 2:
                host(nb + 1, batch)
            uk, suk = proj_T(x, ik, sk, [])
            if nxg == 2:
                host(nb + 1, batch)
            if j == 0:
                # rstd as a column (per token) for the token-major v: transposes of the rstd row
                w = [("rs", nb), ("setup",)] + ([("rsc_cp", nb - 1)] if nb > 0 else [])
                for t in range(QT):
                    g.emit("pe", f"transpose prc[:, {t}:{t + 1}], rs[0:1, {r}, {t * 128}:{(t + 1) * 128}]",
                           w if t == 0 else (), [(("rt", nb), "rt")] if t == QT - 1 else ())
                g.emit("act", f"tensor_copy rsc[:, {r}, :], prc[:, 0:{QT}]", [("rt", nb)],
                       [(("rsc_cp", nb), "rsc_cp")])
            # v [128 tokens, 128] per token tile t: stationary xg tile, moving W tile
            ua = self.ctr_pa()
            sa = R["pa"].slot(ua)

            def body(k, first, last, sv=sv, sa=sa):
                out = []
                for t in range(QT):
                    out += [f"ldweights xg[:, {x}, {k}, {t * 128}:{(t + 1) * 128}]",
                            f"matmul pa[:, {sa}, {t * 128}:{(t + 1) * 128}], wring[:, {sv}, {k}, :]"
                            + ("" if first else ", acc")]
                return out
            posts = [(("pa", ua), "pa_full"), (("w_rel", iv), "w_rel")]
            if j == HPC - 1:
                posts.append((("xg_rel", nb), "xg_rel"))
            g.chain("pe", KH, body, [("w", iv)] + R["pa"].before(ua), posts)
            R["w"].release(iv, ("w_rel", iv))
            # epilogues: q stays in SBUF, k and v to the HBM cache
            g.emit("dve", f"tensor_tensor qbuf[:, {j}, :], pd[:, {suq}, 0:{TB}], rs[:, {r}, :], multiply",
                   [("pd", uq)], [(("pd_rel", uq), "pd_rel"), (("q", b, j), "q_rdy")])
            pd_release(uq, ("pd_rel", uq))
            hk = b * HPC + j
            s = R["kst"].slot(hk)
            g.emit("dve", f"tensor_tensor kst[:, {s}, :], pd[:, {suk}, 0:{TB}], rs[:, {r}, :], multiply",
                   [("pd", uk)] + R["kst"].before(hk), [(("pd_rel", uk), "pd_rel"), (("kst", hk), "kst_rdy")])
            pd_release(uk, ("pd_rel", uk))
            g.emit("pool", f"dma kT§[li, {j}, :, {b * TB}:{(b + 1) * TB}], kst[:, {s}, :], queue={Q_KST}",
                   [("kst", hk)], [(("kst_l", b, j), "k_st")], queue=Q_KST)
            R["kst"].release(hk, ("kst_l", b, j))
            s = R["vst"].slot(hk)
            for t in range(QT):
                w = [("pa", ua), ("rsc_cp", nb)] + (R["vst"].before(hk) if t == 0 else [])
                ps = [(("pa_rel", ua), "pa_rel"), (("vst", hk), "vst_rdy")] if t == QT - 1 else ()
                g.emit("act", f"activate vst[:, {s}, {t}, 0:128], pa[:, {sa}, {t * 128}:{(t + 1) * 128}], "
                       f"copy, scale=rsc[:, {r}, {t}:{t + 1}]", w if t == 0 else (), ps)
            R["pa"].release(ua, ("pa_rel", ua))
            g.emit("pool", f"dma vv§[li, {j}, :, {b * QT}:{(b + 1) * QT}, :], vst[:, {s}, :, :], queue={Q_VST}",
                   [("vst", hk), ("setup",)], [(("vst_l", b, j), "v_st")], queue=Q_VST)
            R["vst"].release(hk, ("vst_l", b, j))
            run_pumps()
            if nxg == 2:
                host(nb + 1, batch)
        # ---------------- attention
        tiles = [(j, qi) for j in range(HPC) for qi in range(QT)]
        self.attention(b, tiles, pd_acquire, pd_release, run_pumps)
        # ---------------- output projection, row-parallel: partial [H, TB] -> HBM -> all_reduce
        last_n = self.att_last
        for kt in range(KH):
            i = b * KH + kt
            s = R["wo"].slot(i)
            u, su, pre = pd_acquire()
            run_pumps()

            def body(k, first, last, s=s, su=su):
                return [f"ldweights woring[:, {s}, {k}, :]",
                        f"matmul pd[:, {su}, 0:{TB}], oT[:, {k}, :]" + ("" if first else ", acc")]
            posts = [(("pd", u), "pd_full"), (("wo_rel", i), "wo_rel")]
            if b == NT - 1 and kt == KH - 1:
                posts.append((("a_done",), "a_done"))
            g.chain("pe", HPC, body, [("wo", i), ("otc", last_n)] + pre, posts)
            R["wo"].release(i, ("wo_rel", i))
            last_store = store_out(u, su, f"p1§[li, {b}, {kt * 128}:{(kt + 1) * 128}, :]", b)
            run_pumps()
            if nxg == 1:
                host(nb + 1, 1)
        g.emit("cc", f"all_reduce p1§[li, {b}], p1§[li, {b}], op=add, group=tp", [("pst", last_store)],
               [(("ar1", b), "ar1")])
        run_pumps()

    def ctr_pa(self):
        u = self.pa_ctr
        self.pa_ctr += 1
        return u

    def attention(self, b, tiles, pd_acquire, pd_release, run_pumps):
        """Causal attention of the query tiles of block b, one (head, query tile) after another.
        pe order: T(n) P1(n+1) [ST(n,g) PV(n,g-1)]... PV(n,last) OT(n-1)."""
        g, R = self.g, self.R
        HPC, QT = self.HPC, self.QT
        att = []
        for (j, qi) in tiles:
            n = self.att_n
            self.att_n += 1
            i = b * QT + qi                 # global query tile: keys 0 .. (i+1)*128
            ng = i // 4 + 1
            groups = [list(range(4 * gg, min(4 * gg + 4, i + 1))) for gg in range(ng)]
            att.append(dict(n=n, j=j, qi=qi, i=i, groups=groups, hk=b * HPC + j))

        def p1(t):
            """Pass 1: S = q k^T for the key blocks of 512 up to the diagonal tile, the diagonal
            masked; dve reduces each block's row max as soon as it is in PSUM."""
            n, j, qi, i, hk = t["n"], t["j"], t["qi"], t["i"], t["hk"]
            kv = R["kv"].slot(hk)
            m = n % 2
            ngr = len(t["groups"])
            g.emit("pe", f"ldweights qbuf[:, {j}, {qi * 128}:{(qi + 1) * 128}]",
                   [("q", b, j), ("kb", hk), ("setup",)])
            for gg, grp in enumerate(t["groups"]):
                u, su, pre = pd_acquire()
                w = len(grp) * 128
                last = gg == ngr - 1
                g.emit("pe", f"matmul pd[:, {su}, 0:{w}], kbuf[:, {kv}, {gg * 512}:{gg * 512 + w}]", pre,
                       () if last else [(("pd", u), "pd_full")])
                if last:
                    c0 = (i % 4) * 128
                    g.emit("pe", "ldweights ident")
                    g.emit("pe", f"matmul pd[:, {su}, {c0}:{c0 + 128}], maskd, acc", (), [(("pd", u), "pd_full")])
                if ngr == 1:
                    g.emit("dve", f"tensor_reduce mb[:, {m}:{m + 1}], pd[:, {su}, 0:{w}], max, axes=1",
                           [("pd", u)], [(("pd_rel", u), "pd_rel"), (("m", n), "m_rdy")])
                else:
                    g.emit("dve", f"tensor_reduce bm[:, {m}, {gg}:{gg + 1}], pd[:, {su}, 0:{w}], max, axes=1",
                           [("pd", u)], [(("pd_rel", u), "pd_rel")])
                pd_release(u, ("pd_rel", u))
            if ngr > 1:
                g.emit("dve", f"tensor_reduce mb[:, {m}:{m + 1}], bm[:, {m}, 0:{ngr}], max, axes=1", (),
                       [(("m", n), "m_rdy")])

        def tr(t):
            n = t["n"]
            m = n % 2
            g.emit("pe", f"transpose pmr[0:1, {m}, :], mb[:, {m}:{m + 1}]",
                   [("m", n)] + ([("nm", n - 2)] if n >= 2 else []), [(("t", n), "t_rdy")])
            off = self.PMR + m * 512
            g.emit("dve", f"tensor_scalar negm[0:1, {m}, :], ps:fp32@0:1+{off}[0x4, 1x128], multiply, -1.0",
                   [("t", n)], [(("nm", n), "nm_rdy")])

        def st(t, gg):
            n, j, qi, i, hk = t["n"], t["j"], t["qi"], t["i"], t["hk"]
            kv = R["kv"].slot(hk)
            grp = t["groups"][gg]
            ua = self.ctr_pa()
            sa = R["pa"].slot(ua)
            nt = len(grp)
            for c, kt in enumerate(grp):
                w = ([("nm", n)] + R["pa"].before(ua)) if c == 0 else ()
                g.emit("pe", f"ldweights kbuf[:, {kv}, {kt * 128}:{(kt + 1) * 128}]", w)
                g.emit("pe", f"matmul pa[:, {sa}, {c * 128}:{(c + 1) * 128}], qbuf[:, {j}, {qi * 128}:{(qi + 1) * 128}]")
            diag = kt == i
            g.emit("pe", "ldweights ones1")
            g.emit("pe", f"matmul pa[:, {sa}, 0:{nt * 128}], negm[0:1, {n % 2}, 0:{nt * 128}], acc", (),
                   () if diag else [(("pa", ua), "pa_full")])
            if diag:
                cd = nt - 1
                g.emit("pe", "ldweights ident")
                g.emit("pe", f"matmul pa[:, {sa}, {cd * 128}:{(cd + 1) * 128}], maskt, acc", (),
                       [(("pa", ua), "pa_full")])
            ip = self.pT_ctr
            self.pT_ctr += 1
            sp_ = R["pT"].slot(ip)
            g.emit("act", f"activate pT[:, {sp_}, 0:{nt}, :], pa[:, {sa}, 0:{nt * 128}], exp, scale={SCALE!r}",
                   [("pa", ua)] + R["pT"].before(ip), [(("pa_rel", ua), "pa_rel"), (("p", ip), "p_rdy")])
            R["pa"].release(ua, ("pa_rel", ua))
            return ip, sp_, grp

        def pv(t, gg, ip, sp_, grp):
            n, hk = t["n"], t["hk"]
            kv = R["kv"].slot(hk)
            first = gg == 0
            last = gg == len(t["groups"]) - 1
            o = n % 2
            for c, kt in enumerate(grp):
                w = ()
                if c == 0:
                    w = [("p", ip), ("vb", hk)] + (R["po"].before(n) if first else [])
                g.emit("pe", f"ldweights pT[:, {sp_}, {c}, :]", w)
                posts = []
                if c == len(grp) - 1:
                    posts.append((("pv", ip), "pv_rel"))
                    if last:
                        posts.append((("o", n), "o_full"))
                        if t.get("kv_last"):
                            posts.append((("kv_rel", hk), "kv_rel"))
                g.emit("pe", f"matmul po[:, {o}, :], vaug[:, {kv}, {kt}, :]"
                       + ("" if (first and c == 0) else ", acc"), (), posts)
            R["pT"].release(ip, ("pv", ip))
            if last and t.get("kv_last"):
                R["kv"].release(hk, ("kv_rel", hk))

        def norm_o(t):
            n = t["n"]
            o = n % 2
            g.emit("dve", f"reciprocal rl[:, {o}:{o + 1}], po[:, {o}, 128:129]", [("o", n)])
            g.emit("dve", f"tensor_scalar ob[:, {o}, :], po[:, {o}, 0:128], multiply, rl[:, {o}:{o + 1}]",
                   R["ob"].before(n), [(("po_rel", n), "po_rel")])
            R["po"].release(n, ("po_rel", n))

        def ot(t):
            n, j, qi = t["n"], t["j"], t["qi"]
            o = n % 2
            g.emit("pe", f"transpose poT, ob[:, {o}, :]", [("po_rel", n)] + R["poT"].before(n),
                   [(("ot", n), "ot_full")])
            R["ob"].release(n, ("ot", n))
            g.emit("act", f"tensor_copy oT[:, {j}, {qi * 128}:{(qi + 1) * 128}], poT", [("ot", n)],
                   [(("otc", n), "otc")])
            R["poT"].release(n, ("otc", n))

        # last use of each head's k/v buffers
        for idx, t in enumerate(att):
            t["kv_last"] = idx == len(att) - 1 or att[idx + 1]["j"] != t["j"]
        p1(att[0])
        run_pumps()
        for idx, t in enumerate(att):
            tr(t)                       # before the next tile's max, so dve negates first
            if idx + 1 < len(att):
                p1(att[idx + 1])
            prev = None
            for gg in range(len(t["groups"])):
                cur = st(t, gg)
                if prev is not None:
                    pv(t, gg - 1, *prev)
                prev = cur
            pv(t, len(t["groups"]) - 1, *prev)
            norm_o(t)
            if idx > 0:
                ot(att[idx - 1])
            run_pumps()
        ot(att[-1])
        self.att_last = att[-1]["n"]

    # ---------------------------------------------------------------- MLP block
    def m_block(self, b, host, proj_T, pd_acquire, pd_release, w_item, store_out, run_pumps):
        g, R, P = self.g, self.R, self.P
        TB = P["TB"]
        KH, FT, fj = self.KH, self.FT, self.fj
        nxg = self.nxg
        nb = self.NT + b
        x = nb % nxg
        r = nb % 2
        batch = self.norm_batch(nxg)
        pend = None

        def a_mul(it, j, s2):
            g.emit("dve", f"tensor_tensor aT[:, {j}, :], us[:, {s2}, :], sg[:, {s2}, :], multiply",
                   [("sg", it)], [(("a", it), "a_rdy")])
            R["sg"].release(it, ("a", it))

        for j in range(FT):
            ig, sgw = w_item()
            iu, suw = w_item()
            run_pumps()
            ug, sug = proj_T(x, ig, sgw, [("xg_rdy", nb)])
            if nxg == 2:
                host(nb + 1, batch)
            posts = [(("xg_rel", nb), "xg_rel")] if j == FT - 1 else []
            uu, suu = proj_T(x, iu, suw, [], posts)
            it = self.gu_ctr
            self.gu_ctr += 1
            s2 = R["gs"].slot(it)
            g.emit("dve", f"tensor_tensor gs[:, {s2}, :], pd[:, {sug}, 0:{TB}], rs[:, {r}, :], multiply",
                   [("pd", ug)] + R["gs"].before(it), [(("pd_rel", ug), "pd_rel"), (("gs", it), "gs_rdy")])
            pd_release(ug, ("pd_rel", ug))
            g.emit("act", f"activate sg[:, {s2}, :], gs[:, {s2}, :], silu", [("gs", it)] + R["sg"].before(it),
                   [(("sg", it), "sg_rdy")])
            R["gs"].release(it, ("sg", it))
            g.emit("dve", f"tensor_tensor us[:, {s2}, :], pd[:, {suu}, 0:{TB}], rs[:, {r}, :], multiply",
                   [("pd", uu)], [(("pd_rel", uu), "pd_rel")])
            pd_release(uu, ("pd_rel", uu))
            if pend is not None:
                a_mul(*pend)
            pend = (it, j, s2)
            run_pumps()
            if nxg == 2:
                host(nb + 1, batch)
        a_mul(*pend)
        last_a = pend[0]
        # down projection, row-parallel
        for kt in range(KH):
            u, su, pre = pd_acquire()
            chunks = list(range(0, FT, fj))
            for ci, j0 in enumerate(chunks):
                i = self.wd_ctr
                self.wd_ctr += 1
                s = R["wd"].slot(i)
                run_pumps()
                first = ci == 0
                lastc = ci == len(chunks) - 1

                def body(k, f, l, s=s, su=su, j0=j0, first=first):
                    return [f"ldweights wdring[:, {s}, {k}, :]",
                            f"matmul pd[:, {su}, 0:{TB}], aT[:, {j0}+{k}, :]" + ("" if (first and f) else ", acc")]
                w = [("wd", i)] + ((pre + [("a", last_a)]) if first else [])
                posts = [(("wd_rel", i), "wd_rel")] + ([(("pd", u), "pd_full")] if lastc else [])
                g.chain("pe", fj, body, w, posts)
                R["wd"].release(i, ("wd_rel", i))
            last_store = store_out(u, su, f"p2§[li, {b}, {kt * 128}:{(kt + 1) * 128}, :]", b)
            run_pumps()
            if nxg == 1:
                host(nb + 1, 1)
        g.emit("cc", f"all_reduce p2§[li, {b}], p2§[li, {b}], op=add, group=tp", [("pst", last_store)],
               [(("ar2", b), "ar2")])
        run_pumps()
        if b >= 1:
            self.residual(b - 1, run_pumps)

    def residual(self, b, run_pumps):
        """y = x + all_reduced attention partial + all_reduced MLP partial (= h + MLP: the same
        fp32 additions in the same order) for this core's half of the rows of block b, in chunks
        of YR*128 rows: load x, accumulate both partials, store. Chunk c uses queue Q_Y + c % 4
        and SBUF slot c % 4: a queue's transfers move one after another, so the slot is reused
        only after its store, with no semaphore, and pool waits only for the all_reduce."""
        g, P = self.g, self.P
        H, TB, YR = P["H"], P["TB"], self.YR
        ch = YR * 128
        nchunk = H // 2 // ch
        blk = f"{b * TB}:{(b + 1) * TB}"

        def rows(c):
            return f"li*{H // 2}+{c * ch}:li*{H // 2}+{(c + 1) * ch}"

        def head(c):
            q = Q_Y + c % 4
            g.emit("pool", f"dma yb[:, {c % 4}, :, :], xT§[{rows(c)}, {blk}], queue={q}", (), (), queue=q)
            g.emit("pool", f"dma yb[:, {c % 4}, :, :], p1§[li, {b}, {rows(c)}, :], queue={q}, accumulate",
                   (), (), queue=q)
        for c in range(min(4, nchunk)):
            head(c)
        for c in range(nchunk):
            q = Q_Y + c % 4
            g.emit("pool", f"dma yb[:, {c % 4}, :, :], p2§[li, {b}, {rows(c)}, :], queue={q}, accumulate",
                   [("ar2", b)], (), queue=q)
            g.emit("pool", f"dma yT§[{rows(c)}, {blk}], yb[:, {c % 4}, :, :], queue={q}", (),
                   [(("y", b, c), f"y_st{c % 4}")], queue=q)
            if c + 4 < nchunk:
                head(c + 4)
        run_pumps()

    # ---------------------------------------------------------------- text
    def generate(self):
        self.nxg, self.nw, self.fj, self.sb, self.sb_total, self.regions = self.choose()
        # PSUM: dve ring (banks 0-2), norm sums (3), act ring (4-5), [O | l] (6), misc (7)
        self.PMR = 7 * 2048
        needed = None
        for _ in range(2):
            self.pa_ctr = 0
            self.att_n = 0
            self.pT_ctr = 0
            self.gu_ctr = 0
            self.wd_ctr = 0
            g = self.build(needed)
            needed = g.cross
        return self.text(g)

    def text(self, g):
        P = self.P
        H, S, F, NC, TB = P["H"], P["S"], P["F"], P["NC"], P["TB"]
        KH, HPC, NT, QT, NQ, FT, FPC = self.KH, self.HPC, self.NT, self.QT, self.NQ, self.FT, self.FPC
        chips = NC // 2
        L = []
        L.append(f"; tp_decoder_layer: one transformer decoder layer, tensor-parallel over {NC} NeuronCores "
                 f"({chips} chip{'s' if chips > 1 else ''}).")
        L.append(f"; Generated by kernels/gen/tp_decoder.py --cores {NC} H={H} S={S} F={F} TB={TB}"
                 + (f" NXG={P['NXG']}" if P.get("NXG") else "") + ": "
                 "see its docstring for the algorithm,")
        L.append("; layouts, tensor parallelism and scheduling. NumPy reference and checker: "
                 "kernels/tp_decoder_ref.py.")
        L.append(f";   H={H} ({self.NH} heads of 128, {HPC} per core), S={S} tokens ({NT} block{'s' if NT > 1 else ''} of {TB}), "
                 f"F={F} ({FPC} per core)")
        c_end, a_end, m_end = self.regions
        L.append(f";   SBUF per partition: {self.sb_total} of {SBUF_BYTES} bytes (common {c_end}, "
                 f"attention part {a_end - c_end}, MLP part {m_end - c_end}, aliased); "
                 f"normalised activations {'double' if self.nxg == 2 else 'single'}-buffered")
        L.append(".arch trn1")
        L.append(f".chips {chips}")
        L.append("")
        for c in range(chips):
            sfx = f"_c{c}"
            L += [f".hbm xT{sfx} fp32 [{H}, {S}] input chip={c}",
                  f".hbm g1{sfx} fp32 [{H}] input chip={c}",
                  f".hbm g2{sfx} fp32 [{H}] input chip={c}",
                  f".hbm wqkv{sfx} bf16 [2, {HPC}, 3, {H}, 128] input chip={c}",
                  f".hbm wo{sfx} bf16 [2, {KH}, 128, {HPC}, 128] input chip={c}",
                  f".hbm wgu{sfx} bf16 [2, {FT}, 2, {H}, 128] input chip={c}",
                  f".hbm wd{sfx} bf16 [2, {KH}, 128, {FT}, 128] input chip={c}",
                  f".hbm yT{sfx} fp32 [{H}, {S}] output chip={c}",
                  f".hbm kT{sfx} bf16 [2, {HPC}, 128, {S}] scratch chip={c}",
                  f".hbm vv{sfx} bf16 [2, {HPC}, 128, {NQ}, 129] scratch chip={c}",
                  f".hbm p1{sfx} bf16 [2, {NT}, {H}, {TB}] scratch chip={c}",
                  f".hbm p2{sfx} bf16 [2, {NT}, {H}, {TB}] scratch chip={c}"]
        L.append(f".group tp = {', '.join(str(k) for k in ring_order(NC))}")
        L.append("")
        body = []
        for name, dt, shape, off, pc in self.sb:
            body.append(f".sbuf {name} {dt} [{pc}, {', '.join(str(d) for d in shape)}] +{off}")
        body += [".psum pd fp32 [128, 3, 512] +0",
                 ".psum pss fp32 [128, 512] +6144",
                 ".psum pa fp32 [128, 2, 512] +8192",
                 ".psum po fp32 [128, 2, 129] +12288",
                 f".psum pmr fp32 [1, 2, 128] +{self.PMR}",
                 f".psum poT fp32 [128, 128] +{self.PMR + 1024}",
                 f".psum prc fp32 [128, {QT}] +{self.PMR + 1536}"]
        for s in sorted(g.agent):
            body.append(f".sem {s}")
        for e in ENGINES:
            if g.out[e]:
                body.append(f".engine {e}")
                body += g.out[e]
        text = "\n".join(L) + "\n"
        for c in range(chips):
            text += f"\n.core {2 * c}..{2 * c + 1}\n.let li = core % 2\n"
            text += "\n".join(body).replace("§", f"_c{c}") + "\n"
        return text


def parse(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("-o", "--output", default="-")
    ap.add_argument("sizes", nargs="*", help="H=.. S=.. F=.. TB=.. [NXG=1|2: force the buffering "
                    "of the normalised activations, for tests]")
    a = ap.parse_args(argv)
    P = {"H": 4096, "S": 2048, "F": 14336, "TB": 512, "NXG": 0, "NC": a.cores}
    for kv in a.sizes:
        k, v = kv.split("=", 1)
        if k not in P or k == "NC":
            raise SystemExit(f"tp_decoder.py: unknown size {k!r}")
        P[k] = int(v)
    return P, a.output


def generate(P):
    """The NCA text of the layer for sizes P (H, S, F, TB, NC)."""
    return Layer(P).generate()


def main(argv):
    P, out = parse(argv)
    text = generate(P)
    if out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
