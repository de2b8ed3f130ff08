/*
 * program.c -- architectures and programs of the public API: presets, JSON configs and
 * overrides; assembling, loading, saving and disassembling programs; their tensors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "api_internal.h"
#include "asm.h"
#include "dis.h"
#include "load.h"
#include "ncx.h"
#include "sim.h"

/* ---- architectures --------------------------------------------------------------------------- */

const char *ncsim_preset_name(size_t index)
{
    const char *const *names = mdl_arch_preset_names();
    for (size_t i = 0; names[i]; i++)
        if (i == index)
            return names[i];
    return NULL;
}

static ncsim_status_t arch_status(ncsim_status_t st, const char *err)
{
    return api_fail(st == NCSIM_IO ? NCSIM_IO : st == NCSIM_NOMEM ? NCSIM_NOMEM : NCSIM_USAGE,
                    st == NCSIM_IO ? "io" : "config", "%s", err);
}

ncsim_status_t ncsim_arch_load(const char *name_or_path, ncsim_arch_t **out)
{
    if (!out)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_load: no output handle");
    *out = NULL;
    ncsim_arch_t *a = calloc(1, sizeof *a);
    if (!a)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    char err[4096];
    ncsim_status_t st = mdl_arch_load(name_or_path, &a->a, err, sizeof err);
    if (st != NCSIM_OK) {
        free(a);
        return arch_status(st, err);
    }
    *out = a;
    return NCSIM_OK;
}

ncsim_status_t ncsim_arch_from_json(const char *json, size_t len, const char *name,
                                    ncsim_arch_t **out)
{
    if (!out || !json)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_from_json: no text or output handle");
    *out = NULL;
    ncsim_arch_t *a = calloc(1, sizeof *a);
    if (!a)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    char err[4096];
    ncsim_status_t st = mdl_arch_parse(json, len, name, &a->a, err, sizeof err);
    if (st != NCSIM_OK) {
        free(a);
        return arch_status(st, err);
    }
    *out = a;
    return NCSIM_OK;
}

ncsim_status_t ncsim_arch_set(ncsim_arch_t *arch, const char *assignment)
{
    if (!arch || !assignment)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_set: no architecture or assignment");
    char err[1024];
    ncsim_status_t st = mdl_arch_set(&arch->a, assignment, err, sizeof err);
    return st == NCSIM_OK ? st : arch_status(st, err);
}

ncsim_status_t ncsim_arch_validate(const ncsim_arch_t *arch)
{
    if (!arch)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_validate: no architecture");
    char err[1024];
    ncsim_status_t st = mdl_arch_validate(&arch->a, err, sizeof err);
    return st == NCSIM_OK ? st : arch_status(st, err);
}

ncsim_status_t ncsim_arch_to_json(const ncsim_arch_t *arch, char **json)
{
    if (!arch || !json)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_to_json: no architecture or output");
    *json = mdl_arch_to_json(&arch->a);
    return *json ? NCSIM_OK : api_fail(NCSIM_NOMEM, "memory", "out of memory");
}

ncsim_status_t ncsim_arch_get(const ncsim_arch_t *arch, const char *key, char **value)
{
    if (!arch || !key || !value)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_get: no architecture, key or output");
    char buf[512];
    if (mdl_arch_get(&arch->a, key, buf, sizeof buf) != NCSIM_OK)
        return api_fail(NCSIM_USAGE, "config", "unknown architecture key '%s'", key);
    *value = strdup(buf);
    return *value ? NCSIM_OK : api_fail(NCSIM_NOMEM, "memory", "out of memory");
}

ncsim_status_t ncsim_arch_copy(const ncsim_arch_t *arch, ncsim_arch_t **out)
{
    if (!arch || !out)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_arch_copy: no architecture or output");
    *out = malloc(sizeof **out);
    if (!*out)
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    **out = *arch;
    return NCSIM_OK;
}

void ncsim_arch_free(ncsim_arch_t *arch)
{
    free(arch);
}

/* ---- programs ------------------------------------------------------------------------------- */

