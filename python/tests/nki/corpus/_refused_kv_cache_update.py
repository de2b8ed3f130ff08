"""Kept out of the suite (refused): a decode step's KV-cache update at a position known only
at run time, as generated code writes it: the new key and value rows of every head
([H, 1, D]) are written into the [H, S, D] caches at the row given by a [1, 1] int32 position
tensor (`nl.store(k_cache[h, pos_tile, i_f], ...)`: an indirect, run-time row offset on the
store). The caches are inputs updated in place and also returned. ncsim refuses the indirect
index at the store's line with err_unsupported_indirect_indexing (NCA has no DMA whose
address comes from data); a fix needs such a DMA in NCA, or a descriptor built on GpSimd.

k_new, v_new [H, 1, D] fp32, pos [1, 1] int32, k_cache, v_cache [H, S, D] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

WHAT = 'KV-cache update at a run-time position: stores with an int32 row index tile'
SIZES = {"small": dict(H=8, S=256, D=128), "full": dict(H=32, S=8192, D=128)}
TOL = (0.0, 0.0)
REFUSED = ("err_unsupported_indirect_indexing", "nl.store(v4[i0, v6[nl.arange(1)[:, None], 0], nl.arange(D)[None, :]]")


@nki.jit
def kernel(v1, v2, v3, v4, v5):
    H, _, D = v1.shape
    v6 = nl.ndarray((nl.par_dim(1), 1), dtype=np.int32, name='pos', buffer=nl.sbuf)
    v6[nl.arange(1)[:, None], 0] = nl.load(v3[nl.arange(1)[:, None], 0], dtype=np.int32, mask=None)
    for i0 in nl.affine_range(H):
        v7 = nl.load(v1[i0, nl.arange(1)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        v8 = nl.load(v2[i0, nl.arange(1)[:, None], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        nl.store(v4[i0, v6[nl.arange(1)[:, None], 0], nl.arange(D)[None, :]], value=v7, mask=None)
        nl.store(v5[i0, v6[nl.arange(1)[:, None], 0], nl.arange(D)[None, :]], value=v8, mask=None)
        ' end loop i0 '
    return v4, v5


def inputs(p, rng):
    H, S, D = p["H"], p["S"], p["D"]
    k_new = rng.normal(size=(H, 1, D)).astype(np.float32)
    v_new = rng.normal(size=(H, 1, D)).astype(np.float32)
    pos = np.array([[S // 3]], dtype=np.int32)
    kc = rng.normal(size=(H, S, D)).astype(np.float32)
    vc = rng.normal(size=(H, S, D)).astype(np.float32)
    return [k_new, v_new, pos, kc, vc]


def reference(k_new, v_new, pos, kc, vc):
    kc, vc = kc.copy(), vc.copy()
    kc[:, pos[0, 0]] = k_new[:, 0]
    vc[:, pos[0, 0]] = v_new[:, 0]
    return kc, vc
