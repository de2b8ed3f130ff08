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
