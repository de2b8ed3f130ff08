"""Every nl / nisa call against NumPy, one small kernel each."""
import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

RNG = np.random.default_rng(3)


def rand(*shape, lo=-1.0, hi=1.0, dtype=np.float32):
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def run1(fn, *arrays, out_shape=None, out_dtype=None):
    """Run fn(tiles...) -> tile in a kernel that loads the arrays and stores the result."""
    @nki.jit
    def k(*ins):
        tiles = [nl.load(t) for t in ins]
        r = fn(*tiles)
        out = nl.ndarray(r.shape if out_shape is None else out_shape,
                         r.dtype if out_dtype is None else out_dtype, buffer=nl.shared_hbm)
        nl.store(out, value=r)
        return out
    r = nki.simulate_kernel(k, *arrays)
    assert nki.check(k, *arrays) == []
    return r, k


A = rand(64, 48)
B = rand(64, 48)
POS = rand(64, 48, lo=0.5, hi=2.0)
COL = rand(64, 1)

BINARY = [
    (nl.add, np.add), (nl.subtract, np.subtract), (nl.multiply, np.multiply),
    (nl.divide, np.divide), (nl.maximum, np.maximum), (nl.minimum, np.minimum),
]


@pytest.mark.parametrize("f,ref", BINARY, ids=[f.__name__ for f, _ in BINARY])
def test_binary_tile_tile(f, ref):
    r, _ = run1(f, A, B)
    np.testing.assert_allclose(r, ref(A, B), rtol=1e-6)


@pytest.mark.parametrize("f,ref", BINARY, ids=[f.__name__ for f, _ in BINARY])
def test_binary_tile_column(f, ref):
    r, _ = run1(f, A, COL)
    np.testing.assert_allclose(r, ref(A, COL), rtol=1e-6)


@pytest.mark.parametrize("f,ref", BINARY, ids=[f.__name__ for f, _ in BINARY])
def test_binary_scalar(f, ref):
    r, _ = run1(lambda x: f(x, 0.75), A)
    np.testing.assert_allclose(r, ref(A, np.float32(0.75)), rtol=1e-6)
    r, _ = run1(lambda x: f(0.75, x), A)
    np.testing.assert_allclose(r, ref(np.float32(0.75), A), rtol=1e-6)


def test_operators_and_power():
    r, _ = run1(lambda x, y: (x - y) * 2.0 + 1.0 / y, A, POS)
    np.testing.assert_allclose(r, (A - POS) * 2 + 1 / POS, rtol=1e-5)
    r, _ = run1(lambda x, y: nl.power(x, y), POS, B)
    np.testing.assert_allclose(r, np.power(POS, B), rtol=1e-5)


CMP = [(nl.equal, np.equal), (nl.not_equal, np.not_equal), (nl.greater, np.greater),
       (nl.greater_equal, np.greater_equal), (nl.less, np.less), (nl.less_equal, np.less_equal)]


@pytest.mark.parametrize("f,ref", CMP, ids=[f.__name__ for f, _ in CMP])
def test_comparisons(f, ref):
    b = B.copy()
    b[::3] = A[::3]
    r, _ = run1(lambda x, y: f(x, y, dtype=nl.float32), A, b)
    np.testing.assert_array_equal(r, ref(A, b).astype(np.float32))


def test_logical_and_bitwise():
    x = RNG.integers(0, 100, size=(32, 16)).astype(np.int32)
    y = RNG.integers(0, 100, size=(32, 16)).astype(np.int32)
    for f, ref in [(nl.bitwise_and, np.bitwise_and), (nl.bitwise_or, np.bitwise_or),
                   (nl.bitwise_xor, np.bitwise_xor)]:
        r, _ = run1(f, x, y)
        np.testing.assert_array_equal(r, ref(x, y))
    r, _ = run1(lambda a: nl.left_shift(a, 3), x)
    np.testing.assert_array_equal(r, x << 3)
    r, _ = run1(lambda a: nl.right_shift(a, 2), x)
    np.testing.assert_array_equal(r, x >> 2)
    r, _ = run1(lambda a: nl.invert(a), x)
    np.testing.assert_array_equal(r, ~x)
    r, _ = run1(lambda a, b: nl.logical_and(a > 50, b > 50, dtype=nl.int32), x, y)
    np.testing.assert_array_equal(r, ((x > 50) & (y > 50)).astype(np.int32))
    r, _ = run1(lambda a: nl.logical_not(a, dtype=nl.int32), (x > 50).astype(np.int32))
    np.testing.assert_array_equal(r, (x <= 50).astype(np.int32))


