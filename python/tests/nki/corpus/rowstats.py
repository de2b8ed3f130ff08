"""Row sum and row maximum of an [R, C] fp32 matrix whose width is not a multiple of the block:
the last 512-column block is loaded and reduced under a mask (`mask=` on `nl.load`,
`nl.sum`, `nl.max`), index grids from `nl.mgrid`, partial results carried across blocks with
`nl.loop_reduce` (add, maximum), two outputs returned as a tuple. Input [R/128, 128, C];
outputs [R/128, 128, 1].
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'masked loads and reductions of a ragged last block, nl.mgrid, nl.sum/nl.max, two loop_reduce, two outputs'
SIZES = {"small": dict(R=256, C=1000), "full": dict(R=4096, C=8000)}
TOL = (1e-3, 1e-5)


@nki.jit
def kernel(v1):
    T, P, C = v1.shape
    NB = (C + 511) // 512
    v2 = nl.ndarray((T, P, 1), dtype=np.float32, buffer=nl.shared_hbm)
    v3 = nl.ndarray((T, P, 1), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((T, NB, nl.par_dim(128), 512), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v5 = nl.ndarray((T, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v6 = nl.ndarray((T, NB, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v7 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    v8 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='', buffer=nl.sbuf)
    i_p, i_f = nl.mgrid[0:128, 0:512]
    for i0 in nl.affine_range(T):
        for i1 in nl.affine_range(NB):
            v4[i0, i1, i_p, i_f] = nl.load(v1[i0, i_p, 512 * i1 + i_f], dtype=np.float32, mask=(512 * i1 + i_f < C))
            v5[i0, i1, i_p, 0] = nl.sum(v4[i0, i1, i_p, i_f], axis=[1], dtype=np.float32, mask=(512 * i1 + i_f < C), keepdims=True)
            v6[i0, i1, i_p, 0] = nl.max(v4[i0, i1, i_p, i_f], axis=[1], dtype=np.float32, mask=(512 * i1 + i_f < C), keepdims=True)
            v7[i0, i_p, 0] = nl.loop_reduce(v5[i0, i1, i_p, 0], op=np.add, loop_indices=[i1], dtype=np.float32, mask=None)
            v8[i0, i_p, 0] = nl.loop_reduce(v6[i0, i1, i_p, 0], op=np.maximum, loop_indices=[i1], dtype=np.float32, mask=None)
            ' end loop i1 '
        nl.store(v2[i0, i_p, 0], value=v7[i0, i_p, 0], mask=None)
        nl.store(v3[i0, i_p, 0], value=v8[i0, i_p, 0], mask=None)
        ' end loop i0 '
    return v2, v3


def inputs(p, rng):
    # every value below 0, so zeros in the columns the mask drops would show in the maximum; the
    # maximum and sum are taken over the kept columns only
    x = rng.normal(-5.0, 1.0, size=(p["R"], p["C"])).astype(np.float32)
    return [x.reshape(p["R"] // 128, 128, p["C"])]


def reference(x):
    x64 = x.astype(np.float64)
    return (x64.sum(axis=-1, keepdims=True).astype(np.float32),
            x.max(axis=-1, keepdims=True))
