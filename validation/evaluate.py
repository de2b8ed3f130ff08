#!/usr/bin/python3
"""Run every entry of a validation manifest with ncsim and compare with the measurement.

Stand-in for `ncsim validate` (same manifest format, same figures) that also prints the
table as CSV or Markdown for docs/validation.md. Usage:
  /usr/bin/python3 validation/evaluate.py [validation/manifest.json] [--ncsim build/ncsim]
      [--set KEY=VALUE ...] [--only SUBSTR] [--md FILE] [--csv FILE] [-j N]
Figures: time_ns (stats total_ns); busy_fraction:ENGINE[@coreN] (engine active time, the
union of its instructions' start..end intervals, over total time); mean_duration_ns:KIND and
mean_interval_ns:KIND (instructions named KIND: mean start-to-end, mean start-to-start of
consecutive ones on one engine); dma_transfer_ns (mean data phase of a DMA transfer);
dma_bandwidth_gbps (DMA bytes of all cores / total time); hbm_bandwidth_gbps (HBM bytes read
and written / total time)."""
import argparse, concurrent.futures as cf, json, math, os, subprocess, sys, tempfile

def run_entry(e, base, ncsim, sets):
    tmp = tempfile.mkdtemp(prefix="ncsim-val-")
    prog = os.path.join(tmp, "prog.nca")
    if "generate" in e:
        out = subprocess.run(e["generate"], cwd=base, capture_output=True, text=True)
        if out.returncode:
            raise RuntimeError(f"{e['id']}: generator failed: {out.stderr}")
        open(prog, "w").write(out.stdout)
    else:
        prog = os.path.join(base, e["program"])
    stats = os.path.join(tmp, "stats.json")
    cmd = [ncsim, "run", prog, "--timing-only", "--random-inputs", "1", "--stats", stats, "-q",
           "--arch", e.get("arch", "trn1")]
    for k, v in list(e.get("set", {}).items()) + sets:
        cmd += ["--set", f"{k}={v}"]
    fig = e["figure"]
    trace = None
    if fig.startswith("mean_") or fig == "dma_transfer_ns":
        trace = os.path.join(tmp, "trace.json")
        cmd += ["--trace", trace]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode:
        raise RuntimeError(f"{e['id']}: ncsim failed ({r.returncode}): {r.stderr[:2000]}")
    s = json.load(open(stats))
    v = figure(fig, s, trace)
    if "divide" in e:
        v /= e["divide"]
    return v

def figure(fig, s, trace):
    total = s["total_ns"]
    if fig == "time_ns":
        return total
    if fig.startswith("busy_fraction:"):
        eng = fig.split(":", 1)[1]
        core = 0
        if "@core" in eng:
            eng, c = eng.split("@core")
            core = int(c)
        e = [c for c in s["cores"] if c["id"] == core][0]["engines"][eng]
        return e.get("active_ns", e["busy_ns"]) / total
    if fig == "dma_bandwidth_gbps":
        return sum(c["dma"]["bytes"] for c in s["cores"]) / total
    if fig == "hbm_bandwidth_gbps":
        return (s["hbm"]["read_bytes"] + s["hbm"]["write_bytes"]) / total
    ev = json.load(open(trace))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    if fig == "dma_transfer_ns":
        d = [x["dur"] * 1000 for x in ev if x.get("ph") == "X" and x.get("cat") == "dma"]
        return sum(d) / len(d)
    kind = fig.split(":", 1)[1]
    xs = [x for x in ev if x.get("ph") == "X" and x.get("cat") == "instr" and x["name"] == kind]
    if fig.startswith("mean_duration_ns:"):
        return sum(x["args"]["latency_ns"] for x in xs) / len(xs)
    by = {}
    for x in xs:
        by.setdefault((x["pid"], x["tid"]), []).append(x["ts"] * 1000)
    gaps = [b - a for t in by.values() for a, b in zip(sorted(t), sorted(t)[1:])]
    return sum(gaps) / len(gaps)

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("manifest", nargs="?", default=os.path.join(os.path.dirname(__file__), "manifest.json"))
    ap.add_argument("--ncsim", default=os.path.join(os.path.dirname(__file__), "..", "build", "ncsim"))
    ap.add_argument("--set", action="append", default=[])
    ap.add_argument("--only", action="append", default=[])
    ap.add_argument("--md"); ap.add_argument("--csv")
    ap.add_argument("-j", type=int, default=2)
    a = ap.parse_args()
    m = json.load(open(a.manifest))
    base = os.path.dirname(os.path.abspath(a.manifest))
    ncsim = os.path.abspath(a.ncsim)
    sets = [tuple(x.split("=", 1)) for x in a.set]
    entries = [e for e in m["entries"] if not a.only or any(o in e["id"] for o in a.only)]
    with cf.ThreadPoolExecutor(a.j) as ex:
        sims = list(ex.map(lambda e: run_entry(e, base, ncsim, sets), entries))
    byid = {e["id"]: v for e, v in zip(entries, sims)}
    rows, logs, worst, fails = [], [], 0.0, 0
    for e, v in zip(entries, sims):
        if "relative_to" in e:
            ref = byid.get(e["relative_to"])
            if ref is None:
                ref = run_entry([x for x in m["entries"] if x["id"] == e["relative_to"]][0], base, ncsim, sets)
            v = v / ref
        ratio = v / e["measured"]
        err = ratio - 1
        ok = abs(err) <= e.get("band", 0.15)
        fails += not ok
        logs.append(abs(math.log(ratio)))
        worst = max(worst, abs(err))
        rows.append((e["id"], e["measured"], v, err, ok))
    gm = math.exp(sum(logs) / len(logs)) - 1
    w = max(len(r[0]) for r in rows)
    for r in rows:
        print(f"{r[0]:<{w}} {r[1]:>14.6g} {r[2]:>14.6g} {100*r[3]:+7.1f}% {'ok' if r[4] else 'OUT'}")
    print(f"geometric-mean error {100*gm:.1f}%, worst {100*worst:.1f}%, {fails} outside their band")
    if a.csv:
        with open(a.csv, "w") as f:
            f.write("id,measured,simulated,error_pct,in_band\n")
            for r in rows:
                f.write(f"{r[0]},{r[1]:.6g},{r[2]:.6g},{100*r[3]:.1f},{int(r[4])}\n")
    if a.md:
        with open(a.md, "w") as f:
            f.write("| Entry | Measured | Simulated | Error |\n|---|---:|---:|---:|\n")
            for r in rows:
                f.write(f"| {r[0]} | {r[1]:.4g} | {r[2]:.4g} | {100*r[3]:+.1f}% |\n")
            f.write(f"\nGeometric-mean error {100*gm:.1f}%, worst {100*worst:.1f}%.\n")
    return 1 if fails else 0

if __name__ == "__main__":
    sys.exit(main())
