"""Cross-entropy over a vocabulary that is not a multiple of the tile (32,000 columns at full
size: the last 512-column block is masked with an `nl.arange` comparison on every call), as a
fused rewrite writes it: an online log-sum-exp over the vocabulary blocks in a
`sequential_range` (the negated block maximum from `tensor_reduce(max, negate=True,
keepdims=True)`, the running maximum and sum carried in [128, 1] tiles), the target's logit
picked by comparing an `iota` of the block's column numbers (an affine expression of the loop
index) with the label (`tensor_scalar(np.equal)`), multiplied by the logits and summed
(`tensor_tensor`, `tensor_reduce`), and accumulated over the blocks with `nl.loop_reduce`. Labels are int32, converted by `tensor_copy(engine=gpsimd)`. Two outputs:
the loss and the log-sum-exp of every row.

logits [N, V] fp32, labels [N, 1] int32; loss, lse [N, 1] fp32.
"""
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl
import neuronxcc.nki.isa as nisa

WHAT = ('cross-entropy over a ragged vocabulary: masks from arange comparisons, online '
        'log-sum-exp in sequential_range, tensor_reduce(negate, keepdims), iota of a loop-index '
        'expression compared with int32 labels, loop_reduce of the picked logit, two outputs')
SIZES = {"small": dict(N=256, V=1000), "full": dict(N=2048, V=32000)}
TOL = (1e-4, 1e-5)
VB = 512


@nki.jit
def kernel(logits, labels):
    N, V = logits.shape
    nvb = (V + VB - 1) // VB
    loss = nl.ndarray((N, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    lse = nl.ndarray((N, 1), dtype=nl.float32, buffer=nl.shared_hbm)
    ip = nl.arange(128)[:, None]
    iv = nl.arange(VB)[None, :]
    for t in nl.affine_range(N // 128):
        lab_i = nl.load(labels[t * 128 + ip, 0])
        lab = nisa.tensor_copy(lab_i, dtype=nl.float32, engine=nisa.gpsimd_engine)
        run_max = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        run_sum = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        picked = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
        run_max[...] = nisa.memset(shape=(128, 1), value=-1.0e30, dtype=nl.float32)
        run_sum[...] = nisa.memset(shape=(128, 1), value=0.0, dtype=nl.float32)
        for b in nl.sequential_range(nvb):
            inside = (b * VB + iv < V)
            lg = nl.load(logits[t * 128 + ip, b * VB + iv], mask=inside)
            neg_bmax = nisa.tensor_reduce(np.max, data=lg, axis=(1,), negate=True, keepdims=True,
                                          mask=inside)
            # new maximum = max(run_max, -neg_bmax); its negation feeds exp's bias
            neg_new = nisa.tensor_scalar(data=run_max, op0=np.multiply, operand0=-1.0,
                                         op1=np.minimum, operand1=neg_bmax)
            part = nl.ndarray((nl.par_dim(128), 1), dtype=nl.float32, buffer=nl.sbuf)
            e = nisa.activation(op=np.exp, data=lg, bias=neg_new, reduce_op=np.add,
                                reduce_res=part, reduce_cmd=nisa.reduce_cmd.reset_reduce,
                                mask=inside)
            corr = nisa.activation(op=np.exp, data=run_max, bias=neg_new)
            run_sum[...] = nisa.scalar_tensor_tensor(data=run_sum, op0=np.multiply, operand0=corr,
                                                     op1=np.add, operand1=part)
            run_max[...] = nisa.tensor_scalar(data=neg_new, op0=np.multiply, operand0=-1.0)
            cols = nisa.iota(b * VB + iv, dtype=nl.float32)
            cols_b = nisa.tensor_copy(cols.broadcast_to((128, VB)), engine=nisa.vector_engine)
            hit = nisa.tensor_scalar(data=cols_b, op0=np.equal, operand0=lab, mask=inside)
            both = nisa.tensor_tensor(hit, lg, op=np.multiply, mask=inside)
            got = nisa.tensor_reduce(np.add, data=both, axis=(1,), keepdims=True, mask=inside)
            picked[ip, 0] = nl.loop_reduce(got, op=np.add, loop_indices=[b])
        lz = nisa.activation(op=nl.log, data=run_sum)
        tot = nisa.tensor_tensor(lz, run_max, op=np.add)
        nl.store(lse[t * 128 + ip, 0], value=tot)
        nl.store(loss[t * 128 + ip, 0], value=nisa.tensor_tensor(tot, picked, op=np.subtract))
    return loss, lse


def inputs(p, rng):
    N, V = p["N"], p["V"]
    logits = rng.normal(0.0, 3.0, size=(N, V)).astype(np.float32)
    labels = rng.integers(0, V, size=(N, 1)).astype(np.int32)
    labels[:4, 0] = [0, V - 1, V - 2, 511 if V > 511 else 0]
    return [logits, labels]


def reference(logits, labels):
    x = logits.astype(np.float64)
    m = x.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(x - m).sum(axis=1, keepdims=True))
    tgt = np.take_along_axis(x, labels.astype(np.int64), axis=1)
    return (lse - tgt).astype(np.float32), lse.astype(np.float32)
