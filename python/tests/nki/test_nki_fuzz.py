"""The NKI mutation fuzzer (nki_fuzz.py) at a fixed seed and corpus: mutated example kernels fail
only with located NkiErrors or ncsim errors (scripts/fuzz-nki.sh runs it longer)."""
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import nki_fuzz  # noqa: E402

import ncsim.nki as nki  # noqa: E402


def test_the_oracle_catches_escapes():
    try:
        raise TypeError("unsupported operand")
    except TypeError as e:
        assert nki_fuzz.classify(e)[0] == "ESCAPE"
    assert nki_fuzz.classify(nki.NkiError("no location"))[0] == "ESCAPE"
    assert nki_fuzz.classify(nki.NkiError("k.py:3: error: [err_x] y"))[0] == "nki"
    assert nki_fuzz.classify(None)[0] == "ok"


def test_the_mutator_changes_kernels():
    import ast
    import random
    rng = random.Random(5)
    src = "def k(a):\n    t = nl.exp(a[0:128, 0:4], dtype=nl.float32)\n    return t\n"
    changed = 0
    for _ in range(40):
        tree = ast.parse(src)
        if nki_fuzz.mutate(tree, rng) and ast.unparse(tree) != ast.unparse(ast.parse(src)):
            changed += 1
    assert changed >= 30


WANT = {
    "mgrid without a stop": "[err_unsupported_index] nl.mgrid axis 1: a slice needs a stop",
    "tile of a negative size": "[err_invalid_shape]",
    "dtype that is not one": "[err_invalid_dtype]",
    "shape of strings": "[err_invalid_shape]",
    "affine index past the tile": "[err_tensor_access_out_of_bound]",
    "reduction over a bad axis": "[err_invalid_axis]",
    "store to an input": "[err_cannot_update_immutable_parameter]",
}


def test_corpus():
    for name, outcome, detail in nki_fuzz.run_corpus():
        assert outcome in ("ok", "nki", "ncsim"), (name, outcome, detail)
        if name in WANT:
            assert outcome == "nki" and WANT[name] in detail, (name, detail)
            assert detail.startswith("/nki-fuzz/corpus_"), detail


def test_fixed_seed():
    generic = []
    counts, findings = nki_fuzz.fuzz(200, seed=1, time_limit=20.0, generic=generic)
    assert not findings, "\n".join(f"{c}: {'; '.join(m)}: {d}" for c, m, d, _ in findings)
    # the mutants exercise both sides: kernels that still run and located errors
    assert counts.get("nki", 0) > 50 and counts.get("ok", 0) > 20, counts
