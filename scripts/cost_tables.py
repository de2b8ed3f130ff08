#!/usr/bin/python3
"""The per-engine formula tables of docs/cost-model.md, from the rows of models/cost.def (the
rows models/cost.c compiles), so that the document and the code cannot drift apart:

    cost_tables.py            rewrite the tables between <!-- BEGIN cost-ENGINE --> and
                              <!-- END cost-ENGINE --> (ENGINE: pe, act, dve, pool, issue)
    cost_tables.py --check    exit 1, naming the tables that differ, if the document is stale
                              (the `cost_doc_tables` test)

Each COST_PE, COST_STREAM and COST_ISSUE row ends with the Markdown cells of its table row;
consecutive rows of one table whose cells other than the instruction are equal share one line
("`shuffle`, `dropout`")."""
import os, re, sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEF = os.path.join(ROOT, "models", "cost.def")
DOC = os.path.join(ROOT, "docs", "cost-model.md")

HEADERS = {
    "pe": ["Instruction", "II (PE cycles)", "N, M, P", "Config keys", "Source",
           "FLOPs (`flops` / `hw_flops`)"],
    "act": ["Instruction", "II (ACT cycles)", "N", "Config keys", "Source"],
    "dve": ["Instruction", "II (DVE cycles)", "N", "Config keys", "Source"],
    "pool": ["Instruction", "II (GpSimd cycles)", "N", "Config keys", "Source"],
    "issue": ["Instruction", "II = latency", "Source"],
}
# number of leading code arguments of each row kind (the rest are document cells)
CODE_ARGS = {"COST_PE": 3, "COST_STREAM": 8, "COST_ISSUE": 2}


def strip_comments(text):
    out, i = [], 0
    while i < len(text):
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            if j < 0:
                sys.exit(f"{DEF}: unterminated comment")
            i = j + 2
        elif text[i] == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(text[i:j + 1])
            i = j + 1
        else:
            out.append(text[i])
            i += 1
    return "".join(out)


def split_args(text, start, where):
    """Arguments of the call whose '(' is at text[start]; returns (args, index after ')')."""
    args, depth, cur, i = [], 0, [], start + 1
    while i < len(text):
        c = text[i]
        if c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([":
            depth += 1
        elif c in ")]":
            if depth == 0:
                args.append("".join(cur).strip())
                return args, i + 1
            depth -= 1
        elif c == "," and depth == 0:
            args.append("".join(cur).strip())
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    sys.exit(f"{DEF}: unterminated row {where}")


def c_string(arg, where):
    """The value of one argument made of C string literals ("a" "b")."""
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"', arg)
    if not parts or re.sub(r'"(?:[^"\\]|\\.)*"', "", arg).strip():
        sys.exit(f"{DEF}: {where}: a document cell must be a string literal, not {arg!r}")
    return "".join(parts).replace('\\"', '"').replace("\\\\", "\\")


def rows():
    text = strip_comments(open(DEF).read())
    tables = {k: [] for k in HEADERS}
    for m in re.finditer(r"\b(COST_PE|COST_STREAM|COST_ISSUE)\s*\(", text):
        kind = m.group(1)
        args, _ = split_args(text, m.end() - 1, f"{kind} at offset {m.start()}")
        where = f"{kind}({args[0]}{', ' + args[1] if kind == 'COST_STREAM' else ''})"
        cells = [c_string(a, where) for a in args[CODE_ARGS[kind]:]]
        table = {"COST_PE": "pe", "COST_ISSUE": "issue"}.get(kind) or args[1].lower()
        if table not in HEADERS or len(cells) != len(HEADERS[table]):
            sys.exit(f"{DEF}: {where}: {len(cells)} document cells, the {table} table has "
                     f"{len(HEADERS.get(table, []))} columns")
        tables[table].append(cells)
    return tables


def render(header, cells_list):
    merged = []
    for cells in cells_list:
        if merged and merged[-1][1:] == cells[1:]:
            merged[-1][0] += ", " + cells[0]
        else:
            merged.append(list(cells))
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for cells in merged:
        out.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    return "\n".join(out)


def main():
    check = sys.argv[1:] == ["--check"]
    if sys.argv[1:] and not check:
        sys.exit(__doc__)
    doc = open(DOC).read()
    new = doc
    stale = []
    for name, cells in rows().items():
        pat = re.compile(r"(<!-- BEGIN cost-%s -->\n).*?(<!-- END cost-%s -->)" % (name, name),
                         re.S)
        if not pat.search(new):
            sys.exit(f"{DOC}: no <!-- BEGIN cost-{name} --> ... <!-- END cost-{name} --> markers")
        table = render(HEADERS[name], cells)
        before = new
        new = pat.sub(lambda m: m.group(1) + table + "\n" + m.group(2), new)
        if new != before:
            stale.append(name)
    if check:
        if stale:
            print(f"docs/cost-model.md: the {', '.join(stale)} table(s) differ from "
                  "models/cost.def; run scripts/cost_tables.py", file=sys.stderr)
            sys.exit(1)
        return
    if new != doc:
        open(DOC, "w").write(new)


if __name__ == "__main__":
    main()
