#!/usr/bin/python3
"""Save, or compare against, the NCA program text that nki.lower() gives for every kernel of
python/ncsim/nki/examples/catalog.py (timing=True arguments, as bench_nki_matmul.py makes them).
A change meant to make lowering cheaper must leave every text byte-identical.

    NCSIM_LIBRARY=build/libncsim.so /usr/bin/python3 tests/bench/nki_text_oracle.py --save DIR
    NCSIM_LIBRARY=build/libncsim.so /usr/bin/python3 tests/bench/nki_text_oracle.py --check DIR

DIR receives one file per kernel and size (NAME.SIZE.nca, or NAME.SIZE.err when lowering
fails: the error must then be the same). --sizes picks sizes (default small,moderate,tutorial);
--only picks kernels; --skip-slow-tutorial lowers at tutorial size only the four matmuls.
Prints CPU seconds per lowering; exit 1 when a text differs.

--assembled (with --check): a text that differs is assembled, and so is the saved one, and the
two programs' disassemblies (every instruction, in order, with its waits and views: the loops
unrolled) must be identical ("same program"); for a change that writes the same program as
other text (the folding into loops).

--corpus: the kernels of python/tests/nki/corpus/ instead of the catalog (sizes small and
full, shape-and-dtype placeholders for their inputs, as nki_corpus.py times them).
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import ncsim  # noqa: E402
from ncsim import nki  # noqa: E402
from ncsim.nki.examples.catalog import CASES  # noqa: E402

MATMULS = ("matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_optimized")


def _program(text):
    return ncsim.assemble(text).disassemble()


class _CorpusCase:
    """A corpus kernel with the interface of a catalog case that main() uses."""

    def __init__(self, name):
        self.name = name
        self.mod = None
        self.sizes = ("small", "full")

    def load(self):
        if self.mod is None:
            import importlib.util
            nki.install_neuronxcc_alias()
            path = os.path.join(ROOT, "python", "tests", "nki", "corpus", self.name + ".py")
            spec = importlib.util.spec_from_file_location("nki_corpus_" + self.name, path)
            self.mod = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(self.mod)
        return self.mod.kernel, self.mod.reference

    def args(self, size, seed=0, timing=False):
        import numpy as np
        import ncsim.nki.typing as nt
        args = self.mod.inputs(self.mod.SIZES[size], np.random.default_rng(seed))
        return [nt.tensor[[*x.shape], str(x.dtype)] for x in args]


def _corpus():
    d = os.path.join(ROOT, "python", "tests", "nki", "corpus")
    return [_CorpusCase(f[:-3]) for f in sorted(os.listdir(d))
            if f.endswith(".py") and not f.startswith("_")]


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", metavar="DIR")
    g.add_argument("--check", metavar="DIR")
    ap.add_argument("--sizes", default="small,moderate,tutorial")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--skip-slow-tutorial", action="store_true")
    ap.add_argument("--corpus", action="store_true",
                    help="the corpus kernels (sizes small,full) instead of the catalog")
    ap.add_argument("--assembled", action="store_true",
                    help="with --check: a different text passes if it assembles to the same "
                         "program")
    a = ap.parse_args()
    d = a.save or a.check
    os.makedirs(d, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    cases = _corpus() if a.corpus else CASES
    sizes = "small,full" if a.corpus and a.sizes == ap.get_default("sizes") else a.sizes
    bad = 0
    for size in sizes.split(","):
        for case in cases:
            if only and case.name not in only:
                continue
            if size not in case.sizes:
                continue
            if size == "tutorial" and a.skip_slow_tutorial and case.name not in MATMULS:
                continue
            kernel, _ = case.load()
            args = case.args(size, 0, timing=True)
            c0 = time.process_time()
            try:
                out, ext = nki.lower(kernel, *args).text, "nca"
            except Exception as e:  # the error text is part of the output too
                out, ext = f"{type(e).__name__}: {e}\n", "err"
            cpu = time.process_time() - c0
            base = os.path.join(d, f"{case.name}.{size}")
            if a.save:
                for old in (base + ".nca", base + ".err"):
                    if os.path.exists(old):
                        os.remove(old)
                with open(f"{base}.{ext}", "w") as f:
                    f.write(out)
                status = "saved"
            else:
                path = f"{base}.{ext}"
                if not os.path.exists(path):
                    status, bad = "MISSING (or outcome changed)", bad + 1
                else:
                    with open(path) as f:
                        saved = f.read()
                    same = saved == out
                    status = "same" if same else "DIFFERS"
                    if not same and a.assembled and ext == "nca":
                        same = _program(saved) == _program(out)
                        status = (f"same program ({len(saved)} B saved)" if same else
                                  "DIFFERENT PROGRAM")
                    bad += not same
            print(f"{case.name:20} {size:9} {cpu:7.2f} s  {len(out):9d} B  {status}", flush=True)
    if a.check:
        print("all identical" if not bad else f"{bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
