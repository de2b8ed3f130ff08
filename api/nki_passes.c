/*
 * nki_passes.c -- the NKI lowering's list scheduler, semaphore waits and loop folding in C
 * (nki_passes.h). Each function follows its Python reference step by step
 * (python/ncsim/nki/_sched.py: schedule, clock_waits, assign_waits; _fold.py: fold,
 * _fold_runs, _fold_once_fast, the render methods), so that the program text is the same byte
 * for byte; the comments name the Python step where the correspondence is not obvious.
 * Internal to the Python frontend: not part of the stable API.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "nki_passes.h"

#define KIND "input"

/* ---- shared checks ------------------------------------------------------------------------ */

/* The node arrays every pass reads: counts, agents, engines, dependence offsets and agents.
 * A dependence's index is checked against its agent's node count by the caller. */
static ncsim_status_t check_nodes(const char *fn, int64_t n, const int32_t *agent,
                                  const int32_t *engine, const int64_t *dep_offsets,
                                  const int32_t *deps, int32_t n_engines, int32_t n_queues)
{
    if (n < 0 || n >= INT32_MAX)
        return api_fail(NCSIM_USAGE, KIND, "%s: node count %lld out of range", fn,
                        (long long)n);
    if (n_engines <= 0 || n_engines > 64 || n_queues < 0 || n_queues > 256)
        return api_fail(NCSIM_USAGE, KIND, "%s: %d engines and %d queues: out of range", fn,
                        (int)n_engines, (int)n_queues);
    if (n == 0)
        return NCSIM_OK;
    if (!agent || !engine || !dep_offsets)
        return api_fail(NCSIM_USAGE, KIND, "%s: a node array is NULL", fn);
    int32_t n_agents = n_engines + n_queues;
    if (dep_offsets[0] != 0)
        return api_fail(NCSIM_USAGE, KIND, "%s: dependence offsets start at %lld, not 0", fn,
                        (long long)dep_offsets[0]);
    for (int64_t p = 0; p < n; p++) {
        if (agent[p] < 0 || agent[p] >= n_agents)
            return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: agent %d out of range 0..%d",
                            fn, (long long)p, (int)agent[p], (int)n_agents - 1);
        if (engine[p] < 0 || engine[p] >= n_engines)
            return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: engine %d out of range 0..%d",
                            fn, (long long)p, (int)engine[p], (int)n_engines - 1);
        if (dep_offsets[p + 1] < dep_offsets[p] || dep_offsets[p + 1] > INT32_MAX)
            return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: dependence offset %lld after "
                            "%lld", fn, (long long)p, (long long)dep_offsets[p + 1],
                            (long long)dep_offsets[p]);
    }
    if (dep_offsets[n] > 0 && !deps)
        return api_fail(NCSIM_USAGE, KIND, "%s: the dependence array is NULL", fn);
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = dep_offsets[p]; k < dep_offsets[p + 1]; k++)
            if (deps[2 * k] < 0 || deps[2 * k] >= n_agents)
                return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: dependence on agent %d, "
                                "out of range 0..%d", fn, (long long)p, (int)deps[2 * k],
                                (int)n_agents - 1);
    return NCSIM_OK;
}

/* Per agent, its nodes' count and where its entries start in an n-long array (CSR). */
static void agent_offsets(int64_t n, const int32_t *agent, int32_t n_agents, int64_t *start)
{
    memset(start, 0, sizeof *start * ((size_t)n_agents + 1));
    for (int64_t p = 0; p < n; p++)
        start[agent[p] + 1]++;
    for (int32_t a = 0; a < n_agents; a++)
        start[a + 1] += start[a];
}

/* ---- the list scheduler (_sched.schedule) -------------------------------------------------- */

typedef struct ready_item {
    double at;                  /* when its dependences are done, by the estimate */
    int64_t pos;
} ready_item_t;

/* Binary min-heaps as heapq keeps them: of (ready time, position), and of positions. The
 * keys are unique (positions are), so the order of pops does not depend on how the heap is
 * laid out, only on its contents. */
static int ready_less(ready_item_t a, ready_item_t b)
{
    return a.at < b.at || (a.at == b.at && a.pos < b.pos);
}

static void ready_push(ready_item_t *h, int64_t *len, ready_item_t x)
{
    int64_t i = (*len)++;
    while (i > 0) {
        int64_t up = (i - 1) / 2;
        if (!ready_less(x, h[up]))
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = x;
}

static ready_item_t ready_pop(ready_item_t *h, int64_t *len)
{
    ready_item_t top = h[0], x = h[--*len];
    int64_t i = 0, m = *len;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && ready_less(h[c + 1], h[c]))
            c++;
        if (!ready_less(h[c], x))
            break;
        h[i] = h[c];
        i = c;
    }
    if (m > 0)
        h[i] = x;
    return top;
}

static void pos_push(int64_t *h, int64_t *len, int64_t x)
{
    int64_t i = (*len)++;
    while (i > 0) {
        int64_t up = (i - 1) / 2;
        if (x >= h[up])
            break;
        h[i] = h[up];
        i = up;
    }
    h[i] = x;
}

static int64_t pos_pop(int64_t *h, int64_t *len)
{
    int64_t top = h[0], x = h[--*len];
    int64_t i = 0, m = *len;
    for (;;) {
        int64_t c = 2 * i + 1;
        if (c >= m)
            break;
        if (c + 1 < m && h[c + 1] < h[c])
            c++;
        if (h[c] >= x)
            break;
        h[i] = h[c];
        i = c;
    }
    if (m > 0)
        h[i] = x;
    return top;
}

typedef struct sched {
    int64_t n;
    int32_t n_engines, n_agents;
    int64_t *pred_start, *pred;     /* position -> the positions it follows (a set) */
    int64_t *succ_start, *succ;     /* position -> the positions that follow it */
    int64_t *remaining;
    double *finish;
    uint8_t *scheduled;
    ready_item_t **wait_heap;       /* engine -> (ready time, position) */
    int64_t *wait_len;
    int64_t **avail_heap;           /* engine -> positions ready by the engine's free time */
    int64_t *avail_len;
    double *eng_free, *q_free;
} sched_t;

static void sched_free(sched_t *s)
{
    free(s->pred_start);
    free(s->pred);
    free(s->succ_start);
    free(s->succ);
    free(s->remaining);
    free(s->finish);
    free(s->scheduled);
    if (s->wait_heap)
        for (int32_t e = 0; e < s->n_engines; e++)
            free(s->wait_heap[e]);
    if (s->avail_heap)
        for (int32_t e = 0; e < s->n_engines; e++)
            free(s->avail_heap[e]);
    free(s->wait_heap);
    free(s->avail_heap);
    free(s->wait_len);
    free(s->avail_len);
    free(s->eng_free);
    free(s->q_free);
}

/* push(p): its ready time is the latest finish of what it follows (0.0 when nothing). */
static void sched_push(sched_t *s, const int32_t *engine, int64_t p)
{
    double r = 0.0;
    for (int64_t k = s->pred_start[p]; k < s->pred_start[p + 1]; k++)
        if (s->finish[s->pred[k]] > r)
            r = s->finish[s->pred[k]];
    int32_t e = engine[p];
    ready_push(s->wait_heap[e], &s->wait_len[e], (ready_item_t){r, p});
}

