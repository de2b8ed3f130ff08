/*
 * sim.c -- simulators of the public API: creation (architecture, checker, trace), tensor data
 * in and out, the run driver (slices, progress, cancellation), statistics and findings.
 *
 * The run driver here is the only one: `ncsim run` and `ncsim check` drive their runs through
 * it too (cli/).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "api_internal.h"
#include "load.h"
#include "npy.h"
#include "stats.h"

#define NO_LIMIT UINT64_MAX

static char *dup_or_null(const char *s, int *oom)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *oom = 1;
    return d;
}

void ncsim_options_init(ncsim_options_t *opt)
{
    if (opt)
        memset(opt, 0, sizeof *opt);
}

ncsim_status_t ncsim_parse_checks(const char *list, unsigned *mask)
{
    char err[256];
    if (!list || !mask)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_parse_checks: no list or mask");
    if (chk_parse_list(list, mask, err, sizeof err))
        return api_fail(NCSIM_USAGE, "usage", "%s", err);
    return NCSIM_OK;
}

ncsim_status_t ncsim_parse_trace_engines(const char *list)
{
    char err[256];
    uint32_t mask;
    if (!list)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_parse_trace_engines: no list");
    ncsim_status_t st = sim_trace_parse_engines(list, &mask, err, sizeof err);
    return st == NCSIM_OK ? st : api_fail(st, "usage", "%s", err);
}

/* ---- ncsim_sim_set_line_hook: an observer that calls the client after each instruction of the
 * line that wrote memory, then passes every event on to the checker's ---------------------- */

static void line_reached(ncsim_sim_t *h, uint32_t core, const isa_instr_t *in)
{
    if (in->line == h->at_line)
        h->at_line_fn(h->at_line_ctx, h, core);
}

static void line_instr_start(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                             const isa_instr_t *in)
{
    ncsim_sim_t *h = ctx;
    h->line_next->instr_start(h->line_next->ctx, s, core, engine, index, in);
}

static void line_instr_done(void *ctx, sim_t *s, uint32_t core, uint8_t engine, uint32_t index,
                            const isa_instr_t *in)
{
    ncsim_sim_t *h = ctx;
    if (h->line_next && h->line_next->instr_done)
        h->line_next->instr_done(h->line_next->ctx, s, core, engine, index, in);
    /* an ldweights writes no memory: `matmul D, STAT, MOV` is an ldweights then the matmul,
     * both of the line, and the state wanted is the one after the matmul */
    if (in->op != ISA_OP_LDWEIGHTS)
        line_reached(h, core, in);
}

static void line_dma_landed(void *ctx, sim_t *s, uint32_t core, uint8_t queue, uint8_t engine,
                            uint32_t index, const isa_instr_t *in)
{
    ncsim_sim_t *h = ctx;
    if (h->line_next && h->line_next->dma_landed)
        h->line_next->dma_landed(h->line_next->ctx, s, core, queue, engine, index, in);
    line_reached(h, core, in);
}

static void line_collective(void *ctx, sim_t *s, int phase, uint32_t core, uint32_t index,
                            const isa_instr_t *in)
{
    ncsim_sim_t *h = ctx;
    if (h->line_next && h->line_next->collective)
        h->line_next->collective(h->line_next->ctx, s, phase, core, index, in);
    if (phase == 1)
        line_reached(h, core, in);
}

static void line_posts(void *ctx, sim_t *s, uint32_t core, int by_engine, uint32_t by_index,
                       const isa_instr_t *in)
{
    ncsim_sim_t *h = ctx;
    h->line_next->posts(h->line_next->ctx, s, core, by_engine, by_index, in);
}

/* The observer of the run: the checker's, with the at_line callback in front when asked. */
static const sim_observer_t *observer_for(ncsim_sim_t *h)
{
    const sim_observer_t *next = h->chk ? chk_observer(h->chk) : NULL;
    if (!h->at_line || !h->at_line_fn)
        return next;
    h->line_next = next;
    h->line_obs.ctx = h;
    h->line_obs.instr_start = next && next->instr_start ? line_instr_start : NULL;
    h->line_obs.instr_done = line_instr_done;
    h->line_obs.dma_landed = line_dma_landed;
    h->line_obs.collective = line_collective;
    h->line_obs.posts = next && next->posts ? line_posts : NULL;
    return &h->line_obs;
}

static uint64_t ns_to_ps(double ns)
{
    return (uint64_t)llround(ns * 1000.0);
}

