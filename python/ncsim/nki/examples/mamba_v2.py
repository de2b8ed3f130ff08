"""Fused Mamba selective scan, version 2.

Loop nest batch -> channel tile -> state: delta and u are loaded once per
channel tile and reused for every state, and the accumulator only holds one
channel tile. Same arithmetic, in the same order, as version 1.
"""
from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa
import numpy as np

from ncsim.nki.examples._mamba_ref import reference  # noqa: F401  (shared NumPy reference)


@nki.jit
def mamba_v2(delta, u, A, B, C):
    """delta, u [batch, channels, L]; A [channels, state]; B, C [batch, state, L]."""
    batch_size, channels, seq_len = delta.shape
    _, state_size = A.shape
    output = nl.ndarray((batch_size, channels, seq_len), dtype=delta.dtype,
                        buffer=nl.shared_hbm)
    channel_psize = nl.tile_size.pmax
    assert channels % channel_psize == 0
    n_channel_tile = channels // channel_psize

    for i_batch in nl.affine_range(batch_size):
        for i_channel_tile in nl.affine_range(n_channel_tile):
            c0 = i_channel_tile * channel_psize
            scanC_accum = nl.zeros((nl.par_dim(channel_psize), seq_len), dtype=delta.dtype)

            # Hoisted: the same delta and u serve every state.
            delta_i = nl.load(delta[i_batch, c0:c0 + channel_psize, 0:seq_len])
            u_i = nl.load(u[i_batch, c0:c0 + channel_psize, 0:seq_len])

            for i_state in nl.affine_range(state_size):
                A_i = nl.load(A[c0:c0 + channel_psize, i_state])
                deltaA = nisa.activation(op=nl.exp, data=delta_i, scale=A_i)

                deltaU = nisa.tensor_tensor(delta_i, u_i, op=nl.multiply)
                B_i = nl.load(B[i_batch, i_state:i_state + 1, 0:seq_len])
                deltaBu = nisa.tensor_tensor(deltaU, B_i.broadcast_to((channel_psize, seq_len)),
                                             op=nl.multiply)

                scan_res = nisa.tensor_tensor_scan(deltaA, deltaBu, initial=0,
                                                   op0=np.multiply, op1=np.add)

                C_i = nl.load(C[i_batch, i_state:i_state + 1, 0:seq_len])
                scanC = nisa.tensor_tensor(scan_res, C_i.broadcast_to((channel_psize, seq_len)),
                                           op=nl.multiply)
                scanC_accum[0:channel_psize, 0:seq_len] += scanC

            nl.store(output[i_batch, c0:c0 + channel_psize, 0:seq_len],
                     scanC_accum[0:channel_psize, 0:seq_len])
    return output


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (np.full((1, 256, 512), 0.1, np.float32), rng.standard_normal((1, 256, 512)).astype(np.float32),
            -rng.random((256, 4)).astype(np.float32), rng.standard_normal((1, 4, 512)).astype(np.float32),
            rng.standard_normal((1, 4, 512)).astype(np.float32))
    out = nki.simulate_kernel(mamba_v2, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-2, rtol=1e-2)
    print("mamba_v2 matches NumPy")