ACT = [(nl.exp, np.exp, A), (nl.log, np.log, POS), (nl.sqrt, np.sqrt, POS),
       (nl.rsqrt, lambda v: 1 / np.sqrt(v), POS), (nl.reciprocal, lambda v: 1 / v, POS),
       (nl.tanh, np.tanh, A), (nl.sigmoid, lambda v: 1 / (1 + np.exp(-v)), A),
       (nl.relu, lambda v: np.maximum(v, 0), A), (nl.silu, lambda v: v / (1 + np.exp(-v)), A),
       (nl.softplus, lambda v: np.log1p(np.exp(v)), A), (nl.square, np.square, A),
       (nl.abs, np.abs, A), (nl.sign, np.sign, A), (nl.sin, np.sin, A), (nl.arctan, np.arctan, A),
       (nl.negative, np.negative, A),
       (nl.gelu, lambda v: 0.5 * v * (1 + np.vectorize(__import__("math").erf)(v / np.sqrt(2))), A),
       (nl.erf, np.vectorize(__import__("math").erf), A),
       (nl.mish, lambda v: v * np.tanh(np.log1p(np.exp(v))), A)]


@pytest.mark.parametrize("f,ref,x", ACT, ids=[a[0].__name__ for a in ACT])
def test_unary(f, ref, x):
    r, _ = run1(f, x)
    np.testing.assert_allclose(r, ref(x).astype(np.float32), rtol=2e-6, atol=1e-6)


RED = [(nl.sum, np.sum), (nl.max, np.max), (nl.min, np.min), (nl.mean, np.mean), (nl.prod, np.prod)]


@pytest.mark.parametrize("f,ref", RED, ids=[f.__name__ for f, _ in RED])
def test_reductions(f, ref):
    x = rand(64, 6, 8, lo=0.5, hi=1.5)
    r, _ = run1(lambda t: f(t, axis=[1, 2]), x, out_shape=(64,))
    np.testing.assert_allclose(r, ref(x, axis=(1, 2)), rtol=1e-5)
    r, _ = run1(lambda t: f(t, axis=2, keepdims=True), x)
    np.testing.assert_allclose(r, ref(x, axis=2, keepdims=True), rtol=1e-5)
    r, _ = run1(lambda t: f(t, axis=[1]), x)         # a non-innermost axis
    np.testing.assert_allclose(r, ref(x, axis=1), rtol=1e-5)


def test_var_all():
    r, _ = run1(lambda t: nl.var(t, axis=[1]), rand(32, 1100), out_shape=(32,))
    x = rand(32, 1100)
    r, _ = run1(lambda t: nl.var(t, axis=[1]), x, out_shape=(32,))
    np.testing.assert_allclose(r, x.var(axis=1), rtol=1e-4)
    y = (rand(16, 8) > -0.8).astype(np.float32)
    r, _ = run1(lambda t: nl.all(t, axis=[1], dtype=nl.float32), y, out_shape=(16,))
    np.testing.assert_array_equal(r, y.all(axis=1).astype(np.float32))


def test_matmul_both_forms_and_transpose():
    x, w = rand(64, 128), rand(128, 256)
    r, _ = run1(lambda a, b: nl.copy(nl.matmul(a, b)), x, w)            # transpose_x=False
    np.testing.assert_allclose(r, x @ w, rtol=1e-5, atol=1e-5)
    xt = np.ascontiguousarray(x.T)
    r, _ = run1(lambda a, b: nl.copy(nl.matmul(a, b, transpose_x=True)), xt, w)
    np.testing.assert_allclose(r, x @ w, rtol=1e-5, atol=1e-5)
    r, _ = run1(lambda a: nl.copy(nl.transpose(a)), x)
    np.testing.assert_array_equal(r, x.T)
    r, _ = run1(lambda a: nl.copy(nisa.nc_transpose(a, engine=nisa.vector_engine)), rand(32, 20))


