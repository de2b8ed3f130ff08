"""The corpus of kernels in the compiler-emitted style (python/tests/nki/corpus/): fp32,
block tensors declared for the whole problem and used block by block in affine_range loops,
loop_reduce, transposes through the Tensor engine, nisa calls with and without engine=,
masks, index grids, shared_hbm outputs returned. Each file has `kernel`, `SIZES`, `inputs`,
`reference` and `TOL` (atol, rtol; (0, 0) is exact). The files `tuned_*.py` are a third set in
the style of kernel-optimising tools' rewrites (docs/nki.md, "the corpus"). A kernel whose
outputs are random (dropout) also has `check_outputs(args, outputs)`, which checks what holds
for any generator; its `reference` then gives only the outputs' shapes and types. A kernel
launched as an SPMD grid has `GRID` (the grid of each size): `kernel_of(mod, size)`. The
files `_refused_*.py` are kernels ncsim refuses (indirect DMA offsets), kept out of the suite
and held to a located refusal with the reason their `REFUSED` names.

Every kernel runs at its small size through the Python API and through the runner command
(`python3 -m ncsim.nki run FILE kernel --arg ... --out DIR --check`), matches its NumPy
reference and is `ncsim check` clean. A kernel that must spill (the gated MLP with SBUF
narrowed by the policy) still matches and reports what it spilled. The full sizes (tens to
hundreds of MB of HBM) run with NCSIM_NKI_CORPUS_FULL=1 (tests/bench/nki_corpus.py prints
their figures and the table of docs/nki.md).
"""
import importlib.util
import os
import subprocess
import sys
import time

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.typing as nt

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS_DIR = os.path.join(HERE, "corpus")
NAMES = sorted(f[:-3] for f in os.listdir(CORPUS_DIR)
               if f.endswith(".py") and not f.startswith("_"))
FULL = os.environ.get("NCSIM_NKI_CORPUS_FULL") == "1"


