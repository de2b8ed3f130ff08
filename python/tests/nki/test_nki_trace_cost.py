"""The tracer's bookkeeping made cheaper without changing a program (docs/nki.md, "Cost of
lowering"): each optimised structure must give what the pass it replaces gives."""
import random

from ncsim.nki import _core


def _tracer():
    return _core.Tracer(_core.Policy(), "kernel.py")


def test_free_buffer_heaps_give_the_scan_s_choice():
    """_other_free (heaps of free buffers per size) picks what _other_free_ref (a pass over
    every buffer) picks -- the smallest free buffer large enough, released longest ago, made
    first -- through a random sequence of takes, releases (a tick set after the owner is
    cleared, as every release does), releases by a resident copy (no new tick), releases at
    the same tick, and requests of every size."""
    rng = random.Random(7)
    tr = _tracer()
    sizes = {"sbuf": [256, 1024, 1024, 4096], "psum": [2048, 4096]}
    for kind, ss in sizes.items():
        for i in range(60):
            site = _core.Site()
            sl = tr._add_slot(kind, (i * 8192, rng.choice(ss)), site)
            sl.owner = object()
    tick = 0
    checked = 0
    for step in range(4000):
        sl = rng.choice(tr.slots)
        r = rng.random()
        if sl.owner is None:
            if r < 0.5:
                sl.owner = object()                  # taken again
        elif r < 0.6:
            sl.owner = None                          # freed: the tick follows
            sl.freed = tick if rng.random() < 0.7 else max(0, tick - rng.randrange(3))
        elif r < 0.7:
            sl.owner = None                          # a resident copy lets go: no new tick
            sl.now_free()
        if rng.random() < 0.3:
            tick += 1
        kind = rng.choice(("sbuf", "psum"))
        n = rng.choice(sizes[kind] + [1, 300, 5000])
        got, want = tr._other_free(kind, n), tr._other_free_ref(kind, n)
        assert got is want, (step, kind, n)
        checked += want is not None
    assert checked > 500


def test_free_buffer_heaps_stay_small_when_never_searched():
    """A size whose buffers are freed and taken again and again, and never searched for, does
    not make its heap grow with every release (stale entries are dropped in passes)."""
    tr = _tracer()
    slots = [tr._add_slot("sbuf", (i * 1024, 1024), _core.Site()) for i in range(8)]
    for tick in range(20000):
        sl = slots[tick % 8]
        sl.owner = None
        sl.freed = tick
        sl.owner = object()
    h = tr.free_heaps[("sbuf", 1024)]
    assert len(h) <= 2 * 8 + 64
    slots[3].owner = None
    slots[3].freed = 20000
    assert tr._other_free("sbuf", 1000) is slots[3] is tr._other_free_ref("sbuf", 1000)


def test_free_buffer_heaps_are_not_used_by_the_reference_paths():
    tr = _core.Tracer(_core.Policy(fast_trace=False), "kernel.py")
    sl = tr._add_slot("sbuf", (0, 1024), _core.Site())
    sl.owner = None
    tr.free_heaps[("sbuf", 1024)].clear()            # the heaps would miss it
    assert tr._other_free("sbuf", 512) is sl


# ---- a first pass (block tensors: a second pass follows) makes no instruction text

import numpy as np                                        # noqa: E402
import pytest                                             # noqa: E402

from ncsim import nki                                     # noqa: E402
import ncsim.nki.language as nl                           # noqa: E402

F = 96