def test_copy_where_broadcast_expand():
    r, _ = run1(lambda a: nl.copy(a, dtype=nl.float16), A)
    np.testing.assert_array_equal(r, A.astype(np.float16))
    r, _ = run1(lambda c, a, b: nl.where(c, a, b), (A > 0).astype(np.float32), A, B)
    np.testing.assert_array_equal(r, np.where(A > 0, A, B))
    r, _ = run1(lambda c, a: nl.where(c, a, -5.0), (A > 0).astype(np.float32), A)
    np.testing.assert_array_equal(r, np.where(A > 0, A, -5.0))
    row = rand(1, 48)
    r, _ = run1(lambda g: nl.copy(g.broadcast_to((64, 48))), row)
    np.testing.assert_array_equal(r, np.broadcast_to(row, (64, 48)))
    r, _ = run1(lambda a, g: nl.multiply(a, g), A, row)
    np.testing.assert_allclose(r, A * row, rtol=1e-6)
    r, _ = run1(lambda c: nl.copy(c.broadcast_to((64, 48))), COL)
    np.testing.assert_array_equal(r, np.broadcast_to(COL, (64, 48)))


def test_softmax_rmsnorm_dropout():
    x = rand(64, 200, lo=-3, hi=3)
    r, _ = run1(lambda t: nl.softmax(t, axis=1), x)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(r, e / e.sum(1, keepdims=True), rtol=1e-5, atol=1e-7)
    w = rand(1, 200)
    r, _ = run1(lambda t, g: nl.rms_norm(t, g, axis=1, n=200), x, w)
    np.testing.assert_allclose(r, x / np.sqrt((x * x).mean(1, keepdims=True) + 1e-6) * w, rtol=1e-4)
    r, _ = run1(lambda t: nl.dropout(t, 0.0), x)
    np.testing.assert_array_equal(r, x)
    r, _ = run1(lambda t: nl.dropout(t, 1.0), x)
    np.testing.assert_array_equal(r, np.zeros_like(x))


def test_creation():
    @nki.jit
    def k(a):
        out = nl.ndarray((3, 32, 16), nl.float32, buffer=nl.shared_hbm)
        z = nl.zeros((32, 16), nl.float32)
        o = nl.ones((32, 16), nl.float32)
        f = nl.full((32, 16), 2.5, nl.float32)
        e = nl.zeros_like(z)
        e[...] = nl.add(o, f)
        nl.store(out[0], value=z)
        nl.store(out[1], value=e)
        nl.store(out[2], value=nl.load(a))
        return out
    a = rand(32, 16)
    r = nki.simulate_kernel(k, a)
    np.testing.assert_array_equal(r[0], 0)
    np.testing.assert_array_equal(r[1], 3.5)
    np.testing.assert_array_equal(r[2], a)