ncsim_status_t ncsim_sim_create(const ncsim_program_t *prog, const ncsim_arch_t *arch,
                                const ncsim_options_t *opt, ncsim_sim_t **out)
{
    if (!prog || !out)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_sim_create: no program or output handle");
    *out = NULL;
    ncsim_options_t none;
    ncsim_options_init(&none);
    if (!opt)
        opt = &none;
    const isa_program_t *p = prog->p;
    char err[4096];
    ncsim_sim_t *h = calloc(1, sizeof *h);
    if (!h)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    h->prog = prog;
    h->opt = *opt;
    h->progress_interval = 0.25;
    ncsim_status_t st = NCSIM_OK;
    if (arch) {
        h->arch = arch->a;
    } else {
        const char *use = p->arch[0] ? p->arch : "trn1";
        st = mdl_arch_load(use, &h->arch, err, sizeof err);
        if (st != NCSIM_OK) {
            free(h);
            return api_fail(st == NCSIM_IO ? NCSIM_IO : NCSIM_USAGE, "config", "%s", err);
        }
    }
    if (mdl_arch_validate(&h->arch, err, sizeof err) != NCSIM_OK) {
        free(h);
        return api_fail(NCSIM_USAGE, "config", "%s", err);
    }
    if (opt->timing_only && (opt->checks & NCSIM_CHECK_NAN)) {
        free(h);
        return api_fail(NCSIM_USAGE, "usage", "the nan check needs a functional run (not "
                                              "timing-only)");
    }
    int oom = 0;
    const char *src = isa_string(p, p->source);
    h->program_name = dup_or_null(opt->program_name ? opt->program_name : src, &oom);
    h->trace_path = dup_or_null(opt->trace_path, &oom);
    h->trace_engines = dup_or_null(opt->trace_engines, &oom);
    h->opt.program_name = h->program_name;
    h->opt.trace_path = h->trace_path;
    h->opt.trace_engines = h->trace_engines;
    h->bound = calloc(p->ntensors + 1, 1);
    if (oom || !h->bound) {
        ncsim_sim_free(h);
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    }
    if (opt->checks) {
        if (chk_create(p, &h->arch, opt->checks & CHK_ALL, &h->chk) != NCSIM_OK) {
            ncsim_sim_free(h);
            return api_fail(NCSIM_NOMEM, "memory", "out of memory");
        }
        chk_static(h->chk);
    }
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &h->arch;
    so.timing_only = opt->timing_only;
    so.stochastic_rounding = opt->stochastic_rounding;
    so.seed = opt->seed;
    so.observer = observer_for(h);
    if (h->trace_path) {
        sim_trace_options_t topt;
        memset(&topt, 0, sizeof topt);
        topt.path = h->trace_path;
        topt.program = h->program_name ? h->program_name : "";
        topt.timing_only = opt->timing_only;
        if (!(opt->trace_start_ns >= 0) || !(opt->trace_end_ns >= 0)) {
            ncsim_sim_free(h);
            return api_fail(NCSIM_USAGE, "usage", "trace start and end must be times >= 0 ns");
        }
        topt.start_ps = ns_to_ps(opt->trace_start_ns);
        topt.end_ps = opt->trace_end_ns > 0 ? ns_to_ps(opt->trace_end_ns) : 0;
        if (opt->trace_end_ns > 0 && !topt.end_ps)
            topt.end_ps = 1;
        if (h->trace_engines) {
            st = sim_trace_parse_engines(h->trace_engines, &topt.engines, err, sizeof err);
            if (st != NCSIM_OK) {
                ncsim_sim_free(h);
                return api_fail(st, "usage", "%s", err);
            }
            topt.engines_text = h->trace_engines;
        }
        st = sim_trace_open(&topt, p, &h->arch, &h->trace, err, sizeof err);
        if (st != NCSIM_OK) {
            ncsim_sim_free(h);
            return api_fail(st, st == NCSIM_IO ? "io" : "usage", "%s", err);
        }
        so.trace = sim_trace_sink(h->trace);
    }
    st = sim_create(p, &so, &h->s, err, sizeof err);
    if (st != NCSIM_OK) {
        ncsim_sim_free(h);
        return api_fail(st, st == NCSIM_USAGE ? "config" : "memory", "%s", err);
    }
    *out = h;
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_close_trace(ncsim_sim_t *h)
{
    if (!h || !h->trace)
        return NCSIM_OK;
    char err[1024];
    ncsim_status_t st = sim_trace_close(h->trace, NULL, err, sizeof err);
    h->trace = NULL;
    return st == NCSIM_OK ? st : api_fail(st, "io", "%s", err);
}

void ncsim_sim_free(ncsim_sim_t *h)
{
    if (!h)
        return;
    if (h->trace) {
        char err[256];
        sim_trace_close(h->trace, NULL, err, sizeof err);
    }
    sim_destroy(h->s);
    if (h->finding_text && h->chk)
        for (size_t i = 0; i < chk_count(h->chk); i++)
            free(h->finding_text[i]);
    free(h->finding_text);
    chk_destroy(h->chk);
    free(h->bound);
    free(h->program_name);
    free(h->trace_path);
    free(h->trace_engines);
    free(h->failure);
    free(h->run_failure);
    free(h);
}

/* ---- tensor data ------------------------------------------------------------------------------ */

static const char *tensor_name(const ncsim_sim_t *h, uint32_t t)
{
    return isa_string(h->prog->p, h->prog->p->tensors[t].name);
}

static ncsim_status_t check_tensor(const ncsim_sim_t *h, uint32_t t, int32_t core,
                                   const char *what)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "%s: no simulator", what);
    const isa_program_t *p = h->prog->p;
    if (t >= p->ntensors)
        return api_fail(NCSIM_USAGE, "usage", "%s: the program has no tensor %u", what, t);
    if (h->opt.timing_only)
        return api_fail(NCSIM_USAGE, "usage",
                        "%s: tensor '%s' has no data in a timing-only run", what,
                        tensor_name(h, t));
    const isa_tensor_t *T = &p->tensors[t];
    if (T->space != ISA_SPACE_HBM && core >= 0 && (uint32_t)core >= p->ncores)
        return api_fail(NCSIM_USAGE, "usage", "%s: tensor '%s': core %d, the program has %u",
                        what, tensor_name(h, t), core, p->ncores);
    if (T->space != ISA_SPACE_HBM && T->core >= 0 && core >= 0 && core != T->core)
        return api_fail(NCSIM_USAGE, "usage", "%s: tensor '%s' lives on core %d, not %d", what,
                        tensor_name(h, t), T->core, core);
    return NCSIM_OK;
}

