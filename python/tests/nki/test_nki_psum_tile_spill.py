"""PSUM tiles without block dimensions spilled (docs/nki.md, "Spills and reloads"): a tile keeps
the bank its views name (its home); when a tile finds PSUM full it shares the bank whose tiles
are next needed furthest away (never one whose tiles an instruction uses together with it), and
the tiles of a bank take turns in it, copied to SBUF and back (by an identity matmul when an
accumulation group is open). Next uses come from a first pass that sees every access, so the
kernel is lowered without loop replay. The results must be those of the same computation with
fewer tiles live, bit for bit."""
import inspect

import numpy as np
import pytest

from ncsim import nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

# the same sums in the same order, one accumulator live at a time (no spill): the reference
from test_nki_psum_spill import k_n_outer as k_one  # noqa: E402  (python/tests/nki)
# its inputs and its per-engine listing of a lowered program
from test_nki_psum_spill import _args, _by_engine  # noqa: E402


@nki.jit
def k_list(lhsT, rhs):
    """K outermost, one [128, 512] accumulator per output tile in a Python list, all open
    across the K loop (NT x 2 KiB per partition of PSUM)."""
    K, M = lhsT.shape
    _, N = rhs.shape
    KT, NT = K // 128, N // 512
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    accs = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(NT)]
    for k in nl.affine_range(KT):
        lt = nl.load(lhsT[128 * k:128 * (k + 1), :])
        for n in range(NT):
            rt = nl.load(rhs[128 * k:128 * (k + 1), 512 * n:512 * (n + 1)])
            accs[n] += nisa.nc_matmul(lt, rt)
    for n in range(NT):
        nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(accs[n]))
    return out


@nki.jit
def k_named(lhsT, rhs):
    """Sixteen accumulators as sixteen named tiles (as a generator writes them out), K outer."""
    K, M = lhsT.shape
    KT = K // 128
    out = nl.ndarray((M, 16 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    a0 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a1 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a2 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a3 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a4 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a5 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a6 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a7 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a8 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a9 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a10 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a11 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a12 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a13 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a14 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    a15 = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
    for k in nl.affine_range(KT):
        lt = nl.load(lhsT[128 * k:128 * (k + 1), :])
        a0 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 0:512]))
        a1 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 512:1024]))
        a2 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 1024:1536]))
        a3 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 1536:2048]))
        a4 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 2048:2560]))
        a5 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 2560:3072]))
        a6 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 3072:3584]))
        a7 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 3584:4096]))
        a8 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 4096:4608]))
        a9 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 4608:5120]))
        a10 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 5120:5632]))
        a11 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 5632:6144]))
        a12 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 6144:6656]))
        a13 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 6656:7168]))
        a14 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 7168:7680]))
        a15 += nisa.nc_matmul(lt, nl.load(rhs[128 * k:128 * (k + 1), 7680:8192]))
    for n, t in enumerate((a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15)):
        nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(t))
    return out


BANK = 128 * 2048     # bytes of one spilled [128, 512] fp32 tile


def test_sixteen_plain_accumulators_across_the_k_loop():
    a, b = _args(512, 128, 16)
    got = nki.simulate_kernel(k_list, a, b)
    np.testing.assert_allclose(got, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    # the same additions in the same order as the kernel with one accumulator live: bit for bit
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_one, a, b))
    assert nki.check(k_list, a, b) == []
    low = nki.lower(k_list, a, b)
    sp = low.spill
    assert sp["psum_spill_bytes"] > 0 and sp["psum_spill_bytes"] % BANK == 0
    # every tile spilled before the last K step is accumulated into again: one reload each
    assert sp["psum_reload_bytes"] == sp["psum_spill_bytes"]
    # PSUM goes to SBUF, not HBM
    assert sp["spill_save_bytes"] == 0 and sp["spill_reload_bytes"] == 0
    # 16 tiles taking turns in 8 banks over 4 K steps: the 9 that share a bank move at every
    # step after the first (the 7 others keep theirs), and in the first step 8 tiles are
    # copied out (the last tile shares with them) -- at most 9 a step
    nspill = sp["psum_spill_bytes"] // BANK
    assert 8 * 3 <= nspill <= 9 * 4
    # per tensor: the allocating line's entry carries the PSUM bytes, the SBUF copies have
    # their own entry (no HBM bytes here)
    site = next(r for r in low.tensors if r["space"] == "psum" and r["blocks"] == 0)
    assert site["spilled_bytes"] == sp["psum_spill_bytes"]
    assert site["reloaded_bytes"] == sp["psum_reload_bytes"]
    assert site["buffers"] <= 8
    save = next(r for r in low.tensors if r["name"].startswith("psum_spill_line"))
    assert save["space"] == "sbuf" and save["shape"] == (16, 128, 512)
    assert save["spilled_bytes"] == 0
    eng = _by_engine(low)
    # the copies out on the Vector engine, the copies back by identity matmuls (groups open)
    outs = [x for x in eng["dve"] if x.startswith("tensor_copy sb:") and " ps:" in x]
    assert len(outs) == nspill
    mm = [x for x in eng["pe"] if x.startswith("matmul")]
    assert len([x for x in mm if ", acc" not in x]) == 16 + nspill
    assert any(ln.startswith(".hbm const fp32 [128, 128] input") for ln in low.text.splitlines())
    # lowered without loop replay: the first pass must see every access
    assert low.steady_fallback and "PSUM tile" in low.steady_fallback


