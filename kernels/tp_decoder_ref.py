#!/usr/bin/python3
r"""NumPy reference and checker for the tensor-parallel decoder layer (kernels/gen/tp_decoder.py).

    /usr/bin/python3 kernels/tp_decoder_ref.py check --cores 8 H=1024 S=1024 F=2048 \
        --ncsim build/ncsim [--rtol R] [--atol A] [--seed S] [--keep DIR] [-- EXTRA NCSIM OPTIONS]
    /usr/bin/python3 kernels/tp_decoder_ref.py timing --cores 16 [H=4096 S=2048 F=14336] \
        --ncsim build/ncsim [--keep DIR] [-- EXTRA NCSIM OPTIONS]

`check` generates the program for NC cores (2: trn1; more: trn1-32xl), makes seeded inputs
(plain matrices: x [S, H], g1, g2 [H], Wq, Wk, Wv, Wo [H, H], Wg, Wu [H, F], Wd [F, H]; weights
rounded to bf16 as the kernel reads them), packs each chip's shards into the kernel's layouts,
runs `ncsim run`, and compares the output of every chip (yT_c, all equal to y^T) with the
reference, element by element: |out - ref| <= atol + rtol |ref| + ulps * U, where U is the
element's sum of one bf16 ulp of every partial sum and of the result of both all_reduces
(`ref_layer(..., with_ulps=True)`; defaults atol = 2^-7, rtol = 1e-6, ulps = 1, justified in
tests/unit/test_kernels.c). It prints one line
`ok|FAIL tp_decoder NC=.. ... max_abs=.. total_ns=.. cc_busy=..` and exits 0 when every element
of every chip passes (1 otherwise, 3 when ncsim fails).

The reference (`ref_layer`) is float64. With kernel_rounding=True (what `check` uses) it rounds
to bf16 exactly where the kernel stores bf16 values: x*g and x^2 (the normalisation inputs),
q, k, v, the row max used as softmax shift, P, o, each core's partial sums before the
all_reduce and the all_reduce results (ncsim reduces in fp32 and writes bf16), and the MLP
activation a. What remains between the kernel and this reference is fp32 arithmetic (sums in
another order, expf and the silu of the C library), and the rare intermediate that lands on
the other side of a bf16 rounding boundary; tests/unit/test_kernels.c derives the tolerance.
`--exact` compares with the pure float64 layer instead (only the inputs rounded), for
information.

`timing` generates the full-size program and runs it with --timing-only and random inputs,
then prints simulated time, MFU, the time the cc engine spends in all_reduce (busy, and the
share of the run), and the command lines (the README table rows).
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gen"))
import tp_decoder  # noqa: E402

EPS = tp_decoder.EPS
SCALE = tp_decoder.SCALE


def bf16(x):
    """ref.bf16 (round to nearest even, NaN kept) in uint32 arithmetic: same results, faster."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32)
    finite = (b & 0x7F800000) != 0x7F800000
    r = np.where(finite, (b + (0x7FFF + ((b >> 16) & 1))) & 0xFFFF0000, b & 0xFFFF0000)
    out = r.astype(np.uint32).view(np.float32).copy()
    out[np.isnan(x)] = np.nan
    return out


def arch_for(nc):
    return "trn1" if nc <= 2 else "trn1-32xl"


# ---- reference ------------------------------------------------------------------------------

def _b(x, on):
    return bf16(np.asarray(x, dtype=np.float32)).astype(np.float64) if on else x


def bf16_ulp(v):
    """The spacing of bf16 numbers at |v| (2^(e-7) for |v| in [2^e, 2^(e+1)))."""
    a = np.maximum(np.abs(v), 2.0 ** -126)
    return 2.0 ** (np.floor(np.log2(a)) - 7)


def silu(x):
    return x / (1.0 + np.exp(-x))