static size_t host_elem_size(const ncsim_sim_t *h, uint32_t t, ncsim_host_type_t type)
{
    return type == NCSIM_HOST_F32
               ? sizeof(float)
               : isa_dtype_size((isa_dtype_t)h->prog->p->tensors[t].dtype);
}

static uint32_t core_of(int32_t core)
{
    return core < 0 ? 0 : (uint32_t)core;
}

/* Copy an N-d strided host array into a packed C-order buffer. */
static void gather(uint8_t *dst, const uint8_t *src, uint32_t ndim, const uint64_t *shape,
                   const int64_t *strides, size_t es)
{
    if (ndim == 0) {
        memcpy(dst, src, es);
        return;
    }
    uint64_t idx[NCSIM_MAX_DIMS] = {0};
    uint64_t total = 1;
    for (uint32_t d = 0; d < ndim; d++)
        total *= shape[d];
    uint64_t inner = shape[ndim - 1];
    int64_t is = strides[ndim - 1];
    for (uint64_t done = 0; done < total; done += inner) {
        const uint8_t *row = src;
        for (uint32_t d = 0; d + 1 < ndim; d++)
            row += (int64_t)idx[d] * strides[d];
        if (is == (int64_t)es) {
            memcpy(dst, row, inner * es);
            dst += inner * es;
        } else {
            for (uint64_t i = 0; i < inner; i++, dst += es)
                memcpy(dst, row + (int64_t)i * is, es);
        }
        for (int d = (int)ndim - 2; d >= 0; d--) {
            if (++idx[d] < shape[d])
                break;
            idx[d] = 0;
        }
    }
}

