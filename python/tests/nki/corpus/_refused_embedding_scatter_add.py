"""Kept out of the suite (refused): the backward pass of an embedding lookup, as generated code
writes it: the gradient rows of a batch of tokens added into a [V, D] gradient table at the
rows their int32 ids name, by a DMA that accumulates into its destination
(`nisa.dma_copy(dst=grad[ids_tile, i_f], src=..., dst_rmw_op=np.add)`: an indirect,
run-time row offset on the destination, with duplicate ids adding up). ncsim refuses the
indirect index at the call's line with err_unsupported_indirect_indexing (NCA has no DMA
whose address comes from data). The table is an input updated in place and returned.

ids [N, 1] int32, dy [N, D] fp32, grad [V, D] fp32 -> grad + scatter-add of dy by ids.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'embedding backward: rows scatter-added by an int32 id tile (dma_copy with dst_rmw_op=np.add)'
SIZES = {"small": dict(N=256, V=1000, D=256), "full": dict(N=8192, V=32000, D=1024)}
TOL = (1e-5, 1e-5)
REFUSED = ("err_unsupported_indirect_indexing", "nisa.dma_copy(dst=v3[v4[i0")


@nki.jit
def kernel(v1, v2, v3):
    N, D = v2.shape
    T = N // 128
    v4 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.int32, name='ids', buffer=nl.sbuf)
    v5 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='dy', buffer=nl.sbuf)
    for i0 in nl.affine_range(T):
        v4[i0, nl.arange(128)[:, None], 0] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], 0], dtype=np.int32, mask=None)
        v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v2[i0 * 128 + nl.arange(128)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        nisa.dma_copy(dst=v3[v4[i0, nl.arange(128)[:, None], 0], nl.arange(D)[None, :]], src=v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], dst_rmw_op=np.add, mask=None)
        ' end loop i0 '
    return v3


def inputs(p, rng):
    ids = rng.integers(0, p["V"], size=(p["N"], 1)).astype(np.int32)
    dy = rng.normal(0.0, 1.0, size=(p["N"], p["D"])).astype(np.float32)
    grad = np.zeros((p["V"], p["D"]), dtype=np.float32)
    return [ids, dy, grad]


def reference(ids, dy, grad):
    out = grad.astype(np.float64).copy()
    np.add.at(out, ids[:, 0], dy)
    return out.astype(np.float32)
