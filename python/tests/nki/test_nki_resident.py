"""Loop-invariant loads (docs/nki.md, "Repeated loads"): a load's data stays in SBUF for the
next load of the same data when at most `resident_bytes` per partition are loaded in between,
and that load issues no DMA; data reused from further away is loaded again, as the matmul
tutorial's tiled kernel is on trn1."""
import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.language as nl

F = 512
FLAT = {"fold_loops": False}      # one line per instruction, to count them


@nki.jit
def k_bias_rows(x, w):
    """w [128, F] is loaded inside the row loop although it does not depend on r."""
    R, _ = x.shape
    out = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(F)[None, :]
    for r in nl.affine_range(R // 128):
        wt = nl.load(w[ip, jf])
        xt = nl.load(x[128 * r + ip, jf])
        nl.store(out[128 * r + ip, jf], value=nl.add(xt, wt))
    return out


@nki.jit
def k_bias_blocks(x, w):
    """The compiler-emitted form: the invariant tile goes into a block of a block tensor."""
    R, _ = x.shape
    RT = R // 128
    out = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.shared_hbm)
    wb = nl.ndarray((RT, nl.par_dim(128), F), dtype=w.dtype, name="w_local", buffer=nl.sbuf)
    xb = nl.ndarray((RT, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ob = nl.ndarray((RT, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.arange(128)[:, None], nl.arange(F)[None, :]
    for r in nl.affine_range(RT):
        wb[r, ip, jf] = nl.load(w[ip, jf])
        xb[r, ip, jf] = nl.load(x[128 * r + ip, jf])
        ob[r, ip, jf] = nl.add(xb[r, ip, jf], wb[r, ip, jf])
        nl.store(out[128 * r + ip, jf], value=ob[r, ip, jf])
    return out


@nki.jit
def k_big_invariant(x, w):
    """w [128, K*F]: per row tile all K slices of w; between two loads of one slice, the
    other K-1 slices and one x tile are loaded (K x 2 KiB per partition)."""
    R, _ = x.shape
    K = w.shape[1] // F
    out = nl.ndarray((R, F), dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(F)[None, :]
    for r in nl.affine_range(R // 128):
        acc = nl.load(x[128 * r + ip, jf])
        for k in nl.affine_range(K):
            wt = nl.load(w[ip, F * k + jf])
            acc = nl.add(acc, wt)
        nl.store(out[128 * r + ip, jf], value=acc)
    return out


def _dmas_from(text, name):
    """Number of DMAs whose source lies in HBM tensor `name` (fp32)."""
    decl = [ln for ln in text.splitlines() if ln.startswith(f".hbm {name} ")][0]
    lo = int(decl.split("@")[1])
    size = 4 * int(np.prod([int(d) for d in decl.split("[")[1].split("]")[0].split(",")]))
    n = 0
    for ln in text.splitlines():
        ln = ln.strip()
        if not ln.startswith("dma "):
            continue
        src = ln[4:].split(", ")[1]
        if src.startswith("hbm:"):
            off = int(src.split("+")[1].split("[")[0])
            n += lo <= off < lo + size
    return n


@pytest.mark.parametrize("kern", [k_bias_rows, k_bias_blocks])
def test_invariant_load_issued_once(kern):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((1024, F), dtype=np.float32)
    w = rng.standard_normal((128, F), dtype=np.float32)
    want = x + np.tile(w, (8, 1))
    np.testing.assert_array_equal(nki.simulate_kernel(kern, x, w), want)
    assert nki.check(kern, x, w) == []
    low = nki.lower(kern, x, w, policy=FLAT)
    assert _dmas_from(low.text, "w") == 1
    assert low.spill["resident_load_bytes"] == 7 * 128 * F * 4
    never = nki.lower(kern, x, w, policy=dict(FLAT, resident_loads="never"))
    assert _dmas_from(never.text, "w") == 8 and never.spill["resident_load_bytes"] == 0
    np.testing.assert_array_equal(
        nki.simulate_kernel(kern, x, w, policy={"resident_loads": "never"}), want)

    def t(pol):
        b = nki.benchmark(kern, policy=pol)
        b(x, w)
        return b.benchmark_result.nc_latency.get_latency_percentile(50)
    assert t({}) < t({"resident_loads": "never"})


def test_invariant_data_that_does_not_fit_is_reloaded():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((512, F), dtype=np.float32)
    w = rng.standard_normal((128, 32 * F), dtype=np.float32)
    want = x.copy()
    for k in range(32):
        want = want + np.tile(w[:, F * k:F * (k + 1)], (4, 1))
    np.testing.assert_allclose(nki.simulate_kernel(k_big_invariant, x, w), want, rtol=1e-6)
    # 64 KiB per partition loaded between two loads of a slice: more than the default 45056
    low = nki.lower(k_big_invariant, x, w, policy=FLAT)
    assert _dmas_from(low.text, "w") == 4 * 32 and low.spill["resident_load_bytes"] == 0
    # with resident_bytes = 64 KiB every slice is loaded once
    big = nki.lower(k_big_invariant, x, w, policy=dict(FLAT, resident_bytes=65536))
    assert _dmas_from(big.text, "w") == 32
    np.testing.assert_allclose(
        nki.simulate_kernel(k_big_invariant, x, w, policy={"resident_bytes": 65536}), want, rtol=1e-6)
    assert nki.check(k_big_invariant, x, w, policy={"resident_bytes": 65536}) == []


def test_loaded_tile_written_over_is_not_kept():
    @nki.jit
    def k(x, w):
        out = nl.ndarray((512, F), dtype=x.dtype, buffer=nl.shared_hbm)
        for r in nl.affine_range(4):
            wt = nl.load(w)
            wt[...] = nl.multiply(wt, float(r + 1))     # the loaded tile is changed in place
            nl.store(out[128 * r:128 * (r + 1), :], value=wt)
        return out
    w = np.random.default_rng(2).standard_normal((128, F), dtype=np.float32)
    x = np.zeros((512, F), np.float32)
    got = nki.simulate_kernel(k, x, w)
    np.testing.assert_array_equal(got, np.concatenate([w * (r + 1) for r in range(4)]))
    assert _dmas_from(nki.lower(k, x, w, policy=FLAT).text, "w") == 4
