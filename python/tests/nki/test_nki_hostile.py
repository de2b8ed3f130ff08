"""Careless and hostile input (issue 28, item 3): arguments that are not arrays, placeholders in
functional runs, out-of-bounds affine indices, stores that would reshape, bad policies, and
exceptions from inside the package: each an NkiError located at the kernel's line."""
import inspect
import os
import subprocess
import sys

import numpy as np
import pytest

import ncsim
import ncsim.nki as nki
import ncsim.nki.language as nl
import ncsim.nki.typing as nt

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
X = np.arange(128 * 16, dtype=np.float32).reshape(128, 16)


def line_of(fn, needle):
    src, first = inspect.getsourcelines(fn)
    return first + [i for i, s in enumerate(src) if needle in s][0]


def located(excinfo, fn, needle, code):
    msg = str(excinfo.value)
    want = f"{__file__}:{line_of(fn, needle)}: error: [{code}]"
    assert msg.startswith(want), msg
    return msg


@nki.jit
def add(a, b):  # DEF
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.add(nl.load(a), nl.load(b)))
    return out


def test_numpy_scalars_are_constants_not_random_tensors():
    # was: add(np.float32(1), np.float32(1)) returned a random 0.5478
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, np.float32(1), np.float32(1))
    msg = located(e, add.func, "out = nl.ndarray", "err_kernel_exception")
    assert "'float' object has no attribute 'shape'" in msg


class FakeTensor:
    """Something with a shape and a dtype that is not a NumPy array (another framework's)."""
    shape = (128, 16)
    dtype = np.float32


@pytest.mark.parametrize("bad, what", [(FakeTensor(), "FakeTensor"),
                                       (memoryview(b"abcd"), "memoryview")])
def test_other_array_likes_are_refused_by_name(bad, what):
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, X, bad)
    msg = located(e, add.func, "# DEF", "err_invalid_argument")
    assert "argument 'b'" in msg and what in msg


def test_arrays_of_types_nki_lacks():
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, X, X.astype(np.complex64))
    assert "argument 'b'" in located(e, add.func, "# DEF", "err_unsupported_dtype")
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, X, np.zeros((128, 16), "V2"))
    assert "ncsim.nki.typed" in located(e, add.func, "# DEF", "err_unsupported_dtype")
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, X, np.array(3.0, np.float32))
    assert "0-d" in located(e, add.func, "# DEF", "err_invalid_argument")


def test_placeholders_only_in_timing_runs():
    ph = nt.tensor[[128, 16], nl.float32]
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, X, ph)
    msg = located(e, add.func, "# DEF", "err_placeholder_in_functional_run")
    assert "argument 'b'" in msg
    bench = nki.benchmark(warmup=1, iters=1)(add)
    bench(ph, ph)                         # timing only: fine
    assert bench.benchmark_result.nc_latency.get_latency_percentile(50) > 0


def test_typed_bfloat16_without_ml_dtypes():
    x = np.linspace(-3, 3, 128 * 16, dtype=np.float32).reshape(128, 16)
    y = nki.simulate_kernel(add, nki.typed(x, nl.bfloat16), nki.typed(x, nl.bfloat16))
    assert y.dtype == np.float32
    # bf16 rounding of the inputs, then of the sum (round to nearest even, 8 bits of mantissa)
    def bf16(v):
        u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
        u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
        return u.astype(np.uint32).view(np.float32)
    np.testing.assert_array_equal(y, bf16(bf16(x) + bf16(x)))