@nki.jit
def k_blocks_oob(x):
    """A block tensor (so the lowering has a first pass), then a load past x's end."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((4, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:128, 0:F]
    for t in nl.affine_range(4):
        b[t, ip, jf] = nl.load(x[ip, F * t + jf])
        nl.store(out[ip, F * t + jf], value=nl.exp(b[t, ip, jf]))
    return out


@nki.jit
def k_blocks_pstart(x):
    """A block tensor, then a 64-partition view starting at partition 32 (refused)."""
    out = nl.ndarray((64, F), dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((2, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:64, 0:F]
    for k in nl.affine_range(2):
        b[k, 32 * k + ip, jf] = nl.load(x[ip, jf])
    nl.store(out[ip, jf], value=b[1, ip, jf])
    return out


def _passes(monkeypatch, kernel, x, fast=True):
    """Lower; (the error or None, passes traced, the texts a first pass emitted). Once, also
    under the ctest that lowers every kernel twice (NCSIM_NKI_TRACE_ORACLE)."""
    from ncsim.nki import Kernel
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    n, texts = [0], []
    trace, tail = Kernel._trace, _core.Tracer._emit_tail

    def spy_trace(*a):
        n[0] += 1
        return trace(*a)

    def spy_tail(self, eng, text, *a):
        if self.fast and self.steady is None:
            texts.append(text)
        return tail(self, eng, text, *a)
    with monkeypatch.context() as m:
        m.setattr(Kernel, "_trace", staticmethod(spy_trace))
        m.setattr(_core.Tracer, "_emit_tail", spy_tail)
        try:
            nki.lower(kernel, x, policy={"fast_trace": fast})
            err = None
        except nki.NkiError as e:
            err = str(e)
    return err, n[0], texts


def test_first_pass_has_no_text_and_the_same_program(monkeypatch):
    x = np.zeros((128, 4 * F), dtype=np.float32)
    err, n, texts = _passes(monkeypatch, k_blocks_oob, x)
    assert err is None and n == 2
    assert texts and not any("sb:" in t or "hbm:" in t for t in texts)
    assert nki.lower(k_blocks_oob, x).text == \
        nki.lower(k_blocks_oob, x, policy={"fast_trace": False}).text


@pytest.mark.parametrize("kernel, shape, code", [
    (k_blocks_oob, (128, 3 * F + 8), "err_tensor_access_out_of_bound"),
    (k_blocks_pstart, (64, F), "err_partition_start")])
def test_first_pass_raises_the_views_errors(monkeypatch, kernel, shape, code):
    """A view's errors that the text would raise are raised by the first pass, where the
    reference paths (which write every text) raise them, with the same message."""
    x = np.zeros(shape, dtype=np.float32)
    err, n, _ = _passes(monkeypatch, kernel, x)
    ref, nref, _ = _passes(monkeypatch, kernel, x, fast=False)
    assert code in err and err == ref and n == nref == 1


@nki.jit
def k_recorded(x):
    """A loop long enough to be recorded (steady-state tracing), whose subscripts hold its
    index (a _steady.Idx while its iterations are recorded)."""
    T = x.shape[1] // F
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((T, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:128, 0:F]
    for t in nl.affine_range(T):
        b[t, ip, jf] = nl.load(x[ip, F * t + jf])
        nl.store(out[ip, F * t + jf], value=nl.exp(b[t, ip, jf]))
    return out


def test_recorded_loop_index_uses_the_memo(monkeypatch):
    """Subscripts with the index of a loop being recorded are memoised like plain ints:
    their structure is computed in full once, and the program is the reference paths'."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    x = np.zeros((128, 40 * F), dtype=np.float32)
    n = {"full": 0, "ref": 0}
    full, ref = _core._adv_index_fast, _core._index_view_ref

    def spy_full(*a):
        n["full"] += 1
        return full(*a)

    def spy_ref(*a):
        n["ref"] += 1
        return ref(*a)
    _core._ADV_MEMO.clear()
    with monkeypatch.context() as m:
        m.setattr(_core, "_adv_index_fast", spy_full)
        m.setattr(_core, "_index_view_ref", spy_ref)
        low = nki.lower(k_recorded, x)
    assert low.loops and low.loops[0]["replayed"] > 0          # recorded, then replayed
    assert n["ref"] == 0 and n["full"] <= 3                    # one per structure
    assert low.text == nki.lower(k_recorded, x, policy={"fast_trace": False,
                                                        "steady_state": False}).text


# ---- per-instruction shortcuts of the traced path (docs/nki.md, "Outside the replay")

import sys                                                # noqa: E402

import ncsim.nki.isa as nisa                              # noqa: E402


def _lines_of_calls():
    """(cached line, Python's line) of the caller at several call sites, some in a loop."""
    def here():
        f = sys._getframe(1)
        return _core._lineno(f), f.f_lineno
    out = [here()]
    for _ in range(3):
        out.append(here())
        out.append(here())
    out.append(here())
    return out


def test_cached_line_is_python_s_line():
    got = _lines_of_calls() + _lines_of_calls()
    assert all(a == b for a, b in got), got
    assert len({b for _, b in got}) == 4                     # four call sites, four lines
    code = _lines_of_calls.__code__
    assert _core._CODES[id(code)][0] is code                 # kept per code object