def ref_layer(x, g1, g2, wq, wk, wv, wo, wg, wu, wd, nc, kernel_rounding=True, with_ulps=False):
    """One decoder layer on x [S, H] (float64 inputs, weights already bf16 values).
    Returns y [S, H], or with with_ulps=True (y, ulps): ulps [S, H] is, for each element, the sum
    over both all_reduces of one bf16 ulp of each core's partial sum and of the result (the
    size of the rounding flips that fp32 summation-order differences can cause there).
    With kernel_rounding, the bf16 roundings of the kernel are applied and the row-parallel
    partial sums are formed per core (nc cores) as the kernel does."""
    R = kernel_rounding
    S, H = x.shape
    NH = H // 128
    HPC = NH // nc
    F = wg.shape[1]
    FPC = F // nc

    def rmsnorm_parts(v, gamma):
        """(v*gamma rounded as the kernel stores it, rstd per token)."""
        sq = _b(v * v, R)
        rstd = 1.0 / np.sqrt(sq.sum(axis=1, keepdims=True) / H + EPS)
        return _b(v * gamma[None, :], R), rstd

    ulps = np.zeros_like(x)

    def allreduce(parts):
        nonlocal ulps
        if not R:
            return sum(parts)
        acc = np.zeros_like(parts[0])
        for p in parts:                         # fp32 reduction in group order, then bf16
            acc = (acc + _b(p, True)).astype(np.float32).astype(np.float64)
            ulps = ulps + bf16_ulp(p)
        acc = _b(acc, True)
        ulps = ulps + bf16_ulp(acc)
        return acc

    # attention block
    xg, rstd = rmsnorm_parts(x, g1)
    q = _b((xg @ wq) * rstd, R)
    k = _b((xg @ wk) * rstd, R)
    v = _b((xg @ wv) * rstd, R)
    mask = np.triu(np.ones((S, S), dtype=bool), 1)
    o = np.zeros((S, H))
    for hh in range(NH):
        c = slice(hh * 128, (hh + 1) * 128)
        s = q[:, c] @ k[:, c].T
        s[mask] = -np.inf
        m = _b(s.max(axis=1, keepdims=True), R)
        p = _b(np.exp(SCALE * (s - m)), R)
        o[:, c] = _b((p @ v[:, c]) / p.sum(axis=1, keepdims=True), R)
    parts = []
    for r in range(nc):
        rows = slice(r * HPC * 128, (r + 1) * HPC * 128)
        parts.append(o[:, rows] @ wo[rows, :])
    h = x + allreduce(parts)
    # MLP block
    hg, rstd2 = rmsnorm_parts(h, g2)
    gate = (hg @ wg) * rstd2
    up = (hg @ wu) * rstd2
    a = _b(silu(gate) * up, R)
    partial = []
    for r in range(nc):
        cols = slice(r * FPC, (r + 1) * FPC)
        partial.append(a[:, cols] @ wd[cols, :])
    y = h + allreduce(partial)
    return (y, ulps) if with_ulps else y


# ---- inputs and packing ---------------------------------------------------------------------

def make_inputs(P, seed):
    """Seeded plain inputs (float32; weights rounded to bf16 values)."""
    H, S, F = P["H"], P["S"], P["F"]
    rng = np.random.default_rng(seed)

    def u(shape, lo=-1.0, hi=1.0):
        return rng.uniform(lo, hi, size=shape).astype(np.float32)
    x = u((S, H))
    g1 = u((H,), 0.5, 1.5)
    g2 = u((H,), 0.5, 1.5)
    # q, k larger than 1/sqrt(H) so that the softmax is far from uniform
    wq = bf16(u((H, H)) * (2.0 / math.sqrt(H)))
    wk = bf16(u((H, H)) * (2.0 / math.sqrt(H)))
    wv = bf16(u((H, H)) * (1.7 / math.sqrt(H)))
    wo = bf16(u((H, H)) * (1.7 / math.sqrt(H)))
    wg = bf16(u((H, F)) * (1.7 / math.sqrt(H)))
    wu = bf16(u((H, F)) * (1.7 / math.sqrt(H)))
    wd = bf16(u((F, H)) * (1.7 / math.sqrt(F)))
    return dict(x=x, g1=g1, g2=g2, wq=wq, wk=wk, wv=wv, wo=wo, wg=wg, wu=wu, wd=wd)


