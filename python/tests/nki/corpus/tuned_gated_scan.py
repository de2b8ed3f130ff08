"""A gated linear recurrence (h_t = a_t h_(t-1) + (1 - a_t) x_t with a_t = sigmoid(z_t)), as a
rewrite that tiles the sequence writes it: the gate from `activation(sigmoid)`, (1 - a) x in
one `scalar_tensor_tensor` with a reversed subtraction, the recurrence by
`tensor_tensor_scan(multiply, add)` over 512-step chunks of a `sequential_range`, its initial
value the previous chunk's last column kept in a [128, 1] tile (a loop-carried tile), and an
output 1 - s h made by a two-op `tensor_scalar` with `reverse1`. Three outputs: the states, the
gated output, and the last state of every channel.

x, z [C, L]; outputs h [C, L], y [C, L], h_last [C, 1], fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('gated recurrence: sigmoid gate, scalar_tensor_tensor with reverse0, tensor_tensor_scan '
        'chunks in sequential_range with a carried [128, 1] initial, two-op tensor_scalar with '
        'reverse1, three outputs')
SIZES = {"small": dict(C=256, L=2048), "full": dict(C=2048, L=8192)}
TOL = (1e-5, 1e-4)
SCALE = 0.75
CH = 512


@nki.jit
def kernel(x, z):
    C, L = x.shape
    h_out = nl.ndarray((C, L), dtype=x.dtype, buffer=nl.shared_hbm)
    y_out = nl.ndarray((C, L), dtype=x.dtype, buffer=nl.shared_hbm)
    last = nl.ndarray((C, 1), dtype=x.dtype, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    ich = nl.arange(CH)[None, :]
    for c in nl.affine_range(C // 128):
        carry = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        carry[...] = nisa.memset(shape=(128, 1), value=0.0, dtype=nl.float32)
        for s in nl.sequential_range(L // CH):
            xt = nl.load(x[c * 128 + ip, s * CH + ich])
            zt = nl.load(z[c * 128 + ip, s * CH + ich])
            a = nisa.activation(op=nl.sigmoid, data=zt)
            # (1 - a) * x: op0 reversed (1.0 - a), op1 multiplies by the x tile
            b = nisa.scalar_tensor_tensor(data=a, op0=np.subtract, operand0=1.0, reverse0=True,
                                          op1=np.multiply, operand1=xt)
            hs = nisa.tensor_tensor_scan(a, b, initial=carry, op0=np.multiply, op1=np.add)
            carry[...] = nisa.tensor_copy(hs[ip, CH - 1], engine=nisa.gpsimd_engine)
            y = nisa.tensor_scalar(data=hs, op0=np.multiply, operand0=SCALE,
                                   op1=np.subtract, operand1=1.0, reverse1=True)
            nl.store(h_out[c * 128 + ip, s * CH + ich], value=hs)
            nl.store(y_out[c * 128 + ip, s * CH + ich], value=y)
        nl.store(last[c * 128 + ip, 0], value=carry)
    return h_out, y_out, last


def inputs(p, rng):
    C, L = p["C"], p["L"]
    return [rng.normal(size=(C, L)).astype(np.float32),
            rng.normal(1.0, 1.5, size=(C, L)).astype(np.float32)]


def reference(x, z):
    a = 1.0 / (1.0 + np.exp(-z.astype(np.float64)))
    b = (1.0 - a) * x
    h = np.empty_like(b)
    cur = np.zeros(x.shape[0])
    for t in range(x.shape[1]):
        cur = a[:, t] * cur + b[:, t]
        h[:, t] = cur
    y = 1.0 - SCALE * h
    return h.astype(np.float32), y.astype(np.float32), h[:, -1:].astype(np.float32)
