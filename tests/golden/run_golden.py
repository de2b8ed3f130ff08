#!/usr/bin/python3
"""Golden end-to-end cases: a frozen program, its outputs checked against NumPy, and its key
statistics checked against stored values.

    /usr/bin/python3 tests/golden/run_golden.py CASE_DIR --ncsim BIN [--update]

CASE_DIR holds
  program.nca    the program (a frozen, small-size copy of a kernel in kernels/)
  expected.json  {"kernel": name in kernels/ref.py (inputs, reference),
                  "rtol", "atol": output tolerances (why: "tolerance_note"),
                  "total_ns": stored simulated time, "total_ns_rtol": allowed relative drift,
                  "instructions": {"core0": {"pe": n, ...}, ...}  (exact),
                  "dma_transfers": {"core0": n, ...}              (exact)}

The run uses seeded inputs (seed 1) and the trn1 preset. Outputs are compared by
kernels/ref.py; the statistics must match: instruction and transfer counts exactly (they
only depend on the program), total_ns within total_ns_rtol (the cost model is deterministic,
so any drift means the model changed: check it, then --update). --update rewrites the
stored statistics from this run (outputs must still pass).
Exit 0 when everything matches, 1 otherwise.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REF = os.path.join(ROOT, "kernels", "ref.py")
ENGINES = ("pe", "act", "dve", "pool", "sp", "cc")


def main(argv):
    if len(argv) < 1 or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    case = argv[0]
    ncsim = "ncsim"
    update = "--update" in argv
    if "--ncsim" in argv:
        ncsim = argv[argv.index("--ncsim") + 1]
    with open(os.path.join(case, "expected.json")) as f:
        exp = json.load(f)
    work = tempfile.mkdtemp(prefix="ncsim-golden-")
    try:
        return run(case, exp, ncsim, update, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def run(case, exp, ncsim, update, work):
    r = subprocess.run([sys.executable, REF, "check", exp["kernel"], "--ncsim", ncsim,
                        "--program", os.path.join(case, "program.nca"), "--keep", work,
                        "--rtol", repr(exp["rtol"]), "--atol", repr(exp["atol"]), "--seed", "1"],
                       capture_output=True, text=True)
    name = os.path.basename(os.path.normpath(case))
    print(f"{name}: outputs: {r.stdout.strip()}{r.stderr.strip()}")
    if r.returncode != 0:
        return 1
    with open(os.path.join(work, "stats.json")) as f:
        st = json.load(f)
    got_instr = {f"core{c['id']}": {e: c["engines"][e]["instructions"] for e in ENGINES}
                 for c in st["cores"]}
    got_dma = {f"core{c['id']}": c["dma"]["transfers"] for c in st["cores"]}
    if update:
        exp["total_ns"] = st["total_ns"]
        exp["instructions"] = got_instr
        exp["dma_transfers"] = got_dma
        with open(os.path.join(case, "expected.json"), "w") as f:
            json.dump(exp, f, indent=2)
            f.write("\n")
        print(f"{name}: updated: total_ns={st['total_ns']}")
        return 0
    ok = True
    drift = abs(st["total_ns"] - exp["total_ns"]) / exp["total_ns"]
    if drift > exp["total_ns_rtol"]:
        ok = False
        print(f"{name}: total_ns {st['total_ns']} differs from the stored {exp['total_ns']} by "
              f"{drift:.2%} (allowed {exp['total_ns_rtol']:.2%})")
    if got_instr != exp["instructions"]:
        ok = False
        print(f"{name}: instruction counts {got_instr} != stored {exp['instructions']}")
    if got_dma != exp["dma_transfers"]:
        ok = False
        print(f"{name}: DMA transfers {got_dma} != stored {exp['dma_transfers']}")
    print(f"{name}: statistics {'match' if ok else 'DIFFER'}: total_ns={st['total_ns']} "
          f"(stored {exp['total_ns']}, drift {drift:.3%})")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
