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
 * at in an `.if` on the iteration, or use .loc, to choose another). The library calls back
 * at the line (ncsim_sim_set_line_hook) and writes the files (ncsim_sim_dump_npy).
 */
#include "dump.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* The tensor named name[0..len) that core `core` sees: HBM, every core's, or that core's. */
static int find_tensor(const ncsim_program_t *prog, const char *name, size_t len, uint32_t core)
{
    ncsim_tensor_info_t T;
    for (uint32_t i = 0; i < ncsim_program_tensor_count(prog); i++) {
        if (ncsim_program_tensor(prog, i, &T) != NCSIM_OK)
            break;
        if (strlen(T.name) != len || memcmp(T.name, name, len) != 0)
            continue;
        if (T.memory == NCSIM_HBM || T.core == -1 || (uint32_t)T.core == core)
            return (int)i;
    }
    return -1;
}

int cli_dumps_resolve(cli_dumps_t *ds, const ncsim_program_t *prog, int timing_only, char *err,
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
    uint32_t ncores = ncsim_program_cores(prog);
    for (int i = 0; i < ds->n; i++) {
        cli_dump_t *d = &ds->d[i];
        if (d->core >= ncores) {
            snprintf(err, errlen, "--dump %.*s@%u: the program has %u core%s", (int)d->name_len,
                     d->name, d->core, ncores, ncores == 1 ? "" : "s");
            return -1;
        }
        d->tensor = find_tensor(prog, d->name, d->name_len, d->core);
        if (d->tensor < 0) {
            snprintf(err, errlen, "--dump %.*s: the program declares no tensor '%.*s'%s",
                     (int)d->name_len, d->name, (int)d->name_len, d->name,
                     d->have_core ? " on that core" : "");
            return -1;
        }
        ncsim_tensor_info_t T;
        ncsim_program_tensor(prog, (uint32_t)d->tensor, &T);
        if (T.memory != NCSIM_HBM && T.core != -1 && !d->have_core)
            d->core = (uint32_t)T.core; /* declared for one core: that one */
    }
    if (ds->at_line && !ncsim_program_line_instructions(prog, ds->at_line)) {
        snprintf(err, errlen, "--dump-at %u: no instruction comes from line %u", ds->at_line,
                 ds->at_line);
        return -1;
    }
    return 0;
}

/* Write dump d now. 0, or -1 with a message printed. */
static int write_dump(cli_dumps_t *ds, ncsim_sim_t *s, cli_dump_t *d)
{
    const char *path = ds->outputs ? cli_outputs_path(ds->outputs, d->path) : d->path;
    ncsim_status_t st = ncsim_sim_dump_npy(s, (uint32_t)d->tensor, (int32_t)d->core, path);
    d->done = 1;
    if (st == NCSIM_OK) {
        if (ds->outputs)
            cli_outputs_mark_written(ds->outputs, d->path);
        return 0;
    }
    if (st == NCSIM_IO) {
        fprintf(stderr, "ncsim run: --dump: cannot write %s (%s)\n", d->path, ncsim_last_error());
        ds->io_error = 1;
    } else if (st == NCSIM_NOMEM) {
        fprintf(stderr, "ncsim run: --dump %s: out of memory\n", d->path);
    } else {
        fprintf(stderr, "ncsim run: --dump %.*s: cannot read the tensor on core %u\n",
                (int)d->name_len, d->name, d->core);
    }
    ds->failed = 1;
    return -1;
}

/* An instruction or transfer of core `core` from the --dump-at line took effect. */
static void at_line(void *ctx, ncsim_sim_t *s, uint32_t core)
{
    cli_dumps_t *ds = ctx;
    for (int i = 0; i < ds->n; i++) {
        cli_dump_t *d = &ds->d[i];
        if (d->done)
            continue;
        ncsim_tensor_info_t T;
        ncsim_program_tensor(ds->prog, (uint32_t)d->tensor, &T);
        if (T.memory != NCSIM_HBM && d->core != core)
            continue;
        write_dump(ds, s, d);
    }
}

ncsim_status_t cli_dumps_hook(cli_dumps_t *ds, ncsim_sim_t *s)
{
    return ds->at_line ? ncsim_sim_set_line_hook(s, ds->at_line, at_line, ds) : NCSIM_OK;
}

int cli_dumps_finish(cli_dumps_t *ds, ncsim_sim_t *s)
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
