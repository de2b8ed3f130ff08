"""Direct allocation (`neuronxcc.nki.compiler`, issue 24): tensors placed with ncc.sbuf/psum.alloc
and mod_alloc occupy the partitions and bytes their rule gives, so rings serialise as deep as
they are, tensors placed on the same bytes clobber each other as on the chip, and the compiler's
rules are refused with located errors (docs/nki.md, "Direct allocation")."""
import inspect
import re

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.compiler as ncc
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

RNG = np.random.default_rng(24)
NT, C = 8, 512


def _line(func, marker):
    """The line number of the kernel line holding `# <marker>`."""
    lines, first = inspect.getsourcelines(func)
    for i, s in enumerate(lines):
        if s.rstrip().endswith("# " + marker):
            return first + i
    raise AssertionError(marker)


def _raises(kernel, args, code, needle, marker):
    """The kernel is refused with [code], a message containing needle, at the marked line of
    this file."""
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(kernel, *args)
    msg = str(e.value)
    assert f"[{code}]" in msg, msg
    assert needle in msg, msg
    where = f"{__file__}:{_line(kernel.func, marker)}:"
    assert msg.startswith(where), (msg, where)
    return msg


# --------------------------------------------------------------------------- rings

def ring_exp(depth):
    """y = exp(x) over NT tiles through two rings of `depth` tiles: load -> act -> store."""
    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        FB = C * 4
        xin = nl.ndarray((NT, nl.par_dim(128), C), nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(depth,)))
        y = nl.ndarray((NT, nl.par_dim(128), C), nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=depth * FB, num_free_tiles=(depth,)))
        for i in nl.affine_range(NT):
            xin[i] = nl.load(x[i * 128:(i + 1) * 128, :])
            y[i] = nl.exp(xin[i])
            nl.store(out[i * 128:(i + 1) * 128, :], value=y[i])
        return out
    return k


X = RNG.normal(size=(NT * 128, C)).astype(np.float32)


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_ring_values(depth):
    y = nki.simulate_kernel(ring_exp(depth), X)
    np.testing.assert_allclose(y, np.exp(X), rtol=2e-6)
    assert nki.check(ring_exp(depth), X) == []


def _unrolled(k, *args):
    return nki.lower(k, *args, policy={"fold_loops": False}).text


def _engine_lines(text, eng):
    out, cur = [], None
    for s in text.splitlines():
        s = s.strip()
        if s.startswith(".engine"):
            cur = s.split()[1]
        elif cur == eng and s and not s.startswith("."):
            out.append(s)
    return out


@pytest.mark.parametrize("depth", [1, 2, 3])
def test_ring_addresses_and_dependences(depth):
    """Tile i is at byte (i mod depth) * 2048; the load of tile i waits for the exp that read
    tile i - depth (and for nothing when i < depth): a k-deep ring serialises i + k behind i."""
    text = _unrolled(ring_exp(depth), X)
    loads = [s for s in _engine_lines(text, "sp") if s.startswith("dma ")]
    acts = [s for s in _engine_lines(text, "act") if s.startswith("activate ")]
    assert len(loads) == NT and len(acts) == NT
    for i, s in enumerate(loads):
        assert s.startswith(f"dma sb:fp32@0:128+{(i % depth) * C * 4}[1x{C}]"), s
        waits = re.findall(r"wait s_act >= (\d+)", s)
        if i < depth:
            assert waits == [], s
        else:
            assert waits == [str(i - depth + 1)], s     # the (i - depth)-th exp, counting from 1
    for i, s in enumerate(acts):
        assert f"sb:fp32@0:128+{depth * C * 4 + (i % depth) * C * 4}[1x{C}]" in s.split(",")[0]


def test_ring_time_falls_then_stops():
    """Deterministic simulated times: one buffer serialises load, exp and store; two overlap
    them; a third adds little (the bound, the loads' queue, is reached)."""
    t = {}
    for d in (1, 2, 3):
        b = nki.benchmark(warmup=1, iters=1)(ring_exp(d))
        b(X)
        t[d] = b.benchmark_result.nc_latency.get_latency_percentile(50)
    assert t[2] < 0.75 * t[1], t
    assert t[3] > 0.9 * t[2], t


