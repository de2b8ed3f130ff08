"""The NKI matmul tutorial's NCA port (validation/gen/nki_matmul.py) at small sizes: the
programs compute lhsT.T @ rhs (checked against NumPy), issue the loads the kernels describe,
its --lhs-reuse study (docs/validation.md, "nca-matmul-tiled") only removes lhsT loads, and
no engine or queue races another (ncsim check)."""
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import ncsim

GEN = os.path.join(os.path.dirname(__file__), "..", "..", "validation", "gen", "nki_matmul.py")
M, K, N = 256, 256, 2048          # 2 x 2 x 4 tiles of 128 x 128 x 512


def generate(*args):
    out = subprocess.run([sys.executable, GEN, "--m", str(M), "--k", str(K), "--n", str(N),
                          *args], capture_output=True, text=True, check=True)
    return out.stdout


def bf16_round(x):
    b = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    b = (b + 0x7FFF + ((b >> 16) & 1)) >> 16
    return (b.astype(np.uint32) << 16).view(np.float32)


def loads(text, tile):
    """The dma instructions writing SBUF tile `tile` (ls: lhsT, rs: rhs)."""
    return len(re.findall(rf"^\s*dma {tile}\[", text, re.M))


@pytest.mark.parametrize("args,lhs_loads,rhs_loads", [
    (["--kernel", "tiled"], 2 * 4 * 2, 16),                       # both every (m, n, k)
    (["--kernel", "tiled", "--lhs-reuse", "2"], 2 * 2 * 2, 16),   # lhsT once per 2 n tiles
    (["--kernel", "tiled", "--lhs-reuse", "4"], 2 * 1 * 2, 16),   # once per (m, k)
    (["--kernel", "hoisted"], 2 * 2, 16),
    (["--kernel", "block_free"], 2 * 2, 8),                       # rhs once per 256 rows
])
def test_matmul_port_computes_the_product(args, lhs_loads, rhs_loads):
    text = generate(*args)
    assert loads(text, "ls") == lhs_loads
    assert loads(text, "rs") == rhs_loads
    rng = np.random.default_rng(7)
    a = bf16_round(rng.standard_normal((K, M)))
    b = bf16_round(rng.standard_normal((K, N)))
    # loads (sp) and stores (pool) share queue 0: each engine's transfers count on their own
    # semaphore, so no wait is met by the other engine's transfers (no race)
    assert ncsim.check(text, {"lhsT": a, "rhs": b}) == []
    r = ncsim.run(text, {"lhsT": a, "rhs": b})
    want = a.T.astype(np.float64) @ b.astype(np.float64)
    got = r.outputs["res"]
    # fp32 accumulation, one bf16 rounding of the result: relative 2^-8 of the magnitude
    assert np.max(np.abs(got - want)) <= 2.0 ** -8 * np.max(np.abs(want)) + 1e-3


def test_lhs_reuse_as_written_is_the_manifest_program():
    assert generate("--kernel", "tiled", "--lhs-reuse", "1") == generate("--kernel", "tiled")


def test_lhs_reuse_refused_outside_tiled():
    out = subprocess.run([sys.executable, GEN, "--kernel", "hoisted", "--lhs-reuse", "2"],
                         capture_output=True, text=True)
    assert out.returncode == 2
    assert "--lhs-reuse applies to --kernel tiled only" in out.stderr
