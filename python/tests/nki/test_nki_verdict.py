"""One bottleneck verdict (issue 24, item 6): for kernels whose bound is known by construction,
the runner's verdict names it, from the run's trace and from its statistics, and it is the verdict
`ncsim report` gives on the same files (the C report through the library: one implementation).

    copy_rows     [128, C] fp32 tiles in and out. At C = 128 (small loads): 128 pieces of 512 B
                  a transfer, 1120 ns of the DMA engines' descriptor stages against 275 ns of
                  data -- descriptor-bound. At C = 8192 (large loads): 32 KiB pieces -- the DMA
                  engines' bandwidth
    matmuls       64 bf16 matmuls [128, 128] x [128, 512] on resident tiles -- the tensor engine
    vector_chain  48 dependent elementwise steps on one [128, 2048] fp32 tile -- the engine that
                  runs them
"""
import json
import os
import subprocess
import sys

import pytest

import ncsim

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
RUNNER = [sys.executable, "-m", "ncsim.nki", "run"]

KERNELS = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa


@nki.jit
def copy_rows(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(a.shape[0] // 128):
        t = nl.load(a[i * 128:(i + 1) * 128, :])
        nl.store(out[i * 128:(i + 1) * 128, :], value=t)
    return out


@nki.jit
def matmuls(a, b):
    out = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    ta = nl.load(a)
    tb = nl.load(b)
    acc = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for i in nl.affine_range(64):
        acc += nisa.nc_matmul(ta, tb)
    nl.store(out, value=acc)
    return out


@nki.jit
def vector_chain(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    for i in range(48):
        t = nl.multiply(t, 1.0001)
    nl.store(out, value=t)
    return out
"""

# kernel, its arguments, the bound from the trace (critical path), from statistics (busy time)
CASES = [
    ("copy_rows", ["rand:4096x128"], "DMA descriptors", "DMA descriptors"),
    ("copy_rows", ["rand:1024x8192"], "DMA engines (bandwidth)", "DMA transfers"),
    ("matmuls", ["rand:128x128:bfloat16", "rand:128x512:bfloat16"], "engine pe", "engine pe"),
    ("vector_chain", ["rand:128x2048"], "engine act", "engine act"),
]


def run(tmp_path, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run(RUNNER + list(args), cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def printed(out):
    """(bottleneck, verdict) as the runner prints them."""
    first = out.splitlines()[0]
    assert "; bottleneck " in first, out
    verdict = [ln[len("verdict: "):] for ln in out.splitlines() if ln.startswith("verdict: ")]
    assert len(verdict) == 1, out
    return first.rsplit("; bottleneck ", 1)[1], verdict[0]


def cli_verdict(tmp_path, path):
    """The verdict line of the `ncsim` command next to the library, when it is there."""
    cmd = os.path.join(os.path.dirname(ncsim.library_path), "ncsim")
    if not os.path.exists(cmd):
        return None
    out = subprocess.run([cmd, "report", path], cwd=tmp_path, capture_output=True,
                         text=True).stdout
    lines = [ln[len("verdict: "):] for ln in out.splitlines() if ln.startswith("verdict: ")]
    assert len(lines) == 1, out
    return lines[0]


@pytest.mark.parametrize("name, args, from_trace, from_stats", CASES,
                         ids=[c[0] + ":" + c[1][0].split(":")[1] for c in CASES])
def test_verdict_names_the_bound(tmp_path, name, args, from_trace, from_stats):
    (tmp_path / "k.py").write_text(KERNELS)
    argv = ["k.py", name] + [x for a in args for x in ("--arg", a)] + ["--benchmark"]
    # one run, a trace and a statistics file: the runner reports on the trace
    out = run(tmp_path, *argv, "--trace", "t.pftrace", "--stats", "s.json")
    bott, verdict = printed(out)
    rep = ncsim.report(str(tmp_path / "t.pftrace"))
    assert bott == from_trace == rep["bounds"][0]["what"], (out, rep["bounds"][:3])
    assert verdict == rep["verdict"] and "% of the critical path" in verdict
    cli = cli_verdict(tmp_path, "t.pftrace")
    assert cli is None or cli == verdict
    # the statistics file of that run: `ncsim report` names the bound by busy time
    srep = ncsim.report(str(tmp_path / "s.json"))
    assert srep["bounds"][0]["what"] == from_stats, srep["bounds"][:3]
    cli = cli_verdict(tmp_path, "s.json")
    assert cli is None or cli == srep["verdict"]
    # a run with statistics only: the runner prints that verdict
    out = run(tmp_path, *argv, "--stats", "s2.json")
    bott, verdict = printed(out)
    assert bott == from_stats and verdict == ncsim.report(str(tmp_path / "s2.json"))["verdict"]
    assert "(busy time, from statistics)" in verdict


def test_descriptor_bound_figures(tmp_path):
    """The descriptor-bound stream by hand: 32 loads and 32 stores of [128, 128] fp32, each 128
    descriptors of 140 ns (trn1's dma.descriptor_ns) over the 16 DMA engines = 1120 ns, keep
    the descriptor stages busy 64 x 1120 ns; the data moves a quarter of that time. The verdict's
    time from statistics is that figure. On the critical path each transfer's trigger latency
    (870 + 200 ns) runs while the other buffer's transfer keeps the descriptor stages at work, so
    it is descriptor time; only the first load's latency, before any descriptor, is the
    trigger latency's (docs/explain.md, "How the verdict is made")."""
    (tmp_path / "k.py").write_text(KERNELS)
    run(tmp_path, "k.py", "copy_rows", "--arg", "rand:4096x128", "--benchmark",
        "--trace", "t.pftrace", "--stats", "s.json")
    st = json.loads((tmp_path / "s.json").read_text())
    dma = st["cores"][0]["dma"]
    assert dma["transfers"] == 64
    assert dma["descriptor_busy_ns"] == pytest.approx(64 * 128 * 140.0 / 16, abs=1e-3)
    assert dma["busy_ns"] < 0.3 * st["total_ns"]
    srep = ncsim.report(str(tmp_path / "s.json"))
    b = srep["bounds"][0]
    assert b["what"] == "DMA descriptors"
    assert b["time_ns"] == pytest.approx(64 * 1120.0, abs=1e-3)
    assert b["share_pct"] == pytest.approx(100 * 64 * 1120.0 / st["total_ns"], abs=1e-3)
    trep = ncsim.report(str(tmp_path / "t.pftrace"))
    shares = {x["what"]: x["share_pct"] for x in trep["bounds"]}
    times = {x["what"]: x["time_ns"] for x in trep["bounds"]}
    assert trep["bounds"][0]["what"] == "DMA descriptors"
    assert trep["total_ns"] == pytest.approx(1070.0 + 64 * 1120.0, abs=1e-3)
    assert times["DMA trigger latency"] == pytest.approx(1070.0, abs=1e-3)
    assert shares["DMA descriptors"] > 95 and shares.get("engine sp", 0) < 5


def test_matmul_bound_figures(tmp_path):
    """64 bf16 matmuls with N = 512 at one column a cycle, 512 cycles of trn1's 2.8 GHz each, and
    the first weight load, 128 rows at pe.ldweights_speedup 4 = 32 cycles (the other 63 load in
    the background of the matmul before them)."""
    (tmp_path / "k.py").write_text(KERNELS)
    run(tmp_path, "k.py", "matmuls", "--arg", "rand:128x128:bfloat16",
        "--arg", "rand:128x512:bfloat16", "--benchmark", "--stats", "s.json")
    srep = ncsim.report(str(tmp_path / "s.json"))
    assert srep["bounds"][0]["what"] == "engine pe"
    assert srep["bounds"][0]["time_ns"] == pytest.approx((64 * 512 + 32) / 2.8, abs=0.1)
