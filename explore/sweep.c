/*
 * sweep.c -- architecture sweeps: the spec, the points, running them in this process or in
 * forked workers, the per-point result files, the merged CSV and the Slurm script
 * (sweep.h describes the contract, docs/exploration.md the use).
 */
#include "sweep_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"
#include "util.h"

/* The bounds of the files a spec names (program, arch file: as large as a program may be,
 * sim/load.h's 1 GiB) and of a point file, which sweep writes itself (docs/security.md). */
#define SWEEP_MAX_DATA_BYTES (1ull << 30)
#define SWEEP_MAX_POINT_BYTES (64ull << 20)
/* Assembler errors kept in a point's message (and the spec error) before "too many errors". */
#define SWEEP_MAX_ERRORS 20

/* ---- the spec ----------------------------------------------------------------------------- */

/* One grid entry: nkeys keys varied together over nvalues values. */
typedef struct sweep_axis {
    size_t first_param; /* index in sw->params of its first key */
    size_t nkeys;
    size_t nvalues;
    char **values;      /* nvalues x nkeys value texts, row-major */
} sweep_axis_t;

typedef struct sweep_input {
    char *name;
    char *path;       /* absolute */
    int checked;      /* read and parsed once by sim_sweep_prepare (ncsim_npy_check_file) */
} sweep_input_t;

/* One assembled program per memory layout (assembly checks sizes against it): `arch` is a
 * config of that layout (ncsim_arch_same_memory). */
typedef struct sweep_program {
    ncsim_arch_t *arch;
    ncsim_program_t *prog;
    ncsim_status_t status;
    char *diag;       /* assembler messages when status != NCSIM_OK */
} sweep_program_t;

struct sim_sweep {
    char *spec_path;  /* absolute */
    char *spec_dir;
    char *name;       /* spec file name without directory and ".json" */
    char *program;    /* absolute */
    ncsim_arch_t *base; /* base config with the spec's "set" applied (not validated) */
    char **params;    /* varied keys, CSV column order */
    size_t nparams;
    sweep_axis_t *axes;
    size_t naxes;
    uint64_t npoints;
    int timing_only;
    int have_random;
    uint64_t random_seed;
    uint64_t seed;
    int stochastic;
    sweep_input_t *inputs;
    size_t ninputs;
    char fingerprint[17];
    sweep_program_t *progs;
    size_t nprogs;
};

#define SWEEP_MAX_POINTS (UINT64_C(1) << 40)

static char *dup_printf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static char *dup_printf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return NULL;
    char *s = malloc((size_t)n + 1);
    if (!s)
        return NULL;
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

/* 64-bit FNV-1a: a cheap fingerprint of the inputs that decide a point's result. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t len)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

/* `path` made absolute against `dir` (the spec's directory), then canonical when it exists. */
static char *resolve_path(const char *dir, const char *path)
{
    char *joined = path[0] == '/' ? xp_strdup(path) : dup_printf("%s/%s", dir, path);
    if (!joined)
        return NULL;
    char *real = realpath(joined, NULL);
    if (real) {
        free(joined);
        return real;
    }
    return joined;
}

/* Hash a whole file into h; -1 when it cannot be read (why says why). The path came from
 * the spec, which is data: it is read through the library's checked reader, so a spec naming
 * /dev/zero or a FIFO is refused at once instead of spinning or blocking. */
static int hash_file(uint64_t *h, const char *path, char *why, size_t whylen)
{
    void *data = NULL;
    size_t len = 0;
    if (ncsim_read_data_file(path, SWEEP_MAX_DATA_BYTES, 0, &data, &len, why, whylen) !=
        NCSIM_OK)
        return -1;
    *h = fnv1a(*h, data, len);
    ncsim_free(data);
    return 0;
}

/* The whole spec file, NUL-terminated; NULL with errno set when it cannot be read (the
 * reason of a directory, EISDIR, is kept; a stream that never ends stops at 1 GiB, EFBIG).
 * A spec named "-" is a file of that name, not stdin: every worker reads the spec again. */
static char *read_spec(const char *path, size_t *len)
{
    return xp_read_file(strcmp(path, "-") == 0 ? "./-" : path, len);
}

/*
 * A grid or "set" value as the text ncsim_arch_set takes: integers in decimal, reals in the
 * shortest form that reads back to the same double, strings (enum names) as they are.
 */
static int value_text(const json_t *v, char *buf, size_t len)
{
    if (json_is_integer(v)) {
        snprintf(buf, len, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return 0;
    }
    if (json_is_real(v)) {
        double x = json_real_value(v);
        for (int prec = 1; prec <= 17; prec++) {
            snprintf(buf, len, "%.*g", prec, x);
            if (strtod(buf, NULL) == x)
                break;
        }
        return 0;
    }
    if (json_is_string(v)) {
        snprintf(buf, len, "%s", json_string_value(v));
        return 0;
    }
    return -1;
}

/* Apply "key=value" to a; the error names the spec file. */
static ncsim_status_t apply_set(const char *spec, ncsim_arch_t *a, const char *key,
                                const char *value, char *err, size_t errlen)
{
    char assignment[512];
    snprintf(assignment, sizeof assignment, "%s=%s", key, value);
    if (ncsim_arch_set(a, assignment) != NCSIM_OK) {
        xp_errf(err, errlen, "%s: %.511s", spec, ncsim_last_error());
        return NCSIM_USAGE;
    }
    return NCSIM_OK;
}

/* The text of `key` in config a, truncated to the buffer as the point files and `--list`
 * always have (a known key; "" for an unknown one). */
static void arch_value(const ncsim_arch_t *a, const char *key, char *buf, size_t buflen)
{
    char *v = NULL;
    buf[0] = 0;
    if (ncsim_arch_get(a, key, &v) == NCSIM_OK)
        snprintf(buf, buflen, "%s", v);
    ncsim_free(v);
}

static int is_arch_key(const sim_sweep_t *sw, const char *key)
{
    char *v = NULL;
    int known = ncsim_arch_get(sw->base, key, &v) == NCSIM_OK;
    ncsim_free(v);
    return known;
}

static ncsim_status_t add_param(sim_sweep_t *sw, const char *key, char *err, size_t errlen)
{
    if (!is_arch_key(sw, key)) {
        xp_errf(err, errlen, "%s: grid: unknown key '%s' (`ncsim arch trn1` lists the keys)",
                 sw->spec_path, key);
        return NCSIM_USAGE;
    }
    for (size_t i = 0; i < sw->nparams; i++)
        if (strcmp(sw->params[i], key) == 0) {
            xp_errf(err, errlen, "%s: grid: key '%s' is varied twice", sw->spec_path, key);
            return NCSIM_USAGE;
        }
    char **p = realloc(sw->params, (sw->nparams + 1) * sizeof *p);
    if (!p)
        return NCSIM_NOMEM;
    sw->params = p;
    if (!(p[sw->nparams] = xp_strdup(key)))
        return NCSIM_NOMEM;
    sw->nparams++;
    return NCSIM_OK;
}

/* Parse one grid entry: "key": [v, ...] or "k1,k2": [[v1, v2], ...]. */
static ncsim_status_t parse_axis(sim_sweep_t *sw, const char *name, const json_t *values,
                                 char *err, size_t errlen)
{
    sweep_axis_t *ax = &sw->axes[sw->naxes];
    memset(ax, 0, sizeof *ax);
    ax->first_param = sw->nparams;
    sw->naxes++;
    /* split the name at commas */
    const char *p = name;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        while (len && (*p == ' ')) {
            p++;
            len--;
        }
        while (len && p[len - 1] == ' ')
            len--;
        char key[128];
        if (len == 0 || len >= sizeof key) {
            xp_errf(err, errlen, "%s: grid: bad key list '%s'", sw->spec_path, name);
            return NCSIM_USAGE;
        }
        memcpy(key, p, len);
        key[len] = 0;
        ncsim_status_t st = add_param(sw, key, err, errlen);
        if (st != NCSIM_OK)
            return st;
        ax->nkeys++;
        if (!comma)
            break;
        p = comma + 1;
    }
    if (!json_is_array(values) || json_array_size(values) == 0) {
        xp_errf(err, errlen, "%s: grid: '%s' must be a non-empty array of values", sw->spec_path,
                 name);
        return NCSIM_USAGE;
    }
    ax->nvalues = json_array_size(values);
    ax->values = calloc(ax->nvalues * ax->nkeys, sizeof *ax->values);
    if (!ax->values)
        return NCSIM_NOMEM;
    for (size_t v = 0; v < ax->nvalues; v++) {
        const json_t *item = json_array_get(values, v);
        if (ax->nkeys > 1 && (!json_is_array(item) || json_array_size(item) != ax->nkeys)) {
            xp_errf(err, errlen,
                     "%s: grid: '%s' varies %zu keys together: value %zu must be "
                     "an array of %zu values",
                     sw->spec_path, name, ax->nkeys, v, ax->nkeys);
            return NCSIM_USAGE;
        }
        for (size_t k = 0; k < ax->nkeys; k++) {
            const json_t *x = ax->nkeys > 1 ? json_array_get(item, k) : item;
            char text[128];
            const char *key = sw->params[ax->first_param + k];
            if (value_text(x, text, sizeof text)) {
                xp_errf(err, errlen, "%s: grid: '%s' value %zu must be a number or a string",
                         sw->spec_path, key, v);
                return NCSIM_USAGE;
            }
            /* check the value now: a bad one is reported before anything runs */
            ncsim_arch_t *scratch = NULL;
            if (ncsim_arch_copy(sw->base, &scratch) != NCSIM_OK)
                return NCSIM_NOMEM;
            ncsim_status_t st = apply_set(sw->spec_path, scratch, key, text, err, errlen);
            ncsim_arch_free(scratch);
            if (st != NCSIM_OK)
                return st;
            if (!(ax->values[v * ax->nkeys + k] = xp_strdup(text)))
                return NCSIM_NOMEM;
        }
    }
    return NCSIM_OK;
}

