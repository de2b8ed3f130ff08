"""NKI calls that ncsim composes or that the ALU gained (issue 24, item 2), against NumPy:
nl.cos, tan, floor, ceil, trunc, mod, fmod, rand (+ random_seed), nisa.range_select."""
import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl
from ncsim.nki.language import rand_base


def unary(fn):
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.store(out, value=fn(nl.load(a)))
        return out
    return k


X = np.linspace(-7.3, 7.3, 128 * 64, dtype=np.float32).reshape(128, 64)
X[0, :8] = [-0.0, 0.5, -0.5, 2.0, -2.0, 1e-30, -1e-30, 3.0e7]   # ties, tiny, beyond 2^24


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc"])
def test_rounding_is_exact(name):
    y = nki.simulate_kernel(unary(getattr(nl, name)), X)
    np.testing.assert_array_equal(y, getattr(np, name)(X))
    xi = (X * 10).astype(np.int32)
    np.testing.assert_array_equal(nki.simulate_kernel(unary(getattr(nl, name)), xi), xi)


def test_cos():
    y = nki.simulate_kernel(unary(nl.cos), X[1:])
    # sin(x + pi/2): x + pi/2 is rounded to fp32 first (|error| <= half an ulp of x + pi/2)
    np.testing.assert_allclose(y, np.cos(X[1:].astype(np.float64)), rtol=0, atol=1e-6)


def test_tan():
    x = X[1:]
    y = nki.simulate_kernel(unary(nl.tan), x)
    ref = np.tan(x.astype(np.float64))
    away = np.abs(np.cos(x.astype(np.float64))) > 0.1      # away from the poles
    np.testing.assert_allclose(y[away], ref[away], rtol=2e-5, atol=1e-6)


@pytest.mark.parametrize("b", [2.5, -2.5, 1.0, 0.3])
def test_mod_fmod_scalar(b):
    x = X[1:]
    np.testing.assert_array_equal(nki.simulate_kernel(unary(lambda t: nl.mod(t, b)), x),
                                  np.mod(x, np.float32(b)))
    np.testing.assert_array_equal(nki.simulate_kernel(unary(lambda t: nl.fmod(t, b)), x),
                                  np.fmod(x, np.float32(b)))


def test_mod_tiles_and_numpy_operator_names():
    @nki.jit
    def k(a, b):
        o1 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        o2 = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        ta, tb = nl.load(a), nl.load(b)
        nl.store(o1, value=nl.mod(ta, tb))
        nl.store(o2, value=nisa.tensor_tensor(ta, tb, op=np.fmod))
        return o1, o2
    rng = np.random.default_rng(3)
    a = rng.uniform(-50, 50, (128, 32)).astype(np.float32)
    b = rng.uniform(-5, 5, (128, 32)).astype(np.float32)
    y1, y2 = nki.simulate_kernel(k, a, b)
    np.testing.assert_array_equal(y1, np.mod(a, b))
    np.testing.assert_array_equal(y2, np.fmod(a, b))
    ai = rng.integers(-1000, 1000, (128, 32)).astype(np.int32)
    bi = rng.integers(1, 9, (128, 32)).astype(np.int32) * rng.choice([-1, 1], (128, 32)).astype(np.int32)
    y1, y2 = nki.simulate_kernel(k, ai, bi)
    np.testing.assert_array_equal(y1, np.mod(ai, bi))
    np.testing.assert_array_equal(y2, np.fmod(ai, bi))


def rand_ref(seed, call, P, n, bits):
    """The hash ncsim's nl.rand computes (docs/nki.md), in NumPy uint32 arithmetic."""
    x = (rand_base(seed, call, P * n) + np.arange(P * n, dtype=np.uint64)).astype(np.uint32)
    for k in range(3):
        x = x ^ (x >> np.uint32(16))
        if k < 2:
            x = (x.astype(np.uint64) * 0x45d9f3 & 0xFFFFFFFF).astype(np.uint32)
    return ((x >> np.uint32(32 - bits)).astype(np.float32) * np.float32(2.0 ** -bits)).reshape(P, n)


@nki.jit
def two_rands(a, seed):
    o1 = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    o2 = nl.ndarray((128, 512), nl.float32, buffer=nl.shared_hbm)
    if seed is not None:
        nl.random_seed(seed)
    nl.store(o1, value=nl.rand((128, 512), dtype=nl.float32))
    nl.store(o2, value=nl.rand((128, 512), dtype=nl.bfloat16))
    return o1, o2


