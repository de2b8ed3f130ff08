/*
 * report.c -- the report's lists, which a trace (report_model.c) or a statistics file
 * (report_load.c) fills: adding entries, notes, the final ordering (trc_report_finish, which
 * also asks report_verdict.c for the candidates of a report without a critical path) and
 * freeing; the stall causes' names; the units and derived figures both renderings use.
 * report_internal.h lists the other parts of the report.
 */
#include "report_internal.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- names ----------------------------------------------------------------------------------- */

static const char *const stall_keys[] = {
#define XX(id, key, text) key,
    TRC_STALL_MAP(XX)
#undef XX
};
static const char *const stall_texts[] = {
#define XX(id, key, text) text,
    TRC_STALL_MAP(XX)
#undef XX
};

const char *trc_stall_key(trc_stall_t s)
{
    return s < TRC_STALL_COUNT ? stall_keys[s] : "?";
}

const char *trc_stall_text(trc_stall_t s)
{
    return s < TRC_STALL_COUNT ? stall_texts[s] : "?";
}

/* ---- list helpers ---------------------------------------------------------------------------- */

void *rpt_push(void **arr, size_t *n, size_t *cap, size_t elem)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 16;
        void *p = realloc(*arr, c * elem);
        if (!p)
            return NULL;
        *arr = p;
        *cap = c;
    }
    void *e = (char *)*arr + (*n)++ * elem;
    memset(e, 0, elem);
    return e;
}

/* Report lists grow by doubling; their capacity is kept by rounding n up to a power of two. */
static size_t cap_of(size_t n)
{
    size_t c = 16;
    while (c < n)
        c *= 2;
    return n ? c : 0;
}

void *rpt_append(void **arr, size_t *n, size_t elem)
{
    size_t cap = cap_of(*n);
    return rpt_push(arr, n, &cap, elem);
}

trc_report_engine_t *trc_report_add_engine(trc_report_t *rep)
{
    return rpt_append((void **)&rep->engines, &rep->nengines, sizeof *rep->engines);
}

trc_report_dma_t *trc_report_add_dma(trc_report_t *rep)
{
    return rpt_append((void **)&rep->dma, &rep->ndma, sizeof *rep->dma);
}

trc_report_stall_t *trc_report_add_stall(trc_report_t *rep)
{
    return rpt_append((void **)&rep->stalls, &rep->nstalls, sizeof *rep->stalls);
}

trc_report_link_t *trc_report_add_link(trc_report_t *rep)
{
    return rpt_append((void **)&rep->links, &rep->nlinks, sizeof *rep->links);
}


void trc_report_note(trc_report_t *rep, const char *fmt, ...)
{
    if (rep->nnotes == (int)(sizeof rep->notes / sizeof rep->notes[0]))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(rep->notes[rep->nnotes++], sizeof rep->notes[0], fmt, ap);
    va_end(ap);
}

static int cmp_stall(const void *a, const void *b)
{
    const trc_report_stall_t *x = a, *y = b;
    if (x->ps != y->ps)
        return x->ps > y->ps ? -1 : 1;
    if (x->core != y->core)
        return x->core < y->core ? -1 : 1;
    int c = strcmp(x->engine, y->engine);
    return c ? c : strcmp(x->cause, y->cause);
}

static int cmp_link(const void *a, const void *b)
{
    const trc_report_link_t *x = a, *y = b;
    if (x->from_chip != y->from_chip)
        return x->from_chip < y->from_chip ? -1 : 1;
    return x->to_chip < y->to_chip ? -1 : x->to_chip > y->to_chip;
}

static int cmp_coll(const void *a, const void *b)
{
    const trc_report_collective_t *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* ---- ordering and freeing -------------------------------------------------------------------- */

static int cmp_line(const void *a, const void *b)
{
    const trc_report_line_t *x = a, *y = b;
    uint64_t cx = trc_report_line_cost(x), cy = trc_report_line_cost(y);
    if (cx != cy)
        return cx > cy ? -1 : 1;
    return x->line < y->line ? -1 : x->line > y->line;
}

static int cmp_bound(const void *a, const void *b)
{
    const trc_report_bound_t *x = a, *y = b;
    if (x->ps != y->ps)
        return x->ps > y->ps ? -1 : 1;
    return strcmp(x->what, y->what);
}

void trc_report_finish(trc_report_t *rep)
{
    if (!rep->bounds_from_path && !rep->nbounds)
        rpt_bounds_from_totals(rep);
    if (rep->nlines)
        qsort(rep->lines, rep->nlines, sizeof *rep->lines, cmp_line);
    rpt_line_index(rep, 1); /* the lines moved (out of memory: searched without an index) */
    if (rep->nbounds)
        qsort(rep->bounds, rep->nbounds, sizeof *rep->bounds, cmp_bound);
    if (rep->nstalls)
        qsort(rep->stalls, rep->nstalls, sizeof *rep->stalls, cmp_stall);
    if (rep->nlinks)
        qsort(rep->links, rep->nlinks, sizeof *rep->links, cmp_link);
    if (rep->ncolls)
        qsort(rep->colls, rep->ncolls, sizeof *rep->colls, cmp_coll);
}

void trc_report_free(trc_report_t *rep)
{
    free(rep->engines);
    free(rep->dma);
    free(rep->stalls);
    free(rep->kinds);
    free(rep->path);
    free(rep->path_tracks);
    free(rep->links);
    free(rep->colls);
    free(rep->lines);
    free(rep->line_slots);
    free(rep->bounds);
    memset(rep, 0, sizeof *rep);
}

/* ---- units and derived figures --------------------------------------------------------------- */

const char *rpt_ns3(char *buf, size_t n, uint64_t ps)
{
    snprintf(buf, n, "%llu.%03llu", (unsigned long long)(ps / 1000),
             (unsigned long long)(ps % 1000));
    return buf;
}

double rpt_pct(double part, double whole)
{
    return whole > 0 ? 100.0 * part / whole : 0.0;
}

double rpt_gbps(uint64_t bytes, uint64_t ps)
{
    return ps ? (double)bytes / (double)ps * 1000.0 : 0.0; /* bytes/ps -> GB/s */
}

uint64_t rpt_dma_bytes_total(const trc_report_t *r)
{
    uint64_t b = 0;
    for (size_t i = 0; i < r->ndma; i++)
        b += r->dma[i].bytes;
    return b;
}

double rpt_peak_flops(const trc_report_t *r, double seconds)
{
    return r->peak_flops_per_core * (double)r->cores_used * seconds;
}

double rpt_busbw_factor(const trc_report_collective_t *c)
{
    double n = (double)(c->members ? c->members : 1);
    if (strcmp(c->op, "all_reduce") == 0)
        return 2.0 * (n - 1.0) / n;
    if (strcmp(c->op, "send") == 0 || strcmp(c->op, "recv") == 0)
        return 1.0;
    return (n - 1.0) / n;
}