static const char *const spec_keys[] = {"program", "arch",  "timing_only", "grid",
                                        "set",     "inputs", "random_inputs", "seed",
                                        "stochastic_rounding", "description", NULL};

/* The program assembled (or loaded) for the memory layout of `layout`, which the entry
 * takes over; with `own_arch` it is assembled against the program's `.arch` (else trn1)
 * instead, as ncsim_program_load_file does without a config. A failure is kept in the entry
 * (status and the loader's report) for the points that use the layout. */
static ncsim_status_t assemble(sim_sweep_t *sw, ncsim_arch_t *layout, int own_arch,
                               sweep_program_t **out)
{
    sweep_program_t *pp = realloc(sw->progs, (sw->nprogs + 1) * sizeof *pp);
    if (!pp) {
        ncsim_arch_free(layout);
        return NCSIM_NOMEM;
    }
    sw->progs = pp;
    sweep_program_t *e = &pp[sw->nprogs];
    memset(e, 0, sizeof *e);
    e->arch = layout;
    e->status = ncsim_program_load_file_max_errors(sw->program, own_arch ? NULL : layout,
                                                   SWEEP_MAX_ERRORS, &e->prog);
    if (e->status != NCSIM_OK) {
        /* the loader's report, which ends with a newline when it has any line */
        const char *why = ncsim_last_error();
        int report = *why && strcmp(why, ncsim_status_text(e->status)) != 0;
        e->diag = dup_printf("%s%s", *why ? why : ncsim_status_text(e->status),
                             report ? "\n" : "");
        if (!e->diag) {
            ncsim_program_free(e->prog);
            ncsim_arch_free(layout);
            return NCSIM_NOMEM;
        }
    }
    sw->nprogs++;
    *out = e;
    return NCSIM_OK;
}

static ncsim_status_t program_for(sim_sweep_t *sw, const ncsim_arch_t *a, sweep_program_t **out)
{
    for (size_t i = 0; i < sw->nprogs; i++)
        if (ncsim_arch_same_memory(sw->progs[i].arch, a)) {
            *out = &sw->progs[i];
            return NCSIM_OK;
        }
    ncsim_arch_t *layout = NULL;
    if (ncsim_arch_copy(a, &layout) != NCSIM_OK)
        return NCSIM_NOMEM;
    return assemble(sw, layout, 0, out);
}

/* Every point of first..last must be a valid config: say which one is not, before anything
 * runs. */
ncsim_status_t sim_sweep_check_points(const sim_sweep_t *sw, uint64_t first, uint64_t last,
                                      char *err, size_t errlen)
{
    const char *spec_path = sw->spec_path;
    char e[1024];
    for (uint64_t i = first; i <= last && i < sw->npoints; i++) {
        ncsim_arch_t *a = NULL;
        ncsim_status_t st = sim_sweep_point_arch(sw, i, &a, e, sizeof e);
        if (st != NCSIM_OK) {
            char where[512] = "";
            size_t w = 0;
            for (size_t k = 0; k < sw->nparams && w < sizeof where - 1 && a; k++) {
                char v[64];
                arch_value(a, sw->params[k], v, sizeof v);
                int n = snprintf(where + w, sizeof where - w, "%s%s=%s", k ? " " : "",
                                 sw->params[k], v);
                w += n > 0 ? (size_t)n : 0;
            }
            xp_errf(err, errlen, "%s: point %" PRIu64 " (%s): %s%s", spec_path, i, where, e,
                     sw->nparams > 1 ? "\n(keys that must change together can be varied "
                                       "together: \"k1,k2\": [[v1, v2], ...])"
                                     : "");
            ncsim_arch_free(a);
            return st;
        }
        ncsim_arch_free(a);
    }
    return NCSIM_OK;
}

static ncsim_status_t sweep_load(const char *spec_path, int check_all, sim_sweep_t **out,
                                 char *err, size_t errlen);

ncsim_status_t sim_sweep_load(const char *spec_path, sim_sweep_t **out, char *err,
                              size_t errlen)
{
    return sweep_load(spec_path, 1, out, err, errlen);
}

ncsim_status_t sim_sweep_load_unchecked(const char *spec_path, sim_sweep_t **out, char *err,
                                        size_t errlen)
{
    return sweep_load(spec_path, 0, out, err, errlen);
}

