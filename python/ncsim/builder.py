"""Build NCA programs from Python.

Two layers, usable separately:

* `Program` writes the text of a program: directives (`.arch`, `.chips`, `.let`, `.hbm`,
  `.sbuf`, `.psum`, `.sem`, `.group`, `.core`), one instruction stream per engine, `.loop`
  blocks, and the source-line map (`.source NAME` once, `.loc N` whenever the line an
  instruction comes from changes). `Program.text()` is what `ncsim.assemble` (or `ncsim asm`)
  takes. Views can be written by name (`"x[0:128, 0:512]"`) or built with `raw_view`.

* `EventEmitter` (with `Ring` and `Pump`) schedules with *events* instead of semaphore counts:
  an instruction names the events it waits for and the events it posts; the emitter turns them
  into `wait SEM >= N` clauses on per-agent semaphores, drops waits that the stream's own order
  or an earlier wait already implies, splits more than two waits over `nop`s, and, in a second
  pass, posts only the semaphores that some other agent waits on (so `ncsim check` finds no
  orphan posts). kernels/gen/tp_decoder.py is written with it.

Nothing here runs a program; it produces text.
"""
from collections import deque

ENGINES = ("sp", "pe", "act", "dve", "pool", "cc")

#: NKI/NumPy style names of the NCA data types, and their sizes in bytes.
DTYPE_SIZE = {"fp32": 4, "fp16": 2, "bf16": 2, "tf32": 4, "fp8e4": 1, "fp8e5": 1, "fp8e3": 1,
              "i8": 1, "u8": 1, "i16": 2, "u16": 2, "i32": 4, "u32": 4}


def raw_view(space, dtype, offset, dims, p0=None, p1=None):
    """The raw form of a view (ISA.md 5.1).

    space: "sb", "ps" or "hbm"; offset: byte offset in each partition (sb/ps) or HBM byte
    address; dims: [(stride_elems, count), ...] outermost first (free dims for sb/ps, all dims
    for hbm); p0:p1 the partition range (sb/ps only)."""
    d = ", ".join(f"{s}x{c}" for s, c in dims) if dims else "1x1"
    if space == "hbm":
        return f"hbm:{dtype}+{offset}[{d}]"
    return f"{space}:{dtype}@{p0}:{p1}+{offset}[{d}]"


