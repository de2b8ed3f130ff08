#!/usr/bin/python3
r"""NumPy references for the kernels in kernels/, and a checker that runs a kernel in ncsim
at any size and compares its outputs with them.

    /usr/bin/python3 kernels/ref.py list
    /usr/bin/python3 kernels/ref.py check gemm_d_blocked M=512 K=2048 N=2048 \
        --ncsim build/ncsim [--rtol R] [--atol A] [--seed S] [--keep DIR] \
        [--program FILE.nca] [-- EXTRA NCSIM OPTIONS]

`check` writes a copy of the kernel with the given `.let` sizes (kernels/gen/resize.py),
makes seeded random inputs, runs `ncsim run --in ... --out ... --stats ...`, computes the
reference in float64 from the inputs as the kernel sees them (bf16 inputs rounded to bf16
with round-to-nearest-even, exactly as ncsim converts `.npy` fp32 to bf16), and compares
element by element:

    |out - ref| <= atol + rtol * |ref|        (ref in float64, before any output rounding)

--program runs that NCA file instead of the kernel's own (it must have the same inputs and
outputs; the golden cases in tests/golden/ use this). --keep keeps the inputs, outputs and
statistics in DIR. Options after `--` go to `ncsim run` (e.g. `-- --set dve.clock_ghz=0.2`).

It prints one line `ok|FAIL KERNEL max_abs=.. max_rel=.. worst=(index) total_ns=..` and exits
0 when every element passes, 1 otherwise (2 on usage errors, 3 when ncsim fails). The
tolerances are the caller's: the tests (tests/unit/test_kernels.c) say why they are what
they are. Without --rtol/--atol the kernel's default (below) is used.
"""
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "gen"))
import resize  # noqa: E402


# ---- number formats -----------------------------------------------------------------------

