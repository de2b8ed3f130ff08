/*
 * arch.c -- architecture configs: strict JSON parsing (libjansson), presets compiled into the
 * library, "base" inheritance, --set overrides, validation and a deterministic JSON dump.
 *
 * Every key is described once, in ARCH_KEY_MAP below; parsing, --set, the dump, the key
 * list and the "sources" check all walk that table (docs/architecture.md explains each key).
 */
#include "arch.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch_internal.h"
#include "text.h"

/* The partition dim of every view is at most 128 (ISA.md 5; isa_view_t.pstart is 8 bits). */
#define ARCH_MAX_PARTITIONS 128u
/* The ISA addresses DMA queues 0..15 (ISA.md 1). */
#define ARCH_MAX_DMA_QUEUES 16u
/* Longest chain of "base" references; deeper means a cycle or a mistake. */
#define ARCH_MAX_BASE_DEPTH 8

typedef enum arch_key_type {
    KT_U32,
    KT_U64,
    KT_F64,
    KT_TOPOLOGY,
    KT_CC_ALGORITHM,
    KT_CC_RUNTIME
} arch_key_type_t;

/*
 * XX(section, key, type, member) -- every config key, in the order of the dump. The JSON
 * names are the struct field names; "system" holds the top-level counts.
 */
#define ARCH_KEY_MAP(XX)                                                                           \
    XX(system, chips, U32, chips)                                                                  \
    XX(system, cores_per_chip, U32, cores_per_chip)                                                \
    XX(system, semaphores, U32, semaphores)                                                        \
    XX(pe, clock_ghz, F64, pe.clock_ghz)                                                           \
    XX(pe, rows, U32, pe.rows)                                                                     \
    XX(pe, cols, U32, pe.cols)                                                                     \
    XX(pe, fp32_factor, F64, pe.fp32_factor)                                                       \
    XX(pe, fp8_factor, F64, pe.fp8_factor)                                                         \
    XX(pe, mm_init_latency_cycles, F64, pe.mm_init_latency_cycles)                                 \
    XX(pe, ldweights_speedup, F64, pe.ldweights_speedup)                                           \
    XX(pe, latency_cycles, F64, pe.latency_cycles)                                                 \
    XX(pe, max_moving_free, F64, pe.max_moving_free)                                               \
    XX(pe, throttle_factor, F64, pe.throttle_factor)                                               \
    ARCH_ENGINE_KEYS(XX, act)                                                                      \
    ARCH_ENGINE_KEYS(XX, dve)                                                                      \
    ARCH_ENGINE_KEYS(XX, pool)                                                                     \
    XX(sp, clock_ghz, F64, sp.clock_ghz)                                                           \
    XX(sp, issue_cycles, F64, sp.issue_cycles)                                                     \
    XX(costs, min_ii_dynamic_cycles, F64, costs.min_ii_dynamic_cycles)                             \
    XX(costs, gpsimd_start_cycles, F64, costs.gpsimd_start_cycles)                                 \
    XX(costs, stride_penalty_bytes, F64, costs.stride_penalty_bytes)                               \
    XX(costs, stride_penalty_factor, F64, costs.stride_penalty_factor)                             \
    XX(costs, act_reduce_cycles, F64, costs.act_reduce_cycles)                                     \
    XX(costs, dve_reciprocal_factor, F64, costs.dve_reciprocal_factor)                             \
    XX(costs, dve_tensor_tensor_factor, F64, costs.dve_tensor_tensor_factor)                       \
    XX(costs, bn_aggr_factor, F64, costs.bn_aggr_factor)                                           \
    XX(costs, semaphore_latency_ns, F64, costs.semaphore_latency_ns)                               \
    XX(sbuf, partitions, U32, sbuf.partitions)                                                     \
    XX(sbuf, bytes_per_partition, U64, sbuf.bytes_per_partition)                                   \
    XX(psum, partitions, U32, psum.partitions)                                                     \
    XX(psum, bytes_per_partition, U64, psum.bytes_per_partition)                                   \
    XX(psum, banks, U32, psum.banks)                                                               \
    XX(hbm, size_bytes, U64, hbm.size_bytes)                                                       \
    XX(hbm, bandwidth_gbps, F64, hbm.bandwidth_gbps)                                               \
    XX(hbm, latency_ns, F64, hbm.latency_ns)                                                       \
    XX(hbm, channels, U32, hbm.channels)                                                           \
    XX(hbm, interleave_bytes, U64, hbm.interleave_bytes)                                           \
    XX(dma, engines, U32, dma.engines)                                                             \
    XX(dma, queues, U32, dma.queues)                                                               \
    XX(dma, engine_bandwidth_gbps, F64, dma.engine_bandwidth_gbps)                                 \
    XX(dma, trigger_latency_ns, F64, dma.trigger_latency_ns)                                       \
    XX(dma, descriptor_ns, F64, dma.descriptor_ns)                                                 \
    XX(dma, queue_round_robin, U32, dma.queue_round_robin)                                         \
    XX(dma, piece_overhead_ns, F64, dma.piece_overhead_ns)                                         \
    XX(dma, min_efficient_bytes, F64, dma.min_efficient_bytes)                                     \
    XX(link, topology, TOPOLOGY, link.topology)                                                    \
    XX(link, torus_x, U32, link.torus_x)                                                           \
    XX(link, torus_y, U32, link.torus_y)                                                           \
    XX(link, links_per_chip, U32, link.links_per_chip)                                             \
    XX(link, bandwidth_gbps, F64, link.bandwidth_gbps)                                             \
    XX(link, hop_latency_ns, F64, link.hop_latency_ns)                                             \
    XX(efa, instances, U32, efa.instances)                                                         \
    XX(efa, bandwidth_gbits, F64, efa.bandwidth_gbits)                                             \
    XX(efa, latency_ns, F64, efa.latency_ns)                                                       \
    XX(cc, runtime, CC_RUNTIME, cc.runtime)                                                        \
    XX(cc, algorithm, CC_ALGORITHM, cc.algorithm)                                                  \
    XX(cc, inter_algorithm, CC_ALGORITHM, cc.inter_algorithm)                                      \
    XX(cc, mesh_max_bytes, U64, cc.mesh_max_bytes)                                                 \
    XX(cc, rdh_max_bytes, U64, cc.rdh_max_bytes)                                                   \
    XX(cc, inter_mesh_max_bytes, U64, cc.inter_mesh_max_bytes)                                     \
    XX(cc, inter_mesh_max_ranks, U32, cc.inter_mesh_max_ranks)                                     \
    XX(cc, inter_rdh_max_bytes, U64, cc.inter_rdh_max_bytes)                                       \
    XX(cc, flat_min_bytes, U64, cc.flat_min_bytes)                                                 \
    XX(cc, fixed_ns, F64, cc.fixed_ns)                                                             \
    XX(cc, min_latency_ns, F64, cc.min_latency_ns)                                                 \
    XX(cc, step_latency_ns, F64, cc.step_latency_ns)                                               \
    XX(cc, rank_bandwidth_gbps, F64, cc.rank_bandwidth_gbps)                                       \
    XX(cc, packet_bytes, U64, cc.packet_bytes)

