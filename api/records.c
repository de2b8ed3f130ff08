/*
 * records.c -- what a run records beyond its summary, through the public API: instruction
 * and transfer records as they complete (ncsim_sim_set_record_hooks), exact counters of the
 * statistics by name (ncsim_sim_counter), opcodes by name, and whether two architectures
 * give the same assembled program (ncsim_arch_same_memory). Sweeps and validation
 * (explore/) read their figures through these, write their files with ncsim_write_file and
 * read the files their data names with ncsim_read_data_file.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api_internal.h"
#include "file.h"
#include "load.h"

/* ---- opcodes ---------------------------------------------------------------------------------- */

int32_t ncsim_opcode(const char *mnemonic)
{
    if (!mnemonic)
        return -1;
    isa_op_t op = isa_op_lookup(mnemonic, strlen(mnemonic));
    return op == ISA_OP_COUNT ? -1 : (int32_t)op;
}

const char *ncsim_opcode_name(int32_t opcode)
{
    if (opcode < 0 || opcode >= (int32_t)ISA_OP_COUNT)
        return NULL;
    return isa_op_info((isa_op_t)opcode)->mnemonic;
}

/* ---- architectures ---------------------------------------------------------------------------- */

int ncsim_arch_same_memory(const ncsim_arch_t *a, const ncsim_arch_t *b)
{
    if (!a || !b)
        return 0;
    isa_geometry_t x, y;
    mdl_arch_geometry(&a->a, &x);
    mdl_arch_geometry(&b->a, &y);
    return x.partitions == y.partitions && x.sbuf_bytes == y.sbuf_bytes &&
           x.psum_bytes == y.psum_bytes && x.psum_bank_bytes == y.psum_bank_bytes &&
           x.hbm_bytes == y.hbm_bytes;
}

/* ---- record hooks: a trace sink that calls the client's hooks, then the trace file's ----------- */

static const sim_trace_sink_t *trace_next(const ncsim_sim_t *h)
{
    return h->trace ? sim_trace_sink(h->trace) : NULL;
}

static void tee_instr(void *ctx, const sim_trace_instr_t *r)
{
    ncsim_sim_t *h = ctx;
    if (h->records.instruction) {
        ncsim_instruction_record_t rec = {
            r->core,
            r->engine,
            r->index,
            r->instr ? (int32_t)r->instr->op : -1,
            r->instr ? r->instr->line : 0,
            r->ready_ps,
            r->start_ps,
            r->end_ps,
        };
        h->records.instruction(h->records.ctx, &rec);
    }
    const sim_trace_sink_t *n = trace_next(h);
    if (n && n->instr)
        n->instr(n->ctx, r);
}

static void tee_dma(void *ctx, const sim_trace_dma_t *r)
{
    ncsim_sim_t *h = ctx;
    if (h->records.transfer) {
        ncsim_transfer_record_t rec = {
            r->core,     r->queue,    r->issuing_engine, r->index, r->instr ? r->instr->line : 0,
            r->issue_ps, r->start_ps, r->end_ps,         r->bytes,
        };
        h->records.transfer(h->records.ctx, &rec);
    }
    const sim_trace_sink_t *n = trace_next(h);
    if (n && n->dma)
        n->dma(n->ctx, r);
}

static void tee_sem(void *ctx, const sim_trace_sem_t *r)
{
    const sim_trace_sink_t *n = trace_next(ctx);
    if (n && n->sem)
        n->sem(n->ctx, r);
}

static void tee_cc(void *ctx, const sim_trace_cc_t *r)
{
    const sim_trace_sink_t *n = trace_next(ctx);
    if (n && n->cc)
        n->cc(n->ctx, r);
}

static void tee_bandwidth(void *ctx, int kind, uint32_t index, uint64_t time_ps, double gbps)
{
    const sim_trace_sink_t *n = trace_next(ctx);
    if (n && n->bandwidth)
        n->bandwidth(n->ctx, kind, index, time_ps, gbps);
}

