#!/usr/bin/python3
"""From Python to simulated latency for the four NKI matmul tutorial kernels at the tutorial's
size (M=4096, K=8192, N=8192, bf16): CPU seconds to trace and lower (both passes and the
folding into loops), CPU seconds to assemble and simulate (timing only, no input data), the
NCA text's size and the simulated time. Issue 24 asks for at most 1 s of CPU in all.

    NCSIM_LIBRARY=build/libncsim.so /usr/bin/python3 tests/bench/bench_nki_matmul.py [--size moderate]
        [--reference]

--reference lowers with the tracer's reference paths (policy fast_trace=False: the same
program text, slower), to measure what the optimised paths save in one session.
--full runs every loop iteration (policy steady_state=False: the same program text), to
measure what steady-state tracing saves in one session. "replayed" is the share of loop
iterations whose instructions were replayed instead of traced (docs/nki.md, "Loops kept").
--phases also prints where the lowering's CPU goes: the first (allocation) pass and the second
pass of the kernel's Python, the replayed loop windows (inside those passes), the scheduler
(list scheduling, then every wait, in the final order) and the folding into loops (inside writing the text).
With the passes in C (the default where libncsim loads; docs/nki.md, "Cost of lowering"),
"deps" is the C dependence pass over the tracer's access log (its conversion to an array
included), "arrays" the making of the other flat arrays they read, "schedule" and "waits" the
C calls, and "write" the C writing of the engine streams, their folding included (then "fold"
is 0).
The phases are timed by wrapping the lowering's functions in this process; the program text is
unchanged.
--passes python|c picks the implementation of the scheduler, waits and folding (policy
native_passes; default auto: C where libncsim loads), to compare them in one session.
"""
import argparse
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "python"))

import ncsim  # noqa: E402
from ncsim import nki  # noqa: E402
from ncsim.nki.examples.catalog import BY_NAME  # noqa: E402

PHASES = ("pass 1", "pass 2", "replay", "deps", "arrays", "schedule", "waits", "fold", "write",
          "text")


def _time_phases(acc):
    """Wrap the lowering's phase functions so that their CPU seconds add up in acc."""
    from ncsim.nki import _sched, _fold, _steady, _core, _native, Kernel

    def wrap(obj, attr, phase, pick=None):
        f = getattr(obj, attr)

        def g(*a, **k):
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                ph = pick(a) if pick else phase
                acc[ph] = acc.get(ph, 0.0) + time.process_time() - t
        setattr(obj, attr, g)
    wrap(_sched, "schedule", "schedule")
    wrap(_sched, "assign_waits", "waits")
    wrap(_fold, "fold", "fold")
    wrap(_native, "Nodes", "arrays")
    wrap(_native, "deps_c", "deps")
    wrap(_native, "schedule_c", "schedule")
    wrap(_native, "waits_c", "waits")
    wrap(_native, "streams_c", "write")
    wrap(_steady, "_replay", "replay")
    wrap(_core.Tracer, "finish", "text")
    # Kernel._trace(func, sig, bound, pol, source, prev, grid): prev is None on the first pass
    wrap(Kernel, "_trace", None, lambda a: "pass 1" if a[5] is None else "pass 2")
    Kernel._trace = staticmethod(Kernel._trace)


NAMES = ("matmul_tiled", "matmul_hoisted", "matmul_block_free", "matmul_optimized")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", default="tutorial", help="catalog size (tutorial, moderate, small)")
    ap.add_argument("--reference", action="store_true",
                    help="the tracer's reference paths (policy fast_trace=False)")
    ap.add_argument("--full", action="store_true",
                    help="every loop iteration traced (policy steady_state=False)")
    ap.add_argument("--phases", action="store_true",
                    help="also CPU seconds per phase of the lowering")
    ap.add_argument("--passes", default="auto", choices=("auto", "c", "python"),
                    help="scheduler, waits and folding in C or Python (policy native_passes)")
    a = ap.parse_args()
    acc = {}
    if a.phases:
        _time_phases(acc)
    print(f"{'kernel':20} {'lower s':>8} {'run s':>8} {'total s':>8} {'NCA KB':>8} {'simulated ms':>13}"
          f" {'replayed':>9}")
    for name in NAMES:
        acc.clear()
        case = BY_NAME[name]
        kernel, _ = case.load()
        args = case.args(a.size, 0, timing=True)
        c0 = time.process_time()
        low = nki.lower(kernel, *args, policy={"fast_trace": not a.reference,
                                               "steady_state": not a.full,
                                               "native_passes": a.passes})
        c1 = time.process_time()
        r = ncsim.run(ncsim.assemble(low.text, name=name), timing_only=True)
        c2 = time.process_time()
        t = getattr(r, "time_ns", None) or r.stats["total_ns"]
        # iterations of innermost loops: those run plus those replayed
        its = sum(e["iterations"] for e in low.loops)
        rep = sum(e["replayed"] for e in low.loops)
        print(f"{name:20} {c1 - c0:8.2f} {c2 - c1:8.2f} {c2 - c0:8.2f} {len(low.text) / 1024:8.0f} "
              f"{t / 1e6:13.3f} {100.0 * rep / its if its else 0.0:8.0f}%")
        if a.phases:
            # "text" includes schedule, waits and fold; the passes include replay
            print("    " + "  ".join(f"{p} {acc.get(p, 0.0):.2f}" for p in PHASES))


if __name__ == "__main__":
    main()