/* The geometry to check against: the arch given, else trn1 (which the program's `.arch`
 * replaces through mdl_arch_geometry_lookup). */
static ncsim_status_t geometry_for(const ncsim_arch_t *arch, isa_geometry_t *g)
{
    if (arch) {
        mdl_arch_geometry(&arch->a, g);
        return NCSIM_OK;
    }
    mdl_arch_t a;
    char err[1024];
    ncsim_status_t st = mdl_arch_load("trn1", &a, err, sizeof err);
    if (st != NCSIM_OK)
        return arch_status(st, err);
    mdl_arch_geometry(&a, g);
    return NCSIM_OK;
}

static ncsim_status_t wrap(isa_program_t *p, ncsim_program_t **out)
{
    ncsim_program_t *h = malloc(sizeof *h);
    if (!h) {
        isa_program_free(p);
        return api_fail(NCSIM_NOMEM, "memory", "out of memory");
    }
    h->p = p;
    h->load_seconds = 0.0;
    *out = h;
    return NCSIM_OK;
}

ncsim_status_t ncsim_assemble(const char *text, size_t len, const char *name,
                              const ncsim_arch_t *arch, ncsim_program_t **out)
{
    if (!out || (!text && len))
        return api_fail(NCSIM_USAGE, "usage", "ncsim_assemble: no text or output handle");
    *out = NULL;
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    ncsim_status_t st = geometry_for(arch, &opt.geometry);
    if (st != NCSIM_OK)
        return st;
    opt.filename = name && *name ? name : "<string>";
    opt.arch_lookup = arch ? NULL : mdl_arch_geometry_lookup;
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *p = NULL;
    st = isa_assemble(text ? text : "", len, &opt, &p, &diag);
    if (st != NCSIM_OK) {
        api_fail_diag(st, &diag);
        isa_diag_free(&diag);
        return st;
    }
    isa_diag_free(&diag);
    return wrap(p, out);
}

ncsim_status_t ncsim_program_load_file(const char *path, const ncsim_arch_t *arch,
                                       ncsim_program_t **out)
{
    return ncsim_program_load_file_max_errors(path, arch, 0, out);
}

ncsim_status_t ncsim_program_load_file_max_errors(const char *path, const ncsim_arch_t *arch,
                                                  unsigned max_errors, ncsim_program_t **out)
{
    if (!out || !path)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_program_load_file: no path or output");
    *out = NULL;
    isa_geometry_t g;
    ncsim_status_t st = geometry_for(arch, &g);
    if (st != NCSIM_OK)
        return st;
    isa_diag_t diag;
    isa_diag_init(&diag, max_errors);
    isa_program_t *p = NULL;
    double t0 = api_now_seconds();
    st = sim_load_program(path, &g, arch ? NULL : mdl_arch_geometry_lookup, NULL, &p, &diag);
    if (st != NCSIM_OK) {
        api_fail_diag(st, &diag);
        isa_diag_free(&diag);
        return st;
    }
    isa_diag_free(&diag);
    st = wrap(p, out);
    if (st == NCSIM_OK)
        (*out)->load_seconds = api_now_seconds() - t0;
    return st;
}

ncsim_status_t ncsim_program_load(const void *bytes, size_t len, const char *name,
                                  const ncsim_arch_t *arch, ncsim_program_t **out)
{
    if (!out || (!bytes && len))
        return api_fail(NCSIM_USAGE, "usage", "ncsim_program_load: no bytes or output handle");
    *out = NULL;
    isa_geometry_t g;
    ncsim_status_t st = geometry_for(arch, &g);
    if (st != NCSIM_OK)
        return st;
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *p = NULL;
    st = isa_ncx_read(bytes ? bytes : (const void *)"", len, &g, name && *name ? name : "<bytes>",
                      &p, &diag);
    if (st != NCSIM_OK) {
        api_fail_diag(st, &diag);
        isa_diag_free(&diag);
        return st;
    }
    isa_diag_free(&diag);
    return wrap(p, out);
}

