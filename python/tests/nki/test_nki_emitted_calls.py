"""Calls that the corpus of compiler-style kernels (and a mutation run over it) found refused,
wrong or reported at a line of the generated NCA instead of the kernel's call; each checked
against NumPy, or for the located one-line error at the call with the hardware's reason.
"""
import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

IP = nl.arange(128)[:, None]
JF = nl.arange(512)[None, :]


@nki.jit
def k_activation_copy(x):
    """nisa.activation(op=nl.copy): ScalarE's identity with scale and bias (a scaled PSUM
    eviction)."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    a = nl.load(x[IP, nl.arange(128)[None, :]])
    b = nl.load(x[IP, JF])
    p = nisa.nc_matmul(a, b)
    bias = nisa.memset(shape=(128, 1), value=0.25, dtype=np.float32)
    y = nisa.activation(op=nl.copy, data=p, scale=0.5, bias=bias)
    nl.store(out, value=y)
    return out


def test_activation_with_nl_copy():
    x = np.random.default_rng(0).normal(size=(128, 512)).astype(np.float32)
    want = 0.5 * (x[:, :128].T.astype(np.float64) @ x) + 0.25
    np.testing.assert_allclose(nki.simulate_kernel(k_activation_copy, x), want, rtol=1e-5, atol=1e-4)
    assert nki.check(k_activation_copy, x) == []
    assert "activate" in nki.lower(k_activation_copy, x).text


@nki.jit
def k_load_into_psum(x):
    """An nl.load assigned to a PSUM tensor: loaded to SBUF (a DMA cannot write PSUM), copied."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    v = nl.ndarray((2, nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum)
    for i in nl.affine_range(2):
        v[i, IP, JF] = nl.load(x[IP, 512 * i + JF], mask=(512 * i + JF < 900))
    nl.store(out, value=nl.add(v[0, IP, JF], v[1, IP, JF]))
    return out


def test_load_into_psum():
    x = np.random.default_rng(1).normal(size=(128, 1024)).astype(np.float32)
    want = x[:, :512] + np.where(np.arange(512) + 512 < 900, x[:, 512:], 0.0)
    np.testing.assert_allclose(nki.simulate_kernel(k_load_into_psum, x), want, rtol=1e-6)
    assert nki.check(k_load_into_psum, x) == []


