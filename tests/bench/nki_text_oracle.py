#!/usr/bin/python3
"""Save, or compare against, the NCA program text that nki.lower() gives for every kernel of
python/ncsim/nki/examples/catalog.py (timing=True arguments, as bench_nki_matmul.py makes them).
A change meant to make lowering cheaper must leave every text byte-identical.

    NCSIM_LIBRARY=build/libncsim.so /usr/bin/python3 tests/bench/nki_text_oracle.py --save DIR
    NCSIM_LIBRARY=build/libncsim.so /usr/bin/python3 tests/bench/nki_text_oracle.py --check DIR

DIR receives one file per kernel and size (NAME.SIZE.nca, or NAME.SIZE.err when lowering
fails: the error must then be the same) and NAME.SIZE.loops, the steady-state decisions
(nki.lower(...).loops: per loop statement, iterations, replayed ones and why refused; the
file paths relative to the repository), which must be the same too. --sizes picks sizes
(default small,moderate,tutorial); --only picks kernels; --skip-slow-tutorial lowers at
tutorial size only the four matmuls.
--corpus: the kernels of python/tests/nki/corpus/ instead (tests/bench/nki_corpus.py), at their
sizes small and full (--sizes), with timing-only placeholders for their inputs.
Prints CPU seconds per lowering; exit 1 when a text differs.

--assembled (with --check): a text that differs is assembled, and so is the saved one, and the
two programs' disassemblies (every instruction, in order, with its waits and views: the loops
unrolled) must be identical ("same program"); for a change that writes the same program as
other text (the folding into loops).
"""
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import ncsim  # noqa: E402
from ncsim import nki  # noqa: E402
from ncsim.nki.examples.catalog import CASES  # noqa: E402
import ncsim.nki.typing as nt  # noqa: E402

MATMULS = ("matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_optimized")


def _program(text):
    return ncsim.assemble(text).disassemble()


def _catalog_jobs(sizes, only, skip_slow_tutorial):
    for size in sizes.split(","):
        for case in CASES:
            if only and case.name not in only:
                continue
            if size not in case.sizes:
                continue
            if size == "tutorial" and skip_slow_tutorial and case.name not in MATMULS:
                continue
            kernel, _ = case.load()
            yield case.name, size, kernel, case.args(size, 0, timing=True)


def _corpus_jobs(sizes, only):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import nki_corpus
    import numpy as np
    names = sorted(f[:-3] for f in os.listdir(nki_corpus.CORPUS)
                   if f.endswith(".py") and not f.startswith("_"))
    for size in sizes.split(","):
        for name in names:
            if only and name not in only:
                continue
            mod = nki_corpus.load(name)
            if size not in mod.SIZES:
                continue
            args = mod.inputs(mod.SIZES[size], np.random.default_rng(0))
            grid = getattr(mod, "GRID", None)        # an SPMD kernel, launched on its grid
            kernel = mod.kernel[grid[size]] if grid else mod.kernel
            yield name, size, kernel, [nt.tensor[[*x.shape], str(x.dtype)] for x in args]


def _loops(low):
    """nki.lower(...).loops as text, file paths relative to the repository."""
    out = []
    for e in low.loops:
        e = dict(e)
        if isinstance(e.get("file"), str) and e["file"].startswith(ROOT + os.sep):
            e["file"] = os.path.relpath(e["file"], ROOT)
        out.append(e)
    return json.dumps(out, indent=1, sort_keys=True, default=str) + "\n"


def main():
    ap = argparse.ArgumentParser()
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--save", metavar="DIR")
    g.add_argument("--check", metavar="DIR")
    ap.add_argument("--sizes", default=None,
                    help="default small,moderate,tutorial (small,full with --corpus)")
    ap.add_argument("--corpus", action="store_true",
                    help="the corpus kernels (python/tests/nki/corpus/) instead of the catalog")
    ap.add_argument("--only", default="", help="comma-separated kernel names")
    ap.add_argument("--skip-slow-tutorial", action="store_true")
    ap.add_argument("--assembled", action="store_true",
                    help="with --check: a different text passes if it assembles to the same "
                         "program")
    a = ap.parse_args()
    d = a.save or a.check
    os.makedirs(d, exist_ok=True)
    only = set(filter(None, a.only.split(",")))
    bad = 0
    sizes = a.sizes or ("small,full" if a.corpus else "small,moderate,tutorial")
    for name, size, kernel, args in (_corpus_jobs(sizes, only) if a.corpus else
                                     _catalog_jobs(sizes, only, a.skip_slow_tutorial)):
        c0 = time.process_time()
        loops = None
        try:
            low = nki.lower(kernel, *args)
            out, ext = low.text, "nca"
            loops = _loops(low)
        except Exception as e:  # the error text is part of the output too
            out, ext = f"{type(e).__name__}: {e}\n", "err"
        cpu = time.process_time() - c0
        base = os.path.join(d, f"{name}.{size}")
        if a.save:
            for old in (base + ".nca", base + ".err", base + ".loops"):
                if os.path.exists(old):
                    os.remove(old)
            with open(f"{base}.{ext}", "w") as f:
                f.write(out)
            if loops is not None:
                with open(base + ".loops", "w") as f:
                    f.write(loops)
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
                if loops is not None and os.path.exists(base + ".loops"):
                    with open(base + ".loops") as f:
                        if f.read() != loops:
                            status += ", LOOPS DIFFER"
                            same = False
                bad += not same
        print(f"{name:20} {size:9} {cpu:7.2f} s  {len(out):9d} B  {status}", flush=True)
    if a.check:
        print("all identical" if not bad else f"{bad} differ")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
