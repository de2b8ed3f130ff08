"""Block-dimension tensors allocated like the Neuron compiler does (docs/nki.md, "Allocation"):
block dimensions are logical, each block gets a physical buffer while it is live, blocks that
do not fit are spilled to HBM (or reloaded from the kernel's inputs), PSUM blocks start their
accumulation group lazily. The kernels are written in the compiler-emitted style (tensors
declared at the top with leading block dimensions, indexed by loop variables)."""
import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

F = 1024                      # fp32 columns per block: 4 KiB per partition


def _ix(n):
    return nl.arange(128)[:, None], nl.arange(n)[None, :]


@nki.jit
def k_stream(x):
    """Each block is written and consumed within one iteration: the 2 x 256 KiB per
    partition of logical blocks need a few 4 KiB buffers."""
    P, N = x.shape
    T = N // F
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    xb = nl.ndarray((T, nl.par_dim(128), F), dtype=x.dtype, name="x_local", buffer=nl.sbuf)
    eb = nl.ndarray((T, 2, nl.par_dim(128), F // 2), dtype=x.dtype, buffer=nl.sbuf)
    yb = nl.ndarray((T, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = _ix(F)
    _, jh = _ix(F // 2)
    for t in nl.affine_range(T):
        xb[t, ip, jf] = nl.load(x[ip, F * t + jf])
        for h in nl.affine_range(2):
            eb[t, h, ip, jh] = nisa.activation(op=nl.exp, data=xb[t, ip, F // 2 * h + jh], scale=-1.0)
            yb[t, ip, F // 2 * h + jh] = nl.multiply(xb[t, ip, F // 2 * h + jh], eb[t, h, ip, jh])
        nl.store(out[ip, F * t + jf], value=yb[t, ip, jf])
    return out


@nki.jit
def k_two_phase(x, compute_first):
    """All T blocks are live between the two loops (T x 4 KiB > SBUF when T > 44). Blocks that
    hold an input's data are reloaded from the input; computed ones must be spilled."""
    P, N = x.shape
    T = N // F
    out = nl.ndarray((P, N), dtype=x.dtype, buffer=nl.shared_hbm)
    held = nl.ndarray((T, nl.par_dim(128), F), dtype=x.dtype, name="held", buffer=nl.sbuf)
    ip, jf = _ix(F)
    for t in nl.affine_range(T):
        if compute_first:
            tmp = nl.load(x[ip, F * t + jf])
            held[t, ip, jf] = nl.exp(tmp)
        else:
            held[t, ip, jf] = nl.load(x[ip, F * t + jf])
    for t in nl.affine_range(T):
        u = T - 1 - t                 # the reverse order: the last written is used first
        nl.store(out[ip, F * u + jf], value=nl.add(held[u, ip, jf], 1.0))
    return out


@nki.jit
def k_psum_blocks(lhsT, rhs):
    """[K, M] x [K, N]: one PSUM block per 512 columns of the result, accumulated over K with
    lazy_initialization (the first matmul of each block starts its group)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, NT = K // 128, N // 512
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    lb = nl.ndarray((KT, nl.par_dim(128), M), dtype=lhsT.dtype, buffer=nl.sbuf)
    rb = nl.ndarray((KT, NT, nl.par_dim(128), 512), dtype=rhs.dtype, buffer=nl.sbuf)
    acc = nl.zeros((NT, nl.par_dim(M), 512), dtype=nl.float32, buffer=nl.psum,
                   lazy_initialization=True)
    res = nl.ndarray((NT, nl.par_dim(M), 512), dtype=nl.float32, buffer=nl.sbuf)
    ip, jm = _ix(M)
    _, jn = _ix(512)
    om = nl.arange(M)[:, None]
    for k in nl.affine_range(KT):
        lb[k, ip, jm] = nl.load(lhsT[128 * k + ip, jm])
    for n in nl.affine_range(NT):
        for k in nl.affine_range(KT):
            rb[k, n, ip, jn] = nl.load(rhs[128 * k + ip, 512 * n + jn])
            acc[n, om, jn] += nisa.nc_matmul(lb[k, ip, jm], rb[k, n, ip, jn])
        res[n, om, jn] = nl.copy(acc[n, om, jn])
        nl.store(out[om, 512 * n + jn], value=res[n, om, jn])
    return out


def _report(low, name):
    tensors = low["tensors"] if isinstance(low, dict) else low.tensors
    return next(r for r in tensors if r["name"] == name)


def test_stream_blocks_larger_than_sbuf():
    x = np.random.default_rng(0).standard_normal((128, 64 * F), dtype=np.float32)
    want = x * np.exp(-x)
    np.testing.assert_allclose(nki.simulate_kernel(k_stream, x), want, rtol=1e-5, atol=1e-6)
    assert nki.check(k_stream, x) == []
    low = nki.lower(k_stream, x)
    r = _report(low, "x_local")
    assert r["logical_bytes"] == 256 * 1024 > nki.policy.sbuf_bytes
    assert r["blocks"] == 64 and r["peak_live_blocks"] == 1
    assert 1 <= r["buffers"] <= 3                # double buffering, not 64 blocks
    assert low.spill == {"spill_save_bytes": 0, "spill_reload_bytes": 0, "rematerialized_bytes": 0,
                         "reissued_loads": 0, "resident_load_bytes": 0,
                         "psum_spill_bytes": 0, "psum_reload_bytes": 0}
    assert "; block tensor x_local sbuf [64, 128, 1024] float32" in low.text


def test_stream_double_buffered_overlaps():
    """Two buffers let the load of block t+1 run under the compute of block t: faster than one."""
    x = np.zeros((128, 32 * F), np.float32)

    def t(bufs):
        b = nki.benchmark(k_stream, policy={"block_bufs": bufs})
        b(x)
        return b.benchmark_result.nc_latency.get_latency_percentile(50)
    assert t(2) < 0.9 * t(1)


def test_blocks_of_input_data_are_reloaded_not_spilled():
    x = np.random.default_rng(1).standard_normal((128, 56 * F), dtype=np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k_two_phase, x, False), x + 1, rtol=1e-6)
    assert nki.check(k_two_phase, x, False) == []
    low = nki.lower(k_two_phase, x, False)
    r = _report(low, "held")
    assert r["spilled_bytes"] == 0 and r["reloaded_bytes"] == 0
    # 56 blocks of 4 KiB, about 44 fit beside nothing else: the rest come again from x
    assert 0 < r["rematerialized_bytes"] <= 56 * 128 * F * 4
    assert low.spill["rematerialized_bytes"] == r["rematerialized_bytes"]
    # the switch: spill them instead
    low2 = nki.lower(k_two_phase, x, False, policy={"rematerialize": False})
    assert low2.spill["spill_save_bytes"] > 0 and low2.spill["rematerialized_bytes"] == 0


def test_kernel_that_must_spill():
    x = np.random.default_rng(2).uniform(-1, 1, (128, 56 * F)).astype(np.float32)
    y = nki.simulate_kernel(k_two_phase, x, True)
    np.testing.assert_allclose(y, np.exp(x) + 1, rtol=1e-5)
    assert nki.check(k_two_phase, x, True) == []
    low = nki.lower(k_two_phase, x, True, policy={"fold_loops": False})
    r = _report(low, "held")
    blk = 128 * F * 4
    assert r["spilled_bytes"] > 0 and r["spilled_bytes"] % blk == 0
    assert r["reloaded_bytes"] == r["spilled_bytes"]      # every spilled block is used again
    assert low.spill["spill_save_bytes"] == r["spilled_bytes"]
    assert low.spill["spill_reload_bytes"] == r["reloaded_bytes"]
    # the spills are on their own queue, issued by sp (qSyncSpillReload0)
    q = nki.policy.spill_queue
    spills = [ln for ln in low.text.splitlines() if f"queue={q}" in ln]
    assert len(spills) == 2 * r["spilled_bytes"] // blk
    # the run's statistics carry them
    b = nki.benchmark(k_two_phase)
    b(x, True)
    st = b.benchmark_result.stats["nki"]
    assert st["spill_save_bytes"] == r["spilled_bytes"] and st["spill_reload_bytes"] > 0
    assert _report(st, "held")["spilled_bytes"] == r["spilled_bytes"]
    # fewer blocks than SBUF holds: nothing is spilled
    x2 = x[:, :40 * F].copy()
    assert nki.lower(k_two_phase, x2, True).spill["spill_save_bytes"] == 0


def test_psum_blocks_lazy_initialization():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((512, 128), dtype=np.float32)
    b = rng.standard_normal((512, 2048), dtype=np.float32)
    got = nki.simulate_kernel(k_psum_blocks, a, b)
    np.testing.assert_allclose(got, a.T.astype(np.float64) @ b, rtol=2e-4, atol=2e-3)
    assert nki.check(k_psum_blocks, a, b) == []
    low = nki.lower(k_psum_blocks, a, b)
    ps = [r for r in low.tensors if r["space"] == "psum"][0]
    assert ps["buffer_bytes"] == 2048 and ps["buffers"] <= 2
    assert "memset" not in low.text              # the zeros are the groups' first matmuls


def test_view_across_blocks_is_an_error():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 2 * F), dtype=x.dtype, buffer=nl.shared_hbm)
        b = nl.ndarray((2, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
        b[0, :, :] = nl.load(x[:, 0:F])
        b[1, :, :] = nl.load(x[:, F:2 * F])
        i_b, i_p, i_f = nl.arange(2)[None, :, None], nl.arange(128)[:, None, None], \
            nl.arange(F)[None, None, :]
        nl.store(out[i_p, F * i_b + i_f], value=b[i_b, i_p, i_f])
        return out
    with pytest.raises(nki.NkiError, match=r"test_nki_blocks.py:\d+: error: "
                       r"\[err_unsupported_block_access\] this view of 'tensor' \(2, 128, 1024\) spans"):
        nki.lower(k, np.zeros((128, 2 * F), np.float32))


def test_block_too_large_errors():
    @nki.jit
    def k_psum(x):
        out = nl.ndarray((128, 1024), dtype=x.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((2, nl.par_dim(128), 1024), dtype=nl.float32, buffer=nl.psum)
        nl.store(out, value=acc[0])
        return out
    with pytest.raises(nki.NkiError, match=r"test_nki_blocks.py:\d+: error: \[err_psum_tensor_too_large\] "
                       r"a PSUM block of 4096 bytes per partition"):
        nki.lower(k_psum, np.zeros((128, 1024), np.float32))

    @nki.jit
    def k_sbuf(x):
        out = nl.ndarray((128, 8), dtype=x.dtype, buffer=nl.shared_hbm)
        big = nl.ndarray((2, nl.par_dim(128), 50000), dtype=nl.float32, buffer=nl.sbuf)
        nl.store(out, value=big[0, :, 0:8])
        return out
    with pytest.raises(nki.NkiError, match=r"test_nki_blocks.py:\d+: error: \[err_out_of_memory\] "
                       r"an SBUF block of 200000 bytes per partition"):
        nki.lower(k_sbuf, np.zeros((128, 8), np.float32))


def test_psum_shortage_is_a_located_error():
    """Nine PSUM blocks live at once (each accumulates until the end): PSUM has 8 banks; with
    psum_spill=False it is not spilled (test_nki_psum_spill.py: spilled by default)."""
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 9 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
        acc = nl.zeros((9, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum)
        lt = nl.load(a)
        rt = nl.load(b)
        for n in nl.affine_range(9):
            acc[n] += nl.matmul(lt, rt, transpose_x=True)
        for n in nl.affine_range(9):
            nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(acc[n]))
        return out
    with pytest.raises(nki.NkiError, match=r"test_nki_blocks.py:\d+: error: \[err_out_of_memory\] "
                       r"PSUM \(8 banks of 2 KiB per partition\) is full.*PSUM is not spilled "
                       r"\(psum_spill=False\)"):
        nki.lower(k, np.zeros((128, 128), np.float32), np.zeros((128, 512), np.float32),
                  policy={"psum_spill": False})


def test_report_lists_tile_sites():
    @nki.jit
    def k(x):
        out = nl.ndarray((512, F), dtype=x.dtype, buffer=nl.shared_hbm)
        for r in nl.affine_range(4):
            t = nl.load(x[128 * r:128 * (r + 1), :])
            nl.store(out[128 * r:128 * (r + 1), :], value=nl.exp(t))
        return out
    low = nki.lower(k, np.zeros((512, F), np.float32))
    sites = [r for r in low.tensors if r["blocks"] == 0]
    assert len(sites) == 2 and all(r["space"] == "sbuf" for r in sites)
    assert all(r["logical_bytes"] == F * 4 and r["buffers"] == 2 for r in sites)
    assert sorted(r["line"] for r in sites)[0] > 0


def test_other_sites_free_buffer_released_longest_ago():
    """When a site must borrow a free buffer of another site, it takes the smallest that fits
    and, among those, the one released longest ago (its readers are the most likely done)."""
    from ncsim.nki import _core as C
    tr = C.Tracer(nki.policy.copy(), "k.py")
    sizes_freed = [(2048, 9), (2048, 3), (4096, 1), (2048, 5)]
    for i, (size, freed) in enumerate(sizes_freed):
        sl = C.Slot(i, "sbuf", i * 4096, size, None)
        sl.freed = freed
        tr.slots.append(sl)
    assert tr._other_free("sbuf", 2048).id == 1     # not slot 0, first in order but freed at 9
    assert tr._other_free("sbuf", 3000).id == 2     # the only one large enough
    tr.slots[1].owner = object()                   # in use: the next oldest of the size
    assert tr._other_free("sbuf", 2048).id == 3
    assert tr._other_free("psum", 2048) is None



@pytest.mark.parametrize("oracle", [False, True])
def test_in_place_update_as_a_block_s_last_use(monkeypatch, oracle):
    """`blk[i] += t` (and `*=`) as the block's last use: the block is released when the
    in-place instruction ends, and the write-back Python makes after it (`blk[i] = view`)
    must not allocate the block again (it used to fail with an AttributeError inside the
    tracer, on the optimised and the reference paths alike). The blocks read later (0 and 1)
    hold the updated values; the dead ones are updated and dropped."""
    if oracle:
        monkeypatch.setenv("NCSIM_NKI_TRACE_ORACLE", "1")

    @nki.jit
    def k(a, b):
        out = nl.ndarray((2, 128, 512), dtype=a.dtype, buffer=nl.shared_hbm)
        acc = nl.zeros((4, nl.par_dim(128), 512), dtype=a.dtype, buffer=nl.sbuf)
        sq = nl.ndarray((4, nl.par_dim(128), 512), dtype=a.dtype, buffer=nl.sbuf)
        for i in nl.affine_range(4):
            sq[i] = nl.load(a[i])
        t = nl.load(b)
        for i in nl.affine_range(4):
            acc[i] += t               # the last use of acc[2], acc[3]
            sq[i] *= 2.0              # the last use of sq[2], sq[3]
        for j in nl.affine_range(2):
            nl.store(out[j], value=nl.add(acc[j], sq[j]))
        return out

    rng = np.random.default_rng(5)
    a = rng.random((4, 128, 512), dtype=np.float32)
    b = rng.random((128, 512), dtype=np.float32)
    got = nki.simulate_kernel(k, a, b)
    want = b[None] + 2.0 * a[:2]
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-6)