@nki.jit
def affine_past_tile(a):
    out = nl.ndarray((128, 8), a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    i0, i1, i2 = nl.mgrid[0:128, 0:8, 0:2]
    u = nl.ndarray((128, 8, 2), a.dtype, buffer=nl.sbuf)
    u[i0, i1, i2] = nl.copy(t[i0, 2 * i1 + i2 + 1])  # HERE
    nl.store(out, value=u[:, :, 0])
    return out


@nki.jit
def affine_loop_past_tile(a):
    out = nl.ndarray((128, 4), a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    ip, jf = nl.mgrid[0:128, 0:4]
    u = nl.ndarray((128, 4), a.dtype, buffer=nl.sbuf)
    for j in nl.affine_range(4):
        u[ip, jf] = nl.copy(t[ip, 4 * j + jf + 1])  # HERE
    nl.store(out, value=u)
    return out


@pytest.mark.parametrize("kern", [affine_past_tile, affine_loop_past_tile])
def test_affine_index_past_the_tile(kern):
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(kern, X)
    msg = located(e, kern.func, "# HERE", "err_tensor_access_out_of_bound")
    assert "size 16" in msg


def test_affine_index_inside_the_tile_is_right():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 8), a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        i0, i1, i2 = nl.mgrid[0:128, 0:8, 0:2]
        u = nl.ndarray((128, 8, 2), a.dtype, buffer=nl.sbuf)
        u[i0, i1, i2] = nl.copy(t[i0, 2 * i1 + i2])
        nl.store(out, value=u[:, :, 1])
        return out
    np.testing.assert_array_equal(nki.simulate_kernel(k, X), X[:, 1::2])


@nki.jit
def store_reshaping(a):
    out = nl.ndarray((64, 32), a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.load(a))  # HERE
    return out


def test_store_refuses_a_shape_it_would_reshape():
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(store_reshaping, X)    # 128 x 16 = 64 x 32 elements
    assert "(128, 16)" in located(e, store_reshaping.func, "# HERE", "err_store_shape_mismatch")


def test_store_broadcasts_a_column():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 16), a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.load(a[:, 0:1]))
        return out
    np.testing.assert_array_equal(nki.simulate_kernel(k, X), np.repeat(X[:, :1], 16, axis=1))


@pytest.mark.parametrize("pol, needle", [({"sbuf_bufs": 0}, "sbuf_bufs=0"),
                                         ({"load_queues": [3, 99]}, "load_queues"),
                                         ({"load_engine": "gpu"}, "load_engine"),
                                         ({"psum_bufs": "2"}, "psum_bufs"),
                                         ({"no_such_option": 1}, "no_such_option"),
                                         ("fast", "policy must be")])
def test_bad_policies(pol, needle):
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(add, X, X, policy=pol)
    assert needle in located(e, add.func, "# DEF", "err_invalid_policy")


def test_invert_on_float_is_an_error_at_the_call():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=nl.invert(nl.load(a)))  # HERE
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, X)
    located(e, k.func, "# HERE", "err_unsupported_dtype")
    xi = (X.astype(np.int32) - 1000)
    np.testing.assert_array_equal(nki.simulate_kernel(k, xi), ~xi)


def test_assembler_and_run_time_errors_are_located_at_the_kernel():
    # whatever the lowering lets through to the assembler or the simulator is reported at the
    # kernel line of the instruction (the program's .source and .loc), not a line of NCA
    from ncsim.nki import _exec
    text = """.source /k/kern.py
.hbm a fp32 [128, 8] input
.hbm c fp32 [128, 8] output
.core 0
.sbuf t fp32 [128, 8]
.engine sp
    .loc 17
    dma t, a, queue=0
.engine dve
    .loc 23
    tensor_scalar t, t, bitwise_xor, -1
"""
    with pytest.raises(nki.NkiError) as e:
        _exec.run(text, "k", {"a": np.zeros((128, 8), np.float32)})
    assert str(e.value).startswith("/k/kern.py:23: error: [err_unsupported_by_ncsim] "), str(e.value)
    assert isinstance(e.value.ncsim_error, ncsim.AssemblyError)
    # a run-time report already names the kernel line (the simulator reads .loc): kept as is
    deadlock = """.source /k/kern.py
.hbm a fp32 [128, 8] input
.hbm c fp32 [128, 8] output
.core 0
.sem s
.sbuf t fp32 [128, 8]
.engine sp
    .loc 5
    dma t, a, queue=0 | wait s >= 1
.engine dve
    .loc 40
    tensor_copy t, t
"""
    with pytest.raises(nki.NkiError) as e:
        _exec.run(deadlock, "k", {"a": np.zeros((128, 8), np.float32)})
    assert str(e.value).startswith("/k/kern.py:5: error: [err_runtime] deadlock"), str(e.value)
    assert isinstance(e.value.ncsim_error, ncsim.ProgramError)


def test_stray_exception_inside_the_package_is_located():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nl.add(t, "seven"))  # HERE
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, X)
    assert "a tile or a number, not str" in located(e, k.func, "# HERE", "err_unsupported_type")

    @nki.jit
    def k2(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.zeros((128, 16), nl.float32, buffer=nl.sbuf)
        nl.store(out, value=nl.add(t, t, mask="nope"))  # HERE
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k2, X)
    assert str(e.value).startswith(f"{__file__}:{line_of(k2.func, '# HERE')}: error: ["), str(e.value)


