"""Per-row symmetric int8 quantisation of an [R, C] fp32 matrix, as a generated kernel
writes it with language-level calls: |x| (`nl.abs`), the row maximum (`nl.max(axis=[1],
keepdims=True)`), the scale amax / 127 (`nl.divide` by a constant, floored at a tiny value by
`nl.maximum`), x / scale with the [128, 1] scale broadcast along the row (`nl.divide`),
rounding half up by `nl.floor(q + 0.5)`, clamping by `nl.minimum`/`nl.maximum`, the cast to
int8 on a copy and the dequantised value q * scale. R = 1,000 (8,000 at full size): the last
row tile has 104 partitions, masked on every call. Three outputs of three types.

x [R, C] fp32 -> q [R, C] int8, scale [R, 1] fp32, deq [R, C] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

WHAT = ('per-row int8 quantisation: nl.abs, nl.max(keepdims), nl.divide by a [128, 1] scale, '
        'nl.floor(q + 0.5), clamp by nl.minimum/nl.maximum, int8 cast on a copy, ragged last '
        'row tile masked, outputs of three types')
SIZES = {"small": dict(R=1000, C=512), "full": dict(R=8000, C=4096)}
TOL = (0.0, 0.0)


@nki.jit
def kernel(v1):
    R, C = v1.shape
    T = (R + 127) // 128
    v2 = nl.ndarray((R, C), dtype=np.int8, buffer=nl.shared_hbm)
    v3 = nl.ndarray((R, 1), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    for i0 in nl.affine_range(T):
        m = (i0 * 128 + nl.arange(128)[:, None] < R)
        v5 = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], nl.arange(C)[None, :]], mask=m)
        v6 = nl.abs(v5, mask=m)
        v7 = nl.max(v6, axis=[1], keepdims=True, mask=m)
        v8 = nl.maximum(v7, 1e-30, mask=m)
        v9 = nl.divide(v8, 127.0, mask=m)
        v10 = nl.divide(v5, v9, mask=m)
        v11 = nl.add(v10, 0.5, mask=m)
        v12 = nl.floor(v11, mask=m)
        v13 = nl.minimum(nl.maximum(v12, -127.0, mask=m), 127.0, mask=m)
        v14 = nl.copy(v13, dtype=nl.int8, mask=m)
        v15 = nl.multiply(v13, v9, mask=m)
        nl.store(v2[i0 * 128 + nl.arange(128)[:, None], nl.arange(C)[None, :]], value=v14, mask=m)
        nl.store(v3[i0 * 128 + nl.arange(128)[:, None], 0], value=v9, mask=m)
        nl.store(v4[i0 * 128 + nl.arange(128)[:, None], nl.arange(C)[None, :]], value=v15, mask=m)
    return v2, v3, v4


def inputs(p, rng):
    x = rng.normal(0.0, 1.0, size=(p["R"], p["C"])).astype(np.float32)
    x *= rng.uniform(0.01, 100.0, size=(p["R"], 1)).astype(np.float32)
    return [x]


def reference(x):
    """In fp32, in the kernel's order of operations."""
    f = np.float32
    s = np.maximum(np.abs(x).max(axis=1, keepdims=True), f(1e-30)) / f(127.0)
    q = np.clip(np.floor(x / s + f(0.5)), f(-127.0), f(127.0))
    return q.astype(np.int8), s.astype(np.float32), (q * s).astype(np.float32)