ncsim_status_t ncsim_nki_internal_schedule(int64_t n, const int32_t *agent,
                                           const int32_t *engine, const int64_t *dep_offsets,
                                           const int32_t *deps, const double *cost,
                                           const uint8_t *pin, int32_t window,
                                           int32_t n_engines, int32_t n_queues,
                                           double issue_ns, int64_t *order)
{
    static const char fn[] = "ncsim_nki_internal_schedule";
    ncsim_status_t st =
        check_nodes(fn, n, agent, engine, dep_offsets, deps, n_engines, n_queues);
    if (st != NCSIM_OK)
        return st;
    if (n > 0 && (!cost || !pin || !order))
        return api_fail(NCSIM_USAGE, KIND, "%s: a node array is NULL", fn);
    if (!isfinite(issue_ns) || issue_ns < 0)
        return api_fail(NCSIM_USAGE, KIND, "%s: issue time %g is not a finite ns figure", fn,
                        issue_ns);
    for (int64_t p = 0; p < n; p++)
        if (!isfinite(cost[2 * p]) || cost[2 * p] < 0 || !isfinite(cost[2 * p + 1]) ||
            cost[2 * p + 1] < 0)
            return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: cost (%g, %g) is not a finite "
                            "ns figure", fn, (long long)p, cost[2 * p], cost[2 * p + 1]);
    if (n == 0)
        return NCSIM_OK;
    if (window <= 1) {
        for (int64_t p = 0; p < n; p++)
            order[p] = p;
        return NCSIM_OK;
    }
    int32_t n_agents = n_engines + n_queues;
    sched_t s = {0};
    s.n = n;
    s.n_engines = n_engines;
    s.n_agents = n_agents;
    int64_t *by_agent_start = calloc((size_t)n_agents + 1, sizeof *by_agent_start);
    int64_t *by_agent = malloc(sizeof *by_agent * (size_t)n);
    int64_t *fill = calloc((size_t)n_agents, sizeof *fill);
    int64_t *stamp = malloc(sizeof *stamp * (size_t)n);
    int64_t n_deps = dep_offsets[n];
    s.pred_start = malloc(sizeof *s.pred_start * ((size_t)n + 1));
    s.pred = malloc(sizeof *s.pred * ((size_t)n_deps + (size_t)n + 1));
    s.succ_start = calloc((size_t)n + 1, sizeof *s.succ_start);
    s.remaining = malloc(sizeof *s.remaining * (size_t)n);
    s.finish = calloc((size_t)n, sizeof *s.finish);
    s.scheduled = calloc((size_t)n, 1);
    s.wait_heap = calloc((size_t)n_engines, sizeof *s.wait_heap);
    s.avail_heap = calloc((size_t)n_engines, sizeof *s.avail_heap);
    s.wait_len = calloc((size_t)n_engines, sizeof *s.wait_len);
    s.avail_len = calloc((size_t)n_engines, sizeof *s.avail_len);
    s.eng_free = calloc((size_t)n_engines, sizeof *s.eng_free);
    s.q_free = calloc((size_t)n_agents, sizeof *s.q_free);
    int ok = by_agent_start && by_agent && fill && stamp && s.pred_start && s.pred &&
             s.succ_start && s.remaining && s.finish && s.scheduled && s.wait_heap &&
             s.avail_heap && s.wait_len && s.avail_len && s.eng_free && s.q_free;
    if (ok) {
        /* each engine's heaps hold at most the nodes it issues */
        int64_t *per_engine = fill; /* borrowed: n_agents >= n_engines entries */
        for (int64_t p = 0; p < n; p++)
            per_engine[engine[p]]++;
        for (int32_t e = 0; e < n_engines && ok; e++) {
            size_t m = (size_t)per_engine[e] + 1;
            s.wait_heap[e] = malloc(sizeof **s.wait_heap * m);
            s.avail_heap[e] = malloc(sizeof **s.avail_heap * m);
            ok = s.wait_heap[e] && s.avail_heap[e];
        }
        memset(fill, 0, sizeof *fill * (size_t)n_agents);
    }
    if (!ok) {
        st = api_fail(NCSIM_NOMEM, "memory", "%s: out of memory for %lld nodes", fn,
                      (long long)n);
        goto out;
    }
    /* by_agent: agent -> positions in trace order */
    agent_offsets(n, agent, n_agents, by_agent_start);
    for (int64_t p = 0; p < n; p++)
        by_agent[by_agent_start[agent[p]] + fill[agent[p]]++] = p;
    /* preds: the set {by_agent[a][i]} of its dependences, the previous pinned node for a
     * pinned one, itself left out */
    for (int64_t p = 0; p < n; p++)
        stamp[p] = -1;
    int64_t last_pin = -1, np = 0;
    for (int64_t p = 0; p < n; p++) {
        s.pred_start[p] = np;
        stamp[p] = p; /* ps.discard(p) */
        for (int64_t k = dep_offsets[p]; k < dep_offsets[p + 1]; k++) {
            int32_t a = deps[2 * k], i = deps[2 * k + 1];
            int64_t cnt = by_agent_start[a + 1] - by_agent_start[a];
            if (i < 0 || i >= cnt) {
                st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld: dependence on instruction %d "
                              "of agent %d, which has %lld", fn, (long long)p, (int)i, (int)a,
                              (long long)cnt);
                goto out;
            }
            int64_t q = by_agent[by_agent_start[a] + i];
            if (stamp[q] != p) {
                stamp[q] = p;
                s.pred[np++] = q;
            }
        }
        if (pin[p]) {
            if (last_pin >= 0 && stamp[last_pin] != p) {
                stamp[last_pin] = p;
                s.pred[np++] = last_pin;
            }
            last_pin = p;
        }
        s.remaining[p] = np - s.pred_start[p];
        for (int64_t k = s.pred_start[p]; k < np; k++)
            s.succ_start[s.pred[k] + 1]++;
    }
    s.pred_start[n] = np;
    for (int64_t p = 0; p < n; p++)
        s.succ_start[p + 1] += s.succ_start[p];
    s.succ = malloc(sizeof *s.succ * ((size_t)np + 1));
    if (!s.succ) {
        st = api_fail(NCSIM_NOMEM, "memory", "%s: out of memory", fn);
        goto out;
    }
    memset(fill, 0, sizeof *fill * (size_t)n_agents);
    {
        int64_t *at = stamp; /* reused: per position, the next free place of its successors */
        for (int64_t p = 0; p < n; p++)
            at[p] = s.succ_start[p];
        for (int64_t p = 0; p < n; p++)
            for (int64_t k = s.pred_start[p]; k < s.pred_start[p + 1]; k++)
                s.succ[at[s.pred[k]]++] = p;
    }

    int64_t head = 0, admitted = 0, placed = 0;
    while (placed < n) {
        int64_t lim = head + window < n ? head + window : n;
        while (admitted < lim) {
            int64_t p = admitted++;
            if (s.remaining[p] == 0)
                sched_push(&s, engine, p);
        }
        /* each engine's best candidate: the oldest of those that can start when the engine
         * is free, else the one ready first; then the engine whose candidate starts first
         * (the tuple (start, position, engine) compared as Python compares it) */
        int found = 0, from_avail = 0;
        double best_start = 0.0;
        int64_t best_pos = 0;
        int32_t best_e = 0;
        for (int32_t e = 0; e < n_engines; e++) {
            ready_item_t *wh = s.wait_heap[e];
            int64_t *ah = s.avail_heap[e];
            double f = s.eng_free[e];
            while (s.wait_len[e] > 0 && wh[0].at <= f)
                pos_push(ah, &s.avail_len[e], ready_pop(wh, &s.wait_len[e]).pos);
            double cs;
            int64_t cp;
            int avail;
            if (s.avail_len[e] > 0) {
                cs = f;
                cp = ah[0];
                avail = 1;
            } else if (s.wait_len[e] > 0) {
                cs = wh[0].at;
                cp = wh[0].pos;
                avail = 0;
            } else {
                continue;
            }
            if (!found || cs < best_start || (cs == best_start && cp < best_pos)) {
                found = 1;
                best_start = cs;
                best_pos = cp;
                best_e = e;
                from_avail = avail;
            }
        }
        if (!found) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: the dependences make a cycle (node %lld "
                          "cannot be placed)", fn, (long long)head);
            goto out;
        }
        int32_t e = best_e;
        int64_t p = best_pos;
        if (from_avail)
            (void)pos_pop(s.avail_heap[e], &s.avail_len[e]);
        else
            (void)ready_pop(s.wait_heap[e], &s.wait_len[e]);
        int32_t ag = agent[p];
        double start = best_start;
        if (ag >= n_engines) { /* a transfer: issued by e, run by its queue */
            double sq = s.q_free[ag] > start ? s.q_free[ag] : start; /* max(start, q_free) */
            double occ = cost[2 * p], lat = cost[2 * p + 1];
            s.q_free[ag] = sq + occ;
            s.finish[p] = sq + occ + lat;
            s.eng_free[e] = start + issue_ns;
        } else {
            s.finish[p] = start + cost[2 * p];
            s.eng_free[e] = s.finish[p];
        }
        s.scheduled[p] = 1;
        order[placed++] = p;
        while (head < n && s.scheduled[head])
            head++;
        for (int64_t k = s.succ_start[p]; k < s.succ_start[p + 1]; k++) {
            int64_t q = s.succ[k];
            if (--s.remaining[q] == 0 && q < admitted)
                sched_push(&s, engine, q);
        }
    }
    st = NCSIM_OK;
out:
    free(by_agent_start);
    free(by_agent);
    free(fill);
    free(stamp);
    sched_free(&s);
    return st;
}

/* ---- the semaphore waits (_sched.assign_waits and clock_waits) ----------------------------- */

