#!/usr/bin/python3
"""Run the tutorial programs (docs/tutorial.md) and compare their outputs with NumPy.

    /usr/bin/python3 kernels/tutorial/check.py --ncsim build/ncsim [STEP ...]

Each step makes seeded inputs, runs `ncsim run` on its program with --in/--out, and checks
every output element: |out - ref| <= atol + rtol |ref|. Exit 0 when every element of every
step passes; otherwise the failing step and its worst element are printed and the exit is 1.
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def fp8e4(v):
    """Round fp32 values to fp8e4 (E4M3, IEEE-style, max 240) to nearest even, saturating."""
    v = np.asarray(v, dtype=np.float64)
    mag = np.abs(v)
    e = np.floor(np.log2(np.where(mag > 0, mag, 1.0)))
    e = np.maximum(e, -6.0)                     # below 2^-6: subnormal spacing 2^-9
    q = np.exp2(e - 3.0)                        # 3 mantissa bits
    r = np.round(v / q) * q                     # np.round rounds half to even
    return np.clip(r, -240.0, 240.0)


def u(rng, *shape):
    return rng.uniform(-1.0, 1.0, size=shape).astype(np.float32)


def conv1d(x, w):
    kw, t = w.shape[0], x.shape[1] - w.shape[0] + 1
    return sum(w[k].astype(np.float64).T @ x[:, k:k + t].astype(np.float64) for k in range(kw))


# step: (program, inputs(rng) -> dict, reference(inputs) -> dict of outputs, rtol, atol)
# fp32 matmul: products are exact in fp64, the fp32 sums of K <= 512 terms of |x| < 1 err
# by at most about K 2^-24 |sum| < 3e-5 relative; 1e-4 is three times that bound.
STEPS = {
    "01_dma": (lambda r: {"x": u(r, 256, 64)},
               lambda i: {"y": i["x"]}, 0.0, 0.0),
    "02_semaphores": (lambda r: {"x": u(r, 128, 512)},
                      lambda i: {"y": (i["x"] * np.float32(2) + np.float32(1))}, 0.0, 0.0),
    "03_double_buffer": (lambda r: {"x": u(r, 1024, 256)},
                         lambda i: {"y": np.maximum(i["x"], 0) * np.float32(3)}, 0.0, 0.0),
    "04_psum_accumulate": (lambda r: {"a": u(r, 512, 128), "b": u(r, 512, 512)},
                           lambda i: {"c": i["a"].astype(np.float64).T @ i["b"]}, 1e-4, 1e-4),
    "05_transpose": (lambda r: {"x": u(r, 128, 64)},
                     lambda i: {"yp": i["x"].T, "yd": i["x"].T}, 0.0, 0.0),
    "06_broadcast": (lambda r: {"s": u(r, 1), "x": u(r, 128, 256)},
                     lambda i: {"y": i["x"] * i["s"][0]}, 0.0, 0.0),
    # fp8: the reference quantises exactly as the kernel does (x * 128 in fp32, then RNE to
    # fp8e4); products of fp8 values are exact, the fp32 sum of 128 terms errs by < 1e-5.
    "07_fp8": (lambda r: {"a": u(r, 128, 128), "b": u(r, 128, 512)},
               lambda i: {"c": fp8e4(i["a"] * np.float32(128)).T
                          @ fp8e4(i["b"] * np.float32(128)) / 16384.0}, 1e-5, 1e-5),
    "08_conv": (lambda r: {"x": u(r, 128, 514), "w": u(r, 3, 128, 128)},
                lambda i: {"y": conv1d(i["x"], i["w"])}, 1e-4, 1e-4),
    "09_all_reduce": (lambda r: {"a": u(r, 256, 128), "b": u(r, 256, 512)},
                      lambda i: {"c": np.stack([i["a"].astype(np.float64).T @ i["b"]] * 2)},
                      1e-4, 1e-4),
}


def run_step(name, ncsim, work, seed):
    make, ref, rtol, atol = STEPS[name]
    rng = np.random.default_rng(seed)
    inputs = make(rng)
    cmd = [ncsim, "run", os.path.join(HERE, name + ".nca"), "-q"]
    for k, v in inputs.items():
        path = os.path.join(work, f"{name}.{k}.npy")
        np.save(path, v)
        cmd += ["--in", f"{k}={path}"]
    expect = ref(inputs)
    for k in expect:
        cmd += ["--out", f"{k}={os.path.join(work, f'{name}.{k}.out.npy')}"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        print(f"{name}: ncsim exit {proc.returncode}\n{proc.stderr}")
        return False
    ok = True
    for k, want in expect.items():
        got = np.load(os.path.join(work, f"{name}.{k}.out.npy")).astype(np.float64)
        want = np.asarray(want, dtype=np.float64)
        if got.shape != want.shape:
            print(f"{name}: {k} has shape {got.shape}, expected {want.shape}")
            ok = False
            continue
        err = np.abs(got - want) - (atol + rtol * np.abs(want))
        if (err > 0).any():
            j = np.unravel_index(np.argmax(err), err.shape)
            print(f"{name}: {k}{list(j)} = {got[j]!r}, expected {want[j]!r} "
                  f"({int((err > 0).sum())} elements out of tolerance)")
            ok = False
    return ok


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ncsim", required=True)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("steps", nargs="*", help="step names (default: all)")
    args = ap.parse_args(argv)
    steps = args.steps or list(STEPS)
    bad = [s for s in steps if s not in STEPS]
    if bad:
        print(f"unknown step {bad[0]}; steps: {' '.join(STEPS)}")
        return 2
    with tempfile.TemporaryDirectory() as work:
        failed = [s for s in steps if not run_step(s, args.ncsim, work, args.seed)]
    for s in steps:
        print(f"{s}: {'FAIL' if s in failed else 'ok'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
