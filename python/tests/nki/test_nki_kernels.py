"""Kernels written in the style of the public NKI tutorials (small sizes): the API patterns they
use work, match NumPy, and lower to `ncsim check`-clean programs."""
import math

import numpy as np

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

RNG = np.random.default_rng(11)


def rand(*shape, lo=0.0, hi=1.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


@nki.jit
def layernorm_v1(x, eps, g, b):
    R, C = x.shape
    out = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    ip, iff, i1 = nl.arange(128)[:, None], nl.arange(C)[None, :], nl.arange(1)[:, None]
    gt = nl.load(g.reshape((1, C))[i1, iff]).broadcast_to((128, C))
    bt = nl.load(b.reshape((1, C))[i1, iff]).broadcast_to((128, C))
    for i in nl.affine_range(math.ceil(R / 128)):
        m = i * 128 + ip < R
        t = nl.load(x[i * 128 + ip, iff], mask=m)
        mean = nl.mean(t, axis=1)
        var = nl.mean(nl.square(t), axis=1) - mean * mean
        y = (t - mean) * nl.rsqrt(var + eps)
        y = y * gt + bt
        nl.store(out[i * 128 + ip, iff], value=y, mask=m)
    return out


@nki.jit
def layernorm_v2(x, eps, g, b):
    R, C = x.shape
    out = nl.ndarray((R, C), x.dtype, buffer=nl.shared_hbm)
    ip, iff, i1 = nl.arange(128)[:, None], nl.arange(C)[None, :], nl.arange(1)[:, None]
    gt = nl.load(g.reshape((1, C))[i1, iff]).broadcast_to((128, C))
    bt = nl.load(b.reshape((1, C))[i1, iff]).broadcast_to((128, C))
    nb = math.ceil(C / 512)
    for i in nl.affine_range(math.ceil(R / 128)):
        m = i * 128 + ip < R
        t = nl.load(x[i * 128 + ip, iff], mask=m)
        st = nl.ndarray((128, 6 * nb), nl.float32)
        for j in nl.affine_range(nb):
            f = nl.arange(512)[None, :]
            st[ip, j * 6 + nl.arange(6)[None, :]] = nisa.bn_stats(t[ip, j * 512 + f], mask=(j * 512 + f < C),
                                                                dtype=nl.float32)
        mv = nisa.bn_aggr(st[ip, nl.arange(6 * nb)[None, :]])
        mean, var = mv[ip, 0], mv[ip, 1]
        sc = nl.rsqrt(var + eps)
        y = nisa.tensor_scalar(data=t, op0=np.subtract, operand0=mean, op1=np.multiply, operand1=sc)
        y = y * gt + bt
        nl.store(out[i * 128 + ip, iff], value=y, mask=m)
    return out


def ref_layernorm(x, eps, g, b):
    m = x.mean(1, keepdims=True)
    return (x - m) / np.sqrt(x.var(1, keepdims=True) + eps) * g + b


def test_layernorm_v1_v2():
    x, g, b = rand(300, 1000), rand(1000), rand(1000)
    for k in (layernorm_v1, layernorm_v2):
        r = nki.simulate_kernel(k, x, 1e-5, g, b)
        np.testing.assert_allclose(r, ref_layernorm(x, 1e-5, g, b), rtol=1e-2, atol=1e-3)
        assert nki.check(k, x, 1e-5, g, b) == []


@nki.jit
def attention(q_ref, k_ref, v_ref, use_causal_mask=False):
    seqlen, d = q_ref.shape
    n = seqlen // 128
    dt = nl.bfloat16
    out = nl.ndarray((seqlen, d), q_ref.dtype, buffer=nl.shared_hbm)
    ip, iff = nl.arange(128)[:, None], nl.arange(d)[None, :]
    trans_v = nl.ndarray((nl.par_dim(128), n, d), dt)
    for i in nl.affine_range(n):
        trans_v[ip, i, iff] = nl.load(v_ref[i * 128 + ip, iff], dtype=dt)
    q_local = nl.ndarray((n, nl.par_dim(d), 128), dt)
    k_local = nl.ndarray((n, nl.par_dim(d), 128), dt)
    for i in nl.affine_range(n):
        q_local[i, nl.arange(d)[:, None], nl.arange(128)[None, :]] = \
            nl.load_transpose2d(q_ref[i * 128 + ip, iff], dtype=dt) * 0.125
        k_local[i, nl.arange(d)[:, None], nl.arange(128)[None, :]] = \
            nl.load_transpose2d(k_ref[i * 128 + ip, iff], dtype=dt)
    fq = nl.arange(128)[None, :]
    for iq in nl.affine_range(n):
        qk = nl.ndarray((nl.par_dim(128), seqlen), nl.float32)
        nmx = nl.ndarray((nl.par_dim(128), n), nl.float32)
        for ik in nl.affine_range(n):
            ps = nl.zeros((nl.par_dim(128), 128), nl.float32, buffer=nl.psum)
            ps[ip, fq] += nisa.nc_matmul(moving=k_local[ik], stationary=q_local[iq])
            if use_causal_mask:
                qk[ip, ik * 128 + fq] = nisa.affine_select(pred=(iq * 128 + ip >= ik * 128 + fq),
                                                           on_true_tile=ps[ip, fq], on_false_value=-9984.0,
                                                           dtype=nl.float32)
            else:
                qk[ip, ik * 128 + fq] = nl.copy(ps[ip, fq], dtype=nl.float32)
            nmx[ip, ik] = nisa.tensor_reduce(np.max, data=qk[ip, ik * 128 + fq], axis=(1,),
                                             dtype=nl.float32, negate=True)
        nm = nisa.tensor_reduce(np.min, data=nmx[ip, nl.arange(n)[None, :]], axis=(1,), dtype=nl.float32)
        e = nisa.activation(np.exp, data=qk[ip, nl.arange(seqlen)[None, :]], bias=nm, scale=1.0)
        s = nisa.tensor_reduce(np.add, data=e, axis=(1,), dtype=nl.float32)
        sm = nl.ndarray((nl.par_dim(128), seqlen), dt)
        sm[...] = nl.copy(e, dtype=dt)
        div = nl.ndarray((nl.par_dim(128), d), nl.float32)
        div[...] = nl.copy((1.0 / s).broadcast_to((128, d)), dtype=nl.float32)
        ts = nl.ndarray((nl.par_dim(128), n, 128), dt)
        for ik in nl.affine_range(n):
            ts[ip, ik, fq] = nisa.nc_transpose(sm[ip, ik * 128 + fq])
        ap = nl.zeros((nl.par_dim(d), 128), nl.float32, buffer=nl.psum)
        for ik in nl.affine_range(n):
            ap[nl.arange(d)[:, None], fq] += nisa.nc_matmul(moving=ts[:, ik, :], stationary=trans_v[:, ik, :])
        asb = nl.copy(ap, dtype=nl.float32)
        ad = asb * nisa.nc_transpose(div)
        nl.store(out[iq * 128 + nl.arange(128)[None, :], nl.arange(d)[:, None]], value=ad)
    return out


def ref_attention(q, k, v, causal):
    s = (q * 0.125) @ k.T
    if causal:
        s = np.where(np.tril(np.ones_like(s)) > 0, s, -9984.0)
    e = np.exp(s - s.max(1, keepdims=True))
    return (e / e.sum(1, keepdims=True)) @ v


def test_fused_attention():
    q, k, v = rand(256, 64), rand(256, 64), rand(256, 64)
    for causal in (False, True):
        r = nki.simulate_kernel(attention, q, k, v, causal)
        np.testing.assert_allclose(r, ref_attention(q, k, v, causal), rtol=2e-2, atol=1e-2)
    assert nki.check(attention, q, k, v, True) == []


@nki.jit
def mamba_v1(delta, u, A, B, C):
    bs, ch, L = delta.shape
    _, st = A.shape
    out = nl.ndarray((bs, ch, L), delta.dtype, buffer=nl.shared_hbm)
    nct = ch // 128
    for b in nl.affine_range(bs):
        acc = nl.zeros((nct, nl.par_dim(128), L), delta.dtype)
        for s in nl.affine_range(st):
            for c in nl.affine_range(nct):
                c0 = c * 128
                di = nl.load(delta[b, c0:c0 + 128, 0:L])
                Ai = nl.load(A[c0:c0 + 128, s])
                dA = nisa.activation(op=nl.exp, data=di, scale=Ai)
                ui = nl.load(u[b, c0:c0 + 128, 0:L])
                dU = nisa.tensor_tensor(di, ui, op=nl.multiply)
                Bi = nl.load(B[b, s:s + 1, 0:L])
                dBu = nisa.tensor_tensor(dU, Bi.broadcast_to((128, L)), op=nl.multiply)
                sc = nisa.tensor_tensor_scan(dA, dBu, initial=0, op0=np.multiply, op1=np.add)
                Ci = nl.load(C[b, s:s + 1, 0:L])
                scC = nisa.tensor_tensor(sc, Ci.broadcast_to((128, L)), op=nl.multiply)
                acc[c, 0:128, 0:L] += scC
        for c in nl.affine_range(nct):
            nl.store(out[b, c * 128:(c + 1) * 128, 0:L], acc[c, 0:128, 0:L])
    return out


def test_mamba_v1():
    bs, ch, L, st = 1, 128, 64, 4
    delta, u = rand(bs, ch, L, lo=0.0, hi=0.2), rand(bs, ch, L)
    A = -rand(ch, st)
    B, C = rand(bs, st, L), rand(bs, st, L)
    r = nki.simulate_kernel(mamba_v1, delta, u, A, B, C)
    ref = np.zeros_like(u)
    for s in range(st):
        dA = np.exp(delta * A[None, :, s, None])
        dBu = delta * u * B[:, None, s, :]
        h = np.zeros((bs, ch), np.float32)
        for t in range(L):
            h = dA[:, :, t] * h + dBu[:, :, t]
            ref[:, :, t] += h * C[:, s, t][:, None]
    np.testing.assert_allclose(r, ref, rtol=1e-4, atol=1e-5)
    assert nki.check(mamba_v1, delta, u, A, B, C) == []


@nki.jit
def matmul_hoisted(lhsT, rhs):
    K, M = lhsT.shape
    _, N = rhs.shape
    res = nl.ndarray((M, N), lhsT.dtype, buffer=nl.shared_hbm)
    il, ir = nl.mgrid[0:128, 0:128], nl.mgrid[0:128, 0:512]
    for m in nl.affine_range(M // 128):
        lt = nl.ndarray((K // 128, nl.par_dim(128), 128), lhsT.dtype)
        for k in nl.affine_range(K // 128):
            lt[k, il.p, il.x] = nl.load(lhsT[k * 128 + il.p, m * 128 + il.x])
        for n in nl.affine_range(N // 512):
            rt = nl.ndarray((K // 128, nl.par_dim(128), 512), rhs.dtype)
            for k in nl.affine_range(K // 128):
                rt[k, ir.p, ir.x] = nl.load(rhs[k * 128 + ir.p, n * 512 + ir.x])
            ps = nl.zeros((128, 512), nl.float32, buffer=nl.psum)
            for k in nl.affine_range(K // 128):
                ps[...] += nl.matmul(lt[k, il.p, il.x], rt[k, ir.p, ir.x], transpose_x=True)
            sb = nl.copy(ps, dtype=res.dtype)
            nl.store(res[m * 128 + ir.p, n * 512 + ir.x], value=sb)
    return res


def test_matmul_hoisted_bf16():
    a, b = rand(256, 256), rand(256, 1024)
    low = nki.lower(matmul_hoisted, a, b, policy={"fold_loops": False})
    assert low.text.count("matmul") >= 8
    r = nki.simulate_kernel(matmul_hoisted, a, b)
    np.testing.assert_allclose(r, a.T @ b, rtol=1e-4, atol=1e-4)
    assert nki.check(matmul_hoisted, a, b) == []


@nki.jit
def transpose2d(x, shape2D):
    P, F = x.shape
    F1, F2 = shape2D
    out = nl.ndarray((P, F), x.dtype, buffer=nl.shared_hbm)
    t = nl.load(x)
    i0, i1, i2 = nl.arange(P)[:, None, None], nl.arange(F1)[None, :, None], nl.arange(F2)[None, None, :]
    o = nl.ndarray((P, F2 * F1), x.dtype)
    o[i0, i2 * F1 + i1] = nl.copy(t[i0, i1 * F2 + i2])
    nl.store(out, value=o)
    return out


@nki.jit
def avgpool(x, ps):
    C, H, W = x.shape
    out = nl.ndarray((C, H // ps, W // ps), x.dtype, buffer=nl.shared_hbm)
    i0, i1, i2, i3, i4 = nl.mgrid[0:C, 0:H // ps, 0:ps, 0:W // ps, 0:ps]
    t = nl.load(x)
    o = nl.sum(t[i0, ps * i1 + i2, ps * i3 + i4], axis=[2, 4]) / (ps * ps)
    nl.store(out, value=o)
    return out


def test_transpose2d_avgpool():
    x = np.arange(5 * 12).reshape(5, 12).astype(np.int8)
    r = nki.simulate_kernel(transpose2d, x, (3, 4))
    np.testing.assert_array_equal(r, x.reshape(5, 3, 4).transpose(0, 2, 1).reshape(5, 12))
    y = np.arange(2 * 6 * 6).reshape(2, 6, 6).astype(np.float16)
    r = nki.simulate_kernel(avgpool, y, 2)
    np.testing.assert_array_equal(r, y.reshape(2, 3, 2, 3, 2).astype(np.float32).mean(axis=(2, 4)).astype(np.float16))
    assert nki.check(avgpool, y, 2) == []
