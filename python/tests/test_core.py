"""The ncsim package against NumPy: numerics, every tensor, layouts, errors with locations,
several simulators, progress and cancellation."""
import json
import os
import threading

import numpy as np
import pytest

import ncsim

SRC_DIR = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_version_and_presets():
    assert ncsim.version().count(".") == 2
    assert "trn1" in ncsim.presets() and "inf2" in ncsim.presets()


def test_add_matches_numpy(add_src):
    rng = np.random.default_rng(1)
    a = rng.standard_normal((128, 64)).astype(np.float32)
    b = rng.standard_normal((128, 64)).astype(np.float32)
    r = ncsim.run(add_src, {"a": a, "b": b})
    np.testing.assert_array_equal(r.outputs["c"], a + b)
    assert r.time_ns > 0
    assert r.stats["total_ns"] == pytest.approx(r.time_ns)
    assert r.stats["instructions"] == 4


def test_every_tensor_readable(add_src):
    a = np.full((128, 64), 2.0, np.float32)
    b = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    r = ncsim.run(add_src, {"a": a, "b": b})
    np.testing.assert_array_equal(r.tensor("ta"), a)  # SBUF
    np.testing.assert_array_equal(r.tensor("tb"), b)
    np.testing.assert_array_equal(r.tensor("tc"), a + b)
    np.testing.assert_array_equal(r.tensor("a"), a)  # HBM input
    bits = r.tensor("c", raw=True)
    assert bits.dtype == np.uint32
    np.testing.assert_array_equal(bits.view(np.float32), a + b)


def test_fortran_order_and_strided_inputs(add_src):
    rng = np.random.default_rng(2)
    a = np.asfortranarray(rng.standard_normal((128, 64)).astype(np.float32))
    big = rng.standard_normal((256, 128)).astype(np.float32)
    b = big[::2, ::2]  # non-contiguous view
    assert not b.flags.c_contiguous and not a.flags.c_contiguous
    r = ncsim.run(add_src, {"a": a, "b": b})
    np.testing.assert_array_equal(r.outputs["c"], a + b)


def test_float64_inputs_are_converted(add_src):
    a = np.linspace(-1, 1, 128 * 64).reshape(128, 64)  # float64
    r = ncsim.run(add_src, {"a": a, "b": a})
    np.testing.assert_array_equal(r.outputs["c"], (a.astype(np.float32) * 2))


BF16 = """
.hbm x bf16 [128, 32] input
.hbm y fp32 [128, 32] output
.hbm z fp8e4 [128, 32] output
.core 0
.sbuf t bf16 [128, 32]
.sbuf u fp32 [128, 32]
.sbuf v fp8e4 [128, 32]
.sem s
.engine sp
    dma t, x, queue=0 | post s
    dma y, u, queue=1 | wait s >= 2
    dma z, v, queue=2 | wait s >= 3
.engine act
    activate u, t, copy | wait s >= 1 | post s
    activate v, t, copy | wait s >= 2 | post s
"""


def bf16_round(x):
    """Round float32 to bf16 (nearest even), returned as float32."""
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return (b.astype(np.uint32) << 16).view(np.float32)


def test_bf16_and_fp8_values_and_bits():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((128, 32)).astype(np.float32)
    r = ncsim.run(BF16, {"x": x})
    want = bf16_round(x)
    np.testing.assert_array_equal(r.outputs["y"], want)
    xt = r.tensor("x")  # bf16 as values
    assert xt.dtype == np.float32
    np.testing.assert_array_equal(xt, want)
    bits = r.tensor("x", raw=True)  # bf16 as bits
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(bits, (want.view(np.uint32) >> 16).astype(np.uint16))
    z = r.tensor("z", raw=True)
    assert z.dtype == np.uint8 and z.shape == (128, 32)
    zv = r.outputs["z"]
    assert zv.dtype == np.float32
    # fp8e4 keeps 3 mantissa bits: relative error at most 2^-4 in its normal range
    ok = np.abs(x) > 0.02
    assert np.all(np.abs(zv[ok] - x[ok]) <= np.abs(x[ok]) * 2.0 ** -4 + 1e-6)
    # raw bits in: the same tensor written from its bits reads back identically
    r2 = ncsim.run(BF16, {"x": bits})
    np.testing.assert_array_equal(r2.outputs["y"], want)


