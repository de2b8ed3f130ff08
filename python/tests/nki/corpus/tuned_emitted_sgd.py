"""SGD with momentum and weight decay over a ragged row count, in the generator's own form
(numbered variables, `nl.arange` grids on every access, masks spelled as the generator's
affine inequalities `-128 * i0 + -1 * i_p + (R - 1) >= 0`, typed constants
`np.dtype(np.float32).type(...)`, `' end loop '` markers) after an optimising pass rewrote it:
the per-block tensors declared inside the loop instead of as whole-problem block tensors,
the two column loops fused into one 2048-wide pass, the update split between the engines
(`tensor_scalar(..., reverse0=True, engine=...)` on the Scalar and Vector engines,
`nl.add`/`nl.subtract` with `dtype=`), and two outputs.

p, g, m [R, C]; outputs p' = p - lr (mu m + g + wd p) and m' = mu m + g + wd p, fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ("generator's form after a rewrite: ragged rows with the generator's affine-inequality "
        "masks, typed constants, per-iteration tensors declared in the loop, a fused 2048-wide "
        "pass, tensor_scalar reverse0 split across engines, two outputs")
SIZES = {"small": dict(R=300, C=2048), "full": dict(R=10000, C=2048)}
TOL = (1e-6, 1e-5)
LR, MU, WD = 0.01, 0.9, 0.0005


@nki.jit
def kernel(v1, v2, v3):
    R, C = v1.shape
    NT = (R + 127) // 128
    v4 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    for i0 in nl.affine_range(NT):
        for i1 in nl.affine_range(C // 2048):
            v6 = nl.ndarray((nl.par_dim(128), 2048), dtype=np.float32, name='p_local', buffer=nl.sbuf)
            v7 = nl.ndarray((nl.par_dim(128), 2048), dtype=np.float32, name='g_local', buffer=nl.sbuf)
            v8 = nl.ndarray((nl.par_dim(128), 2048), dtype=np.float32, name='m_local', buffer=nl.sbuf)
            v6[nl.arange(128)[:, None], nl.arange(2048)[None, :]] = nl.load(v1[128 * i0 + nl.arange(128)[:, None], 2048 * i1 + nl.arange(2048)[None, :]], dtype=np.float32, mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0)
            v7[nl.arange(128)[:, None], nl.arange(2048)[None, :]] = nl.load(v2[128 * i0 + nl.arange(128)[:, None], 2048 * i1 + nl.arange(2048)[None, :]], dtype=np.float32, mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0)
            v8[nl.arange(128)[:, None], nl.arange(2048)[None, :]] = nl.load(v3[128 * i0 + nl.arange(128)[:, None], 2048 * i1 + nl.arange(2048)[None, :]], dtype=np.float32, mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0)
            v9 = nisa.tensor_scalar(data=v6[nl.arange(128)[:, None], nl.arange(2048)[None, :]], op0=nl.multiply, operand0=np.dtype(np.float32).type(WD), reverse0=True, dtype=np.float32, mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0, engine=nki.isa.scalar_engine)
            v10 = nisa.tensor_scalar(data=v8[nl.arange(128)[:, None], nl.arange(2048)[None, :]], op0=nl.multiply, operand0=np.dtype(np.float32).type(MU), reverse0=True, dtype=np.float32, mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0, engine=nki.isa.vector_engine)
            v11 = nl.add(v10[nl.arange(128)[:, None], nl.arange(2048)[None, :]], v7[nl.arange(128)[:, None], nl.arange(2048)[None, :]], mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0, dtype=np.float32)
            v12 = nl.add(v11[nl.arange(128)[:, None], nl.arange(2048)[None, :]], v9[nl.arange(128)[:, None], nl.arange(2048)[None, :]], mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0, dtype=np.float32)
            nl.store(v5[128 * i0 + nl.arange(128)[:, None], 2048 * i1 + nl.arange(2048)[None, :]], value=v12[nl.arange(128)[:, None], nl.arange(2048)[None, :]], mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0)
            v13 = nisa.tensor_scalar(data=v12[nl.arange(128)[:, None], nl.arange(2048)[None, :]], op0=nl.multiply, operand0=np.dtype(np.float32).type(LR), reverse0=True, dtype=np.float32, mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0, engine=nki.isa.unknown_engine)
            v14 = nl.subtract(v6[nl.arange(128)[:, None], nl.arange(2048)[None, :]], v13[nl.arange(128)[:, None], nl.arange(2048)[None, :]], mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0, dtype=np.float32)
            nl.store(v4[128 * i0 + nl.arange(128)[:, None], 2048 * i1 + nl.arange(2048)[None, :]], value=v14[nl.arange(128)[:, None], nl.arange(2048)[None, :]], mask=-128 * i0 + -1 * nl.arange(128)[:, None] + (R - 1) >= 0)
            ' end loop i1 '
        ' end loop i0 '
    return v4, v5


def inputs(p, rng):
    shape = (p["R"], p["C"])
    return [rng.normal(size=shape).astype(np.float32),
            rng.normal(0.0, 0.1, size=shape).astype(np.float32),
            rng.normal(0.0, 0.1, size=shape).astype(np.float32)]


def reference(p, g, m):
    f = np.float32
    m2 = (f(MU) * m + g) + f(WD) * p
    return (p - f(LR) * m2).astype(np.float32), m2.astype(np.float32)
