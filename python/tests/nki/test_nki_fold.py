"""The lowered program's repeated runs of instructions are written as .loop nests (docs/nki.md,
"Loops in the program text"): the folded text assembles to exactly the instructions of the
unfolded one, and is a fraction of its size."""
import numpy as np
import pytest

import ncsim
from ncsim import nki
from ncsim.nki.examples.catalog import BY_NAME

from test_nki_blocks import k_psum_blocks, k_stream, k_two_phase
from test_nki_resident import k_bias_blocks


def _same(kern, *args):
    folded = nki.lower(kern, *args).text
    flat = nki.lower(kern, *args, policy={"fold_loops": False}).text
    assert ".loop" not in flat
    assert ncsim.assemble(folded).disassemble() == ncsim.assemble(flat).disassemble()
    return folded, flat


def test_fold_stream_kernel():
    x = np.zeros((128, 64 * 1024), np.float32)
    folded, flat = _same(k_stream, x)
    assert ".loop i0 = 0, " in folded and len(folded) * 5 < len(flat)


@pytest.mark.parametrize("case", ["spill", "psum", "resident"])
def test_fold_other_kernels(case):
    rng = np.random.default_rng(0)
    if case == "spill":
        _same(k_two_phase, rng.standard_normal((128, 56 * 1024), dtype=np.float32), True)
    elif case == "psum":
        _same(k_psum_blocks, rng.standard_normal((512, 128), dtype=np.float32),
              rng.standard_normal((512, 2048), dtype=np.float32))
    else:
        _same(k_bias_blocks, np.zeros((1024, 512), np.float32), np.zeros((128, 512), np.float32))


@pytest.mark.parametrize("name", ["matmul_tiled", "matmul_optimized", "layernorm_v2", "mamba_v3",
                                  "attention"])
def test_fold_tutorials(name):
    case = BY_NAME[name]
    kernel, _ = case.load()
    args = case.args("small", 0, timing=False)
    folded, flat = _same(kernel, *args)
    assert len(folded) <= len(flat)


def test_folded_program_runs_the_same():
    x = np.random.default_rng(1).standard_normal((128, 16 * 1024), dtype=np.float32)
    a = nki.simulate_kernel(k_stream, x)
    b = nki.simulate_kernel(k_stream, x, policy={"fold_loops": False})
    np.testing.assert_array_equal(a, b)
