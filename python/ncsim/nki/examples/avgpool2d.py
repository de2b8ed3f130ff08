"""AveragePool2D: non-overlapping pool_size x pool_size average pooling.

in_tensor [C, H, W] with the channels on partitions. A 5-D index grid
(c, h_out, i, w_out, j) reads element (c, ps*h_out + i, ps*w_out + j); the
sum over the two window axes (2 and 4) and a division by ps*ps give the
[C, H/ps, W/ps] output. One load, two Vector-engine instructions, one store.
"""
import numpy as np

from ncsim import nki
import ncsim.nki.language as nl


@nki.jit
def tensor_avgpool_kernel(in_tensor, pool_size):
    """in_tensor [C, H, W] (C <= 128) -> [C, H // pool_size, W // pool_size]."""
    sz_cin, sz_hin, sz_win = in_tensor.shape
    assert sz_cin <= nl.tile_size.pmax
    assert sz_hin % pool_size == 0 and sz_win % pool_size == 0
    sz_hout = sz_hin // pool_size
    sz_wout = sz_win // pool_size
    out_tensor = nl.ndarray((sz_cin, sz_hout, sz_wout), dtype=in_tensor.dtype,
                            buffer=nl.shared_hbm)

    i0, i1, i2, i3, i4 = nl.mgrid[0:sz_cin, 0:sz_hout, 0:pool_size, 0:sz_wout, 0:pool_size]

    in_tile = nl.load(in_tensor)
    out_tile = nl.sum(in_tile[i0, pool_size * i1 + i2, pool_size * i3 + i4],
                      axis=[2, 4]) / (pool_size * pool_size)

    nl.store(out_tensor, value=out_tile)
    return out_tensor


def reference(in_tensor, pool_size):
    c, h, w = in_tensor.shape
    ps = pool_size
    x = in_tensor.astype(np.float64).reshape(c, h // ps, ps, w // ps, ps)
    return x.mean(axis=(2, 4)).astype(in_tensor.dtype)


if __name__ == "__main__":
    # A small case through the simulator, compared with the NumPy reference.
    rng = np.random.default_rng(0)
    args = (np.arange(2 * 6 * 6, dtype=np.float16).reshape(2, 6, 6), 2)
    out = nki.simulate_kernel(tensor_avgpool_kernel, *args)
    np.testing.assert_allclose(np.asarray(out, np.float64), reference(*args).astype(np.float64), atol=0, rtol=0)
    print("avgpool2d matches NumPy")