def test_eight_plain_accumulators_fit_and_nothing_moves():
    a, b = _args(512, 128, 8)
    low = nki.lower(k_list, a, b)
    assert low.spill["psum_spill_bytes"] == 0 and ".hbm const" not in low.text
    assert low.steady_fallback is None
    np.testing.assert_array_equal(nki.simulate_kernel(k_list, a, b),
                                  nki.simulate_kernel(k_one, a, b))


def test_sixteen_named_tiles():
    a, b = _args(384, 128, 16, seed=1)
    got = nki.simulate_kernel(k_named, a, b)
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_one, a, b))
    np.testing.assert_allclose(got, a.T.astype(np.float64) @ b, rtol=1e-4, atol=1e-3)
    assert nki.check(k_named, a, b) == []
    low = nki.lower(k_named, a, b)
    assert low.spill["psum_spill_bytes"] > 0
    assert low.spill["psum_reload_bytes"] == low.spill["psum_spill_bytes"]
    # the copies on the Scalar engine instead: same numbers
    pol = {"psum_spill_engine": "act"}
    np.testing.assert_array_equal(nki.simulate_kernel(k_named, a, b, policy=pol), got)


@nki.jit
def k_scores(q, k):
    """Attention-like: per query tile, S = 10 score tiles q k_j^T in PSUM, all kept until the
    row maximum over all of them is known, then exp(s - max) of each, stored."""
    D, L = q.shape
    _, S = k.shape
    J = S // 512
    out = nl.ndarray((L, S), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(L // 128):
        qt = nl.load(q[:, 128 * i:128 * (i + 1)])
        scores = []
        mx = nl.full((128, 1), -1e30, nl.float32, buffer=nl.sbuf)
        for j in range(J):
            kt = nl.load(k[:, 512 * j:512 * (j + 1)])
            s = nisa.nc_matmul(qt, kt)
            scores.append(s)
            m = nisa.tensor_reduce(nl.maximum, s, axis=1, keepdims=True)
            mx = nl.maximum(mx, m)
        neg = nl.multiply(mx, -1.0)
        for j in range(J):
            p = nisa.activation(nl.exp, scores[j], bias=neg)
            nl.store(out[128 * i:128 * (i + 1), 512 * j:512 * (j + 1)], value=p)
    return out


@nki.jit
def k_scores_twice(q, k):
    """The same numbers with one score tile live at a time: the scores computed twice."""
    D, L = q.shape
    _, S = k.shape
    J = S // 512
    out = nl.ndarray((L, S), dtype=nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(L // 128):
        qt = nl.load(q[:, 128 * i:128 * (i + 1)])
        mx = nl.full((128, 1), -1e30, nl.float32, buffer=nl.sbuf)
        for j in range(J):
            kt = nl.load(k[:, 512 * j:512 * (j + 1)])
            s = nisa.nc_matmul(qt, kt)
            m = nisa.tensor_reduce(nl.maximum, s, axis=1, keepdims=True)
            mx = nl.maximum(mx, m)
        neg = nl.multiply(mx, -1.0)
        for j in range(J):
            kt = nl.load(k[:, 512 * j:512 * (j + 1)])
            s = nisa.nc_matmul(qt, kt)
            p = nisa.activation(nl.exp, s, bias=neg)
            nl.store(out[128 * i:128 * (i + 1), 512 * j:512 * (j + 1)], value=p)
    return out


def test_attention_like_score_tiles():
    rng = np.random.default_rng(4)
    q = (rng.standard_normal((64, 256)) * 0.3).astype(np.float32)
    k = (rng.standard_normal((64, 512 * 10)) * 0.3).astype(np.float32)
    got = nki.simulate_kernel(k_scores, q, k)
    s = q.T.astype(np.float64) @ k
    want = np.exp(s - s.max(axis=1, keepdims=True))
    np.testing.assert_allclose(got, want, rtol=2e-3, atol=1e-5)
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_scores_twice, q, k))
    assert nki.check(k_scores, q, k) == []
    low = nki.lower(k_scores, q, k)
    assert low.spill["psum_spill_bytes"] > 0
    assert low.spill["psum_reload_bytes"] == low.spill["psum_spill_bytes"]


@nki.jit
def k_mixed(lhsT, rhs):
    """Three accumulators in a PSUM block tensor and eight plain tiles, all open across K
    (eleven banks' worth against eight): the plain tiles hold every bank when the blocks are
    first touched, so a block takes a plain tile's bank, and gives it back when that tile is
    used again."""
    K, M = lhsT.shape
    KT = K // 128
    out = nl.ndarray((M, 11 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    blk = nl.zeros((3, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum, name="blk")
    tiles = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(8)]
    for k in nl.affine_range(KT):
        lt = nl.load(lhsT[128 * k:128 * (k + 1), :])
        for n in range(11):
            rt = nl.load(rhs[128 * k:128 * (k + 1), 512 * n:512 * (n + 1)])
            if n < 3:
                blk[n] += nisa.nc_matmul(lt, rt)
            else:
                tiles[n - 3] += nisa.nc_matmul(lt, rt)
    for n in range(11):
        nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(blk[n] if n < 3 else tiles[n - 3]))
    return out


def test_plain_tiles_and_block_tensors_together():
    a, b = _args(512, 128, 11, seed=5)
    got = nki.simulate_kernel(k_mixed, a, b)
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_one, a, b))
    assert nki.check(k_mixed, a, b) == []
    low = nki.lower(k_mixed, a, b)
    blk = next(r for r in low.tensors if r["name"] == "blk")
    site = [r for r in low.tensors if r["space"] == "psum" and r["blocks"] == 0]
    moved_tiles = sum(r["spilled_bytes"] for r in site)
    # both kinds moved: plain tiles for blocks, blocks for the plain tiles coming back
    assert blk["spilled_bytes"] > 0 and moved_tiles > 0
    assert blk["spilled_bytes"] + moved_tiles == low.spill["psum_spill_bytes"]
    assert low.spill["psum_reload_bytes"] == low.spill["psum_spill_bytes"]


@nki.jit
def k_transposes(x):
    """T bf16 transposes on the Tensor engine into plain PSUM tiles, all live at once, copied
    out in reverse order: PSUM data written by pe that is no accumulation group."""
    T = x.shape[1] // 128
    out = nl.ndarray((128, 128 * T), dtype=x.dtype, buffer=nl.shared_hbm)
    tps = []
    for t in range(T):
        xt = nl.load(x[:, 128 * t:128 * (t + 1)])
        tps.append(nisa.nc_transpose(xt))
    for t in range(T):
        u = T - 1 - t
        nl.store(out[:, 128 * u:128 * (u + 1)], value=nl.copy(tps[u]))
    return out


def _bf16(v):
    """v rounded to bf16 (to nearest even), as fp32."""
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16 << 16
    return u.astype(np.uint32).view(np.float32)


@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_a_spilled_tile_holding_a_transpose(dt):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((128, 128 * 11)).astype(np.float32)
    if dt == "float16":
        x = x.astype(np.float16)
        arg, want_x = x, x
    else:
        arg, want_x = nki.typed(x, nl.bfloat16), _bf16(x)
    got = nki.simulate_kernel(k_transposes, arg)
    want = np.concatenate([want_x[:, 128 * t:128 * (t + 1)].T for t in range(11)], axis=1)
    np.testing.assert_array_equal(np.asarray(got, dtype=np.float32), want.astype(np.float32))
    assert nki.check(k_transposes, arg) == []
    low = nki.lower(k_transposes, arg)
    assert low.spill["psum_spill_bytes"] > 0
    assert low.spill["psum_reload_bytes"] == low.spill["psum_spill_bytes"]
    # 16-bit PSUM data goes back by a copy (a matmul writes fp32 only): no identity
    assert ".hbm const" not in low.text


def test_refusals_that_remain():
    # a tile of two banks that finds PSUM full is not spilled, nor gives up its banks
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 8 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
        lt = nl.load(a)
        rt = nl.load(b)
        accs = []
        for n in range(7):
            t = nl.zeros((128, 512), dtype=nl.float32, buffer=nl.psum)
            t += nisa.nc_matmul(lt, rt)
            accs.append(t)
        wide = nl.zeros((128, 1024), dtype=nl.float32, buffer=nl.psum)
        wide[:, 0:512] += nisa.nc_matmul(lt, rt)
        for n in range(7):
            nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.copy(accs[n]))
        nl.store(out[:, 3584:4096], value=nl.copy(wide[:, 0:512]))
        return out
    a, b = np.zeros((128, 128), np.float32), np.zeros((128, 512), np.float32)
    with pytest.raises(nki.NkiError, match=r"test_nki_psum_tile_spill.py:\d+: error: "
                       r"\[err_out_of_memory\] PSUM \(8 banks of 2 KiB per partition\) is full.*"
                       r"a PSUM tile of more than one bank \(2048 bytes\) is not spilled"):
        nki.lower(k, a, b)
    # the switch off: plain tiles are not spilled either
    a, b = _args(256, 128, 12)
    with pytest.raises(nki.NkiError, match=r"test_nki_psum_tile_spill.py:\d+: error: "
                       r"\[err_out_of_memory\] PSUM \(8 banks.*psum_spill=False"):
        nki.lower(k_list, a, b, policy={"psum_spill": False})


