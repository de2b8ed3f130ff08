#!/usr/bin/python3
"""Collective times per algorithm: all_reduce, all_gather and reduce_scatter over 2 ranks (one
trn1 chip), 32 ranks (trn1-32xl) and 64 ranks (trn1-32xl-x2, two instances), from 8 B to
1 GiB, with the presets' default rule (auto in the SDK 2.10 runtime), auto in the current
runtime, and each algorithm forced (docs/data-movement.md, "Collective times by algorithm").

    scripts/cc_sweep.py [NCSIM] [--jobs N] [--doc]

Prints the markdown tables; --doc writes them between the cc-sweep markers of
docs/data-movement.md. Programs come from validation/gen/collective.py (ranks in a snake
order of the chips, both cores of a chip adjacent, instance by instance); every run is
timing-only. Sizes are the collective's buffer: all_reduce's, all_gather's output,
reduce_scatter's input (nccom-test's size column); a size that leaves a rank less than one
fp32 element is skipped."""
import os, re, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = [x for x in sys.argv[1:]]
jobs = 2
if "--jobs" in args:
    i = args.index("--jobs")
    jobs = int(args[i + 1])
    del args[i:i + 2]
doc = "--doc" in args
args = [x for x in args if x != "--doc"]
NCSIM = args[0] if args else os.path.join(ROOT, "build", "ncsim")

SYSTEMS = [(2, "trn1"), (32, "trn1-32xl"), (64, "trn1-32xl-x2")]
OPS = ["all_reduce", "all_gather", "reduce_scatter"]
SIZES = [8 << (3 * k) for k in range(10)]  # 8 B, 64 B, ..., 128 MiB, 1 GiB
# (column, --set options); the 64-rank columns force the stage within instances and keep
# the plan hierarchical (with two instances every network algorithm is the same exchange)
COLUMNS = [
    ("auto (sdk2.10)", []),
    ("auto (current)", ["cc.runtime=current"]),
    ("ring", ["cc.algorithm=ring"]),
    ("mesh", ["cc.algorithm=mesh"]),
    ("kangaring", ["cc.algorithm=kangaring"]),
    ("rdh", ["cc.algorithm=rdh"]),
]
FLAT = ("flat ring", ["cc.inter_algorithm=flat_ring"])


def size_name(b):
    for unit, k in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if b >= 1 << k:
            return f"{b >> k} {unit}"
    return f"{b} B"


def fmt_us(ns):
    us = ns / 1000.0
    if us >= 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us:.1f} us"


def run(job):
    ranks, arch, op, size, sets, tmp = job
    prog = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "validation", "gen",
                                                             "collective.py"),
                           "--op", op, "--ranks", str(ranks), "--bytes", str(size),
                           "--arch", arch], check=True, capture_output=True, text=True).stdout
    path = os.path.join(tmp, f"{ranks}-{op}-{size}-{abs(hash(tuple(sets)))}.nca")
    with open(path, "w") as f:
        f.write(prog)
    cmd = [NCSIM, "run", path, "--timing-only"]
    for s in sets:
        cmd += ["--set", s]
    t0 = time.process_time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    m = re.search(r"total simulated time: ([0-9.]+) ns", r.stdout)
    if r.returncode or not m:
        sys.exit(f"{' '.join(cmd)}: {r.stderr.strip()}")
    host = re.search(r"simulating ([0-9.]+) s", r.stdout)
    return float(m.group(1)), float(host.group(1)) if host else 0.0


def main():
    tables = []
    slowest = (0.0, "")
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(jobs) as pool:
        for ranks, arch in SYSTEMS:
            cols = COLUMNS
            if ranks == 64:
                cols = [(c, s + (["cc.inter_algorithm=ring"] if c not in ("auto (sdk2.10)",
                                                                           "auto (current)")
                                 else [])) for c, s in COLUMNS] + [FLAT]
            for op in OPS:
                sizes = [b for b in SIZES if op == "all_reduce" or b >= 4 * ranks]
                futs = {(b, c): pool.submit(run, (ranks, arch, op, b, s, tmp))
                        for b in sizes for c, s in cols}
                head = f"| {op}, {ranks} ranks ({arch}) | " + " | ".join(c for c, _ in cols)
                rows = [head + " |", "|---|" + "---:|" * len(cols)]
                for b in sizes:
                    cells = []
                    for c, _ in cols:
                        ns, host = futs[(b, c)].result()
                        if host > slowest[0]:
                            slowest = (host, f"{op} of {size_name(b)} over {ranks} ranks ({c})")
                        cells.append(fmt_us(ns))
                    rows.append(f"| {size_name(b)} | " + " | ".join(cells) + " |")
                tables.append("\n".join(rows))
    text = "\n\n".join(tables) + "\n"
    print(text)
    print(f"slowest simulation: {slowest[1]}, {slowest[0]:.3f} s of host time", file=sys.stderr)
    if doc:
        p = os.path.join(ROOT, "docs", "data-movement.md")
        s = open(p).read()
        pat = re.compile(r"(<!-- BEGIN cc-sweep -->\n).*?(<!-- END cc-sweep -->)", re.S)
        if not pat.search(s):
            sys.exit(f"{p}: no cc-sweep markers")
        s = pat.sub(lambda m: m.group(1) + text + m.group(2), s)
        open(p, "w").write(s)


if __name__ == "__main__":
    main()
