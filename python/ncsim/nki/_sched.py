"""The lowering's instruction scheduler (docs/nki.md, "Scheduling").

The tracer emits instructions in the kernel's order. The Neuron compiler's back-end instead
unrolls the loops and list-schedules each engine's in-order stream, adding semaphore waits for
the dependences (shared knowledge of the compiler: each engine runs its own stream in order; the
scheduler may reorder unless the kernel pins the order). This module does the same to the
tracer's node list:

- a node's dependences are every earlier access it conflicts with, as the tracer finds them
  (read after write, write after read, write after write, on SBUF, PSUM and HBM, buffer reuse
  included), on its own engine too: the tracer's waits name only the latest conflicting
  instruction of each other agent and rely on that agent's order for the rest, which the
  scheduler changes. Where the tracer drops a read because a later read of the same agent
  covers it, the two reads keep their order (later writes are checked against the second);
- nodes traced inside `ncc.no_reorder()` keep their trace order among themselves;
- a list scheduler with a bounded window: only the `window` oldest unscheduled nodes (in trace
  order) are candidates, as a back-end schedules a window of unrolled code; among those whose
  dependences are scheduled, it takes the one that can start earliest by a simple estimate of
  each engine's and queue's busy time, the oldest on a tie (so without reordering opportunities
  the trace order stays);
- the semaphore waits are then computed again for the new order, by the tracer's rule (vector
  clocks, a transfer not covered by its issuing engine's interlock).

Where libncsim loads, Tracer.finish runs these passes, and the writing of the streams
(write, below) and their folding, in C (_native.py, api/nki_passes.c: the same results, byte
for byte); this module is their reference and the fallback (docs/nki.md, "Cost of
lowering").

The estimates are the scheduler's own (a compiler's cost guess: `Tracer.emit`'s per-engine
figure, and a latency plus bandwidth for a transfer); the simulated time comes from the C
model whatever they are. They decide only the order, and any order the scheduler produces
respects every dependence, so the results are those of the trace order."""
import heapq

# A transfer's estimated time, from the trn1 preset's DMA figures (models/presets/trn1.json,
# docs/cost-model.md section 9): its queue is busy for the larger of its descriptors (one per
# partition row, 140 ns each, over 16 engines) and its data (16 engines at 18.7 B/ns), and its
# result arrives ~1.3 us after it starts (the trigger-to-data latency a stream of transfers
# hides). The scheduler only compares such estimates; it does not read the preset.
DMA_DESCRIPTOR_NS = 140.0
DMA_ENGINES = 16
DMA_BYTES_PER_NS = 16 * 18.7
DMA_LATENCY_NS = 1300.0
ISSUE_NS = 50.0            # what issuing a transfer takes its engine in the estimate (the
                           # preset's sp issue: 60 ns)


