/*
 * dump.c -- ncsim run --dump / --dump-at (dump.h).
 *
 * When a dump is taken: at the end of the run; with --dump-at LINE, right after the first
 * instruction (or DMA transfer) of source line LINE that writes memory has taken effect on
 * the tensor's core (any core for an HBM tensor): an ldweights (half of `matmul D, STAT,
 * MOV`) does not count, a `dma` counts when its transfer lands. The simulator applies an instruction's effect in simulation
 * order when it starts and a transfer's when it lands, so the file holds the tensor as that
 * instruction left it, with every instruction that took effect before it. Only the first
 * time the line runs: one file per --dump (a loop body runs many times; put the line to dump
 * at in an `.if` on the iteration, or use .loc, to choose another).
 */
#include "dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "npy.h"
#include "outputs.h"

int cli_dump_parse(cli_dumps_t *ds, const char *arg, char *err, size_t errlen)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1]) {
        snprintf(err, errlen, "--dump wants NAME[@CORE]=FILE.npy, not '%s'", arg);
        return -1;
    }
    if (ds->n == CLI_MAX_DUMPS) {
        snprintf(err, errlen, "too many --dump options (at most %d)", CLI_MAX_DUMPS);
        return -1;
    }
    cli_dump_t *d = &ds->d[ds->n];
    memset(d, 0, sizeof *d);
    d->name = arg;
    d->name_len = (size_t)(eq - arg);
    d->path = eq + 1;
    const char *at = memchr(arg, '@', d->name_len);
    if (at) {
        char *end;
        errno = 0;
        unsigned long core = strtoul(at + 1, &end, 10);
        if (end != eq || at + 1 == eq || errno || core > 65535) {
            snprintf(err, errlen, "--dump %s: the core after '@' must be a number", arg);
            return -1;
        }
        d->core = (uint32_t)core;
        d->have_core = 1;
        d->name_len = (size_t)(at - arg);
        if (!d->name_len) {
            snprintf(err, errlen, "--dump %s: no tensor name", arg);
            return -1;
        }
    }
    d->tensor = -1;
    ds->n++;
    return 0;
}

int cli_dumps_register(cli_dumps_t *ds, struct cli_outputs *outputs)
{
    ds->outputs = outputs;
    for (int i = 0; i < ds->n; i++)
        if (cli_outputs_add(outputs, ds->d[i].path, "--dump"))
            return -1;
    return 0;
}

int cli_dump_parse_line(cli_dumps_t *ds, const char *arg, char *err, size_t errlen)
{
    char *end;
    errno = 0;
    unsigned long line = strtoul(arg, &end, 10);
    if (!*arg || *end || errno || line == 0 || line > UINT32_MAX || *arg == '-') {
        snprintf(err, errlen, "--dump-at wants a source line number (1 or more), not '%s'",
                 arg);
        return -1;
    }
    ds->at_line = (uint32_t)line;
    return 0;
}

int cli_dumps_resolve(cli_dumps_t *ds, const isa_program_t *prog, int timing_only, char *err,
                      size_t errlen)
{
    ds->prog = prog;
    if (ds->at_line && !ds->n) {
        snprintf(err, errlen, "--dump-at needs at least one --dump NAME=FILE.npy");
        return -1;
    }
    if (ds->n && timing_only) {
        snprintf(err, errlen, "--dump needs a functional run (drop --timing-only)");
        return -1;
    }
    for (int i = 0; i < ds->n; i++) {
        cli_dump_t *d = &ds->d[i];
        if (d->core >= prog->ncores) {
            snprintf(err, errlen, "--dump %.*s@%u: the program has %u core%s", (int)d->name_len,
                     d->name, d->core, prog->ncores, prog->ncores == 1 ? "" : "s");
            return -1;
        }
        d->tensor = sim_find_tensor(prog, d->name, d->name_len, d->core);
        if (d->tensor < 0) {
            snprintf(err, errlen, "--dump %.*s: the program declares no tensor '%.*s'%s",
                     (int)d->name_len, d->name, (int)d->name_len, d->name,
                     d->have_core ? " on that core" : "");
            return -1;
        }
        const isa_tensor_t *T = &prog->tensors[d->tensor];
        if (T->space != ISA_SPACE_HBM && T->core != -1 && !d->have_core)
            d->core = (uint32_t)T->core; /* declared for one core: that one */
    }
    if (ds->at_line) {
        int found = 0;
        for (uint32_t i = 0; i < prog->ninstrs && !found; i++)
            found = prog->instrs[i].line == ds->at_line;
        if (!found) {
            snprintf(err, errlen, "--dump-at %u: no instruction comes from line %u",
                     ds->at_line, ds->at_line);
            return -1;
        }
    }
    return 0;
}

