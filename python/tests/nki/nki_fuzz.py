"""A mutation fuzzer for the NKI frontend: our example kernels, mutated, must fail only with the
frontend's documented errors (`NkiError`, located at the kernel, or an `ncsim` error).

Each mutant is one example kernel (python/ncsim/nki/examples) whose syntax tree had one to three
random edits: an integer constant changed (0, -1, +-1, doubled, huge), a slice bound dropped or
changed, an nl/nisa function swapped for another, a data type or buffer swapped, a keyword
argument dropped or given a hostile value, a statement deleted, call arguments swapped; one in
seven also runs with a lowering policy holding random values. It runs functionally at a small
size; the outcome is one of

  ok         the kernel ran (its numbers are not checked: a mutant computes something else)
  nki        an NkiError whose message starts with FILE:LINE: error: [code]
  generic    an NkiError located at the kernel that wraps a Python exception raised inside
             the package (err_unsupported_by_ncsim "cannot lower this call (TypeError ...)"):
             documented, but a specific check would say more; listed, not a finding
  ncsim      an ncsim error (NcsimError and its subclasses)
  slow       it took more than the time limit (skipped, not a finding)
  ESCAPE     any other exception left the package, or an NkiError without a location:
             a finding

    python3 python/tests/nki/nki_fuzz.py [--count N] [--seed S] [--time-limit SEC] [-v] [--emitted]

--emitted mutates the compiler-style kernels of python/tests/nki/corpus/ instead, and also
counts as a finding an error that names a line of the lowered program (an assembly or
run-time error of generated NCA that the call should have refused).

prints the findings with the mutation that caused them and exits 1 when there are any
(scripts/fuzz-nki.sh runs it long; python/tests/nki/test_nki_fuzz.py a fixed seed in CI).
"""
import argparse
import ast
import copy
import os
import random
import re
import signal
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
if os.path.join(ROOT, "python") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402

# (catalog case, sizes for the fuzzer: small enough for a fraction of a second each)
TARGETS = {
    "matmul_basic": dict(M=64, K=128, N=512),
    "matmul_tiled": dict(M=128, K=256, N=512),
    "matmul_hoisted": dict(M=128, K=256, N=512),
    "transpose2d": dict(P=5, X=3, Y=4, dtype="int8"),
    "avgpool2d": dict(C=2, H=6, W=6, pool=2, dtype="float16"),
    "rmsnorm": dict(R=130, N=256),
    "layernorm_v1": dict(R=130, C=256),
    "layernorm_v2": dict(R=130, C=512),
    "silu": dict(M=128, N=1024),
    "adamw": dict(M=200, N=2048),
}

NL_UNARY = ["exp", "log", "sqrt", "rsqrt", "tanh", "sigmoid", "relu", "square", "abs", "sin",
            "cos", "tan", "floor", "ceil", "trunc", "negative", "invert", "logical_not",
            "reciprocal", "sign", "erf", "gelu", "silu", "copy", "transpose", "rand"]
NL_BINARY = ["add", "subtract", "multiply", "divide", "maximum", "minimum", "power", "mod",
             "fmod", "equal", "less", "greater_equal", "logical_and", "bitwise_and",
             "bitwise_xor", "left_shift", "right_shift", "matmul"]
NL_REDUCE = ["sum", "max", "min", "prod", "mean", "var", "all"]
DTYPES = ["float32", "bfloat16", "float16", "int8", "uint8", "int32", "bool_", "float8_e4m3",
          "tfloat32", "uint32"]
BUFFERS = ["sbuf", "psum", "shared_hbm", "hbm", "private_hbm"]
HOSTILE = [ast.Constant(v) for v in (None, -1, 0, 1, 129, 1 << 31, 2.5, "x", True)] + \
    [ast.Tuple([], ast.Load()), ast.List([ast.Constant(0), ast.Constant(9)], ast.Load())]


class _Timeout(BaseException):
    pass


def _alarm(_sig, _frm):
    raise _Timeout()


def _ints(tree):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is int]


