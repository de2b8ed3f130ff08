#!/usr/bin/python3
"""Run every kernel of kernels/ at its full size in timing-only mode and print the markdown
table of kernels/README.md (simulated time, MFU, HBM use, busy engines, bottleneck).

    /usr/bin/python3 kernels/gen/table.py [--ncsim build/ncsim] [--arch trn1]
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KERNELS = ["gemm_a_tiled", "gemm_b_hoisted", "gemm_c_blockfree", "gemm_d_blocked", "softmax",
           "layernorm", "rmsnorm", "mlp", "flash_attention", "selective_scan"]


def main(argv):
    ncsim = argv[argv.index("--ncsim") + 1] if "--ncsim" in argv else "ncsim"
    arch = argv[argv.index("--arch") + 1] if "--arch" in argv else "trn1"
    work = tempfile.mkdtemp(prefix="ncsim-table-")
    print("| Kernel | Simulated time | MFU | HBM GB/s (of 820) | Busy: pe / act / dve / pool / DMA "
          "(core 0) | Busiest |")
    print("|---|---|---|---|---|---|")
    for k in KERNELS:
        stats = os.path.join(work, k + ".json")
        cmd = [ncsim, "run", os.path.join(HERE, k + ".nca"), "--arch", arch, "--timing-only",
               "--random-inputs", "1", "-q", "--stats", stats]
        subprocess.run(cmd, check=True)
        with open(stats) as f:
            s = json.load(f)
        t = s["total_ns"]
        c = s["cores"][0]
        busy = {e: c["engines"][e]["busy_ns"] / t for e in ("pe", "act", "dve", "pool")}
        busy["dma"] = c["dma"]["busy_ns"] / t
        hbm = (s["hbm"]["read_bytes"] + s["hbm"]["write_bytes"]) / t
        top = max(busy, key=busy.get)
        print(f"| `{k}` | {t / 1000:.1f} us | {100 * s['mfu']:.1f}% | {hbm:.0f} | "
              + " / ".join(f"{100 * busy[e]:.0f}%" for e in ("pe", "act", "dve", "pool", "dma"))
              + f" | {top} |")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
