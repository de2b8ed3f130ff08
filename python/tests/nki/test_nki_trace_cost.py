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


def test_free_buffer_heaps_are_not_used_by_the_reference_paths():
    tr = _core.Tracer(_core.Policy(fast_trace=False), "kernel.py")
    sl = tr._add_slot("sbuf", (0, 1024), _core.Site())
    sl.owner = None
    tr.free_heaps[("sbuf", 1024)].clear()            # the heaps would miss it
    assert tr._other_free("sbuf", 512) is sl
