"""Buffers of block tensors declared in a loop body (docs/nki.md, "Block tensors",
policy loop_buffers): each run of the declaration takes the buffers the run `block_bufs`
before it took, request by request, so the body is allocated once for all its iterations;
"lru" keeps the rule before it (the free buffer released longest ago, of any site)."""
import re

import numpy as np
import pytest

import ncsim

from ncsim import nki
import ncsim.nki.language as nl
from ncsim.nki import _steady
from ncsim.nki.examples.catalog import CASES

NB = 4          # blocks per instance
F = 512         # fp32 elements per block row: 2 KiB per partition


@nki.jit
def k_rotate(a, w):
    """Per iteration a block tensor of NB blocks loaded from a, each block multiplied by w
    (a matmul per block into one PSUM tile), the sum stored: out[i] = sum_b w.T @ a[i, b]."""
    I, B, P, Fd = a.shape
    out = nl.ndarray((I, P, Fd), nl.float32, buffer=nl.shared_hbm)
    wt = nl.load(w)
    for i in nl.affine_range(I):
        blk = nl.ndarray((B, nl.par_dim(P), Fd), dtype=a.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(B):
            blk[b, :, :] = nl.load(a[i, b])
        acc = nl.zeros((P, Fd), nl.float32, buffer=nl.psum)
        for b in nl.affine_range(B):
            acc += nl.matmul(wt, blk[b, :, :], transpose_x=True)
        nl.store(out[i], value=nl.copy(acc))
    return out


def _args(iters, nb=NB, f=F, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((iters, nb, 128, f)).astype(np.float32)
    w = rng.standard_normal((128, 128)).astype(np.float32)
    return a, w


def _ref(a, w):
    return np.einsum("kp,ibkf->ipf", w.astype(np.float64), a.astype(np.float64))


_LOAD = re.compile(r"^\s*dma sb:fp32@0:128\+(\d+)\[1x(\d+)\], hbm:fp32\+(\d+)")


def _load_offsets(text, f=F, nb=NB):
    """The SBUF offsets the loads of a's blocks write (unfolded text), per iteration."""
    offs = [int(m.group(1)) for m in map(_LOAD.match, text.splitlines())
            if m and int(m.group(2)) == f]
    return [offs[i:i + nb] for i in range(0, len(offs), nb)]


@pytest.mark.parametrize("depth", [2, 3])
def test_same_buffers_every_depth_iterations(depth):
    a, w = _args(8)
    low = nki.lower(k_rotate, a, w, policy={"fold_loops": False, "block_bufs": depth})
    per = _load_offsets(low.text)
    assert len(per) == 8
    for i in range(8 - depth):
        assert per[i] == per[i + depth]            # the same buffers depth runs later
    for i in range(depth):
        for j in range(i + 1, depth):
            assert not set(per[i]) & set(per[j])   # and disjoint sets within a rotation
    # the header says it once, with depth x NB distinct buffers
    line = [ln for ln in low.text.splitlines() if ln.startswith("; block tensor")]
    assert len(line) == 1 and f"8 tensors so" in line[0]
    assert f"{depth * NB} distinct buffers" in line[0]


def test_values_match_numpy():
    a, w = _args(6, seed=3)
    out = nki.simulate_kernel(k_rotate, a, w)
    np.testing.assert_allclose(np.asarray(out, np.float64), _ref(a, w), rtol=2e-4, atol=2e-3)
    out2 = nki.simulate_kernel(k_rotate, a, w, policy={"loop_buffers": "lru"})
    np.testing.assert_allclose(np.asarray(out2, np.float64), _ref(a, w), rtol=2e-4, atol=2e-3)


_WAIT = re.compile(r"wait s_pe >= (\d+)")


def _first_load_waits(text):
    """Per iteration, the Tensor-engine count the first load of its block tensor waits for
    (0: none), in the unfolded program."""
    out = []
    loads = [ln for ln in text.splitlines() if _LOAD.match(ln) and "[1x%d]" % F in ln]
    for i in range(0, len(loads), NB):
        m = _WAIT.search(loads[i])
        out.append(int(m.group(1)) if m else 0)
    return out


def test_rotation_overlaps_loads_with_the_previous_iterations_matmuls():
    """With two sets, iteration i+1's loads wait for the matmuls of iteration i-1 only (their
    buffers' readers), so they overlap iteration i's; with one set (block_bufs 1) they wait
    for iteration i's. The Tensor engine's semaphore counts NB matmuls per iteration."""
    a, w = _args(8)
    two = nki.lower(k_rotate, a, w, policy={"fold_loops": False})
    one = nki.lower(k_rotate, a, w, policy={"fold_loops": False, "block_bufs": 1})
    w2, w1 = _first_load_waits(two.text), _first_load_waits(one.text)
    assert w2[:2] == [0, 0] and w1[0] == 0
    for i in range(2, 8):
        assert w2[i] == (i - 1) * NB - (NB - 1)     # the first matmul of iteration i-2
    for i in range(1, 8):
        assert w1[i] == i * NB - (NB - 1)           # the first matmul of iteration i-1
    # (this kernel is bound by its loads, so both simulate alike; the waits show the overlap)
    assert _sim_ns(two.text) <= _sim_ns(one.text)


def _sim_ns(text):
    r = ncsim.run(ncsim.assemble(text, name="k_rotate"), timing_only=True)
    return getattr(r, "time_ns", None) or r.stats["total_ns"]


@nki.jit
def k_big(a):
    """Per iteration NB blocks of [128, F] fp32 loaded and added up, the sum stored."""
    I, B, P, Fd = a.shape
    out = nl.ndarray((I, P, Fd), nl.float32, buffer=nl.shared_hbm)
    for i in nl.affine_range(I):
        blk = nl.ndarray((B, nl.par_dim(P), Fd), dtype=a.dtype, buffer=nl.sbuf)
        for b in nl.affine_range(B):
            blk[b, :, :] = nl.load(a[i, b])
        s = nl.add(blk[0, :, :], blk[1, :, :])
        for b in nl.affine_range(B - 2):
            s = nl.add(s, blk[b + 2, :, :])
        nl.store(out[i], value=s)
    return out


def test_memory_short_takes_the_previous_instances_buffers():
    """Two instances do not fit (80 KiB each beside the tiles): the second takes new buffers
    while SBUF has room, then buffers the first one held (memory short, the rotation gives
    way to the rule of a tensor declared once: here tiles of other sites have taken some of
    the first instance's buffers meanwhile); the values are still right."""
    f = 4096
    a = np.random.default_rng(9).standard_normal((6, 5, 128, f)).astype(np.float32)
    out = nki.simulate_kernel(k_big, a)
    np.testing.assert_allclose(np.asarray(out), a.sum(axis=1), rtol=1e-5, atol=1e-4)
    low = nki.lower(k_big, a, policy={"fold_loops": False})
    per = _load_offsets(low.text, f, 5)
    assert len(per) == 6
    assert len(set(per[0])) == 5
    assert not set(per[1][:3]) & set(per[0])      # new buffers while SBUF had room
    assert set(per[1][3:]) <= set(per[0])         # then the first instance's
    seen = set(per[0]) | set(per[1])
    assert all(set(p) <= seen for p in per[2:])   # no more memory afterwards


def test_lru_policy_keeps_the_rule_before():
    """loop_buffers "lru": the instances take whichever free buffer was released longest ago
    (the hoisted tutorial matmul's ring), a header line per instance; rotate makes the text
    fold. Unknown values are refused."""
    case = [c for c in CASES if c.name == "matmul_hoisted"][0]
    kernel, _ = case.load()
    args = case.args("moderate", 0, timing=True)
    rot = nki.lower(kernel, *args)
    lru = nki.lower(kernel, *args, policy={"loop_buffers": "lru"})
    assert rot.text != lru.text
    assert len(rot.text) < len(lru.text)
    nbuf = re.compile(r"tensors so .*, (\d+) distinct buffers")
    hl = [int(nbuf.search(ln).group(1)) for ln in lru.text.splitlines()
          if ln.startswith("; block tensor")]
    hr = [int(nbuf.search(ln).group(1)) for ln in rot.text.splitlines()
          if ln.startswith("; block tensor")]
    assert len(hr) == len(hl) == 2 and sum(hr) < sum(hl)
    with pytest.raises(nki.NkiError, match=r"\[err_invalid_policy\] policy "
                       r"loop_buffers='fifo': must be rotate or lru"):
        nki.lower(kernel, *args, policy={"loop_buffers": "fifo"})


def test_replay_gives_the_full_trace_with_rotation(monkeypatch):
    """The steady-state replay calls the allocator for each replayed block, so with rotation
    it still gives the full trace's program (both rules)."""
    monkeypatch.setattr(_steady, "MIN_ITERS", 4)
    a, w = _args(12, seed=1)
    for rule in ("rotate", "lru"):
        x = nki.lower(k_rotate, a, w, policy={"loop_buffers": rule, "steady_state": True})
        y = nki.lower(k_rotate, a, w, policy={"loop_buffers": rule, "steady_state": False})
        assert x.text == y.text and x.tensors == y.tensors


@nki.jit
def k_psum_blocks(a, w):
    """Per iteration a PSUM block tensor of two blocks (one bank each): block j = w.T @ a[i, j],
    both copied out and added, the sum stored."""
    I, B, P, Fd = a.shape
    out = nl.ndarray((I, P, Fd), nl.float32, buffer=nl.shared_hbm)
    wt = nl.load(w)
    for i in nl.affine_range(I):
        ps = nl.ndarray((2, nl.par_dim(P), Fd), dtype=nl.float32, buffer=nl.psum)
        for j in nl.affine_range(2):
            ps[j, :, :] = nl.matmul(wt, nl.load(a[i, j]), transpose_x=True)
        s = nl.add(nl.copy(ps[0, :, :]), nl.copy(ps[1, :, :]))
        nl.store(out[i], value=s)
    return out


_MM = re.compile(r"^\s*matmul ps:fp32@0:128\+(\d+)\[")


def test_psum_block_tensor_rotates_through_psum_bufs_banks():
    a, w = _args(6, nb=2, seed=11)
    out = nki.simulate_kernel(k_psum_blocks, a, w)
    np.testing.assert_allclose(np.asarray(out, np.float64), _ref(a, w), rtol=2e-4, atol=2e-3)
    for depth in (1, 2):
        low = nki.lower(k_psum_blocks, a, w, policy={"fold_loops": False, "psum_bufs": depth})
        banks = [int(m.group(1)) for m in map(_MM.match, low.text.splitlines()) if m]
        per = [banks[i:i + 2] for i in range(0, len(banks), 2)]
        assert len(per) == 6
        for i in range(6 - depth):
            assert per[i] == per[i + depth]
        assert len(set(banks)) == 2 * depth
