"""Buffers of other allocation sites taken when SBUF is full (Policy.lend_buffers, docs/nki.md
"Allocation of tiles"): "share" keeps the taken buffer as the taker's own, so a loop body's
tensors sit at fixed addresses in every iteration; "lend" lends it for one tensor."""
import re

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.typing as nt
from ncsim.nki.examples.catalog import BY_NAME

SQUARE = re.compile(r"activate sb:fp32@0:128\+(\d+)\[1x8192\], sb:fp32@0:128\+\d+\[1x8192\], square")


def _squares(policy):
    """Where LayerNorm v1 (4096 x 8192 fp32) puts each tile's x^2: SBUF holds its five 32 KiB
    tiles (x, two working tiles, gamma and beta broadcast) but not a second buffer for each, so
    the working tiles take the dead one-partition gamma and beta rows."""
    case = BY_NAME["layernorm_v1"]
    kernel, _ = case.load()
    args = tuple(nt.tensor[[*a.shape], a.dtype] if isinstance(a, np.ndarray) else a
                 for a in case.args("tutorial", 0, timing=True))
    text = nki.lower(kernel, *args, policy=dict(policy, fold_loops=False)).text
    return [int(x) for x in SQUARE.findall(text)]


def test_share_keeps_a_loop_tensor_at_one_address():
    offs = _squares({})
    assert len(offs) == 32 and len(set(offs)) == 1


def test_lend_lets_it_move_between_iterations():
    offs = _squares({"lend_buffers": "lend"})
    assert len(offs) == 32 and len(set(offs)) == 2
    assert offs[0::2] == [offs[0]] * 16 and offs[1::2] == [offs[1]] * 16


def _lowers(kernel, args, pol):
    try:
        nki.lower(kernel, *args, policy=pol)
        return True
    except nki.NkiError as e:
        assert "err_out_of_memory" in str(e)
        return False


@pytest.mark.parametrize("name", ["layernorm_v1", "layernorm_v2", "rmsnorm", "silu"])
def test_both_policies_compute_the_same(name):
    """With SBUF cut to the least in which the kernel lowers under both policies (so that sites
    take each other's buffers), both give bit-identical results, match NumPy and are
    check-clean."""
    case = BY_NAME[name]
    kernel, ref = case.load()
    args = case.args("small", 0)
    lo, hi = 64, 192 * 1024           # the least sbuf_bytes (in 64-byte steps) that lowers
    while lo < hi:
        mid = (lo + hi) // 128 * 64
        if all(_lowers(kernel, args, {"lend_buffers": lend, "sbuf_bytes": mid})
               for lend in ("share", "lend")):
            hi = mid
        else:
            lo = mid + 64
    outs = []
    for lend in ("share", "lend"):
        pol = {"lend_buffers": lend, "sbuf_bytes": lo}
        out = nki.simulate_kernel(kernel, *args, policy=pol)
        assert nki.check(kernel, *args, policy=pol) == []
        outs.append(np.asarray(out))
    assert np.array_equal(outs[0], outs[1], equal_nan=True)
    if name == "layernorm_v1":      # the two policies place its tiles differently there
        texts = [nki.lower(kernel, *args, policy={"lend_buffers": lend, "sbuf_bytes": lo}).text
                 for lend in ("share", "lend")]
        assert texts[0] != texts[1]
    atol, rtol = case.tol
    np.testing.assert_allclose(np.asarray(outs[0], np.float64),
                               np.asarray(ref(*args), np.float64), atol=atol, rtol=rtol)


def test_bad_value_refused():
    case = BY_NAME["silu"]
    kernel, _ = case.load()
    with pytest.raises(nki.NkiError, match="lend_buffers"):
        nki.lower(kernel, *case.args("small", 0), policy={"lend_buffers": "maybe"})
    with pytest.raises(nki.NkiError, match="schedule_window"):
        nki.lower(kernel, *case.args("small", 0), policy={"schedule_window": -1})