def _attrs(tree, names):
    return [n for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in names
            and isinstance(n.value, ast.Name) and n.value.id in ("nl", "nisa", "np")]


def mutate(tree, rng):
    """One random edit of the tree in place; returns its description ('' when none applies)."""
    kind = rng.choice(["int", "int", "slice", "func", "func", "dtype", "buffer", "kw", "kw",
                       "delete", "swap", "index"])
    if kind == "int":
        ns = _ints(tree)
        if ns:
            n = rng.choice(ns)
            old = n.value
            n.value = rng.choice([0, -1, old + 1, old - 1, old * 2, 128, 129, 4096, 1 << 20,
                                  old // 2 if old else 3])
            return f"line {getattr(n, 'lineno', '?')}: int {old} -> {n.value}"
    if kind == "slice":
        ns = [n for n in ast.walk(tree) if isinstance(n, ast.Slice)]
        if ns:
            n = rng.choice(ns)
            which = rng.choice(["lower", "upper", "step"])
            setattr(n, which, rng.choice([None, ast.Constant(rng.choice([0, -1, 1, 7, 129, 100000]))]))
            return f"line {getattr(n, 'lineno', '?')}: slice {which} changed"
    if kind == "func":
        allf = NL_UNARY + NL_BINARY + NL_REDUCE
        ns = _attrs(tree, set(allf))
        if ns:
            n = rng.choice(ns)
            old = n.attr
            pool = NL_UNARY if old in NL_UNARY else NL_BINARY if old in NL_BINARY else NL_REDUCE
            n.attr = rng.choice(pool if rng.random() < 0.8 else allf)
            return f"line {getattr(n, 'lineno', '?')}: {old} -> {n.attr}"
    if kind == "dtype":
        ns = _attrs(tree, set(DTYPES))
        if ns:
            n = rng.choice(ns)
            old, n.attr = n.attr, rng.choice(DTYPES)
            return f"line {getattr(n, 'lineno', '?')}: dtype {old} -> {n.attr}"
    if kind == "buffer":
        ns = _attrs(tree, set(BUFFERS))
        if ns:
            n = rng.choice(ns)
            old, n.attr = n.attr, rng.choice(BUFFERS)
            return f"line {getattr(n, 'lineno', '?')}: buffer {old} -> {n.attr}"
    if kind == "kw":
        ns = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and n.keywords]
        if ns:
            n = rng.choice(ns)
            i = rng.randrange(len(n.keywords))
            if rng.random() < 0.4:
                k = n.keywords.pop(i)
                return f"line {getattr(n, 'lineno', '?')}: keyword {k.arg} dropped"
            n.keywords[i].value = copy.deepcopy(rng.choice(HOSTILE))
            return f"line {getattr(n, 'lineno', '?')}: keyword {n.keywords[i].arg} = {ast.unparse(n.keywords[i].value)}"
    if kind == "delete":
        bodies = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.For, ast.If, ast.With))
                  and len(n.body) > 1]
        if bodies:
            b = rng.choice(bodies)
            i = rng.randrange(len(b.body))
            st = b.body.pop(i)
            return f"line {getattr(st, 'lineno', '?')}: statement deleted"
    if kind == "swap":
        ns = [n for n in ast.walk(tree) if isinstance(n, ast.Call) and len(n.args) >= 2]
        if ns:
            n = rng.choice(ns)
            n.args[0], n.args[1] = n.args[1], n.args[0]
            return f"line {getattr(n, 'lineno', '?')}: arguments swapped"
    if kind == "index":
        ns = [n for n in ast.walk(tree) if isinstance(n, ast.Subscript)]
        if ns:
            n = rng.choice(ns)
            e = rng.choice([ast.Constant(rng.choice([0, -1, 200])),
                            ast.Slice(ast.Constant(0), None, None),
                            ast.Constant(None), ast.Constant(...)])
            if isinstance(n.slice, ast.Tuple) and n.slice.elts:
                j = rng.randrange(len(n.slice.elts))
                n.slice.elts[j] = e
            else:
                n.slice = e
            return f"line {getattr(n, 'lineno', '?')}: subscript changed to {ast.unparse(n)}"
    return ""


