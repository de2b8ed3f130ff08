#!/usr/bin/python3
"""Write a copy of an NCA kernel with some of its top-level `.let` constants changed.

    /usr/bin/python3 kernels/gen/resize.py kernels/gemm_d_blocked.nca M=512 K=2048 N=2048 -o small.nca

Every kernel in kernels/ keeps its size parameters as `.let NAME = VALUE` lines before the
first `.hbm`; this replaces the first `.let NAME =` line of each NAME given (an error if
there is none) and leaves everything else as it is. The kernel's own `.if`/`.loop` logic
and its header comment say which sizes it supports; the assembler reports the rest.
"""
import re
import sys


def resize(text, values):
    lines = text.split("\n")
    for name, value in values.items():
        pat = re.compile(r"^(\s*\.let\s+" + re.escape(name) + r"\s*=\s*)([^;]*?)(\s*(;.*)?)$")
        for i, line in enumerate(lines):
            m = pat.match(line)
            if m:
                lines[i] = m.group(1) + str(value) + m.group(3)
                break
        else:
            raise SystemExit(f"resize.py: no '.let {name} =' line")
    return "\n".join(lines)


def main(argv):
    out = None
    src = None
    values = {}
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "-o":
            out = argv[i + 1]
            i += 2
            continue
        if "=" in a:
            k, v = a.split("=", 1)
            values[k] = v
        elif src is None:
            src = a
        else:
            raise SystemExit(f"resize.py: unexpected argument {a!r}")
        i += 1
    if src is None:
        raise SystemExit(__doc__)
    with open(src) as f:
        text = resize(f.read(), values)
    if out is None or out == "-":
        sys.stdout.write(text)
    else:
        with open(out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
