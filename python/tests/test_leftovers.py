"""No leftovers (issue 28, item 4): a signal or a full disk leaves neither a partial file, a
temporary, nor a stale output of an earlier run under the requested names, from the command
line (`ncsim run`) and from the library (the Python package over libncsim.so), which share one
writer (isa/file.c). A full file system is a small tmpfs where the test may mount one, else a
file size limit (RLIMIT_FSIZE with SIGXFSZ ignored: writes fail with EFBIG)."""
import os
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NCSIM = os.environ.get("NCSIM_BINARY") or os.path.join(ROOT, "build", "ncsim")

# about ten seconds of simulation (30,000 fp32 matmuls computed with their values): long
# enough to be stopped in the middle
SLOW = """
.arch trn1
.hbm x fp32 [128, 512] input
.hbm y fp32 [128, 512] output
.core 0
.sbuf w fp32 [128, 128]
.sbuf a fp32 [128, 512]
.psum acc fp32 [128, 512]
.sem loaded
.engine sp
dma a, x | post loaded
.engine pe
nop | wait loaded >= 1
.loop i = 0, {n}
matmul acc, w, a
.endloop
"""

STALE = ("o.npy", "s.json", "s.config.json")


@pytest.fixture
def work(tmp_path):
    if not os.path.exists(NCSIM):
        pytest.skip("no ncsim executable (NCSIM_BINARY)")
    (tmp_path / "slow.nca").write_text(SLOW.format(n=30000))
    (tmp_path / "quick.nca").write_text(SLOW.format(n=300))
    for name in STALE + ("t.pftrace",):
        (tmp_path / name).write_text("from an earlier run\n")
    return tmp_path


def hidden(d):
    return sorted(n for n in os.listdir(d) if n.startswith(".") or ".tmp." in n)


def wait_for_temporaries(d, proc):
    """Until the command has created its temporaries (its outputs are validated)."""
    for _ in range(600):
        if hidden(d) or proc.poll() is not None:
            break
        time.sleep(0.01)
    time.sleep(0.3)  # into the simulation proper
    assert proc.poll() is None, "the run ended before the signal"


RUN = ["run", "slow.nca", "--random-inputs", "1", "-q", "--out", "y=o.npy", "--stats", "s.json"]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_without_trace_leaves_nothing(work, sig):
    p = subprocess.Popen([NCSIM] + RUN, cwd=work, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    wait_for_temporaries(work, p)
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode == -sig  # ended by the signal, as its default action would
    left = sorted(os.listdir(work))
    assert left == ["quick.nca", "slow.nca", "t.pftrace"], left


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_with_trace_keeps_the_trace_only(work, sig):
    p = subprocess.Popen([NCSIM] + RUN + ["--trace", "t.pftrace"], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_temporaries(work, p)
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 128 + sig, err
    assert "the trace is complete up to there" in err
    left = sorted(os.listdir(work))
    assert left == ["quick.nca", "slow.nca", "t.pftrace"], left
    r = subprocess.run([NCSIM, "report", "t.pftrace"], cwd=work, capture_output=True,
                       text=True)
    assert r.returncode == 0, r.stderr  # the stale text was replaced by a whole trace
    assert "total time" in r.stdout


def test_ignored_sighup_is_left_ignored(work):
    """nohup: an ignored SIGHUP stays ignored; the run ends normally with all its outputs."""
    p = subprocess.Popen([NCSIM, "run", "quick.nca", "--random-inputs", "1", "-q", "--out",
                          "y=o.npy", "--stats", "s.json", "--trace", "t.pftrace"], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    for _ in range(600):
        if hidden(work) or p.poll() is not None:
            break
        time.sleep(0.005)
    p.send_signal(signal.SIGHUP)
    p.communicate(timeout=60)
    assert p.returncode == 0
    assert hidden(work) == []
    for name in STALE + ("t.pftrace",):
        assert (work / name).read_bytes() != b"from an earlier run\n", name


class SmallFilesystem:
    """A 256 KiB tmpfs at DIR when it can be mounted (root with CAP_SYS_ADMIN), else DIR
    itself with a 256 KiB file size limit applied to the commands run in it."""

    def __init__(self, d):
        self.dir = d
        self.mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs",
                                       str(d)], capture_output=True).returncode == 0

    def preexec(self):
        if not self.mounted:
            import resource
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (256 << 10, 256 << 10))

    def close(self):
        if self.mounted:
            subprocess.run(["umount", str(self.dir)], check=True)


