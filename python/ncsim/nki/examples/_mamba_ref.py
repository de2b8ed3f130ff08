"""NumPy reference of the selective scan shared by the three Mamba kernels."""
import numpy as np


def reference(delta, u, A, B, C):
    """delta, u [batch, channels, L]; A [channels, state]; B, C [batch, state, L].

    h[t] = exp(delta[t] * A[c, s]) * h[t-1] + delta[t] * u[t] * B[b, s, t]
    y[b, c, t] = sum_s C[b, s, t] * h[t], with h[-1] = 0. float64, cast to delta's dtype.
    """
    d = delta.astype(np.float64)
    uu = u.astype(np.float64)
    batch, channels, L = d.shape
    state = A.shape[1]
    out = np.zeros((batch, channels, L))
    for b in range(batch):
        for s in range(state):
            dA = np.exp(d[b] * A[:, s:s + 1].astype(np.float64))
            dBu = d[b] * uu[b] * B[b, s].astype(np.float64)[None, :]
            h = np.zeros(channels)
            hs = np.empty((channels, L))
            for t in range(L):
                h = dA[:, t] * h + dBu[:, t]
                hs[:, t] = h
            out[b] += hs * C[b, s].astype(np.float64)[None, :]
    return out.astype(delta.dtype)