class Program:
    """The text of an NCA program, built directive by directive.

    Instructions go to the stream of the current core block and engine; `loc(line)` sets the
    source line recorded for the instructions that follow (emitted as `.loc` only when it
    changes within a stream)."""

    def __init__(self, arch=None, chips=None, source=None, comment=None):
        self.head = []
        if comment:
            self.head += ["; " + ln if ln else ";" for ln in comment.splitlines()]
        if source:
            self.head.append(f".source {source}")
        if arch:
            self.head.append(f".arch {arch}")
        if chips:
            self.head.append(f".chips {chips}")
        self.decls = []            # global declarations
        self.blocks = []           # [(core list text, decls, {engine: lines})]
        self._block = None
        self._loc = 0
        self._stream_loc = {}
        self.sems = set()

    # ---- declarations
    def let(self, name, expr):
        self._decl(f".let {name} = {expr}")

    def hbm(self, name, dtype, shape, kind, addr=None, chip=None):
        s = f".hbm {name} {dtype} [{', '.join(str(d) for d in shape)}] {kind}"
        if addr is not None:
            s += f" @{addr}"
        if chip is not None:
            s += f" chip={chip}"
        self.decls.append(s)

    def sbuf(self, name, dtype, shape, pstart=None, offset=None):
        self._decl(self._onchip(".sbuf", name, dtype, shape, pstart, offset))

    def psum(self, name, dtype, shape, pstart=None, offset=None):
        self._decl(self._onchip(".psum", name, dtype, shape, pstart, offset))

    def sem(self, name, value=None):
        self.sems.add(name)
        self._decl(f".sem {name}" + ("" if value is None else f" = {value}"))

    def group(self, name, cores):
        self.decls.append(f".group {name} = {', '.join(str(c) for c in cores)}")

    @staticmethod
    def _onchip(kw, name, dtype, shape, pstart, offset):
        s = f"{kw} {name} {dtype} [{', '.join(str(d) for d in shape)}]"
        if pstart is not None:
            s += f" @{pstart}"
        if offset is not None:
            s += f" +{offset}"
        return s

    def _decl(self, line):
        (self._block[1] if self._block else self.decls).append(line)

    # ---- streams
    def core(self, cores):
        """Start a `.core` block (cores: an int, "A..B" or a list)."""
        if isinstance(cores, (list, tuple)):
            cores = ", ".join(str(c) for c in cores)
        self._block = (str(cores), [], {e: [] for e in ENGINES})
        self.blocks.append(self._block)
        self._stream_loc = {}

    def _streams(self):
        if self._block is None:
            self._block = (None, [], {e: [] for e in ENGINES})
            self.blocks.append(self._block)
        return self._block[2]

    def loc(self, line):
        """Source line recorded for the following instructions (0: unknown)."""
        self._loc = int(line)

    def emit(self, engine, text, waits=(), posts=(), line=None):
        """Append `text` to `engine`'s stream with clauses.

        waits: [(sem, n)] for `wait sem >= n`, or [(sem, "==", n)]; posts: [sem] (add 1) or
        [(sem, op, n)] with op "+=", "-=" or "=". At most 2 of each (ISA.md 6)."""
        if len(waits) > 2 or len(posts) > 2:
            raise ValueError("an instruction carries at most 2 waits and 2 posts")
        st = self._streams()[engine]
        ln = self._loc if line is None else int(line)
        key = (id(self._block), engine)
        if self._stream_loc.get(key) != ln:
            st.append(f"    .loc {ln}")
            self._stream_loc[key] = ln
        cl = []
        for w in waits:
            cl.append(f"wait {w[0]} >= {w[1]}" if len(w) == 2 else f"wait {w[0]} {w[1]} {w[2]}")
        for p in posts:
            if isinstance(p, str):
                cl.append(f"post {p}")
            elif p[1] == "+=" and p[2] == 1:
                cl.append(f"post {p[0]}")
            else:
                cl.append(f"post {p[0]} {p[1]} {p[2]}")
        st.append("    " + text + "".join(" | " + c for c in cl))

    def raw(self, engine, line):
        """Append a line as written (a `.loop`, `.let`, `.if` ... inside a stream)."""
        self._streams()[engine].append(line)

    def loop(self, engine, var, start, end, step=None):
        self.raw(engine, f"    .loop {var} = {start}, {end}" + ("" if step is None else f", {step}"))

    def endloop(self, engine):
        self.raw(engine, "    .endloop")

    def count(self):
        """Instruction lines emitted so far (directives excluded)."""
        n = 0
        for _, _, streams in self.blocks:
            for lines in streams.values():
                n += sum(1 for ln in lines if not ln.lstrip().startswith("."))
        return n

    def text(self):
        out = list(self.head) + list(self.decls)
        for cores, decls, streams in self.blocks:
            if cores is not None:
                out.append(f".core {cores}")
            out += decls
            for e in ENGINES:
                if streams[e]:
                    out.append(f".engine {e}")
                    out += streams[e]
        return "\n".join(out) + "\n"