@nki.jit
def k_scan_mixed_types(x):
    """tensor_tensor_scan of an int32 data0 (ones) and fp32 data1 scans in fp32: the result
    type is NKI's promotion of the two, not data0's."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    ones = nisa.memset(shape=(128, 512), value=1, dtype=np.int32)
    t = nl.load(x[IP, JF])
    y = nisa.tensor_tensor_scan(ones, t, initial=0.0, op0=np.multiply, op1=np.add)
    nl.store(out, value=y)
    return out


def test_scan_result_type_is_promoted():
    x = (np.random.default_rng(2).random((128, 512)) - 0.5).astype(np.float32)
    got = nki.simulate_kernel(k_scan_mixed_types, x)
    np.testing.assert_allclose(got, np.cumsum(x.astype(np.float64), axis=1), atol=2e-4)


@nki.jit
def k_integer_bitwise(x):
    """Bitwise calls on integer tiles, the engine left to the compiler."""
    out = nl.ndarray((128, 512), dtype=np.int32, buffer=nl.shared_hbm)
    t = nl.load(x[IP, JF])
    a = nisa.tensor_scalar(t, op0=np.bitwise_and, operand0=255, op1=np.right_shift, operand1=1)
    b = nisa.tensor_tensor(a, t, op=np.bitwise_xor)
    acc = nl.ndarray((nl.par_dim(128), 512), dtype=np.int32, buffer=nl.sbuf)
    for i in nl.affine_range(2):
        acc[IP, JF] = nl.loop_reduce(b, op=np.bitwise_or, loop_indices=[i])
    nl.store(out, value=acc)
    return out


def test_integer_bitwise_with_the_default_engine():
    x = np.random.default_rng(3).integers(0, 1 << 20, size=(128, 512)).astype(np.int32)
    np.testing.assert_array_equal(nki.simulate_kernel(k_integer_bitwise, x), ((x & 255) >> 1) ^ x)
    assert nki.check(k_integer_bitwise, x) == []


def _float_bitwise(call):
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
        t = nl.load(x[IP, JF])
        r = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, buffer=nl.sbuf)
        acc = nl.ndarray((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.sbuf)
        for i in nl.affine_range(1):
            call(t, r, acc, i)
        nl.store(out, value=acc)
        return out
    return k


FLOAT_BITWISE = {
    "tensor_tensor": lambda t, r, acc, i: nisa.tensor_tensor(t, t, op=np.left_shift),
    "tensor_scalar": lambda t, r, acc, i: nisa.tensor_scalar(t, op0=np.bitwise_and, operand0=3),
    "scalar_tensor_tensor": lambda t, r, acc, i: nisa.scalar_tensor_tensor(
        data=t, op0=np.multiply, operand0=2.0, op1=np.bitwise_and, operand1=t),
    "tensor_reduce": lambda t, r, acc, i: nisa.tensor_reduce(np.bitwise_or, data=t, axis=(1,)),
    "tensor_scalar_reduce": lambda t, r, acc, i: nisa.tensor_scalar_reduce(
        data=t, op0=np.multiply, operand0=2.0, reduce_op=np.bitwise_and, reduce_res=r),
    "tensor_tensor_scan": lambda t, r, acc, i: nisa.tensor_tensor_scan(
        t, t, initial=0.0, op0=np.multiply, op1=np.bitwise_and),
    "loop_reduce": lambda t, r, acc, i: acc.__setitem__(
        (IP, JF), nl.loop_reduce(t, op=np.right_shift, loop_indices=[i])),
}


@pytest.mark.parametrize("name", sorted(FLOAT_BITWISE))
def test_bitwise_on_floats_is_refused_at_the_call(name):
    """Bitwise operators act on the bits of integers (the Vector engine's bitvec ALU): on fp32
    tiles each of these calls is err_unsupported_dtype at the kernel's line, not an assembly or
    run-time error of the lowered program."""
    k = _float_bitwise(FLOAT_BITWISE[name])
    x = np.ones((128, 512), np.float32)
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, x)
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:") and "error: [err_unsupported_dtype]" in msg, msg
    assert "bitwise operation on integers" in msg and "lowered program" not in msg, msg


def _psum_pair(x):
    a = nl.load(x[IP, nl.arange(128)[None, :]])
    b = nl.load(x[IP, JF])
    return nisa.nc_matmul(a, b), nisa.nc_matmul(a, b)


@nki.jit
def k_stt_two_psum(x):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    p, q = _psum_pair(x)
    y = nisa.scalar_tensor_tensor(data=p, op0=np.multiply, operand0=2.0, op1=np.add, operand1=q)
    nl.store(out, value=y)
    return out


@nki.jit
def k_scan_two_psum(x):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    p, q = _psum_pair(x)
    y = nisa.tensor_tensor_scan(p, q, initial=0.0, op0=np.multiply, op1=np.add)
    nl.store(out, value=y)
    return out


@nki.jit
def k_add_two_psum(x):
    """nl.add of two PSUM tiles is the compiler's to arrange (one goes through SBUF): allowed."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    p, q = _psum_pair(x)
    nl.store(out, value=nl.add(p, q))
    return out


@pytest.mark.parametrize("kern,line", [(k_stt_two_psum, "y = nisa.scalar_tensor_tensor(data=p"),
                                       (k_scan_two_psum, "y = nisa.tensor_tensor_scan(p, q")])
def test_isa_calls_with_two_psum_inputs_are_refused(kern, line):
    x = np.ones((128, 512), np.float32)
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(kern, x)
    msg = str(e.value)
    want = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1) if line in t)
    assert msg.startswith(f"{__file__}:{want}: error: [err_unsupported_memory]"), msg
    assert "at most one input from PSUM" in msg, msg


