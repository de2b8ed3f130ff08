"""Language-level calls of a generated kernel, three outputs from one row tile (the calls a
generator reaches for when it does not lower them itself): a softmax (`nl.softmax(axis=[1])`),
an RMS normalisation with a weight row (`nl.rms_norm(x, w, axis=[1], n=C)`, the weight
broadcast by the load), and clipping by value with a run-time predicate
(`nisa.tensor_copy_predicated`: where |x| > thr, a uint8 predicate from `nl.greater`, the value
becomes sign(x) * thr, `nl.sign` and a multiply; elsewhere x is kept). Rows ragged: R = 1,000,
every call of the last tile masked.

x [R, C] fp32, w [1, C] fp32, thr [1, 1] fp32 -> softmax, rmsnorm, clipped [R, C] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('nl.softmax, nl.rms_norm with a broadcast-loaded weight row, clipping by '
        'tensor_copy_predicated on a uint8 predicate from nl.greater of nl.abs, nl.sign, '
        'ragged rows masked on every call, three outputs')
SIZES = {"small": dict(R=1000, C=512), "full": dict(R=8000, C=2048)}
TOL = (1e-5, 1e-4)
EPS = 1e-6


@nki.jit
def kernel(x, w, thr):
    R, C = x.shape
    T = (R + 127) // 128
    o1 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    o2 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    o3 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    iF = nl.arange(C)[None, :]
    w_b = nl.load(w.broadcast_to((128, C)))
    t_b = nl.load(thr.broadcast_to((128, 1)))
    for i in nl.affine_range(T):
        m = (i * 128 + ip < R)
        xt = nl.load(x[i * 128 + ip, iF], mask=m)
        sm = nl.softmax(xt, axis=[1], mask=m)
        rn = nl.rms_norm(xt, w_b, axis=[1], n=C, epsilon=EPS, mask=m)
        pred = nl.greater(nl.abs(xt, mask=m), t_b, dtype=nl.uint8, mask=m)
        clipped = nl.multiply(nl.sign(xt, mask=m), t_b, mask=m)
        out = nl.copy(xt, mask=m)
        nisa.tensor_copy_predicated(src=clipped, dst=out, predicate=pred, mask=m)
        nl.store(o1[i * 128 + ip, iF], value=sm, mask=m)
        nl.store(o2[i * 128 + ip, iF], value=rn, mask=m)
        nl.store(o3[i * 128 + ip, iF], value=out, mask=m)
    return o1, o2, o3


def inputs(p, rng):
    R, C = p["R"], p["C"]
    x = rng.normal(0.0, 2.0, size=(R, C)).astype(np.float32)
    w = rng.normal(1.0, 0.1, size=(1, C)).astype(np.float32)
    return [x, w, np.array([[1.5]], dtype=np.float32)]


def reference(x, w, thr):
    x64 = x.astype(np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    sm = e / e.sum(axis=1, keepdims=True)
    rn = x64 / np.sqrt((x64 * x64).mean(axis=1, keepdims=True) + EPS) * w
    t = thr[0, 0]
    clipped = np.where(np.abs(x) > t, np.sign(x) * t, x)
    return sm.astype(np.float32), rn.astype(np.float32), clipped.astype(np.float32)
