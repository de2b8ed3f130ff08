/*
 * validate.c -- `ncsim validate`: run the entries of a manifest of measurements in timing-only
 * mode and compare one figure of each run with its measured value (validate.h,
 * docs/validation.md). The fit (validate_fit.c) reuses the runner.
 *
 * Figures come from the statistics the simulator keeps (total time, busy time, DMA and HBM
 * bytes) and from a trace sink that sees every instruction and every DMA transfer (their
 * start and end), so nothing in the simulator is special-cased for validation.
 */
#include "validate.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pool.h"
#include "sweep_plot.h"
#include "util.h"

/* Default allowed relative error of an entry. */
#define VALIDATE_DEFAULT_BAND 0.15

/* dir/path unless path is absolute (malloc'd). */
static char *join_path(const char *dir, const char *path)
{
    if (path[0] == '/')
        return xp_strdup(path);
    size_t n = strlen(dir) + strlen(path) + 2;
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s/%s", dir, path);
    return p;
}

static int is_file_path(const char *name)
{
    size_t n = strlen(name);
    return strchr(name, '/') != NULL || (n >= 5 && strcmp(name + n - 5, ".json") == 0);
}

/* ---- per-entry cache: generated text and assembled programs --------------------------------- */

typedef struct cached_program {
    ncsim_arch_t *arch;       /* a configuration it was assembled for (its memory sizes) */
    ncsim_program_t *prog;
} cached_program_t;

typedef struct entry_cache {
    char *text;               /* generator output */
    size_t len;
    int generated;
    cached_program_t *progs;  /* one per geometry used */
    size_t nprogs;
} entry_cache_t;

struct sim_validate_cache {
    entry_cache_t *e;
};

/* ---- figures ------------------------------------------------------------------------------ */

static const struct {
    const char *name;
    sim_validate_figure_t kind;
    int arg; /* 0: none, 1: engine[@coreN], 2: mnemonic */
} figure_names[] = {
    {"time_ns", SIM_VALIDATE_TIME_NS, 0},
    {"busy_fraction", SIM_VALIDATE_BUSY_FRACTION, 1},
    {"mean_duration_ns", SIM_VALIDATE_MEAN_DURATION_NS, 2},
    {"mean_interval_ns", SIM_VALIDATE_MEAN_INTERVAL_NS, 2},
    {"dma_transfer_ns", SIM_VALIDATE_DMA_TRANSFER_NS, 0},
    {"dma_bandwidth_gbps", SIM_VALIDATE_DMA_BANDWIDTH, 0},
    {"hbm_bandwidth_gbps", SIM_VALIDATE_HBM_BANDWIDTH, 0},
};
#define NFIGURES (sizeof figure_names / sizeof figure_names[0])

static const char figure_list[] =
    "time_ns, busy_fraction:ENGINE[@coreN], mean_duration_ns:KIND, mean_interval_ns:KIND, "
    "dma_transfer_ns, dma_bandwidth_gbps, hbm_bandwidth_gbps";

ncsim_status_t sim_validate_parse_figure(const char *figure, sim_validate_entry_t *e, char *err,
                                         size_t errlen)
{
    const char *colon = strchr(figure, ':');
    size_t nlen = colon ? (size_t)(colon - figure) : strlen(figure);
    for (size_t i = 0; i < NFIGURES; i++) {
        if (strlen(figure_names[i].name) != nlen || strncmp(figure, figure_names[i].name, nlen))
            continue;
        e->kind = figure_names[i].kind;
        e->engine = 0;
        e->core = 0;
        e->op = 0;
        if (figure_names[i].arg == 0) {
            if (colon) {
                xp_errf(err, errlen, "figure '%s' takes no ':' argument", figure);
                return NCSIM_USAGE;
            }
            return NCSIM_OK;
        }
        if (!colon || !colon[1]) {
            xp_errf(err, errlen, "figure '%s' needs an argument: %s", figure,
                     figure_names[i].arg == 1 ? "busy_fraction:ENGINE[@coreN] (ENGINE: pe, act, "
                                                "dve, pool, sp or cc)"
                                              : "an instruction mnemonic, e.g. mean_duration_ns:"
                                                "activate");
            return NCSIM_USAGE;
        }
        const char *arg = colon + 1;
        if (figure_names[i].arg == 2) {
            int32_t op = ncsim_opcode(arg);
            if (op < 0) {
                xp_errf(err, errlen, "figure '%s': unknown instruction mnemonic '%s'", figure,
                         arg);
                return NCSIM_USAGE;
            }
            e->op = (int)op;
            return NCSIM_OK;
        }
        const char *at = strchr(arg, '@');
        size_t elen = at ? (size_t)(at - arg) : strlen(arg);
        int found = -1;
        for (int k = 0; k < NCSIM_ENGINE_COUNT; k++) {
            const char *en = ncsim_engine_name((ncsim_engine_t)k);
            if (strlen(en) == elen && strncmp(en, arg, elen) == 0)
                found = k;
        }
        if (found < 0) {
            xp_errf(err, errlen, "figure '%s': unknown engine '%.*s' (pe, act, dve, pool, sp, cc)",
                     figure, (int)elen, arg);
            return NCSIM_USAGE;
        }
        e->engine = found;
        if (at) {
            const char *c = at + 1;
            char *end = NULL;
            if (strncmp(c, "core", 4) != 0 || c[4] < '0' || c[4] > '9') {
                xp_errf(err, errlen, "figure '%s': expected @coreN after the engine", figure);
                return NCSIM_USAGE;
            }
            errno = 0;
            unsigned long v = strtoul(c + 4, &end, 10);
            if (errno || *end || v > 65535) {
                xp_errf(err, errlen, "figure '%s': bad core number '%s'", figure, c + 4);
                return NCSIM_USAGE;
            }
            e->core = (unsigned)v;
        }
        return NCSIM_OK;
    }
    xp_errf(err, errlen, "unknown figure '%s' (figures: %s)", figure, figure_list);
    return NCSIM_USAGE;
}

/* ---- loading ------------------------------------------------------------------------------ */

static void entry_free(sim_validate_entry_t *e)
{
    free(e->id);
    free(e->title);
    free(e->source);
    free(e->choices);
    free(e->program);
    for (size_t i = 0; i < e->ngenerate; i++)
        free(e->generate[i]);
    free(e->generate);
    free(e->arch);
    for (size_t i = 0; i < e->nsets; i++)
        free(e->sets[i]);
    free(e->sets);
    free(e->figure);
    free(e->relative_to);
    free(e->known_miss);
}

