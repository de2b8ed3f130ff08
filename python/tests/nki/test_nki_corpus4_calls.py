"""Calls that the fourth corpus set (python/tests/nki/corpus/: pool2d, transpose2d_free,
dropout_rand, lion_step, hash_buckets, sincos_posenc, window_max, quantize_int8,
spmd_layernorm, and the refused gather kernels) found refused, wrong or reported unclearly;
each test fails without its fix.
"""
import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl


def _range_select_at(start):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal,
                                              comp_op1=np.less, bound0=0.0, bound1=float(1 << 25),
                                              range_start=start, on_false_value=nl.fp32.min))
        return out
    return k


def test_range_select_refuses_indices_past_2_to_the_24():
    """The indices are compared in fp32: range_start + free size above 2^24 was accepted (an
    operator-precedence slip in the check) and gave rounded indices. Now refused at the call;
    the largest start that fits still runs."""
    a = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    with pytest.raises(nki.NkiError, match="2\\^24") as e:
        nki.simulate_kernel(_range_select_at((1 << 24) - 8), a)
    assert "test_nki_corpus4_calls.py" in str(e.value)
    with pytest.raises(nki.NkiError, match="2\\^24"):
        nki.simulate_kernel(_range_select_at(-1), a)
    got = nki.simulate_kernel(_range_select_at((1 << 24) - 64), a)
    np.testing.assert_array_equal(got, a)


@nki.jit
def k_masked_softmax(x, nrows):
    """nl.softmax of the first `nrows` rows of a tile (a ragged last row tile's mask)."""
    out = nl.ndarray(x.shape, nl.float32, buffer=nl.shared_hbm)
    ip, iF = nl.arange(128)[:, None], nl.arange(x.shape[1])[None, :]
    m = ip < nrows
    t = nl.load(x[ip, iF], mask=m)
    nl.store(out[ip, iF], value=nl.softmax(t, axis=[1], mask=m), mask=m)
    return out


def test_softmax_under_a_partition_mask():
    """nl.softmax with a mask on fewer partitions than the tile was refused
    (err_activation_bias_invalid_type: "bias must be a [128, 1] vector, got (104, 1)"): it
    handed the exp its bias already cut to the mask, and the exp cut it again."""
    rng = np.random.default_rng(2)
    x = rng.normal(0.0, 2.0, size=(128, 256)).astype(np.float32)
    got = nki.simulate_kernel(k_masked_softmax, x, 104)
    e = np.exp(x[:104].astype(np.float64) - x[:104].max(axis=1, keepdims=True))
    np.testing.assert_allclose(got[:104], e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)
    assert nki.check(k_masked_softmax, x, 104) == []