def pack_chip(I, P, c):
    """The input tensors of chip c in the kernel's layouts (see kernels/gen/tp_decoder.py)."""
    H, F, NC = P["H"], P["F"], P["NC"]
    KH = H // 128
    HPC = KH // NC
    FPC = F // NC
    FT = FPC // 128
    out = {"xT": np.ascontiguousarray(I["x"].T), "g1": I["g1"], "g2": I["g2"]}
    wqkv = np.zeros((2, HPC, 3, H, 128), np.float32)
    wo = np.zeros((2, KH, 128, HPC, 128), np.float32)
    wgu = np.zeros((2, FT, 2, H, 128), np.float32)
    wd = np.zeros((2, KH, 128, FT, 128), np.float32)
    for li in range(2):
        k = 2 * c + li
        for j in range(HPC):
            cols = slice((k * HPC + j) * 128, (k * HPC + j + 1) * 128)
            for m, w in enumerate((I["wq"], I["wk"], I["wv"])):
                wqkv[li, j, m] = w[:, cols]
            # wo[li, kt, d, j, n] = Wo[(k*HPC+j)*128 + d, kt*128 + n]
            wo[li, :, :, j, :] = I["wo"][cols, :].reshape(128, KH, 128).transpose(1, 0, 2)
        for j in range(FT):
            cols = slice(k * FPC + j * 128, k * FPC + (j + 1) * 128)
            wgu[li, j, 0] = I["wg"][:, cols]
            wgu[li, j, 1] = I["wu"][:, cols]
            # wd[li, kt, p, j, n] = Wd[k*FPC + j*128 + p, kt*128 + n]
            wd[li, :, :, j, :] = I["wd"][cols, :].reshape(128, KH, 128).transpose(1, 0, 2)
    out.update(wqkv=wqkv, wo=wo, wgu=wgu, wd=wd)
    return out


# ---- running --------------------------------------------------------------------------------

def parse_sizes(args, nc):
    P = {"H": 4096, "S": 2048, "F": 14336, "TB": 512, "NXG": 0, "NC": nc}
    for kv in args:
        k, v = kv.split("=", 1)
        if k not in P or k == "NC":
            raise SystemExit(f"unknown size {k!r}")
        P[k] = int(v)
    return P


def cc_summary(stats):
    """(max over cores of cc busy ns, cc busy share of the run, cores used)."""
    t = stats["total_ns"]
    busy = [c["engines"]["cc"]["busy_ns"] for c in stats["cores"]
            if sum(e["instructions"] for e in c["engines"].values()) > 0]
    return max(busy), max(busy) / t, len(busy)