ncsim_status_t ncsim_sim_set_record_hooks(ncsim_sim_t *h, const ncsim_record_hooks_t *hooks)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "set_record_hooks: no simulator");
    if (h->started)
        return api_fail(NCSIM_USAGE, "usage", "set_record_hooks: the run has started");
    const sim_trace_sink_t *next = trace_next(h);
    if (!hooks || (!hooks->instruction && !hooks->transfer)) {
        memset(&h->records, 0, sizeof h->records);
        sim_set_trace_sink(h->s, next); /* the trace file's alone, or none: no cost */
        return NCSIM_OK;
    }
    h->records = *hooks;
    /* only the kinds of record someone wants: the simulator builds no record nobody reads */
    h->tee.ctx = h;
    h->tee.instr = hooks->instruction || (next && next->instr) ? tee_instr : NULL;
    h->tee.dma = hooks->transfer || (next && next->dma) ? tee_dma : NULL;
    h->tee.sem = next && next->sem ? tee_sem : NULL;
    h->tee.cc = next && next->cc ? tee_cc : NULL;
    h->tee.bandwidth = next && next->bandwidth ? tee_bandwidth : NULL;
    sim_set_trace_sink(h->s, &h->tee);
    return NCSIM_OK;
}

/* ---- counters ----------------------------------------------------------------------------------- */

#define COUNTER(type, field) {#field, offsetof(type, field)}

typedef struct counter {
    const char *name;
    size_t offset; /* of a uint64_t */
} counter_t;

static const counter_t run_counters[] = {
    COUNTER(sim_stats_t, total_ps),        COUNTER(sim_stats_t, instructions),
    COUNTER(sim_stats_t, events),          COUNTER(sim_stats_t, tensor_flops),
    COUNTER(sim_stats_t, hbm_read_bytes),  COUNTER(sim_stats_t, hbm_write_bytes),
};

static const counter_t core_counters[] = {
    COUNTER(sim_core_stats_t, end_ps),         COUNTER(sim_core_stats_t, dma_transfers),
    COUNTER(sim_core_stats_t, dma_bytes),      COUNTER(sim_core_stats_t, dma_busy_ps),
    COUNTER(sim_core_stats_t, hbm_read_bytes), COUNTER(sim_core_stats_t, hbm_write_bytes),
};

static const counter_t engine_counters[] = {
    COUNTER(sim_engine_stats_t, instructions), COUNTER(sim_engine_stats_t, busy_ps),
    COUNTER(sim_engine_stats_t, active_ps),    COUNTER(sim_engine_stats_t, stall_ps),
    COUNTER(sim_engine_stats_t, end_ps),       COUNTER(sim_engine_stats_t, flops),
};

static int find_counter(const counter_t *t, size_t n, const char *name, const void *base,
                        uint64_t *value)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(t[i].name, name) == 0) {
            memcpy(value, (const char *)base + t[i].offset, sizeof *value);
            return 1;
        }
    return 0;
}

ncsim_status_t ncsim_sim_counter(ncsim_sim_t *h, const char *key, uint64_t *value)
{
    if (!h || !key || !value)
        return api_fail(NCSIM_USAGE, "usage", "counter: no simulator, key or output");
    const sim_stats_t *s = sim_stats(h->s);
    if (strcmp(key, "cores") == 0) {
        *value = s->ncores;
        return NCSIM_OK;
    }
    if (find_counter(run_counters, sizeof run_counters / sizeof *run_counters, key, s, value))
        return NCSIM_OK;
    if (strncmp(key, "core.", 5) == 0 && key[5] >= '0' && key[5] <= '9') {
        char *end;
        errno = 0;
        unsigned long long c = strtoull(key + 5, &end, 10);
        if (errno || *end != '.' || c >= s->ncores)
            return api_fail(NCSIM_USAGE, "usage", "counter '%s': the run has %u cores (core.0 "
                                                  "to core.%u)",
                            key, s->ncores, s->ncores ? s->ncores - 1 : 0);
        const sim_core_stats_t *cs = &s->cores[c];
        const char *rest = end + 1;
        if (strcmp(rest, "used") == 0) {
            *value = cs->used ? 1u : 0u;
            return NCSIM_OK;
        }
        if (find_counter(core_counters, sizeof core_counters / sizeof *core_counters, rest, cs,
                         value))
            return NCSIM_OK;
        const char *dot = strchr(rest, '.');
        for (int e = 0; dot && e < ISA_ENGINE_COUNT; e++) {
            const char *en = isa_engine_name((isa_engine_t)e);
            if (strlen(en) == (size_t)(dot - rest) && strncmp(rest, en, strlen(en)) == 0 &&
                find_counter(engine_counters, sizeof engine_counters / sizeof *engine_counters,
                             dot + 1, &cs->engines[e], value))
                return NCSIM_OK;
        }
    }
    return api_fail(NCSIM_USAGE, "usage", "no counter '%s' (ncsim.h lists them: total_ps, "
                                          "core.C.dma_bytes, core.C.pe.busy_ps, ...)",
                    key);
}

