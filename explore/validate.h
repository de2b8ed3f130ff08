/*
 * validate.h -- check the simulator against measured figures (`ncsim validate`) and fit
 * config keys to them (`ncsim fit`); docs/validation.md describes the manifest format.
 *
 * A manifest (JSON) lists entries: a workload (an NCA/.ncx program, or a command that prints
 * NCA text), the architecture and --set overrides it runs on, which figure of the run to read
 * (total time, an engine's busy fraction, a mean instruction duration or interval, a DMA
 * transfer's duration, an achieved bandwidth), the measured value and the allowed relative
 * error (band). Every entry runs in timing-only mode, in this process (or in --jobs worker
 * processes); only a generator command is a child process, run once per manifest load.
 */
#ifndef NCSIM_EXPLORE_VALIDATE_H
#define NCSIM_EXPLORE_VALIDATE_H

#include <stddef.h>
#include <stdio.h>

#include "ncsim.h"

/* What an entry reads from its run. */
typedef enum sim_validate_figure {
    SIM_VALIDATE_TIME_NS,          /* total simulated time */
    SIM_VALIDATE_BUSY_FRACTION,    /* active time of one engine of one core / total time:
                                    * time with an instruction between start and completion */
    SIM_VALIDATE_MEAN_DURATION_NS, /* mean start-to-end of instructions of one mnemonic */
    SIM_VALIDATE_MEAN_INTERVAL_NS, /* mean start-to-start of consecutive ones, same engine */
    SIM_VALIDATE_DMA_TRANSFER_NS,  /* mean duration of one DMA engine transfer */
    SIM_VALIDATE_DMA_BANDWIDTH,    /* DMA bytes moved / total time, GB/s */
    SIM_VALIDATE_HBM_BANDWIDTH     /* HBM bytes read + written / total time, GB/s */
} sim_validate_figure_t;

typedef struct sim_validate_entry {
    char *id;                 /* unique within the manifest */
    char *title, *source, *choices; /* "" when absent */
    char *program;            /* absolute path, or NULL when the entry has a generator */
    char **generate;          /* argv of the generator (NULL-terminated), or NULL */
    size_t ngenerate;
    char *arch;               /* preset name or absolute path of a config file */
    char **sets;              /* "section.key=value", in the order written */
    size_t nsets;
    char *figure;             /* as written, e.g. "busy_fraction:pe@core1" */
    sim_validate_figure_t kind;
    int engine;               /* BUSY_FRACTION: ncsim_engine_t */
    unsigned core;            /* BUSY_FRACTION: core (default 0) */
    int op;                   /* MEAN_*: ncsim_opcode() of the mnemonic */
    double divide;            /* 1 when absent */
    char *relative_to;        /* id of another entry, or NULL */
    char *known_miss;         /* why the model is known to miss this entry's band, or NULL:
                               * outside its band it does not fail the run; inside it does
                               * (the mark is stale and must go) */
    size_t relative_index;    /* that entry's index */
    double measured;
    double band;              /* allowed |simulated / measured - 1| (default 0.15) */
    double weight;            /* in fit (default 1) */
    int fit;                  /* used by `ncsim fit` (default 1) */
} sim_validate_entry_t;

typedef struct sim_validate_cache sim_validate_cache_t;

typedef struct sim_validate_manifest {
    char *path;               /* as given */
    char *dir;                /* absolute directory of the manifest */
    char *name, *description; /* "" when absent */
    sim_validate_entry_t *entries;
    size_t nentries;
    sim_validate_cache_t *cache; /* generated texts and assembled programs */
} sim_validate_manifest_t;

/*
 * Read and check a manifest: JSON syntax, every key known and of the right type, ids unique,
 * figure names known, relative_to naming another entry (without cycles), program and arch
 * files present. NCSIM_USAGE with a message naming the manifest file and the entry id (or
 * index) and key; NCSIM_IO when the manifest cannot be read.
 */
ncsim_status_t sim_validate_load(const char *path, sim_validate_manifest_t **out, char *err,
                                 size_t errlen);
void sim_validate_free(sim_validate_manifest_t *m);

/* Parse a figure name into e->kind, engine, core, op. NCSIM_USAGE with a message. */
ncsim_status_t sim_validate_parse_figure(const char *figure, sim_validate_entry_t *e, char *err,
                                         size_t errlen);

/*
 * Run the generators and assemble every entry's program for the geometry of its architecture
 * (with the overrides of opt), once. sim_validate_run does this itself when needed; call it
 * first to see errors early, and before forking workers so they share the programs.
 * NCSIM_USAGE naming the entry when a generator fails, NCSIM_ASSEMBLY when a program does not
 * assemble (the message holds the diagnostics), NCSIM_IO when a file cannot be read.
 */
typedef struct sim_validate_options {
    const char *arch;               /* replaces every entry's arch when not NULL */
    const char *const *sets;        /* applied to every entry after its own sets */
    size_t nsets;
    const char *const *extra_sets;  /* applied last (fit's trial values) */
    size_t nextra_sets;
    unsigned jobs;                  /* worker processes; 0 or 1: this process */
    int only_fit;                   /* run only the entries with fit=true (and those they are
                                       relative to) */
    const char *const *only;        /* when nonly > 0: run only the entries whose id contains
                                       one of these (and those they are relative to) */
    size_t nonly;
} sim_validate_options_t;

