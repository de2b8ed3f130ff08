"""Loads issued again at their uses (docs/nki.md, "Loads issued at their uses"): a block
tensor whose blocks are loads from a kernel input and that does not fit beside the rest of the
working set is not kept; each instruction that reads it loads what it reads, and the kernel's
own loads of it are not issued. The kernels are in the compiler-emitted style (block tensors
declared at the top, indexed by loop variables); the bytes are computed by hand below."""
import os
import re

import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl
import ncsim.nki.typing as nt

import shared_kernels  # noqa: E402  (python/tests/nki: the public NKIBench kernels)

F32 = 4


@nki.jit
def k_slab_matmul(lhsT, rhs):
    """out = lhsT.T @ rhs with rhs [K, 1024] loaded whole, one [128, 1024] block per k-tile
    (KT x 4 KiB per partition), then used by every m-tile, in two halves of 512 columns."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, MT = K // 128, M // 128
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    rb = nl.ndarray((KT, nl.par_dim(128), N), dtype=rhs.dtype, name="rhs_local", buffer=nl.sbuf)
    lb = nl.ndarray((MT, KT, nl.par_dim(128), 128), dtype=lhsT.dtype, name="lhsT_local",
                    buffer=nl.sbuf)
    acc = nl.zeros((MT, 2, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum,
                   lazy_initialization=True)
    res = nl.ndarray((MT, nl.par_dim(128), N), dtype=nl.float32, buffer=nl.sbuf)
    ip = nl.arange(128)[:, None]
    jn, jm, jh = nl.arange(N)[None, :], nl.arange(128)[None, :], nl.arange(512)[None, :]
    for k in nl.affine_range(KT):
        rb[k, ip, jn] = nl.load(rhs[128 * k + ip, jn])
    for m in nl.affine_range(MT):
        for k in nl.affine_range(KT):
            lb[m, k, ip, jm] = nl.load(lhsT[128 * k + ip, 128 * m + jm])
        for h in nl.affine_range(2):
            for k in nl.affine_range(KT):
                acc[m, h, ip, jh] += nisa.nc_matmul(lb[m, k, ip, jm], rb[k, ip, 512 * h + jh])
            res[m, ip, 512 * h + jh] = nl.copy(acc[m, h, ip, jh])
        nl.store(out[128 * m + ip, jn], value=res[m, ip, jn])
    return out


def _rhs_report(low):
    return next(r for r in low.tensors if r["name"] == "rhs_local")


def _rhs_loads(text, name="rhs"):
    """The transfers whose source starts in HBM tensor `name` (views name HBM by address)."""
    lo = hi = None
    for ln in text.splitlines():
        m = re.match(r"\.hbm (\S+) (\S+) \[([0-9, ]+)\] \S+ @(\d+)", ln)
        if m and m.group(1) == name:
            lo = int(m.group(4))
            hi = lo + 4 * int(np.prod([int(d) for d in m.group(3).split(",")]))
    assert lo is not None
    out = []
    for ln in text.splitlines():
        m = re.match(r"\s*dma \S+, hbm:\w+\+(\d+)\[", ln)
        if m and lo <= int(m.group(1)) < hi:
            out.append(ln)
    return out


def test_slab_too_large_is_loaded_at_its_uses():
    # 48 k-tiles: rhs's blocks are 192 KiB per partition, more than SBUF's 176 KiB usable
    K, M, N = 48 * 128, 256, 1024
    rng = np.random.default_rng(3)
    lhsT = rng.standard_normal((K, M), dtype=np.float32)
    rhs = rng.standard_normal((K, N), dtype=np.float32)
    got = nki.simulate_kernel(k_slab_matmul, lhsT, rhs)
    want = lhsT.astype(np.float64).T @ rhs.astype(np.float64)
    np.testing.assert_allclose(got, want, rtol=2e-4, atol=2e-3)
    assert nki.check(k_slab_matmul, lhsT, rhs) == []
    low = nki.lower(k_slab_matmul, lhsT, rhs, policy={"fold_loops": False})
    r = _rhs_report(low)
    assert r["loads_at_uses"] and r["logical_bytes"] == 48 * 4096 > nki.policy.sbuf_bytes
    # every matmul loads the [128, 512] half block it reads: MT x 2 x KT loads of 256 KiB,
    # i.e. rhs once per m-tile; the kernel's own 48 loads of whole blocks are not issued
    MT, KT = M // 128, K // 128
    assert r["reissued_loads"] == MT * 2 * KT
    assert r["rematerialized_bytes"] == MT * K * N * F32 == 2 * rhs.nbytes
    assert r["spilled_bytes"] == 0 and r["reloaded_bytes"] == 0
    loads = _rhs_loads(low.text)
    assert len(loads) == MT * 2 * KT
    assert all("[1x512]" in ln for ln in loads)           # half blocks, never whole ones
    assert low.spill["rematerialized_bytes"] == 2 * rhs.nbytes
    assert low.spill["reissued_loads"] == MT * 2 * KT
    assert low.spill["spill_save_bytes"] == 0
    # two buffers of a block serve the re-issued loads, not 48
    assert r["buffers"] == 2
    # the run's statistics: HBM reads are rhs per m-tile plus lhsT once
    b = nki.benchmark(k_slab_matmul)
    b(nt.tensor[[K, M], np.float32], nt.tensor[[K, N], np.float32])
    st = b.benchmark_result.stats
    assert st["hbm"]["read_bytes"] == MT * rhs.nbytes + lhsT.nbytes
    assert st["nki"]["rematerialized_bytes"] == MT * rhs.nbytes


def test_slab_that_fits_is_kept():
    # 32 k-tiles: 128 KiB of rhs blocks beside one m-tile's 32 x 512 B of lhsT blocks and
    # its 4 KiB result fit in 176 KiB: rhs is loaded once and kept
    K, M, N = 32 * 128, 256, 1024
    low = nki.lower(k_slab_matmul, nt.tensor[[K, M], np.float32],
                    nt.tensor[[K, N], np.float32], policy={"fold_loops": False})
    r = _rhs_report(low)
    assert not r["loads_at_uses"] and r["rematerialized_bytes"] == 0
    assert r["reissued_loads"] == 0 and r["peak_live_blocks"] == 32
    assert len(_rhs_loads(low.text)) == 32                  # the kernel's loads, once each


def test_switch_keeps_the_evicting_rule():
    """reload_at_uses=False: the blocks are kept as long as SBUF holds them and only those
    evicted are reloaded, whole, before their next use (the rule before this one)."""
    K, M, N = 48 * 128, 256, 1024
    rng = np.random.default_rng(4)
    lhsT = rng.standard_normal((K, M), dtype=np.float32)
    rhs = rng.standard_normal((K, N), dtype=np.float32)
    pol = {"reload_at_uses": False}
    got = nki.simulate_kernel(k_slab_matmul, lhsT, rhs, policy=pol)
    np.testing.assert_allclose(got, lhsT.astype(np.float64).T @ rhs, rtol=2e-4, atol=2e-3)
    low = nki.lower(k_slab_matmul, lhsT, rhs, policy=dict(pol, fold_loops=False))
    r = _rhs_report(low)
    assert not r["loads_at_uses"] and r["reissued_loads"] == 0
    blk = 128 * N * F32
    # the 48 loads are issued; some blocks are evicted and come again, whole, from rhs
    q = nki.policy.spill_queue
    assert len([ln for ln in _rhs_loads(low.text) if "queue=0" in ln]) == 48
    again = [ln for ln in _rhs_loads(low.text) if f"queue={q}" in ln]
    assert 0 < len(again) and r["rematerialized_bytes"] == len(again) * blk
    assert r["peak_live_blocks"] > 40                    # most of them kept


@nki.jit
def k_whole_use(x):
    """Every block of x is loaded in one loop and read whole in a second (64 x 4 KiB)."""
    P, N = x.shape
    T = N // 1024
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.ndarray((T, nl.par_dim(128), 1024), dtype=x.dtype, name="x_local", buffer=nl.sbuf)
    ip, jf = nl.arange(128)[:, None], nl.arange(1024)[None, :]
    for t in nl.affine_range(T):
        xb[t, ip, jf] = nl.load(x[ip, 1024 * t + jf])
    for t in nl.affine_range(T):
        u = T - 1 - t
        nl.store(out[ip, 1024 * u + jf], value=nl.multiply(xb[u, ip, jf], 2.0))
    return out


def test_whole_block_uses_load_each_block_once():
    x = np.random.default_rng(5).standard_normal((128, 64 * 1024), dtype=np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k_whole_use, x), 2 * x, rtol=1e-6)
    assert nki.check(k_whole_use, x) == []
    low = nki.lower(k_whole_use, x, policy={"fold_loops": False})
    r = next(r for r in low.tensors if r["name"] == "x_local")
    # each block is used once, whole: it is loaded once, at its use
    assert r["loads_at_uses"] and r["reissued_loads"] == 64
    assert r["rematerialized_bytes"] == x.nbytes
    assert len(_rhs_loads(low.text, "x")) == 64


@nki.jit
def k_partial_reads(x):
    """Blocks [64, 2, 1024] (8 KiB per partition, 24 of them: 192 KiB) loaded whole, then read
    as [64 partitions, 1024] at partition offset 0 and 64 of the second half only."""
    R, N = x.shape                    # R = 24 * 128 rows of 2048
    T = R // 128
    out = nl.ndarray((T, 128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.ndarray((T, nl.par_dim(128), 2, 1024), dtype=x.dtype, name="x_local", buffer=nl.sbuf)
    ip = nl.arange(128)[:, None, None]
    jh, jf = nl.arange(2)[None, :, None], nl.arange(1024)[None, None, :]
    for t in nl.affine_range(T):
        xb[t, ip, jh, jf] = nl.load(x[128 * t + ip, 1024 * jh + jf])
    ih, jc = nl.arange(64)[:, None], nl.arange(1024)[None, :]
    for t in nl.affine_range(T):
        for p in nl.affine_range(2):
            y = nl.add(xb[T - 1 - t, 64 * p + ih, 1, jc], 1.0)
            nl.store(out[T - 1 - t, 64 * p + ih, jc], value=y)
    return out


def test_use_loads_only_the_partitions_and_columns_it_reads():
    R, N = 24 * 128, 2048
    x = np.random.default_rng(6).standard_normal((R, N), dtype=np.float32)
    want = x.reshape(24, 128, 2048)[:, :, 1024:] + 1
    np.testing.assert_allclose(nki.simulate_kernel(k_partial_reads, x), want, rtol=1e-6)
    assert nki.check(k_partial_reads, x) == []
    low = nki.lower(k_partial_reads, x, policy={"fold_loops": False})
    r = next(r for r in low.tensors if r["name"] == "x_local")
    assert r["loads_at_uses"] and r["reissued_loads"] == 48
    # each use: 64 partitions x 1024 columns of the second half
    assert r["rematerialized_bytes"] == 48 * 64 * 1024 * F32 == x.nbytes // 2


@nki.jit
def k_dma_copy_blocks(x):
    """k_whole_use with the blocks written by nisa.dma_copy(dst=...) instead of nl.load."""
    P, N = x.shape
    T = N // 1024
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.ndarray((T, nl.par_dim(128), 1024), dtype=x.dtype, name="x_local", buffer=nl.sbuf)
    ip, jf = nl.arange(128)[:, None], nl.arange(1024)[None, :]
    for t in nl.affine_range(T):
        nisa.dma_copy(dst=xb[t, ip, jf], src=x[ip, 1024 * t + jf])
    for t in nl.affine_range(T):
        u = T - 1 - t
        nl.store(out[ip, 1024 * u + jf], value=nl.multiply(xb[u, ip, jf], 2.0))
    return out


def test_blocks_written_by_dma_copy_are_kept_and_evicted():
    """A dma_copy's destination is a view the kernel indexes before the copy writes it, as it
    would to read it: such a tensor is not given up; its evicted blocks are reloaded whole."""
    x = np.random.default_rng(7).standard_normal((128, 64 * 1024), dtype=np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k_dma_copy_blocks, x), 2 * x, rtol=1e-6)
    low = nki.lower(k_dma_copy_blocks, x)
    r = next(r for r in low.tensors if r["name"] == "x_local")
    assert not r["loads_at_uses"] and r["reissued_loads"] == 0
    assert 0 < r["rematerialized_bytes"] < x.nbytes


def test_policy_option_is_checked():
    x = nt.tensor[[128, 1024], np.float32]
    with pytest.raises(nki.NkiError, match=r"err_invalid_policy.*reload_at_uses=1: must be True"):
        nki.lower(k_whole_use, x, policy={"reload_at_uses": 1})
    with pytest.raises(nki.NkiError, match="unknown lowering policy option 'reload_at_use'"):
        nki.lower(k_whole_use, x, policy={"reload_at_use": True})


# ---- the public NKIBench kernels, run unmodified from where they are kept (not in the
# repository): their HBM bytes against the trn1 profiles (measurements in docs/nki.md,
# "Calibration")

# name, input shapes (fp32), HBM bytes read and written on trn1 without the spill traffic
# (bmm's profile adds 33,816,576 B of spill reloads and 12,582,912 B of spill saves, which
# come from a loop transformation of the compiler's that the frontend does not make)
SHARED = [
    ("matmul_M4096_N12288_K5120_0", [(32, 128, 40, 128), (40, 128, 12288)],
     32 * 251658240 + 12 * 83886080 + 65536, 201326592),
    ("bmm_B16_M4096_K64_N4096_0", [(16, 4096, 64), (16, 64, 4096)],
     67436544 - 33816576, 1086324736 - 12582912),
    ("adamw_M10944_N2048_0", [(10944, 2048)] * 4, 358612992, 89653248),
    ("silu_M4096_N7168_0", [(128, 32, 7168)], 117440512, 117440512),
]


@pytest.mark.parametrize("name,shapes,read,write", SHARED, ids=[s[0].split("_")[0] for s in SHARED])
def test_shared_kernels_move_the_bytes_the_chip_moved(name, shapes, read, write):
    if name.startswith("matmul") and os.environ.get("NCSIM_NKI_TRACE_ORACLE"):
        # 110,000 instructions lowered twice, once without replay: minutes; the ordinary
        # run of this test covers it
        pytest.skip("too long under the trace oracle")
    mod = shared_kernels.kernel_module(name, "shared_remat_" + name)
    b = nki.benchmark(mod.kernel)
    b(*[nt.tensor[list(s), np.float32] for s in shapes])
    st = b.benchmark_result.stats
    assert (st["hbm"]["read_bytes"], st["hbm"]["write_bytes"]) == (read, write)
    assert st["nki"]["spill_save_bytes"] == 0 and st["nki"]["spill_reload_bytes"] == 0
    sunk = [r for r in st["nki"]["tensors"] if r["loads_at_uses"]]
    if name.startswith("matmul"):
        # B's blocks (rhs_local, 160 KiB per partition per n-block) are loaded at the
        # matmuls, half a block each: the whole K x 1024 slab for every (n-block, m-tile)
        assert [r["name"] for r in sunk] == ["rhs_local_49"]
        assert sunk[0]["reissued_loads"] == 12 * 32 * 2 * 40
        assert sunk[0]["rematerialized_bytes"] == 32 * 251658240
    else:
        assert sunk == [] and st["nki"]["rematerialized_bytes"] == 0
