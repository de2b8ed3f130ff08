"""Kept out of the suite (refused): an embedding lookup as generated code writes it, rows of a
[V, D] table gathered by a tile of int32 token ids (`nl.load(table[ids_tile, i_f])`: an
indirect, run-time row offset on the DMA), then scaled by sqrt(D). ncsim refuses the indirect
index at the load's line with err_unsupported_indirect_indexing: NCA has no DMA whose
addresses come from data (the chip builds such descriptors on GpSimd, "swdge").
test_nki_corpus.py::test_refused_kernels_say_why_at_their_line holds the refusal to that line.

ids [N, 1] int32, table [V, D] fp32 -> [N, D] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = 'embedding gather by an int32 id tile (indirect DMA row offsets), scaled by sqrt(D)'
SIZES = {"small": dict(N=256, V=1000, D=256), "full": dict(N=8192, V=32000, D=1024)}
TOL = (1e-6, 1e-6)
REFUSED = ("err_unsupported_indirect_indexing", "v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(")


@nki.jit
def kernel(v1, v2):
    N, _ = v1.shape
    V, D = v2.shape
    T = N // 128
    v3 = nl.ndarray((N, D), dtype=np.float32, buffer=nl.shared_hbm)
    v4 = nl.ndarray((T, nl.par_dim(128), 1), dtype=np.int32, name='ids', buffer=nl.sbuf)
    v5 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='rows', buffer=nl.sbuf)
    v6 = nl.ndarray((T, nl.par_dim(128), D), dtype=np.float32, name='', buffer=nl.sbuf)
    for i0 in nl.affine_range(T):
        v4[i0, nl.arange(128)[:, None], 0] = nl.load(v1[i0 * 128 + nl.arange(128)[:, None], 0], dtype=np.int32, mask=None)
        v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nl.load(v2[v4[i0, nl.arange(128)[:, None], 0], nl.arange(D)[None, :]], dtype=np.float32, mask=None)
        v6[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]] = nisa.tensor_scalar(data=v5[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], op0=np.multiply, operand0=float(np.sqrt(D)), dtype=np.float32, mask=None, engine=nki.isa.vector_engine)
        nl.store(v3[i0 * 128 + nl.arange(128)[:, None], nl.arange(D)[None, :]], value=v6[i0, nl.arange(128)[:, None], nl.arange(D)[None, :]], mask=None)
        ' end loop i0 '
    return v3


def inputs(p, rng):
    ids = rng.integers(0, p["V"], size=(p["N"], 1)).astype(np.int32)
    table = rng.normal(0.0, 1.0, size=(p["V"], p["D"])).astype(np.float32)
    return [ids, table]


def reference(ids, table):
    return (table[ids[:, 0]] * np.float32(np.sqrt(table.shape[1]))).astype(np.float32)