ncsim_status_t sim_validate_prepare(sim_validate_manifest_t *m, const sim_validate_options_t *o,
                                    char *err, size_t errlen);

typedef struct sim_validate_result {
    ncsim_status_t status;    /* NCSIM_OK, or why the entry has no figure */
    char message[512];        /* the error when status != NCSIM_OK */
    int ran;                  /* 0: left out (only_fit) */
    double raw;               /* the figure of this entry's own run, divided */
    double simulated;         /* raw, relative to relative_to when given */
    double ratio;             /* simulated / measured */
    double error;             /* ratio - 1 */
    int inside;               /* |error| <= band */
} sim_validate_result_t;

/*
 * Run the entries (results[i] for entry i). Per-entry failures (a run-time error, a deadlock,
 * a config that does not validate, a figure with nothing to measure) are recorded in the
 * result; the return value is an error only for what stops everything: NCSIM_USAGE /
 * NCSIM_ASSEMBLY from preparing, NCSIM_NOMEM, NCSIM_INTERNAL when a worker died.
 */
ncsim_status_t sim_validate_run(sim_validate_manifest_t *m, const sim_validate_options_t *o,
                                sim_validate_result_t *results, char *err, size_t errlen);

typedef struct sim_validate_summary {
    size_t entries, ran, failed, outside;
    size_t known_outside;     /* outside their band and marked known_miss */
    size_t stale_known;       /* marked known_miss but inside their band */
    double geomean_error;     /* exp(mean |ln ratio|) - 1 over the entries with a figure */
    double worst_error;       /* signed error of the entry with the largest |ln ratio| */
    size_t worst_index;       /* (SIZE_MAX when none) */
    double fit_cost;          /* sum over fit entries of weight * ln(ratio)^2 */
} sim_validate_summary_t;

void sim_validate_summarise(const sim_validate_manifest_t *m,
                            const sim_validate_result_t *results, sim_validate_summary_t *s);

/* The table of `ncsim validate`: one line per entry (only_problems: only the entries that
 * failed or left their band), then the summary lines. */
void sim_validate_print(FILE *out, const sim_validate_manifest_t *m,
                        const sim_validate_result_t *results, int only_problems);

/* CSV: id,title,figure,measured,simulated,ratio,error_pct,band,inside,weight,fit,status
 * ("-" writes to stdout). NCSIM_IO when it cannot be written. */
ncsim_status_t sim_validate_write_csv(const char *path, const sim_validate_manifest_t *m,
                                      const sim_validate_result_t *results, char *err,
                                      size_t errlen);

/* A log-log scatter of simulated against measured, the y = x line and the lines of the band
 * most entries have, each point labelled with its id and coloured by whether it is inside its
 * own band. NCSIM_USAGE when no entry has a figure. */
ncsim_status_t sim_validate_plot(const char *png_path, const sim_validate_manifest_t *m,
                                 const sim_validate_result_t *results, char *err,
                                 size_t errlen);

/* ---- fit ------------------------------------------------------------------------------------ */

typedef struct sim_fit_key {
    const char *key;          /* "section.key" */
    double lo, hi;
} sim_fit_key_t;

typedef struct sim_fit_options {
    sim_validate_options_t run; /* arch: the base config (NULL: trn1), sets, jobs */
    const sim_fit_key_t *keys;
    size_t nkeys;
    unsigned max_evals;       /* 0: 200 */
    FILE *progress;           /* one line per evaluation, or NULL */
} sim_fit_options_t;

typedef struct sim_fit_outcome {
    double start[16], best[16]; /* per key */
    double cost_before, cost_after;
    unsigned evals;
    const char *stop;         /* why the optimiser stopped */
} sim_fit_outcome_t;

#define SIM_FIT_MAX_KEYS 16

/* Parse "KEY=LO:HI" (the text is copied into `buf`, which k->key points into). */
ncsim_status_t sim_fit_parse_key(const char *text, char *buf, size_t buflen, sim_fit_key_t *k,
                                 char *err, size_t errlen);

/*
 * Minimise sum over the fit entries of weight * ln(simulated / measured)^2 over the keys in
 * their bounds, with NLopt's derivative-free BOBYQA from the base config's values clamped to
 * the bounds (deterministic: no random start). An entry that fails at a trial point makes
 * that point infinitely bad. NCSIM_USAGE for a bad key or bounds, or when the base point
 * itself fails (message names the entry).
 */
ncsim_status_t sim_fit_run(sim_validate_manifest_t *m, const sim_fit_options_t *o,
                           sim_fit_outcome_t *out, char *err, size_t errlen);

/* The fitted config as JSON text (malloc'd): "base", name, description, the --set overrides
 * and the fitted keys, and "sources" saying they were fitted by `ncsim fit` to which manifest.
 * NULL when out of memory. `name` may be NULL (the file's stem is used by the loader). */
char *sim_fit_config_json(const sim_validate_manifest_t *m, const sim_fit_options_t *o,
                          const sim_fit_outcome_t *out, const char *name);

/* Format a trial value for key (integral keys rounded), as --set text "key=value". */
void sim_fit_assignment(const char *key, double v, char *buf, size_t buflen);

#endif
