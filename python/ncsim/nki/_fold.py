"""Folding of an engine's instruction stream into NCA `.loop` nests (docs/nki.md, "Loops in
the program text").

The tracer unrolls every loop. This pass finds runs of lines that repeat with a period: the
same text except for view offsets (`+N` of a raw view), semaphore values (`>= N`) and
integer immediates (`base=N`, an integer operand: _VAR) that grow by the same amount from one
period to the next, and writes each run as
`.loop iD = 0, n` over one period with those numbers as `base + step*iD`. Folding repeats
on its own output, so nested loops come out nested. The folded text assembles to exactly the
instructions of the unfolded one (python/tests/nki/test_nki_fold.py compares the
disassemblies); a run it cannot express stays as it is. fold(native=True) runs the fast search
in C (_native.py, api/nki_passes.c: the same lines), this module being its reference and
fallback."""
import re
from itertools import chain as _chain
from operator import sub as _sub

# the numbers a period may change: a raw view's offset (OFFSET), a wait's value, an integer
# immediate (IMMEDIATE: `base=N` of iota and affine_select, an integer operand `, N` ending a
# field and not an item of a [...] list: the assembler takes an expression there); never a
# float. (The steady-state recorder lets the same offsets and immediates grow: _steady._OFF.)
OFFSET = r"(?<=[a-z0-9]\+)\d+(?=\[)"
IMMEDIATE = r"(?<=base=)-?\d+|(?<=, )-?\d+(?=,| \||$)(?![^\[\]]*\])"
_VAR = re.compile(rf"({OFFSET}|(?<=>= )\d+|{IMMEDIATE})")
MAXP = 96          # longest period searched, in items
MIN_LINES = 4      # a run shorter than this many lines stays unfolded
CAPS = (1, 2, 4, 8, 16, 32, 64, MAXP)   # longest periods of the successive rounds


class _Line:
    __slots__ = ("key", "vals", "parts", "nlines")

    def __init__(self, text):
        parts = _VAR.split(text)
        # re.split with one group: text, number, text, number, ..., text
        self.parts = self.key = tuple(parts[0::2])
        self.vals = tuple(map(int, parts[1::2]))
        self.nlines = 1

    def render(self, exprs, depth, out, indent):
        t = self.parts
        s = [t[0]]
        for e, rest in zip(exprs, t[1:]):
            s.append(e)
            s.append(rest)
        out.append(indent + "".join(s).lstrip())


class _Loop:
    __slots__ = ("key", "vals", "body", "deltas", "n", "nlines")

    def __init__(self, body, deltas, n):
        self.body = body
        self.deltas = deltas
        self.n = n
        self.key = ("loop", n, tuple(it.key for it in body), deltas)
        self.vals = tuple(v for it in body for v in it.vals)
        self.nlines = n * sum(it.nlines for it in body)

    def render(self, exprs, depth, out, indent):
        var = f"i{depth}"
        out.append(f"{indent}.loop {var} = 0, {self.n}")
        k = 0
        for it in self.body:
            m = len(it.vals)
            sub = []
            for e, d in zip(exprs[k:k + m], self.deltas[k:k + m]):
                sub.append(e if d == 0 else f"({e}{'+' if d > 0 else '-'}{abs(d)}*{var})")
            it.render(sub, depth + 1, out, indent + "    ")
            k += m
        out.append(f"{indent}.endloop")


_IDS = {}


def _kid(key):
    k = _IDS.get(key)
    if k is None:
        k = _IDS[key] = len(_IDS)
    return k


def _fold_once(items, maxp=None):
    maxp = MAXP if maxp is None else maxp
    out = []
    n_items = len(items)
    keys = [_kid(it.key) for it in items]
    vals = [it.vals for it in items]
    i = 0
    changed = False
    while i < n_items:
        best = None
        ki = keys[i]
        hi = min(n_items, i + maxp + 1)
        for j in range(i + 1, hi):
            if keys[j] != ki:
                continue
            p = j - i
            if i + 2 * p > n_items:
                break
            if keys[i:j] != keys[j:j + p]:
                continue
            deltas = []
            for a in range(p):
                va, vb = vals[i + a], vals[j + a]
                deltas.extend(y - x for x, y in zip(va, vb))
            deltas = tuple(deltas)
            n = 2
            base = i
            while base + (n + 1) * p <= n_items:
                s = base + n * p
                if keys[s:s + p] != keys[i:i + p]:
                    break
                ok = True
                k = 0
                for a in range(p):
                    for x, y in zip(vals[i + a], vals[s + a]):
                        if y - x != n * deltas[k]:
                            ok = False
                            break
                        k += 1
                    if not ok:
                        break
                if not ok:
                    break
                n += 1
            lines = n * sum(it.nlines for it in items[i:i + p])
            if lines >= MIN_LINES and (best is None or n * p > best[0] * best[1]):
                best = (p, n, deltas)
        if best is None:
            out.append(items[i])
            i += 1
            continue
        p, n, deltas = best
        out.append(_Loop(items[i:i + p], deltas, n))
        i += n * p
        changed = True
    return out, changed


