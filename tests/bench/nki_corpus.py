#!/usr/bin/python3
"""The corpus of compiler-style NKI kernels (python/tests/nki/corpus/) at full size: for each
kernel the CPU seconds from Python to simulated latency (nki.benchmark with timing-only
placeholders: no input data; the lowering is nearly all of it), the simulated time on trn1
(and the trn1 measurement where the kernel has a published one, MEASURED_US), the bottleneck as the runner reports it (the
verdict of `ncsim report` on the run's statistics), the HBM bytes of its inputs and outputs and
what the lowering spilled or re-loaded.

    NCSIM_LIBRARY=build/libncsim.so /usr/bin/python3 tests/bench/nki_corpus.py [NAME ...]
        [--check] [--docs docs/nki.md] [--roofline]

--check also runs each kernel functionally at full size against its NumPy reference and
`ncsim check` (minutes). --docs rewrites the table between the markers
<!-- nki-corpus-table:begin --> and <!-- nki-corpus-table:end --> of that file. --roofline
prints instead, for each kernel, its simulated time against its roofline bounds from the run's
statistics: the HBM bytes its DMAs moved at 190 GB/s and at the 820 GB/s peak, the Tensor
engine's hardware FLOPs (matmuls and transposes) at 22.9 TFLOP/s for fp32 and 91.75 for 16-bit
operands, and the busy time of each engine and of the DMA descriptors (the model's own figures).
"""
import argparse
import importlib.util
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import numpy as np  # noqa: E402
from ncsim import nki  # noqa: E402
import ncsim.nki.typing as nt  # noqa: E402

CORPUS = os.path.join(ROOT, "python", "tests", "nki", "corpus")
BEGIN, END = "<!-- nki-corpus-table:begin -->", "<!-- nki-corpus-table:end -->"