ncsim_status_t ncsim_sim_write_tensor(ncsim_sim_t *h, uint32_t t, int32_t core,
                                      ncsim_host_type_t type, const void *data, uint32_t ndim,
                                      const uint64_t *shape, const int64_t *byte_strides)
{
    ncsim_status_t st = check_tensor(h, t, core, "write");
    if (st != NCSIM_OK)
        return st;
    if ((unsigned)type >= NCSIM_HOST_TYPE_COUNT || (!data) || (ndim && !shape))
        return api_fail(NCSIM_USAGE, "usage", "write: bad host type, data or shape");
    const isa_tensor_t *T = &h->prog->p->tensors[t];
    int same = ndim == T->ndims;
    for (uint32_t d = 0; same && d < ndim; d++)
        same = shape[d] == T->dims[d];
    if (!same) {
        char want[160] = "", got[160] = "";
        size_t a = 0, b = 0;
        for (unsigned d = 0; d < T->ndims && a < sizeof want; d++)
            a += (size_t)snprintf(want + a, sizeof want - a, "%s%llu", d ? ", " : "",
                                  (unsigned long long)T->dims[d]);
        for (uint32_t d = 0; d < ndim && b < sizeof got && d < 16; d++)
            b += (size_t)snprintf(got + b, sizeof got - b, "%s%llu", d ? ", " : "",
                                  (unsigned long long)shape[d]);
        return api_fail(NCSIM_USAGE, "input", "tensor '%s' has shape (%s), the data has (%s)",
                        tensor_name(h, t), want, got);
    }
    size_t es = host_elem_size(h, t, type);
    uint64_t n = sim_tensor_elems(h->prog->p, t);
    const void *packed = data;
    void *tmp = NULL;
    int contiguous = 1;
    if (byte_strides) {
        int64_t expect = (int64_t)es;
        for (int d = (int)ndim - 1; d >= 0; d--) {
            if (shape[d] > 1 && byte_strides[d] != expect)
                contiguous = 0;
            expect *= (int64_t)shape[d];
        }
    }
    if (!contiguous && n) {
        tmp = malloc(n * es);
        if (!tmp)
            return api_fail(NCSIM_NOMEM, "memory", "out of memory");
        gather(tmp, data, ndim, shape, byte_strides, es);
        packed = tmp;
    }
    st = n ? sim_tensor_write(h->s, t, core_of(core), type == NCSIM_HOST_RAW, packed) : NCSIM_OK;
    free(tmp);
    if (st != NCSIM_OK)
        return api_fail(st, "input", "cannot store tensor '%s': %s", tensor_name(h, t),
                        ncsim_status_text(st));
    h->bound[t] = 1;
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_read_tensor(ncsim_sim_t *h, uint32_t t, int32_t core,
                                     ncsim_host_type_t type, void *out, size_t out_bytes)
{
    ncsim_status_t st = check_tensor(h, t, core, "read");
    if (st != NCSIM_OK)
        return st;
    if ((unsigned)type >= NCSIM_HOST_TYPE_COUNT || !out)
        return api_fail(NCSIM_USAGE, "usage", "read: bad host type or buffer");
    uint64_t n = sim_tensor_elems(h->prog->p, t);
    size_t need = n * host_elem_size(h, t, type);
    if (out_bytes < need)
        return api_fail(NCSIM_USAGE, "usage", "read: tensor '%s' needs %zu bytes, the buffer "
                                              "has %zu",
                        tensor_name(h, t), need, out_bytes);
    st = n ? sim_tensor_read(h->s, t, core_of(core), type == NCSIM_HOST_RAW, out) : NCSIM_OK;
    if (st != NCSIM_OK)
        return api_fail(st, "usage", "cannot read tensor '%s'", tensor_name(h, t));
    return NCSIM_OK;
}

/* Bind tensor t from a parsed .npy array `a` named `path` in messages: the one place where
 * input data is checked against its tensor (type, shape, values), for the command line's
 * --in, ncsim_sim_load_npy and ncsim_sim_load_npy_bytes (Python's arrays). Frees `a`. */
static ncsim_status_t bind_npy(ncsim_sim_t *h, uint32_t t, mdl_npy_t *a, const char *path)
{
    char err[2048];
    const isa_tensor_t *T = &h->prog->p->tensors[t];
    mdl_npy_type_t want = mdl_npy_type_for_dtype((isa_dtype_t)T->dtype);
    if (h->note_fn && a->type != want && mdl_npy_convertible(a->type, want)) {
        char note[1024];
        snprintf(note, sizeof note, "%s holds %s data; tensor '%s' (%s) reads it as %s%s", path,
                 a->descr, tensor_name(h, t), isa_dtype_name((isa_dtype_t)T->dtype),
                 mdl_npy_type_descr(want),
                 a->type == MDL_NPY_F8 ? " (each value rounded to nearest even)" : "");
        h->note_fn(h->note_ctx, note);
    }
    ncsim_status_t st = sim_tensor_write_npy(h->s, t, a, path, err, sizeof err);
    mdl_npy_free(a);
    if (st != NCSIM_OK)
        return api_fail_at(st, "input", path, 0, 0, -1, -1, -1, "%s", err);
    h->bound[t] = 1;
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_load_npy(ncsim_sim_t *h, uint32_t t, const char *path)
{
    ncsim_status_t st = check_tensor(h, t, -1, "load_npy");
    if (st != NCSIM_OK)
        return st;
    char err[2048];
    mdl_npy_t a;
    st = mdl_npy_read(path, &a, err, sizeof err);
    if (st != NCSIM_OK)
        return api_fail_at(st == NCSIM_NOMEM ? st : NCSIM_IO, "input", path, 0, 0, -1, -1, -1,
                           "%s", err);
    return bind_npy(h, t, &a, path);
}

ncsim_status_t ncsim_npy_check_file(const char *path)
{
    if (!path)
        return api_fail(NCSIM_USAGE, "usage", "npy_check_file: no path");
    char err[2048];
    mdl_npy_t a;
    ncsim_status_t st = mdl_npy_read(path, &a, err, sizeof err);
    if (st != NCSIM_OK)
        return api_fail_at(st == NCSIM_NOMEM ? st : NCSIM_IO, "input", path, 0, 0, -1, -1, -1,
                           "%s", err);
    mdl_npy_free(&a);
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_load_npy_bytes(ncsim_sim_t *h, uint32_t t, const void *bytes,
                                        size_t len, const char *name)
{
    ncsim_status_t st = check_tensor(h, t, -1, "load_npy_bytes");
    if (st != NCSIM_OK)
        return st;
    if (!name)
        name = "<memory>";
    char err[2048];
    mdl_npy_t a;
    st = mdl_npy_parse(bytes, len, name, &a, err, sizeof err);
    if (st != NCSIM_OK)
        return api_fail_at(st == NCSIM_NOMEM ? st : NCSIM_IO, "input", name, 0, 0, -1, -1, -1,
                           "%s", err);
    return bind_npy(h, t, &a, name);
}

ncsim_status_t ncsim_sim_save_npy(ncsim_sim_t *h, uint32_t t, const char *path)
{
    ncsim_status_t st = check_tensor(h, t, -1, "save_npy");
    if (st != NCSIM_OK)
        return st;
    const isa_tensor_t *T = &h->prog->p->tensors[t];
    uint64_t n = sim_tensor_elems(h->prog->p, t);
    isa_dtype_t dt = (isa_dtype_t)T->dtype;
    int native = mdl_npy_dtype_is_native(dt);
    size_t es = native ? isa_dtype_size(dt) : sizeof(float);
    void *buf = malloc(n * es > 0 ? n * es : 1);
    if (!buf)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    st = sim_tensor_read(h->s, t, 0, native, buf);
    char err[2048] = "";
    if (st == NCSIM_OK) {
        const char *descr = mdl_npy_type_descr(mdl_npy_type_for_dtype(dt));
        uint64_t dims[ISA_MAX_DIMS + 1];
        for (unsigned d = 0; d < T->ndims; d++)
            dims[d] = T->dims[d];
        st = mdl_npy_write(path, descr, dims, T->ndims, buf, err, sizeof err);
        if (st != NCSIM_OK)
            st = NCSIM_IO;
    } else {
        snprintf(err, sizeof err, "cannot read tensor '%s'", tensor_name(h, t));
    }
    free(buf);
    return st == NCSIM_OK ? st : api_fail_at(st, "io", path, 0, 0, -1, -1, -1, "%s", err);
}

ncsim_status_t ncsim_sim_fill_random(ncsim_sim_t *h, uint32_t t, uint64_t seed)
{
    ncsim_status_t st = check_tensor(h, t, -1, "fill_random");
    if (st != NCSIM_OK)
        return st;
    st = sim_tensor_fill_random(h->s, t, seed);
    if (st != NCSIM_OK)
        return api_fail(st, "memory", "cannot fill tensor '%s': %s", tensor_name(h, t),
                        ncsim_status_text(st));
    h->bound[t] = 1;
    return NCSIM_OK;
}

/* Does any view of the program (any instruction, any core) overlap HBM tensor t? */
static int hbm_tensor_touched(const isa_program_t *p, uint32_t t)
{
    const isa_tensor_t *T = &p->tensors[t];
    uint64_t lo = T->offset;
    uint64_t hi = lo + sim_tensor_elems(p, t) * isa_dtype_size((isa_dtype_t)T->dtype);
    for (uint32_t i = 0; i < p->nviews; i++) {
        const isa_view_t *v = &p->views[i];
        if (v->space != ISA_SPACE_HBM)
            continue;
        int64_t a, b;
        isa_view_byte_range(v, &a, &b);
        if (a < (int64_t)hi && b > (int64_t)lo)
            return 1;
    }
    return 0;
}

static int is_input(const isa_tensor_t *T)
{
    return T->space == ISA_SPACE_HBM && (T->kind == ISA_TK_INPUT || T->kind == ISA_TK_INOUT);
}

ncsim_status_t ncsim_sim_random_inputs(ncsim_sim_t *h, uint64_t seed)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "random_inputs: no simulator");
    if (h->opt.timing_only)
        return NCSIM_OK; /* nothing to fill: the values are not modelled */
    const isa_program_t *p = h->prog->p;
    double ram = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    for (uint32_t t = 0; t < p->ntensors; t++) {
        const isa_tensor_t *T = &p->tensors[t];
        if (!is_input(T) || h->bound[t])
            continue;
        if (T->kind == ISA_TK_INPUT && !hbm_tensor_touched(p, t)) {
            h->bound[t] = 1; /* nothing reads it: nothing to fill */
            continue;
        }
        /* refuse what cannot fit rather than meet the kernel's OOM killer */
        double need = (double)sim_tensor_elems(p, t) *
                      (4.0 + (double)isa_dtype_size((isa_dtype_t)T->dtype));
        ncsim_status_t st = ram > 0 && need > ram ? NCSIM_NOMEM
                                                  : sim_tensor_fill_random(h->s, t, seed);
        if (st != NCSIM_OK)
            return api_fail(st, "memory",
                            "out of host memory: %.1f MiB for the random values of tensor '%s' "
                            "(%s; bind it with --in, or use --timing-only), this host has "
                            "%.1f MiB",
                            need / 1048576.0, tensor_name(h, t),
                            isa_dtype_name((isa_dtype_t)T->dtype), ram / 1048576.0);
        h->bound[t] = 1;
    }
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_dump_npy(ncsim_sim_t *h, uint32_t t, int32_t core, const char *path)
{
    ncsim_status_t st = check_tensor(h, t, core, "dump_npy");
    if (st != NCSIM_OK)
        return st;
    if (!path)
        return api_fail(NCSIM_USAGE, "usage", "dump_npy: no path");
    const isa_tensor_t *T = &h->prog->p->tensors[t];
    uint32_t c = core >= 0 ? (uint32_t)core
                           : T->space != ISA_SPACE_HBM && T->core >= 0 ? (uint32_t)T->core : 0;
    uint64_t dims[ISA_MAX_DIMS + 1];
    uint64_t n = 1;
    for (unsigned k = 0; k < T->ndims; k++) {
        n *= T->dims[k];
        dims[k] = T->dims[k];
    }
    isa_dtype_t dt = (isa_dtype_t)T->dtype;
    int native = mdl_npy_dtype_is_native(dt);
    size_t es = native ? isa_dtype_size(dt) : sizeof(float);
    void *buf = malloc(n * es > 0 ? n * es : 1);
    if (!buf)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory: %s", path);
    st = sim_tensor_read_any(h->s, t, c, native, buf);
    if (st != NCSIM_OK) {
        free(buf);
        return api_fail(NCSIM_USAGE, "usage", "cannot read tensor '%s' on core %u",
                        tensor_name(h, t), c);
    }
    char err[1024];
    st = mdl_npy_write(path, mdl_npy_type_descr(mdl_npy_type_for_dtype(dt)), dims, T->ndims,
                       buf, err, sizeof err);
    free(buf);
    return st == NCSIM_OK ? st : api_fail_at(NCSIM_IO, "io", path, 0, 0, -1, -1, -1, "%s", err);
}

/* ---- running ---------------------------------------------------------------------------------- */

void ncsim_sim_set_progress(ncsim_sim_t *h, ncsim_progress_fn fn, void *ctx,
                            double interval_seconds)
{
    if (!h)
        return;
    h->progress = fn;
    h->progress_ctx = ctx;
    h->progress_interval = interval_seconds > 0 ? interval_seconds : 0;
}

void ncsim_sim_set_notes(ncsim_sim_t *h, void (*fn)(void *ctx, const char *note), void *ctx)
{
    if (!h)
        return;
    h->note_fn = fn;
    h->note_ctx = ctx;
}

ncsim_status_t ncsim_sim_set_line_hook(ncsim_sim_t *h, uint32_t line,
                                       void (*fn)(void *ctx, ncsim_sim_t *sim, uint32_t core),
                                       void *ctx)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "set_line_hook: no simulator");
    if (h->started)
        return api_fail(NCSIM_USAGE, "usage", "set_line_hook: the run has started");
    if (line && fn && !ncsim_program_line_instructions(h->prog, line))
        return api_fail(NCSIM_USAGE, "usage", "no instruction comes from line %u", line);
    h->at_line = fn ? line : 0;
    h->at_line_fn = line ? fn : NULL;
    h->at_line_ctx = ctx;
    sim_set_observer(h->s, observer_for(h));
    return NCSIM_OK;
}