@nki.jit
def k_pair(lhsT, rhs):
    """Four accumulators in a block tensor and eight plain tiles open across K; at the end
    each output is a block plus a tile, read by one instruction (so the block that takes a
    tile's bank must not be one used together with that tile)."""
    K, M = lhsT.shape
    KT = K // 128
    out = nl.ndarray((M, 8 * 512), dtype=nl.float32, buffer=nl.shared_hbm)
    blk = nl.zeros((4, nl.par_dim(128), 512), dtype=nl.float32, buffer=nl.psum, name="blk")
    tiles = [nl.zeros((128, 512), nl.float32, buffer=nl.psum) for _ in range(8)]
    for k in nl.affine_range(KT):
        lt = nl.load(lhsT[128 * k:128 * (k + 1), :])
        for n in range(12):
            rt = nl.load(rhs[128 * k:128 * (k + 1), 512 * n:512 * (n + 1)])
            if n < 4:
                blk[n] += nisa.nc_matmul(lt, rt)
            else:
                tiles[n - 4] += nisa.nc_matmul(lt, rt)
    for n in range(8):
        nl.store(out[:, 512 * n:512 * (n + 1)], value=nl.add(blk[n % 4], tiles[n]))
    return out


def test_a_block_and_a_tile_read_together():
    a, b = _args(512, 128, 12, seed=8)
    got = nki.simulate_kernel(k_pair, a, b)
    p = a.T.astype(np.float64) @ b
    want = np.concatenate([p[:, 512 * (n % 4):512 * (n % 4 + 1)] + p[:, 512 * (n + 4):512 * (n + 5)]
                           for n in range(8)], axis=1)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    assert nki.check(k_pair, a, b) == []
    low = nki.lower(k_pair, a, b)
    assert low.spill["psum_spill_bytes"] > 0
    assert low.spill["psum_reload_bytes"] == low.spill["psum_spill_bytes"]