/* The four keys of an mdl_engine_cfg_t section (act, dve, pool). */
#define ARCH_ENGINE_KEYS(XX, eng)                                                                  \
    XX(eng, clock_ghz, F64, eng.clock_ghz)                                                         \
    XX(eng, min_ii_cycles, F64, eng.min_ii_cycles)                                                 \
    XX(eng, latency_cycles, F64, eng.latency_cycles)                                               \
    XX(eng, static_overhead_cycles, F64, eng.static_overhead_cycles)

/* The C type behind each key type, checked at compile time against every struct member. */
#define ARCH_CTYPE_U32 uint32_t
#define ARCH_CTYPE_U64 uint64_t
#define ARCH_CTYPE_F64 double
#define ARCH_CTYPE_TOPOLOGY mdl_topology_t
#define ARCH_CTYPE_CC_ALGORITHM mdl_cc_algorithm_t
#define ARCH_CTYPE_CC_RUNTIME mdl_cc_runtime_t
#define XX(sec, key, type, member)                                                                 \
    _Static_assert(_Generic(((mdl_arch_t *)0)->member, ARCH_CTYPE_##type : 1, default : 0),        \
                   "type of mdl_arch_t." #member " does not match ARCH_KEY_MAP");
ARCH_KEY_MAP(XX)
#undef XX

typedef struct arch_key {
    const char *section;
    const char *key;
    const char *path; /* "section.key" */
    arch_key_type_t type;
    size_t offset;
} arch_key_t;

static const arch_key_t arch_keys[] = {
#define XX(sec, key, type, member)                                                                 \
    {#sec, #key, #sec "." #key, KT_##type, offsetof(mdl_arch_t, member)},
    ARCH_KEY_MAP(XX)
#undef XX
};

#define ARCH_NKEYS (sizeof arch_keys / sizeof arch_keys[0])

static const char *const topology_names[] = {"ring", "torus2d", "full"};
static const char *const cc_runtime_names[] = {"sdk2.10", "current"};
static const char *const cc_algorithm_names[] = {"auto",      "ring", "mesh",
                                                 "kangaring", "rdh",  "flat_ring"};

/* ---- Small helpers ------------------------------------------------------------------------ */

static const arch_key_t *find_key(const char *section, const char *key)
{
    for (size_t i = 0; i < ARCH_NKEYS; i++)
        if (strcmp(arch_keys[i].section, section) == 0 && strcmp(arch_keys[i].key, key) == 0)
            return &arch_keys[i];
    return NULL;
}

static const arch_key_t *find_path(const char *path)
{
    for (size_t i = 0; i < ARCH_NKEYS; i++)
        if (strcmp(arch_keys[i].path, path) == 0)
            return &arch_keys[i];
    return NULL;
}

static bool is_section(const char *name)
{
    for (size_t i = 0; i < ARCH_NKEYS; i++)
        if (strcmp(arch_keys[i].section, name) == 0)
            return true;
    return false;
}

static void *field(mdl_arch_t *a, const arch_key_t *k)
{
    return (char *)a + k->offset;
}

static const void *cfield(const mdl_arch_t *a, const arch_key_t *k)
{
    return (const char *)a + k->offset;
}

/* Enum names of a key, for parsing and printing. */
static const char *const *enum_names(arch_key_type_t t, size_t *count)
{
    if (t == KT_TOPOLOGY) {
        *count = sizeof topology_names / sizeof topology_names[0];
        return topology_names;
    }
    if (t == KT_CC_RUNTIME) {
        *count = sizeof cc_runtime_names / sizeof cc_runtime_names[0];
        return cc_runtime_names;
    }
    *count = sizeof cc_algorithm_names / sizeof cc_algorithm_names[0];
    return cc_algorithm_names;
}

/* "a", "b" or "c" -- for messages that list the allowed enum values. */
static void enum_list(arch_key_type_t t, char *buf, size_t len)
{
    size_t n;
    const char *const *names = enum_names(t, &n);
    buf[0] = '\0';
    for (size_t i = 0; i < n; i++) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, "%s\"%s\"", i == 0 ? "" : (i + 1 == n ? " or " : ", "),
                 names[i]);
    }
}

static int enum_lookup(arch_key_type_t t, const char *s)
{
    size_t n;
    const char *const *names = enum_names(t, &n);
    for (size_t i = 0; i < n; i++)
        if (strcmp(names[i], s) == 0)
            return (int)i;
    return -1;
}

static void store_enum(mdl_arch_t *a, const arch_key_t *k, int v)
{
    if (k->type == KT_TOPOLOGY)
        *(mdl_topology_t *)field(a, k) = (mdl_topology_t)v;
    else if (k->type == KT_CC_RUNTIME)
        *(mdl_cc_runtime_t *)field(a, k) = (mdl_cc_runtime_t)v;
    else
        *(mdl_cc_algorithm_t *)field(a, k) = (mdl_cc_algorithm_t)v;
}

static int load_enum(const mdl_arch_t *a, const arch_key_t *k)
{
    if (k->type == KT_TOPOLOGY)
        return (int)*(const mdl_topology_t *)cfield(a, k);
    if (k->type == KT_CC_RUNTIME)
        return (int)*(const mdl_cc_runtime_t *)cfield(a, k);
    return (int)*(const mdl_cc_algorithm_t *)cfield(a, k);
}

/*
 * Shortest decimal form of x that strtod reads back as exactly x ("%.17g" always does, but
 * "2.8" reads better than "2.7999999999999998"), written without an exponent when the
 * magnitude allows (1200.0, not 1.2e+03). Integral values keep a ".0" so the dump shows which
 * keys are real-valued.
 */
static void format_double(double x, char *buf, size_t len)
{
    if (!isfinite(x)) {
        snprintf(buf, len, "null"); /* not representable in JSON; validate rejects it */
        return;
    }
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(buf, len, "%.*g", prec, x);
        if (strtod(buf, NULL) == x)
            break;
    }
    /* %g uses an exponent when it is < -4 or >= the precision; widen the precision to avoid
     * that for everyday magnitudes (more digits still read back as x). */
    char sci[32];
    snprintf(sci, sizeof sci, "%.16e", x);
    const char *e = strchr(sci, 'e');
    int exponent = e ? atoi(e + 1) : 0;
    if (x != 0 && exponent >= prec && exponent < 17)
        prec = exponent + 1;
    snprintf(buf, len, "%.*g", prec, x);
    if (!strpbrk(buf, ".eE")) {
        size_t used = strlen(buf);
        snprintf(buf + used, len - used, ".0");
    }
}

