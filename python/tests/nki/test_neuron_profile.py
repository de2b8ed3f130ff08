"""The profiling drop-in: nki.baremetal/benchmark/profile with the SDK's keyword arguments, and the
`neuron-profile view` interface (python -m ncsim.neuron_profile, installed as
ncsim-neuron-profile), the way kernel-optimising harnesses call them."""
import json
import os
import stat
import subprocess
import sys

import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.language as nl
import ncsim
from ncsim.nki.examples.matmul_basic import nki_matmul_basic_, reference

PYDIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ROOT = os.path.dirname(PYDIR)


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = PYDIR + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def _command(*args, **kw):
    return subprocess.run([sys.executable, "-m", "ncsim.neuron_profile", *args], env=_env(),
                          capture_output=True, text=True, **kw)


def _inputs():
    rng = np.random.default_rng(0)
    lhsT = np.ascontiguousarray(rng.random((64, 128), dtype=np.float32).T)
    rhs = rng.random((128, 512), dtype=np.float32)
    return lhsT, rhs


def test_harness_calls_baremetal_then_the_command(tmp_path):
    """What AccelOpt-style loops do: baremetal with NEFF/NTFF paths in a fresh directory and
    compiler options, then `neuron-profile view --output-format summary-json -n -s` with stdout
    redirected to a file, and `total_time` of the first key."""
    lhsT, rhs = _inputs()
    neff, ntff = str(tmp_path / "file.neff"), str(tmp_path / "profile.ntff")
    out = nki.baremetal(nki_matmul_basic_, save_neff_name=neff, save_trace_name=ntff,
                        additional_compile_opt="--disable-dge --logical-nc-config=1")(lhsT, rhs)
    np.testing.assert_allclose(out, reference(lhsT, rhs), rtol=1e-5)
    assert os.path.getsize(neff) > 0 and os.path.getsize(ntff) > 0
    with open(tmp_path / "summary.json", "w") as f:
        p = subprocess.run([sys.executable, "-m", "ncsim.neuron_profile", "view",
                            "--output-format", "summary-json", "-n", neff, "-s", ntff],
                           env=_env(), stdout=f, stderr=subprocess.PIPE, text=True)
    assert p.returncode == 0, p.stderr
    with open(tmp_path / "summary.json") as f:
        data = json.load(f)
    summary = data[list(data.keys())[0]]
    latency_ms = summary["total_time"] * 1000.0
    # the same run's statistics, read through another path (ncsim.run of the saved .ncx)
    r = ncsim.run(ncsim.load(neff), {"lhsT": lhsT, "rhs": rhs}, timing_only=True)
    assert latency_ms == pytest.approx(r.time_ns * 1e-6, rel=1e-9)
    # bytes by hand: both operands read once, the [64, 512] fp32 result written once
    assert summary["hbm_read_bytes"] == lhsT.nbytes + rhs.nbytes
    assert summary["hbm_write_bytes"] == 64 * 512 * 4
    # FLOPs by formula: K M N multiply-adds, 4 FLOPs each in fp32 (as trn1 profiles count)
    assert summary["hardware_flops"] == 4 * 128 * 64 * 512
    assert summary["model_flops"] == 2 * 128 * 64 * 512
    assert summary["transpose_flops"] == 0
    peak = 2 * 128 * 128 * 2.8e9
    assert summary["hfu_estimated_percent"] == pytest.approx(
        summary["hardware_flops"] / (peak * summary["total_time"]), rel=1e-9)
    for k in ("scalar", "vector", "gpsimd"):
        assert 0.0 <= summary[f"{k}_engine_active_time_percent"] <= 1.0
    # the sixteen fields such loops copy are all there
    for k in ("hbm_read_bytes", "hbm_write_bytes", "psum_read_bytes", "psum_write_bytes",
              "sbuf_read_bytes", "sbuf_write_bytes", "spill_reload_bytes", "spill_save_bytes",
              "hardware_flops", "transpose_flops", "peak_flops_bandwidth_ratio",
              "mm_arithmetic_intensity", "hfu_estimated_percent",
              "scalar_engine_active_time_percent", "vector_engine_active_time_percent",
              "gpsimd_engine_active_time_percent"):
        assert isinstance(summary[k], (int, float)), k
    assert summary["is_simulation"] is True