def test_tile_copies_spill_on_to_hbm_when_sbuf_is_short():
    """SBUF narrowed: the SBUF blocks holding spilled tiles are evicted to HBM in turn, and
    the sums are still those of the kernel without spills."""
    a, b = _args(512, 128, 16, seed=3)
    pol = {"sbuf_bytes": 12288}
    got = nki.simulate_kernel(k_list, a, b, policy=pol)
    np.testing.assert_array_equal(got, nki.simulate_kernel(k_one, a, b))
    assert nki.check(k_list, a, b, policy=pol) == []
    low = nki.lower(k_list, a, b, policy=pol)
    save = next(r for r in low.tensors if r["name"].startswith("psum_spill_line"))
    assert save["spilled_bytes"] > 0 and save["reloaded_bytes"] == save["spilled_bytes"]
    assert low.spill["spill_save_bytes"] == save["spilled_bytes"]
    assert low.spill["psum_spill_bytes"] > 0
    assert "spill_psum_spill_line" in low.text


_OPS = []          # the program of k_random (set by the test before each call)
_NT = [0]


@nki.jit
def k_random(L, R):
    """9-14 plain [128, 128] PSUM tiles and a random program over them: accumulate a matmul
    into a tile, replace a tile by a new matmul result, store a tile, store the sum of two
    (an instruction reading two tiles)."""
    nout = sum(1 for o in _OPS if o[0] in ("rd", "add"))
    out = nl.ndarray((128, 128 * nout), dtype=nl.float32, buffer=nl.shared_hbm)
    lt = nl.load(L)
    tiles = [nl.zeros((128, 128), nl.float32, buffer=nl.psum) for _ in range(_NT[0])]
    k = 0
    for o in _OPS:
        if o[0] == "mm":
            tiles[o[1]] += nisa.nc_matmul(lt, nl.load(R[:, 128 * o[2]:128 * (o[2] + 1)]))
        elif o[0] == "new":
            tiles[o[1]] = nisa.nc_matmul(lt, nl.load(R[:, 128 * o[2]:128 * (o[2] + 1)]))
        elif o[0] == "rd":
            nl.store(out[:, 128 * k:128 * (k + 1)], value=nl.copy(tiles[o[1]]))
            k += 1
        else:
            nl.store(out[:, 128 * k:128 * (k + 1)], value=nl.add(tiles[o[1]], tiles[o[2]]))
            k += 1
    return out