_LOCATED = re.compile(r"^[^\n]+:\d+: error: \[[a-z0-9_]+\] ")


def classify(exc):
    """ok / nki / ncsim, or ESCAPE with why."""
    import ncsim
    import ncsim.nki as nki
    if exc is None:
        return "ok", ""
    if isinstance(exc, nki.NkiError):
        if _LOCATED.match(str(exc)):
            if "cannot lower this call (" in str(exc):     # located, but not a specific check
                return "generic", str(exc).splitlines()[0]
            return "nki", str(exc).splitlines()[0]
        return "ESCAPE", "NkiError without FILE:LINE: error: [code]: " + str(exc)[:200]
    if isinstance(exc, ncsim.NcsimError):
        return "ncsim", str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    tb = traceback.extract_tb(exc.__traceback__)
    where = f"{tb[-1].filename}:{tb[-1].lineno}" if tb else "?"
    return "ESCAPE", f"{type(exc).__name__}: {str(exc)[:200]} (raised at {where})"


POLICY_VALUES = [0, -1, 1, 3, 64, 1 << 40, 2.5, "dve", "act", "pool", "pe", "sp", "auto", "gpu",
                 None, [], [0], [3, 99], ["dve", "act"], ("pool",), True]


def random_policy(rng):
    """A lowering policy with one or two options set to random (often hostile) values."""
    import ncsim.nki as nki
    keys = sorted(k for k in vars(nki.policy) if not k.startswith("_"))
    return {rng.choice(keys + ["no_such_option"]): rng.choice(POLICY_VALUES)
            for _ in range(rng.choice([1, 2]))}


def run_source(src, filename, case, params, time_limit, policy=None):
    """Compile and run one kernel source; returns (outcome, detail)."""
    import ncsim.nki as nki
    from ncsim.nki.examples import catalog
    c = next(x for x in catalog.CASES if x.name == case)
    ns = {"__name__": "nki_fuzz_mutant", "__file__": filename}
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, time_limit)
    exc = None
    try:
        try:
            exec(compile(src, filename, "exec"), ns)
        except Exception:
            return "ok", "the mutated module itself fails (user code, not the frontend)"
        k = ns.get(c.kernel)
        if k is None:
            return "ok", "kernel deleted"
        args = c.make_args(dict(params), np.random.default_rng(0))
        try:
            nki.simulate_kernel(k, *args, policy=policy)
        except _Timeout:
            raise
        except Exception as e:          # noqa: BLE001 -- classified below
            exc = e
    except _Timeout:
        return "slow", f"more than {time_limit} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    return classify(exc)


def _mutant(source, kernel, fn, rng):
    """(mutated source, the edits) of a file: one to three edits inside function `kernel` (the
    rest of the file is its test), the text registered as file fn for tracebacks and the
    tracer's line look-ups; (None, edits) when unparse cannot print an edit."""
    import linecache
    tree = ast.parse(source)
    body = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == kernel),
                tree)
    muts = [m for m in (mutate(body, rng) for _ in range(rng.choice([1, 1, 2, 3]))) if m]
    ast.fix_missing_locations(tree)
    try:
        src = ast.unparse(tree)
    except Exception:               # noqa: BLE001 -- an edit unparse cannot print
        return None, muts
    linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)
    return src, muts