ncsim_status_t ncsim_nki_internal_waits(int64_t n, const int32_t *agent, const int32_t *engine,
                                        const int32_t *index, const int64_t *dep_offsets,
                                        const int32_t *deps, const int64_t *order,
                                        int32_t n_engines, int32_t n_queues,
                                        int32_t *new_index, int64_t *wait_offsets,
                                        int32_t *waits)
{
    static const char fn[] = "ncsim_nki_internal_waits";
    ncsim_status_t st =
        check_nodes(fn, n, agent, engine, dep_offsets, deps, n_engines, n_queues);
    if (st != NCSIM_OK)
        return st;
    if (!wait_offsets)
        return api_fail(NCSIM_USAGE, KIND, "%s: the wait offsets are NULL", fn);
    wait_offsets[0] = 0;
    if (n == 0)
        return NCSIM_OK;
    if (!index || !order || !new_index || (dep_offsets[n] > 0 && !waits))
        return api_fail(NCSIM_USAGE, KIND, "%s: a node array is NULL", fn);
    int32_t n_agents = n_engines + n_queues;
    size_t na = (size_t)n_agents;
    int64_t *start = malloc(sizeof *start * (na + 1));
    int32_t *newidx = malloc(sizeof *newidx * (size_t)n);  /* [start[a] + trace index] */
    int64_t *seen = malloc(sizeof *seen * (size_t)n);      /* order position, or checks */
    int32_t *count = calloc(na, sizeof *count);
    int32_t *vcs = malloc(sizeof *vcs * (size_t)n_engines * na);
    int32_t *qvc = malloc(sizeof *qvc * ((size_t)n_queues + 1) * na);
    int32_t *known = malloc(sizeof *known * (size_t)n_engines);
    int32_t *clocks = malloc(sizeof *clocks * (size_t)n * na); /* [start[a] + new index] */
    int32_t *cur_buf = malloc(sizeof *cur_buf * na);
    int32_t *dep_max = malloc(sizeof *dep_max * na);
    int32_t *dep_order = malloc(sizeof *dep_order * na);
    if (!start || !newidx || !seen || !count || !vcs || !qvc || !known || !clocks ||
        !cur_buf || !dep_max || !dep_order) {
        st = api_fail(NCSIM_NOMEM, "memory", "%s: out of memory for %lld nodes", fn,
                      (long long)n);
        goto out;
    }
    agent_offsets(n, agent, n_agents, start);
    /* each agent's trace indices are 0 .. count-1, once each */
    for (int64_t p = 0; p < n; p++)
        seen[p] = 0;
    for (int64_t p = 0; p < n; p++) {
        int32_t a = agent[p];
        int64_t cnt = start[a + 1] - start[a];
        if (index[p] < 0 || index[p] >= cnt || seen[start[a] + index[p]]) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld: index %d of agent %d is out of "
                          "range 0..%lld or given twice", fn, (long long)p, (int)index[p],
                          (int)a, (long long)cnt - 1);
            goto out;
        }
        seen[start[a] + index[p]] = 1;
    }
    /* the order is a permutation */
    for (int64_t p = 0; p < n; p++)
        seen[p] = 0;
    for (int64_t k = 0; k < n; k++) {
        if (order[k] < 0 || order[k] >= n || seen[order[k]]) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: order[%lld] = %lld: out of range 0..%lld or "
                          "given twice", fn, (long long)k, (long long)order[k], (long long)n - 1);
            goto out;
        }
        seen[order[k]] = 1;
    }
    /* dependences name existing instructions */
    for (int64_t p = 0; p < n; p++)
        for (int64_t k = dep_offsets[p]; k < dep_offsets[p + 1]; k++) {
            int32_t a = deps[2 * k], i = deps[2 * k + 1];
            if (i < 0 || i >= start[a + 1] - start[a]) {
                st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld: dependence on instruction %d "
                              "of agent %d, which has %lld", fn, (long long)p, (int)i, (int)a,
                              (long long)(start[a + 1] - start[a]));
                goto out;
            }
        }
    /* newidx[ag][trace index] = its place in the new order of its agent */
    for (int64_t k = 0; k < n; k++) {
        int64_t p = order[k];
        int32_t ag = agent[p];
        newidx[start[ag] + index[p]] = count[ag]++;
    }
    for (size_t x = 0; x < (size_t)n_engines * na; x++)
        vcs[x] = -1;
    for (size_t x = 0; x < ((size_t)n_queues + 1) * na; x++)
        qvc[x] = -1;
    for (int32_t e = 0; e < n_engines; e++)
        known[e] = -1;
    memset(count, 0, sizeof *count * na); /* now: instructions placed per agent */
    for (size_t x = 0; x < na; x++)
        dep_max[x] = -1;
    int64_t nw = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t p = order[k];
        int32_t ag = agent[p], e = engine[p];
        int32_t idx = newidx[start[ag] + index[p]];
        /* deps: {agent: latest new index} of the other agents, in the order each agent is
         * first met (a dict's insertion order) */
        int32_t nd = 0;
        for (int64_t d = dep_offsets[p]; d < dep_offsets[p + 1]; d++) {
            int32_t a = deps[2 * d];
            if (a == ag)
                continue;
            int32_t j = newidx[start[a] + deps[2 * d + 1]];
            if (dep_max[a] < 0)
                dep_order[nd++] = a;
            if (dep_max[a] < j)
                dep_max[a] = j;
        }
        /* sorted(deps.items(), key=-index): a stable sort, latest first */
        for (int32_t x = 1; x < nd; x++) {
            int32_t a = dep_order[x], y = x;
            while (y > 0 && dep_max[dep_order[y - 1]] < dep_max[a]) {
                dep_order[y] = dep_order[y - 1];
                y--;
            }
            dep_order[y] = a;
        }
        /* clock_waits */
        int32_t *vc = vcs + (size_t)e * na;
        int32_t queue = ag >= n_engines ? ag - n_engines : -1;
        int32_t *cur = vc;
        if (queue >= 0) {
            const int32_t *qv = qvc + (size_t)queue * na;
            cur = cur_buf;
            for (size_t x = 0; x < na; x++)
                cur[x] = vc[x] > qv[x] ? vc[x] : qv[x];
            cur[e] = known[e] > qv[e] ? known[e] : qv[e];
        }
        int64_t w0 = nw;
        for (int32_t x = 0; x < nd; x++) {
            int32_t a2 = dep_order[x], i2 = dep_max[a2];
            if (cur[a2] >= i2 || a2 == ag)
                continue;
            if (i2 >= count[a2]) {
                st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld (order position %lld) follows "
                              "instruction %d of agent %d, which the order puts later", fn,
                              (long long)p, (long long)k, (int)i2, (int)a2);
                goto out;
            }
            waits[2 * nw] = a2;
            waits[2 * nw + 1] = i2;
            nw++;
            const int32_t *c2 = clocks + ((size_t)start[a2] + (size_t)i2) * na;
            for (size_t y = 0; y < na; y++)
                if (c2[y] > vc[y])
                    vc[y] = c2[y];
            if (c2[e] > known[e])
                known[e] = c2[e];
            if (cur != vc)
                for (size_t y = 0; y < na; y++)
                    if (c2[y] > cur[y])
                        cur[y] = c2[y];
        }
        for (int32_t x = 0; x < nd; x++)
            dep_max[dep_order[x]] = -1;
        int32_t *row = clocks + ((size_t)start[ag] + (size_t)idx) * na;
        if (queue >= 0) {
            if (nw > w0) {
                int32_t ce = cur[e] > known[e] ? cur[e] : known[e];
                for (size_t y = 0; y < na; y++)
                    if (vc[y] > cur[y])
                        cur[y] = vc[y];
                cur[e] = ce;
            }
            cur[ag] = idx;
            memcpy(qvc + (size_t)queue * na, cur, sizeof *cur * na);
            memcpy(row, cur, sizeof *cur * na);
        } else {
            vc[ag] = idx;
            memcpy(row, vc, sizeof *vc * na);
        }
        count[ag]++;
        new_index[k] = idx;
        wait_offsets[k + 1] = nw;
    }
    st = NCSIM_OK;
out:
    free(start);
    free(newidx);
    free(seen);
    free(count);
    free(vcs);
    free(qvc);
    free(known);
    free(clocks);
    free(cur_buf);
    free(dep_max);
    free(dep_order);
    return st;
}

/* ---- folding into loops (_fold.fold) ------------------------------------------------------- */

/* _fold.py's constants: the longest periods of the successive rounds, the rounds per period
 * (nesting depth), the shortest run folded, in lines. */
static const int32_t fold_caps[] = {1, 2, 4, 8, 16, 32, 64, 96};
#define FOLD_DEPTH 6
#define FOLD_MIN_LINES 4
/* The marker of a number in a line's template: not ASCII, so never in the text. */
#define FOLD_MARK '\x80'
#define FOLD_MAX_VALUE ((int64_t)1 << 62)

/* A growing array of bytes or of int64/int32 values. */
typedef struct fbuf {
    char *p;
    size_t len, cap;
} fbuf_t;

static int fbuf_reserve(fbuf_t *b, size_t more)
{
    /* a buffer exists after any reserve, even of 0 bytes: offsets into a pool of empty
     * strings are then taken from a real pointer (p + 0 on NULL is undefined) */
    if (b->p && b->len + more <= b->cap)
        return 1;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p)
        return 0;
    b->p = p;
    b->cap = cap;
    return 1;
}

static int fbuf_add(fbuf_t *b, const void *data, size_t n)
{
    if (!fbuf_reserve(b, n))
        return 0;
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    return 1;
}

/* An item of the stream: a line (a template and its numbers) or a loop over a period of
 * items. vals/deltas/body are offsets into the folder's pools (which move as they grow). */
typedef struct fitem {
    int32_t key;        /* equal keys: equal text but for the numbers */
    int32_t tmpl;       /* a line's template, -1 for a loop */
    int32_t nvals;
    int32_t nbody;
    int64_t vals;       /* offset in vals_pool */
    int64_t deltas;     /* a loop's steps, offset in vals_pool */
    int64_t body;       /* a loop's items, offset in body_pool */
    int64_t n;          /* a loop's iterations */
    int64_t nlines;     /* lines of unfolded text it stands for */
} fitem_t;

/* An open-addressing set of byte strings (kept in a pool), each with its id. */
typedef struct fintern {
    int64_t *slot_off;  /* -1: empty */
    int32_t *slot_len, *slot_id;
    uint64_t *slot_hash;
    size_t cap, used;
    fbuf_t pool;
} fintern_t;

typedef struct folder {
    fitem_t *items;
    size_t n_items, cap_items;
    fbuf_t vals_pool;   /* int64_t */
    fbuf_t body_pool;   /* int32_t item ids */
    fintern_t tmpl;     /* templates -> template id */
    fbuf_t tmpl_off;    /* int64_t per template: offset of its text in tmpl.pool, then length */
    fintern_t loops;    /* a loop's (n, body keys, deltas) -> key */
    int32_t next_key;
    fbuf_t scratch;     /* a loop key being built */
} folder_t;

static uint64_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++) {
        h ^= (unsigned char)s[i];
        h *= 1099511628211ull;
    }
    return h ^ (h >> 29);
}

static void intern_free(fintern_t *t)
{
    free(t->slot_off);
    free(t->slot_len);
    free(t->slot_id);
    free(t->slot_hash);
    free(t->pool.p);
}

static int intern_grow(fintern_t *t)
{
    size_t cap = t->cap ? t->cap * 2 : 1024;
    int64_t *off = malloc(sizeof *off * cap);
    int32_t *len = malloc(sizeof *len * cap), *id = malloc(sizeof *id * cap);
    uint64_t *hs = malloc(sizeof *hs * cap);
    if (!off || !len || !id || !hs) {
        free(off);
        free(len);
        free(id);
        free(hs);
        return 0;
    }
    for (size_t i = 0; i < cap; i++)
        off[i] = -1;
    for (size_t i = 0; i < t->cap; i++) {
        if (t->slot_off[i] < 0)
            continue;
        size_t j = t->slot_hash[i] & (cap - 1);
        while (off[j] >= 0)
            j = (j + 1) & (cap - 1);
        off[j] = t->slot_off[i];
        len[j] = t->slot_len[i];
        id[j] = t->slot_id[i];
        hs[j] = t->slot_hash[i];
    }
    free(t->slot_off);
    free(t->slot_len);
    free(t->slot_id);
    free(t->slot_hash);
    t->slot_off = off;
    t->slot_len = len;
    t->slot_id = id;
    t->slot_hash = hs;
    t->cap = cap;
    return 1;
}

/* The id of string s (n bytes); a new one (*next, then incremented) when it is not there yet.
 * *is_new says which. -1 when out of memory. */