def test_alloc_function_places_each_tile():
    """ncc.sbuf.alloc(func): func(idx, pdim_size, fdim_bytes) -> (start partition, byte), per
    logical tile: 32-partition tiles spread over the four quadrants, two per byte offset."""
    calls = []

    def place(idx, pdim, fbytes):
        calls.append((idx, pdim, fbytes))
        (i,) = idx
        return 32 * (i % 4), 4096 + (i // 4) * fbytes

    @nki.jit
    def k(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((8, nl.par_dim(32), 64), nl.float32, buffer=ncc.sbuf.alloc(place))
        r = nl.ndarray((8, nl.par_dim(32), 64), nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        for i in nl.affine_range(8):
            t[i] = nl.load(x[i * 32:(i + 1) * 32, :])
        for i in nl.affine_range(8):
            r[i] = nl.multiply(t[i], 2.0)
            nl.store(out[i * 32:(i + 1) * 32, :], value=r[i])
        return out
    x = RNG.normal(size=(256, 64)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), 2 * x)
    assert [c[0] for c in calls[:8]] == [(i,) for i in range(8)]
    assert calls[0][1:] == (32, 256)
    text = _unrolled(k, x)
    loads = [s for s in _engine_lines(text, "sp") if s.startswith("dma ")]
    for i, s in enumerate(loads):
        p0 = 32 * (i % 4)
        assert s.startswith(f"dma sb:fp32@{p0}:{p0 + 32}+{4096 + (i // 4) * 256}["), s
    assert nki.check(k, x) == []


def test_psum_mod_alloc_accumulation():
    """C = A^T B with K = 512 accumulated in PSUM, output columns in a ring of two banks."""
    K, M, N = 512, 128, 1024
    KT, NB = K // 128, N // 512

    @nki.jit
    def k(a, b):
        out = nl.ndarray((M, N), nl.float32, buffer=nl.shared_hbm)
        at = nl.ndarray((KT, nl.par_dim(128), M), nl.float32,
                        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(KT,)))
        bt = nl.ndarray((KT, nl.par_dim(128), 512), nl.float32,
                        buffer=ncc.sbuf.mod_alloc(base_addr=KT * M * 4, num_free_tiles=(KT,)))
        ps = nl.ndarray((NB, nl.par_dim(M), 512), nl.float32,
                        buffer=ncc.psum.mod_alloc(base_bank=3, num_bank_tiles=(2,)))
        res = nl.ndarray((NB, nl.par_dim(M), 512), nl.float32,
                         buffer=ncc.sbuf.mod_alloc(base_addr=KT * (M + 512) * 4,
                                                   num_free_tiles=(2,)))
        for kt in nl.affine_range(KT):
            at[kt] = nl.load(a[kt * 128:(kt + 1) * 128, :])
        for n in nl.affine_range(NB):
            for kt in nl.affine_range(KT):
                bt[kt] = nl.load(b[kt * 128:(kt + 1) * 128, n * 512:(n + 1) * 512])
            for kt in nl.affine_range(KT):
                ps[n] += nisa.nc_matmul(at[kt], bt[kt])
            res[n] = nl.copy(ps[n])
            nl.store(out[:, n * 512:(n + 1) * 512], value=res[n])
        return out
    a = RNG.normal(size=(K, M)).astype(np.float32)
    b = RNG.normal(size=(K, N)).astype(np.float32)
    y = nki.simulate_kernel(k, a, b)
    np.testing.assert_allclose(y, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    text = nki.lower(k, a, b).text
    assert "matmul ps:fp32@0:128+6144[" in text and "matmul ps:fp32@0:128+8192[" in text
    assert nki.check(k, a, b) == []


# --------------------------------------------------------------------------- shared bytes

def test_tensors_on_the_same_bytes_clobber():
    """b is placed 256 bytes into a (half of a's 512 bytes per partition) while both are live:
    b's load overwrites a's second half, and a + b is what the chip computes, not x0 + x1. The
    program orders the two loads and the add (no race: ncsim check is clean); comparing with
    @ncc.force_auto_alloc shows the difference."""
    def body(x0, x1, out, abuf, bbuf, sbuf):
        a = nl.ndarray((128, 128), nl.float32, buffer=abuf)
        b = nl.ndarray((128, 128), nl.float32, buffer=bbuf)
        s = nl.ndarray((128, 128), nl.float32, buffer=sbuf)
        a[...] = nl.load(x0)
        b[...] = nl.load(x1)
        s[...] = nl.add(a, b)
        nl.store(out, value=s)

    @nki.jit
    def placed(x0, x1):
        out = nl.ndarray(x0.shape, x0.dtype, buffer=nl.shared_hbm)
        body(x0, x1, out, ncc.sbuf.mod_alloc(base_addr=0), ncc.sbuf.mod_alloc(base_addr=256),
             ncc.sbuf.mod_alloc(base_addr=1024))
        return out

    @nki.jit
    @ncc.force_auto_alloc
    def auto(x0, x1):
        out = nl.ndarray(x0.shape, x0.dtype, buffer=nl.shared_hbm)
        body(x0, x1, out, ncc.sbuf.mod_alloc(base_addr=0), ncc.sbuf.mod_alloc(base_addr=256),
             ncc.sbuf.mod_alloc(base_addr=1024))
        return out
    x0 = RNG.normal(size=(128, 128)).astype(np.float32)
    x1 = RNG.normal(size=(128, 128)).astype(np.float32)
    a_seen = np.concatenate([x0[:, :64], x1[:, :64]], axis=1)    # a's bytes after b's load
    np.testing.assert_array_equal(nki.simulate_kernel(placed, x0, x1), a_seen + x1)
    np.testing.assert_array_equal(nki.simulate_kernel(auto, x0, x1), x0 + x1)
    assert nki.check(placed, x0, x1) == []
    text = nki.lower(placed, x0, x1).text
    assert "dma sb:fp32@0:128+256[1x128]" in text


def test_psum_tensors_in_one_bank_clobber():
    """Two PSUM tensors in bank 0: p2's group overwrites p1's partial sum, and p1's next
    matmul accumulates onto p2's (what the chip computes)."""
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        at = nl.ndarray((2, nl.par_dim(128), 128), nl.float32,
                        buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        bt = nl.ndarray((2, nl.par_dim(128), 128), nl.float32,
                        buffer=ncc.sbuf.mod_alloc(base_addr=1024, num_free_tiles=(2,)))
        p1 = nl.ndarray((128, 128), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        p2 = nl.ndarray((128, 128), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        r = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=4096))
        for i in nl.affine_range(2):
            at[i] = nl.load(a[i * 128:(i + 1) * 128, :])
            bt[i] = nl.load(b[i * 128:(i + 1) * 128, :])
        p1 += nisa.nc_matmul(at[0], bt[0])
        p2 += nisa.nc_matmul(at[1], bt[1])
        p1 += nisa.nc_matmul(at[1], bt[0])
        r[...] = nl.copy(p1)
        nl.store(out, value=r)
        return out
    a = RNG.normal(size=(256, 128)).astype(np.float32)
    b = RNG.normal(size=(256, 128)).astype(np.float32)
    a0, a1, b0, b1 = a[:128], a[128:], b[:128], b[128:]
    y = nki.simulate_kernel(k, a, b)
    np.testing.assert_allclose(y, a1.T.astype(np.float64) @ b1 + a1.T.astype(np.float64) @ b0,
                               rtol=1e-4, atol=1e-4)
    assert np.abs(y - (a0.T @ b0 + a1.T @ b0)).max() > 1.0


# --------------------------------------------------------------------------- force_auto_alloc

def _strip(text):
    return [s for s in text.splitlines() if not s.lstrip().startswith((".loc", ";", ".source"))]


def test_force_auto_alloc_is_ncsims_placement():
    """@ncc.force_auto_alloc: the program is the one of the same kernel with nl.sbuf buffers."""
    def body(x, out, buf):
        t = nl.ndarray((NT, nl.par_dim(128), C), nl.float32, buffer=buf)
        for i in nl.affine_range(NT):
            t[i] = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=nl.exp(t[i]))

    @nki.jit
    @ncc.force_auto_alloc
    def forced(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        body(x, out, ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(1,)))
        return out

    @nki.jit
    def auto(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        body(x, out, nl.sbuf)
        return out

    @nki.jit
    def auto2(x):
        out = nl.ndarray(x.shape, x.dtype, buffer=nl.shared_hbm)
        body(x, out, ncc.sbuf.auto_alloc())
        return out
    ta = _strip(nki.lower(auto, X).text)
    assert _strip(nki.lower(forced, X).text) == ta
    assert _strip(nki.lower(auto2, X).text) == ta
    np.testing.assert_allclose(nki.simulate_kernel(forced, X), np.exp(X), rtol=2e-6)


def test_skip_middle_end_issues_every_load():
    """@ncc.skip_middle_end_transformations: a repeated load is issued again."""
    def make(skip):
        def k(x):
            out = nl.ndarray((128, 64), x.dtype, buffer=nl.shared_hbm)
            acc = nl.zeros((128, 64), nl.float32)
            for i in range(4):
                acc[...] = nl.add(acc, nl.load(x))
            nl.store(out, value=acc)
            return out
        return nki.jit(ncc.skip_middle_end_transformations(k) if skip else k)
    x = RNG.normal(size=(128, 64)).astype(np.float32)
    for skip in (False, True):
        np.testing.assert_allclose(nki.simulate_kernel(make(skip), x), 4 * x, rtol=1e-6)
    n = [nki.lower(make(s), x).text.count("dma sb:") for s in (False, True)]
    assert n[0] < n[1] == 4, n


# --------------------------------------------------------------------------- refusals

def _kernel(body):
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        body(x, out)
        return out
    return k


XS = RNG.normal(size=(128, 128)).astype(np.float32)


def test_mixed_auto_after_direct():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        b = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)  # HERE
        a[...] = nl.load(x)
        b[...] = nl.exp(a)
        nl.store(out, value=b)
        return out
    _raises(k, [XS], "err_mixed_allocation", "this tensor is in nl.sbuf", "HERE")


def test_mixed_direct_after_auto():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        b = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))  # HERE
        a[...] = nl.load(x)
        b[...] = nl.exp(a)
        nl.store(out, value=b)
        return out
    msg = _raises(k, [XS], "err_mixed_allocation", "allocated automatically before", "HERE")
    assert f"line {_line(k.func, 'HERE') - 1}" in msg