def test_nl_add_of_two_psum_tiles():
    x = np.random.default_rng(4).normal(size=(128, 512)).astype(np.float32)
    want = 2 * (x[:, :128].T.astype(np.float64) @ x)
    np.testing.assert_allclose(nki.simulate_kernel(k_add_two_psum, x), want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize("op", [np.divide, np.greater_equal, np.equal, np.subtract])
def test_a_reduction_needs_a_reducible_operator(op):
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.shared_hbm)
        t = nl.load(x[IP, JF])
        nl.store(out, value=nisa.tensor_reduce(op, data=t, axis=(1,), keepdims=True))
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, np.ones((128, 512), np.float32))
    msg = str(e.value)
    assert "error: [err_unsupported_reduce_op]" in msg and "lowered program" not in msg, msg
    assert msg.startswith(f"{__file__}:"), msg


@nki.jit
def k_bn_into_bf16(x):
    """bn_stats and bn_aggr assigned to bf16 tiles: computed in fp32 (as the Vector engine
    does), converted by the assignment."""
    out = nl.ndarray((128, 2), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x[IP, JF])
    st = nl.ndarray((nl.par_dim(128), 6), dtype=nl.bfloat16, buffer=nl.sbuf)
    st[IP, nl.arange(6)[None, :]] = nisa.bn_stats(t)
    mv = nl.ndarray((nl.par_dim(128), 2), dtype=nl.bfloat16, buffer=nl.sbuf)
    mv[IP, nl.arange(2)[None, :]] = nisa.bn_aggr(st)
    nl.store(out, value=nl.copy(mv, dtype=np.float32))
    return out


def test_bn_stats_and_aggr_into_bf16():
    x = (np.random.default_rng(5).normal(size=(128, 512)) * 2 + 1).astype(np.float32)
    got = nki.simulate_kernel(k_bn_into_bf16, x)
    want = np.stack([x.mean(axis=1), x.var(axis=1)], axis=1)
    # bf16 keeps 8 bits of mantissa: the statistics, stored as bf16, then aggregated
    np.testing.assert_allclose(got, want, rtol=2e-2, atol=2e-2)
    assert nki.check(k_bn_into_bf16, x) == []


@nki.jit
def k_transpose_into_int_psum(x):
    out = nl.ndarray((128, 128), dtype=np.float32, buffer=nl.shared_hbm)
    a = nl.load(x[IP, nl.arange(128)[None, :]])
    s = nl.ndarray((nl.par_dim(128), 128), dtype=np.int32, buffer=nl.psum)
    s[IP, nl.arange(128)[None, :]] = nisa.nc_transpose(a)      # the refused line
    nl.store(out, value=nl.copy(s, dtype=np.float32))
    return out


def test_transpose_into_an_integer_psum_tile_is_refused():
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k_transpose_into_int_psum, np.ones((128, 128), np.float32))
    want = next(i for i, t in enumerate(open(__file__).read().splitlines(), 1)
                if "# the refused line" in t and "nc_transpose" in t)
    assert str(e.value).startswith(f"{__file__}:{want}: error: [err_unsupported_type] a transpose "
                                   "on the Tensor engine writes floating-point PSUM"), str(e.value)


@nki.jit
def k_top16(x):
    """The 16 largest of each row: max8, nc_match_replace8 (the 8 found replaced by -inf-like
    -1e30), max8 again; indices of the first 8 with nc_find_index8."""
    out = nl.ndarray((128, 16), dtype=np.float32, buffer=nl.shared_hbm)
    idx = nl.ndarray((128, 8), dtype=np.uint32, buffer=nl.shared_hbm)
    t = nl.load(x[IP, JF])
    res = nl.ndarray((nl.par_dim(128), 16), dtype=np.float32, buffer=nl.sbuf)
    m1 = nisa.max8(src=t)
    res[IP, nl.arange(8)[None, :]] = nl.copy(m1)
    nl.store(idx, value=nisa.nc_find_index8(data=t, vals=m1))
    rest = nisa.nc_match_replace8(data=t, vals=m1, imm=-1e30)
    res[IP, 8 + nl.arange(8)[None, :]] = nisa.max8(src=rest)
    nl.store(out, value=res)
    return out, idx


