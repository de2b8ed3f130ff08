#!/usr/bin/python3
"""The full-size performance table of kernels/README.md, generated: every kernel of kernels/
at its full size (the .let constants of the file) in timing-only mode on trn1; simulated
time, MFU, HBM bandwidth, core 0's busy engines and DMA, and the busiest unit are measured;
the size column comes from the file and the note column from NOTES below.

    /usr/bin/python3 kernels/gen/table.py [--ncsim build/ncsim] [--arch trn1]   # print
    /usr/bin/python3 kernels/gen/table.py --ncsim build/ncsim --write           # update README
    /usr/bin/python3 kernels/gen/table.py --ncsim build/ncsim --check           # exit 1 if stale

The table sits in kernels/README.md between the markers <!-- table:begin --> and
<!-- table:end -->: edit this script (or the kernels, or the cost model) and --write it, never
the README by hand. Whoever changes what the figures depend on (timing constants, kernels)
regenerates it; the test suite runs --check.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(HERE, "README.md")
BEGIN, END = "<!-- table:begin -->", "<!-- table:end -->"

# kernel: (size keys shown, note on what bounds it: the why, which measurement cannot say)
KERNELS = {
    "gemm_a_tiled": ("M K N", "DMA descriptors: 33,024 transfers of 128 rows per core, "
                     "1120 ns of the engines each, whatever the queue"),
    "gemm_b_hoisted": ("M K N", "DMA descriptors: 1 KiB rhs rows, 128 per matmul"),
    "gemm_c_blockfree": ("M K N", "DMA engines (2.3 GB moved) and descriptors, pe close behind"),
    "gemm_d_blocked": ("M K N", "pe"),
    "softmax": ("R C", "DMA engines: 8 B per element"),
    "layernorm": ("R D", "DMA engines; dve and pool share the SBUF port"),
    "rmsnorm": ("R D", "DMA engines: 8 B per element"),
    "mlp": ("D F T", "pe"),
    "flash_attention": ("S DH", "PSUM port shared by act and dve"),
    "selective_scan": ("D L NS", "dve (4 passes per state and element)"),
}


def sizes(kernel, keys):
    text = open(os.path.join(HERE, kernel + ".nca")).read()
    vals = dict(re.findall(r"^\.let\s+(\w+)\s*=\s*(\d+)", text, re.M))
    return " ".join(f"{k}={vals[k]}" for k in keys.split())


def table(ncsim, arch):
    rows = ["| Kernel (full size) | Simulated time | MFU | HBM GB/s (of 820) | "
            "Busy pe / act / dve / pool / DMA (core 0) | Busiest (measured) | Bound by |",
            "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="ncsim-table-") as work:
        for k, (keys, note) in KERNELS.items():
            stats = os.path.join(work, k + ".json")
            cmd = [ncsim, "run", os.path.join(HERE, k + ".nca"), "--arch", arch,
                   "--timing-only", "--random-inputs", "1", "-q", "--stats", stats]
            subprocess.run(cmd, check=True)
            with open(stats) as f:
                s = json.load(f)
            t = s["total_ns"]
            c = s["cores"][0]
            busy = {e: c["engines"][e]["busy_ns"] / t for e in ("pe", "act", "dve", "pool")}
            busy["dma"] = c["dma"]["busy_ns"] / t
            hbm = (s["hbm"]["read_bytes"] + s["hbm"]["write_bytes"]) / t
            top = max(busy, key=busy.get)
            mfu = f"{100 * s['mfu']:.1f}%" if s["mfu"] > 0 else "-"
            rows.append(f"| `{k}` {sizes(k, keys)} | {t / 1000:.1f} us | {mfu} | {hbm:.0f} | "
                        + " / ".join(f"{100 * busy[e]:.0f}" for e in
                                     ("pe", "act", "dve", "pool"))
                        + f" / {100 * busy['dma']:.0f}% | {top} | {note} |")
    return "\n".join(rows) + "\n"


def main(argv):
    ncsim = argv[argv.index("--ncsim") + 1] if "--ncsim" in argv else "ncsim"
    arch = argv[argv.index("--arch") + 1] if "--arch" in argv else "trn1"
    t = table(ncsim, arch)
    if "--write" not in argv and "--check" not in argv:
        sys.stdout.write(t)
        return 0
    text = open(README).read()
    i, j = text.find(BEGIN), text.find(END)
    if i < 0 or j < i:
        print(f"{README}: no {BEGIN} ... {END} block")
        return 1
    new = text[:i + len(BEGIN)] + "\n" + t + text[j:]
    if "--check" in argv:
        if new != text:
            print(f"{README}: the table is stale (the figures changed): run "
                  f"/usr/bin/python3 kernels/gen/table.py --ncsim build/ncsim --write")
            return 1
        return 0
    with open(README, "w") as f:
        f.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
