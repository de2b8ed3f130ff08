"""The maximum of every row over a column window that differs from row to row (a ragged
attention span, a per-row valid length), as a generated kernel writes it with
`nisa.range_select`: per row the bounds lo <= j < hi come as [R, 1] fp32 inputs, each
512-column block is selected against them (`comp_op0=greater_equal`, `comp_op1=less`,
`range_start` the block's first column), elements outside the window become fp32.min, and the
row maximum is carried across the blocks in the Vector engine's accumulator registers
(`reduce_cmd=reset_reduce` on the first block, peeled out of the loop, then `reduce` in a
`sequential_range`; the last block writes `reduce_res`). Two outputs: the masked matrix and
the window maximum.

x [R, C] fp32, lo, hi [R, 1] fp32 (0 <= lo < hi <= C) -> sel [R, C] fp32, wmax [R, 1] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('per-row column windows: nisa.range_select with [128, 1] bounds and range_start of the '
        'block, max carried in the accumulator registers across a peeled first block and a '
        'sequential_range (reset_reduce, reduce, reduce_res), two outputs')
SIZES = {"small": dict(R=256, C=1536), "full": dict(R=4096, C=8192)}
TOL = (0.0, 0.0)
FB = 512


@nki.jit
def kernel(v1, v2, v3):
    R, C = v1.shape
    T = R // 128
    NB = C // FB
    v4 = nl.ndarray((R, C), dtype=np.float32, buffer=nl.shared_hbm)
    v5 = nl.ndarray((R, 1), dtype=np.float32, buffer=nl.shared_hbm)
    v6 = nl.ndarray((T, NB, nl.par_dim(128), FB), dtype=np.float32, name='x_local', buffer=nl.sbuf)
    v7 = nl.ndarray((T, NB, nl.par_dim(128), FB), dtype=np.float32, name='sel', buffer=nl.sbuf)
    v8 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='lo', buffer=nl.sbuf)
    v9 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='hi', buffer=nl.sbuf)
    v10 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.float32, name='wmax', buffer=nl.sbuf)
    for i0 in nl.affine_range(T):
        v8[i0, nl.arange(128)[:, None], 0] = nl.load(v2[i0 * 128 + nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        v9[i0, nl.arange(128)[:, None], 0] = nl.load(v3[i0 * 128 + nl.arange(128)[:, None], 0], dtype=np.float32, mask=None)
        v6[i0, 0, nl.arange(128)[:, None], nl.arange(FB)[None, :]] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], nl.arange(FB)[None, :]], dtype=np.float32, mask=None)
        v7[i0, 0, nl.arange(128)[:, None], nl.arange(FB)[None, :]] = nisa.range_select(on_true_tile=v6[i0, 0, nl.arange(128)[:, None], nl.arange(FB)[None, :]], comp_op0=np.greater_equal, comp_op1=np.less, bound0=v8[i0, nl.arange(128)[:, None], 0], bound1=v9[i0, nl.arange(128)[:, None], 0], reduce_cmd=nisa.reduce_cmd.reset_reduce, reduce_res=v10[i0, nl.arange(128)[:, None], 0], reduce_op=np.amax, range_start=0, on_false_value=nl.fp32.min, dtype=np.float32, mask=None)
        nl.store(v4[i0 * 128 + nl.arange(128)[:, None], nl.arange(FB)[None, :]], value=v7[i0, 0, nl.arange(128)[:, None], nl.arange(FB)[None, :]], mask=None)
        for i1 in nl.sequential_range(1, NB):
            v6[i0, i1, nl.arange(128)[:, None], nl.arange(FB)[None, :]] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], i1 * FB + nl.arange(FB)[None, :]], dtype=np.float32, mask=None)
            v7[i0, i1, nl.arange(128)[:, None], nl.arange(FB)[None, :]] = nisa.range_select(on_true_tile=v6[i0, i1, nl.arange(128)[:, None], nl.arange(FB)[None, :]], comp_op0=np.greater_equal, comp_op1=np.less, bound0=v8[i0, nl.arange(128)[:, None], 0], bound1=v9[i0, nl.arange(128)[:, None], 0], reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=v10[i0, nl.arange(128)[:, None], 0], reduce_op=np.amax, range_start=i1 * FB, on_false_value=nl.fp32.min, dtype=np.float32, mask=None)
            nl.store(v4[i0 * 128 + nl.arange(128)[:, None], i1 * FB + nl.arange(FB)[None, :]], value=v7[i0, i1, nl.arange(128)[:, None], nl.arange(FB)[None, :]], mask=None)
            ' end loop i1 '
        nl.store(v5[i0 * 128 + nl.arange(128)[:, None], 0], value=v10[i0, nl.arange(128)[:, None], 0], mask=None)
        ' end loop i0 '
    return v4, v5


def inputs(p, rng):
    R, C = p["R"], p["C"]
    x = rng.normal(0.0, 1.0, size=(R, C)).astype(np.float32)
    lo = rng.integers(0, C - 1, size=(R, 1))
    hi = np.minimum(C, lo + 1 + rng.integers(0, C // 2, size=(R, 1)))
    return [x, lo.astype(np.float32), hi.astype(np.float32)]


def reference(x, lo, hi):
    j = np.arange(x.shape[1])[None, :]
    inside = (j >= lo) & (j < hi)
    sel = np.where(inside, x, np.finfo(np.float32).min).astype(np.float32)
    return sel, sel.max(axis=1, keepdims=True)