static ncsim_status_t sweep_load(const char *spec_path, int check_all, sim_sweep_t **out,
                                 char *err, size_t errlen)
{
    *out = NULL;
    sim_sweep_t *sw = calloc(1, sizeof *sw);
    if (!sw)
        return NCSIM_NOMEM;
    ncsim_status_t st = NCSIM_NOMEM;
    json_t *root = NULL;
    char *text = NULL;
    size_t len = 0;

    sw->spec_path = realpath(spec_path, NULL);
    if (!sw->spec_path) {
        xp_errf(err, errlen, "%s: %s", spec_path, strerror(errno));
        st = NCSIM_IO;
        goto fail;
    }
    sw->spec_dir = xp_strdup(sw->spec_path);
    if (!sw->spec_dir)
        goto fail;
    char *slash = strrchr(sw->spec_dir, '/');
    if (slash == sw->spec_dir)
        slash[1] = 0;
    else if (slash)
        *slash = 0;
    const char *base_name = strrchr(sw->spec_path, '/') + 1;
    sw->name = xp_strdup(base_name);
    if (!sw->name)
        goto fail;
    size_t nl = strlen(sw->name);
    if (nl > 5 && strcmp(sw->name + nl - 5, ".json") == 0)
        sw->name[nl - 5] = 0;

    text = read_spec(sw->spec_path, &len);
    if (!text) {
        xp_errf(err, errlen, "%s: %s", spec_path, strerror(errno));
        st = NCSIM_IO;
        goto fail;
    }
    json_error_t jerr;
    root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        xp_errf(err, errlen, "%s:%d:%d: %s", spec_path, jerr.line, jerr.column, jerr.text);
        st = NCSIM_USAGE;
        goto fail;
    }
    st = NCSIM_USAGE;
    if (!json_is_object(root)) {
        xp_errf(err, errlen, "%s: a sweep spec is a JSON object", spec_path);
        goto fail;
    }
    const char *key;
    json_t *val;
    json_object_foreach(root, key, val) {
        int known = 0;
        for (int i = 0; spec_keys[i]; i++)
            known |= strcmp(key, spec_keys[i]) == 0;
        if (!known) {
            xp_errf(err, errlen,
                     "%s: unknown key '%s' (a spec has program, arch, timing_only, "
                     "set, grid, inputs, random_inputs, seed, "
                     "stochastic_rounding, description)",
                     spec_path, key);
            goto fail;
        }
    }
    /* program */
    json_t *jprog = json_object_get(root, "program");
    if (!json_is_string(jprog) || !json_string_value(jprog)[0]) {
        xp_errf(err, errlen,
                 "%s: 'program' (the .nca or .ncx file to run) is required and "
                 "must be a string",
                 spec_path);
        goto fail;
    }
    sw->program = resolve_path(sw->spec_dir, json_string_value(jprog));
    if (!sw->program) {
        st = NCSIM_NOMEM;
        goto fail;
    }
    uint64_t fp = fnv1a(UINT64_C(0xcbf29ce484222325), text, len);
    char why[256];
    if (hash_file(&fp, sw->program, why, sizeof why)) {
        xp_errf(err, errlen, "%s: program %s: %s", spec_path, sw->program, why);
        st = NCSIM_IO;
        goto fail;
    }
    /* flags */
    json_t *j = json_object_get(root, "timing_only");
    sw->timing_only = 1;
    if (j) {
        if (!json_is_boolean(j)) {
            xp_errf(err, errlen, "%s: 'timing_only' must be true or false", spec_path);
            goto fail;
        }
        sw->timing_only = json_is_true(j);
    }
    j = json_object_get(root, "stochastic_rounding");
    if (j) {
        if (!json_is_boolean(j)) {
            xp_errf(err, errlen, "%s: 'stochastic_rounding' must be true or false", spec_path);
            goto fail;
        }
        sw->stochastic = json_is_true(j);
    }
    j = json_object_get(root, "seed");
    if (j) {
        if (!json_is_integer(j) || json_integer_value(j) < 0) {
            xp_errf(err, errlen, "%s: 'seed' must be a non-negative integer", spec_path);
            goto fail;
        }
        sw->seed = (uint64_t)json_integer_value(j);
    }
    j = json_object_get(root, "random_inputs");
    if (j) {
        if (!json_is_integer(j) || json_integer_value(j) < 0) {
            xp_errf(err, errlen, "%s: 'random_inputs' must be a non-negative integer seed",
                     spec_path);
            goto fail;
        }
        sw->have_random = 1;
        sw->random_seed = (uint64_t)json_integer_value(j);
    }
    j = json_object_get(root, "description");
    if (j && !json_is_string(j)) {
        xp_errf(err, errlen, "%s: 'description' must be a string", spec_path);
        goto fail;
    }
    j = json_object_get(root, "inputs");
    if (j) {
        if (!json_is_object(j)) {
            xp_errf(err, errlen, "%s: 'inputs' must map tensor names to .npy files", spec_path);
            goto fail;
        }
        sw->inputs = calloc(json_object_size(j) + 1, sizeof *sw->inputs);
        if (!sw->inputs) {
            st = NCSIM_NOMEM;
            goto fail;
        }
        json_object_foreach(j, key, val) {
            if (!json_is_string(val)) {
                xp_errf(err, errlen, "%s: inputs: '%s' must name a .npy file", spec_path, key);
                goto fail;
            }
            sweep_input_t *in = &sw->inputs[sw->ninputs++];
            in->name = xp_strdup(key);
            in->path = resolve_path(sw->spec_dir, json_string_value(val));
            if (!in->name || !in->path) {
                st = NCSIM_NOMEM;
                goto fail;
            }
            /* an input may be written later, but never a device, FIFO or directory */
            struct stat in_st;
            if (stat(in->path, &in_st) == 0 && !S_ISREG(in_st.st_mode)) {
                xp_errf(err, errlen, "%s: inputs: '%s': %s is not a regular file", spec_path,
                         key, in->path);
                st = NCSIM_IO;
                goto fail;
            }
            fp = fnv1a(fp, in->path, strlen(in->path) + 1);
        }
    }
    if ((sw->ninputs || sw->have_random) && sw->timing_only) {
        xp_errf(err, errlen, "%s: 'inputs' and 'random_inputs' need \"timing_only\": false",
                 spec_path);
        goto fail;
    }
    /* base architecture: "arch", else the program's .arch, else trn1 */
    json_t *jarch = json_object_get(root, "arch");
    if (jarch && !json_is_string(jarch)) {
        xp_errf(err, errlen, "%s: 'arch' must be a preset name or a config file", spec_path);
        goto fail;
    }
    if (jarch) {
        const char *an = json_string_value(jarch);
        int is_file = strchr(an, '/') || (strlen(an) > 5 && !strcmp(an + strlen(an) - 5, ".json"));
        char *ap = is_file ? resolve_path(sw->spec_dir, an) : xp_strdup(an);
        if (!ap) {
            st = NCSIM_NOMEM;
            goto fail;
        }
        if (is_file && hash_file(&fp, ap, why, sizeof why)) {
            xp_errf(err, errlen, "%s: arch %s: %s", spec_path, ap, why);
            free(ap);
            st = NCSIM_IO;
            goto fail;
        }
        fp = fnv1a(fp, ap, strlen(ap));
        st = ncsim_arch_load(ap, &sw->base);
        free(ap);
        if (st != NCSIM_OK) {
            xp_errf(err, errlen, "%s: arch: %.1023s", spec_path, ncsim_last_error());
            goto fail;
        }
    } else {
        /* assemble once against trn1 sizes with `.arch` lookup, to learn the program's arch */
        ncsim_arch_t *trn1 = NULL;
        st = ncsim_arch_load("trn1", &trn1);
        if (st != NCSIM_OK) {
            xp_errf(err, errlen, "%.1023s", ncsim_last_error());
            goto fail;
        }
        sweep_program_t *pe = NULL;
        st = assemble(sw, trn1, 1, &pe);
        if (st != NCSIM_OK)
            goto fail;
        if (pe->status != NCSIM_OK) {
            xp_errf(err, errlen, "%s: program %s:\n%s", spec_path, sw->program, pe->diag);
            st = pe->status;
            goto fail;
        }
        const char *an = ncsim_program_arch(pe->prog);
        st = ncsim_arch_load(an && *an ? an : "trn1", &sw->base);
        if (st != NCSIM_OK) {
            xp_errf(err, errlen, "%s: %.1023s", spec_path, ncsim_last_error());
            goto fail;
        }
        /* the lookup assembled it against the .arch preset's sizes */
        ncsim_arch_t *layout = NULL;
        st = ncsim_arch_copy(sw->base, &layout);
        if (st != NCSIM_OK)
            goto fail;
        ncsim_arch_free(pe->arch);
        pe->arch = layout;
    }
    /* fixed overrides, in file order */
    j = json_object_get(root, "set");
    if (j) {
        if (!json_is_object(j)) {
            xp_errf(err, errlen, "%s: 'set' must be an object of \"section.key\": value",
                     spec_path);
            st = NCSIM_USAGE;
            goto fail;
        }
        json_object_foreach(j, key, val) {
            char vt[128];
            if (value_text(val, vt, sizeof vt)) {
                xp_errf(err, errlen, "%s: set: '%s' must be a number or a string", spec_path, key);
                st = NCSIM_USAGE;
                goto fail;
            }
            st = apply_set(spec_path, sw->base, key, vt, err, errlen);
            if (st != NCSIM_OK)
                goto fail;
        }
    }
    /* the grid */
    j = json_object_get(root, "grid");
    if (j && !json_is_object(j)) {
        xp_errf(err, errlen, "%s: 'grid' must be an object of \"section.key\": [values]",
                 spec_path);
        st = NCSIM_USAGE;
        goto fail;
    }
    sw->axes = calloc((j ? json_object_size(j) : 0) + 1, sizeof *sw->axes);
    if (!sw->axes) {
        st = NCSIM_NOMEM;
        goto fail;
    }
    sw->npoints = 1;
    if (j)
        json_object_foreach(j, key, val) {
            st = parse_axis(sw, key, val, err, errlen);
            if (st != NCSIM_OK)
                goto fail;
            uint64_t n = sw->axes[sw->naxes - 1].nvalues;
            if (sw->npoints > SWEEP_MAX_POINTS / n) {
                xp_errf(err, errlen, "%s: the grid has too many points", spec_path);
                st = NCSIM_USAGE;
                goto fail;
            }
            sw->npoints *= n;
        }
    if (check_all && sw->npoints) {
        st = sim_sweep_check_points(sw, 0, sw->npoints - 1, err, errlen);
        if (st != NCSIM_OK)
            goto fail;
    }
    snprintf(sw->fingerprint, sizeof sw->fingerprint, "%016" PRIx64, fp);
    json_decref(root);
    free(text);
    *out = sw;
    return NCSIM_OK;
fail:
    json_decref(root);
    free(text);
    sim_sweep_free(sw);
    if (st == NCSIM_NOMEM)
        xp_errf(err, errlen, "out of memory");
    return st;
}