static void format_value(const mdl_arch_t *a, const arch_key_t *k, char *buf, size_t len)
{
    switch (k->type) {
    case KT_U32:
        snprintf(buf, len, "%u", (unsigned)*(const uint32_t *)cfield(a, k));
        break;
    case KT_U64:
        snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)cfield(a, k));
        break;
    case KT_F64:
        format_double(*(const double *)cfield(a, k), buf, len);
        break;
    case KT_TOPOLOGY:
    case KT_CC_ALGORITHM:
    case KT_CC_RUNTIME: {
        size_t n;
        const char *const *names = enum_names(k->type, &n);
        int v = load_enum(a, k);
        snprintf(buf, len, "%s", (v >= 0 && (size_t)v < n) ? names[v] : "?");
        break;
    }
    }
}

static const char *type_description(arch_key_type_t t)
{
    switch (t) {
    case KT_U32:
        return "an integer from 0 to 4294967295";
    case KT_U64:
        return "a non-negative integer";
    case KT_F64:
        return "a number";
    case KT_TOPOLOGY:
    case KT_CC_ALGORITHM:
    case KT_CC_RUNTIME:
        return "a string";
    }
    return "?";
}

/* ---- Setting one value -------------------------------------------------------------------- */

/* Store an integer of key k (range-checked). Returns 0, or -1 with a message. */
static int store_integer(mdl_arch_t *a, const arch_key_t *k, unsigned long long v,
                         const char *where, char *err, size_t errlen)
{
    if (k->type == KT_U32) {
        if (v > UINT32_MAX) {
            mdl_errf(err, errlen, "%s'%s' = %llu is too large (at most 4294967295)", where, k->path,
                     v);
            return -1;
        }
        *(uint32_t *)field(a, k) = (uint32_t)v;
    } else {
        *(uint64_t *)field(a, k) = (uint64_t)v;
    }
    return 0;
}

/* Set key k from a JSON value. `where` prefixes messages ("FILE: "). */
static int set_from_json(mdl_arch_t *a, const arch_key_t *k, json_t *v, const char *where,
                         char *err, size_t errlen)
{
    switch (k->type) {
    case KT_U32:
    case KT_U64: {
        if (!json_is_integer(v)) {
            mdl_errf(err, errlen, "%s'%s' must be %s", where, k->path, type_description(k->type));
            return -1;
        }
        json_int_t i = json_integer_value(v);
        if (i < 0) {
            mdl_errf(err, errlen, "%s'%s' must be %s, not %lld", where, k->path,
                     type_description(k->type), (long long)i);
            return -1;
        }
        return store_integer(a, k, (unsigned long long)i, where, err, errlen);
    }
    case KT_F64:
        if (!json_is_number(v)) {
            mdl_errf(err, errlen, "%s'%s' must be a number", where, k->path);
            return -1;
        }
        *(double *)field(a, k) = json_number_value(v);
        return 0;
    case KT_TOPOLOGY:
    case KT_CC_ALGORITHM:
    case KT_CC_RUNTIME: {
        char allowed[128];
        enum_list(k->type, allowed, sizeof allowed);
        int e = json_is_string(v) ? enum_lookup(k->type, json_string_value(v)) : -1;
        if (e < 0) {
            if (json_is_string(v))
                mdl_errf(err, errlen, "%s'%s' = \"%s\" is not one of %s", where, k->path,
                         json_string_value(v), allowed);
            else
                mdl_errf(err, errlen, "%s'%s' must be a string: %s", where, k->path, allowed);
            return -1;
        }
        store_enum(a, k, e);
        return 0;
    }
    }
    return -1;
}

/* Set key k from --set text: plain decimal integers, C floating-point numbers, enum names. */
static int set_from_text(mdl_arch_t *a, const arch_key_t *k, const char *text, char *err,
                         size_t errlen)
{
    if (text[0] == '\0') {
        mdl_errf(err, errlen, "--set %s=: missing value", k->path);
        return -1;
    }
    switch (k->type) {
    case KT_U32:
    case KT_U64: {
        for (const char *p = text; *p; p++) {
            if (*p < '0' || *p > '9') {
                mdl_errf(err, errlen, "--set %s=%s: value must be %s", k->path, text,
                         type_description(k->type));
                return -1;
            }
        }
        errno = 0;
        unsigned long long v = strtoull(text, NULL, 10);
        if (errno == ERANGE) {
            mdl_errf(err, errlen, "--set %s=%s: value is too large", k->path, text);
            return -1;
        }
        return store_integer(a, k, v, "--set ", err, errlen);
    }
    case KT_F64: {
        char *end = NULL;
        errno = 0;
        double v = strtod(text, &end);
        if (end == text || *end != '\0' || text[0] == ' ' || text[0] == '\t' || !isfinite(v) ||
            errno == ERANGE) {
            mdl_errf(err, errlen, "--set %s=%s: value must be a finite number", k->path, text);
            return -1;
        }
        *(double *)field(a, k) = v;
        return 0;
    }
    case KT_TOPOLOGY:
    case KT_CC_ALGORITHM:
    case KT_CC_RUNTIME: {
        int e = enum_lookup(k->type, text);
        if (e < 0) {
            char allowed[128];
            enum_list(k->type, allowed, sizeof allowed);
            mdl_errf(err, errlen, "--set %s=%s: value must be %s", k->path, text, allowed);
            return -1;
        }
        store_enum(a, k, e);
        return 0;
    }
    }
    return -1;
}

ncsim_status_t mdl_arch_set(mdl_arch_t *arch, const char *assignment, char *err, size_t errlen)
{
    const char *eq = assignment ? strchr(assignment, '=') : NULL;
    if (!eq) {
        mdl_errf(err, errlen, "--set %s: expected SECTION.KEY=VALUE",
                 assignment ? assignment : "(null)");
        return NCSIM_USAGE;
    }
    char path[128];
    size_t n = (size_t)(eq - assignment);
    if (n >= sizeof path)
        n = sizeof path - 1;
    memcpy(path, assignment, n);
    path[n] = '\0';
    const arch_key_t *k = find_path(path);
    if (!k) {
        mdl_errf(err, errlen,
                 "--set %s: unknown key '%s' (keys are SECTION.KEY as printed by `ncsim arch "
                 "trn1`, e.g. hbm.bandwidth_gbps)",
                 assignment, path);
        return NCSIM_USAGE;
    }
    return set_from_text(arch, k, eq + 1, err, errlen) == 0 ? NCSIM_OK : NCSIM_USAGE;
}