void ncsim_sim_cancel(ncsim_sim_t *h)
{
    if (h)
        __atomic_store_n(&h->cancel, 1, __ATOMIC_RELAXED);
}

/* Before the first event: every input is bound (functional runs). */
static ncsim_status_t check_bindings(ncsim_sim_t *h)
{
    if (h->started)
        return NCSIM_OK;
    const isa_program_t *p = h->prog->p;
    if (!h->opt.timing_only)
        for (uint32_t t = 0; t < p->ntensors; t++)
            if (is_input(&p->tensors[t]) && !h->bound[t])
                return api_fail(NCSIM_USAGE, "input",
                                "input tensor '%s' is not bound: give its data or ask for "
                                "random inputs",
                                tensor_name(h, t));
    h->started = 1;
    return NCSIM_OK;
}

/* A failed run: the error with its location, the trace finished. */
static ncsim_status_t run_failed(ncsim_sim_t *h, ncsim_status_t st)
{
    ncsim_sim_close_trace(h);
    if (st != NCSIM_PROGRAM)
        return api_fail(st, "memory", "%s", *sim_error(h->s) ? sim_error(h->s)
                                                             : ncsim_status_text(st));
    const sim_fault_t *f = sim_fault(h->s);
    const char *msg = sim_error(h->s);
    size_t len = strlen(msg);
    while (len && msg[len - 1] == '\n')
        len--;
    const isa_program_t *p = h->prog->p;
    return api_fail_at(NCSIM_PROGRAM, f->kind == SIM_FAULT_DEADLOCK ? "deadlock" : "runtime",
                       isa_string(p, p->source), f->has_site ? f->line : 0, 0,
                       f->has_site ? (int32_t)f->core : -1,
                       f->has_site ? (int32_t)f->engine : -1,
                       f->has_site ? (int64_t)f->index : -1, "%.*s", (int)len, msg);
}