class EventEmitter:
    """Engine streams with event-based waits.

    Every post names an event key and a semaphore; the semaphore belongs to one agent (the
    engine, or the DMA queue `q<N>` for a transfer) and counts that agent's posts in order, so
    an event is `(semaphore, count)`. A wait on an event becomes `wait sem >= count` unless the
    waiting engine is the agent itself (program order) or an earlier wait of that engine already
    covers it. Build twice: the first pass records which semaphores other agents wait on
    (`cross`); the second, given them as `needed`, posts only those."""

    def __init__(self, needed=None):
        self.out = {e: [] for e in ENGINES}
        self.cnt = {}          # semaphore -> posts so far
        self.agent = {}        # semaphore -> the engine or queue that posts it
        self.ev = {}           # event key -> (semaphore, count, agent)
        self.waited = {e: {} for e in ENGINES}
        self.cross = set()     # semaphores some other agent waits on
        self.needed = needed   # second pass: only these semaphores are posted
        self.issuer = {}       # DMA semaphore -> engine that issues its transfers
        self.maxwait = {}      # semaphore -> largest count any stream waits for
        self.issuing = None

    def has(self, key):
        return key in self.ev

    def mark(self, key):
        """A marker event (no semaphore): only gates when the walk may emit something."""
        self.ev[key] = (None, 0, None)

    def _waits(self, eng, waits):
        ws = {}
        for k in waits:
            if k is None:
                continue
            if k not in self.ev:
                raise KeyError(f"{eng}: wait on {k!r} before it is posted (schedule order)")
            sem, c, ag = self.ev[k]
            if sem is None:
                continue               # a marker: orders the walk only
            if ag == eng:
                continue               # the engine's own program order
            if self.waited[eng].get(sem, 0) >= c:
                continue               # an earlier wait of this stream already covers it
            ws[sem] = max(ws.get(sem, 0), c)
        items = sorted(ws.items())
        for s, c in items:
            self.waited[eng][s] = c
            self.maxwait[s] = max(self.maxwait.get(s, 0), c)
            self.cross.add(s)
        return items

    def _posts(self, agent, posts):
        names = []
        for key, sem in posts:
            if self.needed is not None and sem not in self.needed:
                self.ev[key] = (sem, 0, agent)     # only its own agent could wait on it
                continue
            a = self.agent.setdefault(sem, agent)
            if a != agent:
                raise ValueError(f"semaphore {sem} posted by {a} and {agent}")
            if agent.startswith("q"):
                self.issuer[sem] = self.issuing
            self.cnt[sem] = self.cnt.get(sem, 0) + 1
            self.ev[key] = (sem, self.cnt[sem], agent)
            names.append(sem)
        return names

    def raw(self, eng, line):
        self.out[eng].append(line)

    def drain(self):
        """The issuing engine finally waits for transfers whose last posts nobody observes
        (the run would wait for them anyway; this keeps every post observable)."""
        for sem in sorted(self.issuer):
            if self.maxwait.get(sem, 0) < self.cnt.get(sem, 0):
                self.out[self.issuer[sem]].append(f"    nop | wait {sem} >= {self.cnt[sem]}")

    def emit(self, eng, text, waits=(), posts=(), queue=None, indent="    "):
        agent = eng if queue is None else f"q{queue}"
        self.issuing = eng
        ws = self._waits(eng, waits)
        while len(ws) > 2:
            (a, x), (b, y) = ws[0], ws[1]
            ws = ws[2:]
            self.out[eng].append(f"{indent}nop | wait {a} >= {x} | wait {b} >= {y}")
        ps = self._posts(agent, posts)
        if len(ps) > 2 and queue is not None:
            raise ValueError("a DMA carries at most 2 posts")
        cl = [f"wait {s} >= {c}" for s, c in ws] + [f"post {s}" for s in ps[:2]]
        self.out[eng].append(indent + text + "".join(" | " + c for c in cl))
        for s in ps[2:]:
            self.out[eng].append(f"{indent}nop | post {s}")

    def chain(self, eng, n, body, waits=(), posts=()):
        """Emit body(k, first, last) for k = 0..n-1; the first instruction waits, the last posts;
        iterations 1..n-2 become one .loop (body must depend on k only through the text)."""
        if n == 1:
            lines = body("0", True, True)
            if len(lines) == 1:
                self.emit(eng, lines[0], waits, posts)
                return
            self.emit(eng, lines[0], waits)
            for ln in lines[1:-1]:
                self.raw(eng, "    " + ln)
            self.emit(eng, lines[-1], (), posts)
            return
        lines = body("0", True, False)
        self.emit(eng, lines[0], waits)
        for ln in lines[1:]:
            self.raw(eng, "    " + ln)
        if n > 2:
            if n > 3:
                self.raw(eng, f"    .loop kk = 1, {n - 1}")
                for ln in body("kk", False, False):
                    self.raw(eng, "        " + ln)
                self.raw(eng, "    .endloop")
            else:
                for ln in body("1", False, False):
                    self.raw(eng, "    " + ln)
        lines = body(str(n - 1), False, True)
        for ln in lines[:-1]:
            self.raw(eng, "    " + ln)
        self.emit(eng, lines[-1], (), posts)


class Ring:
    """A buffer of n slots; item k may be written once every release of item k - n is posted."""

    def __init__(self, n):
        self.n = n
        self.rel = {}

    def slot(self, k):
        return k % self.n

    def release(self, k, key):
        self.rel.setdefault(k, []).append(key)

    def before(self, k):
        """Event keys that must precede writing item k (None when the slot is fresh)."""
        if k < self.n:
            return []
        keys = self.rel.get(k - self.n)
        if not keys:
            raise KeyError(f"ring item {k - self.n} has no release recorded")
        return keys


class Pump:
    """Loads emitted in order as soon as their dependencies exist in the global order."""

    def __init__(self, g):
        self.g = g
        self.items = deque()

    def add(self, deps, fn):
        self.items.append((deps, fn))

    def run(self):
        while self.items:
            deps, fn = self.items[0]
            if callable(deps):
                deps = deps()
            if not all(self.g.has(k) for k in deps):
                return
            self.items.popleft()
            fn()