static void cache_free(sim_validate_cache_t *c, size_t n)
{
    if (!c)
        return;
    for (size_t i = 0; c->e && i < n; i++) {
        free(c->e[i].text);
        for (size_t k = 0; k < c->e[i].nprogs; k++) {
            ncsim_program_free(c->e[i].progs[k].prog);
            ncsim_arch_free(c->e[i].progs[k].arch);
        }
        free(c->e[i].progs);
    }
    free(c->e);
    free(c);
}

void sim_validate_free(sim_validate_manifest_t *m)
{
    if (!m)
        return;
    cache_free(m->cache, m->nentries);
    for (size_t i = 0; i < m->nentries; i++)
        entry_free(&m->entries[i]);
    free(m->entries);
    free(m->path);
    free(m->dir);
    free(m->name);
    free(m->description);
    free(m);
}

static const char *const entry_keys[] = {"id",      "title",  "source",     "choices",  "program",
                                         "generate", "arch",  "set",        "figure",   "divide",
                                         "relative_to", "measured", "band", "weight",   "fit",
                                         "known_miss", NULL};

/* "entry 'ID'" or "entry N" (1-based) for messages. */
static void entry_name(const sim_validate_entry_t *e, size_t index, char *buf, size_t len)
{
    if (e->id)
        snprintf(buf, len, "entry '%s'", e->id);
    else
        snprintf(buf, len, "entry %zu", index + 1);
}

/* An optional string ("" when absent). NCSIM_USAGE (with a message) or NCSIM_NOMEM. */
static ncsim_status_t get_string(json_t *o, const char *key, char **out, const char *where,
                                 char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (v && !json_is_string(v)) {
        xp_errf(err, errlen, "%s: key '%s' must be a string", where, key);
        return NCSIM_USAGE;
    }
    *out = xp_strdup(v ? json_string_value(v) : "");
    if (!*out) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    return NCSIM_OK;
}

static int get_number(json_t *o, const char *key, double *out, double dflt, const char *where,
                      char *err, size_t errlen)
{
    json_t *v = json_object_get(o, key);
    if (!v) {
        *out = dflt;
        return 0;
    }
    if (!json_is_number(v)) {
        xp_errf(err, errlen, "%s: key '%s' must be a number", where, key);
        return -1;
    }
    *out = json_number_value(v);
    if (!isfinite(*out)) {
        xp_errf(err, errlen, "%s: key '%s' must be finite", where, key);
        return -1;
    }
    return 0;
}

/* A --set text for one "set" member: integers as integers, reals exactly, strings as is. */
static char *set_text(const char *key, json_t *v)
{
    char val[64];
    if (json_is_integer(v))
        snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v))
        snprintf(val, sizeof val, "%.17g", json_real_value(v));
    else if (json_is_string(v))
        snprintf(val, sizeof val, "%s", json_string_value(v));
    else
        return NULL;
    size_t n = strlen(key) + strlen(val) + 2;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s=%s", key, val);
    return s;
}

/* The entry's "set" overrides into e->sets, each tried on `a` (its architecture) so that a
 * bad key or value is reported at load. */
static ncsim_status_t entry_read_sets(json_t *o, sim_validate_entry_t *e, ncsim_arch_t *a,
                                      const char *where, char *err, size_t errlen)
{
    const char *key;
    json_t *v;
    json_t *sets = json_object_get(o, "set");
    if (!sets)
        return NCSIM_OK;
    if (!json_is_object(sets)) {
        xp_errf(err, errlen, "%s: key 'set' must be an object of \"section.key\": value",
                 where);
        return NCSIM_USAGE;
    }
    if (!(e->sets = calloc(json_object_size(sets) + 1, sizeof *e->sets)))
        return NCSIM_NOMEM;
    json_object_foreach(sets, key, v)
    {
        char *t = set_text(key, v);
        if (!t) {
            xp_errf(err, errlen, "%s: key 'set': '%s' must be a number or a string", where,
                     key);
            return NCSIM_USAGE;
        }
        e->sets[e->nsets++] = t;
        if (ncsim_arch_set(a, t) != NCSIM_OK) {
            xp_errf(err, errlen, "%s: key 'set': %s", where, ncsim_last_error());
            return NCSIM_USAGE;
        }
    }
    return NCSIM_OK;
}