def load(name):
    nki.install_neuronxcc_alias()
    spec = importlib.util.spec_from_file_location("nki_corpus_" + name,
                                                  os.path.join(CORPUS, name + ".py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def kernel_of(mod):
    """The kernel as launched at full size (an SPMD kernel with its GRID)."""
    grid = getattr(mod, "GRID", None)
    return mod.kernel[grid["full"]] if grid else mod.kernel


def full_inputs(mod):
    return mod.inputs(mod.SIZES["full"], np.random.default_rng(0))


def measure(name, check):
    mod = load(name)
    args = full_inputs(mod)
    ph = [nt.tensor[[*a.shape], str(a.dtype)] for a in args]
    t0 = time.process_time()
    b = nki.benchmark(kernel_of(mod))
    b(*ph)
    cpu_s = time.process_time() - t0
    r = b.benchmark_result
    st = r.stats
    bott, _why = nki._stats_verdict(st)
    want = mod.reference(*args) if check else None
    core = st["cores"][0]
    fl = core.get("tensor_hw_flops", 0)
    fl32 = core.get("tensor_hw_flops_fp32", 0)
    hbm = core["memory"]["hbm_read_bytes"] + core["memory"]["hbm_write_bytes"]
    row = {
        "hbm_moved_mb": hbm / 1e6, "hbm190_us": hbm / 190e3, "hbm820_us": hbm / 820e3,
        "pe_flop_us": fl32 / 22.9375e6 + (fl - fl32) / 91.75e6,
        "busy_us": {e: v["busy_ns"] / 1e3 for e, v in core["engines"].items()},
        "desc_us": core["dma"]["descriptor_busy_ns"] / 1e3,
        "name": name, "what": mod.WHAT,
        "size": ", ".join("%s=%s" % kv for kv in mod.SIZES["full"].items()),
        "hbm_in_mb": sum(a.nbytes for a in args) / 1e6,
        "cpu_s": cpu_s, "us": r.nc_latency.get_latency_percentile(50),
        "measured_us": getattr(mod, "MEASURED_US", None), "bottleneck": bott or "-",
        "spill_mb": (st["nki"]["spill_save_bytes"] + st["nki"].get("psum_spill_bytes", 0)) / 1e6,
        "remat_mb": st["nki"]["rematerialized_bytes"] / 1e6,
    }
    if check:
        t0 = time.process_time()
        got = nki.simulate_kernel(kernel_of(mod), *args)
        got = got if isinstance(got, tuple) else (got,)
        want = want if isinstance(want, tuple) else (want,)
        atol, rtol = mod.TOL
        if hasattr(mod, "check_outputs"):        # random outputs: the file's own checks
            try:
                mod.check_outputs(args, got)
                row["matches"] = True
            except AssertionError:
                row["matches"] = False
        else:
            row["matches"] = all(np.allclose(np.asarray(g), w, atol=atol, rtol=rtol)
                                 for g, w in zip(got, want))
        row["check"] = nki.check(kernel_of(mod), *args)
        row["check_s"] = time.process_time() - t0
    return row


def table(rows):
    lines = ["| kernel | what it exercises | full size | HBM inputs MB | CPU s | simulated µs "
             "| trn1 µs | bottleneck (runner) | spilled MB | re-loaded MB |",
             "|---|---|---|---:|---:|---:|---:|---|---:|---:|"]
    for r in rows:
        m = r["measured_us"]
        meas = "%.0f (%+.1f %%)" % (m, 100.0 * (r["us"] - m) / m) if m else "–"
        lines.append("| %s | %s | %s | %.0f | %.2f | %.1f | %s | %s | %.1f | %.1f |" % (
            r["name"], r["what"], r["size"], r["hbm_in_mb"], r["cpu_s"], r["us"], meas,
            r["bottleneck"], r["spill_mb"], r["remat_mb"]))
    return "\n".join(lines)


def roofline(rows):
    lines = ["| kernel | simulated µs | HBM MB moved | HBM at 190 GB/s, µs | HBM at 820 GB/s, µs "
             "| PE FLOP bound, µs | PE busy µs | ACT busy µs | DVE busy µs | Pool busy µs "
             "| DMA descriptors busy µs | simulated / largest of HBM (190 GB/s) and PE bounds |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        b = r["busy_us"]
        lines.append("| %s | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f | %.0f "
                     "| %.2f |" % (r["name"], r["us"], r["hbm_moved_mb"], r["hbm190_us"],
                                   r["hbm820_us"], r["pe_flop_us"], b["pe"], b["act"], b["dve"],
                                   b["pool"], r["desc_us"],
                                   r["us"] / max(r["hbm190_us"], r["pe_flop_us"])))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--check", action="store_true")
    ap.add_argument("--docs")
    ap.add_argument("--roofline", action="store_true")
    a = ap.parse_args()
    names = a.names or sorted(f[:-3] for f in os.listdir(CORPUS)
                              if f.endswith(".py") and not f.startswith("_"))
    rows = []
    for n in names:
        r = measure(n, a.check)
        rows.append(r)
        extra = ""
        if a.check:
            extra = "  numpy %s, check %s (%.0f s)" % ("ok" if r["matches"] else "MISMATCH",
                                                       "clean" if not r["check"] else r["check"],
                                                       r["check_s"])
        print("%-16s %6.2f s CPU  %10.1f us  %-16s spill %6.1f MB  re-load %7.1f MB%s" % (
            n, r["cpu_s"], r["us"], r["bottleneck"], r["spill_mb"], r["remat_mb"], extra),
            flush=True)
    t = roofline(rows) if a.roofline else table(rows)
    if a.docs and not a.roofline:
        text = open(a.docs).read()
        i, j = text.index(BEGIN), text.index(END)
        open(a.docs, "w").write(text[:i + len(BEGIN)] + "\n" + t + "\n" + text[j:])
    else:
        print(t)
    bad = [r["name"] for r in rows if a.check and (not r["matches"] or r["check"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
