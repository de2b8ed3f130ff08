"""PSUM spills (docs/nki.md, "Spills and reloads"): when a PSUM block needs a bank and none is
free, the PSUM block whose next access is furthest away is copied to an SBUF buffer and copied
back before its next access; an accumulation group that continues goes back by a matmul against
an identity, so later matmuls keep accumulating onto it and the results are those of the kernel
without spills, bit for bit."""
import numpy as np
import pytest

import ncsim
from ncsim import nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl


@nki.jit
def k_k_outer(lhsT, rhs):
    """K outermost (as a generator may emit it): one accumulation group per 512-column output
    tile, all NT of them live through the whole K loop (NT x 2 KiB per partition of PSUM)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, NT = K // 128, N // 512
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((NT, nl.par_dim(M), 512), dtype=nl.float32, buffer=nl.psum, name="acc")
    for k in nl.affine_range(KT):
        lt = nl.load(lhsT[128 * k:128 * (k + 1), :])
        for n in nl.affine_range(NT):
            rt = nl.load(rhs[128 * k:128 * (k + 1), 512 * n:512 * (n + 1)])
            acc[n] += nisa.nc_matmul(lt, rt)
    for n in nl.affine_range(NT):
        nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(acc[n]))
    return out


@nki.jit
def k_n_outer(lhsT, rhs):
    """The same sums in the same order per output tile, one group live at a time (no spill)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, NT = K // 128, N // 512
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    for n in nl.affine_range(NT):
        acc = nl.zeros((M, 512), dtype=nl.float32, buffer=nl.psum)
        for k in nl.affine_range(KT):
            lt = nl.load(lhsT[128 * k:128 * (k + 1), :])
            rt = nl.load(rhs[128 * k:128 * (k + 1), 512 * n:512 * (n + 1)])
            acc += nisa.nc_matmul(lt, rt)
        nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(acc))
    return out


def _args(K, M, NT, seed=0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((K, M), dtype=np.float32),
            rng.standard_normal((K, 512 * NT), dtype=np.float32))


def _by_engine(low):
    """engine -> its instructions (the program assembled, loops unrolled)."""
    out, eng = {}, None
    for ln in ncsim.assemble(low.text).disassemble().splitlines():
        if ln.startswith(".engine "):
            eng = ln.split()[1]
        elif ln.startswith(" ") and eng is not None:
            out.setdefault(eng, []).append(ln.strip())
    return out


def _psum_to_sbuf(ins):
    return [x for x in ins if x.startswith("tensor_copy sb:") and " ps:" in x]


def _acc(low):
    tensors = low["tensors"] if isinstance(low, dict) else low.tensors
    return next(r for r in tensors if r["name"] == "acc")


def test_sixteen_live_accumulators_spill_and_match_the_unspilled_kernel():
    a, b = _args(512, 128, 16)
    got = nki.simulate_kernel(k_k_outer, a, b)
    np.testing.assert_allclose(got, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    # the same additions in the same order as the kernel that needs no spill: bit for bit
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_n_outer, a, b))
    assert nki.check(k_k_outer, a, b) == []
    low = nki.lower(k_k_outer, a, b)
    r = _acc(low)
    assert r["logical_bytes"] == 16 * 2048 > 8 * 2048          # larger than PSUM
    assert r["buffers"] <= 8 and r["peak_live_blocks"] <= 8
    blk = 128 * 2048
    assert r["spilled_bytes"] > 0 and r["spilled_bytes"] % blk == 0
    # every spilled group is used again: reloaded once per spill
    assert r["reloaded_bytes"] == r["spilled_bytes"]
    assert low.spill["psum_spill_bytes"] == r["spilled_bytes"]
    assert low.spill["psum_reload_bytes"] == r["reloaded_bytes"]
    # PSUM spills go to SBUF, not HBM: the SBUF<->HBM fields stay 0 here
    assert low.spill["spill_save_bytes"] == 0 and low.spill["spill_reload_bytes"] == 0
    save = next(x for x in low.tensors if x["name"] == "psum_spill_acc")
    assert save["space"] == "sbuf" and save["peak_live_blocks"] <= 16
    nspill = r["spilled_bytes"] // blk
    eng = _by_engine(low)
    # the spills: PSUM -> SBUF copies on the Vector engine (psum_spill_engine; the kernel's own
    # copies out of PSUM are on the Scalar engine)
    assert len(_psum_to_sbuf(eng["dve"])) == nspill
    # the reloads: matmuls without acc whose weights are the [128, 128] fp32 identity, one per
    # spill (every block spilled is accumulated into again)
    ident = low.text.splitlines()
    assert any(ln.startswith(".hbm const fp32 [128, 128] input") for ln in ident)
    mm = [x for x in eng["pe"] if x.startswith("matmul")]
    assert len([x for x in mm if ", acc" not in x]) == 16 + nspill
    # the same kernel with 8 output tiles fits: nothing spilled, no identity
    a8, b8 = _args(512, 128, 8)
    low8 = nki.lower(k_k_outer, a8, b8)
    assert low8.spill["psum_spill_bytes"] == 0 and ".hbm const" not in low8.text