@nki.jit
def k_psum_acc(a, b):
    """Matmuls accumulated in PSUM tiles (the common form, `ps[...] += nc_matmul(...)`),
    one masked, one into a tile another engine wrote first (both take the general path),
    and block views as operands."""
    K, M = a.shape
    _, N = b.shape
    out = nl.ndarray((M, N), dtype=nl.float32, buffer=nl.shared_hbm)
    at = nl.ndarray((K // 128, nl.par_dim(128), M), dtype=a.dtype, buffer=nl.sbuf)
    bt = nl.ndarray((K // 128, nl.par_dim(128), N), dtype=b.dtype, buffer=nl.sbuf)
    ip, im = nl.mgrid[0:128, 0:M]
    _, jn = nl.mgrid[0:128, 0:N]
    for k in nl.affine_range(K // 128):
        at[k, ip, im] = nl.load(a[k * 128 + ip, im])
        bt[k, ip, jn] = nl.load(b[k * 128 + ip, jn])
    ps = nl.zeros((M, N), dtype=nl.float32, buffer=nl.psum)
    for k in nl.affine_range(K // 128):
        ps[...] += nisa.nc_matmul(at[k, ip, im], bt[k, ip, jn])
    ps2 = nl.zeros((M, N), dtype=nl.float32, buffer=nl.psum)
    ps2[...] = nl.add(ps, 1.0)                                # written by VectorE first
    ps2[...] += nisa.nc_matmul(at[0, ip, im], bt[0, ip, jn])
    ps3 = nl.zeros((M, N), dtype=nl.float32, buffer=nl.psum)
    ps3[...] += nl.matmul(at[1, ip, im], bt[1, ip, jn], transpose_x=True,
                          mask=(nl.arange(N)[None, :] < N // 2))
    s = nl.add(nl.add(ps2, ps3), 0.0)
    nl.store(out, value=s)
    return out


def test_matmul_accumulation_shortcut_gives_the_reference_program(monkeypatch):
    """`ps[...] += nc_matmul(...)` is emitted by Tracer._matmul_acc, the other forms by the
    general path; the program and the result are the reference paths' and NumPy's."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    rng = np.random.default_rng(5)
    a = rng.random((512, 128), dtype=np.float32)
    b = rng.random((512, 256), dtype=np.float32)
    seen = []
    acc = _core.Tracer._matmul_acc

    def spy(self, dst, value):
        r = acc(self, dst, value)
        seen.append(r)
        return r
    with monkeypatch.context() as m:
        m.setattr(_core.Tracer, "_matmul_acc", spy)
        low = nki.lower(k_psum_acc, a, b)
    assert seen.count(True) >= 4 and seen.count(False) >= 1, seen
    assert low.text == nki.lower(k_psum_acc, a, b, policy={"fast_trace": False}).text
    out = np.asarray(nki.simulate_kernel(k_psum_acc, a, b))
    ref = a.T @ b + 1.0 + a[0:128].T @ b[0:128]
    half = a[128:256].T @ b[128:256]
    ref[:, :128] += half[:, :128]
    np.testing.assert_allclose(out, ref, rtol=1e-4)


@nki.jit
def k_acc_into_sbuf(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    t = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.sbuf)
    t[...] += nisa.nc_matmul(x, y)
    nl.store(out, value=t)
    return out


@nki.jit
def k_psum_operand(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    p = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
    p[...] += nisa.nc_matmul(x, y)
    q = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
    q[...] += nisa.nc_matmul(p, y)
    nl.store(out, value=q)
    return out


@nki.jit
def k_contraction_mismatch(a, b):
    out = nl.ndarray((128, 128), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b[0:64, :])
    p = nl.zeros((128, 128), dtype=nl.float32, buffer=nl.psum)
    p[...] += nisa.nc_matmul(x, y)
    nl.store(out, value=p)
    return out


def _errors_fast_and_reference(kernel, *args):
    """The NkiError messages of lowering kernel with the tracer's optimised paths and with
    its reference ones (each must fail)."""
    msgs = []
    for fast in (True, False):
        with pytest.raises(nki.NkiError) as e:
            nki.lower(kernel, *args, policy={"fast_trace": fast})
        msgs.append(str(e.value))
    return msgs


@pytest.mark.parametrize("kernel, code", [
    (k_acc_into_sbuf, "err_unsupported_memory"),
    (k_psum_operand, "err_unsupported_memory"),
    (k_contraction_mismatch, "err_num_partition_mismatch")])
def test_matmul_errors_are_the_general_path_s(monkeypatch, kernel, code):
    """Calls the shortcuts do not take raise the general path's errors, at the same line."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    a = np.zeros((128, 128), dtype=np.float32)
    msgs = _errors_fast_and_reference(kernel, a, a)
    assert code in msgs[0] and msgs[0] == msgs[1]


# ---- the twelfth session's shortcuts (docs/nki.md, "Outside the replay")

def _first_pass_state(monkeypatch, kernel, *args, general=False):
    """Lower; the first pass's block uses, counts per agent and tick, and the program text.
    general: psum[...] += nc_matmul(...) in a first pass through emit, not _emit_first."""
    from ncsim.nki import Kernel
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    got = {}
    trace = Kernel._trace
    n = [0]

    def spy_trace(*a):
        r = trace(*a)
        if a[5] is None:
            tr = r[0]
            got["uses"] = {k: list(v) for k, v in tr.uses.items()}
            got["count"], got["tick"] = list(tr.count), tr.tick
        return r

    def general_first(self, stat, mov, dst, acc):
        n[0] += 1
        self.emit("pe", "matmul , , , acc" if acc else "matmul , , ",
                  reads=[stat, mov, dst] if acc else [stat, mov], writes=[dst])
    first = _core.Tracer._emit_first

    def spy_first(self, *a):
        n[0] += 1
        return first(self, *a)
    with monkeypatch.context() as m:
        m.setattr(Kernel, "_trace", staticmethod(spy_trace))
        m.setattr(_core.Tracer, "_emit_first", general_first if general else spy_first)
        got["text"] = nki.lower(kernel, *args).text
    got["calls"] = n[0]
    return got


def test_first_pass_matmul_shortcut_keeps_emit_s_bookkeeping(monkeypatch):
    """In a first pass, `ps[...] += nc_matmul(...)` records its blocks' uses, the engine's
    count and the tick through Tracer._emit_first: the same as emit records, and the same
    program (the block operands of k_psum_acc and the fully optimised matmul's)."""
    from ncsim.nki.examples.catalog import BY_NAME
    rng = np.random.default_rng(5)
    a = rng.random((512, 128), dtype=np.float32)
    b = rng.random((512, 256), dtype=np.float32)
    case = BY_NAME["matmul_optimized"]
    kernel, _ = case.load()
    for k, args in ((k_psum_acc, (a, b)), (kernel, case.args("small", 0, timing=True))):
        fast = _first_pass_state(monkeypatch, k, *args)
        gen = _first_pass_state(monkeypatch, k, *args, general=True)
        assert fast["calls"] >= 4 and fast["calls"] == gen["calls"]
        assert fast["uses"] and fast["uses"] == gen["uses"]
        assert (fast["count"], fast["tick"]) == (gen["count"], gen["tick"])
        assert fast["text"] == gen["text"] == \
            nki.lower(k, *args, policy={"fast_trace": False}).text


@nki.jit
def k_repeated_subscripts(x):
    """The same subscripts (the same ints, the same `F * j + jf` objects) in every r
    iteration, a ragged last tile among them (masked: its bounds are checked after the
    mask), through a block tensor and a plain tile."""
    W = x.shape[1]
    T = (W + F - 1) // F
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:F]
    for r in nl.affine_range(3):
        b = nl.ndarray((T, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
        for j in nl.affine_range(T):
            b[j, ip, jf] = nl.load(x[ip, F * j + jf], mask=(F * j + jf < W))
        for j in nl.affine_range(T):
            t = nl.add(b[j, ip, jf], 1.0, mask=(F * j + jf < W))
            nl.store(out[ip, F * j + jf], value=t[ip, jf], mask=(F * j + jf < W))
    return out


def test_repeated_subscripts_take_the_key_memo(monkeypatch):
    """A subscript seen before is answered from its key (no pass over its structure): the
    program is the reference paths', NumPy's result, and only the first sight of each
    structure is computed in full."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    x = np.random.default_rng(4).random((128, 4 * F - 40), dtype=np.float32)
    n = {"entry": 0, "calls": 0}
    entry, memo = _core._adv_memo_entry, _core._adv_index_memo

    def spy_entry(*a):
        n["entry"] += 1
        return entry(*a)

    def spy_memo(*a):
        n["calls"] += 1
        return memo(*a)
    _core._ADV_MEMO.clear()
    with monkeypatch.context() as m:
        m.setattr(_core, "_adv_memo_entry", spy_entry)
        m.setattr(_core, "_adv_index_memo", spy_memo)
        low = nki.lower(k_repeated_subscripts, x)
    keyed = [k for d in _core._ADV_MEMO.values() for k in d
             if any(type(e) is float for e in k)]
    # every subscript's key is kept, and each comes back in the later r iterations (and
    # the second pass): answered from its key
    assert keyed and n["calls"] >= 3 * len(keyed)
    assert n["entry"] <= 6                                    # per structure, not per call
    assert all(e % 1 == 0.5 for k in keyed for e in k if type(e) is float)
    assert low.text == nki.lower(k_repeated_subscripts, x, policy={"fast_trace": False}).text
    out = np.asarray(nki.simulate_kernel(k_repeated_subscripts, x))
    np.testing.assert_allclose(out, x + 1.0, rtol=1e-6)


def test_key_memo_never_takes_an_all_int_subscript():
    """An all-int subscript is not looked up by key: its ints could equal a structure key's
    numbers (a structure entry would be read as a view's)."""
    tr = _tracer()
    _core._tracer[0] = tr
    try:
        t = tr.new_onchip("sbuf", _core.D.float32, (128, 64), 0)
        ip, jf = nl.mgrid[0:128, 0:64]
        v = t[ip, jf]
        m = t._lk
        sk = next(k for k in m if not any(type(e) is float for e in k))
        ints = tuple(e if e is not None else 0 for e in sk)
        assert _core._adv_index_memo(t, ints) is None          # to the general path
        assert t[ip, jf].off == v.off and t[ip, jf].shape == v.shape
    finally:
        _core._tracer[0] = None


def test_index_expression_sums_are_kept_and_unchanged():
    """Sums of an mgrid axis (numbered) are kept per int; those of an expression made for
    one subscript (`nl.arange(n)[None, :]`) are not (nothing would find them again)."""
    ip, jf = nl.mgrid[0:128, 0:64]
    a, b = 64 + jf, jf + 64
    assert a is b and a.const == 64 and a.coefs == jf.coefs and jf.const == 0
    assert (128 + jf) is not a and (128 + jf).const == 128
    assert a.uid is not None and a.uid % 1 == 0.5
    r = nl.arange(64)[None, :]
    assert (64 + r) is not (64 + r) and r.adds is None and (64 + r).const == 64


@nki.jit
def k_fresh_aranges(x):
    """Subscripts in the compiler-emitted style: a new `nl.arange(...)` expression in every
    subscript, so no subscript comes back with the same objects."""
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    b = nl.ndarray((4, nl.par_dim(128), F), dtype=x.dtype, buffer=nl.sbuf)
    for r in nl.affine_range(2):
        for j in nl.affine_range(4):
            b[j, nl.arange(128)[:, None], nl.arange(F)[None, :]] = nl.load(
                x[nl.arange(128)[:, None], F * j + nl.arange(F)[None, :]])
        for j in nl.affine_range(4):
            nl.store(out[nl.arange(128)[:, None], F * j + nl.arange(F)[None, :]],
                     value=nl.exp(b[j, nl.arange(128)[:, None], nl.arange(F)[None, :]]))
    return out


def test_fresh_expressions_are_not_keyed(monkeypatch):
    """Subscripts whose expressions are new objects are not looked up or kept by key (they
    cannot come back): the layouts' memos hold only their structures, and the program is
    the reference paths'."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    x = np.random.default_rng(8).random((128, 4 * F), dtype=np.float32)
    _core._ADV_MEMO.clear()
    low = nki.lower(k_fresh_aranges, x)
    assert _core._ADV_MEMO
    assert not [k for d in _core._ADV_MEMO.values() for k in d
                if any(type(e) is float for e in k)]
    assert low.text == nki.lower(k_fresh_aranges, x, policy={"fast_trace": False}).text


@nki.jit
def k_unmasked_after_masked(x):
    """The ragged last tile's subscript, masked, then the same subscript (the same key)
    without a mask: out of bounds there."""
    W = x.shape[1]
    T = (W + F - 1) // F
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.mgrid[0:128, 0:F]
    for j in nl.affine_range(T):
        t = nl.load(x[ip, F * j + jf], mask=(F * j + jf < W))
        nl.store(out[ip, F * j + jf], value=t, mask=(F * j + jf < W))
    for j in nl.affine_range(T):
        t = nl.load(x[ip, F * j + jf])
        nl.store(out[ip, F * j + jf], value=t)
    return out


def test_key_memo_keeps_the_bounds_to_check(monkeypatch):
    """A subscript answered from its key still checks its bounds once no mask applies: the
    reference paths' error, at the same line."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    x = np.zeros((128, 3 * F - 8), dtype=np.float32)
    msgs = []
    for fast in (True, False):
        with pytest.raises(nki.NkiError) as e:
            nki.lower(k_unmasked_after_masked, x, policy={"fast_trace": fast})
        msgs.append(str(e.value))
    assert "err_tensor_access_out_of_bound" in msgs[0] and msgs[0] == msgs[1]


def _second_pass_state(monkeypatch, kernel, *args, general=False):
    """Lower; the last pass's access log, nodes (engine, text, line, estimate, pin), counts
    and tick, and the program text. general: psum[...] += nc_matmul(...) with the access
    log through emit, not _emit_logged."""
    from ncsim.nki import Kernel
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    got = {}
    trace = Kernel._trace
    n = [0]

    def spy_trace(*a):
        r = trace(*a)
        tr = r[0]
        got["log"] = list(tr.acclog) if tr.acclog is not None else None
        got["nodes"] = [(nd.eng, nd.text, nd.line, nd.cost, nd.pin) for nd in tr.nodes]
        got["count"], got["tick"] = list(tr.count), tr.tick
        return r

    def through_emit(self, text, stat, mov, dst, acc):
        n[0] += 1
        self.emit("pe", text, reads=[stat, mov, dst] if acc else [stat, mov], writes=[dst])
    logged = _core.Tracer._emit_logged

    def spy_logged(self, *a):
        n[0] += 1
        return logged(self, *a)
    with monkeypatch.context() as m:
        m.setattr(Kernel, "_trace", staticmethod(spy_trace))
        m.setattr(_core.Tracer, "_emit_logged", through_emit if general else spy_logged)
        got["text"] = nki.lower(kernel, *args).text
    got["calls"] = n[0]
    return got


def test_logged_matmul_shortcut_keeps_emit_s_log_and_nodes(monkeypatch):
    """With the access log (the C passes), `ps[...] += nc_matmul(...)` is emitted by
    Tracer._emit_logged: the same log entries, nodes (text, line, estimate), counts and
    tick as through emit, and the reference paths' program."""
    from ncsim.nki import _native
    try:
        if not _native.enabled("auto"):
            pytest.skip("no libncsim: no access log")
    except (ValueError, ImportError):
        pytest.skip("no libncsim: no access log")
    from ncsim.nki.examples.catalog import BY_NAME
    rng = np.random.default_rng(6)
    a = rng.random((512, 128), dtype=np.float32)
    b = rng.random((512, 256), dtype=np.float32)
    case = BY_NAME["matmul_optimized"]
    kernel, _ = case.load()
    for k, args in ((k_psum_acc, (a, b)), (kernel, case.args("small", 0, timing=True))):
        fast = _second_pass_state(monkeypatch, k, *args)
        gen = _second_pass_state(monkeypatch, k, *args, general=True)
        assert fast["calls"] >= 4 and fast["calls"] == gen["calls"]
        assert fast["log"] and fast["log"] == gen["log"]
        assert fast["nodes"] == gen["nodes"]
        assert (fast["count"], fast["tick"]) == (gen["count"], gen["tick"])
        assert fast["text"] == gen["text"] == \
            nki.lower(k, *args, policy={"fast_trace": False}).text


# ---- element-wise accumulation into tiles (docs/nki.md, "Outside the replay")

@nki.jit
def k_tile_acc(a, b):
    """Element-wise `+=`, `-=`, `*=`, `/=` of whole tiles: into SBUF tiles, into blocks of a
    block tensor (written back, read later), into a PSUM tile from nl.zeros (lazily zeroed), from a matmul's PSUM result, and with a pending
    value (the general path)."""
    out = nl.ndarray((128, 256), dtype=nl.float32, buffer=nl.shared_hbm)
    x = nl.load(a)
    y = nl.load(b)
    t = nl.load(b)
    t[...] += y                                   # 2b
    t[...] -= nl.multiply(y, 0.5)                 # pending value: 1.5b
    blk = nl.zeros((2, nl.par_dim(128), 256), dtype=nl.float32, buffer=nl.sbuf)
    ip, jf = nl.mgrid[0:128, 0:256]
    for i in nl.affine_range(2):
        ps = nl.zeros((128, 256), dtype=nl.float32, buffer=nl.psum)
        ps[...] += nisa.nc_matmul(x, y)
        blk[i, ip, jf] += ps[ip, jf]              # a.T @ b
        blk[i, ip, jf] *= t                       # (a.T @ b) * 1.5b
    z = nl.zeros((128, 256), dtype=nl.float32, buffer=nl.psum)
    z[...] += t                                   # 1.5b, after the lazy zero's memset
    r = nl.add(blk[0, ip, jf], blk[1, ip, jf])
    r[...] /= nl.add(z, 1.0)
    w = nl.load(b)
    r[...] -= w
    nl.store(out, value=r)
    return out


def _k_tile_acc_ref(a, b):
    return 2.0 * (a.T @ b) * (1.5 * b) / (1.5 * b + 1.0) - b


# The spies are compiled under another file name: the tracer gives an instruction the line of
# the nearest frame in the kernel's file, which is this one.
_SPIES = {}
exec(compile('''
def make(assign, tt, got, general):
    def spy_assign(self, *a, **k):
        got["assign"] += 1
        return assign(self, *a, **k)

    def spy_tt(self, *a):
        if general:
            return False
        r = tt(self, *a)
        got["tt"] += r
        return r
    return spy_assign, spy_tt
''', "<spies>", "exec"), _SPIES)


def _acc_state(monkeypatch, kernel, args, policy, general):
    """Lower; the first pass's block uses, counts and tick, the last pass's access log,
    nodes, counts and tick, the text, the number of Tracer.assign calls and of _tt_acc's
    shortcuts. general: neither element-wise shortcut taken (Tracer._tt_acc declines, and
    no block view is remembered for Tensor.__setitem__'s write-back)."""
    from ncsim.nki import Kernel
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    got = {"assign": 0, "tt": 0}
    trace = Kernel._trace
    assign = _core.Tracer.assign
    tt = _core.Tracer._tt_acc

    def spy_trace(*a):
        r = trace(*a)
        tr = r[0]
        if a[5] is None:
            got["uses"] = {k: list(v) for k, v in tr.uses.items()}
            got["first"] = (list(tr.count), tr.tick)
        got["log"] = list(tr.acclog) if tr.acclog is not None else None
        got["nodes"] = [(nd.eng, nd.text, nd.line, nd.cost, nd.pin) for nd in tr.nodes]
        got["last"] = (list(tr.count), tr.tick)
        return r

    spy_assign, spy_tt = _SPIES["make"](assign, tt, got, general)
    with monkeypatch.context() as m:
        m.setattr(Kernel, "_trace", staticmethod(spy_trace))
        m.setattr(_core.Tracer, "assign", spy_assign)
        m.setattr(_core.Tracer, "_tt_acc", spy_tt)
        if general:
            m.setattr(_core, "_wref", lambda o: (lambda: None))
        low = nki.lower(kernel, *args, policy=policy)
    got["text"] = low.text
    return got


@pytest.mark.parametrize("engine", ["dve", "pool"])
def test_tile_accumulation_shortcuts_keep_the_general_path_s_state(monkeypatch, engine):
    """`t[...] += u` of two tiles (Tracer._tt_acc) and the write-back of `blk[key] += u` on a
    block tensor (Tensor.__setitem__, without subscripting blk again) leave the block uses,
    counts, tick, access log and nodes (engine, text, line, estimate) of the general path,
    and the reference paths' program; on k_tile_acc and the fully optimised matmul."""
    from ncsim.nki.examples.catalog import BY_NAME
    rng = np.random.default_rng(7)
    a = rng.random((128, 128), dtype=np.float32)
    b = rng.random((128, 256), dtype=np.float32)
    case = BY_NAME["matmul_optimized"]
    kernel, _ = case.load()
    pol = {"elementwise_engine": engine}
    for k, args, n_tt, n_wb in ((k_tile_acc, (a, b), 5, 2),
                                (kernel, case.args("small", 0, timing=True), 8, 8)):
        fast = _acc_state(monkeypatch, k, args, pol, False)
        gen = _acc_state(monkeypatch, k, args, pol, True)
        # per pass: the tile accumulations taken by _tt_acc, and the write-backs of
        # still-allocated blocks that no longer go through assign
        assert fast["tt"] >= n_tt and gen["tt"] == 0, (fast["tt"], gen["tt"])
        assert gen["assign"] - fast["assign"] >= n_wb, (gen["assign"], fast["assign"])
        for key in ("uses", "first", "log", "nodes", "last", "text"):
            assert fast[key] == gen[key], key
        assert fast["text"] == nki.lower(k, *args, policy=dict(pol, fast_trace=False)).text
    if engine == "pool":
        # the pool engine takes the SBUF-only adds; a PSUM operand moves it to dve
        engs = {nd[0] for nd in fast["nodes"]}
        assert _core.ENG_ID["pool"] in engs and _core.ENG_ID["dve"] in engs


def test_tile_accumulation_shortcuts_match_numpy(monkeypatch):
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    rng = np.random.default_rng(8)
    a = rng.random((128, 128), dtype=np.float32)
    b = rng.random((128, 256), dtype=np.float32)
    out = np.asarray(nki.simulate_kernel(k_tile_acc, a, b), np.float64)
    ref = _k_tile_acc_ref(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(out, ref, rtol=1e-4, atol=1e-4)


@nki.jit
def k_tile_acc_errors(a, which):
    t = nl.load(a)
    u = nl.load(a[:, 0:64])
    if which == 0:
        t[...] += a                                # an HBM operand
    elif which == 1:
        t[...] += u                                # shapes that do not broadcast
    else:
        blk = nl.zeros((2, nl.par_dim(128), 128), dtype=nl.float32, buffer=nl.sbuf)
        ip, jf = nl.mgrid[0:128, 0:128]
        blk[2, ip, jf] += t                        # a block out of bounds
    return a


@pytest.mark.parametrize("which, code", [(0, "err_unsupported_memory"),
                                         (1, "err_shape_mismatch"),
                                         (2, "err_tensor_access_out_of_bound")])
def test_tile_accumulation_errors_are_the_general_path_s(monkeypatch, which, code):
    """Cases the shortcuts do not take raise the general path's errors, at the same line."""
    monkeypatch.delenv("NCSIM_NKI_TRACE_ORACLE", raising=False)
    a = np.zeros((128, 128), dtype=np.float32)
    msgs = _errors_fast_and_reference(k_tile_acc_errors, a, which)
    assert code in msgs[0] and msgs[0] == msgs[1], msgs


def test_split_shape_memo_answers_only_tuples_of_ints():
    """split_shape keeps the answer for a tuple of plain ints; an equal tuple of other types
    (a bool equals 1, an np.int64 equals its int) or with a par_dim is split as before."""
    ref = _core._split_shape
    _core._SPLIT.clear()
    old = _core._fast[0]
    _core._fast[0] = True           # (the session's last lowering may have left it off)
    try:
        for shape in ((1, 512), (128, 512), (2, 4, 8)):
            assert _core.split_shape(shape) == ref(shape)
            assert _core.split_shape(shape) is _core._SPLIT[shape]      # the kept answer
        assert _core.split_shape((np.int64(128), 512)) == ((128, 512), 0)
        assert _core.split_shape((4, _core.par_dim(128), 8)) == ((4, 128, 8), 1)
        assert _core.split_shape([128, 512]) == ((128, 512), 0)
        for bad in ((True, 512), (128, 0), (np.True_, 512)):
            with pytest.raises(nki.NkiError) as e:
                _core.split_shape(bad)
            assert "err_invalid_shape" in str(e.value)
        assert set(_core._SPLIT) == {(1, 512), (128, 512), (2, 4, 8)}
    finally:
        _core._fast[0] = old
        _core._SPLIT.clear()