def test_rand_values_and_distribution():
    a = np.zeros((1, 1), np.float32)
    y1, y2 = nki.simulate_kernel(two_rands, a, 5)
    np.testing.assert_array_equal(y1, rand_ref(5, 0, 128, 512, 24))
    np.testing.assert_array_equal(y2, rand_ref(5, 1, 128, 512, 8))
    for y in (y1, y2):
        assert y.min() >= 0 and y.max() < 1
        assert abs(y.mean() - 0.5) < 0.01 and abs(y.var() - 1 / 12) < 0.002
        # no structure between neighbours (partition rows, free columns)
        assert abs(np.corrcoef(y[:, :-1].ravel(), y[:, 1:].ravel())[0, 1]) < 0.02
        assert abs(np.corrcoef(y[:-1].ravel(), y[1:].ravel())[0, 1]) < 0.02
    assert abs(np.corrcoef(y1.ravel(), y2.ravel())[0, 1]) < 0.02      # two calls differ
    z1, _ = nki.simulate_kernel(two_rands, a, 6)
    assert not np.array_equal(z1, y1)                                  # the seed matters
    w1, _ = nki.simulate_kernel(two_rands, a, 5)
    np.testing.assert_array_equal(w1, y1)                              # deterministic


def test_rand_refuses_integer_types():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 4), nl.int32, buffer=nl.shared_hbm)
        nl.store(out, value=nl.rand((128, 4), dtype=nl.int32))
        return out
    with pytest.raises(nki.NkiError, match="err_unsupported_dtype"):
        nki.simulate_kernel(k, np.zeros((1, 1), np.float32))


@nki.jit
def range_sel(a, lo, hi, start, cmd):
    out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
    mx = nl.ndarray((a.shape[0], 1), nl.float32, buffer=nl.shared_hbm)
    t, l, h = nl.load(a), nl.load(lo), nl.load(hi)
    r = nl.full((a.shape[0], 1), -5.0, nl.float32, buffer=nl.sbuf)
    y = nisa.range_select(on_true_tile=t, comp_op0=np.greater_equal, comp_op1=np.less,
                          bound0=l, bound1=h, reduce_cmd=cmd, reduce_res=r, range_start=start,
                          on_false_value=nl.fp32.min)
    nl.store(out, value=y)
    nl.store(mx, value=r)
    return out, mx


@pytest.mark.parametrize("cmd", [nisa.reduce_cmd.reset_reduce, nisa.reduce_cmd.reduce])
def test_range_select(cmd):
    P, F, start = 128, 64, 3
    rng = np.random.default_rng(1)
    a = rng.standard_normal((P, F)).astype(np.float32)
    lo = rng.integers(0, 40, (P, 1)).astype(np.float32)
    hi = lo + rng.integers(1, 30, (P, 1)).astype(np.float32)
    y, mx = nki.simulate_kernel(range_sel, a, lo, hi, start, cmd)
    j = np.arange(F)[None, :] + start
    ref = np.where((j >= lo) & (j < hi), a, np.finfo(np.float32).min)
    np.testing.assert_array_equal(y, ref)
    want = ref.max(axis=1)
    if cmd == nisa.reduce_cmd.reduce:                 # accumulates onto reduce_res (-5)
        want = np.maximum(want, -5.0)
    np.testing.assert_array_equal(mx[:, 0], want)


def test_range_select_refuses_other_fill_values():
    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        nl.store(out, value=nisa.range_select(on_true_tile=t, comp_op0=np.less, comp_op1=np.less,
                                              bound0=3.0, bound1=5.0, on_false_value=0.0))
        return out
    with pytest.raises(nki.NkiError, match="fp32.min"):
        nki.simulate_kernel(k, X)


def test_calls_still_refused_say_why():
    import ncsim.nki.compiler as ncc

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        nl.atomic_rmw(out[0:128, 0:4], value=nl.load(a[0:128, 0:4]), op=np.add)
        return out
    with pytest.raises(nki.NkiError, match="indirect"):
        nki.simulate_kernel(k, X)



def test_direct_allocation():
    """ncc allocations run at the places they give (test_nki_direct_alloc.py has the rest),
    their arguments are checked, and initial values are refused as NKI does."""
    import ncsim.nki.compiler as ncc

    @nki.jit
    def k(a):
        out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
        t = nl.ndarray((2, nl.par_dim(128), 64), nl.float32,
                       buffer=ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(2,)))
        e = nl.ndarray((128, 64), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=512))
        ps = nl.ndarray((128, 64), nl.float32, buffer=ncc.psum.mod_alloc(base_bank=2))
        for i in nl.affine_range(2):
            t[i] = nl.load(a[:, 64 * i:64 * (i + 1)])
        ps[...] = nl.add(t[0], t[1])
        e[...] = nl.exp(ps)
        nl.store(out[:, 0:64], value=e)
        nl.store(out[:, 64:128], value=t[1])
        return out
    x = np.linspace(-2, 2, 128 * 128, dtype=np.float32).reshape(128, 128)
    y = nki.simulate_kernel(k, x)
    np.testing.assert_allclose(y[:, :64], np.exp(x[:, :64] + x[:, 64:]), rtol=1e-6)
    np.testing.assert_array_equal(y[:, 64:], x[:, 64:])
    assert "ps:fp32@0:128+4096[" in nki.lower(k, x).text        # bank 2

    for bad, needle in [(lambda: ncc.sbuf.mod_alloc(base_addr=-4), "base_addr"),
                        (lambda: ncc.sbuf.mod_alloc(base_addr=0, num_free_tiles=(0,)), "num_free_tiles"),
                        (lambda: ncc.psum.mod_alloc(base_bank=8), "base_bank"),
                        (lambda: ncc.sbuf.alloc(3), "function"),
                        (lambda: nl.zeros((128, 4), nl.float32, buffer=ncc.sbuf.mod_alloc(base_addr=0)),
                         "initial value")]:
        @nki.jit
        def kb(a, bad=bad):
            out = nl.ndarray(a.shape, a.dtype, buffer=nl.shared_hbm)
            bad()
            return out
        with pytest.raises(nki.NkiError, match=needle):
            nki.simulate_kernel(kb, X)