static ncsim_status_t parse_entry(sim_validate_manifest_t *m, size_t index, json_t *o,
                                  char *err, size_t errlen)
{
    sim_validate_entry_t *e = &m->entries[index];
    char where[1200];
    char ename[300];
    snprintf(where, sizeof where, "%s: entry %zu", m->path, index + 1);
    if (!json_is_object(o)) {
        xp_errf(err, errlen, "%s: must be an object", where);
        return NCSIM_USAGE;
    }
    json_t *id = json_object_get(o, "id");
    if (!id || !json_is_string(id) || json_string_length(id) == 0) {
        xp_errf(err, errlen, "%s: key 'id' %s", where,
                 id ? "must be a non-empty string" : "is missing (every entry has a unique id)");
        return NCSIM_USAGE;
    }
    if (!(e->id = xp_strdup(json_string_value(id))))
        return NCSIM_NOMEM;
    entry_name(e, index, ename, sizeof ename);
    snprintf(where, sizeof where, "%s: %s", m->path, ename);
    for (size_t k = 0; k < index; k++)
        if (strcmp(m->entries[k].id, e->id) == 0) {
            xp_errf(err, errlen, "%s: id is used twice (entries %zu and %zu)", where, k + 1,
                     index + 1);
            return NCSIM_USAGE;
        }
    const char *key;
    json_t *v;
    json_object_foreach(o, key, v)
    {
        int known = 0;
        for (int k = 0; entry_keys[k]; k++)
            known |= strcmp(key, entry_keys[k]) == 0;
        if (!known) {
            xp_errf(
                err, errlen,
                "%s: unknown key '%s' (keys: id, title, source, choices, program, generate, "
                "arch, set, figure, divide, relative_to, measured, band, weight, fit, known_miss)",
                where, key);
            return NCSIM_USAGE;
        }
    }
    static const char *const texts[] = {"title", "source", "choices"};
    char **fields[] = {&e->title, &e->source, &e->choices};
    for (int k = 0; k < 3; k++) {
        ncsim_status_t gs = get_string(o, texts[k], fields[k], where, err, errlen);
        if (gs != NCSIM_OK)
            return gs;
    }

    /* the workload */
    json_t *prog = json_object_get(o, "program"), *gen = json_object_get(o, "generate");
    if ((prog != NULL) == (gen != NULL)) {
        xp_errf(err, errlen, "%s: give exactly one of 'program' and 'generate'", where);
        return NCSIM_USAGE;
    }
    if (prog) {
        if (!json_is_string(prog) || json_string_length(prog) == 0) {
            xp_errf(err, errlen, "%s: key 'program' must be a file name", where);
            return NCSIM_USAGE;
        }
        if (!(e->program = join_path(m->dir, json_string_value(prog))))
            return NCSIM_NOMEM;
        if (access(e->program, R_OK) != 0) {
            xp_errf(err, errlen, "%s: key 'program': cannot read %s: %s", where, e->program,
                     strerror(errno));
            return NCSIM_USAGE;
        }
    } else {
        if (!json_is_array(gen) || json_array_size(gen) == 0) {
            xp_errf(err, errlen,
                     "%s: key 'generate' must be a non-empty array of strings (a command)", where);
            return NCSIM_USAGE;
        }
        e->ngenerate = json_array_size(gen);
        if (!(e->generate = calloc(e->ngenerate + 1, sizeof *e->generate)))
            return NCSIM_NOMEM;
        for (size_t i = 0; i < e->ngenerate; i++) {
            json_t *a = json_array_get(gen, i);
            if (!json_is_string(a)) {
                xp_errf(err, errlen, "%s: key 'generate': element %zu is not a string", where,
                         i + 1);
                return NCSIM_USAGE;
            }
            const char *s = json_string_value(a);
            /* the Debian interpreter, with NumPy (the first python3 on PATH may lack it) */
            if (i == 0 && strcmp(s, "python3") == 0)
                s = "/usr/bin/python3";
            if (!(e->generate[i] = xp_strdup(s)))
                return NCSIM_NOMEM;
        }
    }

    /* the architecture and its overrides */
    json_t *arch = json_object_get(o, "arch");
    const char *aname = "trn1";
    if (arch) {
        if (!json_is_string(arch) || json_string_length(arch) == 0) {
            xp_errf(err, errlen, "%s: key 'arch' must be a preset name or a file", where);
            return NCSIM_USAGE;
        }
        aname = json_string_value(arch);
    }
    if (!(e->arch = is_file_path(aname) ? join_path(m->dir, aname) : xp_strdup(aname)))
        return NCSIM_NOMEM;
    ncsim_arch_t *a = NULL;
    if (ncsim_arch_load(e->arch, &a) != NCSIM_OK) {
        xp_errf(err, errlen, "%s: key 'arch': %s", where, ncsim_last_error());
        return NCSIM_USAGE;
    }
    ncsim_status_t st = entry_read_sets(o, e, a, where, err, errlen);
    ncsim_arch_free(a);
    if (st != NCSIM_OK)
        return st;

    /* the figure and the measurement */
    json_t *fig = json_object_get(o, "figure");
    if (!fig || !json_is_string(fig)) {
        xp_errf(err, errlen, "%s: key 'figure' %s (%s)", where,
                 fig ? "must be a string" : "is missing", figure_list);
        return NCSIM_USAGE;
    }
    if (!(e->figure = xp_strdup(json_string_value(fig))))
        return NCSIM_NOMEM;
    char ferr[512];
    if (sim_validate_parse_figure(e->figure, e, ferr, sizeof ferr) != NCSIM_OK) {
        xp_errf(err, errlen, "%s: key 'figure': %s", where, ferr);
        return NCSIM_USAGE;
    }
    json_t *meas = json_object_get(o, "measured");
    if (!meas) {
        xp_errf(err, errlen, "%s: key 'measured' is missing", where);
        return NCSIM_USAGE;
    }
    if (get_number(o, "measured", &e->measured, 0, where, err, errlen) ||
        get_number(o, "divide", &e->divide, 1.0, where, err, errlen) ||
        get_number(o, "band", &e->band, VALIDATE_DEFAULT_BAND, where, err, errlen) ||
        get_number(o, "weight", &e->weight, 1.0, where, err, errlen))
        return NCSIM_USAGE;
    if (!(e->measured > 0)) {
        xp_errf(err, errlen, "%s: key 'measured' must be positive (errors are ratios)", where);
        return NCSIM_USAGE;
    }
    if (!(e->divide > 0)) {
        xp_errf(err, errlen, "%s: key 'divide' must be positive", where);
        return NCSIM_USAGE;
    }
    if (!(e->band > 0)) {
        xp_errf(err, errlen, "%s: key 'band' must be positive (0.15 is +-15%%)", where);
        return NCSIM_USAGE;
    }
    if (!(e->weight >= 0)) {
        xp_errf(err, errlen, "%s: key 'weight' must not be negative", where);
        return NCSIM_USAGE;
    }
    json_t *fit = json_object_get(o, "fit");
    e->fit = 1;
    if (fit) {
        if (!json_is_boolean(fit)) {
            xp_errf(err, errlen, "%s: key 'fit' must be true or false", where);
            return NCSIM_USAGE;
        }
        e->fit = json_is_true(fit);
    }
    json_t *km = json_object_get(o, "known_miss");
    if (km) {
        if (!json_is_string(km) || json_string_length(km) == 0) {
            xp_errf(err, errlen,
                     "%s: key 'known_miss' must be a non-empty text saying why the model misses "
                     "this entry",
                     where);
            return NCSIM_USAGE;
        }
        if (!(e->known_miss = xp_strdup(json_string_value(km))))
            return NCSIM_NOMEM;
    }
    json_t *rel = json_object_get(o, "relative_to");
    if (rel) {
        if (!json_is_string(rel) || json_string_length(rel) == 0) {
            xp_errf(err, errlen, "%s: key 'relative_to' must be the id of another entry", where);
            return NCSIM_USAGE;
        }
        if (!(e->relative_to = xp_strdup(json_string_value(rel))))
            return NCSIM_NOMEM;
    }
    return NCSIM_OK;
}

