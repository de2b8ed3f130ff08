#!/usr/bin/env python3
"""The Python package's overhead, in one run (figures quoted in docs/python.md):

  1. a 100-instruction kernel called 1000 times from Python (ncsim.run with NumPy arrays in,
     the output read back) against the same calls from C (bench_api, through libncsim.so):
     the ratio, target <= 1.5;
  2. one run in-process against the same run through `subprocess` + .npy files
     (`ncsim run --in --out -q`): how many times cheaper in host time, target >= 5.

    /usr/bin/python3 tests/bench/bench_python.py BUILD_DIR     (default: build)

Each figure is the best of 3 rounds; C and Python rounds alternate so that load from other
processes on the machine hits both alike. NCSIM_LIBRARY defaults to BUILD_DIR/libncsim.so.
"""
import os
import subprocess
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
src = os.path.dirname(os.path.dirname(here))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(src, "build"))
os.environ.setdefault("NCSIM_LIBRARY", os.path.join(build, "libncsim.so"))
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
sys.path.insert(0, os.path.join(src, "python"))

import numpy as np  # noqa: E402

import ncsim  # noqa: E402

CALLS = 1000


def kernel(n_ops=96):
    """dma in (x2), n_ops vector instructions, dma out: 100 instructions on [128, 64] fp32."""
    lines = [".hbm x fp32 [128, 64] input", ".hbm w fp32 [128, 64] input",
             ".hbm y fp32 [128, 64] output", ".core 0", ".sbuf t fp32 [128, 64]",
             ".sbuf u fp32 [128, 64]", ".sem ld", ".sem done", ".engine sp",
             "    dma t, x, queue=0 | post ld", "    dma u, w, queue=1 | post ld",
             f"    dma y, t, queue=2 | wait done >= 1", ".engine dve",
             "    tensor_tensor t, t, u, add | wait ld >= 2"]
    for i in range(n_ops - 2):
        lines.append("    tensor_scalar t, t, multiply, 0.5" if i % 2 else
                     "    tensor_tensor t, t, u, add")
    lines.append("    tensor_scalar t, t, add, 1.0 | post done")
    return "\n".join(lines) + "\n"


def best_of(n, fn):
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main():
    tmp = tempfile.mkdtemp(prefix="ncsim-bench-")
    path = os.path.join(tmp, "k.nca")
    with open(path, "w") as f:
        f.write(kernel())
    prog = ncsim.assemble_file(path)
    x = (np.arange(128 * 64) % 7 * 0.25).astype(np.float32).reshape(128, 64)
    inputs = {"x": x, "w": x.copy()}
    r = ncsim.run(prog, inputs)
    print(f"kernel: {prog.instructions} instructions, {r.time_ns:.0f} ns simulated")

    # 1. Python vs C, per call
    def c_calls():
        c = subprocess.run([os.path.join(build, "tests", "bench_api"), path, str(CALLS), "1"],
                           capture_output=True, text=True, check=True)
        return float(dict(l.split() for l in c.stdout.splitlines())["c_us_per_call"])

    def py_calls():
        for _ in range(CALLS):
            ncsim.run(prog, inputs).outputs["y"]

    c_us = py_us = float("inf")
    for _ in range(3):
        c_us = min(c_us, c_calls())
        py_us = min(py_us, best_of(1, py_calls) / CALLS * 1e6)
    ratio = py_us / c_us
    print(f"{CALLS} calls: C {c_us:.1f} us/call, Python {py_us:.1f} us/call, "
          f"ratio {ratio:.2f} (target <= 1.5: {'met' if ratio <= 1.5 else 'MISSED'})")

    # 2. in-process vs subprocess + .npy files
    ncsim_bin = os.path.join(build, "ncsim")

    def via_subprocess():
        for name, a in inputs.items():
            np.save(os.path.join(tmp, name + ".npy"), a)
        subprocess.run([ncsim_bin, "run", path, "--in", f"x={tmp}/x.npy", "--in",
                        f"w={tmp}/w.npy", "--out", f"y={tmp}/y.npy", "-q"], check=True)
        return np.load(os.path.join(tmp, "y.npy"))

    def in_process():
        return ncsim.run(prog, inputs).outputs["y"]

    assert np.array_equal(via_subprocess(), in_process())
    n = 20
    sub_ms = best_of(3, lambda: [via_subprocess() for _ in range(n)]) / n * 1e3
    inp_ms = best_of(3, lambda: [in_process() for _ in range(n)]) / n * 1e3
    gain = sub_ms / inp_ms
    print(f"one run: subprocess + .npy {sub_ms:.2f} ms, in-process {inp_ms:.3f} ms, "
          f"{gain:.0f}x cheaper (target >= 5: {'met' if gain >= 5 else 'MISSED'})")


if __name__ == "__main__":
    main()