def test_top16_with_match_replace8():
    rng = np.random.default_rng(6)
    x = (np.argsort(rng.random((128, 512)), axis=1) / 512.0).astype(np.float32)   # distinct
    got, idx = nki.simulate_kernel(k_top16, x)
    order = np.argsort(-x, axis=1)
    np.testing.assert_array_equal(got, np.take_along_axis(x, order[:, :16], axis=1))
    np.testing.assert_array_equal(idx, order[:, :8].astype(np.uint32))
    assert nki.check(k_top16, x) == []


@pytest.mark.parametrize("vals_shape,code", [((127, 8), "err_num_partition_mismatch"),
                                             ((128, 4), "err_shape_mismatch")])
def test_find_index8_needs_8_values_per_partition(vals_shape, code):
    @nki.jit
    def k(x, v):
        out = nl.ndarray((vals_shape[0], 8), dtype=np.uint32, buffer=nl.shared_hbm)
        t = nl.load(x[IP, JF])
        vv = nl.load(v)
        nl.store(out, value=nisa.nc_find_index8(data=t, vals=vv))
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, np.ones((128, 512), np.float32), np.ones(vals_shape, np.float32))
    msg = str(e.value)
    assert f"error: [{code}] nc_find_index8: vals" in msg and "lowered program" not in msg, msg


@pytest.mark.parametrize("args", [(-1,), (0,), (5, 5), (0, 10, 0), (4, 0, 1)])
def test_an_empty_arange_is_refused(args):
    """nl.arange with no elements (a negative or zero size, a step of 0) would index an empty
    tile: err_invalid_shape at the call (the tracer's fast and reference paths had gone on to
    different errors)."""
    @nki.jit
    def k(x):
        out = nl.ndarray((1, 512), dtype=np.float32, buffer=nl.shared_hbm)
        row = nl.ndarray((nl.par_dim(1), 512), dtype=np.float32, buffer=nl.sbuf)
        row[0, nl.arange(*args)[None, :]] = nl.load(x[0, nl.arange(512)[None, :]])
        nl.store(out, value=row)
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.lower(k, np.ones((1, 512), np.float32))
    assert "error: [err_invalid_shape] nl.arange(" in str(e.value), str(e.value)


@pytest.mark.parametrize("dst", ["int32", "uint16", "float32"])
def test_find_index8_into_other_types(dst):
    """nc_find_index8's uint32 indices assigned to a tile of another type (or dtype=uint16)
    are converted by a copy (they failed in assembly: 'D must be u32')."""
    dt = getattr(np, dst)

    @nki.jit
    def k(x):
        out = nl.ndarray((128, 8), dtype=dt, buffer=nl.shared_hbm)
        t = nl.load(x[IP, JF])
        m = nisa.max8(src=t)
        if dst == "uint16":
            i = nisa.nc_find_index8(data=t, vals=m, dtype=np.uint16)
        else:
            i = nl.ndarray((nl.par_dim(128), 8), dtype=dt, buffer=nl.sbuf)
            i[IP, nl.arange(8)[None, :]] = nisa.nc_find_index8(data=t, vals=m)
        nl.store(out, value=i)
        return out
    rng = np.random.default_rng(7)
    x = (np.argsort(rng.random((128, 512)), axis=1) / 512.0).astype(np.float32)
    got = nki.simulate_kernel(k, x)
    assert got.dtype == dt
    np.testing.assert_array_equal(got, np.argsort(-x, axis=1)[:, :8].astype(dt))
    assert nki.check(k, x) == []