def test_options_are_recorded_never_errors(tmp_path):
    lhsT, rhs = _inputs()
    ntff = str(tmp_path / "p.ntff")
    art = tmp_path / "artifacts"
    k = nki.baremetal(nki_matmul_basic_, save_trace_name=ntff, artifacts_dir=str(art),
                      additional_compile_opt="--auto-cast=none", debug_kernel=True,
                      some_future_option={"x": 1})
    k(lhsT, rhs)
    rec = json.load(open(ntff + ".ncsim.json"))
    assert rec["simulated"] is True and rec["kernel"] == "nki_matmul_basic_"
    assert rec["options"]["additional_compile_opt"] == "--auto-cast=none"
    assert rec["options"]["some_future_option"] == {"x": 1}
    assert rec["options"]["debug_kernel"] is True
    assert sorted(os.listdir(art)) == ["ncsim_options.json", "nki_matmul_basic_.nca"]
    assert k.artifacts["ntff"] == ntff
    # no names: nothing written (the SDK deletes both files after the run)
    before = set(os.listdir(tmp_path))
    nki.baremetal(nki_matmul_basic_)(lhsT, rhs)
    assert set(os.listdir(tmp_path)) == before


def test_benchmark_and_profile_write_the_artifacts(tmp_path):
    lhsT, rhs = _inputs()
    neff, ntff = str(tmp_path / "b.neff"), str(tmp_path / "b.ntff")
    bench = nki.benchmark(warmup=2, iters=3, save_neff_name=neff, save_trace_name=ntff)(
        nki_matmul_basic_)
    bench(lhsT, rhs)
    us = bench.benchmark_result.nc_latency.get_latency_percentile(50)
    p = _command("view", "--output-format", "summary-json", "-n", neff, "-s", ntff)
    assert p.returncode == 0, p.stderr
    s = next(iter(json.loads(p.stdout).values()))
    assert s["total_time"] * 1e6 == pytest.approx(us, rel=1e-9)
    wd = tmp_path / "prof"
    prof = nki.profile(working_directory=str(wd), save_neff_name="file.neff",
                       save_trace_name="profile.ntff")(nki_matmul_basic_)
    prof(lhsT, rhs)
    assert {"file.neff", "profile.ntff", "nki_matmul_basic__neuron_profile.json"} <= set(
        os.listdir(wd))
    s2 = next(iter(json.load(open(wd / "nki_matmul_basic__neuron_profile.json")).values()))
    assert s2["total_time"] == pytest.approx(s["total_time"], rel=1e-9)


@pytest.fixture(scope="module")
def run_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("np")
    lhsT, rhs = _inputs()
    neff, ntff = str(d / "file.neff"), str(d / "profile.ntff")
    nki.baremetal(nki_matmul_basic_, save_neff_name=neff, save_trace_name=ntff)(lhsT, rhs)
    return d, neff, ntff


def test_command_formats(run_files, tmp_path):
    d, neff, ntff = run_files
    # json: the summary as a list, and one record per instruction and transfer
    out = str(tmp_path / "full.json")
    p = _command("view", "--output-format", "json", "-n", neff, "-s", ntff, "--output-file", out)
    assert p.returncode == 0, p.stderr
    full = json.load(open(out))
    assert isinstance(full["summary"], list) and full["summary"][0]["total_time"] > 0
    ops = [r["opcode"] for r in full["instruction"]]
    assert "matmul" in ops and all(r["duration"] >= 0 for r in full["instruction"])
    assert any(r["label"] == "Tensor" for r in full["instruction"])
    # summary-text, the default
    p = _command("view", "-n", neff, "-s", ntff)
    assert p.returncode == 0 and "hbm_read_bytes" in p.stdout and "simulated" in p.stdout
    # -d: a session directory with one NTFF
    p = _command("view", "-d", str(d), "--output-format", "summary-json")
    assert p.returncode == 0, p.stderr
    assert next(iter(json.loads(p.stdout).values()))["inputs_and_weights_size_bytes"] == \
        128 * 64 * 4 + 128 * 512 * 4
    p = _command("view", "--terminology")
    assert p.returncode == 0 and "mm_arithmetic_intensity" in p.stdout
    assert len(ncsim.profile_fields()) == sum(1 for ln in p.stdout.splitlines()
                                             if ln.split() and ln.split()[0] in
                                             {f[0] for f in ncsim.profile_fields()})


