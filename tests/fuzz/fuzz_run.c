/*
 * fuzz_run.c -- libFuzzer target that assembles NCA text AND runs it: timing-only, then
 * functional with `ncsim check`'s observer on. On a small machine (SBUF of 16 KiB
 * per partition, PSUM as trn1, 4 MiB of HBM, at most 2 chips and 512 instructions), so that one
 * input runs in milliseconds. Whatever the program, the run ends with NCSIM_OK or a
 * program error with a message (NCSIM_PROGRAM / NCSIM_USAGE), never a crash or a sanitizer
 * report, and the statistics print.
 */
#include <stdint.h>
#include <string.h>

#include "arch.h"
#include "asm.h"
#include "checker.h"
#include "fuzz_util.h"
#include "sim.h"
#include "stats.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static mdl_arch_t arch;
static int arch_ready;

static void small_arch(void)
{
    char err[512];
    static const char *const sets[] = {"sbuf.bytes_per_partition=16384",
                                       "psum.bytes_per_partition=16384",
                                       "hbm.size_bytes=4194304"};
    fz_check(mdl_arch_load("trn1", &arch, err, sizeof err) == NCSIM_OK, "fuzz_run", "trn1");
    for (size_t i = 0; i < sizeof sets / sizeof sets[0]; i++)
        fz_check(mdl_arch_set(&arch, sets[i], err, sizeof err) == NCSIM_OK, "fuzz_run", err);
    fz_check(mdl_arch_validate(&arch, err, sizeof err) == NCSIM_OK, "fuzz_run", err);
    arch_ready = 1;
}

static void run_once(const isa_program_t *p, int timing_only)
{
    sim_options_t so;
    memset(&so, 0, sizeof so);
    so.arch = &arch;
    so.timing_only = timing_only;
    so.seed = 1;
    chk_t *chk = NULL;
    if (!timing_only && chk_create(p, &arch, CHK_ALL, &chk) == NCSIM_OK) {
        chk_static(chk);
        so.observer = chk_observer(chk);
    }
    sim_t *s = NULL;
    char err[2048] = "";
    ncsim_status_t st = sim_create(p, &so, &s, err, sizeof err);
    if (st != NCSIM_OK) {
        fz_check(err[0] != 0, "fuzz_run", "sim_create failed without a message");
        chk_destroy(chk);
        return;
    }
    for (uint32_t t = 0; t < p->ntensors && !timing_only; t++)
        if (p->tensors[t].space == ISA_SPACE_HBM &&
            (p->tensors[t].kind == ISA_TK_INPUT || p->tensors[t].kind == ISA_TK_INOUT))
            (void)sim_tensor_fill_random(s, t, 7);
    st = sim_run(s, SIM_RUN_UNTIL_IDLE, 0);
    if (st != NCSIM_OK)
        fz_check(sim_error(s)[0] != 0, "fuzz_run", "a failed run without a message");
    sim_run_info_t info = {"fuzz.nca", timing_only, 1, 0.0, st != NCSIM_OK ? "failed" : NULL, 0.0};
    char *json = sim_stats_json(sim_stats(s), &arch, p, &info);
    free(json);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        sim_stats_print(null, sim_stats(s), &arch, p, &info);
        if (chk)
            chk_print(chk, null, 50);
        fclose(null);
    }
    sim_destroy(s);
    chk_destroy(chk);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!arch_ready)
        small_arch();
    if (size > 1 << 16)
        return 0;
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "fuzz.nca";
    mdl_arch_geometry(&arch, &opt.geometry);
    isa_diag_t d;
    isa_diag_init(&d, 4);
    isa_program_t *p = NULL;
    ncsim_status_t st = isa_assemble((const char *)data, size, &opt, &p, &d);
    isa_diag_free(&d);
    if (st != NCSIM_OK)
        return 0;
    /* keep each input cheap: few instructions, few chips (a view touches at most the small
     * memories above) */
    if (p->ninstrs <= 512 && p->chips <= 2) {
        run_once(p, 1);
        run_once(p, 0);
    }
    isa_program_free(p);
    return 0;
}