@pytest.mark.parametrize("call,code", [
    (lambda t: nisa.tensor_tensor(t, t, op="x"), "err_unsupported_op"),
    (lambda t: nisa.tensor_scalar(t, op0="mul", operand0=2.0), "err_unsupported_op"),
    (lambda t: nisa.activation(op="expo", data=t), "err_unsupported_activation")])
def test_operators_named_by_unknown_strings(call, code):
    """An operator given as a string that names none (op='x') is refused at the call; it
    reached the assembler ('unknown ALU operator')."""
    @nki.jit
    def k(x):
        out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
        nl.store(out, value=call(nl.load(x[IP, JF])))
        return out
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k, np.ones((128, 512), np.float32))
    assert f"error: [{code}]" in str(e.value) and "lowered program" not in str(e.value), str(e.value)


def _pool_kernel(src, mask="None"):
    """A 2 x 2 sum pooling over a 5-D index grid whose row index is `src` (a text, exec'd)."""
    code = f'''
@nki.jit
def k(x):
    C, H, W = x.shape
    out = nl.ndarray((C, 3, 3), dtype=x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2, i3, i4 = nl.mgrid[0:C, 0:3, 0:2, 0:3, 0:2]
    t = nl.load(x)
    o = nl.sum(t[i0, {src}, 2 * i3 + i4], axis=[2, 4], mask={mask})
    nl.store(out, value=o)
    return out
'''
    ns = {"nki": nki, "nl": nl, "np": np}
    exec(compile(code, "<pool kernel>", "exec"), ns)
    return ns["k"]


@pytest.mark.parametrize("src", ["7", "-1", "2 * i1 + i2 + 1"])
def test_reduction_of_an_out_of_bounds_view_is_refused(src):
    """A reduction reads its source through a raw view of its own: its index ranges are checked
    as every other view's (an index of 7 on a dim of 6 read past the tile, -1 failed in
    assembly with a negative byte offset)."""
    x = np.arange(2 * 6 * 6, dtype=np.float32).reshape(2, 6, 6)
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(_pool_kernel(src), x)
    assert "error: [err_tensor_access_out_of_bound] index range" in str(e.value), str(e.value)


def test_a_mask_keeps_a_reduction_inside():
    """2 * i1 + i2 - 1 reaches -1 in the first output row, which the mask leaves out."""
    x = np.arange(2 * 6 * 6, dtype=np.float32).reshape(2, 6, 6)
    got = nki.simulate_kernel(_pool_kernel("2 * i1 + i2 - 1", "(i1 >= 1)"), x)
    for h in (1, 2):
        want = sum(x[:, 2 * h + dh - 1, :].reshape(2, 3, 2).sum(axis=2) for dh in range(2))
        np.testing.assert_array_equal(got[:, h, :], want)


