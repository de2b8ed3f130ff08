"""Calls that the third corpus (kernels as optimising tools rewrite them: python/tests/nki/
corpus/tuned_*.py) found refused, wrong or reported unclearly; each checked against NumPy, or for
the located one-line error at the call.
"""
import os
import subprocess
import sys

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

IP = nl.arange(128)[:, None]


@nki.jit
def k_broadcast_load(x, b):
    """A bias row broadcast to 128 partitions by the load itself: broadcast_to of an HBM view
    (a zero partition stride), as method and as nl.broadcast_to."""
    C = x.shape[1]
    ic = nl.arange(C)[None, :]
    out = nl.ndarray((128, C), dtype=np.float32, buffer=nl.shared_hbm)
    out2 = nl.ndarray((128, C), dtype=np.float32, buffer=nl.shared_hbm)
    bias = nl.load(b[nl.arange(1)[:, None], ic].broadcast_to((128, C)))
    bias2 = nl.load(nl.broadcast_to(b[nl.arange(1)[:, None], ic], shape=(128, C)))
    xt = nl.load(x[IP, ic])
    nl.store(out, value=nisa.tensor_tensor(xt, bias, op=np.add))
    nl.store(out2, value=nisa.tensor_tensor(xt, bias2, op=np.multiply))
    return out, out2


def test_broadcast_to_of_an_hbm_view_is_a_broadcast_load():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(128, 384)).astype(np.float32)
    b = rng.normal(size=(1, 384)).astype(np.float32)
    got, got2 = nki.simulate_kernel(k_broadcast_load, x, b)
    np.testing.assert_array_equal(got, x + b)
    np.testing.assert_array_equal(got2, x * b)
    assert nki.check(k_broadcast_load, x, b) == []
    # no Tensor-engine broadcast: the partition broadcast is the DMA's
    assert "matmul" not in nki.lower(k_broadcast_load, x, b).text


@nki.jit
def k_broadcast_bad(b):
    out = nl.ndarray((128, 64), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(b[nl.arange(2)[:, None], nl.arange(64)[None, :]].broadcast_to((128, 64)))
    nl.store(out, value=t)
    return out


def test_broadcast_of_an_hbm_view_along_a_longer_axis_is_refused():
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k_broadcast_bad, np.ones((2, 64), np.float32))
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:") and "[err_shape_mismatch]" in msg, msg
    assert "(2, 64)" in msg and "(128, 64)" in msg, msg


@nki.jit
def k_operand_mask(x, y):
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    a = nl.load(x[IP, nl.arange(128)[None, :]])
    b = nl.load(y[IP, nl.arange(512)[None, :]])
    r = nl.matmul(a[nl.arange(128)[None, :] < 64], b, transpose_x=True)
    nl.store(out, value=nl.copy(r))
    return out


def test_operand_masking_by_a_predicate_index_is_refused_clearly():
    """`x[pred]` (NKI's matmul operand masking) was a TypeError reported as 'tensor indexing
    cannot take these arguments'; it is now refused with the instruction's mask= to use."""
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(k_operand_mask, np.ones((128, 128), np.float32),
                            np.ones((128, 512), np.float32))
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:") and "[err_unsupported_by_ncsim]" in msg, msg
    assert "operand masking" in msg and "mask=" in msg, msg


KERNEL_WITH_SCRATCH = '''
import numpy as np
import neuronxcc.nki as nki
import neuronxcc.nki.language as nl

@nki.jit
def kernel(x):
    out = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    scratch = nl.ndarray(x.shape, dtype=x.dtype, buffer=nl.shared_hbm)
    ip, jf = nl.arange(128)[:, None], nl.arange(64)[None, :]
    nl.store(scratch[ip, jf], value=nl.multiply(nl.load(x[ip, jf]), 2.0))
    nl.store(out[ip, jf], value=nl.add(nl.load(scratch[ip, jf]), 1.0))
    return out
'''


