#!/usr/bin/python3
"""How fast the NKI frontend lowers a kernel to NCA (issue: 100,000 instructions in a few seconds).

    PYTHONPATH=python /usr/bin/python3 python/bench/bench_nki_lower.py [--iters 25000]

The kernel streams [128, 8] tiles: load, exp (act), multiply by a per-partition scale (dve or
act), add a tile (dve), store: five instructions per iteration, with semaphores between all of
them. Prints instructions, CPU and wall seconds to trace and write the program, and the rate.
"""
import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import ncsim.nki as nki  # noqa: E402
import ncsim.nki.language as nl  # noqa: E402
import ncsim.nki.typing as nt  # noqa: E402


@nki.jit
def stream(a, s):
    P, F = a.shape
    out = nl.ndarray((P, F), a.dtype, buffer=nl.shared_hbm)
    sc = nl.load(s)
    for i in nl.affine_range(F // 8):
        t = nl.load(a[:, i * 8:(i + 1) * 8])
        e = nl.exp(t)
        y = nl.multiply(e, sc) + t
        nl.store(out[:, i * 8:(i + 1) * 8], value=y)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=25000)
    a = ap.parse_args()
    args = (nt.tensor[[128, 8 * a.iters], nl.float32], nt.tensor[[128, 1], nl.float32])
    t0, c0 = time.perf_counter(), time.process_time()
    low = nki.lower(stream, *args)
    dt, dc = time.perf_counter() - t0, time.process_time() - c0
    n = low.instructions
    # CPU time is the figure to compare: on a shared machine wall time includes waiting for a core
    print(f"nki lowering: {n} instructions ({len(low.text.splitlines())} lines of NCA): "
          f"{dc:.2f} s CPU ({n / dc:,.0f} instructions/s), {dt:.2f} s wall")


if __name__ == "__main__":
    main()