ncsim_status_t mdl_arch_get(const mdl_arch_t *arch, const char *key, char *buf, size_t buflen)
{
    const arch_key_t *k = key ? find_path(key) : NULL;
    if (!k || !buf || buflen == 0)
        return NCSIM_USAGE;
    format_value(arch, k, buf, buflen);
    return NCSIM_OK;
}

size_t mdl_arch_key_count(void)
{
    return ARCH_NKEYS;
}

const char *mdl_arch_key_name(size_t index)
{
    return index < ARCH_NKEYS ? arch_keys[index].path : NULL;
}

/* ---- Loading -------------------------------------------------------------------------------- */

/* Where a config text came from, for messages and for the preset rules. */
typedef struct arch_source {
    char display[1024]; /* file path, or "models/presets/NAME.json (built-in)" */
    char dir[1024];     /* directory of a file, for relative "base" paths; "" if built-in */
    char stem[64];      /* file name without directory and ".json" */
    bool is_preset;     /* found by name: every key it sets must name its source */
} arch_source_t;

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool is_path(const char *name)
{
    return strchr(name, '/') != NULL || ends_with(name, ".json");
}

static void fill_source(arch_source_t *src, const char *path, bool is_preset)
{
    snprintf(src->display, sizeof src->display, "%s", path);
    const char *slash = strrchr(path, '/');
    if (slash) {
        int dirlen = (int)(slash - path);
        snprintf(src->dir, sizeof src->dir, "%.*s", dirlen == 0 ? 1 : dirlen, path);
    } else {
        snprintf(src->dir, sizeof src->dir, ".");
    }
    const char *base = slash ? slash + 1 : path;
    size_t len = strlen(base);
    if (ends_with(base, ".json"))
        len -= 5;
    if (len >= sizeof src->stem)
        len = sizeof src->stem - 1;
    memcpy(src->stem, base, len);
    src->stem[len] = '\0';
    src->is_preset = is_preset;
}

/* Read a whole file. NCSIM_IO with a message when it cannot be read. */
/* A config is a few KiB; bigger inputs are refused rather than read until memory runs out. */
#define MDL_ARCH_MAX_FILE_BYTES (16 << 20)

static ncsim_status_t read_file(const char *path, char **text, size_t *len, char *err,
                                size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        mdl_errf(err, errlen, "cannot open architecture config '%s': %s", path, strerror(errno));
        return NCSIM_IO;
    }
    size_t cap = 16384, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap)
            break;
        if (cap >= MDL_ARCH_MAX_FILE_BYTES) { /* /dev/zero, a mistaken path: not a config */
            fclose(f);
            free(buf);
            mdl_errf(err, errlen,
                     "architecture config '%s' is larger than %d MiB: not a "
                     "config file",
                     path, MDL_ARCH_MAX_FILE_BYTES >> 20);
            return NCSIM_IO;
        }
        char *bigger = realloc(buf, cap * 2);
        if (!bigger) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = bigger;
        cap *= 2;
    }
    int failed = ferror(f), saved_errno = errno;
    fclose(f);
    if (!buf) {
        mdl_errf(err, errlen, "%s: out of memory", path);
        return NCSIM_NOMEM;
    }
    if (failed) {
        free(buf);
        mdl_errf(err, errlen, "cannot read architecture config '%s': %s", path,
                 strerror(saved_errno));
        return NCSIM_IO;
    }
    *text = buf;
    *len = n;
    return NCSIM_OK;
}

static ncsim_status_t load_config(const char *name, const arch_source_t *from, int depth,
                                  mdl_arch_t *out, char *err, size_t errlen);

static int copy_string(char *dst, size_t cap, json_t *v, const char *what, const arch_source_t *src,
                       char *err, size_t errlen)
{
    if (!json_is_string(v)) {
        mdl_errf(err, errlen, "%s: '%s' must be a string", src->display, what);
        return -1;
    }
    const char *s = json_string_value(v);
    if (strlen(s) >= cap) {
        mdl_errf(err, errlen, "%s: '%s' is longer than %zu characters", src->display, what,
                 cap - 1);
        return -1;
    }
    snprintf(dst, cap, "%s", s);
    return 0;
}

/*
 * Apply a parsed config object to `out`. With "base", `out` starts as the base config and the
 * file may give any subset of keys; without, every key is required. A preset must name the
 * source of every key it sets in "sources", and name no other key there.
 */