def _erf(t):
    import math
    return np.vectorize(math.erf)(t)


def _sig(t):
    return 1 / (1 + np.exp(-t))


@pytest.mark.parametrize("name, ref", [
    ("gelu_dx", lambda t: 0.5 * (1 + _erf(t / np.sqrt(2))) + t * np.exp(-t * t / 2) / np.sqrt(2 * np.pi)),
    ("silu_dx", lambda t: _sig(t) * (1 + t * (1 - _sig(t)))),
    ("erf_dx", lambda t: 2 / np.sqrt(np.pi) * np.exp(-t * t)),
])
def test_activation_derivatives(name, ref):
    x = np.linspace(-6, 6, 128 * 32, dtype=np.float32).reshape(128, 32)
    y = nki.simulate_kernel(unary(getattr(nl, name)), x)
    np.testing.assert_allclose(y, ref(x.astype(np.float64)), rtol=1e-5, atol=1e-6)


def test_static_cast_and_finfo():
    y = nki.simulate_kernel(unary(lambda t: nl.static_cast(t, nl.int32)), X[1:] * 3)
    np.testing.assert_array_equal(y, np.rint(X[1:] * 3))     # float to int rounds to nearest even
    assert nl.finfo(nl.bfloat16).max == float(np.float32(3.3895313892515355e38))
    assert nl.finfo(nl.float16).max == float(np.finfo(np.float16).max)
    assert nl.finfo(nl.float32).eps == float(np.finfo(np.float32).eps)


def test_composed_calls_are_ncsim_check_clean():
    """The instructions the compositions emit are ordered by semaphores: no race, no
    uninitialised read (ncsim check)."""
    for fn in (nl.floor, nl.ceil, nl.trunc, nl.cos, nl.tan, nl.gelu_dx,
               lambda t: nl.mod(t, 2.5), lambda t: nl.fmod(t, -1.5)):
        assert nki.check(unary(fn), X) == []
    assert nki.check(two_rands, np.zeros((1, 1), np.float32), 5) == []
    P, F = 128, 64
    a = np.random.default_rng(1).standard_normal((P, F)).astype(np.float32)
    lo = np.full((P, 1), 3, np.float32)
    assert nki.check(range_sel, a, lo, lo + 10, 3, nisa.reduce_cmd.reduce) == []


def test_activation_reduce_chain():
    """nisa.activation's accumulator registers chained across instructions: reset_reduce, then
    reduce with the result in reduce_res (the sum of both instructions' outputs)."""
    @nki.jit
    def k(a, b):
        out = nl.ndarray((128, 1), nl.float32, buffer=nl.shared_hbm)
        ta, tb = nl.load(a), nl.load(b)
        r = nl.ndarray((128, 1), nl.float32, buffer=nl.sbuf)
        nisa.activation(np.exp, ta, reduce_cmd=nisa.reduce_cmd.reset_reduce)
        nisa.activation(np.exp, tb, reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=r,
                        reduce_op=np.add)
        nl.store(out, value=r)
        return out
    a = np.random.default_rng(0).standard_normal((128, 32)).astype(np.float32)
    b = np.random.default_rng(1).standard_normal((128, 32)).astype(np.float32)
    y = nki.simulate_kernel(k, a, b)
    np.testing.assert_allclose(y[:, 0], np.exp(a).sum(1) + np.exp(b).sum(1), rtol=2e-6)


@pytest.mark.parametrize("r0, r1", [(False, False), (True, False), (False, True), (True, True)])
def test_scalar_tensor_tensor_reversed(r0, r1):
    @nki.jit
    def k(a, b):
        out = nl.ndarray(a.shape, nl.float32, buffer=nl.shared_hbm)
        ta, tb = nl.load(a), nl.load(b)
        nl.store(out, value=nisa.scalar_tensor_tensor(data=ta, op0=np.subtract, operand0=2.5,
                                                      op1=np.divide, operand1=tb,
                                                      reverse0=r0, reverse1=r1))
        return out
    rng = np.random.default_rng(4)
    a = rng.uniform(-3, 3, (128, 16)).astype(np.float32)
    b = rng.uniform(1, 3, (128, 16)).astype(np.float32)
    t = (np.float32(2.5) - a) if r0 else (a - np.float32(2.5))
    want = (b / t) if r1 else (t / b)
    np.testing.assert_allclose(nki.simulate_kernel(k, a, b), want, rtol=1e-6)
    assert nki.check(k, a, b) == []
