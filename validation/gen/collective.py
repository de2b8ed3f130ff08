#!/usr/bin/python3
"""One nccom-test collective (measurements.md section 5): `--op all_reduce` of --bytes of
--dtype on every rank, `--op all_gather` whose per-rank output is --bytes (nccom-test's
size column), or `--op reduce_scatter` whose per-rank input is --bytes. Ranks are cores in ring order (on trn1-32xl a snake over the 4 x 4 torus, both
cores of a chip adjacent); each core uses its own HBM buffers; --ops collectives back to back
(the figure is divided by --ops in the manifest)."""
import argparse

ap = argparse.ArgumentParser()
ap.add_argument("--op", choices=["all_reduce", "all_gather", "reduce_scatter"], required=True)
ap.add_argument("--ranks", type=int, default=2)
ap.add_argument("--bytes", type=int, required=True)
ap.add_argument("--dtype", default="fp32")
ap.add_argument("--arch", default="trn1")
ap.add_argument("--ops", type=int, default=1)
a = ap.parse_args()
size = {"fp32": 4, "bf16": 2, "u8": 1}[a.dtype]
n = a.bytes // size
R = a.ranks
chips = (R + 1) // 2
order = []
for r in range((chips + 3) // 4):
    row = list(range(4 * r, min(4 * r + 4, chips)))
    order += row if r % 2 == 0 else row[::-1]
ranks = [2 * c + i for c in order for i in (0, 1)][:R]
src = n // R if a.op == "all_gather" else n
dst = n // R if a.op == "reduce_scatter" else n


def dims(k):
    """k elements as dimensions of at most 65535 (views have 16-bit counts)."""
    out = []
    while k > 32768:
        out.insert(0, 32768 if k % 32768 == 0 else 1)
        assert k % 32768 == 0, "sizes are powers of two"
        k //= 32768
    return [k] + out


print(f"; {a.op} of {a.bytes} B ({a.dtype}) over {R} ranks, {a.ops} op(s)")
print(f".arch {a.arch}")
if chips > 1:
    print(f".chips {chips}")
for c in range(chips):
    sfx = f" chip={c}" if chips > 1 else ""
    print(f".hbm d{c} {a.dtype} [2, {', '.join(map(str, dims(dst)))}] scratch{sfx}")
    print(f".hbm s{c} {a.dtype} [2, {', '.join(map(str, dims(src)))}] scratch{sfx}")
print(f".group g = {', '.join(map(str, ranks))}")
for c in range(chips):
    print(f".core {2 * c}..{min(2 * c + 1, R - 1)}")
    print(".engine cc")
    print(f"    .loop i = 0, {a.ops}")
    if a.op != "all_gather":
        print(f"        {a.op} d{c}[core % 2], s{c}[core % 2], op=add, group=g")
    else:
        print(f"        all_gather d{c}[core % 2], s{c}[core % 2], group=g")
    print("    .endloop")
