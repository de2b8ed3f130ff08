"""One table of bad inputs, driven through the three ways of giving data to a run (issue 26,
item 2): the command line (`ncsim run --in NAME=FILE.npy`), the C API
(`ncsim_sim_load_npy`, called as any C program calls it) and Python (`ncsim.run(inputs=...)`
with an array). Each row must give the same message (after the name of the file or array it
starts with), the same status in C and Python, and that status's exit code from the command
line; the expected exit code is part of the row, so a path that drifts fails here."""
import os
import subprocess

import numpy as np
import pytest

import ncsim
from ncsim import _lib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCSIM = os.environ.get("NCSIM_BINARY") or os.path.join(ROOT, "build", "ncsim")

PROGRAM = """
.hbm x fp32 [4, 8] input
.hbm y fp32 [4, 8] output
.hbm k i32 [4, 8] input
.hbm k2 i32 [4, 8] output
.hbm b bf16 [4, 8] input
.hbm b2 bf16 [4, 8] output
.engine sp
    dma y, x
    dma k2, k
    dma b2, b
"""

GOOD = {"x": np.ones((4, 8), np.float32), "k": np.ones((4, 8), np.int32),
        "b": np.ones((4, 8), np.float32)}

# (tensor, bad array, exit code of the command line, words the message must hold)
BAD = [
    ("x", np.zeros((8, 4), np.float32), 3, "has shape (4, 8)"),
    ("x", np.zeros((4, 8, 1), np.float32), 3, "has shape (4, 8)"),
    ("x", np.zeros((32,), np.float32), 3, "has shape (4, 8)"),
    ("x", np.ones((4, 8), np.int32), 3, "holds <i4"),
    ("x", np.ones((4, 8), np.complex64), 3, ""),
    ("k", np.full((4, 8), 0.5, np.float32), 3, "holds <f4"),
    ("k", np.ones((4, 8), np.float64), 3, "holds <f8"),
    ("k", np.full((4, 8), 2 ** 40, np.int64), 3, "does not fit"),
    ("k", np.full((4, 8), -1, np.int64).astype(np.uint64), 3, "does not fit"),
    ("b", np.ones((4, 8), np.int64), 3, "holds <i8"),
    ("b", np.zeros((2, 8), np.float32), 3, "has shape (4, 8)"),
]


def _after_name(message, name):
    """The message without the file or array name it starts with."""
    first = message.strip().splitlines()[0]
    assert first.startswith(name + ": "), (name, first)
    return first[len(name) + 2:]


def _cli(tmp_path, prog, tensor, path):
    args = [NCSIM, "run", str(prog), "-q"]
    for name in GOOD:
        if name != tensor:
            good = tmp_path / f"good_{name}.npy"
            np.save(good, GOOD[name])
            args += ["--in", f"{name}={good}"]
    args += ["--in", f"{tensor}={path}"]
    return subprocess.run(args, capture_output=True, text=True, timeout=60)


def _c(prog, tensor, path):
    """ncsim_sim_load_npy through the C ABI: (status, message)."""
    lib = _lib.lib
    sim = ncsim.Simulator(str(prog))
    try:
        index = lib.ncsim_program_find_tensor(sim.program._h, tensor.encode())
        status = lib.ncsim_sim_load_npy(sim._h, index, str(path).encode())
        return status, lib.ncsim_last_error_info().contents.message.decode()
    finally:
        sim.close()


@pytest.mark.parametrize("row", range(len(BAD)))
def test_the_same_bad_input_fails_the_same_way_everywhere(tmp_path, row):
    if not os.path.exists(NCSIM):
        pytest.skip("no ncsim executable (NCSIM_BINARY)")
    tensor, array, want_exit, words = BAD[row]
    prog = tmp_path / "p.nca"
    prog.write_text(PROGRAM)
    path = tmp_path / "bad.npy"
    np.save(path, array)

    cli = _cli(tmp_path, prog, tensor, path)
    assert cli.returncode == want_exit, cli.stderr
    assert cli.stderr.startswith("ncsim run: "), cli.stderr
    cli_msg = _after_name(cli.stderr[len("ncsim run: "):], str(path))

    status, c_message = _c(str(prog), tensor, path)
    assert _lib.lib.ncsim_status_exit_code(status) == want_exit
    c_msg = _after_name(c_message, str(path))

    inputs = {name: a for name, a in GOOD.items() if name != tensor}
    inputs[tensor] = array
    with pytest.raises(ncsim.NcsimError) as err:
        ncsim.run(str(prog), inputs)
    py_msg = _after_name(str(err.value), f"inputs['{tensor}']")
    assert err.value.status == _lib.lib.ncsim_status_name(status).decode()
    assert isinstance(err.value, ncsim.InputError)

    assert cli_msg == c_msg == py_msg
    assert words in cli_msg


def test_a_good_table_row_runs_everywhere(tmp_path):
    """The table's good inputs themselves pass all three paths (the rows above fail for their
    one bad tensor only)."""
    if not os.path.exists(NCSIM):
        pytest.skip("no ncsim executable (NCSIM_BINARY)")
    prog = tmp_path / "p.nca"
    prog.write_text(PROGRAM)
    np.save(tmp_path / "good_x.npy", GOOD["x"])
    cli = _cli(tmp_path, prog, "x", tmp_path / "good_x.npy")
    assert cli.returncode == 0, cli.stderr
    r = ncsim.run(str(prog), GOOD)
    np.testing.assert_array_equal(r.outputs["k2"], GOOD["k"])
    np.testing.assert_array_equal(r.outputs["y"], GOOD["x"])