static int32_t intern(fintern_t *t, const char *s, size_t n, int32_t *next, int *is_new)
{
    if ((t->used + 1) * 2 > t->cap && !intern_grow(t))
        return -1;
    uint64_t h = hash_bytes(s, n);
    size_t j = h & (t->cap - 1);
    while (t->slot_off[j] >= 0) {
        if (t->slot_hash[j] == h && (size_t)t->slot_len[j] == n &&
            (n == 0 || memcmp(t->pool.p + t->slot_off[j], s, n) == 0)) {
            *is_new = 0;
            return t->slot_id[j];
        }
        j = (j + 1) & (t->cap - 1);
    }
    if (n > INT32_MAX || !fbuf_add(&t->pool, s, n))
        return -1;
    t->slot_off[j] = (int64_t)(t->pool.len - n);
    t->slot_len[j] = (int32_t)n;
    t->slot_hash[j] = h;
    t->slot_id[j] = (*next)++;
    t->used++;
    *is_new = 1;
    return t->slot_id[j];
}

#define VALS(f) ((int64_t *)(void *)(f)->vals_pool.p)
#define BODY(f) ((int32_t *)(void *)(f)->body_pool.p)

static int32_t new_item(folder_t *f)
{
    if (f->n_items == f->cap_items) {
        size_t cap = f->cap_items ? f->cap_items * 2 : 4096;
        fitem_t *p = realloc(f->items, sizeof *p * cap);
        if (!p)
            return -1;
        f->items = p;
        f->cap_items = cap;
    }
    if (f->n_items >= INT32_MAX)
        return -1;
    memset(&f->items[f->n_items], 0, sizeof f->items[0]);
    return (int32_t)f->n_items++;
}

/* _Loop(body, deltas, n): its key ("loop", n, body keys, deltas), its values (the body's, one
 * period), its lines. The deltas are read from the vals pool at offset d (they may have just
 * been put there). Returns the item id, -1 when out of memory. */
static int32_t new_loop(folder_t *f, const int32_t *body, int32_t nbody, int64_t d, int64_t n)
{
    /* the body is given as ids that may live in the body pool: copy them first */
    int32_t *body_copy = malloc(sizeof *body_copy * (size_t)nbody);
    if (!body_copy)
        return -1;
    memcpy(body_copy, body, sizeof *body_copy * (size_t)nbody);
    int32_t nvals = 0;
    int64_t lines = 0;
    for (int32_t b = 0; b < nbody; b++) {
        nvals += f->items[body_copy[b]].nvals;
        lines += f->items[body_copy[b]].nlines;
    }
    f->scratch.len = 0;
    int ok = fbuf_add(&f->scratch, &n, sizeof n) && fbuf_add(&f->scratch, &nbody, sizeof nbody);
    for (int32_t b = 0; b < nbody && ok; b++)
        ok = fbuf_add(&f->scratch, &f->items[body_copy[b]].key, sizeof(int32_t));
    ok = ok && fbuf_add(&f->scratch, VALS(f) + d, sizeof(int64_t) * (size_t)nvals);
    int is_new;
    int32_t key = ok ? intern(&f->loops, f->scratch.p, f->scratch.len, &f->next_key, &is_new)
                     : -1;
    int32_t id = key >= 0 ? new_item(f) : -1;
    if (id < 0 || !fbuf_reserve(&f->vals_pool, sizeof(int64_t) * (size_t)nvals) ||
        !fbuf_reserve(&f->body_pool, sizeof(int32_t) * (size_t)nbody)) {
        free(body_copy);
        return -1;
    }
    fitem_t *it = &f->items[id];
    it->key = key;
    it->tmpl = -1;
    it->nvals = nvals;
    it->nbody = nbody;
    it->deltas = d;
    it->n = n;
    it->nlines = n * lines;
    it->vals = (int64_t)(f->vals_pool.len / sizeof(int64_t));
    for (int32_t b = 0; b < nbody; b++) {
        const fitem_t *bi = &f->items[body_copy[b]];
        fbuf_add(&f->vals_pool, VALS(f) + bi->vals, sizeof(int64_t) * (size_t)bi->nvals);
    }
    it->body = (int64_t)(f->body_pool.len / sizeof(int32_t));
    fbuf_add(&f->body_pool, body_copy, sizeof(int32_t) * (size_t)nbody);
    free(body_copy);
    return id;
}

/* Put the differences b - a of two items' values (nvals each) at the end of the vals pool;
 * returns their offset, -1 when out of memory. */
static int64_t push_deltas(folder_t *f, const fitem_t *a, const fitem_t *b)
{
    int32_t m = a->nvals;
    if (!fbuf_reserve(&f->vals_pool, sizeof(int64_t) * (size_t)m))
        return -1;
    int64_t off = (int64_t)(f->vals_pool.len / sizeof(int64_t));
    int64_t *v = VALS(f);
    for (int32_t k = 0; k < m; k++)
        v[off + k] = v[b->vals + k] - v[a->vals + k];
    f->vals_pool.len += sizeof(int64_t) * (size_t)m;
    return off;
}

/* Do the values of b step from a's by the deltas at offset d? */
static int steps_by(const folder_t *f, const fitem_t *a, const fitem_t *b, int64_t d)
{
    const int64_t *v = VALS(f);
    for (int32_t k = 0; k < a->nvals; k++)
        if (v[b->vals + k] - v[a->vals + k] != v[d + k])
            return 0;
    return 1;
}

/* _fold_runs: runs of equal keys whose numbers step by the same amounts from one item to the
 * next. in: n item ids; out: room for n. Returns the new count, -1 when out of memory. */
static int64_t fold_runs(folder_t *f, const int32_t *in, int64_t n, int32_t *out, int *changed)
{
    int64_t i = 0, m = 0;
    *changed = 0;
    while (i < n) {
        int32_t k = f->items[in[i]].key;
        int64_t j = i + 1;
        if (j < n && f->items[in[j]].key == k) {
            size_t mark = f->vals_pool.len;
            int64_t d = push_deltas(f, &f->items[in[i]], &f->items[in[j]]);
            if (d < 0)
                return -1;
            int64_t e = j + 1;
            while (e < n && f->items[in[e]].key == k &&
                   steps_by(f, &f->items[in[e - 1]], &f->items[in[e]], d))
                e++;
            int64_t cnt = e - i;
            if (cnt * f->items[in[i]].nlines >= FOLD_MIN_LINES) {
                int32_t id = new_loop(f, &in[i], 1, d, cnt);
                if (id < 0)
                    return -1;
                out[m++] = id;
                i = e;
                *changed = 1;
                continue;
            }
            f->vals_pool.len = mark; /* the deltas were not used */
        }
        out[m++] = in[i];
        i++;
    }
    return m;
}

static int keys_equal(const folder_t *f, const int32_t *a, const int32_t *b, int64_t p)
{
    for (int64_t x = 0; x < p; x++)
        if (f->items[a[x]].key != f->items[b[x]].key)
            return 0;
    return 1;
}

/* _fold_once_fast(items, maxp): at each place, the period (at most maxp items) whose run
 * covers the most items, among those found from the positions of the first item's key. */
static int64_t fold_once(folder_t *f, const int32_t *in, int64_t n, int32_t maxp, int32_t *out,
                         int *changed)
{
    int64_t m = 0, result = -1;
    *changed = 0;
    int32_t n_keys = f->next_key;
    int64_t *key_start = calloc((size_t)n_keys + 1, sizeof *key_start);
    int64_t *pos = malloc(sizeof *pos * ((size_t)n + 1));
    int64_t *rank = malloc(sizeof *rank * ((size_t)n + 1));
    int64_t *pre = malloc(sizeof *pre * ((size_t)n + 1));
    int64_t *fillk = calloc((size_t)n_keys + 1, sizeof *fillk);
    fbuf_t best_d = {0};
    if (!key_start || !pos || !rank || !pre || !fillk)
        goto out;
    /* pos: key -> its positions in order (CSR); rank: a position's place in its key's list */
    for (int64_t x = 0; x < n; x++)
        key_start[f->items[in[x]].key + 1]++;
    for (int32_t k = 0; k < n_keys; k++)
        key_start[k + 1] += key_start[k];
    for (int64_t x = 0; x < n; x++) {
        int32_t k = f->items[in[x]].key;
        rank[x] = fillk[k]++;
        pos[key_start[k] + rank[x]] = x;
    }
    pre[0] = 0;
    for (int64_t x = 0; x < n; x++)
        pre[x + 1] = pre[x] + f->items[in[x]].nlines;
    int64_t i = 0;
    while (i < n) {
        int64_t best_p = 0, best_n = 0;
        int32_t ki = f->items[in[i]].key;
        const int64_t *plist = pos + key_start[ki];
        int64_t plen = key_start[ki + 1] - key_start[ki];
        int64_t hi = i + maxp + 1 < n ? i + maxp + 1 : n;
        for (int64_t r = rank[i] + 1; r < plen; r++) {
            int64_t j = plist[r];
            if (j >= hi)
                break;
            int64_t p = j - i;
            if (i + 2 * p > n)
                break;
            if (!keys_equal(f, in + i, in + j, p))
                continue;
            /* per item of the period, the step of its numbers from one period to the next;
             * the period's deltas are their concatenation */
            size_t mark = f->vals_pool.len;
            int64_t d0 = -1;
            for (int64_t a = 0; a < p; a++) {
                int64_t d = push_deltas(f, &f->items[in[i + a]], &f->items[in[j + a]]);
                if (d < 0)
                    goto out;
                if (a == 0)
                    d0 = d;
            }
            if (d0 < 0) /* a period of items without numbers */
                d0 = (int64_t)(mark / sizeof(int64_t));
            int64_t cnt = 2;
            while (i + (cnt + 1) * p <= n) {
                int64_t s = i + cnt * p;
                if (!keys_equal(f, in + s, in + i, p))
                    break;
                int ok = 1;
                int64_t d = d0;
                for (int64_t a = 0; a < p && ok; a++) {
                    const fitem_t *x = &f->items[in[s - p + a]], *y = &f->items[in[s + a]];
                    ok = steps_by(f, x, y, d);
                    d += x->nvals;
                }
                if (!ok)
                    break;
                cnt++;
            }
            int64_t lines = cnt * (pre[j] - pre[i]);
            if (lines >= FOLD_MIN_LINES && (best_p == 0 || cnt * p > best_p * best_n)) {
                best_p = p;
                best_n = cnt;
                best_d.len = 0;
                if (!fbuf_add(&best_d, VALS(f) + d0, f->vals_pool.len - mark))
                    goto out;
            }
            f->vals_pool.len = mark;
        }
        if (best_p == 0) {
            out[m++] = in[i];
            i++;
            continue;
        }
        int64_t d = (int64_t)(f->vals_pool.len / sizeof(int64_t));
        if (!fbuf_add(&f->vals_pool, best_d.p, best_d.len))
            goto out;
        int32_t id = new_loop(f, in + i, (int32_t)best_p, d, best_n);
        if (id < 0)
            goto out;
        out[m++] = id;
        i += best_n * best_p;
        *changed = 1;
    }
    result = m;
out:
    free(key_start);
    free(pos);
    free(rank);
    free(pre);
    free(fillk);
    free(best_d.p);
    return result;
}