static int report_progress(void *ctx, sim_t *s, double host_seconds)
{
    ncsim_sim_t *h = ctx;
    ncsim_progress_t pr;
    pr.now_ns = (double)sim_now_ps(s) / 1000.0;
    pr.instructions = sim_stats(s)->instructions;
    pr.total_instructions = h->prog->p->ninstrs;
    pr.host_seconds = host_seconds;
    return h->progress(h->progress_ctx, &pr);
}

/* Run up to `target_ps` (NO_LIMIT: the end) with the library's driver (sim/drive.c): the
 * progress function and cancellation act between slices. */
static ncsim_status_t drive(ncsim_sim_t *h, uint64_t target_ps)
{
    ncsim_status_t st = check_bindings(h);
    if (st != NCSIM_OK)
        return st;
    h->drive.interval = h->progress_interval;
    h->drive.progress = h->progress ? report_progress : NULL;
    h->drive.ctx = h;
    h->drive.stop = &h->cancel;
    int stopped = 0;
    st = sim_drive(h->s, target_ps, &h->drive, &stopped);
    if (st != NCSIM_OK)
        return run_failed(h, st);
    if (stopped) {
        /* the request is consumed, atomically: ncsim_sim_cancel may be storing from another
         * thread at this moment, and a plain store racing it is undefined behaviour */
        __atomic_store_n(&h->cancel, 0, __ATOMIC_RELAXED);
        return api_fail(NCSIM_CANCELLED, "cancelled", "the run was cancelled at %.3f ns",
                        (double)sim_now_ps(h->s) / 1000.0);
    }
    if (h->chk && chk_failed(h->chk))
        return api_fail(NCSIM_NOMEM, "memory",
                        "out of memory while checking: the findings are incomplete");
    if (sim_finished(h->s))
        return ncsim_sim_close_trace(h);
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_run(ncsim_sim_t *h)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "run: no simulator");
    return drive(h, NO_LIMIT);
}