@pytest.fixture
def small_fs(tmp_path):
    d = tmp_path / "small"
    d.mkdir()
    fs = SmallFilesystem(d)
    yield fs
    fs.close()


def test_cli_full_filesystem_leaves_nothing(work, small_fs):
    d = small_fs.dir
    for name in ("s.json", "s.config.json", "t.json"):
        (d / name).write_text("from an earlier run\n")
    # a JSON trace of 30,000 matmuls is megabytes: it cannot fit
    r = subprocess.run([NCSIM, "run", str(work / "slow.nca"), "--timing-only", "-q",
                        "--stats", "s.json", "--trace", "t.json"], cwd=d, capture_output=True,
                       text=True, preexec_fn=small_fs.preexec)
    assert r.returncode == 3, r.stderr
    assert "cannot write the trace t.json: write error:" in r.stderr, r.stderr
    assert ".ncsim-" not in r.stderr  # the message names the file the user asked for
    assert os.listdir(d) == [], os.listdir(d)


LIB_RUN = """
import sys, ncsim
try:
    if sys.argv[3] == "timing":
        ncsim.run(sys.argv[1], timing_only=True, trace=sys.argv[2])
    else:
        ncsim.run(sys.argv[1], random_inputs=1, trace=sys.argv[2])
except ncsim.NcsimError as e:
    print(e)
    sys.exit(3)
"""


def lib_env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    return env


