#!/usr/bin/python3
"""Rewrite the parts of the documents that quote simulated figures, between markers
`<!-- BEGIN name -->` and `<!-- END name -->`, from fresh runs (scripts/regen-docs.sh runs
the sweeps and the validation first and passes their outputs):

    regen_docs.py NCSIM VALIDATION_CSV SWEEP1_CSV SWEEP2_CSV

- docs/validation.md `validation-table`: the validation table (ncsim validate --csv);
- kernels/README.md: the kernels table (kernels/gen/table.py --write); `tp-table`: the decoder;
- docs/exploration.md `sweep1-rows`, `sweep2-rows`: selected rows of the two sweeps;
- docs/data-movement.md `cc-table`: all_reduce times on trn1, trn1-32xl and trn1-32xl-x2."""
import csv, json, math, os, re, subprocess, sys, tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def put(path, name, text):
    p = os.path.join(ROOT, path)
    s = open(p).read()
    pat = re.compile(r"(<!-- BEGIN %s -->\n).*?(<!-- END %s -->)" % (name, name), re.S)
    if not pat.search(s):
        sys.exit(f"{path}: no markers for {name}")
    s = pat.sub(lambda m: m.group(1) + text.rstrip("\n") + "\n" + m.group(2), s)
    open(p, "w").write(s)


def fmt(v):
    v = float(v)
    if v == 0:
        return "0"
    if abs(v) >= 1e5 or abs(v) < 1e-3:
        return f"{v:.4g}"
    return f"{v:.4g}"


def inband(r):
    if r["inside"] == "yes":
        return "yes"
    return "NO (known miss)" if r.get("known_miss") else "NO"


def validation_table(path):
    rows = list(csv.DictReader(open(path)))
    out = ["| Entry | Figure | Measured | Simulated | Error | In band | Fitted |",
           "|---|---|---:|---:|---:|---|---|"]
    logs = []
    for r in rows:
        fig = r["figure"] + (f" / {r['relative_to']}" if r["relative_to"] else "")
        out.append(f"| `{r['id']}` | {fig} | {fmt(r['measured'])} | {fmt(r['simulated'])} | "
                   f"{float(r['error_pct']):+.1f}% | {inband(r)} | {r['fit']} |")
        logs.append(abs(math.log(float(r["ratio"]))))
    gm = math.exp(sum(logs) / len(logs)) - 1
    worst = max(rows, key=lambda r: abs(math.log(float(r["ratio"]))))
    out.append("")
    out.append(f"{len(rows)} entries; geometric-mean error {100 * gm:.1f}%; "
               f"{sum(r['inside'] != 'yes' for r in rows)} outside their band "
               f"({sum(r['inside'] != 'yes' and bool(r.get('known_miss')) for r in rows)} of them "
               f"marked known misses, below); worst "
               f"`{worst['id']}` ({float(worst['error_pct']):+.1f}%).")
    return "\n".join(out)


def sweep_rows(path, keys, pick):
    rows = list(csv.DictReader(open(path)))
    out = ["| " + " | ".join(keys) + " | total (ms) | MFU | pe_util |",
           "|" + "---:|" * (len(keys) + 3)]
    for r in rows:
        if pick(r):
            out.append("| " + " | ".join(f"{float(r[k]):g}" for k in keys) +
                       f" | {float(r['total_ns']) / 1e6:.3f} | {float(r['mfu']):.3f} | "
                       f"{float(r['pe_util']):.3f} |")
    return "\n".join(out)


def cc_table(ncsim):
    tmp = tempfile.mkdtemp(prefix="ncsim-cc-")
    gen = os.path.join(ROOT, "validation", "gen", "collective.py")
    out = ["| all_reduce (fp32, auto) | 1 KiB | 1 MiB | 64 MiB | 1 GiB |", "|---|---:|---:|---:|---:|"]
    for ranks, arch, what in [(2, "trn1", "2 cores, one chip (trn1)"),
                              (32, "trn1-32xl", "32 cores, trn1-32xl"),
                              (64, "trn1-32xl-x2", "64 cores, trn1-32xl-x2")]:
        cells = []
        for size in (1024, 1 << 20, 64 << 20, 1 << 30):
            prog = os.path.join(tmp, "p.nca")
            stats = os.path.join(tmp, "s.json")
            with open(prog, "w") as f:
                subprocess.run(["/usr/bin/python3", gen, "--op", "all_reduce", "--ranks", str(ranks),
                                "--bytes", str(size), "--arch", arch], stdout=f, check=True)
            subprocess.run([ncsim, "run", prog, "--timing-only", "-q", "--stats", stats], check=True)
            t = json.load(open(stats))["total_ns"]
            cells.append(f"{t / 1e3:.1f} us" if t < 1e6 else f"{t / 1e6:.2f} ms")
        out.append(f"| {what} | " + " | ".join(cells) + " |")
    return "\n".join(out)


def tp_table(ncsim):
    tmp = tempfile.mkdtemp(prefix="ncsim-tp-")
    out = ["| `tp_decoder` H=4096 (32 heads) S=2048 F=14336 | Simulated time | MFU | all_reduce (cc busy) share of the run |",
           "|---|---:|---:|---:|"]
    for cores, arch in [(2, "trn1"), (8, "trn1-32xl"), (16, "trn1-32xl")]:
        prog, stats = os.path.join(tmp, "tp.nca"), os.path.join(tmp, "tp.json")
        subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "kernels", "gen", "tp_decoder.py"),
                        "--cores", str(cores), "-o", prog], check=True, capture_output=True)
        subprocess.run([ncsim, "run", prog, "--arch", arch, "--timing-only", "--random-inputs", "1",
                        "-q", "--stats", stats], check=True)
        s = json.load(open(stats))
        share = max(c["engines"]["cc"]["busy_ns"] for c in s["cores"]) / s["total_ns"]
        out.append(f"| {cores} cores ({arch}) | {s['total_ns'] / 1e3:.1f} us | {100 * s['mfu']:.1f}% | "
                   f"{100 * share:.1f}% |")
    return "\n".join(out)


def main():
    ncsim, vcsv, s1, s2 = sys.argv[1:5]
    put("docs/validation.md", "validation-table", validation_table(vcsv))
    subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "kernels", "gen", "table.py"),
                    "--ncsim", ncsim, "--write"], check=True)
    put("kernels/README.md", "tp-table", tp_table(ncsim))
    put("docs/exploration.md", "sweep1-rows",
        sweep_rows(s1, ["dma.descriptor_ns", "dma.engine_bandwidth_gbps"],
                   lambda r: float(r["dma.engine_bandwidth_gbps"]) in (18.7, 37.4, 74.8, 149.6)))
    put("docs/exploration.md", "sweep2-rows", sweep_rows(s2, ["hbm.bandwidth_gbps"], lambda r: True))
    put("docs/data-movement.md", "cc-table", cc_table(ncsim))


if __name__ == "__main__":
    main()