ncsim_status_t sim_validate_load(const char *path, sim_validate_manifest_t **out, char *err,
                                 size_t errlen)
{
    *out = NULL;
    sim_validate_manifest_t *m = calloc(1, sizeof *m);
    if (!m)
        return NCSIM_NOMEM;
    ncsim_status_t st = NCSIM_NOMEM;
    json_t *root = NULL;
    char *text = NULL;
    if (!(m->path = xp_strdup(path)))
        goto fail;
    char *abs = realpath(path, NULL);
    if (!abs) {
        xp_errf(err, errlen, "%s: %s", path, strerror(errno));
        st = NCSIM_IO;
        goto fail;
    }
    char *slash = strrchr(abs, '/');
    if (slash == abs)
        slash[1] = 0;
    else if (slash)
        *slash = 0;
    m->dir = abs;
    size_t len;
    text = xp_read_file(path, &len);
    if (!text) {
        xp_errf(err, errlen, "%s: %s", path, strerror(errno));
        st = NCSIM_IO;
        goto fail;
    }
    json_error_t jerr;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    st = NCSIM_USAGE;
    if (!root) {
        xp_errf(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
        goto fail;
    }
    if (!json_is_object(root)) {
        xp_errf(err, errlen, "%s: a manifest is a JSON object with \"entries\"", path);
        goto fail;
    }
    const char *key;
    json_t *v;
    json_object_foreach(root, key, v)
    {
        if (strcmp(key, "name") && strcmp(key, "description") && strcmp(key, "entries")) {
            xp_errf(err, errlen,
                     "%s: unknown key '%s' (a manifest has name, description, "
                     "entries)",
                     path, key);
            goto fail;
        }
    }
    st = get_string(root, "name", &m->name, path, err, errlen);
    if (st == NCSIM_OK)
        st = get_string(root, "description", &m->description, path, err, errlen);
    if (st != NCSIM_OK)
        goto fail;
    st = NCSIM_USAGE;
    json_t *entries = json_object_get(root, "entries");
    if (!entries || !json_is_array(entries) || json_array_size(entries) == 0) {
        xp_errf(err, errlen, "%s: 'entries' must be a non-empty array", path);
        goto fail;
    }
    size_t n = json_array_size(entries);
    m->entries = calloc(n, sizeof *m->entries);
    m->cache = calloc(1, sizeof *m->cache);
    if (!m->entries || !m->cache || !(m->cache->e = calloc(n, sizeof *m->cache->e))) {
        st = NCSIM_NOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        m->nentries = i + 1;
        st = parse_entry(m, i, json_array_get(entries, i), err, errlen);
        if (st != NCSIM_OK) {
            if (st == NCSIM_NOMEM)
                xp_errf(err, errlen, "out of memory");
            goto fail;
        }
    }
    /* relative_to: another entry, no cycles */
    st = NCSIM_USAGE;
    for (size_t i = 0; i < n; i++) {
        sim_validate_entry_t *e = &m->entries[i];
        if (!e->relative_to)
            continue;
        size_t k = 0;
        while (k < n && strcmp(m->entries[k].id, e->relative_to) != 0)
            k++;
        if (k == n || k == i) {
            xp_errf(err, errlen, "%s: entry '%s': key 'relative_to': %s '%s'", path, e->id,
                     k == i ? "an entry cannot be relative to itself:" : "no entry has the id",
                     e->relative_to);
            goto fail;
        }
        e->relative_index = k;
    }
    for (size_t i = 0; i < n; i++) {
        size_t k = i, steps = 0;
        while (m->entries[k].relative_to && steps <= n) {
            k = m->entries[k].relative_index;
            steps++;
        }
        if (steps > n) {
            xp_errf(err, errlen,
                     "%s: entry '%s': key 'relative_to': the chain of relative_to "
                     "entries is a cycle",
                     path, m->entries[i].id);
            goto fail;
        }
    }
    json_decref(root);
    free(text);
    *out = m;
    return NCSIM_OK;
fail:
    json_decref(root);
    free(text);
    sim_validate_free(m);
    return st;
}

/* ---- preparing: generators, configs, assembly ------------------------------------------- */

/* Run an entry's generator from the manifest's folder; its stdout is the NCA text. */
static ncsim_status_t run_generator(const sim_validate_manifest_t *m,
                                    const sim_validate_entry_t *e, entry_cache_t *c, char *err,
                                    size_t errlen)
{
    int fds[2];
    if (pipe(fds) != 0) {
        xp_errf(err, errlen, "%s: entry '%s': cannot run the generator: %s", m->path, e->id,
                 strerror(errno));
        return NCSIM_IO;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        xp_errf(err, errlen, "%s: entry '%s': cannot run the generator: %s", m->path, e->id,
                 strerror(errno));
        return NCSIM_IO;
    }
    if (pid == 0) {
        close(fds[0]);
        if (dup2(fds[1], STDOUT_FILENO) < 0 || chdir(m->dir) != 0)
            _exit(126);
        close(fds[1]);
        execvp(e->generate[0], e->generate);
        fprintf(stderr, "ncsim: cannot run '%s': %s\n", e->generate[0], strerror(errno));
        _exit(127);
    }
    close(fds[1]);
    size_t cap = 65536, n = 0;
    char *buf = malloc(cap);
    int nomem = buf == NULL;
    for (;;) {
        if (!nomem && n == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) {
                nomem = 1;
            } else {
                buf = b;
                cap *= 2;
            }
        }
        char sink[4096];
        ssize_t got = nomem ? read(fds[0], sink, sizeof sink) : read(fds[0], buf + n, cap - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            break;
        if (!nomem)
            n += (size_t)got;
    }
    close(fds[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (nomem) {
        free(buf);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        free(buf);
        if (WIFEXITED(status))
            xp_errf(err, errlen, "%s: entry '%s': key 'generate': '%s' exited with status %d",
                     m->path, e->id, e->generate[0], WEXITSTATUS(status));
        else
            xp_errf(err, errlen, "%s: entry '%s': key 'generate': '%s' was killed by signal %d",
                     m->path, e->id, e->generate[0], WTERMSIG(status));
        return NCSIM_USAGE;
    }
    if (n == 0) {
        free(buf);
        xp_errf(err, errlen, "%s: entry '%s': key 'generate': '%s' printed no program", m->path,
                 e->id, e->generate[0]);
        return NCSIM_USAGE;
    }
    c->text = buf;
    c->len = n;
    c->generated = 1;
    return NCSIM_OK;
}

/* The resolved config of an entry under the options (*a: free with ncsim_arch_free).
 * NCSIM_USAGE naming the entry. */
static ncsim_status_t entry_arch(const sim_validate_manifest_t *m, const sim_validate_entry_t *e,
                                 const sim_validate_options_t *o, ncsim_arch_t **a, char *err,
                                 size_t errlen)
{
    const char *name = o && o->arch ? o->arch : e->arch;
    ncsim_status_t st = ncsim_arch_load(name, a);
    for (size_t i = 0; st == NCSIM_OK && i < e->nsets; i++)
        st = ncsim_arch_set(*a, e->sets[i]);
    for (size_t i = 0; st == NCSIM_OK && o && i < o->nsets; i++)
        st = ncsim_arch_set(*a, o->sets[i]);
    for (size_t i = 0; st == NCSIM_OK && o && i < o->nextra_sets; i++)
        st = ncsim_arch_set(*a, o->extra_sets[i]);
    if (st == NCSIM_OK)
        st = ncsim_arch_validate(*a);
    if (st != NCSIM_OK) {
        xp_errf(err, errlen, "%s: entry '%s': %s", m->path, e->id, ncsim_last_error());
        ncsim_arch_free(*a);
        *a = NULL;
        return st;
    }
    return NCSIM_OK;
}

/* The entry's program assembled for the memory sizes of `a` (cached: one per layout). */
static ncsim_status_t entry_program(sim_validate_manifest_t *m, size_t index,
                                    const ncsim_arch_t *a, const ncsim_program_t **out,
                                    char *err, size_t errlen)
{
    const sim_validate_entry_t *e = &m->entries[index];
    entry_cache_t *c = &m->cache->e[index];
    for (size_t k = 0; k < c->nprogs; k++)
        if (ncsim_arch_same_memory(c->progs[k].arch, a)) {
            *out = c->progs[k].prog;
            return NCSIM_OK;
        }
    ncsim_status_t st;
    if (e->generate && !c->generated) {
        st = run_generator(m, e, c, err, errlen);
        if (st != NCSIM_OK)
            return st;
    }
    ncsim_program_t *prog = NULL;
    if (e->program) {
        st = ncsim_program_load_file(e->program, a, &prog);
    } else {
        char fname[512];
        snprintf(fname, sizeof fname, "%s (generated)", e->id);
        st = ncsim_assemble(c->text, c->len, fname, a, &prog);
    }
    if (st != NCSIM_OK) {
        xp_errf(err, errlen, "%s: entry '%s': the program does not load:\n%s", m->path, e->id,
                 ncsim_last_error()[0] ? ncsim_last_error() : ncsim_status_text(st));
        return st == NCSIM_IO ? NCSIM_USAGE : st;
    }
    cached_program_t *p = realloc(c->progs, (c->nprogs + 1) * sizeof *p);
    ncsim_arch_t *copy = NULL;
    if (!p || ncsim_arch_copy(a, &copy) != NCSIM_OK) {
        if (p)
            c->progs = p;
        ncsim_program_free(prog);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    c->progs = p;
    p[c->nprogs].arch = copy;
    p[c->nprogs].prog = prog;
    c->nprogs++;
    *out = prog;
    return NCSIM_OK;
}

/* Entries to run: all, or (only_fit) the fit entries and what they are relative to. */
static void wanted_entries(const sim_validate_manifest_t *m, const sim_validate_options_t *o,
                           unsigned char *want)
{
    for (size_t i = 0; i < m->nentries; i++) {
        want[i] = !(o && o->only_fit) || m->entries[i].fit;
        if (want[i] && o && o->nonly) {
            int hit = 0;
            for (size_t k = 0; k < o->nonly; k++)
                hit |= strstr(m->entries[i].id, o->only[k]) != NULL;
            want[i] = (unsigned char)hit;
        }
    }
    for (size_t i = 0; i < m->nentries; i++) {
        if (!want[i])
            continue;
        size_t k = i;
        while (m->entries[k].relative_to) {
            k = m->entries[k].relative_index;
            want[k] = 1;
        }
    }
}

ncsim_status_t sim_validate_prepare(sim_validate_manifest_t *m, const sim_validate_options_t *o,
                                    char *err, size_t errlen)
{
    unsigned char *want = calloc(m->nentries, 1);
    if (!want) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    wanted_entries(m, o, want);
    ncsim_status_t st = NCSIM_OK;
    for (size_t i = 0; st == NCSIM_OK && i < m->nentries; i++) {
        if (!want[i])
            continue;
        ncsim_arch_t *a = NULL;
        st = entry_arch(m, &m->entries[i], o, &a, err, errlen);
        if (st != NCSIM_OK)
            break;
        const ncsim_program_t *p;
        st = entry_program(m, i, a, &p, err, errlen);
        ncsim_arch_free(a);
    }
    free(want);
    return st;
}

/* ---- running one entry -------------------------------------------------------------------- */

typedef struct collector {
    const sim_validate_entry_t *e;
    double sum_ps;
    uint64_t count;
    uint32_t ncores;
    uint64_t *last_start;     /* per core x engine: start of the last KIND instruction + 1 */
    uint64_t span_start, span_end; /* BUSY_FRACTION: the current run of overlapping
                                    * instructions (span_end 0: none yet) */
} collector_t;

/* Engine active time, as the profiler counts it: time with at least one instruction between
 * its start and its completion. An engine's instructions start in order, so the union of
 * their [start, end] intervals is a sequence of runs. */
static void on_instr_active(void *ctx, const ncsim_instruction_record_t *r)
{
    collector_t *c = ctx;
    if (r->core != c->e->core || r->engine != c->e->engine || r->end_ps <= r->start_ps)
        return;
    if (c->span_end && r->start_ps <= c->span_end) {
        if (r->end_ps > c->span_end)
            c->span_end = r->end_ps;
        return;
    }
    if (c->span_end)
        c->sum_ps += (double)(c->span_end - c->span_start);
    c->span_start = r->start_ps;
    c->span_end = r->end_ps;
}

static void on_instr(void *ctx, const ncsim_instruction_record_t *r)
{
    collector_t *c = ctx;
    if (r->opcode < 0 || r->opcode != c->e->op)
        return;
    if (c->e->kind == SIM_VALIDATE_MEAN_DURATION_NS) {
        c->sum_ps += (double)(r->end_ps - r->start_ps);
        c->count++;
        return;
    }
    if (r->core >= c->ncores || r->engine < 0 || r->engine >= NCSIM_ENGINE_COUNT)
        return;
    uint64_t *last = &c->last_start[(size_t)r->core * NCSIM_ENGINE_COUNT + (size_t)r->engine];
    if (*last) {
        c->sum_ps += (double)(r->start_ps - (*last - 1));
        c->count++;
    }
    *last = r->start_ps + 1;
}

/* One transfer of a dma instruction: its pieces run on the engines at the same time, so each
 * engine's piece lasts from the start of the data phase to the landing. */
static void on_dma(void *ctx, const ncsim_transfer_record_t *r)
{
    collector_t *c = ctx;
    c->sum_ps += (double)(r->end_ps - r->start_ps);
    c->count++;
}

/* The sum of counter NAME (with one %u for the core) over the cores of the run. */
static uint64_t counter_sum(ncsim_sim_t *s, const char *name, uint64_t ncores)
{
    uint64_t sum = 0;
    for (uint64_t c = 0; c < ncores; c++) {
        char key[64];
        uint64_t v = 0;
        snprintf(key, sizeof key, name, (unsigned)c);
        if (ncsim_sim_counter(s, key, &v) == NCSIM_OK)
            sum += v;
    }
    return sum;
}

static uint64_t counter(ncsim_sim_t *s, const char *key)
{
    uint64_t v = 0;
    return ncsim_sim_counter(s, key, &v) == NCSIM_OK ? v : 0;
}

/* The figure of a finished run. NCSIM_USAGE (with a message) when there is nothing to
 * measure. */
static ncsim_status_t entry_figure(const sim_validate_entry_t *e, ncsim_sim_t *s,
                                   const collector_t *col, double *v, char *msg, size_t msglen)
{
    uint64_t total_ps = counter(s, "total_ps"), ncores = counter(s, "cores");
    double total_ns = (double)total_ps / 1000.0;
    switch (e->kind) {
    case SIM_VALIDATE_TIME_NS:
        *v = total_ns;
        break;
    case SIM_VALIDATE_BUSY_FRACTION:
        if (e->core >= ncores) {
            xp_errf(msg, msglen, "figure '%s': the program has %u cores", e->figure,
                     (unsigned)ncores);
            return NCSIM_USAGE;
        }
        double active = col->sum_ps + (double)(col->span_end - col->span_start);
        *v = total_ps ? active / (double)total_ps : 0.0;
        break;
    case SIM_VALIDATE_MEAN_DURATION_NS:
    case SIM_VALIDATE_MEAN_INTERVAL_NS:
    case SIM_VALIDATE_DMA_TRANSFER_NS:
        if (col->count == 0) {
            xp_errf(msg, msglen, "figure '%s': nothing to average (no %s)", e->figure,
                     e->kind == SIM_VALIDATE_DMA_TRANSFER_NS ? "DMA transfer"
                     : e->kind == SIM_VALIDATE_MEAN_DURATION_NS
                         ? "such instruction ran"
                         : "two such instructions ran on one engine");
            return NCSIM_USAGE;
        }
        *v = col->sum_ps / 1000.0 / (double)col->count;
        break;
    case SIM_VALIDATE_DMA_BANDWIDTH: {
        uint64_t bytes = counter_sum(s, "core.%u.dma_bytes", ncores);
        *v = total_ns > 0 ? (double)bytes / total_ns : 0.0; /* B/ns = GB/s */
        break;
    }
    case SIM_VALIDATE_HBM_BANDWIDTH:
        *v = total_ns > 0
                 ? (double)(counter(s, "hbm_read_bytes") + counter(s, "hbm_write_bytes")) /
                       total_ns
                 : 0.0;
        break;
    }
    return NCSIM_OK;
}

/* Run entry i and set *raw to its figure (divided). Errors of the run are returned with a
 * message (without the manifest's name: the table shows the entry). */
static ncsim_status_t run_entry(sim_validate_manifest_t *m, size_t index,
                                const sim_validate_options_t *o, double *raw, char *msg,
                                size_t msglen)
{
    const sim_validate_entry_t *e = &m->entries[index];
    ncsim_arch_t *a = NULL;
    char err[2048];
    ncsim_status_t st = entry_arch(m, e, o, &a, err, sizeof err);
    const ncsim_program_t *prog = NULL;
    if (st == NCSIM_OK)
        st = entry_program(m, index, a, &prog, err, sizeof err);
    if (st != NCSIM_OK) {
        ncsim_arch_free(a);
        xp_errf(msg, msglen, "%s", err);
        return st;
    }
    collector_t col = {e, 0, 0, ncsim_program_cores(prog), NULL, 0, 0};
    ncsim_record_hooks_t hooks = {&col, NULL, NULL};
    if (e->kind == SIM_VALIDATE_MEAN_DURATION_NS || e->kind == SIM_VALIDATE_MEAN_INTERVAL_NS)
        hooks.instruction = on_instr;
    if (e->kind == SIM_VALIDATE_BUSY_FRACTION)
        hooks.instruction = on_instr_active;
    if (e->kind == SIM_VALIDATE_DMA_TRANSFER_NS)
        hooks.transfer = on_dma;
    if (e->kind == SIM_VALIDATE_MEAN_INTERVAL_NS &&
        !(col.last_start = calloc((size_t)col.ncores * NCSIM_ENGINE_COUNT, sizeof(uint64_t)))) {
        ncsim_arch_free(a);
        xp_errf(msg, msglen, "out of memory");
        return NCSIM_NOMEM;
    }
    ncsim_options_t so;
    ncsim_options_init(&so);
    so.timing_only = 1;
    ncsim_sim_t *s = NULL;
    st = ncsim_sim_create(prog, a, &so, &s);
    ncsim_arch_free(a);
    if (st == NCSIM_OK && (hooks.instruction || hooks.transfer))
        st = ncsim_sim_set_record_hooks(s, &hooks);
    if (st != NCSIM_OK) {
        free(col.last_start);
        ncsim_sim_free(s);
        xp_errf(msg, msglen, "%s", ncsim_last_error());
        return st;
    }
    st = ncsim_sim_run(s);
    if (st != NCSIM_OK || !ncsim_sim_finished(s)) {
        xp_errf(msg, msglen, "%s", ncsim_sim_error(s)[0] ? ncsim_sim_error(s)
                                                          : ncsim_status_text(st));
        ncsim_sim_free(s);
        free(col.last_start);
        return st != NCSIM_OK ? st : NCSIM_PROGRAM;
    }
    double v = NAN;
    st = entry_figure(e, s, &col, &v, msg, msglen);
    ncsim_sim_free(s);
    free(col.last_start);
    if (st != NCSIM_OK)
        return st;
    *raw = v / e->divide;
    return NCSIM_OK;
}

/* ---- running all -------------------------------------------------------------------------- */

/* What a worker sends back for an entry (the pool says which entry: validate_pool_t.entry). */
typedef struct wire_result {
    int32_t status;
    double raw;
    char message[512];
} wire_result_t;

static void store(sim_validate_result_t *r, ncsim_status_t st, double raw, const char *msg)
{
    r->ran = 1;
    r->status = st;
    r->raw = raw;
    snprintf(r->message, sizeof r->message, "%s", st == NCSIM_OK ? "" : msg);
}

/* The wanted entries as tasks of the worker pool (explore/pool.h): each worker is a copy of
 * this process (the manifest and its programs are shared) and takes the next entry when it
 * is done with one, so a slow entry does not hold up the others. */
typedef struct validate_pool {
    sim_validate_manifest_t *m;
    const sim_validate_options_t *o;
    const uint32_t *entry; /* task -> manifest entry */
    sim_validate_result_t *res;
    ncsim_status_t st;
    char *err;
    size_t errlen;
} validate_pool_t;

static void pool_entry(void *ctx, uint64_t task, void *result)
{
    const validate_pool_t *c = ctx;
    wire_result_t w;
    memset(&w, 0, sizeof w);
    double raw = 0;
    w.status = (int32_t)run_entry(c->m, c->entry[task], c->o, &raw, w.message, sizeof w.message);
    w.raw = raw;
    memcpy(result, &w, sizeof w);
}

static int pool_entry_done(void *ctx, uint64_t task, const void *result)
{
    validate_pool_t *c = ctx;
    wire_result_t w;
    memcpy(&w, result, sizeof w);
    w.message[sizeof w.message - 1] = 0;
    store(&c->res[c->entry[task]], (ncsim_status_t)w.status, w.raw, w.message);
    return 0;
}

static void pool_entry_lost(void *ctx, uint64_t task, int wstatus)
{
    validate_pool_t *c = ctx;
    if (c->st != NCSIM_OK)
        return;
    c->st = NCSIM_INTERNAL;
    xp_errf(c->err, c->errlen, "the validate worker running entry %u died (%s %d)", c->entry[task],
             WIFEXITED(wstatus) ? "exit status" : "signal",
             WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : WTERMSIG(wstatus));
}

static ncsim_status_t run_forked(sim_validate_manifest_t *m, const sim_validate_options_t *o,
                                 const unsigned char *want, unsigned jobs,
                                 sim_validate_result_t *res, char *err, size_t errlen)
{
    uint32_t *entry = malloc((m->nentries ? m->nentries : 1) * sizeof *entry);
    if (!entry) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    uint64_t n = 0;
    for (size_t i = 0; i < m->nentries; i++)
        if (want[i])
            entry[n++] = (uint32_t)i;
    validate_pool_t c = {m, o, entry, res, NCSIM_OK, err, errlen};
    sim_pool_t pool = {jobs,           n, sizeof(wire_result_t), &c, pool_entry, pool_entry_done,
                       pool_entry_lost};
    char perr[512];
    ncsim_status_t st = sim_pool_run(&pool, NULL, perr, sizeof perr);
    free(entry);
    if (c.st != NCSIM_OK)
        return c.st;
    if (st != NCSIM_OK)
        xp_errf(err, errlen, "%s", perr);
    return st;
}

ncsim_status_t sim_validate_run(sim_validate_manifest_t *m, const sim_validate_options_t *o,
                                sim_validate_result_t *results, char *err, size_t errlen)
{
    memset(results, 0, m->nentries * sizeof *results);
    ncsim_status_t st = sim_validate_prepare(m, o, err, errlen);
    if (st != NCSIM_OK)
        return st;
    unsigned char *want = calloc(m->nentries, 1);
    if (!want) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    wanted_entries(m, o, want);
    size_t nwant = 0;
    for (size_t i = 0; i < m->nentries; i++)
        nwant += want[i];
    unsigned jobs = o && o->jobs > 1 ? o->jobs : 1;
    if (jobs > nwant)
        jobs = nwant ? (unsigned)nwant : 1;
    if (jobs > 1) {
        st = run_forked(m, o, want, jobs, results, err, errlen);
    } else {
        for (size_t i = 0; i < m->nentries; i++) {
            if (!want[i])
                continue;
            double raw = 0;
            char msg[512];
            ncsim_status_t s = run_entry(m, i, o, &raw, msg, sizeof msg);
            if (s == NCSIM_NOMEM) {
                free(want);
                xp_errf(err, errlen, "out of memory");
                return s;
            }
            store(&results[i], s, raw, msg);
        }
    }
    free(want);
    if (st != NCSIM_OK)
        return st;
    /* relative figures, then the comparison */
    for (size_t i = 0; i < m->nentries; i++) {
        sim_validate_result_t *r = &results[i];
        const sim_validate_entry_t *e = &m->entries[i];
        if (!r->ran || r->status != NCSIM_OK)
            continue;
        r->simulated = r->raw;
        if (e->relative_to) {
            const sim_validate_result_t *b = &results[e->relative_index];
            if (b->status != NCSIM_OK || !(b->raw > 0)) {
                r->status = NCSIM_PROGRAM;
                snprintf(r->message, sizeof r->message,
                         "relative_to '%s': that entry has no positive figure", e->relative_to);
                continue;
            }
            r->simulated = r->raw / b->raw;
        }
        if (!(r->simulated > 0) || !isfinite(r->simulated)) {
            r->status = NCSIM_PROGRAM;
            snprintf(r->message, sizeof r->message,
                     "the simulated figure is %g (not positive: no ratio)", r->simulated);
            continue;
        }
        r->ratio = r->simulated / e->measured;
        r->error = r->ratio - 1.0;
        r->inside = fabs(r->error) <= e->band * (1 + 1e-12);
    }
    return NCSIM_OK;
}

/* ---- reporting ---------------------------------------------------------------------------- */

void sim_validate_summarise(const sim_validate_manifest_t *m,
                            const sim_validate_result_t *results, sim_validate_summary_t *s)
{
    memset(s, 0, sizeof *s);
    s->entries = m->nentries;
    s->worst_index = SIZE_MAX;
    double sum_log = 0, worst = -1;
    size_t ok = 0;
    for (size_t i = 0; i < m->nentries; i++) {
        const sim_validate_result_t *r = &results[i];
        if (!r->ran)
            continue;
        s->ran++;
        if (r->status != NCSIM_OK) {
            s->failed++;
            continue;
        }
        double l = fabs(log(r->ratio));
        sum_log += l;
        ok++;
        if (!r->inside && m->entries[i].known_miss)
            s->known_outside++;
        else if (!r->inside)
            s->outside++;
        else if (m->entries[i].known_miss)
            s->stale_known++;
        if (l > worst) {
            worst = l;
            s->worst_index = i;
            s->worst_error = r->error;
        }
        if (m->entries[i].fit) {
            double lr = log(r->ratio);
            s->fit_cost += m->entries[i].weight * lr * lr;
        }
    }
    s->geomean_error = ok ? exp(sum_log / (double)ok) - 1.0 : 0.0;
}

/* A number in at most 10 characters, about 4 significant digits. */
static void fmt_num(double v, char *buf, size_t len)
{
    double a = fabs(v);
    if (a >= 1e4 && a < 1e10)
        snprintf(buf, len, "%.0f", v);
    else if (a >= 1e-3 || a == 0)
        snprintf(buf, len, "%.4g", v);
    else
        snprintf(buf, len, "%.3e", v);
}

void sim_validate_print(FILE *out, const sim_validate_manifest_t *m,
                        const sim_validate_result_t *results, int only_problems)
{
    int idw = 2, figw = 6;
    for (size_t i = 0; i < m->nentries; i++) {
        int l = (int)strlen(m->entries[i].id);
        idw = l > idw ? l : idw;
        l = (int)strlen(m->entries[i].figure) + (m->entries[i].relative_to ? 2 : 0);
        figw = l > figw ? l : figw;
    }
    idw = idw > 40 ? 40 : idw;
    figw = figw > 32 ? 32 : figw;
    fprintf(out, "%-*s  %-*s  %12s  %12s  %8s  %8s  %5s  %s\n", idw, "id", figw, "figure",
            "measured", "simulated", "sim/meas", "error", "band", "inside");
    for (size_t i = 0; i < m->nentries; i++) {
        const sim_validate_entry_t *e = &m->entries[i];
        const sim_validate_result_t *r = &results[i];
        if (!r->ran ||
            (only_problems && r->status == NCSIM_OK && r->inside && !e->known_miss))
            continue;
        char fig[300], meas[32], sim[32], band[16];
        snprintf(fig, sizeof fig, "%s%s", e->figure, e->relative_to ? " /" : "");
        fmt_num(e->measured, meas, sizeof meas);
        snprintf(band, sizeof band, "%.0f%%", 100.0 * e->band);
        if (r->status != NCSIM_OK) {
            fprintf(out, "%-*.*s  %-*.*s  %12s  %12s  %8s  %8s  %5s  error: %s\n", idw, idw,
                    e->id, figw, figw, fig, meas, "-", "-", "-", band, r->message);
            continue;
        }
        fmt_num(r->simulated, sim, sizeof sim);
        fprintf(out, "%-*.*s  %-*.*s  %12s  %12s  %8.3f  %+7.1f%%  %5s  %s\n", idw, idw, e->id,
                figw, figw, fig, meas, sim, r->ratio, 100.0 * r->error, band,
                r->inside ? (e->known_miss ? "yes (marked known_miss: remove the mark)" : "yes")
                          : (e->known_miss ? "NO (known miss)" : "NO"));
    }
    sim_validate_summary_t s;
    sim_validate_summarise(m, results, &s);
    size_t ok = s.ran - s.failed;
    if (ok) {
        fprintf(out, "geometric-mean error %.1f%% over %zu entr%s; worst: %s at %+.1f%%\n",
                100.0 * s.geomean_error, ok, ok == 1 ? "y" : "ies",
                m->entries[s.worst_index].id, 100.0 * s.worst_error);
    }
    if (s.failed)
        fprintf(out, "%zu entr%s failed to run\n", s.failed, s.failed == 1 ? "y" : "ies");
    if (s.known_outside) {
        fprintf(out, "%zu of %zu entr%s outside their band as the manifest expects (known_miss):\n",
                s.known_outside, ok, s.known_outside == 1 ? "y is" : "ies are");
        for (size_t i = 0; i < m->nentries; i++)
            if (results[i].ran && results[i].status == NCSIM_OK && !results[i].inside &&
                m->entries[i].known_miss)
                fprintf(out, "  %s: %s\n", m->entries[i].id, m->entries[i].known_miss);
    }
    if (s.stale_known)
        fprintf(out, "%zu entr%s marked known_miss but now inside the band: remove the mark\n",
                s.stale_known, s.stale_known == 1 ? "y is" : "ies are");
    if (s.outside)
        fprintf(out, "%zu of %zu entr%s outside their band\n", s.outside, ok,
                ok == 1 ? "y is" : "ies are");
    else if (ok && !s.known_outside)
        fprintf(out, "all %zu entr%s inside their band\n", ok, ok == 1 ? "y is" : "ies are");
}

static void csv_field(FILE *f, const char *s)
{
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

ncsim_status_t sim_validate_write_csv(const char *path, const sim_validate_manifest_t *m,
                                      const sim_validate_result_t *results, char *err,
                                      size_t errlen)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    fputs("id,title,figure,relative_to,measured,simulated,ratio,error_pct,band,inside,weight,"
          "fit,status,known_miss\n", f);
    for (size_t i = 0; i < m->nentries; i++) {
        const sim_validate_entry_t *e = &m->entries[i];
        const sim_validate_result_t *r = &results[i];
        if (!r->ran)
            continue;
        csv_field(f, e->id);
        fputc(',', f);
        csv_field(f, e->title);
        fputc(',', f);
        csv_field(f, e->figure);
        fputc(',', f);
        csv_field(f, e->relative_to ? e->relative_to : "");
        fprintf(f, ",%.10g,", e->measured);
        if (r->status == NCSIM_OK)
            fprintf(f, "%.10g,%.6f,%.3f,", r->simulated, r->ratio, 100.0 * r->error);
        else
            fputs(",,,", f);
        fprintf(f, "%g,%s,%g,%s,", e->band,
                r->status != NCSIM_OK ? "" : r->inside ? "yes" : "no", e->weight,
                e->fit ? "true" : "false");
        if (r->status == NCSIM_OK) {
            fputs("ok", f);
        } else {
            char msg[600];
            snprintf(msg, sizeof msg, "error: %s", r->message);
            for (char *p = msg; *p; p++)
                if (*p == '\n')
                    *p = ' ';
            csv_field(f, msg);
        }
        fputc(',', f);
        csv_field(f, e->known_miss ? e->known_miss : "");
        fputc('\n', f);
    }
    if (fclose(f) != 0 || !buf) {
        free(buf);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    int bad;
    if (strcmp(path, "-") == 0)
        bad = fwrite(buf, 1, len, stdout) != len || fflush(stdout) != 0;
    else
        bad = ncsim_write_file(path, buf, len) != NCSIM_OK;
    free(buf);
    if (bad) {
        xp_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return NCSIM_IO;
    }
    return NCSIM_OK;
}

ncsim_status_t sim_validate_plot(const char *png_path, const sim_validate_manifest_t *m,
                                 const sim_validate_result_t *results, char *err,
                                 size_t errlen)
{
    sim_scatter_point_t *pts = calloc(m->nentries ? m->nentries : 1, sizeof *pts);
    if (!pts) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    size_t n = 0;
    for (size_t i = 0; i < m->nentries; i++) {
        const sim_validate_result_t *r = &results[i];
        if (!r->ran || r->status != NCSIM_OK)
            continue;
        pts[n].x = m->entries[i].measured;
        pts[n].y = r->simulated;
        pts[n].label = m->entries[i].id;
        pts[n].good = r->inside;
        n++;
    }
    /* the band drawn is the one most entries have (each point's colour uses its own) */
    double band = 0;
    size_t most = 0;
    for (size_t i = 0; i < m->nentries; i++) {
        size_t k = 0;
        for (size_t j = 0; j < m->nentries; j++)
            k += m->entries[j].band == m->entries[i].band;
        if (k > most) {
            most = k;
            band = m->entries[i].band;
        }
    }
    if (!n) {
        free(pts);
        xp_errf(err, errlen, "%s: no entry has a simulated figure to plot", m->path);
        return NCSIM_USAGE;
    }
    char title[300];
    snprintf(title, sizeof title, "%s: simulated vs measured",
             m->name[0] ? m->name : "validation");
    sim_scatter_options_t so = {title, "measured", "simulated", band, 0, 0};
    ncsim_status_t st = sim_plot_scatter(pts, n, &so, png_path, err, errlen);
    free(pts);
    return st;
}