def test_statistics_of_a_run_and_the_engine_switch():
    a, b = _args(256, 128, 12, seed=1)
    want = a.T.astype(np.float64) @ b
    bench = nki.benchmark(k_k_outer)
    bench(a, b)
    st = bench.benchmark_result.stats["nki"]
    assert st["psum_spill_bytes"] > 0 and st["psum_reload_bytes"] == st["psum_spill_bytes"]
    assert _acc(st)["spilled_bytes"] == st["psum_spill_bytes"]
    got = nki.simulate_kernel(k_k_outer, a, b)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    # the copies to SBUF on the Scalar engine instead
    low = nki.lower(k_k_outer, a, b, policy={"psum_spill_engine": "act"})
    eng = _by_engine(low)
    assert not _psum_to_sbuf(eng.get("dve", []))
    assert len(_psum_to_sbuf(eng["act"])) == 12 + st["psum_spill_bytes"] // (128 * 2048)
    got_act = nki.simulate_kernel(k_k_outer, a, b, policy={"psum_spill_engine": "act"})
    np.testing.assert_array_equal(got_act, got)
    assert nki.check(k_k_outer, a, b, policy={"psum_spill_engine": "act"}) == []
    with pytest.raises(nki.NkiError,
                       match=r"err_invalid_policy.*psum_spill_engine='pool': must be dve or act"):
        nki.lower(k_k_outer, a, b, policy={"psum_spill_engine": "pool"})
    # the switch off: the refusal of before
    with pytest.raises(nki.NkiError, match=r"test_nki_psum_spill.py:\d+: error: \[err_out_of_memory\] "
                       r"PSUM \(8 banks of 2 KiB per partition\) is full.*psum_spill=False"):
        nki.lower(k_k_outer, a, b, policy={"psum_spill": False})


@nki.jit
def k_transposes(x):
    """T fp16 transposes on the Tensor engine into a PSUM block tensor, all live at once, then
    copied out in reverse order: data written by pe, not an accumulation group (reloaded by a
    copy)."""
    T = x.shape[1] // 128
    out = nl.ndarray((128, 128 * T), dtype=x.dtype, buffer=nl.shared_hbm)
    tp = nl.ndarray((T, nl.par_dim(128), 128), dtype=x.dtype, buffer=nl.psum, name="tp")
    for t in nl.affine_range(T):
        xt = nl.load(x[:, 128 * t:128 * (t + 1)])
        tp[t] = nisa.nc_transpose(xt)
    for t in nl.affine_range(T):
        u = T - 1 - t
        nl.store(out[:, 128 * u:128 * (u + 1)], value=nl.copy(tp[u]))
    return out


def test_spilled_non_accumulated_psum_blocks_are_copied_back():
    x = np.random.default_rng(2).standard_normal((128, 128 * 12)).astype(np.float16)
    got = nki.simulate_kernel(k_transposes, x)
    want = np.concatenate([x[:, 128 * t:128 * (t + 1)].T for t in range(12)], axis=1)
    np.testing.assert_array_equal(got, want)
    assert nki.check(k_transposes, x) == []
    low = nki.lower(k_transposes, x)
    r = next(x_ for x_ in low.tensors if x_["name"] == "tp")
    assert r["spilled_bytes"] > 0 and r["reloaded_bytes"] == r["spilled_bytes"]
    # fp16 PSUM data goes back by a copy (a matmul writes fp32 only): no identity
    assert ".hbm const" not in low.text


def test_psum_tiles_without_block_dimensions_are_spilled_too():
    """Nine accumulators as separate tiles that all stay live: refused (err_out_of_memory)
    until plain tiles were spilled as well (test_nki_psum_tile_spill.py has the rest)."""
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 9 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
        lt = nl.load(a)
        rt = nl.load(b)
        accs = []
        for n in range(9):
            t = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            t += nisa.nc_matmul(lt, rt)
            accs.append(t)
        for n in range(9):
            nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(accs[n]))
        return out
    rng = np.random.default_rng(7)
    a = rng.standard_normal((128, 128), dtype=np.float32)
    b = rng.standard_normal((128, 512), dtype=np.float32)
    got = nki.simulate_kernel(k, a, b)
    one = (a.T.astype(np.float64) @ b).astype(np.float32)
    np.testing.assert_allclose(got, np.tile(one, (1, 9)), rtol=1e-5, atol=1e-4)
    # every tile holds the same sums: bit for bit the first one's
    for n in range(1, 9):
        np.testing.assert_array_equal(got[:, 512 * n:512 * (n + 1)], got[:, :512])
    low = nki.lower(k, a, b)
    # the ninth tile shares the bank of the tile used last (the eighth), which is copied out;
    # at the stores the two swap once more (a tile keeps its bank: its views name it)
    assert low.spill["psum_spill_bytes"] == low.spill["psum_reload_bytes"] == 2 * 128 * 2048
    assert nki.check(k, a, b) == []


def test_psum_copies_spill_on_to_hbm_when_sbuf_is_short():
    """SBUF narrowed: the SBUF buffers holding spilled PSUM blocks are evicted to HBM in turn
    (ordinary spills on the spill queue), and the sums are still those of the kernel without
    spills."""
    a, b = _args(512, 128, 16, seed=3)
    pol = {"sbuf_bytes": 12288}
    got = nki.simulate_kernel(k_k_outer, a, b, policy=pol)
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_n_outer, a, b))
    assert nki.check(k_k_outer, a, b, policy=pol) == []
    low = nki.lower(k_k_outer, a, b, policy=pol)
    save = next(x for x in low.tensors if x["name"] == "psum_spill_acc")
    assert save["spilled_bytes"] > 0 and save["reloaded_bytes"] == save["spilled_bytes"]
    assert low.spill["spill_save_bytes"] == save["spilled_bytes"]
    assert low.spill["psum_spill_bytes"] == _acc(low)["spilled_bytes"] > 0
    assert "spill_psum_spill_acc" in low.text