def test_runner_writes_the_results_not_a_scratch_tensor(tmp_path):
    """A shared_hbm scratch tensor the kernel writes and reads back is not one of its results:
    `--out` holds the returned tensor only (it held the scratch too)."""
    src = tmp_path / "k.py"
    src.write_text(KERNEL_WITH_SCRATCH)
    x = np.arange(128 * 64, dtype=np.float32).reshape(128, 64)
    np.save(tmp_path / "x.npy", x)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    r = subprocess.run([sys.executable, "-m", "ncsim.nki", "run", str(src), "kernel", "--arg",
                        str(tmp_path / "x.npy"), "--out", str(tmp_path / "out")],
                       capture_output=True, text=True, timeout=120, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    outs = os.listdir(tmp_path / "out")
    assert len(outs) == 1, outs
    np.testing.assert_array_equal(np.load(tmp_path / "out" / outs[0]), 2.0 * x + 1.0)


@nki.jit
def k_memset_other_types(x):
    """memsets assigned to tiles of other types (mutants of the online softmax's -1e30 start):
    the constant is the memset's own type's value, converted to the destination's."""
    o8 = nl.ndarray((128, 4), dtype=np.int8, buffer=nl.shared_hbm)
    of = nl.ndarray((128, 4), dtype=np.float32, buffer=nl.shared_hbm)
    oi = nl.ndarray((128, 4), dtype=np.int32, buffer=nl.shared_hbm)
    a = nl.ndarray((nl.par_dim(128), 4), dtype=np.int8, buffer=nl.sbuf)
    a[...] = nisa.memset(shape=(128, 4), value=-1.0e30, dtype=np.float32)
    b = nl.ndarray((nl.par_dim(128), 4), dtype=np.float32, buffer=nl.sbuf)
    b[...] = nisa.memset(shape=(128, 4), value=300, dtype=np.uint8)
    c = nl.ndarray((nl.par_dim(128), 4), dtype=np.int32, buffer=nl.sbuf)
    c[...] = nisa.memset(shape=(128, 4), value=2.5, dtype=np.int32)
    c[:, 0:2] = nl.full((128, 2), 1.0e12, dtype=np.int32)
    nl.store(o8, value=a)
    nl.store(of, value=b)
    nl.store(oi, value=nl.add(c, nl.load(x), dtype=np.int32))
    return o8, of, oi


def test_memset_constants_saturate_into_integer_tiles():
    """-1e30 into an int8 tile was written as a 31-digit integer literal (an assembler error
    at a line of the lowered program); it saturates to -128, as the conversion does."""
    x = np.zeros((128, 4), np.int32)
    o8, of, oi = nki.simulate_kernel(k_memset_other_types, x)
    np.testing.assert_array_equal(o8, np.full((128, 4), -128, np.int8))
    np.testing.assert_array_equal(of, np.full((128, 4), 255.0, np.float32))
    want = np.full((128, 4), 2, np.int32)            # 2.5 rounds to nearest even
    want[:, :2] = np.iinfo(np.int32).max
    np.testing.assert_array_equal(oi, want)
    assert nki.check(k_memset_other_types, x) == []


@nki.jit
def k_unbound_accumulator(x):
    """A mutant of the online softmax: the PSUM accumulator's declaration deleted, so the `+=`
    reads an unbound local. The loop before it warms the code up (CPython 3.11 then fuses the
    store of `t` with the load of `acc`)."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    for i in nl.static_range(32):
        w = nl.load(x[IP, nl.arange(512)[None, :]])
    for j in nl.affine_range(2):
        t = nl.multiply(w, 2.0)
        acc += t                                    # noqa: F821 -- the error under test
    nl.store(out, value=w)
    return out


def test_an_unbound_local_is_reported_at_its_line_every_time():
    """The same kernel traced three times names the line of the `+=` each time (the second
    and later traces named the statement before it, under CPython 3.11)."""
    import inspect
    lines, first = inspect.getsourcelines(k_unbound_accumulator.func)
    want = first + next(i for i, l in enumerate(lines) if "acc += t" in l)
    x = np.ones((128, 512), np.float32)
    for _ in range(3):
        with pytest.raises(nki.NkiError) as e:
            nki.lower(k_unbound_accumulator, x)
        msg = str(e.value)
        assert msg.startswith(f"{__file__}:{want}: error: [err_kernel_exception] "
                              "UnboundLocalError"), msg


@nki.jit
def k_reverse1_without_op1(x):
    """A mutant of the gated scan's `1 - s h`: op1 dropped, reverse1=True kept."""
    out = nl.ndarray((128, 512), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.tensor_scalar(data=t, op0=np.multiply, operand0=0.75,
                                           operand1=1.0, reverse1=True))
    return out


@nki.jit
def k_partition_reduce_bitwise(x):
    """A mutant of the column softmax: the partition sum of fp32 values made a bitwise_and."""
    out = nl.ndarray((1, 512), dtype=np.float32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.tensor_partition_reduce(np.bitwise_and, data=t))
    return out


@nki.jit
def k_partition_reduce_int(x):
    out = nl.ndarray((1, 512), dtype=np.int32, buffer=nl.shared_hbm)
    t = nl.load(x)
    nl.store(out, value=nisa.tensor_partition_reduce(np.bitwise_or, data=t))
    return out


@pytest.mark.parametrize("kern, code, words", [
    (k_reverse1_without_op1, "err_invalid_argument", "op1 is not given"),
    (k_partition_reduce_bitwise, "err_unsupported_dtype", "bitwise operation on integers"),
])
def test_calls_the_assembler_refused_are_refused_at_the_call(kern, code, words):
    """Both reached the assembler (an error at a line of the lowered program: 'rev1 needs OP1
    and S1', 'bitwise_and needs integer operands'); they are refused at the kernel's line."""
    with pytest.raises(nki.NkiError) as e:
        nki.simulate_kernel(kern, np.ones((128, 512), np.float32))
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:") and f"[{code}]" in msg and words in msg, msg
    assert "lowered program" not in msg, msg


def test_partition_reduce_of_integers_with_a_bitwise_operator():
    x = np.random.default_rng(5).integers(0, 1 << 20, size=(128, 512)).astype(np.int32)
    got = nki.simulate_kernel(k_partition_reduce_int, x)
    np.testing.assert_array_equal(got, np.bitwise_or.reduce(x, axis=0, keepdims=True))