def test_unplaced_result():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        t = nl.load(x)  # HERE
        a[...] = nl.exp(t)
        nl.store(out, value=a)
        return out
    _raises(k, [XS], "err_mixed_allocation", "result is not placed", "HERE")


def test_psum_zeros_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        p = nl.zeros((128, 128), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))  # HERE
        nl.store(out, value=p)
        return out
    _raises(k, [XS], "err_direct_allocation_init_value", "initial value", "HERE")


def test_sbuf_full_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        p = nl.full((128, 128), 2.0, nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))  # HERE
        nl.store(out, value=p)
        return out
    _raises(k, [XS], "err_direct_allocation_init_value", "initial value", "HERE")


def test_tensor_engine_transpose_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        p = nl.ndarray((128, 128), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        r = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=512))
        a[...] = nl.load(x)
        p[...] = nisa.nc_transpose(a, engine=nisa.tensor_engine)  # HERE
        r[...] = nl.copy(p)
        nl.store(out, value=r)
        return out
    _raises(k, [XS], "err_direct_allocation_hidden_tensor", "nisa.nc_transpose", "HERE")


def test_matmul_without_transpose_x_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        p = nl.ndarray((128, 128), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        r = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=512))
        a[...] = nl.load(x)
        p[...] = nl.matmul(a, a, transpose_x=False)  # HERE
        r[...] = nl.copy(p)
        nl.store(out, value=r)
        return out
    _raises(k, [XS], "err_direct_allocation_hidden_tensor", "nl.matmul", "HERE")