def test_shared_constant_and_identity():
    c = np.arange(64, dtype=np.float32).reshape(8, 8)

    @nki.jit
    def k(a):
        out = nl.ndarray((8, 8), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(nl.shared_constant(c))
        i = nl.load(nl.shared_identity_matrix(8, dtype=nl.float32))
        nl.store(out, value=t + i + nl.load(a))
        return out
    a = rand(8, 8)
    np.testing.assert_allclose(nki.simulate_kernel(k, a), c + np.eye(8) + a, rtol=1e-6)


def test_indexing_strided_and_transposed():
    x = rand(16, 12)

    @nki.jit
    def k(a):
        out = nl.ndarray((16, 6), nl.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((12, 16), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        ip, jf = nl.arange(16)[:, None], nl.arange(6)[None, :]
        nl.store(out, value=nl.copy(t[ip, 2 * jf + 1]))
        i2, j2 = nl.mgrid[0:16, 0:12]
        nl.store(out2[j2, i2], value=t[i2, j2])       # transposed store (swapped roles)
        return out, out2
    r, r2 = nki.simulate_kernel(k, x)
    np.testing.assert_array_equal(r, x[:, 1::2])
    np.testing.assert_array_equal(r2, x.T)


def test_ds_and_block_dims():
    x = rand(4 * 32, 20)

    @nki.jit
    def k(a):
        out = nl.ndarray((32, 20), nl.float32, buffer=nl.shared_hbm)
        blk = nl.ndarray((4, nl.par_dim(32), 20), nl.float32, buffer=nl.sbuf)
        for b in nl.affine_range(4):
            blk[b] = nl.load(a[nl.ds(b * 32, 32), :])
        acc = nl.zeros((32, 20), nl.float32)
        for b in nl.sequential_range(4):
            acc[...] = nl.add(acc, blk[b])
        nl.store(out, value=acc)
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, x), x.reshape(4, 32, 20).sum(0), rtol=1e-5)


# ---------------------------------------------------------------- nisa

def test_nisa_activation_scale_bias_reduce():
    x, s, b = rand(64, 40), rand(64, 1), rand(64, 1)

    @nki.jit
    def k(a, sc, bi):
        out = nl.ndarray((64, 40), nl.float32, buffer=nl.shared_hbm)
        red = nl.ndarray((64, 1), nl.float32, buffer=nl.shared_hbm)
        rr = nl.ndarray((64, 1), nl.float32)
        t = nisa.activation(np.exp, nl.load(a), scale=nl.load(sc), bias=nl.load(bi),
                            reduce_op=np.add, reduce_res=rr)
        nl.store(out, value=t)
        nl.store(red, value=rr)
        return out, red
    r, red = nki.simulate_kernel(k, x, s, b)
    ref = np.exp(x * s + b)
    np.testing.assert_allclose(r, ref, rtol=1e-5)
    np.testing.assert_allclose(red[:, 0], ref.sum(1), rtol=1e-5)


def test_nisa_tensor_scalar_tensor_tensor_stt():
    x, y, c = rand(32, 24), rand(32, 24), rand(32, 1)
    r, _ = run1(lambda a, v: nisa.tensor_scalar(a, np.subtract, v, op1=np.multiply, operand1=3.0), x, c)
    np.testing.assert_allclose(r, (x - c) * 3, rtol=1e-6)
    r, _ = run1(lambda a, v: nisa.tensor_scalar(a, np.subtract, v, reverse0=True), x, c)
    np.testing.assert_allclose(r, c - x, rtol=1e-6)
    r, _ = run1(lambda a, b: nisa.tensor_tensor(a, b, op=np.multiply), x, y)
    np.testing.assert_allclose(r, x * y, rtol=1e-6)
    r, _ = run1(lambda a, b, v: nisa.scalar_tensor_tensor(data=a, op0=np.add, operand0=v,
                                                          op1=np.multiply, operand1=b), x, y, c)
    np.testing.assert_allclose(r, (x + c) * y, rtol=1e-6)


def test_nisa_reduce_scan_reciprocal():
    x, y = rand(32, 64, lo=0.1, hi=1), rand(32, 64)
    r, _ = run1(lambda a: nisa.tensor_reduce(np.max, a, axis=(1,), negate=True), x, out_shape=(32,))
    np.testing.assert_allclose(r, -x.max(1), rtol=1e-6)
    r, _ = run1(lambda a, b: nisa.tensor_tensor_scan(a, b, initial=0.5, op0=np.multiply, op1=np.add), x, y)
    ref = np.zeros_like(x)
    h = np.full(32, 0.5, np.float32)
    for i in range(64):
        h = x[:, i] * h + y[:, i]
        ref[:, i] = h
    np.testing.assert_allclose(r, ref, rtol=1e-5)
    r, _ = run1(lambda a: nisa.reciprocal(a), x)
    np.testing.assert_allclose(r, 1 / x, rtol=1e-6)


def test_nisa_bn_stats_aggr():
    x = rand(32, 1000)

    @nki.jit
    def k(a):
        out = nl.ndarray((32, 2), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        st = nl.ndarray((32, 12), nl.float32)
        ip = nl.arange(32)[:, None]
        for j in nl.affine_range(2):
            f = nl.arange(512)[None, :]
            st[ip, j * 6 + nl.arange(6)[None, :]] = nisa.bn_stats(t[ip, j * 512 + f], mask=(j * 512 + f < 1000),
                                                                 dtype=nl.float32)
        nl.store(out, value=nisa.bn_aggr(st))
        return out
    r = nki.simulate_kernel(k, x)
    np.testing.assert_allclose(r[:, 0], x.mean(1), rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(r[:, 1], x.var(1), rtol=1e-4)
    assert nki.check(k, x) == []


def test_nisa_iota_affine_select_memset_copy():
    @nki.jit
    def k(a):
        out = nl.ndarray((16, 8), nl.int32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((16, 16), nl.float32, buffer=nl.shared_hbm)
        i = nisa.iota(5 + 2 * nl.arange(16)[:, None] + 3 * nl.arange(8)[None, :], dtype=nl.int32)
        nl.store(out, value=i)
        ip, jf = nl.mgrid[0:16, 0:16]
        t = nl.load(a)
        s = nisa.affine_select(ip >= jf, t, -9984.0)
        m = nisa.memset((16, 16), 1.0, nl.float32)
        nl.store(out2, value=nisa.tensor_copy(s) + m)
        return out, out2
    x = rand(16, 16)
    r, r2 = nki.simulate_kernel(k, x)
    np.testing.assert_array_equal(r, 5 + 2 * np.arange(16)[:, None] + 3 * np.arange(8)[None, :])
    np.testing.assert_array_equal(r2, np.where(np.tril(np.ones((16, 16))) > 0, x, -9984.0) + 1)


def test_nisa_partition_reduce_max8_select():
    x = rand(32, 16)
    r, _ = run1(lambda a: nisa.tensor_partition_reduce(np.add, a), x)
    np.testing.assert_allclose(r[0], x.sum(0), rtol=1e-5)
    r, _ = run1(lambda a: nisa.max8(src=a), x)
    np.testing.assert_array_equal(r, -np.sort(-x, axis=1)[:, :8])

    @nki.jit
    def k(a, p):
        out = nl.ndarray((32, 16), nl.float32, buffer=nl.shared_hbm)
        d = nl.zeros((32, 16), nl.float32)
        nisa.tensor_copy_predicated(src=nl.load(a), dst=d, predicate=nl.load(p))
        nl.store(out, value=d)
        return out
    pr = (x > 0).astype(np.uint8)
    np.testing.assert_array_equal(nki.simulate_kernel(k, x, pr), np.where(pr > 0, x, 0))


def test_nisa_nc_matmul_psum_accumulate():
    a, b = rand(256, 64), rand(256, 300)

    @nki.jit
    def k(lhsT, rhs):
        out = nl.ndarray((64, 300), nl.float32, buffer=nl.shared_hbm)
        ps = nl.zeros((64, 300), nl.float32, buffer=nl.psum)
        for kk in nl.affine_range(2):
            ps[...] += nisa.nc_matmul(nl.load(lhsT[kk * 128:(kk + 1) * 128, :]),
                                      nl.load(rhs[kk * 128:(kk + 1) * 128, :]))
        nl.store(out, value=nl.copy(ps))
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, a, b), a.T @ b, rtol=1e-5, atol=1e-5)
    assert nki.check(k, a, b) == []


def test_nisa_dma_copy_and_load_transpose():
    x = rand(64, 32)

    @nki.jit
    def k(a):
        out = nl.ndarray((64, 32), nl.float32, buffer=nl.shared_hbm)
        out2 = nl.ndarray((32, 64), nl.float32, buffer=nl.shared_hbm)
        nisa.dma_copy(dst=out, src=a)
        nl.store(out2, value=nl.load_transpose2d(a))
        return out, out2
    r, r2 = nki.simulate_kernel(k, x)
    np.testing.assert_array_equal(r, x)
    np.testing.assert_array_equal(r2, x.T)


def test_dtypes_round_trip():
    for dt, npdt in [(nl.bfloat16, np.float32), (nl.float16, np.float16), (nl.int8, np.int8),
                     (nl.uint16, np.uint16), (nl.int32, np.int32), (nl.float8_e4m3, np.float32)]:
        x = np.arange(32 * 4).reshape(32, 4).astype(npdt) % 16  # exact in every type

        @nki.jit
        def k(a):
            out = nl.ndarray((32, 4), dt, buffer=nl.shared_hbm)
            nl.store(out, value=nl.copy(nl.load(a), dtype=dt))
            return out
        r = nki.simulate_kernel(k, x.astype(np.float32))
        np.testing.assert_array_equal(r.astype(np.float32), x.astype(np.float32))


def test_nisa_activation_reduce_cmd_chain():
    x = rand(32, 40)

    @nki.jit
    def k(a):
        out = nl.ndarray((32, 1), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a)
        rr = nl.ndarray((32, 1), nl.float32)
        e1 = nisa.activation(np.exp, t[:, 0:20], reduce_cmd=nisa.reduce_cmd.reset_reduce)
        e2 = nisa.activation(np.exp, t[:, 20:40], reduce_cmd=nisa.reduce_cmd.reduce, reduce_res=rr)
        nl.store(out, value=rr)
        return out
    np.testing.assert_allclose(nki.simulate_kernel(k, x)[:, 0], np.exp(x).sum(1), rtol=1e-5)
    assert nki.check(k, x) == []


def _engine_of(text, opcode_start):
    """The engines whose streams hold a line starting with opcode_start."""
    eng, found = None, set()
    for ln in text.splitlines():
        if ln.startswith(".engine"):
            eng = ln.split()[1]
        elif ln.strip().startswith(opcode_start):
            found.add(eng)
    return found


def test_nisa_reciprocal_engine_follows_the_act_table_set():
    """nisa.reciprocal runs on ScalarE after a sqrt (its table set holds reciprocal: no
    switch; the adamw profile), on VectorE after an exp (silu's) or with no activation before
    it; reciprocal_engine fixes either engine."""
    x = rand(64, 48, lo=0.5, hi=2.0)

    def after_sqrt(t):
        return nisa.reciprocal(nisa.activation(np.sqrt, t, scale=2.0))

    def after_exp(t):
        return nisa.reciprocal(nisa.activation(np.exp, t))

    r, k = run1(after_sqrt, x)
    np.testing.assert_allclose(r, 1 / np.sqrt(2 * x), rtol=2e-6)
    text = nki.lower(k, x).text
    assert "reciprocal" in text and _engine_of(text, "activate") == {"act"}
    assert not _engine_of(text, "reciprocal ")                  # no VectorE reciprocal
    assert sum(ln.strip().startswith("activate") for ln in text.splitlines()) == 2
    # the switch puts it back on VectorE
    low = nki.lower(k, x, policy={"reciprocal_engine": "dve"})
    assert _engine_of(low.text, "reciprocal ") == {"dve"}
    np.testing.assert_allclose(nki.simulate_kernel(k, x, policy={"reciprocal_engine": "dve"}),
                               1 / np.sqrt(2 * x), rtol=2e-6)

    r, k = run1(after_exp, x)
    np.testing.assert_allclose(r, 1 / np.exp(x), rtol=2e-6)
    assert _engine_of(nki.lower(k, x).text, "reciprocal ") == {"dve"}
    low = nki.lower(k, x, policy={"reciprocal_engine": "act"})
    assert not _engine_of(low.text, "reciprocal ")
    assert nki.check(k, x, policy={"reciprocal_engine": "act"}) == []
    np.testing.assert_allclose(nki.simulate_kernel(k, x, policy={"reciprocal_engine": "act"}),
                               1 / np.exp(x), rtol=2e-6)


def test_tensor_scalar_engine_immediate_vs_per_partition():
    """Tile-scalar arithmetic with an immediate goes to ScalarE (scalar_op_engine, the adamw
    and silu profiles), with a per-partition [P, 1] operand to VectorE
    (per_partition_op_engine, the LayerNorm tutorial's (x - mean) * rstd)."""
    x, m, r = rand(64, 48), rand(64, 1), rand(64, 1, lo=0.5, hi=2.0)

    def imm(t):
        return nl.add(t, 2.0)

    def col(t, mm, rr):
        return nisa.tensor_scalar(t, np.subtract, mm, op1=np.multiply, operand1=rr)

    def col_nl(t, mm):
        return nl.subtract(t, mm)

    res, k = run1(imm, x)
    np.testing.assert_allclose(res, x + 2.0, rtol=1e-6)
    assert _engine_of(nki.lower(k, x).text, "tensor_scalar") == {"act"}
    res, k = run1(col, x, m, r)
    np.testing.assert_allclose(res, (x - m) * r, rtol=1e-6)
    assert _engine_of(nki.lower(k, x, m, r).text, "tensor_scalar") == {"dve"}
    low = nki.lower(k, x, m, r, policy={"per_partition_op_engine": "act"})
    assert _engine_of(low.text, "tensor_scalar") == {"act"}
    np.testing.assert_allclose(nki.simulate_kernel(k, x, m, r, policy={"per_partition_op_engine": "act"}),
                               (x - m) * r, rtol=1e-6)
    res, k = run1(col_nl, x, m)
    np.testing.assert_allclose(res, x - m, rtol=1e-6)
    assert _engine_of(nki.lower(k, x, m).text, "tensor_scalar") == {"dve"}
    with pytest.raises(nki.NkiError):
        nki.lower(k, x, m, policy={"per_partition_op_engine": "tpu"})
    with pytest.raises(nki.NkiError):
        nki.lower(k, x, m, policy={"reciprocal_engine": "pool"})
