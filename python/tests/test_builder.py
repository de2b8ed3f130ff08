"""Tests of ncsim.builder: the text it writes, the event scheduling, and that the result assembles
(with the `ncsim` executable: NCSIM_BINARY as ctest sets it, else build/ncsim)."""
import os
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "python"))

from ncsim.builder import EventEmitter, Program, Pump, Ring, raw_view  # noqa: E402


def ncsim_bin():
    b = os.environ.get("NCSIM_BINARY") or os.environ.get("NCSIM_BIN") or os.path.join(ROOT, "build", "ncsim")
    if not os.path.exists(b):
        pytest.skip("no ncsim executable (set NCSIM_BIN)")
    return b


def assemble(text):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "p.nca")
        with open(p, "w") as f:
            f.write(text)
        r = subprocess.run([ncsim_bin(), "asm", p, "-o", os.path.join(d, "p.ncx")],
                           capture_output=True, text=True)
        return r.returncode, r.stderr


def small_program():
    p = Program(arch="trn1", source="kern.py", comment="test program")
    p.hbm("x", "fp32", [128, 64], "input", addr=0)
    p.hbm("y", "fp32", [128, 64], "output", addr=32768)
    p.sbuf("t", "fp32", [128, 64], offset=0)
    p.sem("ld")
    p.sem("done")
    p.loc(3)
    p.emit("sp", "dma t, x, queue=0", posts=["ld"])
    p.loc(4)
    p.emit("act", "activate t, t, exp", waits=[("ld", 1)], posts=["done"])
    p.loc(5)
    p.emit("pool", "dma y, " + raw_view("sb", "fp32", 0, [(1, 64)], 0, 128) + ", queue=1",
           waits=[("done", 1)])
    return p


def test_program_text():
    t = small_program().text()
    lines = t.splitlines()
    assert lines[0] == "; test program"
    assert ".source kern.py" in lines and ".arch trn1" in lines
    assert ".hbm y fp32 [128, 64] output @32768" in lines
    assert "    activate t, t, exp | wait ld >= 1 | post done" in lines
    assert "    dma y, sb:fp32@0:128+0[1x64], queue=1 | wait done >= 1" in lines
    # .loc precedes the first instruction of each stream and changes only when the line does
    i = lines.index("    activate t, t, exp | wait ld >= 1 | post done")
    assert lines[i - 1] == "    .loc 4"


def test_program_assembles_and_runs():
    rc, err = assemble(small_program().text())
    assert rc == 0, err


def test_program_rejects_three_waits():
    p = Program()
    with pytest.raises(ValueError):
        p.emit("dve", "nop", waits=[("a", 1), ("b", 1), ("c", 1)])


def test_raw_view():
    assert raw_view("hbm", "bf16", 256, [(512, 128), (1, 512)]) == "hbm:bf16+256[512x128, 1x512]"
    assert raw_view("ps", "fp32", 2048, [(0, 8)], 0, 64) == "ps:fp32@0:64+2048[0x8]"


def test_event_emitter_waits_and_posts():
    def build(needed):
        g = EventEmitter(needed)
        g.emit("sp", "dma a, x, queue=0", posts=[(("a",), "q0s")], queue=0)
        g.emit("sp", "dma b, x, queue=1", posts=[(("b",), "q1s")], queue=1)
        g.emit("sp", "dma c, x, queue=2", posts=[(("c",), "q2s")], queue=2)
        g.emit("act", "activate a, a, exp", waits=[("a",)], posts=[(("ea",), "acts")])
        g.emit("act", "activate a, a, exp", waits=[("a",)])           # covered: no second wait
        g.emit("dve", "tensor_tensor a, b, c, add", waits=[("a",), ("b",), ("c",), ("ea",)])
        return g
    g1 = build(None)
    g = build(g1.cross)
    assert g.out["act"][0] == "    activate a, a, exp | wait q0s >= 1 | post acts"
    assert g.out["act"][1] == "    activate a, a, exp"
    # four waits: two on a nop, two on the instruction
    assert g.out["dve"][0].startswith("    nop | wait ")
    assert g.out["dve"][1].count("wait") == 2
    # every posted semaphore is waited on by someone
    assert set(g.agent) <= g1.cross


def test_event_emitter_same_agent_program_order():
    g = EventEmitter()
    g.emit("dve", "memset a, 0.0", posts=[(("m",), "dv")])
    g.emit("dve", "tensor_copy b, a", waits=[("m",)])
    assert g.out["dve"][1] == "    tensor_copy b, a"
    with pytest.raises(KeyError):
        g.emit("act", "activate a, a, exp", waits=[("never",)])


def test_ring_and_pump():
    r = Ring(2)
    assert r.before(0) == [] and r.slot(3) == 1
    r.release(0, ("rel", 0))
    assert r.before(2) == [("rel", 0)]
    with pytest.raises(KeyError):
        r.before(3)
    g = EventEmitter()
    p = Pump(g)
    done = []
    p.add([("e",)], lambda: done.append(1))
    p.run()
    assert not done
    g.mark(("e",))
    p.run()
    assert done == [1]


def test_tp_decoder_uses_builder_and_assembles():
    sys.path.insert(0, os.path.join(ROOT, "kernels", "gen"))
    import tp_decoder
    text = tp_decoder.generate({"H": 1024, "S": 512, "F": 2048, "TB": 512, "NXG": 0, "NC": 2})
    assert ".core 0..1" in text
    rc, err = assemble(text)
    assert rc == 0, err