def load(name):
    """A corpus module, imported from its file (its `import neuronxcc.nki` through the alias)."""
    nki.install_neuronxcc_alias()
    key = "ncsim_nki_corpus_" + name
    if key in sys.modules:
        return sys.modules[key]
    spec = importlib.util.spec_from_file_location(key, os.path.join(CORPUS_DIR, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[key] = mod
    spec.loader.exec_module(mod)
    return mod


def kernel_of(mod, size):
    """The kernel as launched at that size: `kernel[GRID[size]]` for an SPMD kernel."""
    grid = getattr(mod, "GRID", None)
    return mod.kernel[grid[size]] if grid else mod.kernel


def as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


def assert_matches(mod, got, want):
    got, want = as_tuple(got), as_tuple(want)
    assert len(got) == len(want)
    atol, rtol = mod.TOL
    for g, w in zip(got, want):
        g = np.asarray(g)
        assert g.shape == w.shape and g.dtype == w.dtype, (g.shape, g.dtype, w.shape, w.dtype)
        if (atol, rtol) == (0.0, 0.0):
            np.testing.assert_array_equal(g, w)
        else:
            np.testing.assert_allclose(g, w, atol=atol, rtol=rtol)


def assert_correct(mod, args, got):
    """NumPy's result within TOL, or, for random outputs, the file's own checks."""
    if hasattr(mod, "check_outputs"):
        want = as_tuple(mod.reference(*args))
        got = as_tuple(got)
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert np.asarray(g).shape == w.shape and np.asarray(g).dtype == w.dtype
        mod.check_outputs(args, got)
    else:
        assert_matches(mod, got, mod.reference(*args))


def test_corpus_is_complete():
    """The families the brief names are all here, each file complete."""
    assert len(NAMES) >= 10, NAMES
    for name in NAMES:
        mod = load(name)
        for attr in ("kernel", "SIZES", "inputs", "reference", "TOL", "WHAT"):
            assert hasattr(mod, attr), (name, attr)
        assert set(mod.SIZES) == {"small", "full"}, name
        assert set(getattr(mod, "GRID", None) or mod.SIZES) == {"small", "full"}, name


@pytest.mark.parametrize("name", NAMES)
def test_small_matches_numpy_and_check_is_clean(name):
    mod = load(name)
    args = mod.inputs(mod.SIZES["small"], np.random.default_rng(1))
    k = kernel_of(mod, "small")
    assert_correct(mod, args, nki.simulate_kernel(k, *args))
    assert nki.check(k, *args) == []


def _run_runner(tmp_path, cmd, args, timeout):
    """The runner's command line cmd with each input saved as a .npy file (--arg), run with
    this process's module path."""
    for i, a in enumerate(args):
        np.save(tmp_path / f"in{i}.npy", a)
        cmd = cmd + ["--arg", str(tmp_path / f"in{i}.npy")]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)


@pytest.mark.parametrize("name", NAMES)
def test_runner_command(tmp_path, name):
    """The file as it is, through the runner: inputs from .npy files, outputs to --out,
    ncsim check on the lowered program."""
    mod = load(name)
    args = mod.inputs(mod.SIZES["small"], np.random.default_rng(2))
    cmd = [sys.executable, "-m", "ncsim.nki", "run", os.path.join(CORPUS_DIR, name + ".py"),
           "kernel", "--out", str(tmp_path / "out"), "--check"]
    if getattr(mod, "GRID", None):
        cmd += ["--grid", ",".join(str(g) for g in mod.GRID["small"])]
    r = _run_runner(tmp_path, cmd, args, 300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "ncsim check: clean" in r.stdout, r.stdout
    assert "us simulated" in r.stdout and "bottleneck" in r.stdout, r.stdout
    want = as_tuple(mod.reference(*args))
    outs = sorted(os.listdir(tmp_path / "out"))
    assert len(outs) == len(want), outs
    got = tuple(np.load(tmp_path / "out" / f) for f in outs)
    assert_correct(mod, args, got)


def test_a_kernel_that_must_spill():
    """The gated MLP with SBUF narrowed to 12,000 bytes per partition (policy sbuf_bytes): its
    weights' loads are issued at their uses (reload_at_uses), and that is not enough: blocks of
    its intermediates are spilled and reloaded. The result is still NumPy's, the program still
    check clean. (At 24,000 bytes issuing the loads at their uses is enough: nothing spills.)"""
    mod = load("swiglu_mlp")
    args = mod.inputs(mod.SIZES["small"], np.random.default_rng(3))
    pol = {"sbuf_bytes": 12000}
    assert_matches(mod, nki.simulate_kernel(mod.kernel, *args, policy=pol), mod.reference(*args))
    assert nki.check(mod.kernel, *args, policy=pol) == []
    b = nki.benchmark(mod.kernel, policy=pol)
    b(*args)
    st = b.benchmark_result.stats["nki"]
    assert st["spill_save_bytes"] > 0 and st["spill_reload_bytes"] >= st["spill_save_bytes"]
    assert st["rematerialized_bytes"] > 0 and st["reissued_loads"] > 0
    b = nki.benchmark(mod.kernel)
    b(*args)
    st = b.benchmark_result.stats["nki"]
    assert st["spill_save_bytes"] == 0 and st["rematerialized_bytes"] == 0


def placeholders(args):
    return [nt.tensor[[*a.shape], str(a.dtype)] for a in args]


def hbm_bytes(args, outs):
    return sum(a.nbytes for a in args) + sum(o.nbytes for o in outs)


@pytest.mark.skipif(not FULL, reason="full sizes: NCSIM_NKI_CORPUS_FULL=1")
@pytest.mark.parametrize("name", NAMES)
def test_full_size(name):
    """At full size: lowered in modest CPU time, timed no faster than its HBM traffic allows at
    the chip's peak, and functionally equal to NumPy and check clean."""
    mod = load(name)
    args = mod.inputs(mod.SIZES["full"], np.random.default_rng(4))
    k = kernel_of(mod, "full")
    t0 = time.process_time()
    nki.lower(k, *placeholders(args))
    assert time.process_time() - t0 < 90
    b = nki.benchmark(k)
    b(*placeholders(args))
    us = b.benchmark_result.nc_latency.get_latency_percentile(50)
    want = as_tuple(mod.reference(*args))
    assert us * 1e3 >= hbm_bytes(args, want) / 820.0     # 820 GB/s = bytes per ns
    assert_correct(mod, args, nki.simulate_kernel(k, *args))
    assert nki.check(k, *args) == []


def test_mutants_fail_only_at_the_kernels_call():
    """60 mutants of the corpus (nki_fuzz.py --emitted at a fixed seed): each runs, or fails
    with a located NkiError or an ncsim error, and no error names a line of the lowered program
    (scripts and longer runs: python3 python/tests/nki/nki_fuzz.py --emitted --count N)."""
    sys.path.insert(0, HERE)
    import nki_fuzz
    counts, findings = nki_fuzz.fuzz_emitted(60, 5, time_limit=30.0)
    assert not findings, "\n".join(f"{c}: {'; '.join(m)}: {d}" for c, m, d, _s in findings)
    assert counts.get("nki", 0) > 10 and counts.get("ok", 0) > 5, counts


REFUSED = sorted(f[:-3] for f in os.listdir(CORPUS_DIR)
                 if f.startswith("_refused_") and f.endswith(".py"))


@pytest.mark.parametrize("name", REFUSED)
def test_refused_kernels_say_why_at_their_line(tmp_path, name):
    """The kernels kept out of the suite (`_refused_*.py`: an embedding gather, its scatter-add
    backward, a KV-cache update at a run-time position) are refused with their stated reason (REFUSED: the error code and
    the text of the line), at that line of the file, through the API and as the runner's one
    line with exit code 1."""
    mod = load(name)
    code, text = mod.REFUSED
    path = os.path.join(CORPUS_DIR, name + ".py")
    with open(path) as f:
        line = 1 + next(i for i, s in enumerate(f) if text in s and not s.startswith("REFUSED"))
    args = mod.inputs(mod.SIZES["small"], np.random.default_rng(5))
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(mod.kernel, *args)
    assert str(e.value).startswith(f"{path}:{line}: error: [{code}]"), str(e.value)
    cmd = [sys.executable, "-m", "ncsim.nki", "run", path, "kernel"]
    r = _run_runner(tmp_path, cmd, args, 120)
    assert r.returncode == 1, r.stdout + r.stderr
    err = r.stderr.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{path}:{line}: error: [{code}]"), r.stderr
