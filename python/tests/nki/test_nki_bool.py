"""Bool tensors: an `nl.bool_` HBM output comes back as a NumPy bool array (from the API and
from the runner's --out), a bool input array is the kernel's `nl.bool_` tensor, and their
values are NumPy's (NKI keeps a bool as one byte of 0 or 1)."""
import os
import subprocess
import sys

import numpy as np

import ncsim.nki as nki
import ncsim.nki.language as nl

RNG = np.random.default_rng(24)
A = RNG.uniform(-1, 1, (128, 96)).astype(np.float32)
B = RNG.uniform(-1, 1, (128, 96)).astype(np.float32)


@nki.jit
def k_greater(a, b):
    out = nl.ndarray(a.shape, dtype=nl.bool_, buffer=nl.shared_hbm)
    nl.store(out, nl.greater(nl.load(a), nl.load(b)))
    return out


@nki.jit
def k_logic(m, n):
    both = nl.ndarray(m.shape, dtype=nl.bool_, buffer=nl.shared_hbm)
    neither = nl.ndarray(m.shape, dtype=nl.bool_, buffer=nl.shared_hbm)
    ms, ns = nl.load(m), nl.load(n)
    nl.store(both, nl.logical_and(ms, ns))
    nl.store(neither, nl.logical_not(nl.logical_or(ms, ns)))
    return both, neither


@nki.jit
def k_select(x, m):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    nl.store(out, nl.where(nl.load(m), nl.load(x), 0.0))
    return out


@nki.jit
def k_greater_into(a, b, out):       # the 2.20 convention: the output array is passed in
    nl.store(out, nl.greater(nl.load(a), nl.load(b)))


def test_bool_output_is_a_bool_array():
    y = nki.simulate_kernel(k_greater, A, B)
    assert y.dtype == np.bool_ and y.shape == A.shape
    np.testing.assert_array_equal(y, A > B)
    assert 0 < y.sum() < y.size           # both values occur: not a constant by accident
    # a plain call (nki.jit, mode auto) returns the same
    np.testing.assert_array_equal(k_greater(A, B), A > B)


def test_bool_inputs_and_outputs():
    m, n = A > 0, B > 0
    both, neither = nki.simulate_kernel(k_logic, m, n)
    assert both.dtype == np.bool_ and neither.dtype == np.bool_
    np.testing.assert_array_equal(both, m & n)
    np.testing.assert_array_equal(neither, ~(m | n))


def test_bool_mask_input_selects():
    m = A > B
    y = nki.simulate_kernel(k_select, A, m)
    assert y.dtype == np.float32
    np.testing.assert_array_equal(y, np.where(m, A, np.float32(0)))


def test_bool_output_passed_in():
    out = np.zeros(A.shape, dtype=np.bool_)
    assert nki.simulate_kernel(k_greater_into, A, B, out) is None
    np.testing.assert_array_equal(out, A > B)


KFILE = '''import neuronxcc.nki as nki
import neuronxcc.nki.language as nl


@nki.jit
def mask_and(m, a, b):
    out = nl.ndarray(m.shape, dtype=nl.bool_, buffer=nl.shared_hbm)
    nl.store(out, nl.logical_and(nl.load(m), nl.greater(nl.load(a), nl.load(b))))
    return out
'''


def test_runner_bool_arguments_and_output(tmp_path):
    (tmp_path / "k.py").write_text(KFILE)
    m = A > 0
    np.save(tmp_path / "m.npy", m)
    np.save(tmp_path / "a.npy", A)
    np.save(tmp_path / "b.npy", B)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)

    def run(*args, out):
        r = subprocess.run([sys.executable, "-m", "ncsim.nki", "run", str(tmp_path / "k.py"),
                            "mask_and", *args, "--out", str(tmp_path / out)],
                           capture_output=True, text=True, env=env)
        assert r.returncode == 0, r.stderr
        y = np.load(tmp_path / out / "out0.npy")
        assert y.dtype == np.bool_
        return y

    y = run("--arg", str(tmp_path / "m.npy"), "--arg", str(tmp_path / "a.npy"),
            "--arg", str(tmp_path / "b.npy"), out="o1")
    np.testing.assert_array_equal(y, m & (A > B))
    # a uint8 file of 0/1 read as bool, and random bool arguments of both values
    np.save(tmp_path / "m8.npy", m.astype(np.uint8))
    y = run("--arg", f"{tmp_path / 'm8.npy'}:bool", "--arg", str(tmp_path / "a.npy"),
            "--arg", str(tmp_path / "b.npy"), out="o2")
    np.testing.assert_array_equal(y, m & (A > B))
    y = run("--arg", "rand:128x96:bool", "--arg", "rand:128x96:float32",
            "--arg", "rand:128x96:float32", out="o3")
    rm = np.random.default_rng(0).random((128, 96)) < 0.5
    ra = np.random.default_rng(1).random((128, 96)).astype(np.float32)
    rb = np.random.default_rng(2).random((128, 96)).astype(np.float32)
    assert 0.4 < rm.mean() < 0.6
    np.testing.assert_array_equal(y, rm & (ra > rb))