def test_psum_tensor_readable():
    src = """
.hbm a bf16 [128, 128] input
.hbm b bf16 [128, 256] input
.hbm c fp32 [128, 256] output
.core 0
.sbuf ta bf16 [128, 128]
.sbuf tb bf16 [128, 256]
.psum acc fp32 [128, 256]
.sbuf tc fp32 [128, 256]
.sem ld
.sem mm
.sem cp
.engine sp
    dma ta, a, queue=0 | post ld
    dma tb, b, queue=1 | post ld
    dma c, tc, queue=2 | wait cp >= 1
.engine pe
    matmul acc, ta, tb | wait ld >= 2 | post mm
.engine act
    activate tc, acc, copy | wait mm >= 1 | post cp
"""
    rng = np.random.default_rng(4)
    a = bf16_round(rng.standard_normal((128, 128)))
    b = bf16_round(rng.standard_normal((128, 256)))
    r = ncsim.run(src, {"a": a, "b": b})
    want = a.astype(np.float64).T @ b.astype(np.float64)
    np.testing.assert_allclose(r.tensor("acc"), want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(r.outputs["c"], want, rtol=1e-4, atol=1e-3)
    assert r.stats["tensor_flops"] == 2 * 128 * 128 * 256


def test_assembly_error_location():
    with pytest.raises(ncsim.AssemblyError) as e:
        ncsim.assemble(".core 0\n.engine sp\n  nop\n  bogus 1\n", name="k.nca")
    assert (e.value.file, e.value.line, e.value.column) == ("k.nca", 4, 3)
    assert "unknown instruction 'bogus'" in e.value.message
    assert e.value.status == "ASSEMBLY" and e.value.exit_code == 2
    assert isinstance(e.value, ncsim.NcsimError)


def test_runtime_error_location():
    src = (".sbuf m bf16 [128, 512]\n.psum o fp32 [128, 512]\n.engine dve\n"
           "memset o, 0\n.engine pe\nmatmul o, m, acc\n")
    with pytest.raises(ncsim.ProgramError) as e:
        ncsim.run(ncsim.assemble(src, name="t.nca"))
    err = e.value
    assert err.kind == "runtime"
    assert (err.core, err.engine, err.instruction, err.line) == (0, "pe", 0, 6)
    assert err.file == "t.nca"
    assert "t.nca:6: core 0 pe instruction 0" in err.details
    assert err.exit_code == 1


def test_deadlock_details():
    src = (".sbuf x fp32 [128, 8]\n.sem a\n.sem b\n"
           ".engine act\nactivate x, x, exp | wait a >= 1 | post b\n"
           ".engine dve\nmemset x, 0 | wait b >= 1 | post a\n")
    with pytest.raises(ncsim.ProgramError) as e:
        ncsim.run(src)
    assert e.value.kind == "deadlock"
    assert e.value.engine == "act" and e.value.line == 5
    assert "waits for a >= 1 (now 0)" in e.value.details


def test_input_errors(add_src):
    with pytest.raises(ncsim.InputError, match="input tensor 'a' is not bound"):
        ncsim.run(add_src, {"b": np.zeros((128, 64), np.float32)})
    with pytest.raises(ncsim.InputError, match="shape"):
        ncsim.run(add_src, {"a": np.zeros((64, 128)), "b": np.zeros((128, 64))})
    with pytest.raises(ncsim.InputError, match="no tensor 'q'"):
        ncsim.run(add_src, {"q": np.zeros(3)})


def test_config_errors(add_src):
    with pytest.raises(ncsim.ConfigError, match="unknown architecture 'trn9'"):
        ncsim.run(add_src, random_inputs=0, arch="trn9")
    with pytest.raises(ncsim.ConfigError, match="hbm.nope"):
        ncsim.arch("trn1", set={"hbm.nope": 1})


def test_arch_and_set(add_src):
    cfg = ncsim.arch("trn1", set={"hbm.bandwidth_gbps": 1640})
    assert cfg["hbm"]["bandwidth_gbps"] == 1640
    assert ncsim.arch("inf2")["name"] == "inf2"
    assert ncsim.arch({"base": "trn1", "hbm": {"bandwidth_gbps": 100}})["hbm"]["bandwidth_gbps"] == 100
    slow = ncsim.run(add_src, random_inputs=1, set={"hbm.bandwidth_gbps": 50})
    fast = ncsim.run(add_src, random_inputs=1)
    assert slow.time_ns > fast.time_ns
    assert slow.stats["arch_config"]["hbm"]["bandwidth_gbps"] == 50


def test_random_inputs_are_seeded(add_src):
    r1 = ncsim.run(add_src, random_inputs=7)
    r2 = ncsim.run(add_src, random_inputs=7)
    r3 = ncsim.run(add_src, random_inputs=8)
    np.testing.assert_array_equal(r1.outputs["c"], r2.outputs["c"])
    assert not np.array_equal(r1.outputs["c"], r3.outputs["c"])
    a = r1.tensor("a")
    assert a.min() >= -1 and a.max() < 1


def test_timing_only(add_src):
    r = ncsim.run(add_src, timing_only=True)
    assert r.outputs == {} and r.time_ns > 0
    with pytest.raises(ncsim.NcsimError, match="timing-only"):
        r.tensor("c")


def test_program_roundtrip(add_src, tmp_path):
    p = ncsim.assemble(add_src)
    path = tmp_path / "k.ncx"
    p.save(path)
    q = ncsim.load(str(path))
    assert q.disassemble() == p.disassemble()
    assert ncsim.load(p.to_bytes()).tensors == p.tensors
    nca = tmp_path / "k.nca"
    nca.write_text(add_src)
    x = np.ones((128, 64), np.float32)
    r = ncsim.run(str(nca), {"a": x, "b": x})
    np.testing.assert_array_equal(r.outputs["c"], 2 * x)
    with pytest.raises(ncsim.AssemblyError):
        ncsim.load(b"NCX\x00 garbage")


def test_several_simulators_at_once(add_src):
    p = ncsim.assemble(add_src)
    sims = [ncsim.Simulator(p) for _ in range(4)]
    for i, s in enumerate(sims):
        s.write("a", np.full((128, 64), i, np.float32))
        s.write("b", np.full((128, 64), 10 * i, np.float32))
    # interleave their runs event by event
    while not all(s.finished for s in sims):
        for s in sims:
            if not s.finished:
                s.step()
    for i, s in enumerate(sims):
        assert np.all(s.tensor("c") == 11 * i)
    # and in threads
    out = {}

    def work(i):
        out[i] = ncsim.run(p, {"a": np.full((128, 64), i, np.float32),
                               "b": np.ones((128, 64), np.float32)}).outputs["c"]

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i in range(4):
        assert np.all(out[i] == i + 1)


def test_run_until_and_write_between(add_src):
    s = ncsim.Simulator(add_src)
    s.random_inputs(3)
    s.run_until(100.0)
    assert not s.finished and 0 < s.now_ns <= 100.0
    s.run()
    assert s.finished
    a, b = s.tensor("a"), s.tensor("b")
    np.testing.assert_array_equal(s.tensor("c"), a + b)


def long_kernel(n):
    """A long chain of dve instructions (n of them) on one tile."""
    lines = [".hbm x fp32 [128, 512] input", ".hbm y fp32 [128, 512] output", ".core 0",
             ".sbuf t fp32 [128, 512]", ".sem ld", ".sem done", ".engine sp",
             "    dma t, x, queue=0 | post ld", "    dma y, t, queue=1 | wait done >= 1",
             ".engine dve", "    tensor_scalar t, t, add, 1.0 | wait ld >= 1"]
    lines += ["    tensor_scalar t, t, add, 1.0"] * (n - 2)
    lines += ["    tensor_scalar t, t, add, 1.0 | post done"]
    return "\n".join(lines) + "\n"


def test_progress_and_cancellation():
    p = ncsim.assemble(long_kernel(3000))
    seen = []

    def progress(pr):
        seen.append(pr)
        return len(seen) >= 2  # cancel at the second call

    s = ncsim.Simulator(p)
    s.write("x", np.zeros((128, 512), np.float32))
    s.set_progress(progress, interval=0.0)
    with pytest.raises(ncsim.CancelledError):
        s.run()
    assert len(seen) == 2 and not s.finished
    assert seen[1].now_ns >= seen[0].now_ns > 0
    assert 0 < seen[1].instructions < seen[1].total_instructions == 3002
    # the run can go on after a cancellation
    s.set_progress(None)
    s.run()
    assert s.finished
    np.testing.assert_array_equal(s.tensor("y"), np.full((128, 512), 3000, np.float32))


def test_progress_callback_exception_propagates():
    def boom(pr):
        raise KeyError("stop")

    with pytest.raises(KeyError):
        ncsim.run(long_kernel(2000), {"x": np.zeros((128, 512))}, progress=boom,
                  progress_interval=0.0)


def test_check_findings():
    src = (".hbm x fp32 [128, 8] input\n.hbm y fp32 [128, 8] output\n.core 0\n"
           ".sbuf t fp32 [128, 8]\n.engine sp\n    dma t, x, queue=0\n"
           ".engine act\n    activate t, t, exp\n"
           ".engine pool\n    dma y, t, queue=1\n")
    findings = ncsim.check(ncsim.assemble(src, name="race.nca"))
    kinds = {f.kind for f in findings}
    assert "race" in kinds
    race = next(f for f in findings if f.kind == "race")
    assert race.core == 0 and race.engine in ("sp", "act", "pool") and race.line in (6, 8, 10)
    assert race.race in ("RAW", "WAR", "WAW") and race.memory == "sbuf" and race.tensor == "t"
    assert "not ordered by any semaphore chain" in race.message
    r = ncsim.run(src, random_inputs=0, check=["races"])
    assert r.findings and all(f.kind == "race" for f in r.findings)
    ok = ncsim.check(ncsim.assemble(src.replace("dma t, x, queue=0", "dma t, x, queue=0 | post s")
                                    .replace(".core 0\n", ".core 0\n.sem s\n.sem u\n")
                                    .replace("activate t, t, exp", "activate t, t, exp | wait s >= 1 | post u")
                                    .replace("dma y, t, queue=1", "dma y, t, queue=1 | wait u >= 1")))
    assert ok == []


def test_trace_file(add_src, tmp_path):
    path = tmp_path / "t.json"
    ncsim.run(add_src, random_inputs=0, trace=str(path))
    data = json.loads(path.read_text())
    events = data["traceEvents"] if isinstance(data, dict) else data
    assert any(e.get("name", "").startswith("tensor_tensor") for e in events)


def test_npy_files(add_src, tmp_path):
    a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.save(tmp_path / "a.npy", a)
    s = ncsim.Simulator(add_src)
    s.load_npy("a", tmp_path / "a.npy")
    s.write("b", a)
    s.run()
    s.save_npy("c", tmp_path / "c.npy")
    np.testing.assert_array_equal(np.load(tmp_path / "c.npy"), 2 * a)


def test_kernel_from_repository():
    """kernels/softmax.nca (smaller sizes) against NumPy."""
    src = open(os.path.join(SRC_DIR, "kernels", "softmax.nca")).read()
    src = src.replace(".let R = 8192", ".let R = 256").replace(".let C = 4096", ".let C = 256")
    x = np.random.default_rng(5).standard_normal((256, 256)).astype(np.float32)
    r = ncsim.run(src, {"x": x})
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(r.outputs["y"], e / e.sum(axis=1, keepdims=True), rtol=1e-3,
                               atol=1e-6)


def test_report_is_ncsim_report_json(tmp_path):
    """ncsim.report: the C report of a trace or statistics file, as `ncsim report --json`."""
    import json
    import subprocess
    root = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
    prog = os.path.join(root, "kernels", "demo_gemm.nca")
    trace, stats = tmp_path / "t.pftrace", tmp_path / "s.json"
    r = ncsim.run(prog, timing_only=True, trace=str(trace))
    stats.write_text(json.dumps(r.stats))
    for p in (trace, stats):
        rep = ncsim.report(str(p))
        assert rep["verdict"].startswith("bound by ") and rep["bounds"][0]["what"]
        assert abs(rep["total_ns"] - r.time_ns) < 1e-3 * r.time_ns
        cmd = os.path.join(os.path.dirname(ncsim.library_path), "ncsim")
        if os.path.exists(cmd):
            out = subprocess.run([cmd, "report", "--json", str(p)], capture_output=True, text=True)
            assert json.loads(out.stdout)["verdict"] == rep["verdict"]
    (tmp_path / "x.json").write_text("{}")
    for bad in (tmp_path / "x.json", tmp_path / "missing.json"):
        with pytest.raises(ncsim.InputError):
            ncsim.report(str(bad))