/* ---- rendering (_Line.render, _Loop.render) ---- */

typedef struct fexpr {
    const char *s;
    size_t n;
} fexpr_t;

static int is_py_space(char c)
{
    /* str.isspace() over ASCII */
    return c == ' ' || (c >= '\t' && c <= '\r') || (c >= '\x1c' && c <= '\x1f');
}

static int render(folder_t *f, int32_t id, const fexpr_t *exprs, int depth, fbuf_t *out,
                  int first)
{
    const fitem_t *it = &f->items[id];
    size_t indent = 4 * ((size_t)depth + 1);
    if (!first && !fbuf_add(out, "\n", 1))
        return 0;
    if (!fbuf_reserve(out, indent))
        return 0;
    memset(out->p + out->len, ' ', indent);
    out->len += indent;
    if (it->tmpl >= 0) {
        /* indent + "".join(parts and numbers).lstrip(): the numbers are never blank, so the
         * strip takes only the template's leading blanks */
        const int64_t *to = (const int64_t *)(void *)f->tmpl_off.p;
        const char *t = f->tmpl.pool.p + to[2 * it->tmpl];
        size_t tn = (size_t)to[2 * it->tmpl + 1], a = 0;
        int32_t k = 0;
        int leading = 1;
        for (size_t x = 0; x <= tn; x++) {
            if (x < tn && t[x] != FOLD_MARK) {
                if (leading && is_py_space(t[x])) {
                    a = x + 1;
                    continue;
                }
                leading = 0;
                continue;
            }
            if (!fbuf_add(out, t + a, x - a))
                return 0;
            if (x < tn) {
                leading = 0;
                if (!fbuf_add(out, exprs[k].s, exprs[k].n))
                    return 0;
                k++;
            }
            a = x + 1;
        }
        return 1;
    }
    char head[64];
    int hn = snprintf(head, sizeof head, ".loop i%d = 0, %lld", depth, (long long)it->n);
    if (!fbuf_add(out, head, (size_t)hn))
        return 0;
    /* the body's expressions: e, or (e+d*iDEPTH) / (e-d*iDEPTH) */
    fexpr_t *sub = malloc(sizeof *sub * ((size_t)it->nvals + 1));
    char **own = calloc((size_t)it->nvals + 1, sizeof *own);
    int ok = sub && own;
    const int64_t *dl = VALS(f) + it->deltas;
    for (int32_t k = 0; k < it->nvals && ok; k++) {
        int64_t d = dl[k];
        if (d == 0) {
            sub[k] = exprs[k];
            continue;
        }
        size_t cap = exprs[k].n + 48;
        own[k] = malloc(cap);
        if (!own[k]) {
            ok = 0;
            break;
        }
        unsigned long long ad = d > 0 ? (unsigned long long)d : 0ull - (unsigned long long)d;
        int w = snprintf(own[k], cap, "(%.*s%c%llu*i%d)", (int)exprs[k].n, exprs[k].s,
                         d > 0 ? '+' : '-', ad, depth);
        sub[k] = (fexpr_t){own[k], (size_t)w};
    }
    int32_t kk = 0;
    for (int32_t b = 0; b < it->nbody && ok; b++) {
        int32_t bid = BODY(f)[it->body + b];
        ok = render(f, bid, sub + kk, depth + 1, out, 0);
        kk += f->items[bid].nvals;
    }
    if (own)
        for (int32_t k = 0; k < it->nvals; k++)
            free(own[k]);
    free(own);
    free(sub);
    if (!ok)
        return 0;
    if (!fbuf_add(out, "\n", 1) || !fbuf_reserve(out, indent))
        return 0;
    memset(out->p + out->len, ' ', indent);
    out->len += indent;
    return fbuf_add(out, ".endloop", 8);
}

static void folder_free(folder_t *f)
{
    free(f->items);
    free(f->vals_pool.p);
    free(f->body_pool.p);
    intern_free(&f->tmpl);
    free(f->tmpl_off.p);
    intern_free(&f->loops);
    free(f->scratch.p);
}

/* A line's numbers as _fold._VAR finds them: a raw view's offset (digits after "X+", X a
 * lower-case letter or digit, followed by '['), a wait's value (digits after ">= "), an
 * integer immediate (digits, or '-' and digits, after "base=", or after ", " and followed by
 * ',', " |" or the end, the next bracket after it not a ']'). Writes
 * the template (each number replaced by FOLD_MARK) to tmpl and the values to vals. Returns
 * 0, or 1 when a number is too large. */
static int parse_line(const char *s, size_t n, fbuf_t *tmpl, fbuf_t *vals, int *nomem)
{
    size_t a = 0, k = 0;
    tmpl->len = 0;
    vals->len = 0;
    while (k < n) {
        if (s[k] < '0' || s[k] > '9') {
            k++;
            continue;
        }
        size_t e = k;
        while (e < n && s[e] >= '0' && s[e] <= '9')
            e++;
        int offset = k >= 2 && s[k - 1] == '+' &&
                     ((s[k - 2] >= 'a' && s[k - 2] <= 'z') || (s[k - 2] >= '0' && s[k - 2] <= '9')) &&
                     e < n && s[e] == '[';
        int wait = k >= 3 && s[k - 3] == '>' && s[k - 2] == '=' && s[k - 1] == ' ';
        /* an integer immediate (the '-' before it part of the number): "base=N", or an
         * operand ", N" ending a field (followed by ',', " |" or the line's end) */
        int minus = k >= 1 && s[k - 1] == '-';
        size_t b = minus ? k - 1 : k; /* where the number starts */
        int field_end = e == n || s[e] == ',' || (s[e] == ' ' && e + 1 < n && s[e + 1] == '|');
        if (field_end) { /* not an item of a [...] list: the next bracket is not a ']' */
            size_t x = e;
            while (x < n && s[x] != '[' && s[x] != ']')
                x++;
            field_end = x == n || s[x] == '[';
        }
        int imm = (b >= 5 && memcmp(s + b - 5, "base=", 5) == 0) ||
                  (field_end && b >= 2 && s[b - 2] == ',' && s[b - 1] == ' ');
        int neg = imm && minus;
        if (!offset && !wait && !imm) {
            k = e; /* no match can start inside a run of digits */
            continue;
        }
        int64_t v = 0;
        for (size_t x = k; x < e; x++) {
            int64_t digit = s[x] - '0';
            if (v > (FOLD_MAX_VALUE - 1 - digit) / 10) /* v * 10 + digit >= 2^62 */
                return 1;
            v = v * 10 + digit;
        }
        if (neg) {
            v = -v;
            k--;
        }
        char mark = FOLD_MARK;
        if (!fbuf_add(tmpl, s + a, k - a) || !fbuf_add(tmpl, &mark, 1) ||
            !fbuf_add(vals, &v, sizeof v)) {
            *nomem = 1;
            return 0;
        }
        a = k = e;
    }
    if (!fbuf_add(tmpl, s + a, n - a))
        *nomem = 1;
    return 0;
}

/* The fold of text (n_lines lines separated by '\n'), its lines appended to res, separated by
 * '\n' (one before the first too unless first). NCSIM_USAGE with a message for a text this
 * fold does not take; NCSIM_NOMEM. */
