#!/usr/bin/python3
"""Refresh the trn1 value and the source of every key row in docs/architecture.md from
models/presets/trn1.json (the value as `ncsim` resolves it, the source text of the preset), so
the table cannot go stale. Rows are `| `key` | unit | meaning | trn1 | source |`; the unit and
meaning columns are kept. A key without a row is reported (exit 1): add the row by hand."""
import json, os, re, subprocess, sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ncsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build", "ncsim")
preset = json.load(open(os.path.join(root, "models", "presets", "trn1.json")))
sources = preset["sources"]
values = {}
for sec, keys in preset.items():
    if isinstance(keys, dict) and sec != "sources":
        for k, v in keys.items():
            values[f"{sec}.{k}"] = v
path = os.path.join(root, "docs", "architecture.md")
lines = open(path).read().split("\n")
seen = set()
for i, line in enumerate(lines):
    m = re.match(r"\| `([a-z_]+\.[a-z_0-9]+)` \|", line)
    if not m or m.group(1) not in values:
        continue
    key = m.group(1)
    cells = line.split(" | ")
    v = values[key]
    cells[3] = f"\"{v}\"" if isinstance(v, str) else str(v)
    cells[4] = sources[key].replace("|", "/") + " |"
    lines[i] = " | ".join(cells[:5])
    seen.add(key)
open(path, "w").write("\n".join(lines))
missing = sorted(set(values) - seen)
if missing:
    print("docs/architecture.md has no row for: " + ", ".join(missing), file=sys.stderr)
    sys.exit(1)