static ncsim_status_t apply_config(json_t *root, const arch_source_t *src, int depth,
                                   mdl_arch_t *out, char *err, size_t errlen)
{
    char where[1100];
    snprintf(where, sizeof where, "%s: ", src->display);
    if (!json_is_object(root)) {
        mdl_errf(err, errlen, "%s: the top level must be a JSON object", src->display);
        return NCSIM_USAGE;
    }

    json_t *base = json_object_get(root, "base");
    if (base) {
        if (!json_is_string(base)) {
            mdl_errf(err, errlen, "%s: 'base' must be a string (a preset name or a file path)",
                     src->display);
            return NCSIM_USAGE;
        }
        if (depth >= ARCH_MAX_BASE_DEPTH) {
            mdl_errf(err, errlen, "%s: 'base' chain deeper than %d (is there a cycle?)",
                     src->display, ARCH_MAX_BASE_DEPTH);
            return NCSIM_USAGE;
        }
        char inner[2048];
        ncsim_status_t st =
            load_config(json_string_value(base), src, depth + 1, out, inner, sizeof inner);
        if (st != NCSIM_OK) {
            mdl_errf(err, errlen, "%s: in base '%s': %s", src->display, json_string_value(base),
                     inner);
            return st;
        }
    } else {
        memset(out, 0, sizeof *out);
    }

    bool given[ARCH_NKEYS] = {false};
    bool has_name = false, has_description = false;
    const char *key;
    json_t *value;
    json_object_foreach(root, key, value)
    {
        if (strcmp(key, "base") == 0 || strcmp(key, "sources") == 0)
            continue;
        if (strcmp(key, "name") == 0) {
            if (copy_string(out->name, sizeof out->name, value, "name", src, err, errlen))
                return NCSIM_USAGE;
            if (out->name[0] == '\0') {
                mdl_errf(err, errlen, "%s: 'name' must not be empty", src->display);
                return NCSIM_USAGE;
            }
            has_name = true;
            continue;
        }
        if (strcmp(key, "description") == 0) {
            if (copy_string(out->description, sizeof out->description, value, "description", src,
                            err, errlen))
                return NCSIM_USAGE;
            has_description = true;
            continue;
        }
        if (!is_section(key)) {
            mdl_errf(err, errlen,
                     "%s: unknown section '%s' (sections: system pe act dve pool sp costs sbuf "
                     "psum hbm dma link efa cc; also name, description, base, sources)",
                     src->display, key);
            return NCSIM_USAGE;
        }
        if (!json_is_object(value)) {
            mdl_errf(err, errlen, "%s: section '%s' must be an object", src->display, key);
            return NCSIM_USAGE;
        }
        const char *sub;
        json_t *v;
        json_object_foreach(value, sub, v)
        {
            const arch_key_t *k = find_key(key, sub);
            if (!k) {
                mdl_errf(err, errlen, "%s: unknown key '%s.%s'", src->display, key, sub);
                return NCSIM_USAGE;
            }
            if (set_from_json(out, k, v, where, err, errlen))
                return NCSIM_USAGE;
            given[k - arch_keys] = true;
        }
    }

    if (!base) {
        if (!has_name) {
            mdl_errf(err, errlen, "%s: missing key 'name'", src->display);
            return NCSIM_USAGE;
        }
        if (!has_description) {
            mdl_errf(err, errlen, "%s: missing key 'description'", src->display);
            return NCSIM_USAGE;
        }
        for (size_t i = 0; i < ARCH_NKEYS; i++) {
            if (!given[i]) {
                mdl_errf(err, errlen,
                         "%s: missing key '%s' (a config without \"base\" gives every key)",
                         src->display, arch_keys[i].path);
                return NCSIM_USAGE;
            }
        }
    } else if (!has_name) {
        snprintf(out->name, sizeof out->name, "%s", src->stem);
    }

    /* "sources": optional in user files, but what is there must be well-formed. */
    bool sourced[ARCH_NKEYS] = {false};
    json_t *sources = json_object_get(root, "sources");
    if (sources) {
        if (!json_is_object(sources)) {
            mdl_errf(err, errlen, "%s: 'sources' must be an object of \"section.key\": \"why\"",
                     src->display);
            return NCSIM_USAGE;
        }
        json_object_foreach(sources, key, value)
        {
            const arch_key_t *k = find_path(key);
            if (!k) {
                mdl_errf(err, errlen, "%s: sources: unknown key '%s'", src->display, key);
                return NCSIM_USAGE;
            }
            if (!json_is_string(value) || json_string_length(value) == 0) {
                mdl_errf(err, errlen, "%s: sources: '%s' must be a non-empty string", src->display,
                         key);
                return NCSIM_USAGE;
            }
            sourced[k - arch_keys] = true;
        }
    }
    if (src->is_preset) {
        for (size_t i = 0; i < ARCH_NKEYS; i++) {
            if (given[i] && !sourced[i]) {
                mdl_errf(err, errlen,
                         "%s: preset key '%s' has no entry in \"sources\" (every preset number "
                         "names its source)",
                         src->display, arch_keys[i].path);
                return NCSIM_USAGE;
            }
            if (sourced[i] && !given[i]) {
                mdl_errf(err, errlen, "%s: sources names '%s' but this file does not set it",
                         src->display, arch_keys[i].path);
                return NCSIM_USAGE;
            }
        }
    }
    return NCSIM_OK;
}

static ncsim_status_t parse_and_apply(const char *text, size_t len, const arch_source_t *src,
                                      int depth, mdl_arch_t *out, char *err, size_t errlen)
{
    json_error_t jerr;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) {
        mdl_errf(err, errlen, "%s:%d:%d: %s", src->display, jerr.line, jerr.column, jerr.text);
        return NCSIM_USAGE;
    }
    ncsim_status_t st = apply_config(root, src, depth, out, err, errlen);
    json_decref(root);
    return st;
}

static bool valid_preset_name(const char *name)
{
    if (name[0] == '\0' || name[0] == '.')
        return false;
    for (const char *p = name; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.'))
            return false;
    }
    return strlen(name) < 64;
}

/*
 * Built-in presets, parsed once per process. Parsing one (jansson, then every key checked and
 * every source) was over half of creating a simulator for a small kernel through the library
 * (about 0.3 ms of 1.6 ms per test case): the texts are compiled in, so a preset named at
 * the top level resolves to the same config every time, unless NCSIM_PRESET_DIR can redirect
 * it or a base it names (then nothing is kept or used). Lookups of a preset as the base of
 * another config are parsed as before (their depth counts towards the chain limit).
 */
static pthread_mutex_t builtin_mu = PTHREAD_MUTEX_INITIALIZER;
static mdl_arch_t *builtin_parsed[64]; /* by index in mdl_preset_texts */

/* The kept config of built-in preset i (load_config decides when one may be used) */
static bool builtin_cached(size_t i, mdl_arch_t *out)
{
    pthread_mutex_lock(&builtin_mu);
    bool hit = builtin_parsed[i] != NULL;
    if (hit)
        *out = *builtin_parsed[i];
    pthread_mutex_unlock(&builtin_mu);
    return hit;
}

static void builtin_keep(size_t i, const mdl_arch_t *a)
{
    mdl_arch_t *copy = malloc(sizeof *copy); /* kept for the life of the process */
    if (!copy)
        return; /* parsed again next time */
    *copy = *a;
    pthread_mutex_lock(&builtin_mu);
    if (!builtin_parsed[i]) {
        builtin_parsed[i] = copy;
        copy = NULL;
    }
    pthread_mutex_unlock(&builtin_mu);
    free(copy);
}

/* Load the config file at `path` (a preset's file when is_preset) into `out`. */
static ncsim_status_t load_file(const char *path, bool is_preset, int depth, mdl_arch_t *out,
                                char *err, size_t errlen)
{
    arch_source_t src;
    memset(&src, 0, sizeof src);
    fill_source(&src, path, is_preset);
    char *text = NULL;
    size_t len = 0;
    ncsim_status_t st = read_file(path, &text, &len, err, errlen);
    if (st != NCSIM_OK)
        return st;
    st = parse_and_apply(text, len, &src, depth, out, err, errlen);
    free(text);
    return st;
}

/*
 * Resolve `name` (a preset name or a file path; a relative "base" path is relative to the
 * directory of the file that names it) and load it into `out`.
 */