ncsim_status_t ncsim_program_save(const ncsim_program_t *prog, void **bytes, size_t *len)
{
    if (!prog || !bytes || !len)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_program_save: no program or output");
    uint8_t *buf = NULL;
    ncsim_status_t st = isa_ncx_write(prog->p, &buf, len);
    if (st != NCSIM_OK)
        return api_fail(st, "memory", "cannot encode the program: %s", ncsim_status_text(st));
    *bytes = buf;
    return NCSIM_OK;
}

ncsim_status_t ncsim_program_save_file(const ncsim_program_t *prog, const char *path)
{
    if (!path)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_program_save_file: no path");
    void *buf = NULL;
    size_t len = 0;
    ncsim_status_t st = ncsim_program_save(prog, &buf, &len);
    if (st != NCSIM_OK)
        return st;
    if (sim_write_file(path, buf, len)) {
        int e = errno;
        free(buf);
        return api_fail_at(NCSIM_IO, "io", path, 0, 0, -1, -1, -1, "cannot write %s: %s", path,
                           strerror(e));
    }
    free(buf);
    return NCSIM_OK;
}

ncsim_status_t ncsim_program_disassemble(const ncsim_program_t *prog, char **text)
{
    if (!prog || !text)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_program_disassemble: no program or output");
    *text = isa_disassemble(prog->p);
    return *text ? NCSIM_OK : api_fail(NCSIM_NOMEM, "memory", "out of memory");
}

void ncsim_program_free(ncsim_program_t *prog)
{
    if (!prog)
        return;
    isa_program_free(prog->p);
    free(prog);
}

const char *ncsim_program_arch(const ncsim_program_t *prog)
{
    return prog ? prog->p->arch : "";
}

uint32_t ncsim_program_chips(const ncsim_program_t *prog)
{
    return prog ? prog->p->chips : 0;
}

uint32_t ncsim_program_cores(const ncsim_program_t *prog)
{
    return prog ? prog->p->ncores : 0;
}

uint64_t ncsim_program_instructions(const ncsim_program_t *prog)
{
    return prog ? prog->p->ninstrs : 0;
}

uint32_t ncsim_program_tensor_count(const ncsim_program_t *prog)
{
    return prog ? prog->p->ntensors : 0;
}

ncsim_status_t ncsim_program_tensor(const ncsim_program_t *prog, uint32_t index,
                                    ncsim_tensor_info_t *info)
{
    if (!prog || !info || index >= prog->p->ntensors)
        return api_fail(NCSIM_USAGE, "usage", "ncsim_program_tensor: no tensor %u", index);
    const isa_program_t *p = prog->p;
    const isa_tensor_t *T = &p->tensors[index];
    memset(info, 0, sizeof *info);
    info->name = isa_string(p, T->name);
    info->memory = (ncsim_memory_t)T->space;
    info->dtype = (ncsim_dtype_t)T->dtype;
    info->role = (ncsim_role_t)T->kind;
    info->ndim = T->ndims;
    info->elements = 1;
    for (unsigned d = 0; d < T->ndims && d < NCSIM_MAX_DIMS; d++) {
        info->shape[d] = T->dims[d];
        info->elements *= T->dims[d];
    }
    info->core = T->space == ISA_SPACE_HBM ? -1 : T->core;
    info->chip = T->space == ISA_SPACE_HBM ? T->chip : -1;
    return NCSIM_OK;
}

int32_t ncsim_program_find_tensor(const ncsim_program_t *prog, const char *name)
{
    if (!prog || !name)
        return -1;
    const isa_program_t *p = prog->p;
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (strcmp(isa_string(p, p->tensors[i].name), name) == 0)
            return (int32_t)i;
    return -1;
}

uint64_t ncsim_program_line_instructions(const ncsim_program_t *prog, uint32_t line)
{
    uint64_t n = 0;
    if (prog && line)
        for (uint32_t i = 0; i < prog->p->ninstrs; i++)
            n += prog->p->instrs[i].line == line;
    return n;
}

double ncsim_program_load_seconds(const ncsim_program_t *prog)
{
    return prog ? prog->load_seconds : 0.0;
}