@nki.jit
def k_loop_reduce_two_columns(x):
    """Two nl.loop_reduce into two columns of one block of a block tensor, in a loop whose
    blocks reuse one buffer (the group-norm statistics): each column starts its own reduction."""
    T, P, C = x.shape
    out = nl.ndarray((T, 128, 2), dtype=np.float32, buffer=nl.shared_hbm)
    st = nl.ndarray((T, nl.par_dim(128), 2), dtype=np.float32, buffer=nl.sbuf)
    for t in nl.affine_range(T):
        for j in nl.affine_range(C // 512):
            a = nl.load(x[t, IP, 512 * j + JF])
            s = nisa.tensor_reduce(np.add, data=a, axis=(1,))
            m = nisa.tensor_reduce(np.max, data=a, axis=(1,))
            st[t, IP, 0] = nl.loop_reduce(s, op=np.add, loop_indices=[j])
            st[t, IP, 1] = nl.loop_reduce(m, op=np.maximum, loop_indices=[j])
        nl.store(out[t, IP, nl.arange(2)[None, :]], value=st[t, IP, nl.arange(2)[None, :]])
    return out


def test_loop_reduce_into_columns_of_one_block():
    x = np.random.default_rng(7).normal(size=(4, 128, 1536)).astype(np.float32)
    want = np.stack([x.astype(np.float64).sum(axis=-1), x.max(axis=-1)], axis=-1)
    np.testing.assert_allclose(nki.simulate_kernel(k_loop_reduce_two_columns, x), want,
                               rtol=1e-5, atol=1e-4)
    assert nki.check(k_loop_reduce_two_columns, x) == []


@nki.jit
def k_masked_matmul(a, b, x):
    """nc_matmul's mask (on the result's partitions and columns, as the generator writes it
    for a ragged tile) restricts the matmul: a masked accumulation adds only inside the mask,
    and the stationary's columns outside it, never written, are not read."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    out2 = nl.ndarray((72, 512), dtype=np.float32, buffer=nl.shared_hbm)
    acc = nl.zeros((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum, lazy_initialization=True)
    ta = nl.load(a[IP, nl.arange(128)[None, :]])
    tb = nl.load(b[IP, JF])
    acc[IP, JF] += nisa.nc_matmul(ta, tb)
    acc[IP, JF] += nisa.nc_matmul(tb[IP, nl.arange(128)[None, :]], tb, mask=(JF < 256))
    nl.store(out, value=nl.copy(acc[IP, JF]))
    # a ragged tile: 72 rows loaded, its transpose and the matmul masked to them
    xs = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    xs[IP, nl.arange(128)[None, :]] = nl.load(x[IP, nl.arange(128)[None, :]], mask=(IP < 72))
    xT = nisa.nc_transpose(xs, engine=nki.isa.tensor_engine)
    xTs = nl.ndarray((nl.par_dim(128), 128), dtype=np.float32, buffer=nl.sbuf)
    xTs[IP, nl.arange(128)[None, :]] = nl.copy(xT, mask=(nl.arange(128)[None, :] < 72))
    r = nl.zeros((nl.par_dim(128), 512), dtype=np.float32, buffer=nl.psum, lazy_initialization=True)
    r[IP, JF] += nisa.nc_matmul(xTs, tb, mask=(IP < 72))
    nl.store(out2[nl.arange(72)[:, None], JF], value=nl.copy(r[nl.arange(72)[:, None], JF]))
    return out, out2


def test_masked_nc_matmul_restricts_the_result():
    rng = np.random.default_rng(8)
    a = rng.normal(size=(128, 128)).astype(np.float32)
    b = rng.normal(size=(128, 512)).astype(np.float32)
    x = rng.normal(size=(128, 128)).astype(np.float32)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64.T @ b64
    want[:, :256] += (b64[:, :128].T @ b64)[:, :256]
    got, got2 = nki.simulate_kernel(k_masked_matmul, a, b, x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(got2, x[:72].astype(np.float64) @ b64, rtol=1e-4, atol=1e-3)
    assert nki.check(k_masked_matmul, a, b, x) == []


@nki.jit
def k_reduce_into_more_partitions(x):
    """A reduction of 64 partitions assigned to a column of 128 (a mutant of the softmax)."""
    out = nl.ndarray((128, 1), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x[IP, JF])
    r = nl.ndarray((nl.par_dim(128), 1), dtype=np.float32, buffer=nl.sbuf)
    r[IP, 0] = nisa.tensor_reduce(np.add, data=t[nl.arange(64)[:, None], JF], axis=(1,))
    nl.store(out, value=r)
    return out


def test_result_with_other_partition_count_is_refused_at_the_assignment():
    """A [64] result written to a [128, 1] destination: err_shape_mismatch at the kernel's line
    (it was an assembly error of the lowered program: SRC has 64 partitions but D has 128)."""
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k_reduce_into_more_partitions, np.ones((128, 512), np.float32))
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:") and "error: [err_shape_mismatch]" in msg, msg
    assert "partition counts differ" in msg and "lowered program" not in msg, msg
