"""Fused Mamba selective scan, version 3.

Version 2 with the sequence cut into 512-element tiles: every intermediate
is [128, 512] instead of [128, L], so long sequences fit in SBUF without
spilling. The scan carries its last column from one sequence tile to the
next (`initial=scan_init`). The sequence loop is a static_range (unrolled
at trace time), as the loop carries the scan state.
"""
from ncsim import nki
import ncsim.nki.language as nl
import ncsim.nki.isa as nisa
import numpy as np

from ncsim.nki.examples._mamba_ref import reference  # noqa: F401  (shared NumPy reference)


@nki.jit
def mamba_v3(delta, u, A, B, C):
    """delta, u [batch, channels, L]; A [channels, state]; B, C [batch, state, L]; L % 512 == 0."""
    batch_size, channels, seq_len = delta.shape
    _, state_size = A.shape
    output = nl.ndarray((batch_size, channels, seq_len), dtype=delta.dtype,
                        buffer=nl.shared_hbm)
    channel_psize = nl.tile_size.pmax
    assert channels % channel_psize == 0
    n_channel_tile = channels // channel_psize
    seq_len_fsize = 512
    assert seq_len % seq_len_fsize == 0
    n_seq_len_tile = seq_len // seq_len_fsize

    for i_batch in nl.affine_range(batch_size):
        for i_channel_tile in nl.affine_range(n_channel_tile):
            c0 = i_channel_tile * channel_psize
            scanC_accum = nl.zeros((nl.par_dim(channel_psize), seq_len), dtype=delta.dtype)

            delta_i = nl.load(delta[i_batch, c0:c0 + channel_psize, 0:seq_len])
            u_i = nl.load(u[i_batch, c0:c0 + channel_psize, 0:seq_len])

            for i_state in nl.affine_range(state_size):
                A_i = nl.load(A[c0:c0 + channel_psize, i_state])
                # Scan state carried across the sequence tiles of this state.
                scan_init = nl.zeros((channel_psize, 1), dtype=delta_i.dtype)

                for i_seq_len_tile in nl.static_range(n_seq_len_tile):
                    t0 = i_seq_len_tile * seq_len_fsize
                    t1 = t0 + seq_len_fsize

                    deltaA = nisa.activation(op=nl.exp, data=delta_i[0:channel_psize, t0:t1],
                                             scale=A_i)
                    deltaU = nisa.tensor_tensor(delta_i[0:channel_psize, t0:t1],
                                                u_i[0:channel_psize, t0:t1], op=nl.multiply)
                    B_i = nl.load(B[i_batch, i_state:i_state + 1, t0:t1])
                    deltaBu = nisa.tensor_tensor(
                        deltaU, B_i.broadcast_to((channel_psize, seq_len_fsize)), op=nl.multiply)

                    scan_res = nisa.tensor_tensor_scan(deltaA, deltaBu, initial=scan_init,
                                                       op0=np.multiply, op1=np.add)
                    scan_init[...] = scan_res[0:channel_psize, seq_len_fsize - 1]

                    C_i = nl.load(C[i_batch, i_state:i_state + 1, t0:t1])
                    scanC = nisa.tensor_tensor(
                        scan_res, C_i.broadcast_to((channel_psize, seq_len_fsize)), op=nl.multiply)
                    scanC_accum[0:channel_psize, t0:t1] += scanC

            nl.store(output[i_batch, c0:c0 + channel_psize, 0:seq_len],
                     scanC_accum[0:channel_psize, 0:seq_len])
    return output


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (np.full((1, 256, 1024), 0.1, np.float32), rng.standard_normal((1, 256, 1024)).astype(np.float32),
            -rng.random((256, 4)).astype(np.float32), rng.standard_normal((1, 4, 1024)).astype(np.float32),
            rng.standard_normal((1, 4, 1024)).astype(np.float32))
    out = nki.simulate_kernel(mamba_v3, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=1e-2, rtol=1e-2)
    print("mamba_v3 matches NumPy")