def _fold_once_fast(items, maxp=None):
    """_fold_once with the same result: the candidate periods found from each key's list of
    positions, and the lines of a run from prefix sums, instead of scanning and summing."""
    maxp = MAXP if maxp is None else maxp
    out = []
    n_items = len(items)
    keys = [_kid(it.key) for it in items]
    vals = [it.vals for it in items]
    pos = {}
    for x, k in enumerate(keys):
        lst = pos.get(k)
        if lst is None:
            pos[k] = [x]
        else:
            lst.append(x)
    rank = [0] * n_items            # rank[x]: x's place in its key's position list
    for lst in pos.values():
        for r, x in enumerate(lst):
            rank[x] = r
    pre = [0]
    for it in items:
        pre.append(pre[-1] + it.nlines)
    i = 0
    changed = False
    while i < n_items:
        best = None
        ki = keys[i]
        plist = pos[ki]
        hi = min(n_items, i + maxp + 1)
        for r in range(rank[i] + 1, len(plist)):
            j = plist[r]
            if j >= hi:
                break
            p = j - i
            if i + 2 * p > n_items:
                break
            if keys[i:j] != keys[j:j + p]:
                continue
            # per item of the period, the step of its numbers from one period to the next;
            # period n continues the run iff its numbers are period n-1's plus the steps
            # (the same test as vals[s] - vals[i] == n * step, given periods 1..n-1 passed)
            dl = [tuple(map(_sub, vals[j + a], vals[i + a])) for a in range(p)]
            deltas = tuple(_chain.from_iterable(dl)) if p > 1 else dl[0]
            n = 2
            kper = keys[i:j]
            while i + (n + 1) * p <= n_items:
                s = i + n * p
                if keys[s:s + p] != kper:
                    break
                ok = True
                for a in range(p):
                    if tuple(map(_sub, vals[s + a], vals[s - p + a])) != dl[a]:
                        ok = False
                        break
                if not ok:
                    break
                n += 1
            lines = n * (pre[j] - pre[i])
            if lines >= MIN_LINES and (best is None or n * p > best[0] * best[1]):
                best = (p, n, deltas)
        if best is None:
            out.append(items[i])
            i += 1
            continue
        p, n, deltas = best
        out.append(_Loop(items[i:i + p], deltas, n))
        i += n * p
        changed = True
    return out, changed


def _fold_runs(items):
    """_fold_once_fast(items, 1) with the same result, without its position lists: runs of
    equal keys whose numbers step by the same amounts from one item to the next."""
    out = []
    n_items = len(items)
    keys = [_kid(it.key) for it in items]
    i = 0
    changed = False
    while i < n_items:
        k = keys[i]
        j = i + 1
        if j < n_items and keys[j] == k:
            it = items[i]
            d = tuple(map(_sub, items[j].vals, it.vals))
            e = j + 1
            while e < n_items and keys[e] == k and \
                    tuple(map(_sub, items[e].vals, items[e - 1].vals)) == d:
                e += 1
            n = e - i
            if n * it.nlines >= MIN_LINES:
                out.append(_Loop([it], d, n))
                i = e
                changed = True
                continue
        out.append(items[i])
        i += 1
    return out, changed


def fold(lines, fast=True, native=False):
    """The lines of one engine's stream (instructions and `.loc`), folded into loops.
    fast=False: the reference search (the same result, slower; for tests). native (with
    fast): the fast search in C (_native.py: the same lines), where it takes the text."""
    if fast and native:
        from . import _native
        out = _native.fold(lines)
        if out is not None:
            return out
    if fast:
        cache = {}
        items = []
        for ln in lines:
            it = cache.get(ln)
            if it is None:
                it = cache[ln] = _Line(ln)
            items.append(it)
    else:
        items = [_Line(ln) for ln in lines]
    once = _fold_once_fast if fast else _fold_once
    try:
        for cap in CAPS:
            for _ in range(6):                 # nesting depth
                items, changed = _fold_runs(items) if fast and cap == 1 else once(items, cap)
                if not changed:
                    break
    finally:
        _IDS.clear()
    out = []
    for it in items:
        it.render([str(v) for v in it.vals], 0, out, "    ")
    return out
