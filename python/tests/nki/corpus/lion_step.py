"""One step of the Lion optimiser over a parameter matrix, as a fused optimiser kernel is
generated: parameters, gradients and momentum as [R, C] fp32, the hyper-parameters (learning
rate, weight decay, beta1, beta2) in a [1, 4] fp32 tensor read at run time (a schedule changes
them between steps) and broadcast to the 128 partitions by the load
(`hbm_view.broadcast_to((128, 4))`), then taken as per-partition operands
(`operand0=hp[:, 0:1]`); the update direction's sign on the Scalar engine
(`activation(op=nl.sign)`); every intermediate a block tensor of the whole problem
(parameters, momentum and five intermediates: 7 x 8 MiB at full size), with the header of
generated kernels (imports repeated inside the kernel, `par_dim` imported by name). Two outputs:

    c  = beta1 * m + (1 - beta1) * g
    p' = p * (1 - lr * wd) - lr * sign(c)
    m' = beta2 * m + (1 - beta2) * g

p, g, m [R, C] fp32, hp [1, 4] fp32 -> p', m' [R, C] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.typing as nt
import neuronxcc.nki.isa as nisa
from neuronxcc.nki import trace
from neuronxcc.nki.language import par_dim

WHAT = ('Lion optimiser step: run-time hyper-parameters broadcast by the load and used as '
        '[128, 1] operands, two-op tensor_scalar and scalar_tensor_tensor chains, '
        'activation(sign), seven block tensors, two outputs')
SIZES = {"small": dict(R=256, C=2048), "full": dict(R=8192, C=2048)}
TOL = (1e-7, 1e-6)
CB = 1024


@nki.jit
def kernel(v1, v2, v3, v4):
    import numpy as np
    import neuronxcc.nki as nki
    import neuronxcc.nki.language as nl
    import neuronxcc.nki.typing as nt
    import neuronxcc.nki.isa as nisa
    from neuronxcc.nki import trace
    from neuronxcc.nki.language import par_dim
    R, C = v1.shape
    T = R // 128
    NB = C // CB
    v5 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v7 = nl.ndarray((par_dim(128), 4), dtype=np.float32, name='hp', buffer=nl.sbuf)
    v8 = nl.ndarray((par_dim(128), 4), dtype=np.float32, name='hp2', buffer=nl.sbuf)
    v9 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='p_local', buffer=nl.sbuf)
    v10 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='g_local', buffer=nl.sbuf)
    v11 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='m_local', buffer=nl.sbuf)
    v12 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='', buffer=nl.sbuf)
    v13 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='', buffer=nl.sbuf)
    v14 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='', buffer=nl.sbuf)
    v15 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='', buffer=nl.sbuf)
    v16 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='', buffer=nl.sbuf)
    v17 = nl.ndarray((T, NB, par_dim(128), CB), dtype=np.float32, name='', buffer=nl.sbuf)
    v7[nl.arange(128)[:, None], nl.arange(4)[None, :]] = nl.load(v4.broadcast_to((128, 4)), dtype=np.float32, mask=None)
    # columns of v8: 1 - lr * wd, -lr, 1 - beta1, 1 - beta2
    v8[nl.arange(128)[:, None], 0] = nisa.tensor_scalar(data=v7[nl.arange(128)[:, None], 0], op0=np.multiply, operand0=v7[nl.arange(128)[:, None], 1], op1=np.subtract, operand1=1.0, reverse1=True, dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
    v8[nl.arange(128)[:, None], 1] = nisa.tensor_scalar(data=v7[nl.arange(128)[:, None], 0], op0=np.multiply, operand0=-1.0, dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
    v8[nl.arange(128)[:, None], nl.arange(2)[None, :] + 2] = nisa.tensor_scalar(data=v7[nl.arange(128)[:, None], nl.arange(2)[None, :] + 2], op0=np.subtract, operand0=1.0, reverse0=True, dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
    for i0 in nl.affine_range(T):
        for i1 in nl.affine_range(NB):
            v9[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], i1 * CB + nl.arange(CB)[None, :]], dtype=np.float32, mask=None)
            v10[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nl.load(v2[i0 * 128 + nl.arange(128)[:, None], i1 * CB + nl.arange(CB)[None, :]], dtype=np.float32, mask=None)
            v11[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nl.load(v3[i0 * 128 + nl.arange(128)[:, None], i1 * CB + nl.arange(CB)[None, :]], dtype=np.float32, mask=None)
            # c = beta1 * m + (1 - beta1) * g
            v12[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.tensor_scalar(data=v11[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], op0=np.multiply, operand0=v7[nl.arange(128)[:, None], 2], dtype=np.float32, mask=None, engine=nki.isa.scalar_engine)
            v13[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.scalar_tensor_tensor(data=v10[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], op0=np.multiply, operand0=v8[nl.arange(128)[:, None], 2], op1=np.add, operand1=v12[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], dtype=np.float32, mask=None)
            v14[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.activation(op=nl.sign, data=v13[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], bias=None, scale=1.0, mask=None, dtype=np.float32)
            # p' = p * (1 - lr * wd) + (-lr) * sign(c)
            v15[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.tensor_scalar(data=v9[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], op0=np.multiply, operand0=v8[nl.arange(128)[:, None], 0], dtype=np.float32, mask=None, engine=nki.isa.scalar_engine)
            v16[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.scalar_tensor_tensor(data=v14[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], op0=np.multiply, operand0=v8[nl.arange(128)[:, None], 1], op1=np.add, operand1=v15[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], dtype=np.float32, mask=None)
            # m' = beta2 * m + (1 - beta2) * g
            v17[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.tensor_scalar(data=v11[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], op0=np.multiply, operand0=v7[nl.arange(128)[:, None], 3], dtype=np.float32, mask=None, engine=nki.isa.scalar_engine)
            v12[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]] = nisa.scalar_tensor_tensor(data=v10[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], op0=np.multiply, operand0=v8[nl.arange(128)[:, None], 3], op1=np.add, operand1=v17[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], dtype=np.float32, mask=None)
            nl.store(v5[i0 * 128 + nl.arange(128)[:, None], i1 * CB + nl.arange(CB)[None, :]], value=v16[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], mask=None)
            nl.store(v6[i0 * 128 + nl.arange(128)[:, None], i1 * CB + nl.arange(CB)[None, :]], value=v12[i0, i1, nl.arange(128)[:, None], nl.arange(CB)[None, :]], mask=None)
            ' end loop i1 '
        ' end loop i0 '
    return v5, v6


def inputs(p, rng):
    shape = (p["R"], p["C"])
    w = rng.normal(0.0, 1.0, size=shape).astype(np.float32)
    g = rng.normal(0.0, 0.1, size=shape).astype(np.float32)
    m = rng.normal(0.0, 0.05, size=shape).astype(np.float32)
    hp = np.array([[1e-3, 0.1, 0.9, 0.99]], dtype=np.float32)
    return [w, g, m, hp]


def reference(w, g, m, hp):
    """In fp32, in the kernel's order of operations."""
    f = np.float32
    lr, wd, b1, b2 = (f(v) for v in hp[0])
    c = m * b1 + g * (f(1) - b1)
    p_new = w * (f(1) - lr * wd) + np.sign(c) * (-lr)
    m_new = m * b2 + g * (f(1) - b2)
    return p_new.astype(np.float32), m_new.astype(np.float32)