static ncsim_status_t load_config(const char *name, const arch_source_t *from, int depth,
                                  mdl_arch_t *out, char *err, size_t errlen)
{
    arch_source_t src;
    memset(&src, 0, sizeof src);
    ncsim_status_t st;

    if (is_path(name)) {
        char path[2048];
        if (from && from->dir[0] && name[0] != '/')
            snprintf(path, sizeof path, "%s/%s", from->dir, name);
        else
            snprintf(path, sizeof path, "%s", name);
        return load_file(path, false, depth, out, err, errlen);
    }

    if (!valid_preset_name(name)) {
        mdl_errf(err, errlen, "invalid architecture name '%s'", name);
        return NCSIM_USAGE;
    }
    const char *dir = mdl_arch_preset_dir();
    if (dir) {
        char path[2048];
        snprintf(path, sizeof path, "%s/%s.json", dir, name);
        FILE *probe = fopen(path, "rb");
        if (probe) {
            fclose(probe);
            return load_file(path, true, depth, out, err, errlen);
        }
    }
    for (const mdl_preset_text_t *p = mdl_preset_texts; p->name; p++) {
        if (strcmp(p->name, name) == 0) {
            const size_t i = (size_t)(p - mdl_preset_texts);
            /* at the top level, and no directory that could redirect it or a base it names */
            const bool kept =
                depth == 0 && !dir && i < sizeof builtin_parsed / sizeof builtin_parsed[0];
            if (kept && builtin_cached(i, out))
                return NCSIM_OK;
            snprintf(src.display, sizeof src.display, "models/presets/%s.json (built-in)", name);
            snprintf(src.stem, sizeof src.stem, "%s", name);
            src.is_preset = true;
            st = parse_and_apply((const char *)p->text, p->len, &src, depth, out, err, errlen);
            if (st == NCSIM_OK && kept)
                builtin_keep(i, out);
            return st;
        }
    }
    char list[512] = "";
    for (const char *const *n = mdl_preset_names; *n; n++) {
        size_t used = strlen(list);
        snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "", *n);
    }
    mdl_errf(err, errlen, "unknown architecture '%s' (presets: %s; or a FILE.json)", name, list);
    return NCSIM_USAGE;
}

ncsim_status_t mdl_arch_load(const char *name_or_path, mdl_arch_t *out, char *err, size_t errlen)
{
    if (!name_or_path || !out) {
        mdl_errf(err, errlen, "no architecture given");
        return NCSIM_USAGE;
    }
    mdl_arch_t tmp;
    ncsim_status_t st = load_config(name_or_path, NULL, 0, &tmp, err, errlen);
    if (st == NCSIM_OK)
        *out = tmp; /* on failure the caller's config is left as it was */
    return st;
}

ncsim_status_t mdl_arch_parse(const char *text, size_t len, const char *name, mdl_arch_t *out,
                              char *err, size_t errlen)
{
    if (!text || !out) {
        mdl_errf(err, errlen, "no architecture given");
        return NCSIM_USAGE;
    }
    arch_source_t src;
    memset(&src, 0, sizeof src);
    fill_source(&src, name && *name ? name : "<json>", false);
    mdl_arch_t tmp;
    ncsim_status_t st = parse_and_apply(text, len, &src, 0, &tmp, err, errlen);
    if (st == NCSIM_OK)
        *out = tmp;
    return st;
}

const char *const *mdl_arch_preset_names(void)
{
    return mdl_preset_names;
}

const char *mdl_arch_preset_dir(void)
{
    const char *dir = getenv("NCSIM_PRESET_DIR");
    return (dir && dir[0]) ? dir : NULL;
}

/* ---- Validation ----------------------------------------------------------------------------- */

uint32_t mdl_arch_chips_per_instance(const mdl_arch_t *a)
{
    return a->efa.instances > 1 ? a->chips / a->efa.instances : a->chips;
}

/* Distinct neighbours of a chip within its instance: the links it needs. */
static uint32_t neighbours(const mdl_arch_t *a)
{
    uint32_t n = mdl_arch_chips_per_instance(a);
    switch (a->link.topology) {
    case MDL_TOPO_RING:
        return n <= 1 ? 0 : (n == 2 ? 1 : 2);
    case MDL_TOPO_TORUS2D: {
        uint32_t dims[2] = {a->link.torus_x, a->link.torus_y}, count = 0;
        for (int i = 0; i < 2; i++)
            count += dims[i] >= 3 ? 2u : (dims[i] == 2 ? 1u : 0u);
        return count;
    }
    case MDL_TOPO_FULL:
        return n - 1;
    }
    return 0;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            mdl_errf(err, errlen, __VA_ARGS__);                                                    \
            return NCSIM_USAGE;                                                                    \
        }                                                                                          \
    } while (0)