def test_command_errors(run_files, tmp_path):
    d, neff, ntff = run_files
    cases = [
        (["view", "--output-format", "db", "-s", ntff], 2, "no profile database"),
        (["view", "--output-format", "summary-json", "-s", str(tmp_path / "none.ntff")], 3,
         "cannot open"),
        (["view", "--output-format", "summary-json"], 2, "needs -s NTFF"),
        (["view", "--output-format", "summary-json", "-s", ntff, "-n", ntff], 2,
         "not a NEFF compiled by neuronx-cc"),
        (["view", "--output-format", "summary-json", "-s", ntff, "--nc-idx", "1"], 2,
         "core 1 ran nothing"),
        (["view", "--bogus"], 2, "unknown arguments"),
        ([], 2, "usage"),
    ]
    for args, rc, says in cases:
        p = _command(*args)
        assert p.returncode == rc, (args, p.returncode, p.stderr)
        assert says in p.stderr, (args, p.stderr)
        assert "Traceback" not in p.stderr


def test_capture_then_view(run_files, tmp_path):
    d, neff, ntff = run_files
    cap = str(tmp_path / "cap.ntff")
    p = _command("capture", "-n", neff, "-s", cap)
    assert p.returncode == 0, p.stderr
    a = _command("view", "--output-format", "summary-json", "-s", cap)
    b = _command("view", "--output-format", "summary-json", "-s", ntff)
    ta = next(iter(json.loads(a.stdout).values()))["total_time"]
    tb = next(iter(json.loads(b.stdout).values()))["total_time"]
    assert ta == pytest.approx(tb, rel=1e-9)   # timing does not depend on the values