void sim_sweep_free(sim_sweep_t *sw)
{
    if (!sw)
        return;
    free(sw->spec_path);
    free(sw->spec_dir);
    free(sw->name);
    free(sw->program);
    for (size_t i = 0; i < sw->nparams; i++)
        free(sw->params[i]);
    free(sw->params);
    for (size_t a = 0; a < sw->naxes; a++) {
        for (size_t v = 0; v < sw->axes[a].nvalues * sw->axes[a].nkeys; v++)
            free(sw->axes[a].values[v]);
        free(sw->axes[a].values);
    }
    free(sw->axes);
    for (size_t i = 0; i < sw->ninputs; i++) {
        free(sw->inputs[i].name);
        free(sw->inputs[i].path);
    }
    free(sw->inputs);
    for (size_t i = 0; i < sw->nprogs; i++) {
        ncsim_program_free(sw->progs[i].prog);
        ncsim_arch_free(sw->progs[i].arch);
        free(sw->progs[i].diag);
    }
    ncsim_arch_free(sw->base);
    free(sw->progs);
    free(sw);
}

uint64_t sim_sweep_point_count(const sim_sweep_t *sw)
{
    return sw->npoints;
}

size_t sim_sweep_param_count(const sim_sweep_t *sw)
{
    return sw->nparams;
}

const char *sim_sweep_param_key(const sim_sweep_t *sw, size_t i)
{
    return i < sw->nparams ? sw->params[i] : NULL;
}

const char *sim_sweep_fingerprint(const sim_sweep_t *sw)
{
    return sw->fingerprint;
}

const char *sim_sweep_spec_path(const sim_sweep_t *sw)
{
    return sw->spec_path;
}

const char *sim_sweep_program_path(const sim_sweep_t *sw)
{
    return sw->program;
}

void sim_sweep_default_out_dir(const sim_sweep_t *sw, char *buf, size_t buflen)
{
    snprintf(buf, buflen, "%s.sweep", sw->name);
}

/* Point index -> the value index of each axis: the last axis varies fastest. */
ncsim_status_t sim_sweep_point_arch(const sim_sweep_t *sw, uint64_t index, ncsim_arch_t **out,
                                    char *err, size_t errlen)
{
    *out = NULL;
    if (index >= sw->npoints) {
        xp_errf(err, errlen,
                 "point %" PRIu64 " does not exist (the sweep has %" PRIu64 " points, 0 to %" PRIu64
                 ")",
                 index, sw->npoints, sw->npoints - 1);
        return NCSIM_USAGE;
    }
    if (ncsim_arch_copy(sw->base, out) != NCSIM_OK) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    uint64_t rest = index;
    /* decompose from the last (fastest) axis, but apply in grid order */
    size_t *which = calloc(sw->naxes + 1, sizeof *which);
    if (!which)
        return NCSIM_NOMEM;
    for (size_t a = sw->naxes; a-- > 0;) {
        which[a] = (size_t)(rest % sw->axes[a].nvalues);
        rest /= sw->axes[a].nvalues;
    }
    ncsim_status_t st = NCSIM_OK;
    for (size_t a = 0; a < sw->naxes && st == NCSIM_OK; a++) {
        const sweep_axis_t *ax = &sw->axes[a];
        for (size_t k = 0; k < ax->nkeys && st == NCSIM_OK; k++)
            st = apply_set(sw->spec_path, *out, sw->params[ax->first_param + k],
                           ax->values[which[a] * ax->nkeys + k], err, errlen);
    }
    free(which);
    if (st == NCSIM_OK) {
        st = ncsim_arch_validate(*out);
        if (st != NCSIM_OK)
            xp_errf(err, errlen, "%.1023s", ncsim_last_error());
    }
    return st;
}