def fuzz(count, seed, time_limit=10.0, verbose=False, out=sys.stdout, generic=None):
    """Run `count` mutants; returns (outcome counts, findings [(case, mutations, detail)])."""
    from ncsim.nki.examples import catalog
    rng = random.Random(seed)
    sources = {}
    for case in TARGETS:
        c = next(x for x in catalog.CASES if x.name == case)
        path = os.path.join(ROOT, "python", "ncsim", "nki", "examples", c.module + ".py")
        with open(path) as f:
            sources[case] = f.read()
    counts, findings = {}, []
    cases = sorted(TARGETS)
    for i in range(count):
        case = rng.choice(cases)
        kern = next(x for x in catalog.CASES if x.name == case).kernel
        fn = f"/nki-fuzz/{case}_{seed}_{i}.py"
        src, muts = _mutant(sources[case], kern, fn, rng)
        if src is None:
            continue
        policy = random_policy(rng) if rng.random() < 0.15 else None
        if policy:
            muts.append(f"policy {policy!r}")
        outcome, detail = run_source(src, fn, case, TARGETS[case], time_limit, policy)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "ESCAPE":
            findings.append((case, muts, detail, src))
        if outcome == "generic" and generic is not None:
            generic.append((case, muts, detail))
        if verbose:
            print(f"{i:5d} {case:15s} {outcome:6s} {'; '.join(muts)} -> {detail[:160]}", file=out)
    return counts, findings


CORPUS_DIR = os.path.join(HERE, "corpus")


def fuzz_emitted(count, seed, time_limit=10.0, verbose=False, out=sys.stdout, prefix=""):
    """The same mutations on the compiler-style kernels of python/tests/nki/corpus/ (`kernel` of
    each file, or of the files whose names start with `prefix`), run at the file's small size
    with inputs from its own `inputs`; returns (outcome counts, findings) as fuzz() does."""
    import importlib.util
    import ncsim.nki as nki
    nki.install_neuronxcc_alias()
    names = sorted(f[:-3] for f in os.listdir(CORPUS_DIR)
                   if f.endswith(".py") and f.startswith(tuple(prefix.split(",")))
                   and not f.startswith("_"))
    sources, args, grids = {}, {}, {}
    for n in names:
        path = os.path.join(CORPUS_DIR, n + ".py")
        with open(path) as f:
            sources[n] = f.read()
        spec = importlib.util.spec_from_file_location("nki_fuzz_corpus_" + n, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        args[n] = mod.inputs(mod.SIZES["small"], np.random.default_rng(0))
        grids[n] = (getattr(mod, "GRID", None) or {}).get("small")    # SPMD kernels
    rng = random.Random(seed)
    counts, findings = {}, []
    for i in range(count):
        n = rng.choice(names)
        fn = f"/nki-fuzz/corpus_{n}_{seed}_{i}.py"
        src, muts = _mutant(sources[n], "kernel", fn, rng)
        if src is None:
            continue
        ns = {"__name__": "nki_fuzz_mutant", "__file__": fn}
        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, time_limit)
        exc = None
        try:
            try:
                exec(compile(src, fn, "exec"), ns)
            except Exception:           # noqa: BLE001 -- the mutated module itself (user code)
                ns = None
            if ns is not None:
                try:
                    k = ns["kernel"][grids[n]] if grids[n] else ns["kernel"]
                    nki.simulate_kernel(k, *args[n])
                except _Timeout:
                    raise
                except Exception as e:  # noqa: BLE001 -- classified below
                    exc = e
            outcome, detail = classify(exc) if ns is not None else ("ok", "module fails")
        except _Timeout:
            outcome, detail = "slow", f"more than {time_limit} s"
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        counts[outcome] = counts.get(outcome, 0) + 1
        if outcome == "ESCAPE" or outcome == "nki" and "lowered program" in detail:
            # an error of the generated NCA, though located, is a finding: the call should
            # have been refused (or lowered) at the kernel's line
            findings.append((n, muts, detail, src))
        if verbose:
            print(f"{i:5d} {n:15s} {outcome:6s} {'; '.join(muts)} -> {detail[:160]}", file=out)
    return counts, findings


