"""Straight-line NCA from a sequential program, with the semaphores a compiler would insert.

The kernel generators (adamw.py, silu.py, ...) describe a kernel as the sequence a compiler
would schedule: engine instructions and DMAs, each with the buffer slots it reads and writes.
Kernel.emit() assigns every instruction its waits: each engine counts its completed
instructions on its own semaphore, each DMA queue counts on one semaphore per issuing
engine the transfers that engine issued on it (a queue lands in the order the transfers were
issued, and two engines issue in no fixed order between them, so one count for both would
let a wait be met by the other engine's transfers), and an instruction waits for the latest
writer of every slot it reads (RAW) and for the latest writer and readers of every slot it
writes (WAR/WAW) on other engines or queues.
Within one engine the interlock orders instructions (ISA.md section 8), so no semaphore is
needed there. At most two waits fit on an instruction; more become a preceding nop.
Because every wait refers to an earlier instruction of the sequence, the program cannot
deadlock."""

ENGINES = ("pe", "act", "dve", "pool", "sp")


class Kernel:
    def __init__(self, header):
        self.header = header          # .arch/.hbm/.core/.sbuf/.psum lines
        self.streams = {e: [] for e in ENGINES}
        self.count = {}               # semaphore -> instructions (or transfers) so far
        self.writer = {}              # slot -> (sem, count)
        self.readers = {}             # slot -> {sem: count}
        self.used_sems = []

    def _sem(self, name):
        if name not in self.count:
            self.count[name] = 0
            self.used_sems.append(name)
        return name

    def _deps(self, own, reads, writes):
        need = {}

        def add(sem, c):
            if sem != own and c > need.get(sem, 0):
                need[sem] = c
        for r in reads:
            if r in self.writer:
                add(*self.writer[r])
        for w in writes:
            if w in self.writer:
                add(*self.writer[w])
            for sem, c in self.readers.get(w, {}).items():
                add(sem, c)
        return need

    def _record(self, sem, reads, writes):
        c = self.count[sem]
        for r in reads:
            self.readers.setdefault(r, {})[sem] = c
        for w in writes:
            self.writer[w] = (sem, c)
            self.readers[w] = {}

    def _emit(self, engine, text, need, post):
        waits = [f"wait {s} >= {c}" for s, c in sorted(need.items())]
        lines = self.streams[engine]
        while len(waits) > 2:
            lines.append("    nop | " + " | ".join(waits[:2]))
            waits = waits[2:]
        clauses = waits + ([f"post {post}"] if post else [])
        lines.append("    " + text + "".join(" | " + c for c in clauses))

    def op(self, engine, text, reads=(), writes=()):
        """An engine instruction; its completion counts on the engine's semaphore."""
        sem = self._sem("s_" + engine)
        need = self._deps(sem, reads, writes)
        self.count[sem] += 1
        self._record(sem, reads, writes)
        self._emit(engine, text, need, sem)

    def dma(self, queue, dst, src, reads=(), writes=(), engine="sp"):
        """A DMA on `queue` issued by `engine`; its landing counts on the semaphore of the
        queue and that engine (`q0` for sp, `q0pool` for pool...)."""
        sem = self._sem(f"q{queue}" if engine == "sp" else f"q{queue}{engine}")
        need = self._deps(sem, reads, writes)
        # the issuing engine orders nothing for the transfer itself
        self.count[sem] += 1
        self._record(sem, reads, writes)
        self._emit(engine, f"dma {dst}, {src}, queue={queue}", need, sem)

    def emit(self):
        out = [self.header.rstrip("\n")]
        out += [f".sem {s}" for s in self.used_sems]
        for e in ENGINES:
            if self.streams[e]:
                out.append(f".engine {e}")
                out += self.streams[e]
        return "\n".join(out) + "\n"