ncsim_status_t sim_sweep_point_values(const sim_sweep_t *sw, uint64_t index, char *buf,
                                      size_t buflen, char *err, size_t errlen)
{
    if (buflen)
        buf[0] = 0;
    ncsim_arch_t *a = NULL;
    ncsim_status_t st = sim_sweep_point_arch(sw, index, &a, err, errlen);
    if (st != NCSIM_OK) {
        ncsim_arch_free(a);
        return st;
    }
    size_t used = 0;
    for (size_t k = 0; k < sw->nparams && used < buflen; k++) {
        char v[128];
        arch_value(a, sw->params[k], v, sizeof v);
        int n = snprintf(buf + used, buflen - used, "%s%s", k ? "," : "", v);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    ncsim_arch_free(a);
    return NCSIM_OK;
}

ncsim_status_t sim_sweep_prepare(sim_sweep_t *sw, uint64_t first, uint64_t last, char *err,
                                 size_t errlen)
{
    if (last >= sw->npoints)
        last = sw->npoints - 1;
    for (uint64_t i = first; i <= last && i < sw->npoints; i++) {
        ncsim_arch_t *a = NULL;
        ncsim_status_t st = sim_sweep_point_arch(sw, i, &a, err, errlen);
        sweep_program_t *p;
        if (st == NCSIM_OK) {
            st = program_for(sw, a, &p);
            if (st != NCSIM_OK)
                xp_errf(err, errlen, "out of memory");
        }
        ncsim_arch_free(a);
        if (st != NCSIM_OK)
            return st;
    }
    /* functional sweeps check their .npy inputs once, before anything runs */
    for (size_t i = 0; i < sw->ninputs; i++) {
        sweep_input_t *in = &sw->inputs[i];
        if (in->checked)
            continue;
        ncsim_status_t st = ncsim_npy_check_file(in->path);
        if (st != NCSIM_OK) {
            xp_errf(err, errlen, "%s: inputs: %.511s", sw->spec_path, ncsim_last_error());
            return st;
        }
        in->checked = 1;
    }
    return NCSIM_OK;
}

/* ---- one point ---------------------------------------------------------------------------- */

static char *point_path(const char *out_dir, uint64_t index)
{
    return dup_printf("%s/point-%" PRIu64 ".json", out_dir, index);
}

/* A point file, which sweep writes itself, atomically: in a shared folder it is still data,
 * so it is read only as a regular file of bounded size and never through a symbolic link (a
 * FIFO would block the merge, a link could make it read and quote another file). NULL when it
 * is missing or not such a file. */
static json_t *load_point_file(const char *path)
{
    void *text = NULL;
    size_t len = 0;
    if (ncsim_read_data_file(path, SWEEP_MAX_POINT_BYTES, NCSIM_READ_NO_SYMLINK, &text, &len,
                             NULL, 0) != NCSIM_OK)
        return NULL;
    json_error_t jerr;
    json_t *root = json_loadb(text, len, 0, &jerr);
    ncsim_free(text);
    return root;
}

/* The point file holds a result of this sweep (same fingerprint, same index)? */
static int point_done(const sim_sweep_t *sw, const char *path, uint64_t index)
{
    json_t *root = load_point_file(path);
    if (!root)
        return 0;
    json_t *s = json_object_get(root, "sweep");
    int ok = json_is_object(s) &&
             json_is_string(json_object_get(s, "fingerprint")) &&
             strcmp(json_string_value(json_object_get(s, "fingerprint")), sw->fingerprint) == 0 &&
             json_is_integer(json_object_get(s, "index")) &&
             (uint64_t)json_integer_value(json_object_get(s, "index")) == index &&
             json_is_string(json_object_get(s, "status"));
    json_decref(root);
    return ok;
}

/* The HBM tensor of the program called `name` (the first one), or -1. */
static int32_t hbm_tensor(const ncsim_program_t *p, const char *name)
{
    uint32_t n = ncsim_program_tensor_count(p);
    for (uint32_t t = 0; t < n; t++) {
        ncsim_tensor_info_t ti;
        if (ncsim_program_tensor(p, t, &ti) == NCSIM_OK && ti.memory == NCSIM_HBM &&
            strcmp(ti.name, name) == 0)
            return (int32_t)t;
    }
    return -1;
}

static int is_input(const ncsim_tensor_info_t *ti)
{
    return ti->role == NCSIM_INPUT || ti->role == NCSIM_INOUT;
}

/* Bind the functional inputs exactly as `ncsim run --in/--random-inputs` does (the same
 * random stream per tensor), so a point reproduces with `ncsim run`. */
static ncsim_status_t bind_inputs(sim_sweep_t *sw, ncsim_sim_t *s, const ncsim_program_t *p,
                                  char *err, size_t errlen)
{
    uint32_t ntensors = ncsim_program_tensor_count(p);
    uint8_t *bound = calloc(ntensors + 1, 1);
    if (!bound)
        return NCSIM_NOMEM;
    ncsim_status_t st = NCSIM_OK;
    for (size_t i = 0; i < sw->ninputs && st == NCSIM_OK; i++) {
        sweep_input_t *in = &sw->inputs[i];
        int32_t t = hbm_tensor(p, in->name);
        ncsim_tensor_info_t ti;
        if (t < 0 || ncsim_program_tensor(p, (uint32_t)t, &ti) != NCSIM_OK || !is_input(&ti)) {
            xp_errf(err, errlen, "inputs: the program has no input HBM tensor '%s'", in->name);
            st = NCSIM_USAGE;
            break;
        }
        st = ncsim_sim_load_npy(s, (uint32_t)t, in->path);
        if (st != NCSIM_OK) {
            xp_errf(err, errlen, "%s", ncsim_last_error());
            break;
        }
        bound[t] = 1;
    }
    for (uint32_t t = 0; t < ntensors && st == NCSIM_OK; t++) {
        ncsim_tensor_info_t ti;
        if (ncsim_program_tensor(p, t, &ti) != NCSIM_OK || ti.memory != NCSIM_HBM || bound[t] ||
            !is_input(&ti))
            continue;
        if (!sw->have_random) {
            xp_errf(err, errlen,
                     "input tensor '%s' is not bound: give it in \"inputs\" or set "
                     "\"random_inputs\"",
                     ti.name);
            st = NCSIM_USAGE;
            break;
        }
        st = ncsim_sim_fill_random(s, t, sw->random_seed);
        if (st != NCSIM_OK)
            xp_errf(err, errlen, "%s", ncsim_last_error());
    }
    free(bound);
    return st;
}

/* The "sweep" object of a point file, without its result. */
static json_t *sweep_object(const sim_sweep_t *sw, uint64_t index, const ncsim_arch_t *a)
{
    json_t *o = json_object();
    json_object_set_new(o, "spec", json_string(sw->spec_path));
    json_object_set_new(o, "fingerprint", json_string(sw->fingerprint));
    json_object_set_new(o, "index", json_integer((json_int_t)index));
    json_object_set_new(o, "points", json_integer((json_int_t)sw->npoints));
    json_t *params = json_object();
    for (size_t k = 0; k < sw->nparams; k++) {
        char v[128] = "";
        if (a)
            arch_value(a, sw->params[k], v, sizeof v);
        json_object_set_new(params, sw->params[k], json_string(v));
    }
    json_object_set_new(o, "params", params);
    return o;
}

static double ratio(uint64_t part, uint64_t whole)
{
    return whole ? (double)part / (double)whole : 0.0;
}

/* A counter of a finished run (ncsim_sim_counter); the key is built from a format. */
static uint64_t counter(ncsim_sim_t *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static uint64_t counter(ncsim_sim_t *s, const char *fmt, ...)
{
    char key[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(key, sizeof key, fmt, ap);
    va_end(ap);
    uint64_t v = 0;
    if (ncsim_sim_counter(s, key, &v) != NCSIM_OK)
        v = 0;
    return v;
}

/* The CSV numbers of a finished run: utilisation is busy time over (cores used x total). */
static json_t *result_object(ncsim_sim_t *s)
{
    ncsim_summary_t sum;
    if (ncsim_sim_summary(s, &sum) != NCSIM_OK)
        return NULL;
    json_t *r = json_object();
    uint32_t ncores = (uint32_t)counter(s, "cores");
    uint64_t total_ps = counter(s, "total_ps");
    uint32_t used = 0;
    for (uint32_t c = 0; c < ncores; c++)
        used += counter(s, "core.%u.used", c) || counter(s, "core.%u.dma_transfers", c) ? 1u
                                                                                       : 0u;
    uint64_t denom = total_ps * (used ? used : 1);
    json_object_set_new(r, "total_ps", json_integer((json_int_t)total_ps));
    json_object_set_new(r, "mfu", json_real(sum.mfu));
    json_t *u = json_object();
    for (int e = 0; e < NCSIM_ENGINE_COUNT; e++) {
        const char *name = ncsim_engine_name((ncsim_engine_t)e);
        uint64_t busy = 0;
        for (uint32_t c = 0; c < ncores; c++)
            busy += counter(s, "core.%u.%s.busy_ps", c, name);
        json_object_set_new(u, name, json_real(ratio(busy, denom)));
    }
    uint64_t dma = 0;
    for (uint32_t c = 0; c < ncores; c++)
        dma += counter(s, "core.%u.dma_busy_ps", c);
    json_object_set_new(u, "dma", json_real(ratio(dma, denom)));
    json_object_set_new(r, "utilisation", u);
    json_object_set_new(r, "hbm_read_bytes",
                        json_integer((json_int_t)counter(s, "hbm_read_bytes")));
    json_object_set_new(r, "hbm_write_bytes",
                        json_integer((json_int_t)counter(s, "hbm_write_bytes")));
    json_object_set_new(r, "instructions", json_integer((json_int_t)counter(s, "instructions")));
    return r;
}

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Write root as the point file (atomically). */
static ncsim_status_t write_point(json_t *root, const char *path, char *err, size_t errlen)
{
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
    if (!text) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    size_t n = strlen(text);
    char *t2 = realloc(text, n + 2);
    if (!t2) {
        free(text);
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    t2[n] = '\n';
    t2[n + 1] = 0;
    ncsim_status_t rc = ncsim_write_file(path, t2, n + 1);
    free(t2);
    if (rc != NCSIM_OK) {
        xp_errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
        return NCSIM_IO;
    }
    return NCSIM_OK;
}

ncsim_status_t sim_sweep_run_point(sim_sweep_t *sw, uint64_t index, const char *out_dir,
                                   int force, sim_sweep_point_status_t *status, char *err,
                                   size_t errlen)
{
    *status = SIM_SWEEP_POINT_FAILED;
    if (index >= sw->npoints) {
        xp_errf(err, errlen, "point %" PRIu64 " does not exist (the sweep has %" PRIu64 " points)",
                 index, sw->npoints);
        return NCSIM_USAGE;
    }
    char *path = point_path(out_dir, index);
    if (!path) {
        xp_errf(err, errlen, "out of memory");
        return NCSIM_NOMEM;
    }
    if (!force && point_done(sw, path, index)) {
        free(path);
        *status = SIM_SWEEP_POINT_SKIPPED;
        return NCSIM_OK;
    }
    double t0 = now_seconds();
    char msg[8192] = "";
    ncsim_status_t pst; /* the point's own outcome */
    ncsim_arch_t *a = NULL;
    ncsim_sim_t *s = NULL;
    json_t *root = NULL;
    sweep_program_t *sp = NULL;
    pst = sim_sweep_point_arch(sw, index, &a, msg, sizeof msg);
    int have_arch = pst == NCSIM_OK;
    if (pst == NCSIM_OK) {
        pst = program_for(sw, a, &sp);
        if (pst == NCSIM_OK && sp->status != NCSIM_OK) {
            pst = sp->status;
            snprintf(msg, sizeof msg, "%s", sp->diag);
        }
    }
    if (pst == NCSIM_OK) {
        ncsim_options_t so;
        ncsim_options_init(&so);
        so.timing_only = sw->timing_only;
        so.stochastic_rounding = sw->stochastic;
        so.seed = sw->seed;
        so.program_name = sw->program;
        pst = ncsim_sim_create(sp->prog, a, &so, &s);
        if (pst != NCSIM_OK)
            snprintf(msg, sizeof msg, "%s", ncsim_last_error());
    }
    if (pst == NCSIM_OK && !sw->timing_only)
        pst = bind_inputs(sw, s, sp->prog, msg, sizeof msg);
    if (pst == NCSIM_OK) {
        pst = ncsim_sim_run(s);
        if (pst != NCSIM_OK)
            snprintf(msg, sizeof msg, "%s", ncsim_sim_error(s)[0] ? ncsim_sim_error(s)
                                                                 : ncsim_status_text(pst));
    }
    if (pst == NCSIM_NOMEM && !msg[0])
        snprintf(msg, sizeof msg, "out of memory");
    double host = now_seconds() - t0;
    if (pst == NCSIM_OK) {
        char *stats = NULL;
        json_error_t jerr;
        root = ncsim_sim_stats_json(s, &stats) == NCSIM_OK ? json_loads(stats, 0, &jerr) : NULL;
        ncsim_free(stats);
        json_t *result = root ? result_object(s) : NULL;
        if (root && result) {
            json_t *o = sweep_object(sw, index, a);
            json_object_set_new(o, "status", json_string("ok"));
            json_object_set_new(o, "result", result);
            json_object_set_new(o, "host_seconds", json_real(host));
            json_object_set_new(root, "sweep", o);
        } else {
            json_decref(result);
            json_decref(root);
            root = NULL;
        }
    } else {
        /* the failure is the point's result: record it (and the config it ran on) */
        root = json_object();
        json_t *o = sweep_object(sw, index, have_arch ? a : NULL);
        json_object_set_new(o, "status", json_string("error"));
        json_object_set_new(o, "error", json_string(msg[0] ? msg : ncsim_status_text(pst)));
        json_object_set_new(o, "exit_code", json_integer(ncsim_status_exit_code(pst)));
        json_object_set_new(root, "sweep", o);
        char *cfg = NULL;
        if (have_arch && ncsim_arch_to_json(a, &cfg) == NCSIM_OK) {
            json_error_t jerr;
            json_t *c = json_loads(cfg, 0, &jerr);
            if (c)
                json_object_set_new(root, "arch_config", c);
        }
        ncsim_free(cfg);
    }
    ncsim_sim_free(s);
    ncsim_arch_free(a);
    ncsim_status_t st;
    if (!root) {
        xp_errf(err, errlen, "out of memory");
        st = NCSIM_NOMEM;
    } else {
        st = write_point(root, path, err, errlen);
    }
    json_decref(root);
    free(path);
    if (st == NCSIM_OK) {
        *status = pst == NCSIM_OK ? SIM_SWEEP_POINT_OK : SIM_SWEEP_POINT_FAILED;
        if (pst != NCSIM_OK)
            xp_errf(err, errlen, "point %" PRIu64 ": %s", index, msg);
    }
    return st;
}

/* ---- many points: this process or forked workers ------------------------------------------ */

typedef struct progress {
    sim_sweep_progress_t mode;
    int tty;
    double t0, last;
    uint64_t total;
} progress_t;

static void progress_init(progress_t *p, sim_sweep_progress_t mode, uint64_t total)
{
    p->mode = mode;
    p->tty = isatty(STDERR_FILENO);
    p->t0 = p->last = now_seconds();
    p->total = total;
}

/* Progress as `ncsim run` shows it: only on a terminal unless asked (ALWAYS), redrawn a few
 * times a second there, one line every ~10 s otherwise, and a last line at the end. */
static void progress_show(progress_t *p, const sim_sweep_summary_t *s, int final)
{
    if (p->mode == SIM_SWEEP_PROGRESS_NEVER || (p->mode == SIM_SWEEP_PROGRESS_AUTO && !p->tty))
        return;
    double t = now_seconds();
    if (!final && t - p->last < (p->tty ? 0.25 : 10.0))
        return;
    p->last = t;
    uint64_t done = s->ran + s->skipped + s->lost;
    double rate = s->ran && t > p->t0 ? (double)s->ran / (t - p->t0) : 0.0;
    fprintf(stderr, "%ssweep: %" PRIu64 " of %" PRIu64 " points done (%" PRIu64 " skipped, %" PRIu64
                    " failed), %.1f s",
            p->tty ? "\r\033[K" : "", done, p->total, s->skipped, s->failed, t - p->t0);
    if (!final && rate > 0)
        fprintf(stderr, ", about %.0f s left", (double)(p->total - done) / rate);
    fputs(p->tty && !final ? "" : "\n", stderr);
}

static void count(sim_sweep_summary_t *s, ncsim_status_t st, sim_sweep_point_status_t o)
{
    if (st != NCSIM_OK)
        return;
    if (o == SIM_SWEEP_POINT_SKIPPED)
        s->skipped++;
    else {
        s->ran++;
        if (o == SIM_SWEEP_POINT_FAILED)
            s->failed++;
    }
}

static ncsim_status_t run_serial(sim_sweep_t *sw, uint64_t first, uint64_t last,
                                 const sim_sweep_run_options_t *opt, sim_sweep_summary_t *sum,
                                 progress_t *pr, char *err, size_t errlen)
{
    for (uint64_t i = first; i <= last; i++) {
        char e[8192];
        sim_sweep_point_status_t o;
        ncsim_status_t st = sim_sweep_run_point(sw, i, opt->out_dir, opt->force, &o, e, sizeof e);
        if (st != NCSIM_OK) {
            xp_errf(err, errlen, "%s", e);
            return st;
        }
        if (o == SIM_SWEEP_POINT_FAILED && opt->progress != SIM_SWEEP_PROGRESS_NEVER)
            fprintf(stderr, "%sncsim sweep: %s%s", pr->tty ? "\r\033[K" : "", e,
                    e[0] && e[strlen(e) - 1] == '\n' ? "" : "\n");
        count(sum, st, o);
        progress_show(pr, sum, 0);
    }
    return NCSIM_OK;
}

/* The sweep's points as tasks of the worker pool: a worker runs a point (writing its result
 * file, or printing why it failed) and sends back how recording it went. */
typedef struct point_result {
    int32_t status;  /* ncsim_status_t of recording the point */
    int32_t outcome; /* sim_sweep_point_status_t */
} point_result_t;

typedef struct sweep_pool {
    sim_sweep_t *sw;
    uint64_t first;
    const sim_sweep_run_options_t *opt;
    sim_sweep_summary_t *sum;
    progress_t *pr;
    ncsim_status_t st;
    char *err;
    size_t errlen;
} sweep_pool_t;

static void pool_point(void *ctx, uint64_t task, void *result)
{
    const sweep_pool_t *c = ctx;
    char err[8192];
    sim_sweep_point_status_t outcome;
    ncsim_status_t st = sim_sweep_run_point(c->sw, c->first + task, c->opt->out_dir, c->opt->force,
                                            &outcome, err, sizeof err);
    if (st != NCSIM_OK || outcome == SIM_SWEEP_POINT_FAILED)
        fprintf(stderr, "ncsim sweep: %s%s", err,
                err[0] && err[strlen(err) - 1] == '\n' ? "" : "\n");
    point_result_t r = {(int32_t)st, (int32_t)outcome};
    memcpy(result, &r, sizeof r);
}

static int pool_point_done(void *ctx, uint64_t task, const void *result)
{
    sweep_pool_t *c = ctx;
    point_result_t r;
    memcpy(&r, result, sizeof r);
    if (r.status != NCSIM_OK && c->st == NCSIM_OK) {
        c->st = (ncsim_status_t)r.status;
        xp_errf(c->err, c->errlen, "point %" PRIu64 " could not be recorded (see above)",
                 c->first + task);
    }
    count(c->sum, (ncsim_status_t)r.status, (sim_sweep_point_status_t)r.outcome);
    progress_show(c->pr, c->sum, 0);
    return c->st != NCSIM_OK; /* a point that cannot be recorded: stop handing out more */
}

static void pool_point_lost(void *ctx, uint64_t task, int wstatus)
{
    sweep_pool_t *c = ctx;
    c->sum->lost++;
    if (c->st != NCSIM_OK)
        return;
    c->st = NCSIM_INTERNAL;
    if (WIFSIGNALED(wstatus))
        xp_errf(c->err, c->errlen,
                 "the worker running point %" PRIu64 " died (signal %d); rerun the sweep to "
                 "redo it",
                 c->first + task, WTERMSIG(wstatus));
    else
        xp_errf(c->err, c->errlen,
                 "the worker running point %" PRIu64 " exited (status %d); rerun the sweep to "
                 "redo it",
                 c->first + task, WIFEXITED(wstatus) ? WEXITSTATUS(wstatus) : -1);
}

/* Points in `jobs` forked workers (explore/pool.h): each is a copy of this process, so the
 * assembled programs and loaded inputs are shared. */
static ncsim_status_t run_workers(sim_sweep_t *sw, uint64_t first, uint64_t last, unsigned jobs,
                                  const sim_sweep_run_options_t *opt, sim_sweep_summary_t *sum,
                                  progress_t *pr, char *err, size_t errlen)
{
    sweep_pool_t c = {sw, first, opt, sum, pr, NCSIM_OK, err, errlen};
    sim_pool_t pool = {jobs,       last - first + 1, sizeof(point_result_t), &c,
                       pool_point, pool_point_done,  pool_point_lost};
    char perr[512];
    uint64_t next = 0;
    ncsim_status_t st = sim_pool_run(&pool, &next, perr, sizeof perr);
    if (c.st != NCSIM_OK)
        return c.st; /* the first failure said, as it happened */
    if (st != NCSIM_OK && next && next <= last - first)
        xp_errf(err, errlen, "the workers stopped before point %" PRIu64, first + next);
    else if (st != NCSIM_OK)
        xp_errf(err, errlen, "%s", perr);
    return st;
}

static int make_dir(const char *dir, char *err, size_t errlen)
{
    if (mkdir(dir, 0777) == 0 || errno == EEXIST) {
        struct stat sb;
        if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode))
            return 0;
        xp_errf(err, errlen, "%s exists and is not a directory", dir);
        return -1;
    }
    xp_errf(err, errlen, "cannot create %s: %s", dir, strerror(errno));
    return -1;
}

ncsim_status_t sim_sweep_run(sim_sweep_t *sw, uint64_t first, uint64_t last,
                             const sim_sweep_run_options_t *opt, sim_sweep_summary_t *summary,
                             char *err, size_t errlen)
{
    memset(summary, 0, sizeof *summary);
    if (first > last || last >= sw->npoints) {
        xp_errf(err, errlen, "points %" PRIu64 "-%" PRIu64 " are not in the sweep (0-%" PRIu64 ")",
                 first, last, sw->npoints - 1);
        return NCSIM_USAGE;
    }
    if (make_dir(opt->out_dir, err, errlen))
        return NCSIM_IO;
    ncsim_status_t st = sim_sweep_prepare(sw, first, last, err, errlen);
    if (st != NCSIM_OK)
        return st;
    uint64_t n = last - first + 1;
    unsigned jobs = opt->jobs ? opt->jobs : 1;
    if (jobs > n)
        jobs = (unsigned)n;
    progress_t pr;
    progress_init(&pr, opt->progress, n);
    if (jobs <= 1)
        st = run_serial(sw, first, last, opt, summary, &pr, err, errlen);
    else
        st = run_workers(sw, first, last, jobs, opt, summary, &pr, err, errlen);
    summary->seconds = now_seconds() - pr.t0;
    progress_show(&pr, summary, 1);
    return st;
}

/* ---- merge -------------------------------------------------------------------------------- */

typedef struct strbuf {
    char *p;
    size_t len, cap;
    int failed;
} strbuf_t;

static void sb_add(strbuf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void sb_add(strbuf_t *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *p = realloc(b->p, cap);
        if (!p) {
            b->failed = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* A CSV field: quoted when it holds a comma, quote or line break (RFC 4180). */
static void sb_field(strbuf_t *b, const char *s)
{
    if (!strpbrk(s, ",\"\r\n")) {
        sb_add(b, "%s", s);
        return;
    }
    sb_add(b, "\"");
    for (const char *p = s; *p; p++)
        sb_add(b, *p == '"' ? "\"\"" : "%c", *p);
    sb_add(b, "\"");
}

static double jreal(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : 0.0;
}

static uint64_t jint(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

ncsim_status_t sim_sweep_merge(const sim_sweep_t *sw, const char *out_dir, const char *csv_path,
                               sim_sweep_merge_summary_t *summary, char *err, size_t errlen)
{
    memset(summary, 0, sizeof *summary);
    summary->points = sw->npoints;
    strbuf_t b = {0};
    strbuf_t missing = {0};
    for (size_t k = 0; k < sw->nparams; k++) {
        sb_field(&b, sw->params[k]);
        sb_add(&b, ",");
    }
    sb_add(&b, "total_ns,mfu");
    for (int e = 0; e < NCSIM_ENGINE_COUNT; e++)
        sb_add(&b, ",%s_util", ncsim_engine_name((ncsim_engine_t)e));
    sb_add(&b, ",dma_util,hbm_read_bytes,hbm_write_bytes,status\n");
    for (uint64_t i = 0; i < sw->npoints; i++) {
        char *path = point_path(out_dir, i);
        if (!path) {
            b.failed = 1;
            break;
        }
        json_t *root = load_point_file(path);
        json_t *s = root ? json_object_get(root, "sweep") : NULL;
        const char *why = NULL;
        if (!root)
            why = access(path, F_OK) == 0 ? "unreadable" : NULL;
        else if (!json_is_object(s) || !json_is_string(json_object_get(s, "fingerprint")) ||
                 strcmp(json_string_value(json_object_get(s, "fingerprint")), sw->fingerprint) ||
                 jint(s, "index") != i || !json_is_string(json_object_get(s, "status")))
            why = "stale: from another spec or program";
        if (!root || why) {
            if (summary->missing < 8)
                sb_add(&missing, "%s  point %" PRIu64 ": %s", summary->missing ? "\n" : "", i,
                       why ? why : "no result");
            summary->missing++;
            json_decref(root);
            free(path);
            continue;
        }
        free(path);
        const json_t *params = json_object_get(s, "params");
        for (size_t k = 0; k < sw->nparams; k++) {
            const json_t *v = json_object_get(params, sw->params[k]);
            sb_field(&b, json_is_string(v) ? json_string_value(v) : "");
            sb_add(&b, ",");
        }
        int ok = strcmp(json_string_value(json_object_get(s, "status")), "ok") == 0;
        const json_t *r = json_object_get(s, "result");
        if (ok && json_is_object(r)) {
            uint64_t ps = jint(r, "total_ps");
            sb_add(&b, "%" PRIu64 ".%03" PRIu64 ",%.6f", ps / 1000, ps % 1000, jreal(r, "mfu"));
            const json_t *u = json_object_get(r, "utilisation");
            for (int e = 0; e < NCSIM_ENGINE_COUNT; e++)
                sb_add(&b, ",%.6f", jreal(u, ncsim_engine_name((ncsim_engine_t)e)));
            sb_add(&b, ",%.6f,%" PRIu64 ",%" PRIu64 ",ok\n", jreal(u, "dma"),
                   jint(r, "hbm_read_bytes"), jint(r, "hbm_write_bytes"));
            summary->ok++;
        } else {
            /* empty total_ns, mfu, engine and DMA utilisation, HBM read and write */
            for (int f = 0; f < 2 + NCSIM_ENGINE_COUNT + 3; f++)
                sb_add(&b, ",");
            sb_add(&b, "error\n");
            summary->failed++;
        }
        json_decref(root);
    }
    ncsim_status_t st = NCSIM_OK;
    if (b.failed || missing.failed) {
        xp_errf(err, errlen, "out of memory");
        st = NCSIM_NOMEM;
    } else if (summary->missing) {
        xp_errf(err, errlen,
                 "%" PRIu64 " of %" PRIu64 " points have no result in %s:\n%s%s\n"
                 "run them (ncsim sweep SPEC --out DIR, or --index I), then merge",
                 summary->missing, sw->npoints, out_dir, missing.p ? missing.p : "",
                 summary->missing > 8 ? "\n  ..." : "");
        st = NCSIM_IO;
    } else if (ncsim_write_file(csv_path, b.p, b.len) != NCSIM_OK) {
        xp_errf(err, errlen, "cannot write %s: %s", csv_path, strerror(errno));
        st = NCSIM_IO;
    }
    free(b.p);
    free(missing.p);
    return st;
}

/* ---- Slurm -------------------------------------------------------------------------------- */

/* Where a value lands in the generated script. */
typedef enum {
    SLURM_SHELL,    /* one bash (and POSIX sh) word */
    SLURM_DIRECTIVE /* one argument of an "#SBATCH" line, as sbatch itself splits those */
} slurm_quote_t;

/*
 * The one quoting function of the Slurm script: every value that is not a constant of this
 * file goes through it. In the shell, a single-quoted word ('...' with each ' written '\''),
 * which bash and the /bin/sh that runs --wrap read the same way. On an #SBATCH line sbatch
 * has its own small parser (whitespace splits, a double or single quote toggles quoting, '#'
 * starts a comment, and a backslash takes the next byte as it is), so there every byte
 * outside a plain set is written behind a backslash. Neither form can carry a line break, so
 * the values are checked first (slurm_value_check) and a refused one never reaches here.
 */
static void sb_quote(strbuf_t *b, const char *s, slurm_quote_t where)
{
    if (where == SLURM_SHELL) {
        sb_add(b, "'");
        for (const char *p = s; *p; p++)
            sb_add(b, *p == '\'' ? "'\\''" : "%c", *p);
        sb_add(b, "'");
        return;
    }
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    strchr("/._-=:,+@%", c) != NULL;
        sb_add(b, plain ? "%c" : "\\%c", c);
    }
}

/*
 * 0 when VALUE can be written into the script, else -1 and a message naming it. A control
 * character (a line break above all) would end the quoted word and the line with it: a
 * newline in a folder name or an --sbatch option would add a command of its own.
 * `%` in the output folder: Slurm expands %j, %A... in --output file names and offers no
 * way to keep one literal while expanding the others.
 */
static int slurm_value_check(const char *value, const char *what, int in_output_pattern,
                             char *err, size_t errlen)
{
    for (const unsigned char *p = (const unsigned char *)value; *p; p++)
        if (*p < 0x20 || *p == 0x7f) {
            xp_errf(err, errlen,
                     "%s contains a control character (byte 0x%02x at offset %zu), which "
                     "cannot be quoted safely in a shell script: rename it",
                     what, *p, (size_t)((const char *)p - value));
            return -1;
        }
    if (in_output_pattern && strchr(value, '%')) {
        xp_errf(err, errlen,
                 "%s '%s' contains '%%', which Slurm would expand in the --output file "
                 "names (%%j, %%A...): choose a folder without it",
                 what, value);
        return -1;
    }
    return 0;
}

char *sim_sweep_slurm_script(const sim_sweep_t *sw, const sim_sweep_slurm_options_t *opt,
                             char *err, size_t errlen)
{
    char csv[PATH_MAX + 32];
    if (opt->csv_path)
        snprintf(csv, sizeof csv, "%s", opt->csv_path);
    else
        snprintf(csv, sizeof csv, "%s/results.csv", opt->out_dir);
    if (slurm_value_check(sw->spec_path, "the spec path", 0, err, errlen) ||
        slurm_value_check(opt->ncsim_path, "the ncsim path", 0, err, errlen) ||
        slurm_value_check(opt->out_dir, "the --out folder", 1, err, errlen) ||
        slurm_value_check(csv, "the --csv path", 0, err, errlen))
        return NULL;
    for (size_t i = 0; i < opt->nsbatch; i++) {
        char what[64];
        snprintf(what, sizeof what, "--sbatch option %zu", i + 1);
        if (slurm_value_check(opt->sbatch[i], what, 0, err, errlen))
            return NULL;
        if (opt->sbatch[i][0] != '-') {
            xp_errf(err, errlen,
                     "--sbatch '%s' is not an sbatch option: each --sbatch gives one option, "
                     "starting with '-' (e.g. --sbatch=--partition=cpu)",
                     opt->sbatch[i]);
            return NULL;
        }
    }
    uint64_t per = opt->points_per_task;
    if (!per)
        per = (sw->npoints + 999) / 1000;
    uint64_t tasks = (sw->npoints + per - 1) / per;
    strbuf_t b = {0};
    sb_add(&b, "#!/bin/bash\n");
    sb_add(&b, "# Slurm script for the ncsim sweep ");
    sb_quote(&b, sw->spec_path, SLURM_SHELL);
    sb_add(&b, "\n# (%" PRIu64 " points, %" PRIu64 " per array task; fingerprint %s).\n",
           sw->npoints, per, sw->fingerprint);
    sb_add(&b, "#\n"
               "#   bash THIS_SCRIPT     submit the array job, then a merge job that runs once\n"
               "#                        every task succeeded (--dependency=afterok)\n"
               "#   sbatch THIS_SCRIPT   submit only the array job; merge afterwards with\n"
               "#                        the command in merge_cmd below\n"
               "#\n"
               "# Each task writes OUT/point-I.json atomically and skips points already done,\n"
               "# so a failed or cancelled array can simply be submitted again.\n");
    /* the job names carry the spec's name (its file name): quoted like any other value */
    char *job = xp_strdup(sw->name);
    if (!job || slurm_value_check(job, "the spec's file name", 0, err, errlen)) {
        if (!job)
            xp_errf(err, errlen, "out of memory");
        free(job);
        return NULL;
    }
    sb_add(&b, "#SBATCH --job-name=ncsim-sweep-");
    sb_quote(&b, job, SLURM_DIRECTIVE);
    sb_add(&b, "\n#SBATCH --array=0-%" PRIu64 "\n", tasks - 1);
    sb_add(&b, "#SBATCH --ntasks=1\n#SBATCH --cpus-per-task=1\n");
    sb_add(&b, "#SBATCH --output=");
    sb_quote(&b, opt->out_dir, SLURM_DIRECTIVE);
    sb_add(&b, "/slurm-%%A_%%a.out\n");
    for (size_t i = 0; i < opt->nsbatch; i++) {
        sb_add(&b, "#SBATCH ");
        sb_quote(&b, opt->sbatch[i], SLURM_DIRECTIVE);
        sb_add(&b, "\n");
    }
    sb_add(&b, "set -euo pipefail\n");
    sb_add(&b, "ncsim=");
    sb_quote(&b, opt->ncsim_path, SLURM_SHELL);
    sb_add(&b, "\nspec=");
    sb_quote(&b, sw->spec_path, SLURM_SHELL);
    sb_add(&b, "\nout=");
    sb_quote(&b, opt->out_dir, SLURM_SHELL);
    sb_add(&b, "\ncsv=");
    sb_quote(&b, csv, SLURM_SHELL);
    sb_add(&b, "\npoints=%" PRIu64 "\nper_task=%" PRIu64 "\n", sw->npoints, per);
    /* the merge command is run by sbatch --wrap under /bin/sh: built here, each word quoted,
     * then quoted once more as the value of merge_cmd */
    strbuf_t m = {0};
    sb_add(&m, "exec ");
    sb_quote(&m, opt->ncsim_path, SLURM_SHELL);
    sb_add(&m, " sweep ");
    sb_quote(&m, sw->spec_path, SLURM_SHELL);
    sb_add(&m, " --merge --out ");
    sb_quote(&m, opt->out_dir, SLURM_SHELL);
    sb_add(&m, " --csv ");
    sb_quote(&m, csv, SLURM_SHELL);
    if (m.p) /* readable once quoted; the value (quoted twice) is what runs */
        sb_add(&b, "# merge_cmd: %s\n", m.p);
    sb_add(&b, "merge_cmd=");
    if (m.p)
        sb_quote(&b, m.p, SLURM_SHELL);
    b.failed |= m.failed;
    free(m.p);
    sb_add(&b, "\nif [ -z \"${SLURM_ARRAY_TASK_ID:-}\" ]; then\n");
    sb_add(&b, "  mkdir -p -- \"$out\"\n");
    sb_add(&b, "  array_job=$(sbatch --parsable -- \"$0\")\n");
    sb_add(&b, "  array_job=${array_job%%%%;*}\n");
    sb_add(&b, "  merge_job=$(sbatch --parsable --dependency=afterok:\"$array_job\" "
               "--job-name=");
    strbuf_t jn = {0};
    sb_add(&jn, "ncsim-merge-%s", job);
    if (jn.p)
        sb_quote(&b, jn.p, SLURM_SHELL);
    b.failed |= jn.failed;
    free(jn.p);
    sb_add(&b, " --ntasks=1 --output=\"$out/slurm-merge-%%j.out\"");
    for (size_t i = 0; i < opt->nsbatch; i++) {
        sb_add(&b, " ");
        sb_quote(&b, opt->sbatch[i], SLURM_SHELL);
    }
    sb_add(&b, " --wrap=\"$merge_cmd\")\n");
    sb_add(&b, "  merge_job=${merge_job%%%%;*}\n");
    sb_add(&b, "  echo \"array job $array_job (%" PRIu64 " tasks), merge job $merge_job: "
               "results in $csv\"\n",
           tasks);
    sb_add(&b, "  exit 0\n");
    sb_add(&b, "fi\n");
    sb_add(&b, "first=$((SLURM_ARRAY_TASK_ID * per_task))\n");
    sb_add(&b, "last=$((first + per_task - 1))\n");
    sb_add(&b, "if [ \"$last\" -ge \"$points\" ]; then last=$((points - 1)); fi\n");
    sb_add(&b, "exec \"$ncsim\" sweep \"$spec\" --out \"$out\" --index \"$first-$last\" "
               "--progress never\n");
    free(job);
    if (b.failed) {
        free(b.p);
        xp_errf(err, errlen, "out of memory");
        return NULL;
    }
    return b.p;
}
