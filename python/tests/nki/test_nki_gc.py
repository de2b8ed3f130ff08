"""The cycle collector is paused while a kernel is lowered (docs/nki.md, "Speed"),
so that no allocation decision can depend on when it runs (a tile kept alive by a reference
cycle is released at the end of the lowering), and it is restored afterwards."""
import gc

import numpy as np

from ncsim import nki
import ncsim.nki.language as nl

SEEN = []


@nki.jit
def k_cycle(x):
    """Each iteration's tile is kept alive by a list that contains itself."""
    SEEN.append(gc.isenabled())
    P, N = x.shape
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    for t in range(N // 128):
        a = nl.load(x[:, t * 128:(t + 1) * 128])
        box = [a]
        box.append(box)            # a reference cycle holding the tile
        nl.store(out[:, t * 128:(t + 1) * 128], value=nl.multiply(a, 3.0))
        del box, a
    return out


def test_collector_paused_while_tracing_and_restored():
    SEEN.clear()
    assert gc.isenabled()
    nki.lower(k_cycle, np.zeros((128, 256), np.float32))
    assert SEEN and not any(SEEN)      # (twice under NCSIM_NKI_TRACE_ORACLE)
    assert gc.isenabled()


def test_results_with_cyclic_tiles():
    x = np.arange(128 * 512, dtype=np.float32).reshape(128, 512)
    np.testing.assert_array_equal(nki.simulate_kernel(k_cycle, x), 3.0 * x)
