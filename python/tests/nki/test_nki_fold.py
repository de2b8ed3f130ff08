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


def test_inner_loops_first():
    """Folding finds the short periods first, then the loops around them: eight repeated lines
    and a different one, twice, are a loop of two over (a loop of eight, one line) -- not a loop
    of two over nine lines, which the longest-run-first search took."""
    from ncsim.nki._fold import fold
    lines = []
    for r in range(2):
        lines.append(f"    act_op sb:fp32@0:128+{4096 * r}[1x8] | wait s_pe >= {r + 1}")
        lines += [f"    dve_op sb:fp32@0:128+{4096 * r + 64 * k}[1x8]" for k in range(8)]
    out = fold(lines)
    assert out[0] == "    .loop i0 = 0, 2"
    assert "        .loop i1 = 0, 8" in out
    assert "            dve_op sb:fp32@0:128+((0+4096*i0)+64*i1)[1x8]" in out
    assert len(out) == 6
    assert out == fold(lines, fast=False)


@pytest.mark.parametrize("name", ["matmul_hoisted", "matmul_optimized", "mamba_v1", "adamw"])
def test_fold_catalog_moderate(name):
    """Catalog kernels at their moderate size: the folded text is the program of the unfolded
    one and at most 3/5 of its size."""
    case = BY_NAME[name]
    kernel, _ = case.load()
    folded, flat = _same(kernel, *case.args("moderate", 0, timing=True))
    assert len(folded) * 5 <= len(flat) * 3


def test_hoisted_tutorial_text_is_a_tenth(monkeypatch):
    """The hoisted tutorial matmul at full size (32,768 loads and matmuls per engine): its
    text is a tenth of what the longest-run-first folding gave (5.1 MB then, 0.52 MB now). What
    stays unrolled is the allocator's choice of buffers for rhs_tiles, a ring of 1 KiB buffers
    that one loop-invariant affine offset cannot follow (docs/nki.md, "Loops in the program
    text"). Lowered once (the trace oracle's reference lowering at this size takes minutes;
    the ctest oracle checks the same code on the smaller sizes)."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    case = BY_NAME["matmul_hoisted"]
    kernel, _ = case.load()
    text = nki.lower(kernel, *case.args("tutorial", 0, timing=True)).text
    assert len(text) < 600_000
    assert text.count("\n") < 8000


@pytest.mark.parametrize("which", ["k_iota_index", "k_rand_loop", "k_xor_index"])
def test_fold_integer_immediates(which):
    """Kernels whose iota base, rand counters or integer operand grow with the loop index:
    folded with those numbers as expressions of the loop variable, the same instructions as
    the unfolded text, and the same text from the C passes and the Python ones."""
    import test_nki_steady as S
    kern = getattr(S, which)
    rng = np.random.default_rng(2)
    a = (rng.integers(-99, 99, (128, 128 * 24)).astype(np.int32) if which == "k_xor_index"
         else rng.random((128, 128 * 24), dtype=np.float32))
    folded, flat = _same(kern, a)
    assert len(folded) * 2 < len(flat)
    assert ("bitwise_xor, (" if which == "k_xor_index" else "base=(") in folded
    py = nki.lower(kern, a, policy={"native_passes": "python"}).text
    assert py == folded
