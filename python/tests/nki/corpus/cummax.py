"""Running maximum along the rows of an [R, C] fp32 matrix: `nisa.tensor_tensor_scan` with
op0 = maximum and op1 = add of a zero tile (state = max(state, x) + 0) over 512-column blocks,
each block's scan started from the previous block's last column in a `nl.sequential_range`
loop; and, as a second output, the maximum of each row so far at the end of each block,
carried in a [128, 1] state tile that is updated in place (`state[...] = nl.maximum(state,
block max)`) after starting from -inf by `nisa.memset`. Input x [R, C]; outputs the running
maximum [R, C] and the per-block maxima so far [R, C/512].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'tensor_tensor_scan with maximum, initial carried across blocks in sequential_range, a [128, 1] state updated in place from a memset start, two outputs'
SIZES = {"small": dict(R=256, C=2048), "full": dict(R=4096, C=8192)}
TOL = (0.0, 0.0)


@nki.jit
def kernel(v1):
    R, C = v1.shape
    RT = R // 128
    NB = C // 512
    v2 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((R, NB), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((nl.par_dim(128), 512), dtype=np.float32, name='zeros', buffer=nl.sbuf)
    v5 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='carry', buffer=nl.sbuf)
    v6 = nl.ndarray((RT, nl.par_dim(128), 1), dtype=np.float32, name='state', buffer=nl.sbuf)
    v7 = nl.ndarray((RT, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v8 = nl.ndarray((RT, NB, nl.par_dim(128), 512), dtype=np.float32, name='', buffer=nl.sbuf)
    v9 = nl.ndarray((RT, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v10 = nl.ndarray((RT, nl.par_dim(128), NB), dtype=np.float32, name='', buffer=nl.sbuf)
    v4[nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.memset(shape=(128, 512), value=0.0, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
    for i0 in nl.affine_range(RT):
        v5[i0, nl.arange(128)[:, None], 0] = nisa.memset(shape=(128, 1), value=-np.inf, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
        v6[i0, nl.arange(128)[:, None], 0] = nisa.memset(shape=(128, 1), value=-np.inf, dtype=np.float32, mask=None, engine=nki.isa.unknown_engine)
        for i1 in nl.sequential_range(NB):
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nl.load(v1[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], dtype=np.float32, mask=None)
            v8[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]] = nisa.tensor_tensor_scan(v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], v4[nl.arange(128)[:, None], nl.arange(512)[None, :]], initial=v5[i0, nl.arange(128)[:, None], 0], op0=np.maximum, op1=np.add, dtype=np.float32, mask=None)
            v5[i0, nl.arange(128)[:, None], 0] = nisa.tensor_copy(v8[i0, i1, nl.arange(128)[:, None], 511], dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
            nl.store(v2[128 * i0 + nl.arange(128)[:, None], 512 * i1 + nl.arange(512)[None, :]], value=v8[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], mask=None)
            v9[i0, i1, nl.arange(128)[:, None], 0] = nisa.tensor_reduce(np.max, data=v7[i0, i1, nl.arange(128)[:, None], nl.arange(512)[None, :]], axis=(1,), dtype=np.float32, negate=False, mask=None)
            v6[i0, nl.arange(128)[:, None], 0] = nl.maximum(v6[i0, nl.arange(128)[:, None], 0], v9[i0, i1, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
            v10[i0, nl.arange(128)[:, None], i1] = nl.copy(v6[i0, nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
            ' end loop i1 '
        nl.store(v3[128 * i0 + nl.arange(128)[:, None], nl.arange(NB)[None, :]], value=v10[i0, nl.arange(128)[:, None], nl.arange(NB)[None, :]], mask=None)
        ' end loop i0 '
    return v2, v3


def inputs(p, rng):
    return [rng.normal(0.0, 1.0, size=(p["R"], p["C"])).astype(np.float32)]


def reference(x):
    run = np.maximum.accumulate(x, axis=1)
    return run, np.ascontiguousarray(run[:, 511::512])