def bf16(x):
    """Round float32 values to bfloat16 (round to nearest, ties to even), returned as float32."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    b = x.view(np.uint32).astype(np.uint64)
    r = ((b + 0x7FFF + ((b >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
    out = r.view(np.float32).copy()
    nan = np.isnan(x)
    out[nan] = np.nan
    return out


# ---- references (float64 in, float64 out) -------------------------------------------------

def ref_gemm(lhsT, rhs):
    return lhsT.T @ rhs


def ref_softmax(x):
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def ref_layernorm(x, gamma, beta, eps):
    mean = x.mean(axis=1, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=1, keepdims=True)
    return (x - mean) / np.sqrt(var + eps) * gamma[None, :] + beta[None, :]


def ref_rmsnorm(x, gamma, eps):
    ms = (x * x).mean(axis=1, keepdims=True)
    return x / np.sqrt(ms + eps) * gamma[None, :]


_erf = np.vectorize(math.erf)


def gelu(x):
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def ref_mlp(xT, w1, w2, round_hidden=True):
    """yT = (gelu(x @ w1) @ w2)^T with x = xT^T. The kernel stores the hidden activations
    as bf16 (they are the next matmul's input); round_hidden mimics that."""
    h = gelu(w1.T @ xT)                       # hT [F, T]
    if round_hidden:
        h = bf16(h.astype(np.float32)).astype(np.float64)
    return w2.T @ h                           # yT [D, T]


def ref_flash_attention(qT, kT, v, round_p=False):
    """Causal softmax(q k^T / sqrt(d)) v for one head; qT, kT [d, S], v [S, d]."""
    d, s = qT.shape
    scores = (qT.T @ kT) / math.sqrt(d)
    mask = np.triu(np.ones((s, s), dtype=bool), 1)
    scores[mask] = -np.inf
    p = np.exp(scores - scores.max(axis=1, keepdims=True))
    return (p @ v) / p.sum(axis=1, keepdims=True)


def ref_selective_scan(u, delta, A, B, C, Dskip):
    """Mamba selective scan. u, delta [D, L]; A [D, N]; B, C [N, L]; Dskip [D].
    h[d, n, t] = exp(delta[d, t] A[d, n]) h[d, n, t-1] + delta[d, t] B[n, t] u[d, t]
    y[d, t] = sum_n C[n, t] h[d, n, t] + Dskip[d] u[d, t]"""
    Dn, L = u.shape
    N = A.shape[1]
    h = np.zeros((Dn, N))
    y = np.zeros((Dn, L))
    for t in range(L):
        dA = np.exp(delta[:, t:t + 1] * A)
        dBu = (delta[:, t] * u[:, t])[:, None] * B[None, :, t]
        h = dA * h + dBu
        y[:, t] = h @ C[:, t]
    return y + Dskip[:, None] * u


# ---- kernel registry ----------------------------------------------------------------------
#
# The default tolerances are those of tests/unit/test_kernels.c, which justifies them.
# inputs: name -> (shape(params), dtype as declared in the kernel, generator(rng, shape))
# outputs: name -> (shape(params), dtype as declared)
# ref: function(params, inputs as float64 after the kernel's input rounding) -> {out: array}

def _uniform(lo=-1.0, hi=1.0):
    return lambda rng, shape: rng.uniform(lo, hi, size=shape).astype(np.float32)


def _gemm_entry(name):
    return {
        "file": name + ".nca",
        "inputs": {
            "lhsT": (lambda p: (p["K"], p["M"]), "bf16", _uniform()),
            "rhs": (lambda p: (p["K"], p["N"]), "bf16", _uniform()),
        },
        "outputs": {"result": (lambda p: (p["M"], p["N"]), "bf16")},
        "ref": lambda p, x: {"result": ref_gemm(x["lhsT"], x["rhs"])},
        "rtol": 2.0 ** -8, "atol": 1e-3,
    }


KERNELS = {
    "gemm_a_tiled": _gemm_entry("gemm_a_tiled"),
    "gemm_b_hoisted": _gemm_entry("gemm_b_hoisted"),
    "gemm_c_blockfree": _gemm_entry("gemm_c_blockfree"),
    "gemm_d_blocked": _gemm_entry("gemm_d_blocked"),
    "softmax": {
        "file": "softmax.nca",
        "inputs": {"x": (lambda p: (p["R"], p["C"]), "fp32", _uniform(-8.0, 8.0))},
        "outputs": {"y": (lambda p: (p["R"], p["C"]), "fp32")},
        "ref": lambda p, x: {"y": ref_softmax(x["x"])},
        "rtol": 1e-4, "atol": 1e-12,
    },
    "layernorm": {
        "file": "layernorm.nca",
        "inputs": {
            "x": (lambda p: (p["R"], p["D"]), "fp32", _uniform(-2.0, 3.0)),
            "gamma": (lambda p: (p["D"],), "fp32", _uniform(0.5, 1.5)),
            "beta": (lambda p: (p["D"],), "fp32", _uniform(-0.5, 0.5)),
        },
        "outputs": {"y": (lambda p: (p["R"], p["D"]), "fp32")},
        "ref": lambda p, x: {"y": ref_layernorm(x["x"], x["gamma"], x["beta"], 1e-5)},
        "rtol": 1e-4, "atol": 2e-4,
    },
    "rmsnorm": {
        "file": "rmsnorm.nca",
        "inputs": {
            "x": (lambda p: (p["R"], p["D"]), "fp32", _uniform(-2.0, 2.0)),
            "gamma": (lambda p: (p["D"],), "fp32", _uniform(0.5, 1.5)),
        },
        "outputs": {"y": (lambda p: (p["R"], p["D"]), "fp32")},
        "ref": lambda p, x: {"y": ref_rmsnorm(x["x"], x["gamma"], 1e-6)},
        "rtol": 1e-4, "atol": 1e-7,
    },
    "mlp": {
        "file": "mlp.nca",
        "inputs": {
            "xT": (lambda p: (p["D"], p["T"]), "bf16", _uniform()),
            "w1": (lambda p: (p["D"], p["F"]), "bf16", lambda rng, s: _uniform()(rng, s) / np.sqrt(s[0])),
            "w2": (lambda p: (p["F"], p["D"]), "bf16", lambda rng, s: _uniform()(rng, s) / np.sqrt(s[0])),
        },
        "outputs": {"yT": (lambda p: (p["D"], p["T"]), "bf16")},
        "ref": lambda p, x: {"yT": ref_mlp(x["xT"], x["w1"], x["w2"])},
        "rtol": 2.0 ** -8, "atol": 5e-4,
    },
    "flash_attention": {
        "file": "flash_attention.nca",
        "inputs": {
            "qT": (lambda p: (p["DH"], p["S"]), "bf16", _uniform(-2.0, 2.0)),
            "kT": (lambda p: (p["DH"], p["S"]), "bf16", _uniform(-2.0, 2.0)),
            "v": (lambda p: (p["S"], p["DH"]), "bf16", _uniform()),
        },
        "outputs": {"o": (lambda p: (p["S"], p["DH"]), "bf16")},
        "ref": lambda p, x: {"o": ref_flash_attention(x["qT"], x["kT"], x["v"])},
        "rtol": 2.0 ** -8, "atol": 2.0 ** -7,
    },
    "selective_scan": {
        "file": "selective_scan.nca",
        "inputs": {
            "u": (lambda p: (p["D"], p["L"]), "fp32", _uniform()),
            "delta": (lambda p: (p["D"], p["L"]), "fp32", _uniform(0.01, 0.2)),
            "A": (lambda p: (p["D"], p["NS"]), "fp32", _uniform(-4.0, -0.5)),
            "B": (lambda p: (p["NS"], p["L"]), "bf16", _uniform()),
            "C": (lambda p: (p["NS"], p["L"]), "bf16", _uniform()),
            "Dskip": (lambda p: (p["D"],), "fp32", _uniform()),
        },
        "outputs": {"y": (lambda p: (p["D"], p["L"]), "fp32")},
        "ref": lambda p, x: {"y": ref_selective_scan(x["u"], x["delta"], x["A"], x["B"], x["C"],
                                                     x["Dskip"])},
        "rtol": 1e-4, "atol": 1e-4,
    },
}


# ---- running a kernel ---------------------------------------------------------------------

def let_values(text):
    """The integer literal `.let NAME = VALUE` constants of a kernel (first binding wins)."""
    vals = {}
    for m in re.finditer(r"^\s*\.let\s+([A-Za-z_]\w*)\s*=\s*([0-9_]+|0x[0-9a-fA-F_]+)\s*(;.*)?$",
                         text, re.M):
        if m.group(1) not in vals:
            vals[m.group(1)] = int(m.group(2).replace("_", ""), 0)
    return vals


def make_inputs(entry, params, seed):
    rng = np.random.default_rng(seed)
    raw, seen = {}, {}
    for name, (shape, dtype, gen) in entry["inputs"].items():
        a = gen(rng, shape(params)).astype(np.float32)
        raw[name] = a
        seen[name] = (bf16(a) if dtype == "bf16" else a).astype(np.float64)
    return raw, seen


def check(kernel, sizes, ncsim, rtol=None, atol=None, seed=1, keep=None, extra=(),
          program=None):
    """Run `kernel` (or the NCA file `program`, which has the kernel's inputs and outputs)
    at `sizes` and compare with the reference; returns the exit code described above. The
    work directory is removed afterwards unless it is `keep`."""
    if keep:
        return _check(kernel, sizes, ncsim, rtol, atol, seed, keep, extra, program)
    work = tempfile.mkdtemp(prefix="ncsim-kernel-")
    try:
        return _check(kernel, sizes, ncsim, rtol, atol, seed, work, extra, program)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _check(kernel, sizes, ncsim, rtol, atol, seed, work, extra, program):
    entry = KERNELS[kernel]
    rtol = entry["rtol"] if rtol is None else rtol
    atol = entry["atol"] if atol is None else atol
    with open(program or os.path.join(HERE, entry["file"])) as f:
        text = resize.resize(f.read(), sizes)
    params = let_values(text)
    os.makedirs(work, exist_ok=True)
    prog = os.path.join(work, kernel + ".nca")
    with open(prog, "w") as f:
        f.write(text)
    raw, seen = make_inputs(entry, params, seed)
    cmd = [ncsim, "run", prog, "-q", "--stats", os.path.join(work, "stats.json")]
    for name, a in raw.items():
        path = os.path.join(work, name + ".npy")
        np.save(path, a)
        cmd += ["--in", f"{name}={path}"]
    for name in entry["outputs"]:
        cmd += ["--out", f"{name}={os.path.join(work, name + '.out.npy')}"]
    cmd += list(extra)
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        print(f"FAIL {kernel}: ncsim exited {r.returncode}\n{r.stdout}{r.stderr}")
        return 3
    with open(os.path.join(work, "stats.json")) as f:
        stats = json.load(f)
    ref = entry["ref"](params, seen)
    ok = True
    msgs = []
    for name, (shape, _dtype) in entry["outputs"].items():
        out = np.load(os.path.join(work, name + ".out.npy")).astype(np.float64)
        want = ref[name]
        if out.shape != tuple(shape(params)):
            print(f"FAIL {kernel}: {name} has shape {out.shape}, expected {shape(params)}")
            return 1
        err = np.abs(out - want)
        bound = atol + rtol * np.abs(want)
        bad = ~(err <= bound)
        worst = np.unravel_index(np.argmax(err - bound), err.shape)
        rel = err / np.maximum(np.abs(want), 1e-30)
        msgs.append(f"{name}: max_abs={err.max():.3g} max_rel={rel.max():.3g} "
                    f"worst={tuple(int(i) for i in worst)} out={out[worst]:.7g} "
                    f"ref={want[worst]:.7g} bad={int(bad.sum())}/{bad.size}")
        ok = ok and not bad.any()
    print(f"{'ok' if ok else 'FAIL'} {kernel} {' '.join(f'{k}={v}' for k, v in sizes.items())} "
          f"rtol={rtol:g} atol={atol:g} total_ns={stats['total_ns']} " + "; ".join(msgs))
    return 0 if ok else 1


def main(argv):
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    if argv[0] == "list":
        for k, e in KERNELS.items():
            print(k, e["file"])
        return 0
    if argv[0] != "check" or len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    kernel = argv[1]
    if kernel not in KERNELS:
        print(f"unknown kernel {kernel!r}; see `ref.py list`", file=sys.stderr)
        return 2
    sizes, opts, extra = {}, {}, []
    i = 2
    while i < len(argv):
        a = argv[i]
        if a in ("--ncsim", "--rtol", "--atol", "--seed", "--keep", "--program"):
            opts[a[2:]] = argv[i + 1]
            i += 2
        elif a == "--":
            extra = argv[i + 1:]
            break
        elif "=" in a and not a.startswith("-"):
            k, v = a.split("=", 1)
            sizes[k] = v
            i += 1
        else:
            print(f"unexpected argument {a!r}", file=sys.stderr)
            return 2
    return check(kernel, sizes, opts.get("ncsim", "ncsim"),
                 float(opts["rtol"]) if "rtol" in opts else None,
                 float(opts["atol"]) if "atol" in opts else None,
                 int(opts.get("seed", 1)), opts.get("keep"), extra, opts.get("program"))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