static ncsim_status_t fold_into(const char *fn, const char *text, size_t len, int64_t n_lines,
                                fbuf_t *res, int first)
{
    if (n_lines < 0 || n_lines >= INT32_MAX)
        return api_fail(NCSIM_USAGE, KIND, "%s: line count %lld out of range", fn,
                        (long long)n_lines);
    int64_t seen = n_lines > 0 ? 1 : 0;
    for (size_t x = 0; x < len; x++) {
        if ((unsigned char)text[x] >= 0x80)
            return api_fail(NCSIM_USAGE, KIND, "%s: byte %zu is not ASCII", fn, x);
        seen += text[x] == '\n';
    }
    if (seen != n_lines || (n_lines == 0 && len > 0))
        return api_fail(NCSIM_USAGE, KIND, "%s: the text holds %lld lines, not %lld", fn,
                        (long long)(len > 0 ? seen : 0), (long long)n_lines);
    folder_t f = {0};
    fbuf_t tmpl = {0}, vals = {0};
    int32_t *list = malloc(sizeof *list * ((size_t)n_lines + 1));
    int32_t *next = malloc(sizeof *next * ((size_t)n_lines + 1));
    int32_t n_tmpl = 0;
    ncsim_status_t st = NCSIM_NOMEM;
    int nomem = 0;
    /* the pool of numbers is never NULL (a text without numbers still indexes it at 0) */
    if (!list || !next || !fbuf_reserve(&f.vals_pool, 64))
        goto out;
    /* the lines: their templates interned (ids 0, 1, ... in the key space too) */
    size_t a = 0;
    for (int64_t l = 0; l < n_lines; l++) {
        size_t e = a;
        while (e < len && text[e] != '\n')
            e++;
        if (parse_line(text + a, e - a, &tmpl, &vals, &nomem)) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: line %lld: a number of 2^62 or more", fn,
                          (long long)l + 1);
            goto out;
        }
        if (nomem)
            goto out;
        int is_new;
        int32_t t = intern(&f.tmpl, tmpl.p ? tmpl.p : "", tmpl.len, &n_tmpl, &is_new);
        int32_t id = t >= 0 ? new_item(&f) : -1;
        if (id < 0)
            goto out;
        if (is_new) {
            int64_t to[2] = {(int64_t)(f.tmpl.pool.len - tmpl.len), (int64_t)tmpl.len};
            if (!fbuf_add(&f.tmpl_off, to, sizeof to))
                goto out;
        }
        fitem_t *it = &f.items[id];
        it->key = t;
        it->tmpl = t;
        it->nvals = (int32_t)(vals.len / sizeof(int64_t));
        it->nlines = 1;
        it->vals = (int64_t)(f.vals_pool.len / sizeof(int64_t));
        if (!fbuf_add(&f.vals_pool, vals.p, vals.len))
            goto out;
        list[l] = id;
        a = e + 1;
    }
    f.next_key = n_tmpl;
    /* the rounds: for each longest period, fold until nothing changes (at most FOLD_DEPTH) */
    int64_t m = n_lines;
    for (size_t c = 0; c < sizeof fold_caps / sizeof fold_caps[0]; c++) {
        for (int r = 0; r < FOLD_DEPTH; r++) {
            int changed = 0;
            int64_t k = fold_caps[c] == 1 ? fold_runs(&f, list, m, next, &changed)
                                          : fold_once(&f, list, m, fold_caps[c], next, &changed);
            if (k < 0)
                goto out;
            int32_t *sw = list;
            list = next;
            next = sw;
            m = k;
            if (!changed)
                break;
        }
    }
    /* render: top-level items with their own numbers as the expressions */
    for (int64_t x = 0; x < m; x++) {
        const fitem_t *it = &f.items[list[x]];
        char *digits = malloc((size_t)it->nvals * 24 + 1);
        fexpr_t *ex = malloc(sizeof *ex * ((size_t)it->nvals + 1));
        int ok = digits && ex;
        size_t at = 0;
        for (int32_t k = 0; k < it->nvals && ok; k++) {
            int w = snprintf(digits + at, 24, "%lld", (long long)VALS(&f)[it->vals + k]);
            ex[k] = (fexpr_t){digits + at, (size_t)w};
            at += (size_t)w;
        }
        ok = ok && render(&f, list[x], ex, 0, res, first && x == 0);
        free(digits);
        free(ex);
        if (!ok)
            goto out;
    }
    st = NCSIM_OK;
out:
    if (st == NCSIM_NOMEM)
        api_fail(NCSIM_NOMEM, "memory", "%s: out of memory", fn);
    free(list);
    free(next);
    free(tmpl.p);
    free(vals.p);
    folder_free(&f);
    return st;
}

ncsim_status_t ncsim_nki_internal_fold(const char *text, size_t len, int64_t n_lines,
                                       char **out, size_t *out_len)
{
    static const char fn[] = "ncsim_nki_internal_fold";
    if (!out || !out_len || (len > 0 && !text))
        return api_fail(NCSIM_USAGE, KIND, "%s: a NULL argument", fn);
    *out = NULL;
    *out_len = 0;
    fbuf_t res = {0};
    ncsim_status_t st = fold_into(fn, text, len, n_lines, &res, 1);
    if (st == NCSIM_OK && !fbuf_add(&res, "", 1))
        st = api_fail(NCSIM_NOMEM, "memory", "%s: out of memory", fn);
    if (st != NCSIM_OK) {
        free(res.p);
        return st;
    }
    *out = res.p;
    *out_len = res.len - 1;
    return NCSIM_OK;
}

/* ---- the program's streams (Tracer.finish) ------------------------------------------------- */

/* n '\n'-separated entries of a text: their starts and lengths. 0 when the count differs. */
static int split_entries(const char *text, size_t len, int64_t n, size_t *start, size_t *size)
{
    if (n == 0)
        return len == 0;
    size_t a = 0;
    int64_t k = 0;
    for (size_t x = 0; x <= len; x++) {
        if (x < len && text[x] != '\n')
            continue;
        if (k >= n)
            return 0;
        start[k] = a;
        size[k] = x - a;
        k++;
        a = x + 1;
    }
    return k == n;
}

ncsim_status_t ncsim_nki_internal_streams(int64_t n, const int32_t *agent, const int32_t *engine,
                                          const int64_t *line, const char *texts,
                                          size_t texts_len, const int64_t *order,
                                          const int32_t *new_index, const int64_t *wait_offsets,
                                          const int32_t *waits, const char *names,
                                          size_t names_len, int32_t n_engines,
                                          int32_t n_queues, int fold, char **out,
                                          size_t *out_len)
{
    static const char fn[] = "ncsim_nki_internal_streams";
    if (!out || !out_len)
        return api_fail(NCSIM_USAGE, KIND, "%s: a NULL argument", fn);
    *out = NULL;
    *out_len = 0;
    if (n < 0 || n >= INT32_MAX)
        return api_fail(NCSIM_USAGE, KIND, "%s: node count %lld out of range", fn,
                        (long long)n);
    if (n_engines <= 0 || n_engines > 64 || n_queues < 0 || n_queues > 256)
        return api_fail(NCSIM_USAGE, KIND, "%s: %d engines and %d queues: out of range", fn,
                        (int)n_engines, (int)n_queues);
    int32_t n_agents = n_engines + n_queues;
    size_t na = (size_t)n_agents;
    if (n > 0 && (!agent || !engine || !line || !texts || !order || !new_index ||
                  !wait_offsets))
        return api_fail(NCSIM_USAGE, KIND, "%s: a node array is NULL", fn);
    if (!names)
        return api_fail(NCSIM_USAGE, KIND, "%s: the names are NULL", fn);
    for (size_t x = 0; x < texts_len; x++)
        if ((unsigned char)texts[x] >= 0x80)
            return api_fail(NCSIM_USAGE, KIND, "%s: byte %zu of the texts is not ASCII", fn, x);
    ncsim_status_t st = NCSIM_NOMEM;
    size_t *tstart = malloc(sizeof *tstart * ((size_t)n + 1));
    size_t *tsize = malloc(sizeof *tsize * ((size_t)n + 1));
    size_t nstart[64 + 256 + 64], nsize[64 + 256 + 64];
    int64_t *astart = malloc(sizeof *astart * (na + 1));
    int64_t *rank = malloc(sizeof *rank * ((size_t)n + 1)); /* [astart[a] + index] */
    uint8_t *seen = calloc((size_t)n + 1, 1);
    fbuf_t *stream = calloc((size_t)n_engines, sizeof *stream);
    int64_t *lines = calloc((size_t)n_engines, sizeof *lines);
    int64_t *lastline = malloc(sizeof *lastline * (size_t)n_engines);
    uint8_t *has_last = calloc((size_t)n_engines, 1);
    fbuf_t res = {0};
    if (!tstart || !tsize || !astart || !rank || !seen || !stream || !lines || !lastline ||
        !has_last)
        goto out;
    if (!split_entries(texts, texts_len, n, tstart, tsize)) {
        st = api_fail(NCSIM_USAGE, KIND, "%s: the texts do not hold %lld lines", fn,
                      (long long)n);
        goto out;
    }
    if (!split_entries(names, names_len, n_agents + n_engines, nstart, nsize)) {
        st = api_fail(NCSIM_USAGE, KIND, "%s: the names do not hold %d lines (semaphores, "
                      "then engines)", fn, (int)(n_agents + n_engines));
        goto out;
    }
    for (int64_t p = 0; p < n; p++)
        if (agent[p] < 0 || agent[p] >= n_agents || engine[p] < 0 || engine[p] >= n_engines) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld: agent %d or engine %d out of "
                          "range", fn, (long long)p, (int)agent[p], (int)engine[p]);
            goto out;
        }
    agent_offsets(n, agent, n_agents, astart);
    /* the order is a permutation; new indices in range; waits name existing instructions */
    if (wait_offsets[0] != 0) {
        st = api_fail(NCSIM_USAGE, KIND, "%s: wait offsets start at %lld", fn,
                      (long long)wait_offsets[0]);
        goto out;
    }
    for (int64_t k = 0; k < n; k++) {
        int64_t p = order[k];
        if (p < 0 || p >= n || seen[p]) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: order[%lld] = %lld: out of range or given "
                          "twice", fn, (long long)k, (long long)p);
            goto out;
        }
        seen[p] = 1;
        int64_t cnt = astart[agent[p] + 1] - astart[agent[p]];
        if (new_index[k] < 0 || new_index[k] >= cnt || wait_offsets[k + 1] < wait_offsets[k] ||
            wait_offsets[k + 1] > INT32_MAX || (wait_offsets[k + 1] > 0 && !waits)) {
            st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld: new index %d or wait offset %lld "
                          "out of range", fn, (long long)p, (int)new_index[k],
                          (long long)wait_offsets[k + 1]);
            goto out;
        }
        for (int64_t w = wait_offsets[k]; w < wait_offsets[k + 1]; w++) {
            int32_t a = waits[2 * w], i = waits[2 * w + 1];
            if (a < 0 || a >= n_agents || i < 0 || i >= astart[a + 1] - astart[a]) {
                st = api_fail(NCSIM_USAGE, KIND, "%s: node %lld: a wait on instruction %d of "
                              "agent %d, out of range", fn, (long long)p, (int)i, (int)a);
                goto out;
            }
        }
    }
    /* posted: the instructions some wait names; rank: their place among their agent's, from
     * 1 (the semaphore value the wait reads) */
    memset(seen, 0, (size_t)n + 1);
    for (int64_t w = 0; w < wait_offsets[n]; w++)
        seen[astart[waits[2 * w]] + waits[2 * w + 1]] = 1;
    int first = 1;
    for (int32_t a = 0; a < n_agents; a++) {
        int64_t r = 0;
        for (int64_t i = astart[a]; i < astart[a + 1]; i++)
            rank[i] = seen[i] ? ++r : 0;
        if (r > 0) {
            if ((!first && !fbuf_add(&res, "\n", 1)) || !fbuf_add(&res, ".sem ", 5) ||
                !fbuf_add(&res, names + nstart[a], nsize[a]))
                goto out;
            first = 0;
        }
    }
    /* each engine's lines: .loc when the source line changes, waits beyond two on nops
     * before the instruction, the instruction with its waits and its post */
    char num[32];
    for (int64_t k = 0; k < n; k++) {
        int64_t p = order[k];
        int32_t e = engine[p], ag = agent[p];
        fbuf_t *b = &stream[e];
        if (!has_last[e] || lastline[e] != line[p]) {
            int w = snprintf(num, sizeof num, "%lld", (long long)line[p]);
            if ((lines[e]++ && !fbuf_add(b, "\n", 1)) || !fbuf_add(b, "    .loc ", 9) ||
                !fbuf_add(b, num, (size_t)w))
                goto out;
            lastline[e] = line[p];
            has_last[e] = 1;
        }
        int64_t w0 = wait_offsets[k], w1 = wait_offsets[k + 1];
        while (w1 - w0 > 2) {
            if ((lines[e]++ && !fbuf_add(b, "\n", 1)) || !fbuf_add(b, "    nop", 7))
                goto out;
            for (int64_t w = w0; w < w0 + 2; w++) {
                int32_t a = waits[2 * w];
                int c = snprintf(num, sizeof num, " >= %lld",
                                 (long long)rank[astart[a] + waits[2 * w + 1]]);
                if (!fbuf_add(b, " | wait ", 8) || !fbuf_add(b, names + nstart[a], nsize[a]) ||
                    !fbuf_add(b, num, (size_t)c))
                    goto out;
            }
            w0 += 2;
        }
        if ((lines[e]++ && !fbuf_add(b, "\n", 1)) || !fbuf_add(b, "    ", 4) ||
            !fbuf_add(b, texts + tstart[p], tsize[p]))
            goto out;
        for (int64_t w = w0; w < w1; w++) {
            int32_t a = waits[2 * w];
            int c = snprintf(num, sizeof num, " >= %lld",
                             (long long)rank[astart[a] + waits[2 * w + 1]]);
            if (!fbuf_add(b, " | wait ", 8) || !fbuf_add(b, names + nstart[a], nsize[a]) ||
                !fbuf_add(b, num, (size_t)c))
                goto out;
        }
        if (rank[astart[ag] + new_index[k]] &&
            (!fbuf_add(b, " | post ", 8) || !fbuf_add(b, names + nstart[ag], nsize[ag])))
            goto out;
    }
    for (int32_t e = 0; e < n_engines; e++) {
        if (!lines[e])
            continue;
        if ((!first && !fbuf_add(&res, "\n", 1)) || !fbuf_add(&res, ".engine ", 8) ||
            !fbuf_add(&res, names + nstart[n_agents + e], nsize[n_agents + e]))
            goto out;
        first = 0;
        if (fold) {
            st = fold_into(fn, stream[e].p, stream[e].len, lines[e], &res, 0);
            if (st != NCSIM_OK)
                goto out;
            st = NCSIM_NOMEM;
        } else if (!fbuf_add(&res, "\n", 1) || !fbuf_add(&res, stream[e].p, stream[e].len)) {
            goto out;
        }
    }
    if (!fbuf_add(&res, "", 1))
        goto out;
    *out = res.p;
    *out_len = res.len - 1;
    res.p = NULL;
    st = NCSIM_OK;