def test_install_alias(run_files, tmp_path):
    d, neff, ntff = run_files
    bindir = tmp_path / "bin"
    clean = dict(_env(), PATH="/usr/bin:/bin")
    p = subprocess.run([sys.executable, "-m", "ncsim.neuron_profile", "install-alias", str(bindir)],
                       env=clean, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    alias = bindir / "neuron-profile"
    assert os.stat(alias).st_mode & stat.S_IXUSR
    # a harness with the directory on PATH runs `neuron-profile` and gets the summary
    env = dict(clean, PATH=f"{bindir}:/usr/bin:/bin")
    q = subprocess.run(["neuron-profile", "view", "--output-format", "summary-json", "-n", neff,
                        "-s", ntff], env=env, capture_output=True, text=True)
    assert q.returncode == 0, q.stderr
    assert next(iter(json.loads(q.stdout).values()))["total_time"] > 0
    # installing again over our own alias is fine
    p = subprocess.run([sys.executable, "-m", "ncsim.neuron_profile", "install-alias", str(bindir)],
                       env=clean, capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    # a real neuron-profile on PATH: refused, nothing written
    real = tmp_path / "real"
    real.mkdir()
    (real / "neuron-profile").write_text("#!/bin/sh\necho real\n")
    os.chmod(real / "neuron-profile", 0o755)
    other = tmp_path / "other"
    p = subprocess.run([sys.executable, "-m", "ncsim.neuron_profile", "install-alias", str(other)],
                       env=dict(clean, PATH=f"{real}:/usr/bin:/bin"), capture_output=True,
                       text=True)
    assert p.returncode == 1 and "a real neuron-profile is on PATH" in p.stderr
    assert not (other / "neuron-profile").exists()
    # a file of that name that is not ours is never replaced
    (other).mkdir()
    (other / "neuron-profile").write_text("someone else's\n")
    p = subprocess.run([sys.executable, "-m", "ncsim.neuron_profile", "install-alias", str(other)],
                       env=clean, capture_output=True, text=True)
    assert p.returncode == 1 and "not ncsim's alias" in p.stderr
    assert (other / "neuron-profile").read_text() == "someone else's\n"


def test_setup_installs_the_command():
    setup = open(os.path.join(PYDIR, "setup.py")).read()
    assert "ncsim-neuron-profile = ncsim.neuron_profile:main" in setup


def _doc():
    with open(os.path.join(ROOT, "docs", "nki.md")) as f:
        return f.read()


def test_docs_table_lists_every_field():
    """docs/nki.md's table names every field the summary has (from the C side's one table)."""
    import re
    doc = _doc()
    table = doc.split("### The summary's fields", 1)[1].split("\n## ", 1)[0]
    named = set()
    for tok in re.findall(r"`([^`]+)`", table):
        m = re.fullmatch(r"\{([a-z_,]+)\}(\w+)", tok)
        named.update(a + m.group(2) for a in m.group(1).split(",")) if m else named.add(tok)
    missing = [k for k, _, _, _ in ncsim.profile_fields() if k not in named]
    assert not missing, f"docs/nki.md does not describe {missing}"


def test_docs_profile_loop_runs(tmp_path):
    """The optimisation loop of docs/nki.md, as printed there, runs to the end."""
    block = _doc().split("<!-- example: profile loop -->\n```python\n", 1)[1].split(
        "```\n<!-- end example -->", 1)[0]
    script = tmp_path / "loop.py"
    script.write_text(block)
    p = subprocess.run([sys.executable, str(script)], env=_env(), capture_output=True, text=True,
                       cwd=tmp_path, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert lines[0].split()[0] == "total_time" and lines[-1].startswith("speed-up ")
    t1, t2 = (float(x) for x in lines[0].split()[1:])
    assert t2 < t1   # the hoisted candidate is faster


def test_a_failing_kernel_leaves_no_files(tmp_path):
    """A candidate that does not compile raises (the harness counts a compile failure) and
    leaves neither NEFF, NTFF nor a temporary trace."""
    import ncsim.nki.language as nl

    @nki.jit
    def bad(a):
        out = nl.ndarray((256, 64), dtype=a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a[0:256, :]))   # 256 partitions: too many
        return out
    with pytest.raises(nki.NkiError):
        nki.baremetal(bad, save_neff_name=str(tmp_path / "file.neff"),
                      save_trace_name=str(tmp_path / "profile.ntff"))(
            np.zeros((256, 64), np.float32))
    assert os.listdir(tmp_path) == []


def _bf16_round(a):
    """fp32 -> bf16 -> fp32 by hand: round to nearest, ties to even, on the upper 16 bits."""
    u = a.astype(np.float32).view(np.uint32)
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return u.astype(np.uint32).view(np.float32)


def _cast_kernel(out_dtype):
    @nki.jit
    def cast_load_store(x):
        """An fp32 input loaded as bf16 (a converting load), stored into an `out_dtype` output
        (a converting store for fp32)."""
        out = nl.ndarray(x.shape, dtype=out_dtype, buffer=nl.shared_hbm)
        t = nl.load(x, dtype=nl.bfloat16)
        nl.store(out, value=t)
        return out
    return cast_load_store


@pytest.mark.parametrize("out_dtype", ["float32", "bfloat16"])
def test_converting_transfers_count_each_side(tmp_path, out_dtype):
    """A load that converts fp32 -> bf16 reads 4 bytes per element of HBM and writes 2 of SBUF;
    a store of that bf16 tile into an fp32 output reads 2 of SBUF and writes 4 of HBM
    (docs/cost-model.md 9.3). The profile summary (from the trace) and the statistics (from
    the run) agree on every figure, counted by hand."""
    x = np.random.default_rng(0).random((128, 512), dtype=np.float32)
    kern = _cast_kernel(getattr(nl, out_dtype))
    ntff, neff = str(tmp_path / f"{out_dtype}.ntff"), str(tmp_path / f"{out_dtype}.neff")
    out = nki.baremetal(kern, save_neff_name=neff, save_trace_name=ntff)(x)
    # the values: x rounded to bf16 (and back to fp32 for an fp32 output)
    got = np.asarray(out, dtype=np.float32)
    np.testing.assert_array_equal(got, _bf16_round(x))
    n = 128 * 512
    out_bytes = 4 * n if out_dtype == "float32" else 2 * n
    p = _command("view", "--output-format", "summary-json", "-n", neff, "-s", ntff)
    assert p.returncode == 0, p.stderr
    s = next(iter(json.loads(p.stdout).values()))
    assert s["hbm_read_bytes"] == 4 * n            # the fp32 source, not the bf16 tile
    assert s["hbm_write_bytes"] == out_bytes
    assert s["input_queue_bytes"] == 4 * n
    assert s["output_queue_bytes"] == out_bytes
    assert s["sbuf_write_bytes"] == 2 * n          # the bf16 tile, written once
    assert s["sbuf_read_bytes"] == 2 * n           # and read once by the store
    r = ncsim.run(ncsim.load(neff), {"x": x}, timing_only=True)
    assert r.summary["hbm_read_bytes"] == 4 * n
    assert r.summary["hbm_write_bytes"] == out_bytes
    assert r.summary["dma_bytes"] == 2 * n + out_bytes  # what the two transfers delivered
