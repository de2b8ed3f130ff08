"""Misuse gets the NKI compiler's error, located at the kernel's file and line."""
import inspect
import re

import numpy as np
import pytest

import ncsim.nki as nki
import ncsim.nki.isa as nisa
import ncsim.nki.language as nl

X = np.zeros((256, 64), np.float32)


def line_of(fn, needle):
    src, first = inspect.getsourcelines(fn)
    return first + [i for i, s in enumerate(src) if needle in s][0]


def expect(kernel, args, code, needle):
    with pytest.raises(nki.NkiError) as e:
        nki.lower(kernel, *args)
    msg = str(e.value)
    assert msg.startswith(f"{__file__}:{line_of(kernel.func, needle)}: error: [{code}]"), msg
    return msg


def test_partition_limit():
    @nki.jit
    def k(a):
        t = nl.load(a)  # HERE
        return t
    msg = expect(k, (X,), "err_partition_dim_too_large", "# HERE")
    assert "exceeds architecture limitation of 128" in msg


def test_sbuf_tile_partition_limit():
    @nki.jit
    def k(a):
        t = nl.ndarray((256, 4), nl.float32)  # HERE
        return t
    expect(k, (X,), "err_partition_dim_too_large", "# HERE")


def test_load_from_sbuf():
    @nki.jit
    def k(a):
        t = nl.load(a[0:128, :])
        u = nl.load(t)  # HERE
        return u
    expect(k, (X,), "err_unsupported_memory", "# HERE")


def test_compute_on_hbm():
    @nki.jit
    def k(a):
        return nl.exp(a)  # HERE
    expect(k, (X,), "err_unsupported_memory", "# HERE")


def test_store_into_input_is_immutable():
    @nki.jit
    def k(a):
        out = nl.ndarray((128, 64), nl.float32, buffer=nl.shared_hbm)
        t = nl.load(a[0:128, :])
        nl.store(a[0:128, :], value=t)  # HERE
        nl.store(out, value=t)
        return out
    expect(k, (X,), "err_cannot_update_immutable_parameter", "# HERE")


def test_1d_arange():
    @nki.jit
    def k(a):
        i = nl.arange(128)
        return nl.load(a[i, 0:64])  # HERE
    expect(k, (X,), "err_1d_arange_not_supported", "# HERE")


def test_mixing_basic_advanced():
    @nki.jit
    def k(a):
        i = nl.arange(128)[:, None]
        return nl.load(a[i, 0:64])  # HERE
    expect(k, (X,), "err_unsupported_mixing_basic_advanced_tensor_indexing", "# HERE")


def test_out_of_bounds_without_mask():
    @nki.jit
    def k(a):
        out = nl.ndarray((256, 64), nl.float32, buffer=nl.shared_hbm)
        ip, jf = nl.arange(128)[:, None], nl.arange(64)[None, :]
        for i in nl.affine_range(3):
            t = nl.load(a[i * 128 + ip, jf])  # HERE
            nl.store(out[i * 128 + ip, jf], value=t, mask=(i * 128 + ip < 256))
        return out
    expect(k, (X,), "err_tensor_access_out_of_bound", "# HERE")


def test_control_flow_on_arange():
    @nki.jit
    def k(a):
        ip = nl.arange(128)[:, None]
        if ip < 4:  # HERE
            pass
        return a
    expect(k, (X,), "err_control_flow_condition_depending_on_arange", "# HERE")


def test_hbm_with_init_value():
    @nki.jit
    def k(a):
        return nl.zeros((4, 4), nl.float32, buffer=nl.shared_hbm)  # HERE
    expect(k, (X,), "err_hbm_tensor_with_init_value_not_supported", "# HERE")


def test_matmul_partition_mismatch_and_limits():
    @nki.jit
    def k(a):
        x = nl.load(a[0:128, :])
        y = nl.load(a[0:64, :])
        return nl.matmul(x, y, transpose_x=True)  # HERE
    expect(k, (X,), "err_num_partition_mismatch", "# HERE")

    @nki.jit
    def k2(a, b):
        x = nl.load(a[0:128, :])
        y = nl.load(b)
        return nl.matmul(x, y, transpose_x=True)  # HERE
    with pytest.raises(nki.NkiError, match="err_matmul_moving_too_large"):
        nki.lower(k2, X, np.zeros((128, 600), np.float32))


def test_psum_bank_crossing():
    @nki.jit
    def k(a):
        ps = nl.zeros((64, 1024), nl.float32, buffer=nl.psum)
        x = nl.load(a[0:128, :])
        ps[:, 480:544] += nisa.nc_matmul(x, x)  # HERE
        return a
    X2 = np.zeros((128, 64), np.float32)
    expect(k, (X2,), "err_psum_bank_crossing", "# HERE")


def test_sbuf_exhausted():
    @nki.jit
    def k(a):
        keep = []
        for i in range(30):
            keep.append(nl.zeros((128, 2048), nl.float32))  # HERE
        return a
    expect(k, (X,), "err_out_of_memory", "# HERE")


def test_api_outside_kernel():
    with pytest.raises(nki.NkiError, match=r"^.*test_nki_errors.py:\d+: error: \[err_nki_api_outside_of_nki_kernel\]"):
        nl.zeros((4, 4), nl.float32)


def test_unsupported_calls_say_why():
    @nki.jit
    def k(a):
        t = nl.load(a[0:128, :])
        return nl.all_reduce(t, np.add, program_axes=[0])  # HERE
    msg = expect(k, (X,), "err_unsupported_by_ncsim", "# HERE")
    assert "not supported" in msg


def test_partition_start_rule():
    @nki.jit
    def k(a):
        t = nl.load(a[0:128, :])
        return nl.exp(t[1:65, :])  # HERE
    expect(k, (X,), "err_partition_start", "# HERE")


def test_output_not_written():
    @nki.jit
    def k(a):  # HERE
        out = nl.ndarray((4, 4), nl.float32, buffer=nl.shared_hbm)
        return out
    expect(k, (X,), "err_tensor_output_not_written_to", "# HERE")