def test_exception_of_the_kernel_s_own_code_is_located():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.load(a)
        z = 1 // 0  # HERE
        nl.store(out, value=t + z)
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, X)
    assert "ZeroDivisionError" in located(e, k.func, "# HERE", "err_kernel_exception")


# ---- the runner: one located line and the documented exit code

RUNNER = [sys.executable, "-m", "ncsim.nki", "run"]


def runner(tmp_path, *args):
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python") + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run(RUNNER + list(args), cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    return r.returncode, r.stdout, r.stderr


KERNEL = """\
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def scale(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a)
    nl.store(out, value=nl.invert(t))
    return out


@nki.jit
def double(a):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.multiply(nl.load(a), 2.0))
    return out


@nki.jit
def diff(a, b):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(out, value=nl.subtract(nl.load(a), nl.load(b)))
    return out
"""


@pytest.mark.parametrize("args, code, start", [
    (["k.py", "scale", "--arg", "rand:128x8:float32"], 1, "k.py:9: error: [err_unsupported_dtype]"),
    (["k.py", "nope"], 2, "python3 -m ncsim.nki: k.py: has no 'nope'"),
    (["missing.py", "f"], 3, "python3 -m ncsim.nki: missing.py: no such file"),
    (["k.py", "double", "--arg", "rand:0x8"], 2, "python3 -m ncsim.nki: --arg 1"),
    (["k.py", "double", "--arg", "nothing.npy"], 3, "python3 -m ncsim.nki: nothing.npy: no such"),
    (["k.py", "double", "--arg", "rand:8x8:bf17"], 2, "python3 -m ncsim.nki: --arg 1"),
    (["k.py", "double", "--arg", "rand:8x8", "--arch", "nope"], 2, "python3 -m ncsim.nki: --arch"),
    (["k.py", "double", "--grid", "x"], 2, "python3 -m ncsim.nki: --grid"),
    (["k.py", "double"], 1, "k.py:14: error: [err_invalid_arguments]"),
    (["k.py", "double", "--bogus"], 2, "python3 -m ncsim.nki: unrecognized arguments"),
    (["k.py", "double", "--arg", "rand:8x8", "--stats", "nodir/s.json"], 3,
     "python3 -m ncsim.nki: --stats nodir/s.json: no folder"),
    (["k.py", "double", "--arg", "rand:8x8", "--out", "k.py"], 3,
     "python3 -m ncsim.nki: --out k.py: exists and is not a folder"),
])
def test_runner_errors_are_one_located_line(tmp_path, args, code, start):
    (tmp_path / "k.py").write_text(KERNEL)
    rc, out, err = runner(tmp_path, *args)
    assert rc == code, (rc, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert lines[0].replace(str(tmp_path) + "/", "").startswith(start), lines[0]


def test_runner_kernel_file_with_a_syntax_error(tmp_path):
    (tmp_path / "bad.py").write_text("import neuronxcc.nki as nki\n\ndef f(a:\n    pass\n")
    rc, out, err = runner(tmp_path, "bad.py", "f")
    assert rc == 1 and len(err.strip().splitlines()) == 1, err
    assert "bad.py:3: error: [err_kernel_exception] SyntaxError" in err, err


def test_runner_bfloat16_arguments_and_outputs(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    rc, out, err = runner(tmp_path, "k.py", "double", "--arg", "rand:128x8:bfloat16",
                          "--out", "o", "--stats", "s.json")
    assert rc == 0, err
    y = np.load(tmp_path / "o" / "out0.npy")
    assert y.dtype == np.float32 and y.shape == (128, 8)
    x = np.random.default_rng(0).random((128, 8)).astype(np.float32)
    # the inputs were rounded to bf16; doubling is exact
    assert np.all(np.abs(y / 2 - x) <= np.abs(x) * 2.0 ** -8)
    assert len(np.unique(y.view(np.uint32) & 0xFFFF)) == 1          # bf16 values
    np.save(tmp_path / "x.npy", x)
    rc, out, err = runner(tmp_path, "k.py", "double", "--arg", "x.npy:bfloat16", "--out", "o2")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "o2" / "out0.npy"), y)
    # raw bf16 bits, as an ml_dtypes bfloat16 array is saved (a 2-byte void type without it)
    xb = (y / 2).view(np.uint32) >> 16
    np.save(tmp_path / "raw.npy", xb.astype(np.uint16).view("V2"))
    rc, out, err = runner(tmp_path, "k.py", "double", "--arg", "raw.npy:bfloat16", "--out", "o3")
    assert rc == 0, err
    np.testing.assert_array_equal(np.load(tmp_path / "o3" / "out0.npy"), y)
    rc, out, err = runner(tmp_path, "k.py", "double", "--arg", "raw.npy")
    assert rc == 1 and "ncsim.nki.typed" in err and len(err.strip().splitlines()) == 1, err