/* Write dump d now. 0, or -1 with a message printed. */
static int write_dump(cli_dumps_t *ds, sim_t *s, cli_dump_t *d)
{
    const isa_program_t *p = ds->prog;
    const isa_tensor_t *T = &p->tensors[d->tensor];
    uint64_t n = 1;
    uint64_t dims[ISA_MAX_DIMS + 1];
    for (unsigned k = 0; k < T->ndims; k++) {
        n *= T->dims[k];
        dims[k] = T->dims[k];
    }
    isa_dtype_t dt = (isa_dtype_t)T->dtype;
    int native = mdl_npy_dtype_is_native(dt);
    size_t es = native ? isa_dtype_size(dt) : sizeof(float);
    void *buf = malloc(n * es > 0 ? n * es : 1);
    if (!buf) {
        fprintf(stderr, "ncsim run: --dump %s: out of memory\n", d->path);
        return -1;
    }
    ncsim_status_t st = sim_tensor_read_any(s, (uint32_t)d->tensor, d->core, native, buf);
    char err[512];
    if (st == NCSIM_OK) {
        const char *path = ds->outputs ? cli_outputs_path(ds->outputs, d->path) : d->path;
        st = mdl_npy_write(path, mdl_npy_type_descr(mdl_npy_type_for_dtype(dt)), dims,
                           T->ndims, buf, err, sizeof err);
        if (st != NCSIM_OK) {
            fprintf(stderr, "ncsim run: --dump: cannot write %s (%s)\n", d->path, err);
            ds->io_error = 1;
        } else if (ds->outputs) {
            cli_outputs_mark_written(ds->outputs, d->path);
        }
    } else {
        fprintf(stderr, "ncsim run: --dump %.*s: cannot read the tensor on core %u\n",
                (int)d->name_len, d->name, d->core);
    }
    free(buf);
    d->done = 1;
    if (st != NCSIM_OK) {
        ds->failed = 1;
        return -1;
    }
    return 0;
}

/* An instruction or transfer of core `core` from line `line` took effect. */
static void at_line(cli_dumps_t *ds, sim_t *s, uint32_t core, const isa_instr_t *in)
{
    if (in->line != ds->at_line)
        return;
    for (int i = 0; i < ds->n; i++) {
        cli_dump_t *d = &ds->d[i];
        if (d->done)
            continue;
        const isa_tensor_t *T = &ds->prog->tensors[d->tensor];
        if (T->space != ISA_SPACE_HBM && d->core != core)
            continue;
        write_dump(ds, s, d);
    }
}

static void obs_instr_start(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                            const isa_instr_t *in)
{
    cli_dumps_t *ds = ctx;
    if (ds->next && ds->next->instr_start)
        ds->next->instr_start(ds->next->ctx, s, core, engine, index, in);
}

static void obs_instr_done(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                           const isa_instr_t *in)
{
    cli_dumps_t *ds = ctx;
    if (ds->next && ds->next->instr_done)
        ds->next->instr_done(ds->next->ctx, s, core, engine, index, in);
    /* an ldweights writes no memory: `matmul D, STAT, MOV` is an ldweights then the matmul,
     * both of the line, and the dump belongs after the matmul */
    if (in->op != ISA_OP_LDWEIGHTS)
        at_line(ds, s, core, in);
}

static void obs_dma_landed(void *ctx, sim_t *s, uint32_t core, uint8_t queue, uint8_t engine,
                           uint32_t index, const isa_instr_t *in)
{
    cli_dumps_t *ds = ctx;
    if (ds->next && ds->next->dma_landed)
        ds->next->dma_landed(ds->next->ctx, s, core, queue, engine, index, in);
    at_line(ds, s, core, in);
}

static void obs_collective(void *ctx, sim_t *s, int phase, uint32_t core, uint32_t index,
                           const isa_instr_t *in)
{
    cli_dumps_t *ds = ctx;
    if (ds->next && ds->next->collective)
        ds->next->collective(ds->next->ctx, s, phase, core, index, in);
    if (phase == 1)
        at_line(ds, s, core, in);
}

static void obs_posts(void *ctx, sim_t *s, uint32_t core, int by_engine, uint32_t by_index,
                      const isa_instr_t *in)
{
    cli_dumps_t *ds = ctx;
    if (ds->next && ds->next->posts)
        ds->next->posts(ds->next->ctx, s, core, by_engine, by_index, in);
}

const sim_observer_t *cli_dumps_observer(cli_dumps_t *ds, const sim_observer_t *next)
{
    if (!ds->at_line)
        return next;
    ds->next = next;
    ds->obs.ctx = ds;
    ds->obs.instr_start = next && next->instr_start ? obs_instr_start : NULL;
    ds->obs.instr_done = obs_instr_done;
    ds->obs.dma_landed = obs_dma_landed;
    ds->obs.collective = obs_collective;
    ds->obs.posts = next && next->posts ? obs_posts : NULL;
    return &ds->obs;
}

int cli_dumps_finish(cli_dumps_t *ds, sim_t *s)
{
    for (int i = 0; i < ds->n; i++) {
        cli_dump_t *d = &ds->d[i];
        if (d->done)
            continue;
        if (ds->at_line) {
            fprintf(stderr, "ncsim run: --dump %.*s: line %u never ran on core %u: %s not "
                            "written\n",
                    (int)d->name_len, d->name, ds->at_line, d->core, d->path);
            ds->failed = 1;
            continue;
        }
        write_dump(ds, s, d);
    }
    if (ds->io_error)
        return 3;
    return ds->failed ? 2 : 0;
}