def check(P, ncsim, rtol, atol, ulps=1.0, seed=1, keep=None, extra=(), exact=False):
    work = keep or tempfile.mkdtemp(prefix="ncsim-tp-")
    os.makedirs(work, exist_ok=True)
    try:
        return _check(P, ncsim, rtol, atol, ulps, seed, work, extra, exact)
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def _check(P, ncsim, rtol, atol, ulps, seed, work, extra, exact):
    NC = P["NC"]
    prog = os.path.join(work, f"tp{NC}.nca")
    with open(prog, "w") as f:
        f.write(tp_decoder.generate(P))
    I = make_inputs(P, seed)
    stats_path = os.path.join(work, "stats.json")
    cmd = [ncsim, "run", prog, "--arch", arch_for(NC), "-q", "--stats", stats_path]
    for c in range(NC // 2):
        for name, a in pack_chip(I, P, c).items():
            path = os.path.join(work, f"{name}_c{c}.npy")
            np.save(path, np.ascontiguousarray(a, dtype=np.float32))
            cmd += ["--in", f"{name}_c{c}={path}"]
        cmd += ["--out", f"yT_c{c}={os.path.join(work, f'yT_c{c}.out.npy')}"]
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL tp_decoder NC={NC}: ncsim exited {r.returncode}\n{' '.join(cmd)}\n{r.stdout}{r.stderr}")
        return 3
    with open(stats_path) as f:
        stats = json.load(f)
    X = {k: v.astype(np.float64) for k, v in I.items()}
    want, U = ref_layer(X["x"], X["g1"], X["g2"], X["wq"], X["wk"], X["wv"], X["wo"], X["wg"], X["wu"],
                        X["wd"], NC, kernel_rounding=not exact, with_ulps=True)
    want, U = want.T, U.T
    ok = True
    worst_abs = 0.0
    bad_total = 0
    msg = ""
    for c in range(NC // 2):
        out = np.load(os.path.join(work, f"yT_c{c}.out.npy")).astype(np.float64)
        err = np.abs(out - want)
        bound = atol + rtol * np.abs(want) + ulps * U
        bad = ~(err <= bound)
        bad_total += int(bad.sum())
        if err.max() >= worst_abs:
            worst_abs = float(err.max())
            w = np.unravel_index(np.argmax(err - bound), err.shape)
            rel = err / np.maximum(np.abs(want), 1e-30)
            msg = (f"max_abs={err.max():.3g} max_rel={rel.max():.3g} worst=chip{c}{tuple(int(i) for i in w)} "
                   f"out={out[w]:.7g} ref={want[w]:.7g}")
        ok = ok and not bad.any()
    busy, share, used = cc_summary(stats)
    sizes = " ".join(f"{k}={P[k]}" for k in ("H", "S", "F"))
    print(f"{'ok' if ok else 'FAIL'} tp_decoder NC={NC} {sizes} rtol={rtol:g} atol={atol:g} ulps={ulps:g} "
          f"{msg} bad={bad_total} total_ns={stats['total_ns']:.1f} cc_busy={busy:.1f}ns "
          f"({100 * share:.1f}%) cores={used}")
    return 0 if ok else 1


def timing(P, ncsim, keep=None, extra=()):
    work = keep or tempfile.mkdtemp(prefix="ncsim-tp-")
    os.makedirs(work, exist_ok=True)
    try:
        NC = P["NC"]
        prog = os.path.join(work, f"tp{NC}.nca")
        with open(prog, "w") as f:
            f.write(tp_decoder.generate(P))
        stats_path = os.path.join(work, f"tp{NC}.json")
        cmd = [ncsim, "run", prog, "--arch", arch_for(NC), "--timing-only", "--random-inputs", "1",
               "-q", "--stats", stats_path] + list(extra)
        r = subprocess.run(cmd, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL: ncsim exited {r.returncode}\n{r.stdout}{r.stderr}")
            return 3
        with open(stats_path) as f:
            s = json.load(f)
        t = s["total_ns"]
        busy, share, used = cc_summary(s)
        c0 = s["cores"][0]
        eng = {e: c0["engines"][e]["busy_ns"] / t for e in ("pe", "act", "dve", "pool", "cc")}
        eng["dma"] = c0["dma"]["busy_ns"] / t
        chips = max(1, used // 2)
        hbm = (s["hbm"]["read_bytes"] + s["hbm"]["write_bytes"]) / t / chips
        links = [ln for ln in (s.get("links") or []) if ln.get("bytes", 0) > 0]
        link = max((ln["utilisation"] for ln in links), default=0.0)
        print(f"tp_decoder NC={NC} H={P['H']} S={P['S']} F={P['F']} ({arch_for(NC)}): total {t / 1000:.1f} us, "
              f"MFU {100 * s['mfu']:.1f}%, cc busy (all_reduce) {busy / 1000:.1f} us = {100 * share:.1f}% "
              f"of the run, pe busy {100 * eng['pe']:.1f}% (core 0), HBM {hbm:.0f} GB/s per chip, "
              f"{len(links)} links used, busiest {100 * link:.0f}% busy")
        print(f"| `tp_decoder` {NC} cores ({arch_for(NC)}) H={P['H']} S={P['S']} F={P['F']} | {t / 1000:.1f} us | "
              f"{100 * s['mfu']:.1f}% | {hbm:.0f} | "
              + " / ".join(f"{100 * eng[e]:.0f}" for e in ("pe", "act", "dve", "pool", "dma"))
              + f"% | all_reduce {busy / 1000:.0f} us = {100 * share:.0f}% of the run |")
        return 0
    finally:
        if not keep:
            shutil.rmtree(work, ignore_errors=True)


def main(argv):
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in ("check", "timing"):
        print(__doc__)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    mode = argv[0]
    opts, sizes, extra = {}, [], []
    i = 1
    while i < len(argv):
        a = argv[i]
        if a in ("--ncsim", "--rtol", "--atol", "--ulps", "--seed", "--keep", "--cores"):
            opts[a[2:]] = argv[i + 1]
            i += 2
        elif a == "--exact":
            opts["exact"] = True
            i += 1
        elif a == "--":
            extra = argv[i + 1:]
            break
        elif "=" in a and not a.startswith("-"):
            sizes.append(a)
            i += 1
        else:
            print(f"unexpected argument {a!r}", file=sys.stderr)
            return 2
    P = parse_sizes(sizes, int(opts.get("cores", 2)))
    ncsim = opts.get("ncsim", "ncsim")
    if mode == "timing":
        return timing(P, ncsim, opts.get("keep"), extra)
    return check(P, ncsim, float(opts.get("rtol", 1e-6)), float(opts.get("atol", 2.0 ** -7)),
                 float(opts.get("ulps", 1.0)), int(opts.get("seed", 1)), opts.get("keep"), extra,
                 bool(opts.get("exact")))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