ncsim_status_t mdl_arch_validate(const mdl_arch_t *a, char *err, size_t errlen)
{
    /* Every real-valued key: finite and not negative; the ones below also need > 0 etc. */
    for (size_t i = 0; i < ARCH_NKEYS; i++) {
        const arch_key_t *k = &arch_keys[i];
        if (k->type == KT_F64) {
            double v = *(const double *)cfield(a, k);
            CHECK(isfinite(v) && v >= 0, "%s = %g: must be a finite number >= 0", k->path, v);
        }
        if (k->type == KT_TOPOLOGY || k->type == KT_CC_ALGORITHM || k->type == KT_CC_RUNTIME) {
            size_t n;
            enum_names(k->type, &n);
            int v = load_enum(a, k);
            CHECK(v >= 0 && (size_t)v < n, "%s: invalid value %d", k->path, v);
        }
    }
    CHECK(a->name[0] != '\0', "name: must not be empty");
    /* Upper bounds (lower ones below), by unit, so that no time, size or rate a run derives
     * from the config overflows or loses its meaning (ns are summed into 64-bit picoseconds,
     * sizes into 64-bit byte counts): far beyond any hardware, a value past them is a typo
     * or a probe, and a usage error. */
    for (size_t i = 0; i < ARCH_NKEYS; i++) {
        const arch_key_t *k = &arch_keys[i];
        size_t n = strlen(k->path);
#define ENDS(suf) (n >= sizeof suf - 1 && strcmp(k->path + n - (sizeof suf - 1), suf) == 0)
        if (k->type == KT_F64) {
            double v = *(const double *)cfield(a, k), hi = 1e6;
            const char *why = "a factor or count";
            if (ENDS("_ns"))
                hi = 1e8, why = "0.1 s";
            else if (ENDS("_cycles"))
                hi = 1e8, why = "1e8 cycles";
            else if (ENDS("_ghz"))
                hi = 1e3, why = "1 THz";
            else if (ENDS("_gbps"))
                hi = 1e7, why = "10 PB/s";
            else if (ENDS("_bytes"))
                hi = 1099511627776.0, why = "1 TiB";
            CHECK(v <= hi, "%s = %g: must be at most %g (%s)", k->path, v, hi, why);
            if (ENDS("_ghz") || ENDS("_gbps"))
                CHECK(v == 0 || v >= 1e-3, "%s = %g: must be 0 or at least 0.001", k->path, v);
        } else if (k->type == KT_U64) {
            uint64_t v = *(const uint64_t *)cfield(a, k);
            uint64_t hi = strcmp(k->path, "hbm.size_bytes") == 0 ? 1ull << 50 : 1ull << 32;
            CHECK(v <= hi, "%s = %llu: must be at most %llu", k->path, (unsigned long long)v,
                  (unsigned long long)hi);
        } else if (k->type == KT_U32) {
            uint32_t v = *(const uint32_t *)cfield(a, k);
            CHECK(v <= 1u << 16, "%s = %u: must be at most %u", k->path, v, 1u << 16);
        }
#undef ENDS
    }

    CHECK(a->chips >= 1 && a->chips <= ISA_MAX_CHIPS, "system.chips = %u: must be between 1 and %d",
          a->chips, ISA_MAX_CHIPS);
    CHECK(a->cores_per_chip == ISA_CORES_PER_CHIP,
          "system.cores_per_chip = %u: must be %d (the NCA language numbers core k on chip k / %d)",
          a->cores_per_chip, ISA_CORES_PER_CHIP, ISA_CORES_PER_CHIP);
    CHECK(a->semaphores >= 1 && a->semaphores <= ISA_MAX_SEMS,
          "system.semaphores = %u: must be between 1 and %d", a->semaphores, ISA_MAX_SEMS);

    const struct {
        const char *key;
        double ghz;
    } clocks[] = {{"pe.clock_ghz", a->pe.clock_ghz},
                  {"act.clock_ghz", a->act.clock_ghz},
                  {"dve.clock_ghz", a->dve.clock_ghz},
                  {"pool.clock_ghz", a->pool.clock_ghz},
                  {"sp.clock_ghz", a->sp.clock_ghz}};
    for (size_t i = 0; i < sizeof clocks / sizeof clocks[0]; i++)
        CHECK(clocks[i].ghz > 0, "%s = %g: a clock must be > 0", clocks[i].key, clocks[i].ghz);

    CHECK(a->pe.rows >= 1 && a->pe.rows <= ARCH_MAX_PARTITIONS,
          "pe.rows = %u: must be between 1 and %u (the contraction dim is the partition dim)",
          a->pe.rows, ARCH_MAX_PARTITIONS);
    CHECK(a->pe.cols >= 1 && a->pe.cols <= ARCH_MAX_PARTITIONS,
          "pe.cols = %u: must be between 1 and %u (columns become output partitions)", a->pe.cols,
          ARCH_MAX_PARTITIONS);
    CHECK(a->pe.fp32_factor > 0, "pe.fp32_factor = %g: must be > 0", a->pe.fp32_factor);
    CHECK(a->pe.fp8_factor > 0, "pe.fp8_factor = %g: must be > 0", a->pe.fp8_factor);
    CHECK(a->pe.ldweights_speedup > 0, "pe.ldweights_speedup = %g: must be > 0",
          a->pe.ldweights_speedup);
    CHECK(a->pe.max_moving_free >= 1, "pe.max_moving_free = %g: must be >= 1",
          a->pe.max_moving_free);

    CHECK(a->costs.stride_penalty_factor >= 1,
          "costs.stride_penalty_factor = %g: must be >= 1 (a slowdown)",
          a->costs.stride_penalty_factor);
    CHECK(a->costs.dve_reciprocal_factor > 0, "costs.dve_reciprocal_factor = %g: must be > 0",
          a->costs.dve_reciprocal_factor);
    CHECK(a->costs.bn_aggr_factor > 0, "costs.bn_aggr_factor = %g: must be > 0",
          a->costs.bn_aggr_factor);

    CHECK(a->sbuf.partitions >= 1 && a->sbuf.partitions <= ARCH_MAX_PARTITIONS,
          "sbuf.partitions = %u: must be between 1 and %u", a->sbuf.partitions,
          ARCH_MAX_PARTITIONS);
    CHECK(a->sbuf.bytes_per_partition >= 1, "sbuf.bytes_per_partition: must be >= 1");
    CHECK(a->psum.partitions >= 1 && a->psum.partitions <= ARCH_MAX_PARTITIONS,
          "psum.partitions = %u: must be between 1 and %u", a->psum.partitions,
          ARCH_MAX_PARTITIONS);
    CHECK(a->psum.banks >= 1, "psum.banks: must be >= 1");
    CHECK(a->psum.bytes_per_partition >= 1 && a->psum.bytes_per_partition % a->psum.banks == 0,
          "psum.bytes_per_partition = %llu: must be a positive multiple of psum.banks (%u)",
          (unsigned long long)a->psum.bytes_per_partition, a->psum.banks);
    uint64_t bank = a->psum.bytes_per_partition / a->psum.banks;
    CHECK(bank % 4 == 0,
          "psum.bytes_per_partition / psum.banks = %llu: a bank must hold whole "
          "fp32 values (a multiple of 4 bytes)",
          (unsigned long long)bank);
    CHECK(a->pe.max_moving_free * 4 <= (double)bank,
          "pe.max_moving_free = %g: one matmul's fp32 results (%g bytes per partition) must "
          "fit one PSUM bank of %llu bytes",
          a->pe.max_moving_free, a->pe.max_moving_free * 4, (unsigned long long)bank);

    CHECK(a->hbm.size_bytes >= 1, "hbm.size_bytes: must be >= 1");
    CHECK(a->hbm.bandwidth_gbps > 0, "hbm.bandwidth_gbps = %g: must be > 0", a->hbm.bandwidth_gbps);
    CHECK(a->hbm.channels >= 1, "hbm.channels: must be >= 1");
    CHECK(a->hbm.interleave_bytes >= 1, "hbm.interleave_bytes: must be >= 1");

    CHECK(a->dma.engines >= 1, "dma.engines: must be >= 1");
    CHECK(a->dma.queues >= 1 && a->dma.queues <= ARCH_MAX_DMA_QUEUES,
          "dma.queues = %u: must be between 1 and %u (the ISA addresses queues 0..15)",
          a->dma.queues, ARCH_MAX_DMA_QUEUES);
    CHECK(a->dma.engine_bandwidth_gbps > 0, "dma.engine_bandwidth_gbps = %g: must be > 0",
          a->dma.engine_bandwidth_gbps);
    CHECK(a->dma.min_efficient_bytes >= 1, "dma.min_efficient_bytes = %g: must be >= 1",
          a->dma.min_efficient_bytes);
    CHECK(a->dma.queue_round_robin <= 1,
          "dma.queue_round_robin = %u: must be 1 (queues share the engines' descriptor stages "
          "round-robin) or 0 (the engines take whole transfers first come, first served)",
          a->dma.queue_round_robin);

    CHECK(a->efa.instances >= 1 && a->chips % a->efa.instances == 0,
          "efa.instances = %u: must be at least 1 and divide system.chips (%u) evenly",
          a->efa.instances, a->chips);
    if (a->efa.instances > 1)
        CHECK(a->efa.bandwidth_gbits > 0,
              "efa.bandwidth_gbits = %g: must be > 0 with %u instances", a->efa.bandwidth_gbits,
              a->efa.instances);
    uint32_t per_instance = mdl_arch_chips_per_instance(a);
    if (a->link.topology == MDL_TOPO_TORUS2D) {
        if (a->efa.instances > 1)
            CHECK(a->link.torus_x >= 1 && a->link.torus_y >= 1 &&
                      (uint64_t)a->link.torus_x * a->link.torus_y == per_instance,
                  "link.torus_x * link.torus_y = %u x %u: must equal the chips of one instance "
                  "(system.chips / efa.instances = %u / %u = %u) for a torus2d topology",
                  a->link.torus_x, a->link.torus_y, a->chips, a->efa.instances, per_instance);
        else
            CHECK(a->link.torus_x >= 1 && a->link.torus_y >= 1 &&
                      (uint64_t)a->link.torus_x * a->link.torus_y == a->chips,
                  "link.torus_x * link.torus_y = %u x %u: must equal system.chips (%u) for a "
                  "torus2d topology",
                  a->link.torus_x, a->link.torus_y, a->chips);
    }
    if (per_instance > 1) {
        uint32_t need = neighbours(a);
        CHECK(a->link.links_per_chip >= need,
              "link.links_per_chip = %u: a %s of %u chips needs %u links per chip (one per "
              "neighbour)",
              a->link.links_per_chip, topology_names[a->link.topology], per_instance, need);
        CHECK(a->link.bandwidth_gbps > 0, "link.bandwidth_gbps = %g: must be > 0 with %u chips",
              a->link.bandwidth_gbps, per_instance);
    }
    CHECK(a->cc.packet_bytes >= 1, "cc.packet_bytes: must be >= 1");
    CHECK(a->cc.algorithm != MDL_CC_FLAT_RING,
          "cc.algorithm = \"flat_ring\": a flat ring spans instances; set cc.inter_algorithm");
    CHECK(a->cc.inter_algorithm != MDL_CC_KANGARING,
          "cc.inter_algorithm = \"kangaring\": KangaRing pairs the cores of a chip and runs "
          "within an instance only (set cc.algorithm)");
    CHECK(a->cc.rdh_max_bytes >= a->cc.mesh_max_bytes,
          "cc.rdh_max_bytes = %llu: must be >= cc.mesh_max_bytes (%llu)",
          (unsigned long long)a->cc.rdh_max_bytes, (unsigned long long)a->cc.mesh_max_bytes);
    CHECK(a->cc.inter_rdh_max_bytes >= a->cc.inter_mesh_max_bytes,
          "cc.inter_rdh_max_bytes = %llu: must be >= cc.inter_mesh_max_bytes (%llu)",
          (unsigned long long)a->cc.inter_rdh_max_bytes,
          (unsigned long long)a->cc.inter_mesh_max_bytes);
    CHECK(a->cc.rank_bandwidth_gbps > 0, "cc.rank_bandwidth_gbps = %g: must be > 0",
          a->cc.rank_bandwidth_gbps);
    CHECK(a->cc.fixed_ns >= 0 && a->cc.min_latency_ns >= 0 && a->cc.step_latency_ns >= 0,
          "cc.fixed_ns, cc.min_latency_ns, cc.step_latency_ns: must be >= 0");
    CHECK(a->pe.throttle_factor >= 1, "pe.throttle_factor = %g: must be >= 1 (1 = no throttle)",
          a->pe.throttle_factor);
    CHECK(a->costs.dve_tensor_tensor_factor > 0, "costs.dve_tensor_tensor_factor = %g: must be > 0",
          a->costs.dve_tensor_tensor_factor);
    CHECK(a->costs.semaphore_latency_ns >= 0, "costs.semaphore_latency_ns = %g: must be >= 0",
          a->costs.semaphore_latency_ns);
    return NCSIM_OK;
}