def test_softmax_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        r = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=512))
        a[...] = nl.load(x)
        r[...] = nl.softmax(a, axis=1)  # HERE
        nl.store(out, value=r)
        return out
    _raises(k, [XS], "err_direct_allocation_hidden_tensor", "nl.softmax", "HERE")


def test_hbm_scratch_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        s = nl.ndarray((128, 128), nl.float32, buffer=nl.private_hbm)  # HERE
        a[...] = nl.load(x)
        nl.store(s, value=a)
        nl.store(out, value=a)
        return out
    _raises(k, [XS], "err_direct_allocation_hbm", "scratch", "HERE")


def test_shared_hbm_not_returned_refused():
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        extra = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)  # HERE
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        a[...] = nl.load(x)
        nl.store(extra, value=a)
        nl.store(out, value=a)
        return out
    _raises(k, [XS], "err_direct_allocation_hbm", "is not returned", "HERE")


def _placed(buf, shape=(128, 128), dtype=nl.float32):
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray(shape, dtype, buffer=buf())  # HERE
        nl.store(out, value=x)
        return out
    return k


@pytest.mark.parametrize("buf, shape, dtype, needle", [
    (lambda: ncc.sbuf.mod_alloc(base_addr=0, base_partition=32), (128, 64), nl.float32,
     "cannot start at partition 32"),
    (lambda: ncc.sbuf.mod_alloc(base_addr=0, base_partition=32), (64, 64), nl.float32,
     "cannot start at partition 32"),
    (lambda: ncc.sbuf.mod_alloc(base_addr=0, base_partition=16), (16, 64), nl.float32,
     "cannot start at partition 16"),
    (lambda: ncc.sbuf.alloc(lambda i, p, f: (0, 176 * 1024)), (128, 64), nl.float32,
     "outside [0, 180224)"),
    (lambda: ncc.sbuf.mod_alloc(base_addr=2), (128, 64), nl.float32, "not aligned"),
    (lambda: ncc.sbuf.mod_alloc(base_addr=176 * 1024 - 128), (128, 64), nl.float32,
     "run past the end"),
    (lambda: ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(4,)), (4, nl.par_dim(128), 12288),
     nl.float32, "tile (3,)"),
    (lambda: ncc.psum.mod_alloc(base_bank=0), (128, 1024), nl.float32, "at most one bank"),
    (lambda: ncc.psum.mod_alloc(base_bank=0, base_addr=1024), (128, 512), nl.float32,
     "cross the end of bank 0"),
    (lambda: ncc.psum.alloc(lambda i, p, f: (8, 0, 0)), (128, 512), nl.float32,
     "bank 8"),
    (lambda: ncc.psum.mod_alloc(base_bank=0, num_free_tiles=(2,)), (2, nl.par_dim(128), 128),
     nl.float32, "one physical tile per bank"),
    (lambda: ncc.sbuf.alloc(lambda i, p, f: 0), (128, 64), nl.float32, "returned 0"),
    (lambda: ncc.psum.alloc(lambda i, p, f: (0, 0)), (128, 64), nl.float32,
     "(bank, start_partition, byte_addr)"),
])
def test_tile_rules(buf, shape, dtype, needle):
    _raises(_placed(buf, shape, dtype), [XS], "err_invalid_allocation", needle, "HERE")


