"""Fused self-attention for a small head (Stable-Diffusion style).

out = softmax((0.125 * Q) @ K.T) @ V for one head, q/k/v [seqlen, d_head],
d_head <= 128, seqlen a multiple of 128. Q and K are loaded transposed (head
dim on partitions) so that Q K^T is a Tensor-engine matmul per 128 x 128
block; V keeps its natural layout (sequence on partitions). For each block
of 128 queries the whole score row [128, seqlen] stays in SBUF: max per row
(Vector), one exp over the row with the negated max as bias (Scalar), sum
(Vector), transpose of the probabilities (Tensor engine), then P V
accumulated in PSUM over the key blocks, and a division by the sums. With
mixed_precision both matmuls take bf16 operands.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa


@nki.jit
def fused_self_attn_for_SD_small_head_size(q_ref, k_ref, v_ref, use_causal_mask=False,
                                           mixed_precision=True):
    """q, k, v [seqlen, d_head] -> attention output [seqlen, d_head]."""
    kernel_dtype = q_ref.dtype
    pe_in_dt = nl.bfloat16 if mixed_precision else nl.float32
    assert q_ref.dtype == k_ref.dtype == v_ref.dtype
    seqlen, d_head = q_ref.shape
    assert k_ref.shape == (seqlen, d_head) and v_ref.shape == (seqlen, d_head)
    assert d_head <= 128 and seqlen % 128 == 0
    out_ref = nl.ndarray((seqlen, d_head), dtype=q_ref.dtype, buffer=nl.shared_hbm)

    softmax_scale = 0.125
    n_tiles = seqlen // 128

    ip_seq = nl.arange(128)[:, None]      # 128 sequence positions on partitions
    if_seq = nl.arange(128)[None, :]      # 128 sequence positions on the free axis
    ip_head = nl.arange(d_head)[:, None]  # head dim on partitions
    if_head = nl.arange(d_head)[None, :]  # head dim on the free axis

    # V in its natural layout: [128 keys, tile, d_head].
    trans_v = nl.ndarray((nl.par_dim(128), n_tiles, d_head), dtype=pe_in_dt)
    for i_k in nl.affine_range(n_tiles):
        trans_v[ip_seq, i_k, if_head] = nl.load(v_ref[i_k * 128 + ip_seq, if_head],
                                                dtype=pe_in_dt)

    # Q (pre-scaled) and K transposed: [tile, d_head, 128].
    q_local = nl.ndarray((n_tiles, nl.par_dim(d_head), 128), dtype=pe_in_dt)
    k_local = nl.ndarray((n_tiles, nl.par_dim(d_head), 128), dtype=pe_in_dt)
    for i_q in nl.affine_range(n_tiles):
        q_local[i_q, ip_head, if_seq] = nl.load_transpose2d(
            q_ref[i_q * 128 + ip_seq, if_head], dtype=pe_in_dt) * softmax_scale
    for i_k in nl.affine_range(n_tiles):
        k_local[i_k, ip_head, if_seq] = nl.load_transpose2d(
            k_ref[i_k * 128 + ip_seq, if_head], dtype=pe_in_dt)

    if_row = nl.arange(seqlen)[None, :]
    if_tiles = nl.arange(n_tiles)[None, :]

    for i_q in nl.affine_range(n_tiles):
        qk_res_buf = nl.ndarray((nl.par_dim(128), seqlen), dtype=kernel_dtype)
        neg_max_res = nl.ndarray((nl.par_dim(128), n_tiles), dtype=kernel_dtype)

        for i_k in nl.affine_range(n_tiles):
            qk_psum = nl.zeros((nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.psum)
            # [d_head, 128 q].T @ [d_head, 128 k] -> [128 q, 128 k]
            qk_psum[ip_seq, if_seq] += nisa.nc_matmul(moving=k_local[i_k, ip_head, if_seq],
                                                      stationary=q_local[i_q, ip_head, if_seq])
            if use_causal_mask:
                qk_res_buf[ip_seq, i_k * 128 + if_seq] = nisa.affine_select(
                    pred=(i_q * 128 + ip_seq >= i_k * 128 + if_seq),
                    on_true_tile=qk_psum[ip_seq, if_seq], on_false_value=-9984.0,
                    dtype=kernel_dtype)
            else:
                qk_res_buf[ip_seq, i_k * 128 + if_seq] = nl.copy(qk_psum[ip_seq, if_seq],
                                                                 dtype=kernel_dtype)
            neg_max_res[ip_seq, i_k] = nisa.tensor_reduce(
                np.max, data=qk_res_buf[ip_seq, i_k * 128 + if_seq], axis=(1,),
                dtype=kernel_dtype, negate=True)

        # -max over the whole row = min of the negated block maxima.
        neg_max = nisa.tensor_reduce(np.min, data=neg_max_res[ip_seq, if_tiles], axis=(1,),
                                     dtype=kernel_dtype, negate=False)

        exp_res = nisa.activation(np.exp, data=qk_res_buf[ip_seq, if_row], bias=neg_max,
                                  scale=1.0)
        sum_res = nisa.tensor_reduce(np.add, data=exp_res, axis=(1,), dtype=kernel_dtype)

        softmax_res = nl.ndarray((nl.par_dim(128), seqlen), dtype=pe_in_dt)
        softmax_res[ip_seq, if_row] = nl.copy(exp_res, dtype=pe_in_dt)

        sum_divisor = nl.ndarray((nl.par_dim(128), d_head), dtype=kernel_dtype)
        sum_divisor[ip_seq, if_head] = nl.copy((1.0 / sum_res).broadcast_to((128, d_head)),
                                               dtype=kernel_dtype)

        # Probabilities transposed block by block: [128 k, tile, 128 q].
        trans_softmax_res = nl.ndarray((nl.par_dim(128), n_tiles, 128), dtype=pe_in_dt)
        for i_k in nl.affine_range(n_tiles):
            trans_softmax_res[ip_seq, i_k, if_seq] = nisa.nc_transpose(
                softmax_res[ip_seq, i_k * 128 + if_seq])

        # [128 k, d_head].T @ [128 k, 128 q] -> [d_head, 128 q], summed over key blocks.
        attn_res_psum = nl.zeros((nl.par_dim(d_head), 128), dtype=nl.float32, buffer=nl.psum)
        for i_k in nl.affine_range(n_tiles):
            attn_res_psum[ip_head, if_seq] += nisa.nc_matmul(
                moving=trans_softmax_res[ip_seq, i_k, if_seq],
                stationary=trans_v[ip_seq, i_k, if_head])

        attn_res_sbuf = nl.copy(attn_res_psum[ip_head, if_seq], dtype=kernel_dtype)
        attn_res_div = attn_res_sbuf * nisa.nc_transpose(sum_divisor[ip_seq, if_head])

        # Tile element (d, q) goes to out[i_q*128 + q, d].
        nl.store(out_ref[i_q * 128 + if_seq, ip_head], value=attn_res_div)
    return out_ref


def reference(q, k, v, use_causal_mask=False, mixed_precision=True):
    """Softmax attention with scale 0.125, float64, cast to q's dtype."""
    qf, kf, vf = (a.astype(np.float64) for a in (q, k, v))
    s = 0.125 * qf @ kf.T
    if use_causal_mask:
        n = s.shape[0]
        s = np.where(np.tril(np.ones((n, n), dtype=bool)), s, -9984.0)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    return (p @ vf).astype(q.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = tuple(rng.random((256, 64), dtype=np.float32) for _ in range(3))
    out = nki.simulate_kernel(fused_self_attn_for_SD_small_head_size, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-5, rtol=1e-3)
    print("fused_self_attention matches NumPy")