def test_library_full_filesystem_leaves_nothing(work, small_fs):
    d = small_fs.dir
    r = subprocess.run([sys.executable, "-c", LIB_RUN, str(work / "slow.nca"),
                        str(d / "t.json"), "timing"], capture_output=True, text=True, env=lib_env(),
                       preexec_fn=small_fs.preexec)
    assert r.returncode == 3, r.stdout + r.stderr
    assert "cannot write the trace" in r.stdout
    assert os.listdir(d) == [], os.listdir(d)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_library_signal_leaves_no_temporary(work, sig):
    """A process that uses the library with the signal's default action (a Python program
    and SIGTERM or SIGHUP): the trace's temporary goes with the process."""
    p = subprocess.Popen([sys.executable, "-c", LIB_RUN, str(work / "slow.nca"),
                          str(work / "lib.pftrace"), "functional"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=lib_env())
    for _ in range(1000):
        if any(".tmp." in n for n in os.listdir(work)) or p.poll() is not None:
            break
        time.sleep(0.01)
    time.sleep(0.2)
    assert p.poll() is None
    p.send_signal(sig)
    p.communicate(timeout=60)
    assert p.returncode == -sig
    left = sorted(os.listdir(work))
    assert left == ["o.npy", "quick.nca", "s.config.json", "s.json", "slow.nca", "t.pftrace"], \
        left


def test_asm_and_dis_leave_no_stale_output(work):
    """`ncsim asm` and `ncsim dis` handle their one output as `run` does: a failure leaves no
    file of an earlier run under the name, and never removes the input."""
    (work / "bad.nca").write_text(".core 0\n.engine pe\nnot_an_instruction\n")
    (work / "old.ncx").write_text("from an earlier run\n")
    r = subprocess.run([NCSIM, "asm", "bad.nca", "-o", "old.ncx"], cwd=work,
                       capture_output=True, text=True)
    assert r.returncode == 2, r.stderr
    assert not (work / "old.ncx").exists()
    assert hidden(work) == []
    r = subprocess.run([NCSIM, "asm", "quick.nca", "-o", "q.ncx"], cwd=work,
                       capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (work / "q.nca").write_text("from an earlier run\n")
    (work / "q.ncx.bad").write_bytes((work / "q.ncx").read_bytes()[:40])
    r = subprocess.run([NCSIM, "dis", "q.ncx.bad", "-o", "q.nca"], cwd=work,
                       capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert not (work / "q.nca").exists()
    # the input named as the output is never removed by a failure
    r = subprocess.run([NCSIM, "dis", "q.ncx.bad", "-o", "q.ncx.bad"], cwd=work,
                       capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert (work / "q.ncx.bad").exists()
    assert hidden(work) == []


def test_report_and_diff_leave_no_stale_output(work):
    """`ncsim report -o` and `ncsim diff -o` handle their output as `run` does: a command that
    fails (an unreadable or corrupt input, exit 3) leaves no file of an earlier run under the
    name and no temporary; a complete report or diff is put in place whole."""
    r = subprocess.run([NCSIM, "run", "quick.nca", "--timing-only", "-q", "--stats", "a.json"],
                       cwd=work, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    (work / "corrupt.json").write_text('{"not": "statistics"')
    cases = [
        ["report", "missing.json", "-o", "r.txt"],
        ["report", "corrupt.json", "-o", "r.txt"],
        ["report", "corrupt.json", "--json", "-o", "r.txt"],
        ["report", "corrupt.json", "--format", "neuron-profile", "-o", "r.txt"],
        ["diff", "a.json", "missing.json", "-o", "r.txt"],
        ["diff", "corrupt.json", "a.json", "--json", "-o", "r.txt"],
    ]
    for argv in cases:
        (work / "r.txt").write_text("from an earlier run\n")
        r = subprocess.run([NCSIM] + argv, cwd=work, capture_output=True, text=True)
        assert r.returncode == 3, (argv, r.stderr)
        assert not (work / "r.txt").exists(), argv
        assert hidden(work) == [], argv
    # success: the whole report, the same bytes as on stdout
    for argv in (["report", "a.json"], ["report", "a.json", "--json"],
                 ["diff", "a.json", "a.json"], ["diff", "a.json", "a.json", "--json"]):
        (work / "r.txt").write_text("from an earlier run\n")
        r = subprocess.run([NCSIM] + argv + ["-o", "r.txt"], cwd=work, capture_output=True,
                           text=True)
        assert r.returncode == 0, (argv, r.stderr)
        out = subprocess.run([NCSIM] + argv, cwd=work, capture_output=True, text=True).stdout
        assert (work / "r.txt").read_text() == out, argv
        assert hidden(work) == [], argv
    # the input named as the output is never removed by a failure
    r = subprocess.run([NCSIM, "diff", "a.json", "corrupt.json", "-o", "corrupt.json"],
                       cwd=work, capture_output=True, text=True)
    assert r.returncode == 3, r.stderr
    assert (work / "corrupt.json").exists()
    # a directory that does not exist is found before the work (exit 3), nothing created
    r = subprocess.run([NCSIM, "report", "a.json", "-o", "no/such/dir/r.txt"], cwd=work,
                       capture_output=True, text=True)
    assert r.returncode == 3 and "does not exist" in r.stderr, r.stderr


def test_report_killed_while_reading_leaves_no_stale_output(work):
    """A signal while `report` reads its input removes the output of an earlier run."""
    os.mkfifo(work / "slow.json")  # the report blocks reading it until it is killed
    (work / "r.txt").write_text("from an earlier run\n")
    p = subprocess.Popen([NCSIM, "report", "slow.json", "-o", "r.txt"], cwd=work,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    for _ in range(600):
        if hidden(work) or p.poll() is not None:
            break
        time.sleep(0.01)
    time.sleep(0.2)
    p.send_signal(signal.SIGTERM)
    p.communicate(timeout=60)
    assert not (work / "r.txt").exists()
    assert hidden(work) == []


def test_sparse_line_numbers(tmp_path):
    """`.loc` takes any 32-bit line: a program whose lines are 7 and 4,000,000,000 runs in a few
    MB (the by-line table holds the lines used, not every number up to the largest) and its
    statistics give each line its own entry, in order, with the instructions it ran."""
    src = open(os.path.join(ROOT, "kernels", "gemm_a_tiled.nca")).read().split("\n")
    out, marks = [], iter([7, 4000000000])
    for ln in src:
        t = ln.strip()
        if t.startswith("matmul") or t.startswith("dma"):
            m = next(marks, None)
            if m is not None:
                out.append(f".loc {m}")
        out.append(ln)
    prog = tmp_path / "sparse.nca"
    prog.write_text("\n".join(out))
    stats = tmp_path / "s.json"
    r = subprocess.run([NCSIM, "run", str(prog), "--timing-only", "--stats", str(stats)],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    import json
    lines = [l["line"] for l in json.load(open(stats))["lines"]]
    assert 7 in lines and 4000000000 in lines, lines
    assert lines == sorted(lines)
    by = {l["line"]: l for l in json.load(open(stats))["lines"]}
    assert by[4000000000]["instructions"] > 0 and by[7]["instructions"] > 0
