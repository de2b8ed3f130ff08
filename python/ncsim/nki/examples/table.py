"""Write the "Tutorial kernels" table of docs/nki.md.

Runs every kernel of the catalog at its tutorial size in timing-only mode
(nki.benchmark) and replaces the text between the two markers

    <!-- nki-tutorial-table:begin -->
    <!-- nki-tutorial-table:end -->

in the given Markdown file with a table of: simulated time, busy fraction of
pe/act/dve/pool and of the DMA queues, MFU (matmul kernels), DMA bandwidth,
the busiest resource, and for the measured workloads the time of the
hand-written NCA port (when validation/ has one) and the trn1 measurement.

    /usr/bin/python3 -m ncsim.nki.examples.table --docs docs/nki.md
    /usr/bin/python3 -m ncsim.nki.examples.table --only silu,adamw   # print only
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from ncsim.nki.examples import runner
from ncsim.nki.examples.catalog import CASES

BEGIN = "<!-- nki-tutorial-table:begin -->"
END = "<!-- nki-tutorial-table:end -->"

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def find_port(case, validation_dir):
    """The manifest entry of the case's hand-written NCA port (validation/manifest.json, whose
    entries name a program or the command that generates it), or None."""
    path = os.path.join(validation_dir, "manifest.json")
    if not case.nca_port or not os.path.isfile(path):
        return None
    with open(path) as f:
        entries = json.load(f).get("entries", [])
    for e in entries:
        if e.get("id") in case.nca_port and e.get("figure") == "time_ns":
            return e
    return None


def time_port(entry, validation_dir, ncsim):
    """Simulated time of the port in microseconds (a timing-only run as the manifest says)."""
    with tempfile.TemporaryDirectory() as tmp:
        if "program" in entry:
            prog = os.path.join(validation_dir, entry["program"])
        else:
            cmd = list(entry["generate"])
            if cmd and cmd[0].startswith("python"):
                cmd[0] = sys.executable
            res = subprocess.run(cmd, cwd=validation_dir, capture_output=True, text=True)
            if res.returncode != 0:
                raise RuntimeError("%s: %s" % (" ".join(cmd), res.stderr.strip()))
            prog = os.path.join(tmp, entry["id"] + ".nca")
            with open(prog, "w") as f:
                f.write(res.stdout)
        stats = os.path.join(tmp, "stats.json")
        cmd = [ncsim, "run", prog, "--random-inputs", "1", "--timing-only", "--stats", stats,
               "--arch", entry.get("arch", "trn1")]
        for k, v in (entry.get("set") or {}).items():
            cmd += ["--set", "%s=%s" % (k, v)]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError("%s: %s" % (entry["id"], res.stderr.strip()))
        with open(stats) as f:
            return json.load(f)["total_ns"] / 1000.0


def pct(x):
    return "%.0f" % (100.0 * x)


def build_rows(cases, validation_dir, ncsim, log):
    rows = []
    for case in cases:
        t0 = time.time()
        port = find_port(case, validation_dir)
        port_us = time_port(port, validation_dir, ncsim) if port else None
        try:
            latency_us, stats = runner.benchmark(case, "tutorial")
        except Exception as e:  # a kernel the frontend cannot lower yet: say so in the table
            msg = str(e).splitlines()[0]
            log("%-18s failed: %s" % (case.name, msg))
            rows.append(dict(case=case, error=msg, port=port, port_us=port_us))
            continue
        s = runner.summarize(stats)
        log("%-18s %10.1f us  (%.1f s of wall time)" % (case.name, latency_us, time.time() - t0))
        rows.append(dict(case=case, latency_us=latency_us, s=s, port=port, port_us=port_us))
    return rows


def render(rows):
    out = []
    out.append("| kernel | size | simulated µs | pe % | act % | dve % | pool % | DMA % | MFU % "
               "| DMA GB/s | busiest | NCA port µs | trn1 µs |")
    out.append("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|")
    notes = []
    for r in rows:
        c = r["case"]
        if r["port"]:
            port = "%.0f" % r["port_us"]
        elif c.nca_port:
            port = "not yet"
        else:
            port = "–"
        meas = "%.0f" % c.measured_us if c.measured_us else "–"
        if "error" in r:
            notes.append(r["error"].split("error: ", 1)[-1])
            out.append("| %s | %s | fails to lower [%d] | | | | | | | | | %s | %s |"
                       % (c.title, c.describe("tutorial"), len(notes), port, meas))
            continue
        s = r["s"]
        b = s["busy"]
        mfu = pct(s["mfu"]) if c.flops else "–"
        out.append("| %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %.0f | %s | %s | %s |" % (
            c.title, c.describe("tutorial"), r["latency_us"], pct(b["pe"]), pct(b["act"]),
            pct(b["dve"]), pct(b["pool"]), pct(b["dma"]), mfu, s["dma_gbps"], s["bottleneck"],
            port, meas))
    for i, n in enumerate(notes, 1):
        out.append("")
        out.append("[%d] %s" % (i, n))
    return "\n".join(out)


MATMULS = ("matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_optimized")


def render_matmul_ladder(log):
    """The four tiled matmul versions side by side at one size that all of them take."""
    from ncsim.nki.examples.catalog import BY_NAME
    cases = [BY_NAME[n] for n in MATMULS]
    out = ["", "The matmul versions at one size (%s, bf16), as in the tests:" % (
        cases[0].describe("moderate")), "",
        "| kernel | simulated µs | pe % | DMA % | MFU % | DMA GB/s | busiest |",
        "|---|---:|---:|---:|---:|---:|---|"]
    for c in cases:
        latency_us, stats = runner.benchmark(c, "moderate")
        s = runner.summarize(stats)
        log("%-18s %10.1f us  (moderate size)" % (c.name, latency_us))
        out.append("| %s | %.1f | %s | %s | %s | %.0f | %s |" % (
            c.title, latency_us, pct(s["busy"]["pe"]), pct(s["busy"]["dma"]), pct(s["mfu"]),
            s["dma_gbps"], s["bottleneck"]))
    return "\n".join(out)


def replace_section(path, table):
    with open(path) as f:
        text = f.read()
    if BEGIN not in text or END not in text:
        raise SystemExit("%s: markers %s / %s not found" % (path, BEGIN, END))
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    with open(path, "w") as f:
        f.write(head + BEGIN + "\n" + table + "\n" + END + tail)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", help="Markdown file whose table section to rewrite")
    ap.add_argument("--only", help="comma-separated case names (default: all)")
    ap.add_argument("--validation-dir", default=os.path.join(ROOT, "validation"))
    ap.add_argument("--ncsim", default=os.path.join(ROOT, "build", "ncsim"))
    a = ap.parse_args(argv)
    cases = CASES
    if a.only:
        names = a.only.split(",")
        unknown = [n for n in names if n not in {c.name for c in CASES}]
        if unknown:
            ap.error("unknown case(s): %s" % ", ".join(unknown))
        cases = [c for c in CASES if c.name in names]
    rows = build_rows(cases, a.validation_dir, a.ncsim,
                      lambda m: print(m, file=sys.stderr, flush=True))
    table = render(rows)
    if not a.only:
        table += "\n" + render_matmul_ladder(lambda m: print(m, file=sys.stderr, flush=True))
    if a.docs:
        replace_section(a.docs, table)
    else:
        print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