def test_runner_verdict_is_ncsim_report_s(tmp_path):
    """One verdict: the runner prints the one `ncsim report` gives on the same trace and on the
    same statistics file (the C report through the library)."""
    (tmp_path / "k.py").write_text(KERNEL)
    rc, out, err = runner(tmp_path, "k.py", "double", "--arg", "rand:128x512",
                          "--trace", "t.pftrace", "--stats", "s.json")
    assert rc == 0, err
    line = [ln for ln in out.splitlines() if ln.startswith("verdict: ")]
    assert line, out
    ncsim_cmd = os.path.join(os.path.dirname(ncsim.library_path), "ncsim")
    if os.path.exists(ncsim_cmd):
        rep = subprocess.run([ncsim_cmd, "report", "t.pftrace"], cwd=tmp_path, capture_output=True,
                             text=True).stdout
        assert line[0] in rep.splitlines(), (line, rep)
    assert line[0] == "verdict: " + ncsim.report(str(tmp_path / "t.pftrace"))["verdict"]
    rc, out2, err = runner(tmp_path, "k.py", "double", "--arg", "rand:128x512", "--stats", "s2.json")
    v2 = [ln for ln in out2.splitlines() if ln.startswith("verdict: ")][0]
    assert v2 == "verdict: " + ncsim.report(str(tmp_path / "s2.json"))["verdict"]
    assert "(busy time, from statistics)" in v2


@pytest.mark.parametrize("call, code", [
    (lambda: nki.simulate_kernel(3, X), "err_invalid_kernel"),
    (lambda: add["x"](X, X), "err_invalid_grid"),
    (lambda: add[0](X, X), "err_invalid_grid"),
    (lambda: add[2, -1](X, X), "err_invalid_grid"),
    (lambda: nki.typed("abc", nl.bfloat16), "err_invalid_argument"),
    (lambda: nki.typed(X, "float99"), "err_invalid_argument"),
    (lambda: nt.tensor[[128, -1], nl.float32], "err_invalid_shape"),
    (lambda: nt.tensor[[128, 4], "nope"], "err_invalid_dtype"),
    (lambda: nki.benchmark(warmup="x")(add), "err_invalid_argument"),
    (lambda: nki.jit(add, mode="fast"), "err_invalid_mode"),
    (lambda: nki.profile()(add)(X, X), "err_invalid_argument"),
])
def test_api_misuse_is_a_located_nki_error(call, code):
    """Misusing the API itself (not the kernel) is an NkiError (also a ValueError) at the
    calling line."""
    with pytest.raises(nki.NkiError) as e:
        call()
    assert isinstance(e.value, ValueError)
    assert str(e.value).startswith(f"{__file__}:"), str(e.value)
    assert f"error: [{code}]" in str(e.value), str(e.value)


def test_typed_bfloat16_output_passed_in():
    """The 2.20 convention with a bf16 output passed in: its values are filled (as float32)."""
    @nki.jit
    def k(a, out):
        nl.store(out, value=nl.multiply(nl.load(a), 3.0))
    x = np.linspace(-1, 1, 128 * 8, dtype=np.float32).reshape(128, 8)
    out = nki.typed(np.zeros((128, 8), np.float32), nl.bfloat16)
    assert nki.simulate_kernel(k, x, out) is None
    y = out.values
    assert np.all(np.abs(y - 3 * x) <= np.abs(3 * x) * 2.0 ** -8)
    assert np.all(y.view(np.uint32) & 0xFFFF == 0)                  # bf16 values


def test_runner_rand_arguments_differ(tmp_path):
    (tmp_path / "k.py").write_text(KERNEL)
    rc, out, err = runner(tmp_path, "k.py", "diff", "--arg", "rand:128x8", "--arg", "rand:128x8",
                          "--out", "o")
    assert rc == 0, err
    d = np.load(tmp_path / "o" / "out0.npy")
    want = np.random.default_rng(0).random((128, 8)) - np.random.default_rng(1).random((128, 8))
    np.testing.assert_allclose(d, want.astype(np.float32), atol=1e-6)
    assert np.abs(d).max() > 0.5