/* ---- files ------------------------------------------------------------------------------------ */

ncsim_status_t ncsim_write_file(const char *path, const void *data, size_t len)
{
    if (!path || (!data && len))
        return api_fail(NCSIM_USAGE, "usage", "ncsim_write_file: no path or data");
    if (sim_write_file(path, data, len) == 0)
        return NCSIM_OK;
    int e = errno;
    api_fail(NCSIM_IO, "io", "cannot write %s: %s", path, strerror(e));
    errno = e;
    return NCSIM_IO;
}

int ncsim_remove_on_signal(const char *path)
{
    return path ? isa_file_pending_add(path) : -1;
}

void ncsim_remove_on_signal_cancel(int n)
{
    isa_file_pending_remove(n);
}

int ncsim_path_is_special(const char *path)
{
    return path ? isa_file_is_special(path) : 0;
}

ncsim_status_t ncsim_read_file(const char *path, void **data, size_t *len)
{
    if (data)
        *data = NULL;
    if (len)
        *len = 0;
    if (!path || !data || !len)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_read_file: no path or no place for the data");
    char *buf = sim_read_file(path, len);
    if (buf) {
        *data = buf;
        return NCSIM_OK;
    }
    int e = errno;
    api_fail(NCSIM_IO, "io", "cannot read %s: %s", path, strerror(e));
    errno = e;
    return NCSIM_IO;
}

/* The reason is handed back alone (WHY) and in the last error with the path; errno is kept
 * across both. */
static ncsim_status_t read_fail(const char *path, const char *reason, int e, char *why,
                                size_t whylen)
{
    if (why && whylen)
        snprintf(why, whylen, "%s", reason);
    api_fail_at(NCSIM_IO, "io", path, 0, 0, -1, -1, -1, "cannot read %s: %s", path, reason);
    errno = e;
    return NCSIM_IO;
}

ncsim_status_t ncsim_read_data_file(const char *path, uint64_t max_bytes, unsigned flags,
                                    void **data, size_t *len, char *why, size_t whylen)
{
    if (data)
        *data = NULL;
    if (len)
        *len = 0;
    if (why && whylen)
        why[0] = 0;
    if (!path || !data || !len)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_read_data_file: no path or no place for "
                                              "the data");
    if (flags & ~NCSIM_READ_NO_SYMLINK)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_read_data_file: unknown flags 0x%x",
                        flags & ~NCSIM_READ_NO_SYMLINK);
    if (max_bytes >= SIZE_MAX)
        max_bytes = SIZE_MAX - 1;
    char reason[256];
    FILE *f = isa_file_open_data(path, max_bytes,
                                 (flags & NCSIM_READ_NO_SYMLINK) ? ISA_FILE_NO_SYMLINK : 0,
                                 reason, sizeof reason);
    if (!f)
        return read_fail(path, reason, errno, why, whylen);
    /* The size checked on the descriptor sizes the buffer; a file that grows meanwhile is
     * read on up to the bound, never past it. */
    struct stat st;
    size_t cap = 1 << 16;
    if (fstat(fileno(f), &st) == 0 && st.st_size >= 0 && (uint64_t)st.st_size <= max_bytes)
        cap = (size_t)st.st_size + 1;
    size_t n = 0;
    char *buf = malloc(cap + 1);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap)
            break;
        if (n > max_bytes)
            break;
        size_t next = cap > (size_t)max_bytes / 2 ? (size_t)max_bytes + 1 : cap * 2;
        char *t = realloc(buf, next + 1);
        if (!t) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = t;
        cap = next;
    }
    int bad = !buf ? ENOMEM : ferror(f) ? EIO : n > max_bytes ? EFBIG : 0;
    fclose(f);
    if (bad) {
        free(buf);
        if (bad == ENOMEM) {
            api_fail(NCSIM_NOMEM, "memory", "cannot read %s: out of memory", path);
            errno = ENOMEM;
            return NCSIM_NOMEM;
        }
        if (bad == EFBIG)
            snprintf(reason, sizeof reason, "grew beyond %llu bytes while read",
                     (unsigned long long)max_bytes);
        else
            snprintf(reason, sizeof reason, "read error");
        return read_fail(path, reason, bad, why, whylen);
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return NCSIM_OK;
}