def test_directives_refused_with_reason():
    for f, needle in [(lambda: ncc.enable_stack_allocator(log_level=0), "stack allocator"),
                      (lambda: ncc.multi_buffer(2), "not documented")]:
        with pytest.raises(nki.NkiError, match=needle):
            f()


def test_block_tensor_in_a_loop_is_not_replayed():
    """A loop that uses a directly placed block tensor says why it was not replayed."""
    n = 40

    @nki.jit
    def k(x):
        out = nl.ndarray((n * 128, 64), nl.float32, buffer=nl.shared_hbm)
        t = nl.ndarray((n, nl.par_dim(128), 64), nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        for i in nl.affine_range(n):
            t[i] = nl.load(x[i * 128:(i + 1) * 128, :])
            nl.store(out[i * 128:(i + 1) * 128, :], value=t[i])
        return out
    x = RNG.normal(size=(n * 128, 64)).astype(np.float32)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x), x)
    loops = nki.lower(k, x).loops
    assert loops and all("directly allocated" in str(lp) for lp in loops), loops


def test_matmul_onto_vector_written_psum_refused():
    """+= of a matmul onto PSUM another engine wrote needs a temporary: refused."""
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        a = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        p = nl.ndarray((128, 128), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=0))
        r = nl.ndarray((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=512))
        a[...] = nl.load(x)
        p[...] = nl.add(a, a)
        p += nisa.nc_matmul(a, a)  # HERE
        r[...] = nl.copy(p)
        nl.store(out, value=r)
        return out
    _raises(k, [XS], "err_direct_allocation_hidden_tensor", "+= of a matmul", "HERE")


