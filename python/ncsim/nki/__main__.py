"""python3 -m ncsim.nki: run an unmodified NKI kernel file on ncsim.

    python3 -m ncsim.nki run KERNEL.py FUNC [--arg A ...] [--grid 2,2] [--out DIR]
                         [--benchmark] [--stats S.json] [--trace T.pftrace] [--nca K.nca] [--check]

Each --arg is one positional argument of the kernel, in order: FILE.npy, `rand:SHAPE:DTYPE`
(uniform [0, 1) values, e.g. rand:128x512:float32), or a Python literal (1e-5, (3, 4), True).
The file may `import neuronxcc.nki as nki`, `neuronxcc.nki.language as nl` and
`neuronxcc.nki.isa as nisa`: the runner installs ncsim's alias for them first, and refuses if
a real neuronxcc is importable (use ncsim.nki directly then).
Exit codes: 0 ok, 1 the kernel or the program is wrong (NKI error, check findings), 2 usage.
"""
import argparse
import ast
import importlib.util
import json
import os
import sys

import numpy as np


def parse_arg(s):
    if s.endswith(".npy"):
        return np.load(s)
    if s.startswith("rand:"):
        _, shape, *dt = s.split(":")
        shape = tuple(int(x) for x in shape.split("x"))
        dt = dt[0] if dt else "float32"
        return np.random.default_rng(0).random(shape).astype(dt)
    try:
        return ast.literal_eval(s)
    except (ValueError, SyntaxError):
        raise SystemExit(f"python3 -m ncsim.nki: cannot read argument {s!r} "
                         "(FILE.npy, rand:SHAPE:DTYPE or a Python literal)")


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m ncsim.nki", description=__doc__.split("\n")[1])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="trace, simulate and time a kernel")
    r.add_argument("file")
    r.add_argument("func")
    r.add_argument("--arg", action="append", default=[], help="a kernel argument, in order")
    r.add_argument("--grid", help="SPMD launch grid, e.g. 2,2")
    r.add_argument("--out", help="directory for the outputs (NAME.npy)")
    r.add_argument("--benchmark", action="store_true", help="timing only (nki.benchmark)")
    r.add_argument("--stats", help="write the statistics JSON here")
    r.add_argument("--trace", help="write a trace (.json, .json.gz, .pftrace)")
    r.add_argument("--nca", help="write the lowered NCA program here")
    r.add_argument("--check", action="store_true", help="run `ncsim check` on the lowered program")
    r.add_argument("--arch", default="trn1")
    a = ap.parse_args(argv)

    from . import NkiError, install_neuronxcc_alias, Kernel, _exec
    try:
        install_neuronxcc_alias()
    except RuntimeError as e:
        print(f"python3 -m ncsim.nki: {e}", file=sys.stderr)
        return 2
    sys.path.insert(0, os.path.dirname(os.path.abspath(a.file)))
    spec = importlib.util.spec_from_file_location("_nki_kernel_file", a.file)
    if spec is None:
        print(f"python3 -m ncsim.nki: cannot load {a.file}", file=sys.stderr)
        return 2
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    fn = getattr(mod, a.func, None)
    if fn is None:
        print(f"python3 -m ncsim.nki: {a.file} has no {a.func}", file=sys.stderr)
        return 2
    k = fn if isinstance(fn, Kernel) else Kernel(fn)
    if a.grid:
        k = k[tuple(int(x) for x in a.grid.split(","))]
    args = [parse_arg(s) for s in a.arg]
    try:
        low, res = k._run(args, {}, timing_only=a.benchmark, trace=a.trace, arch=a.arch)
        findings = []
        if a.check:
            findings = _exec.check(low.text, low.name, {n: v for n, v in low.inputs.items()
                                                         if v is not None}, arch=a.arch)
    except NkiError as e:
        print(e, file=sys.stderr)
        return 1
    if a.nca:
        with open(a.nca, "w") as f:
            f.write(low.text)
    if a.stats:
        with open(a.stats, "w") as f:
            json.dump(res.stats, f, indent=1)
    if a.out and not a.benchmark:
        os.makedirs(a.out, exist_ok=True)
        for name, v in res.outputs.items():
            np.save(os.path.join(a.out, name + ".npy"), v)
    from . import _summary
    s = _summary(res, low)
    eng = ", ".join(f"{e} {v['utilisation'] * 100:.0f}%" for e, v in s["engines"].items())
    print(f"{low.name}: {res.time_ns / 1000:.3f} us simulated, {low.instructions} instructions; "
          f"busy: {eng}; bottleneck {s['bottleneck']}")
    if a.check:
        print(f"ncsim check: {'clean' if not findings else str(len(findings)) + ' findings'}")
        for f in findings[:10]:
            print("  ", f.get("kind") if isinstance(f, dict) else f)
        if findings:
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