out:
    if (st == NCSIM_NOMEM)
        api_fail(NCSIM_NOMEM, "memory", "%s: out of memory", fn);
    free(tstart);
    free(tsize);
    free(astart);
    free(rank);
    free(seen);
    if (stream)
        for (int32_t e = 0; e < n_engines; e++)
            free(stream[e].p);
    free(stream);
    free(lines);
    free(lastline);
    free(has_last);
    free(res.p);
    return st;
}

/* ---- dependences from the access log (Tracer._access) ------------------------------------- */

#define DEPS_MAX_DIMS 16
#define DEPS_REFINE 256   /* records in a cell beyond which its memory's cells are narrowed */
#define DEPS_CELLS 64     /* a cell is at least 1/64 of the memory's extent along a dim */
#define DEPS_MAX_BOUND ((int64_t)1 << 62)

/* A growing array of int32 values (a cell's records). */
typedef struct dvec {
    int32_t *v;
    int32_t len, cap;
} dvec_t;

static int dvec_push(dvec_t *d, int32_t x)
{
    if (d->len == d->cap) {
        int32_t cap = d->cap ? 2 * d->cap : 4;
        int32_t *v = realloc(d->v, sizeof *v * (size_t)cap);
        if (!v)
            return 0;
        d->v = v;
        d->cap = cap;
    }
    d->v[d->len++] = x;
    return 1;
}

/* A memory's records, in cells along its dims 0 and 1 (_core._Grid2): a cell is the first
 * access's extent, at least 1/DEPS_CELLS of the memory's; a record sits in every cell it
 * overlaps (indices clamped into the grid), so the cells are only an index. */
typedef struct dmem {
    int64_t ext[2];
    int64_t w[2];       /* cell widths; 0 until the memory's first access */
    int64_t n[2];       /* cells along each dim */
    dvec_t *cells;      /* n[0] * n[1] */
} dmem_t;

/* The cells along grid dim k that a box of nd dims overlaps: an extent of its own dim k (an
 * empty one taken as one element wide, so that every record the overlap test finds shares a
 * cell with the access), all cells when the box has no dim k. */
static void cell_range(const dmem_t *m, int k, const int64_t *box, int nd, int64_t *c0,
                       int64_t *c1)
{
    if (k >= nd) {
        *c0 = 0;
        *c1 = m->n[k] - 1;
        return;
    }
    int64_t lo = box[2 * k], hi = box[2 * k + 1];
    if (hi <= lo)
        hi = lo + 1;
    int64_t a = lo <= 0 ? 0 : lo / m->w[k];
    int64_t b = hi - 1 <= 0 ? 0 : (hi - 1) / m->w[k];
    *c0 = a < m->n[k] ? a : m->n[k] - 1;
    *c1 = b < m->n[k] ? b : m->n[k] - 1;
}

static int dmem_grid(dmem_t *m, int64_t w0, int64_t w1)
{
    m->w[0] = w0;
    m->w[1] = w1;
    for (int k = 0; k < 2; k++) {
        int64_t c = m->ext[k] / m->w[k] + (m->ext[k] % m->w[k] != 0);
        m->n[k] = c < 1 ? 1 : c;
    }
    m->cells = calloc((size_t)(m->n[0] * m->n[1]), sizeof *m->cells);
    return m->cells != NULL;
}

static void dmem_free(dmem_t *m)
{
    if (m->cells)
        for (int64_t c = 0; c < m->n[0] * m->n[1]; c++)
            free(m->cells[c].v);
    free(m->cells);
    m->cells = NULL;
}

typedef struct deps_state {
    const int64_t *log;
    int64_t *rbox;      /* per record: where its box starts in the log */
    int32_t *rnode;     /* its node */
    uint8_t *rnd;       /* its number of dims */
    uint8_t *rflag;     /* bit 0: a write; bit 1: covered (no longer met) */
    int64_t *rstamp;    /* the last access that met it, or a refine's mark */
} deps_state_t;

/* Put record r into every cell of m it overlaps. */
static int place(const deps_state_t *s, dmem_t *m, int32_t r)
{
    int64_t a0, a1, b0, b1;
    const int64_t *box = s->log + s->rbox[r];
    cell_range(m, 0, box, s->rnd[r], &a0, &a1);
    cell_range(m, 1, box, s->rnd[r], &b0, &b1);
    for (int64_t a = a0; a <= a1; a++)
        for (int64_t b = b0; b <= b1; b++)
            if (!dvec_push(&m->cells[a * m->n[1] + b], r))
                return 0;
    return 1;
}

/* _Grid2.refine: narrow the cells along dim 1 to 1/DEPS_CELLS of the memory's extent and put
 * each live record in the cells it now overlaps. mark: a stamp no access uses. */
static int refine(deps_state_t *s, dmem_t *m, int64_t mark)
{
    int64_t wmin = m->ext[1] / DEPS_CELLS + (m->ext[1] % DEPS_CELLS != 0);
    if (wmin < 1)
        wmin = 1;
    if (wmin >= m->w[1])
        return 1;
    dmem_t old = *m;
    if (!dmem_grid(m, old.w[0], wmin)) {
        *m = old;
        return 0;
    }
    int ok = 1;
    for (int64_t c = 0; c < old.n[0] * old.n[1] && ok; c++)
        for (int32_t j = 0; j < old.cells[c].len && ok; j++) {
            int32_t r = old.cells[c].v[j];
            if ((s->rflag[r] & 2) || s->rstamp[r] == mark)
                continue;
            s->rstamp[r] = mark;
            ok = place(s, m, r);
        }
    dmem_free(&old);
    return ok;
}