# Hand-written hostile kernels (the fixed corpus): source, the catalog case whose arguments
# they take, and the outcome they must have.
CORPUS = [
    ("mgrid without a stop", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    i_p, i_f = nl.mgrid[0:128, 0:]
    nl.store(out[i_p, i_f], value=nl.load(a[i_p, i_f]))
    return out
"""),
    ("arange of a float", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    i = nl.arange(2.5)[:, None]
    nl.store(out[i, 0], value=nl.load(a[i, 0]))
    return out
"""),
    ("tile of a negative size", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.ndarray((128, -4), nl.float32, buffer=nl.sbuf)
    return out
"""),
    ("dtype that is not one", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, "float99", buffer=nl.shared_hbm)
    return out
"""),
    ("shape of strings", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.zeros(("128", 4), nl.float32, buffer=nl.sbuf)
    nl.store(out[0:128, 0:4], value=t)
    return out
"""),
    ("affine index past the tile", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray((128, 8), a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, 0:16])
    i0, i1, i2 = nl.mgrid[0:128, 0:8, 0:2]
    u = nl.ndarray((128, 8, 2), a.dtype, buffer=nl.sbuf)
    u[i0, i1, i2] = nl.copy(t[i0, 2 * i1 + i2 + 1])
    nl.store(out, value=u[:, :, 0])
    return out
"""),
    ("affine_range of a float", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    for i in nl.affine_range(1.5):
        pass
    return out
"""),
    ("mask of the wrong type", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, 0:8], mask="yes")
    nl.store(out[0:128, 0:8], value=t)
    return out
"""),
    ("reduction over a bad axis", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray((128, 1), a.dtype, buffer=nl.shared_hbm)
    t = nl.load(a[0:128, 0:8])
    nl.store(out, value=nl.sum(t, axis=7))
    return out
"""),
    ("store to an input", "rmsnorm", """
import ncsim.nki as nki
import ncsim.nki.language as nl
@nki.jit
def nki_rmsnorm_kernel(a, g):
    out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
    nl.store(a[0:128, 0:8], value=nl.load(a[0:128, 0:8]))
    nl.store(out[0:128, 0:8], value=nl.load(a[0:128, 0:8]))
    return out
"""),
]


def run_corpus(time_limit=20.0):
    """The fixed corpus: [(name, outcome, detail)]."""
    res = []
    for name, case, src in CORPUS:
        fn = f"/nki-fuzz/corpus_{re.sub(r'[^a-z0-9]+', '_', name)}.py"
        import linecache
        linecache.cache[fn] = (len(src), None, src.splitlines(True), fn)
        outcome, detail = run_source(src, fn, case, TARGETS[case], time_limit)
        res.append((name, outcome, detail))
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--count", type=int, default=500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--time-limit", type=float, default=10.0)
    ap.add_argument("-v", "--verbose", action="store_true")
    ap.add_argument("--emitted", action="store_true",
                    help="mutate the compiler-style kernels of python/tests/nki/corpus instead")
    ap.add_argument("--prefix", default="",
                    help="with --emitted: only the corpus files whose names start with it "
                         "(or with one of several, separated by commas)")
    a = ap.parse_args(argv)
    if a.emitted:
        t0 = time.time()
        counts, findings = fuzz_emitted(a.count, a.seed, a.time_limit, a.verbose, prefix=a.prefix)
        for case, muts, detail, _src in findings:
            print(f"FINDING {case}: {'; '.join(muts)}\n    {detail}")
        print(f"{a.count} mutants of the corpus (seed {a.seed}) in {time.time() - t0:.0f} s: " +
              ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + f"; {len(findings)} findings")
        return 1 if findings else 0
    t0 = time.time()
    bad = 0
    for name, outcome, detail in run_corpus():
        print(f"corpus: {name}: {outcome}: {detail[:160]}")
        bad += outcome == "ESCAPE"
    generic = []
    counts, findings = fuzz(a.count, a.seed, a.time_limit, a.verbose, generic=generic)
    for case, muts, detail, _src in findings:
        print(f"FINDING {case}: {'; '.join(muts)}\n    {detail}")
    for case, muts, detail in generic[:30]:
        print(f"generic {case}: {'; '.join(muts)}\n    {detail}")
    print(f"{a.count} mutants (seed {a.seed}) in {time.time() - t0:.0f} s: " +
          ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) +
          f"; {len(findings) + bad} findings")
    return 1 if findings or bad else 0


if __name__ == "__main__":
    sys.exit(main())