@pytest.mark.parametrize("seed", range(6))
def test_random_programs_over_more_tiles_than_banks(seed):
    rng = np.random.default_rng(100 + seed)
    nt = int(rng.integers(9, 15))
    ops = []
    for _ in range(int(rng.integers(30, 60))):
        r = rng.random()
        if r < 0.5:
            ops.append(("mm", int(rng.integers(nt)), int(rng.integers(4))))
        elif r < 0.6:
            ops.append(("new", int(rng.integers(nt)), int(rng.integers(4))))
        elif r < 0.85:
            ops.append(("rd", int(rng.integers(nt))))
        else:
            a, b = rng.choice(nt, 2, replace=False)
            ops.append(("add", int(a), int(b)))
    ops.append(("rd", 0))
    _OPS[:] = ops
    _NT[0] = nt
    L = rng.standard_normal((128, 128), dtype=np.float32)
    R = rng.standard_normal((128, 512), dtype=np.float32)
    # the model: float64 sums
    val = [np.zeros((128, 128)) for _ in range(nt)]
    outs = []
    for o in ops:
        if o[0] in ("mm", "new"):
            m = L.T.astype(np.float64) @ R[:, 128 * o[2]:128 * (o[2] + 1)]
            val[o[1]] = val[o[1]] + m if o[0] == "mm" else m
        elif o[0] == "rd":
            outs.append(val[o[1]].copy())
        else:
            outs.append(val[o[1]] + val[o[2]])
    got = nki.simulate_kernel(k_random, L, R)
    np.testing.assert_allclose(got, np.concatenate(outs, axis=1), rtol=1e-4, atol=1e-3)
    # the program reads partial sums (psum-open, the kernel's own doing); nothing else is
    # found, and none of the spills' copies reads an open group
    src, first = inspect.getsourcelines(k_random.func)
    line = first + next(i for i, t in enumerate(src) if "tiles = [" in t)
    for f in nki.check(k_random, L, R):
        assert f.kind == "psum-open" and f.second.line != line, f.message
    low = nki.lower(k_random, L, R)
    assert low.spill["psum_reload_bytes"] <= low.spill["psum_spill_bytes"]
    _SPILLED.append(low.spill["psum_spill_bytes"])


_SPILLED = []


def test_the_random_programs_spilled():
    """(after them) most of the random programs above had tiles to spill"""
    if len(_SPILLED) < 6:
        pytest.skip("run with the random programs")
    assert sum(1 for n in _SPILLED if n > 0) >= 4