ncsim_status_t ncsim_sim_run_until(ncsim_sim_t *h, double time_ns)
{
    if (!h || !(time_ns >= 0))
        return api_fail(NCSIM_USAGE, "usage", "run_until: no simulator or a bad time");
    return drive(h, time_ns >= 1.8e16 ? NO_LIMIT : ns_to_ps(time_ns));
}

ncsim_status_t ncsim_sim_step(ncsim_sim_t *h)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "step: no simulator");
    ncsim_status_t st = check_bindings(h);
    if (st != NCSIM_OK || sim_finished(h->s))
        return st;
    double t0 = api_now_seconds();
    st = sim_run(h->s, SIM_RUN_ONE_EVENT, 0);
    h->drive.host_seconds += api_now_seconds() - t0;
    if (st != NCSIM_OK)
        return run_failed(h, st);
    return sim_finished(h->s) ? ncsim_sim_close_trace(h) : NCSIM_OK;
}

int ncsim_sim_finished(const ncsim_sim_t *h)
{
    return h ? sim_finished(h->s) : 0;
}

double ncsim_sim_now_ns(const ncsim_sim_t *h)
{
    return h ? (double)sim_now_ps(h->s) / 1000.0 : 0.0;
}

const char *ncsim_sim_error(const ncsim_sim_t *h)
{
    return h ? sim_error(h->s) : "";
}

/* ---- statistics -------------------------------------------------------------------------------- */

ncsim_status_t ncsim_sim_summary(ncsim_sim_t *h, ncsim_summary_t *out)
{
    if (!h || !out)
        return api_fail(NCSIM_USAGE, "usage", "summary: no simulator or output");
    const sim_stats_t *s = sim_stats(h->s);
    memset(out, 0, sizeof *out);
    out->total_ns = (double)s->total_ps / 1000.0;
    out->mfu = s->mfu;
    out->hfu = s->hfu;
    out->instructions = s->instructions;
    out->events = s->events;
    out->tensor_flops = s->tensor_flops;
    out->hbm_read_bytes = s->hbm_read_bytes;
    out->hbm_write_bytes = s->hbm_write_bytes;
    for (uint32_t c = 0; c < s->ncores; c++) {
        const sim_core_stats_t *cs = &s->cores[c];
        out->cores_used += cs->used ? 1u : 0u;
        out->dma_bytes += cs->dma_bytes;
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            out->engine_busy_ns[e] += (double)cs->engines[e].busy_ps / 1000.0;
            out->engine_stall_ns[e] += (double)cs->engines[e].stall_ps / 1000.0;
        }
    }
    out->host_seconds = h->drive.host_seconds;
    return NCSIM_OK;
}

/* A copy of the first line of `text` (NULL when out of memory). */
static char *first_line(const char *text)
{
    size_t n = strcspn(text, "\n");
    char *line = malloc(n + 1);
    if (line) {
        memcpy(line, text, n);
        line[n] = 0;
    }
    return line;
}

