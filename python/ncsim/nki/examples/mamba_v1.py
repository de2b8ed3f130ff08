"""Fused Mamba selective scan, version 1.

Loop nest batch -> state -> channel tile. For every (state, channel tile) the
kernel loads delta and u again (full sequence), computes exp(delta * A) on
the Scalar engine, delta * u * B on the Vector engine, runs the linear
recurrence with one tensor_tensor_scan, multiplies by C and adds into an
SBUF accumulator that holds every channel tile of the batch. Straightforward
but it reloads delta and u once per state.
"""
from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa
import numpy as np

from ncsim.nki.examples._mamba_ref import reference  # noqa: F401  (shared NumPy reference)


@nki.jit
def mamba_v1(delta, u, A, B, C):
    """delta, u [batch, channels, L]; A [channels, state]; B, C [batch, state, L]."""
    batch_size, channels, seq_len = delta.shape
    _, state_size = A.shape
    output = nl.ndarray((batch_size, channels, seq_len), dtype=delta.dtype,
                        buffer=nl.shared_hbm)
    channel_psize = nl.tile_size.pmax
    assert channels % channel_psize == 0
    n_channel_tile = channels // channel_psize

    for i_batch in nl.affine_range(batch_size):
        scanC_accum = nl.zeros((n_channel_tile, nl.par_dim(channel_psize), seq_len),
                               dtype=delta.dtype)

        for i_state in nl.affine_range(state_size):
            for i_channel_tile in nl.affine_range(n_channel_tile):
                c0 = i_channel_tile * channel_psize

                # Steps 1-2: exp(delta * A) with A as a per-partition scale.
                delta_i = nl.load(delta[i_batch, c0:c0 + channel_psize, 0:seq_len])
                A_i = nl.load(A[c0:c0 + channel_psize, i_state])
                deltaA = nisa.activation(op=nl.exp, data=delta_i, scale=A_i)

                # Step 3: delta * u * B, B broadcast over the channels.
                u_i = nl.load(u[i_batch, c0:c0 + channel_psize, 0:seq_len])
                deltaU = nisa.tensor_tensor(delta_i, u_i, op=nl.multiply)
                B_i = nl.load(B[i_batch, i_state:i_state + 1, 0:seq_len])
                deltaBu = nisa.tensor_tensor(deltaU, B_i.broadcast_to((channel_psize, seq_len)),
                                             op=nl.multiply)

                # Step 4: h[t] = deltaA[t] * h[t-1] + deltaBu[t].
                scan_res = nisa.tensor_tensor_scan(deltaA, deltaBu, initial=0,
                                                   op0=np.multiply, op1=np.add)

                # Steps 5-6: times C, summed over the states.
                C_i = nl.load(C[i_batch, i_state:i_state + 1, 0:seq_len])
                scanC = nisa.tensor_tensor(scan_res, C_i.broadcast_to((channel_psize, seq_len)),
                                           op=nl.multiply)
                scanC_accum[i_channel_tile, 0:channel_psize, 0:seq_len] += scanC

        for i_channel_tile in nl.affine_range(n_channel_tile):
            c0 = i_channel_tile * channel_psize
            nl.store(output[i_batch, c0:c0 + channel_psize, 0:seq_len],
                     scanC_accum[i_channel_tile, 0:channel_psize, 0:seq_len])
    return output


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (np.full((1, 256, 512), 0.1, np.float32), rng.standard_normal((1, 256, 512)).astype(np.float32),
            -rng.random((256, 4)).astype(np.float32), rng.standard_normal((1, 4, 512)).astype(np.float32),
            rng.standard_normal((1, 4, 512)).astype(np.float32))
    out = nki.simulate_kernel(mamba_v1, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-2, rtol=1e-2)
    print("mamba_v1 matches NumPy")