#undef CHECK

/* ---- Dump ------------------------------------------------------------------------------------ */

typedef struct strbuf {
    char *s;
    size_t len, cap;
    bool failed;
} strbuf_t;

static void sb_append(strbuf_t *b, const char *text)
{
    size_t n = strlen(text);
    if (b->failed)
        return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n + 1)
            cap *= 2;
        char *t = realloc(b->s, cap);
        if (!t) {
            b->failed = true;
            return;
        }
        b->s = t;
        b->cap = cap;
    }
    memcpy(b->s + b->len, text, n + 1);
    b->len += n;
}

/* A JSON string literal (quotes, backslashes and control characters escaped). */
static void sb_append_json_string(strbuf_t *b, const char *s)
{
    sb_append(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char tmp[8];
        if (*p == '"' || *p == '\\')
            snprintf(tmp, sizeof tmp, "\\%c", *p);
        else if (*p < 0x20)
            snprintf(tmp, sizeof tmp, "\\u%04x", *p);
        else
            snprintf(tmp, sizeof tmp, "%c", *p);
        sb_append(b, tmp);
    }
    sb_append(b, "\"");
}

char *mdl_arch_to_json(const mdl_arch_t *arch)
{
    strbuf_t b = {0};
    sb_append(&b, "{\n  \"name\": ");
    sb_append_json_string(&b, arch->name);
    sb_append(&b, ",\n  \"description\": ");
    sb_append_json_string(&b, arch->description);
    const char *section = NULL;
    for (size_t i = 0; i < ARCH_NKEYS; i++) {
        const arch_key_t *k = &arch_keys[i];
        char line[256], value[64];
        if (!section || strcmp(section, k->section) != 0) {
            snprintf(line, sizeof line, "%s,\n  \"%s\": {\n", section ? "\n  }" : "", k->section);
            sb_append(&b, line);
            section = k->section;
        } else {
            sb_append(&b, ",\n");
        }
        format_value(arch, k, value, sizeof value);
        bool quoted =
            k->type == KT_TOPOLOGY || k->type == KT_CC_ALGORITHM || k->type == KT_CC_RUNTIME;
        snprintf(line, sizeof line, "    \"%s\": %s%s%s", k->key, quoted ? "\"" : "", value,
                 quoted ? "\"" : "");
        sb_append(&b, line);
    }
    sb_append(&b, "\n  }\n}\n");
    if (b.failed) {
        free(b.s);
        return NULL;
    }
    return b.s;
}

void mdl_arch_geometry(const mdl_arch_t *arch, isa_geometry_t *g)
{
    g->partitions = arch->sbuf.partitions;
    g->sbuf_bytes = arch->sbuf.bytes_per_partition;
    g->psum_bytes = arch->psum.bytes_per_partition;
    g->psum_bank_bytes = arch->psum.banks ? arch->psum.bytes_per_partition / arch->psum.banks : 0;
    g->hbm_bytes = arch->hbm.size_bytes;
}

int mdl_arch_geometry_lookup(void *ctx, const char *name, isa_geometry_t *g)
{
    (void)ctx;
    mdl_arch_t a;
    char err[256];
    if (mdl_arch_load(name, &a, err, sizeof err) != NCSIM_OK)
        return -1;
    mdl_arch_geometry(&a, g);
    return 0;
}