ncsim_status_t ncsim_sim_set_failure(ncsim_sim_t *h, const char *why)
{
    if (!h)
        return api_fail(NCSIM_USAGE, "usage", "set_failure: no simulator");
    free(h->failure);
    h->failure = NULL;
    if (why && !(h->failure = first_line(why)))
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    return NCSIM_OK;
}

/* What the statistics say about the run: why it failed (NULL: it did not), its times. */
static sim_run_info_t run_info(ncsim_sim_t *h)
{
    const char *failed = h->failure;
    if (!failed && h->s && !sim_finished(h->s) && *sim_error(h->s)) {
        free(h->run_failure);
        h->run_failure = first_line(sim_error(h->s));
        failed = h->run_failure ? h->run_failure : "failed";
    }
    sim_run_info_t info = {h->program_name ? h->program_name : "",
                           h->opt.timing_only,
                           h->opt.seed,
                           h->drive.host_seconds,
                           failed,
                           h->prog->load_seconds};
    return info;
}

ncsim_status_t ncsim_sim_stats_json(ncsim_sim_t *h, char **json)
{
    if (!h || !json)
        return api_fail(NCSIM_USAGE, "usage", "stats_json: no simulator or output");
    sim_run_info_t info = run_info(h);
    *json = sim_stats_json(sim_stats(h->s), &h->arch, h->prog->p, &info);
    return *json ? NCSIM_OK : api_fail(NCSIM_NOMEM, "memory", "out of memory");
}

ncsim_status_t ncsim_sim_print_summary(ncsim_sim_t *h, FILE *out)
{
    if (!h || !out)
        return api_fail(NCSIM_USAGE, "usage", "print_summary: no simulator or stream");
    sim_run_info_t info = run_info(h);
    sim_stats_print(out, sim_stats(h->s), &h->arch, h->prog->p, &info);
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_arch_json(const ncsim_sim_t *h, char **json)
{
    if (!h || !json)
        return api_fail(NCSIM_USAGE, "usage", "arch_json: no simulator or output");
    *json = mdl_arch_to_json(&h->arch);
    return *json ? NCSIM_OK : api_fail(NCSIM_NOMEM, "memory", "out of memory");
}

/* ---- findings ---------------------------------------------------------------------------------- */

size_t ncsim_sim_finding_count(const ncsim_sim_t *h)
{
    return h && h->chk ? chk_count(h->chk) : 0;
}

uint64_t ncsim_sim_findings_dropped(const ncsim_sim_t *h)
{
    return h && h->chk ? chk_dropped(h->chk) : 0;
}

static void site_out(const chk_site_t *s, ncsim_site_t *o)
{
    memset(o, 0, sizeof *o);
    o->engine = -1;
    o->queue = -1;
    if (!s->valid)
        return;
    o->valid = 1;
    o->core = s->core;
    o->engine = s->engine;
    o->queue = s->queue;
    o->instruction = s->index;
    o->line = s->instr ? s->instr->line : 0;
    o->write = s->write;
}

ncsim_status_t ncsim_sim_finding(ncsim_sim_t *h, size_t i, ncsim_finding_t *out)
{
    if (!h || !out || !h->chk || i >= chk_count(h->chk))
        return api_fail(NCSIM_USAGE, "usage", "finding: no finding %zu", i);
    size_t n = chk_count(h->chk);
    if (!h->finding_text && !(h->finding_text = calloc(n, sizeof *h->finding_text)))
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    if (!h->finding_text[i] && !(h->finding_text[i] = chk_finding_text(h->chk, i)))
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    const chk_finding_t *f = chk_finding(h->chk, i);
    memset(out, 0, sizeof *out);
    out->kind = chk_kind_name(f->kind);
    out->race = f->kind == CHK_KIND_RACE ? chk_race_name(f->race) : "";
    out->message = h->finding_text[i];
    out->memory = f->has_range ? chk_space_name(f->space) : "";
    out->tensor = chk_finding_tensor(h->chk, i);
    out->unit = f->unit;
    out->partition_lo = f->p0;
    out->partition_hi = f->p1;
    out->byte_lo = f->lo;
    out->byte_hi = f->hi;
    site_out(&f->first, &out->first);
    site_out(&f->second, &out->second);
    out->count = f->count;
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_findings_print(const ncsim_sim_t *h, FILE *out, size_t limit)
{
    if (!h || !out)
        return api_fail(NCSIM_USAGE, "usage", "findings_print: no simulator or stream");
    if (h->chk)
        chk_print(h->chk, out, limit);
    return NCSIM_OK;
}

ncsim_status_t ncsim_sim_findings_json(const ncsim_sim_t *h, char **json)
{
    if (!h || !json || !h->chk)
        return api_fail(NCSIM_USAGE, "usage", "findings_json: no simulator with checks");
    *json = chk_json(h->chk);
    return *json ? NCSIM_OK : api_fail(NCSIM_NOMEM, "memory", "out of memory");
}
