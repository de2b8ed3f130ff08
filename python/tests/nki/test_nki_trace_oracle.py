"""The tracer's optimised paths (Policy.fast_trace, the default) against its reference paths
(fast_trace=False): every kernel of the catalog in python/ncsim/nki/examples, at its small and
moderate sizes, lowers to the same program text, the same tensor report and the same spill
figures (docs/nki.md, "Cost of lowering"). The kernels of the other NKI tests are compared the
same way by the ctest python_pytest_nki_oracle, which runs them with NCSIM_NKI_TRACE_ORACLE=1."""
import pytest

from ncsim import nki
from ncsim.nki import _core
from ncsim.nki.examples.catalog import CASES


def _lower(case, size, fast, fold=True):
    kernel, _ = case.load()
    args = case.args(size, 0, timing=True)
    return nki.lower(kernel, *args, policy={"fast_trace": fast, "fold_loops": fold})


@pytest.mark.parametrize("size", ["small", "moderate"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_fast_trace_same_program(case, size):
    if size not in case.sizes:
        pytest.skip(f"{case.name} has no {size} size")
    fast = _lower(case, size, True)
    ref = _lower(case, size, False)
    assert fast.text == ref.text
    assert fast.tensors == ref.tensors
    assert fast.spill == ref.spill


def test_switch_reaches_the_tracer(monkeypatch):
    """The switch is not ignored: the reference path runs when fast_trace is False."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    calls = []
    orig = _core._adv_index_ref

    def spy(t, key):
        calls.append(1)
        return orig(t, key)
    _core._adv_index_ref = spy
    try:
        case = [c for c in CASES if c.name == "matmul_hoisted"][0]
        _lower(case, "small", True)
        n_fast = len(calls)
        _lower(case, "small", False)
        n_ref = len(calls) - n_fast
    finally:
        _core._adv_index_ref = orig
    assert n_fast == 0 and n_ref > 0
