/*
 * bench_check.c -- the cost of `ncsim check`: for each kernel, the time of a functional run
 * with every check on (sim/checker.h, CHK_ALL, static checks included) over the time of the
 * same functional run without the checker. Issue 7 aims at 5x or less.
 *
 * Both runs use the same random inputs (seed 0, as `ncsim run --random-inputs 0` and
 * `ncsim check` by default) and the kernel's `.arch` (else trn1). Timed: sim_run, plus the
 * checker's construction and static checks; not: assembly, building the system, inputs. Each is
 * repeated REPEAT times and the best time kept, since other work on the machine only ever
 * adds time. OpenBLAS should run single-threaded (OPENBLAS_NUM_THREADS=1), as in the tests.
 *
 * Usage: bench_check [--repeat N] [KERNEL.nca ...]   (default: kernels/NAME.nca under
 *        $NCSIM_SOURCE_DIR, else under the current directory; repeat 1)
 */
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "arch.h"
#include "asm.h"
#include "checker.h"
#include "rng.h"
#include "sim.h"

static double now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = n >= 0 ? malloc((size_t)n + 1) : NULL;
    if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        buf = NULL;
    }
    fclose(f);
    if (buf)
        buf[n] = '\0';
    return buf;
}

/* Bind the inputs as `ncsim run --random-inputs 0` does. */
static int bind_inputs(sim_t *s, const isa_program_t *p)
{
    for (uint32_t i = 0; i < p->ntensors; i++) {
        const isa_tensor_t *T = &p->tensors[i];
        if (T->space != ISA_SPACE_HBM || (T->kind != ISA_TK_INPUT && T->kind != ISA_TK_INOUT))
            continue;
        uint64_t n = sim_tensor_elems(p, i);
        float *v = malloc((size_t)(n ? n : 1) * sizeof *v);
        if (!v)
            return -1;
        mdl_rng_t r;
        mdl_rng_seed(&r, 0, 0x1000 + i);
        for (uint64_t j = 0; j < n; j++)
            v[j] = mdl_rng_float(&r) * 2.0f - 1.0f;
        ncsim_status_t st = sim_tensor_write_f32(s, i, v);
        free(v);
        if (st != NCSIM_OK)
            return -1;
    }
    return 0;
}

/* One functional run, with or without the checker: seconds (the checker's construction and
 * static checks, then sim_run), or a negative value on error. */
static double timed_run(const isa_program_t *p, const mdl_arch_t *arch, int checked,
                        size_t *findings)
{
    chk_t *k = NULL;
    sim_t *s = NULL;
    sim_options_t o;
    memset(&o, 0, sizeof o);
    o.arch = arch;
    char err[1024];
    double t = -1, t0 = now_seconds();
    if (checked) {
        if (chk_create(p, arch, CHK_ALL, &k) != NCSIM_OK)
            return -1;
        chk_static(k);
        o.observer = chk_observer(k);
    }
    double setup = now_seconds() - t0;
    if (sim_create(p, &o, &s, err, sizeof err) != NCSIM_OK) {
        fprintf(stderr, "bench_check: %s\n", err);
        chk_destroy(k);
        return -1;
    }
    if (bind_inputs(s, p) == 0) {
        t0 = now_seconds();
        ncsim_status_t st = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
        t = now_seconds() - t0 + setup;
        if (st != NCSIM_OK)
            fprintf(stderr, "bench_check: the run failed:\n%s", sim_error(s));
        if (k)
            *findings = chk_count(k);
    }
    sim_destroy(s);
    chk_destroy(k);
    return t;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
    int repeat = 1;
    char **files = NULL;
    size_t nfiles = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--repeat") == 0 && i + 1 < argc) {
            repeat = atoi(argv[++i]);
            if (repeat < 1)
                repeat = 1;
            continue;
        }
        char **grown = realloc(files, (nfiles + 1) * sizeof *files);
        if (!grown)
            return 4;
        files = grown;
        files[nfiles++] = strdup(argv[i]);
    }
    if (!nfiles) {
        const char *root = getenv("NCSIM_SOURCE_DIR");
        char dir[4096];
        snprintf(dir, sizeof dir, "%s/kernels", root ? root : ".");
        DIR *d = opendir(dir);
        if (!d) {
            fprintf(stderr, "bench_check: cannot open %s\n", dir);
            return 3;
        }
        struct dirent *e;
        while ((e = readdir(d))) {
            size_t len = strlen(e->d_name);
            if (len < 5 || strcmp(e->d_name + len - 4, ".nca") != 0)
                continue;
            char **grown = realloc(files, (nfiles + 1) * sizeof *files);
            if (!grown)
                return 4;
            files = grown;
            size_t sz = strlen(dir) + len + 2;
            files[nfiles] = malloc(sz);
            if (!files[nfiles])
                return 4;
            snprintf(files[nfiles++], sz, "%s/%s", dir, e->d_name);
        }
        closedir(d);
        qsort(files, nfiles, sizeof *files, cmp_str);
    }
    printf("%-28s %10s %10s %7s %9s\n", "kernel", "plain s", "checked s", "ratio", "findings");
    double worst = 0, logsum = 0;
    int counted = 0, rc = 0;
    for (size_t f = 0; f < nfiles; f++) {
        char *text = read_file(files[f]);
        if (!text) {
            fprintf(stderr, "bench_check: cannot read %s\n", files[f]);
            rc = 3;
            continue;
        }
        isa_asm_options_t opt;
        isa_asm_options_default(&opt);
        opt.filename = files[f];
        opt.arch_lookup = mdl_arch_geometry_lookup;
        isa_diag_t diag;
        isa_diag_init(&diag, 0);
        isa_program_t *p = NULL;
        ncsim_status_t st = isa_assemble(text, strlen(text), &opt, &p, &diag);
        free(text);
        if (st != NCSIM_OK) {
            fprintf(stderr, "%s", diag.text ? diag.text : "");
            isa_diag_free(&diag);
            rc = 2;
            continue;
        }
        isa_diag_free(&diag);
        mdl_arch_t arch;
        char err[512];
        if (mdl_arch_load(p->arch[0] ? p->arch : "trn1", &arch, err, sizeof err) != NCSIM_OK) {
            fprintf(stderr, "bench_check: %s\n", err);
            isa_program_free(p);
            rc = 2;
            continue;
        }
        double plain = INFINITY, checked = INFINITY;
        size_t findings = 0;
        int failed = 0;
        for (int r = 0; r < repeat && !failed; r++) {
            double a = timed_run(p, &arch, 0, &findings);
            double b = timed_run(p, &arch, 1, &findings);
            failed = a < 0 || b < 0;
            if (a < plain)
                plain = a;
            if (b < checked)
                checked = b;
        }
        isa_program_free(p);
        const char *name = strrchr(files[f], '/') ? strrchr(files[f], '/') + 1 : files[f];
        if (failed) {
            printf("%-28s failed\n", name);
            rc = 1;
            continue;
        }
        double ratio = checked / plain;
        printf("%-28s %10.3f %10.3f %6.2fx %9zu\n", name, plain, checked, ratio, findings);
        fflush(stdout);
        if (ratio > worst)
            worst = ratio;
        logsum += log(ratio);
        counted++;
    }
    if (counted)
        printf("worst %.2fx, geometric mean %.2fx over %d kernels (aim: <= 5x)\n", worst,
               exp(logsum / counted), counted);
    for (size_t f = 0; f < nfiles; f++)
        free(files[f]);
    free(files);
    return rc;
}