def dma_estimate(nbytes, rows):
    """(queue occupancy, latency) of a transfer of nbytes in rows contiguous pieces, in ns."""
    return max(-(-rows // DMA_ENGINES) * DMA_DESCRIPTOR_NS, nbytes / DMA_BYTES_PER_NS), \
        DMA_LATENCY_NS


# VectorE instructions that take a multiple of the per-element time the tracer's estimate
# (Tracer.emit: N cycles at the engine's clock) assumes: two input streams (tensor_tensor but
# on all-bf16 operands, scans, selects, scalar_tensor_tensor), the reciprocal (docs/cost-model.md
# section 5; the factors round the trn1 preset's).
DVE = 3
_DVE_FACTOR = {"tensor_tensor": 2.0, "tensor_scan": 2.0, "select": 2.0,
               "scalar_tensor_tensor": 2.0, "reciprocal": 3.0}


def transfer_size(v):
    """(bytes, contiguous rows) of a transfer that writes view v (Tracer.emit keeps it with the
    instruction, so that a replayed loop iteration (_steady.py) carries it without views)."""
    nbytes = v.dtype.itemsize
    for d in v.shape:
        nbytes *= d
    rows = v.shape[v.pdim] if v.pdim is not None else (v.shape[0] if v.shape else 1)
    return nbytes, rows


def annotate(nd, deps, queue, est, pinned):
    """Tracer.emit's hook: keep what the scheduler needs of an instruction it just emitted.
    est: the engine's estimated ns, or (bytes, rows) of a transfer (transfer_size)."""
    nd.deps = deps
    nd.pin = pinned > 0
    if queue is None:
        if nd.eng == DVE:
            op = nd.text.split(" ", 1)[0]
            f = _DVE_FACTOR.get(op)
            if f is not None and not (op == "tensor_tensor" and nd.text.count("bf16") >= 3):
                est *= f
        nd.cost = est
    else:
        nd.cost = dma_estimate(*est)


def run(nodes, window, n_engines, n_queues, native=False):
    """Schedule the tracer's nodes and recompute their waits (Tracer.finish's hook). native:
    do both in C (_native.py: the same order and waits; Tracer.finish passes
    _native.enabled(policy))."""
    n_agents = n_engines + n_queues
    if native:
        from . import _native
        return _native.run(nodes, window, n_engines, n_queues, ISSUE_NS)
    if any(nd.deps is None for nd in nodes):
        # an instruction without its dependences (not the tracer's: it annotates every node
        # when it leaves the waits to this pass): the order and the waits given stand
        return nodes
    order = schedule(nodes, n_engines, n_agents, window)
    # the tracer leaves the waits to this pass (Tracer._emit_tail): computed here also when
    # the order is the kernel's, by the rule the tracer applies without a scheduler
    return assign_waits(order, n_engines, n_agents, n_queues)


def schedule(nodes, n_engines, n_agents, window):
    """Return the nodes in a new order (a list). Each node has .eng (issuing engine), .agent
    (the engine, or n_engines + queue for a transfer), .idx (its index in its agent's trace
    order), .deps ([(agent, trace index)] of the earlier instructions it must follow, its own
    agent's included), .cost (estimated ns; (queue occupancy, latency) of a transfer), .pin
    (traced inside no_reorder)."""
    n = len(nodes)
    if n == 0 or window <= 1:
        return list(nodes)
    by_agent = [[] for _ in range(n_agents)]        # agent -> positions in trace order
    for p, nd in enumerate(nodes):
        by_agent[nd.agent].append(p)
    preds = [None] * n                              # position -> positions it follows
    succs = [[] for _ in range(n)]
    remaining = [0] * n
    last_pin = -1
    for p, nd in enumerate(nodes):
        ps = {by_agent[a][i] for a, i in nd.deps} if nd.deps else set()
        if nd.pin:
            if last_pin >= 0:
                ps.add(last_pin)
            last_pin = p
        ps.discard(p)
        preds[p] = ps
        remaining[p] = len(ps)
        for q in ps:
            succs[q].append(p)
    finish = [0.0] * n
    ready_at = [0.0] * n
    scheduled = [False] * n
    admitted = 0                                    # positions < admitted are in the window
    wait_heap = [[] for _ in range(n_engines)]      # engine -> (ready time, position)
    avail_heap = [[] for _ in range(n_engines)]     # engine -> position (ready by eng_free)
    eng_free = [0.0] * n_engines
    q_free = [0.0] * n_agents

    def push(p):
        r = 0.0
        for q in preds[p]:
            if finish[q] > r:
                r = finish[q]
        ready_at[p] = r
        heapq.heappush(wait_heap[nodes[p].eng], (r, p))

    head = 0
    order = []
    while len(order) < n:
        lim = min(n, head + window)                 # admit the window
        while admitted < lim:
            p = admitted
            admitted += 1
            if remaining[p] == 0:
                push(p)
        # each engine's best candidate: the oldest of those that can start when the engine is
        # free, else the one ready first; then the engine whose candidate starts first
        best = None
        for e in range(n_engines):
            wh, ah, f = wait_heap[e], avail_heap[e], eng_free[e]
            while wh and wh[0][0] <= f:
                heapq.heappush(ah, heapq.heappop(wh)[1])
            if ah:
                cand = (f, ah[0], e)
            elif wh:
                cand = (wh[0][0], wh[0][1], e)
            else:
                continue
            if best is None or cand < best:
                best = cand
        start, p, e = best
        if avail_heap[e] and avail_heap[e][0] == p:
            heapq.heappop(avail_heap[e])
        else:
            heapq.heappop(wait_heap[e])
        nd = nodes[p]
        ag = nd.agent
        if ag >= n_engines:                         # a transfer: issued by e, run by its queue
            s = max(start, q_free[ag])
            occ, lat = nd.cost
            q_free[ag] = s + occ
            finish[p] = s + occ + lat
            eng_free[e] = start + ISSUE_NS
        else:
            finish[p] = start + nd.cost
            eng_free[e] = finish[p]
        scheduled[p] = True
        order.append(nd)
        while head < n and scheduled[head]:
            head += 1
        for q in succs[p]:
            remaining[q] -= 1
            if remaining[q] == 0 and q < admitted:
                push(q)
    return order


def clock_waits(vc, known, qvc, clocks, e, ag, idx, queue, deps):
    """The semaphore waits of one instruction, by vector clocks; updates the clocks. The tracer
    (Tracer._emit_tail, in trace order) and the scheduler (assign_waits, in the new order) both
    use it. vc: the issuing engine e's clock; known: per engine, how far it knows its own
    instructions complete (a transfer is ordered after its issuing engine's earlier
    instructions only as far as semaphores show them complete, not by program order: the
    engine's interlock does not cover transfers, docs/check.md); qvc: per queue, its clock;
    clocks: per agent, the clock each of its instructions carried; ag, idx: the instruction's
    agent and index in it; queue: its DMA queue or None; deps: {agent: latest index} it must
    follow. Returns [(agent, index)] or None."""
    if queue is not None:
        # max(vc with known[e] at e, the queue's clock), with one list made
        qv = qvc[queue]
        cur = list(map(max, vc, qv))
        cur[e] = known[e] if known[e] > qv[e] else qv[e]
    else:
        cur = vc
    waits = None
    if deps:
        for a2, i2 in (sorted(deps.items(), key=lambda x: -x[1]) if len(deps) > 1 else
                       deps.items()):
            if cur[a2] >= i2 or a2 == ag:
                continue
            if waits is None:
                waits = []
            waits.append((a2, i2))
            c2 = clocks[a2][i2]
            vc[:] = map(max, vc, c2)
            if c2[e] > known[e]:
                known[e] = c2[e]
            if cur is not vc:
                cur[:] = map(max, cur, c2)
    if queue is not None:
        if waits is not None:
            # max(cur, vc with known[e] at e); without a wait, vc and known did not change
            # and cur already holds that maximum
            ce = cur[e] if cur[e] > known[e] else known[e]
            cur[:] = map(max, cur, vc)
            cur[e] = ce
        cur[ag] = idx
        qvc[queue] = cur
        clocks[ag].append(tuple(cur))
    else:
        vc[ag] = idx
        clocks[ag].append(tuple(vc))
    return waits


def assign_waits(nodes, n_engines, n_agents, n_queues):
    """Give nodes in their final order new per-agent indices and recompute their waits by the
    tracer's rule (Tracer.emit: vector clocks; a transfer is ordered after its issuing engine's
    earlier instructions only as far as semaphores show them complete)."""
    count = [0] * n_agents
    for nd in nodes:
        count[nd.agent] += 1
    newidx = [[0] * c for c in count]               # agent -> trace index -> new index
    count = [0] * n_agents
    for nd in nodes:
        ag = nd.agent
        newidx[ag][nd.idx] = count[ag]
        count[ag] += 1
    vcs = [[-1] * n_agents for _ in range(n_engines)]
    qvc = [[-1] * n_agents for _ in range(n_queues)]
    known = [-1] * n_engines
    clocks = [[] for _ in range(n_agents)]
    for nd in nodes:
        ag, e = nd.agent, nd.eng
        idx = newidx[ag][nd.idx]
        deps = {}
        for a, i in nd.deps or ():
            if a != ag:
                j = newidx[a][i]
                if deps.get(a, -1) < j:
                    deps[a] = j
        queue = ag - n_engines if ag >= n_engines else None
        waits = clock_waits(vcs[e], known, qvc, clocks, e, ag, idx, queue, deps)
        nd.idx = idx
        nd.waits = waits
    return nodes


def write(nodes, sem_names, engine_names, fold_loops, fast=True, native=False):
    """The program's lines after its buffers (Tracer.finish): a `.sem` line per agent that some
    wait names, then per engine with instructions `.engine NAME` and its stream, in the nodes'
    order -- `.loc LINE` where the source line changes, a `nop` per two waits beyond two, the
    instruction with its waits (`wait s_X >= R`, R the waited instruction's rank among its
    agent's posting ones) and its `post` when a wait names it -- folded into loops if
    fold_loops (_fold.fold(lines, fast, native)). _native.run_and_write writes the same in C."""
    n_agents = len(sem_names)
    posted = [set() for _ in range(n_agents)]
    for n in nodes:
        if n.waits:
            for a, i in n.waits:
                posted[a].add(i)
    rank = []
    for a in range(n_agents):
        rank.append({i: r + 1 for r, i in enumerate(sorted(posted[a]))})
    out = []
    for a in range(n_agents):
        if posted[a]:
            out.append(f".sem {sem_names[a]}")
    streams = [[] for _ in engine_names]
    lastline = [None] * len(engine_names)
    for n in nodes:
        st = streams[n.eng]
        if lastline[n.eng] != n.line:
            st.append(f"    .loc {n.line}")
            lastline[n.eng] = n.line
        cl = ""
        if n.waits:
            ws = [f"wait {sem_names[a]} >= {rank[a][i]}" for a, i in n.waits]
            while len(ws) > 2:
                st.append(f"    nop | {ws[0]} | {ws[1]}")
                ws = ws[2:]
            cl = "".join(" | " + w for w in ws)
        if n.idx in posted[n.agent]:
            cl += f" | post {sem_names[n.agent]}"
        st.append("    " + n.text + cl)
    for e, st in zip(engine_names, streams):
        if st:
            out.append(f".engine {e}")
            if fold_loops:
                from . import _fold
                st = _fold.fold(st, fast, native)
            out += st
    return out