def test_lower_reports_placements():
    ents = [e for e in nki.lower(ring_exp(3), X).tensors if "placement" in e]
    assert [(e["space"], e["blocks"], e["buffers"], e["buffer_bytes"], e["logical_bytes"])
            for e in ents] == [("sbuf", NT, 3, C * 4, NT * C * 4)] * 2
    assert ents[0]["placement"].startswith("ncc.sbuf.mod_alloc(base_addr=0,")
    assert ents[1]["placement"].startswith(f"ncc.sbuf.mod_alloc(base_addr={3 * C * 4},")
    text = nki.lower(ring_exp(3), X).text
    assert f"8 tiles of {C * 4} bytes on 3 physical tiles" in text
    assert ".sbuf sb0 u8 [128, 180224] +0" in text and ".psum" not in text


def test_force_auto_alloc_above_jit():
    """@ncc.force_auto_alloc over @nki.jit works too, and allows initial values."""
    @ncc.force_auto_alloc
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 128), nl.float32, buffer=nl.shared_hbm)
        z = nl.zeros((128, 128), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
        a = nl.ndarray((128, 128), nl.float32, buffer=nl.sbuf)
        a[...] = nl.load(x)
        z[...] = nl.add(z, a)
        nl.store(out, value=z)
        return out
    np.testing.assert_array_equal(nki.simulate_kernel(k, XS), XS)


@pytest.mark.parametrize("inside", [False, True])
def test_plain_placed_tiles_in_a_long_loop(inside):
    """Tiles without block dimensions, declared before a 40-iteration loop (replayed: their
    places do not change) or inside it (not replayed), are one physical tile each: values as
    NumPy, and every load of x waits for the exp that read the previous one."""
    n = 40

    @nki.jit
    def k(x):
        out = nl.ndarray((n * 128, 64), nl.float32, buffer=nl.shared_hbm)
        if not inside:
            a = nl.ndarray((128, 64), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
            e = nl.ndarray((128, 64), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=256))
        for i in nl.affine_range(n):
            if inside:
                a = nl.ndarray((128, 64), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0))
                e = nl.ndarray((128, 64), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=256))
            a[...] = nl.load(x[i * 128:(i + 1) * 128, :])
            e[...] = nl.exp(a)
            nl.store(out[i * 128:(i + 1) * 128, :], value=e)
        return out
    x = RNG.normal(size=(n * 128, 64)).astype(np.float32)
    np.testing.assert_allclose(nki.simulate_kernel(k, x), np.exp(x), rtol=2e-6)
    loops = nki.lower(k, x).loops
    assert len(loops) == 1
    if inside:
        assert "directly allocated tensor is declared" in str(loops[0]["refused"]), loops
    else:
        assert loops[0]["replayed"] > 0 and loops[0]["refused"] is None, loops
    text = _unrolled(k, x)
    loads = [s for s in _engine_lines(text, "sp") if s.startswith("dma ")]
    assert len(loads) == n
    for i, s in enumerate(loads):
        assert s.startswith("dma sb:fp32@0:128+0[1x64]"), s
        assert re.findall(r"wait s_act >= (\d+)", s) == ([str(i)] if i else []), s