ncsim_status_t ncsim_nki_internal_deps(int64_t n, const int64_t *log, int64_t n_log,
                                       int64_t n_mem, const int64_t *mem_ext, int32_t n_agents,
                                       int64_t **dep_offsets, int32_t **deps)
{
    static const char fn[] = "ncsim_nki_internal_deps";
    if (!dep_offsets || !deps)
        return api_fail(NCSIM_USAGE, KIND, "%s: a NULL argument", fn);
    *dep_offsets = NULL;
    *deps = NULL;
    if (n < 0 || n >= INT32_MAX)
        return api_fail(NCSIM_USAGE, KIND, "%s: node count %lld out of range", fn,
                        (long long)n);
    if (n_log < 0 || (n_log > 0 && !log))
        return api_fail(NCSIM_USAGE, KIND, "%s: a log of %lld values at %p", fn,
                        (long long)n_log, (const void *)log);
    if (n_mem < 0 || n_mem >= INT32_MAX || (n_mem > 0 && !mem_ext))
        return api_fail(NCSIM_USAGE, KIND, "%s: %lld memories: out of range, or no extents",
                        fn, (long long)n_mem);
    if (n_agents <= 0 || n_agents > 320)
        return api_fail(NCSIM_USAGE, KIND, "%s: %d agents: out of range", fn, (int)n_agents);
    for (int64_t k = 0; k < 2 * n_mem; k++)
        if (mem_ext[k] < 1)
            return api_fail(NCSIM_USAGE, KIND, "%s: memory %lld: extent %lld along dim %d is "
                            "not positive", fn, (long long)(k / 2), (long long)mem_ext[k],
                            (int)(k % 2));
    /* the log's shape: per node, agent, index, its accesses (memory, flags, bounds), -1 */
    int64_t n_rec = 0, pos = 0;
    for (int64_t p = 0; p < n; p++) {
        if (n_log - pos < 3)
            return api_fail(NCSIM_USAGE, KIND, "%s: the log ends at node %lld of %lld", fn,
                            (long long)p, (long long)n);
        if (log[pos] < 0 || log[pos] >= n_agents)
            return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: agent %lld out of range 0..%d",
                            fn, (long long)p, (long long)log[pos], (int)n_agents - 1);
        if (log[pos + 1] < 0 || log[pos + 1] >= INT32_MAX)
            return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: index %lld out of range", fn,
                            (long long)p, (long long)log[pos + 1]);
        pos += 2;
        for (;;) {
            if (pos >= n_log)
                return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: the log ends inside its "
                                "accesses", fn, (long long)p);
            int64_t mem = log[pos];
            if (mem == -1) {
                pos++;
                break;
            }
            if (mem < 0 || mem >= n_mem)
                return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: memory %lld out of range "
                                "0..%lld (log value %lld)", fn, (long long)p, (long long)mem,
                                (long long)n_mem - 1, (long long)pos);
            if (n_log - pos < 2)
                return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: the log ends inside an "
                                "access", fn, (long long)p);
            int64_t fl = log[pos + 1];
            if (fl < 0 || (fl >> 1) > DEPS_MAX_DIMS)
                return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: access flags %lld (a write "
                                "bit and at most %d dims)", fn, (long long)p, (long long)fl,
                                DEPS_MAX_DIMS);
            int64_t nb = 2 * (fl >> 1);
            if (n_log - pos - 2 < nb)
                return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: the log ends inside an "
                                "access's bounds", fn, (long long)p);
            for (int64_t k = 0; k < nb; k++)
                if (log[pos + 2 + k] < -DEPS_MAX_BOUND || log[pos + 2 + k] > DEPS_MAX_BOUND)
                    return api_fail(NCSIM_USAGE, KIND, "%s: node %lld: bound %lld out of range "
                                    "(+-2^62)", fn, (long long)p, (long long)log[pos + 2 + k]);
            pos += 2 + nb;
            if (++n_rec >= INT32_MAX)
                return api_fail(NCSIM_USAGE, KIND, "%s: too many accesses", fn);
        }
    }
    if (pos != n_log)
        return api_fail(NCSIM_USAGE, KIND, "%s: %lld log values after the last node's", fn,
                        (long long)(n_log - pos));

    ncsim_status_t st = NCSIM_OK;
    deps_state_t s = {log, NULL, NULL, NULL, NULL, NULL};
    size_t nr = (size_t)n_rec + 1;
    s.rbox = malloc(sizeof *s.rbox * nr);
    s.rnode = malloc(sizeof *s.rnode * nr);
    s.rnd = malloc(nr);
    s.rflag = malloc(nr);
    s.rstamp = malloc(sizeof *s.rstamp * nr);
    dmem_t *mems = calloc((size_t)n_mem + 1, sizeof *mems);
    int32_t *dstamp = malloc(sizeof *dstamp * ((size_t)n + 1));
    int32_t *nagent = malloc(sizeof *nagent * ((size_t)n + 1));
    int32_t *nindex = malloc(sizeof *nindex * ((size_t)n + 1));
    int64_t *offs = malloc(sizeof *offs * ((size_t)n + 1));
    fbuf_t out = {0};
    if (!s.rbox || !s.rnode || !s.rnd || !s.rflag || !s.rstamp || !mems || !dstamp ||
        !nagent || !nindex || !offs || !fbuf_reserve(&out, 0))
        goto nomem;
    for (int64_t k = 0; k < n_mem; k++) {
        mems[k].ext[0] = mem_ext[2 * k];
        mems[k].ext[1] = mem_ext[2 * k + 1];
    }
    int32_t r = 0;
    pos = 0;
    offs[0] = 0;
    for (int64_t p = 0; p < n; p++) {
        int32_t ag = (int32_t)log[pos];
        nagent[p] = ag;
        nindex[p] = (int32_t)log[pos + 1];
        dstamp[p] = (int32_t)p; /* its own accesses: no dependence */
        pos += 2;
        while (log[pos] != -1) {
            dmem_t *m = &mems[log[pos]];
            int write = (int)(log[pos + 1] & 1);
            int nd = (int)(log[pos + 1] >> 1);
            const int64_t *box = log + pos + 2;
            s.rbox[r] = pos + 2;
            s.rnode[r] = (int32_t)p;
            s.rnd[r] = (uint8_t)nd;
            s.rflag[r] = (uint8_t)write;
            s.rstamp[r] = r;
            pos += 2 + 2 * nd;
            if (!m->cells) {
                int64_t w[2];
                for (int k = 0; k < 2; k++) {
                    /* (from 0 at most: bounds of +-2^62 apart would overflow) */
                    int64_t lo = k < nd && box[2 * k] > 0 ? box[2 * k] : 0;
                    int64_t e = k < nd ? box[2 * k + 1] - lo : 1;
                    int64_t wmin = m->ext[k] / DEPS_CELLS + (m->ext[k] % DEPS_CELLS != 0);
                    w[k] = e > wmin ? e : wmin;
                    if (w[k] < 1)
                        w[k] = 1;
                }
                if (!dmem_grid(m, w[0], w[1]))
                    goto nomem;
            }
            int64_t a0, a1, b0, b1;
            cell_range(m, 0, box, nd, &a0, &a1);
            cell_range(m, 1, box, nd, &b0, &b1);
            int crowded = 0;
            for (int64_t a = a0; a <= a1; a++)
                for (int64_t b = b0; b <= b1; b++) {
                    dvec_t *cell = &m->cells[a * m->n[1] + b];
                    int32_t kept = 0;
                    for (int32_t j = 0; j < cell->len; j++) {
                        int32_t q = cell->v[j];
                        if (s.rflag[q] & 2)
                            continue; /* covered before this access */
                        cell->v[kept++] = q;
                        if (s.rstamp[q] == r)
                            continue; /* met in another cell */
                        s.rstamp[q] = r;
                        /* _access_ref's test over the dims both boxes have */
                        const int64_t *qb = log + s.rbox[q];
                        int qnd = s.rnd[q] < nd ? s.rnd[q] : nd;
                        int ov = 1, cov = 1;
                        for (int k = 0; k < qnd; k++) {
                            int64_t l1 = box[2 * k], h1 = box[2 * k + 1];
                            int64_t l2 = qb[2 * k], h2 = qb[2 * k + 1];
                            if (l2 >= h1 || l1 >= h2) {
                                ov = 0;
                                break;
                            }
                            if (l2 < l1 || h2 > h1)
                                cov = 0;
                        }
                        if (!ov)
                            continue;
                        int32_t qn = s.rnode[q];
                        int qw = s.rflag[q] & 1;
                        int same = nagent[qn] == ag;
                        int dep = qw || write;
                        if (cov && (write || (!qw && same))) {
                            s.rflag[q] |= 2; /* covered: later accesses follow this one */
                            dep = 1;         /* a read covering a read: keep their order */
                        }
                        if (dep && dstamp[qn] != (int32_t)p) {
                            dstamp[qn] = (int32_t)p;
                            int32_t pair[2] = {nagent[qn], nindex[qn]};
                            if (!fbuf_add(&out, pair, sizeof pair))
                                goto nomem;
                        }
                    }
                    cell->len = kept;
                    if (!dvec_push(cell, r))
                        goto nomem;
                    if (cell->len > DEPS_REFINE)
                        crowded = 1;
                }
            if (crowded && !refine(&s, m, -2 - (int64_t)r))
                goto nomem;
            r++;
        }
        pos++;
        offs[p + 1] = (int64_t)(out.len / (2 * sizeof(int32_t)));
    }
    *dep_offsets = offs;
    *deps = (int32_t *)(void *)out.p;
    offs = NULL;
    out.p = NULL;
    goto done;
nomem:
    st = api_fail(NCSIM_NOMEM, "memory", "%s: out of memory for %lld nodes", fn, (long long)n);
done:
    if (mems)
        for (int64_t k = 0; k < n_mem; k++)
            dmem_free(&mems[k]);
    free(mems);
    free(s.rbox);
    free(s.rnode);
    free(s.rnd);
    free(s.rflag);
    free(s.rstamp);
    free(dstamp);
    free(nagent);
    free(nindex);
    free(offs);
    free(out.p);
    return st;
}
