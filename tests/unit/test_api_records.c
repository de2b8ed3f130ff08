/*
 * test_api_records.c -- the public API's records of a run, through include/ncsim.h alone (no
 * internal header): ncsim_sim_set_record_hooks (instruction and transfer records, with and
 * without a trace file), ncsim_sim_counter (exact counters by name, bad keys), ncsim_opcode,
 * ncsim_arch_same_memory and ncsim_write_file. Expected values are computed by hand from the
 * program and the pinned config keys below.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "ncsim.h"

/* Three nops on sp of one core, then a dma of 4 KiB from HBM to SBUF that waits for them:
 * with sp at 1.4 GHz and 64 issue cycles a nop lasts 64 / 1.4 ns, and they start back to
 * back. */
static const char PROG[] = ".arch trn1\n"
                           ".hbm x fp32 [128, 8] input\n"
                           ".core 0\n"
                           ".sbuf a fp32 [128, 8]\n"
                           ".engine sp\n"
                           "nop\n"
                           "nop\n"
                           "nop\n"
                           "dma a, x\n";

static ncsim_arch_t *pinned_arch(void)
{
    ncsim_arch_t *a = NULL;
    assert_int_equal(ncsim_arch_load("trn1", &a), NCSIM_OK);
    assert_int_equal(ncsim_arch_set(a, "sp.clock_ghz=1.4"), NCSIM_OK);
    assert_int_equal(ncsim_arch_set(a, "sp.issue_cycles=64"), NCSIM_OK);
    return a;
}

typedef struct seen {
    uint64_t nops, dmas, other, transfers, transfer_bytes;
    uint64_t nop_ps, last_nop_start;
    int32_t sp;
    uint32_t lines[8];
} seen_t;

static void on_instruction(void *ctx, const ncsim_instruction_record_t *r)
{
    seen_t *s = ctx;
    assert_int_equal(r->core, 0);
    assert_true(r->end_ps >= r->start_ps && r->start_ps >= r->ready_ps);
    const char *name = ncsim_opcode_name(r->opcode);
    assert_non_null(name);
    if (strcmp(name, "nop") == 0) {
        assert_int_equal(r->engine, NCSIM_SP);
        assert_true(r->start_ps >= s->last_nop_start);
        s->last_nop_start = r->start_ps;
        s->nop_ps += r->end_ps - r->start_ps;
        if (s->nops < 8)
            s->lines[s->nops] = r->line;
        s->nops++;
    } else if (strcmp(name, "dma") == 0) {
        s->dmas++;
    } else {
        s->other++;
    }
}

static void on_transfer(void *ctx, const ncsim_transfer_record_t *r)
{
    seen_t *s = ctx;
    assert_true(r->issue_ps <= r->start_ps && r->start_ps < r->end_ps);
    assert_int_equal(r->engine, NCSIM_SP);
    assert_int_equal(r->line, 9);
    s->transfers++;
    s->transfer_bytes += r->bytes;
}

static ncsim_sim_t *run_with_hooks(const ncsim_program_t *p, const ncsim_arch_t *a,
                                   const char *trace, seen_t *seen)
{
    ncsim_options_t o;
    ncsim_options_init(&o);
    o.timing_only = 1;
    o.trace_path = trace;
    ncsim_sim_t *s = NULL;
    assert_int_equal(ncsim_sim_create(p, a, &o, &s), NCSIM_OK);
    ncsim_record_hooks_t h = {seen, on_instruction, on_transfer};
    assert_int_equal(ncsim_sim_set_record_hooks(s, &h), NCSIM_OK);
    assert_int_equal(ncsim_sim_run(s), NCSIM_OK);
    /* too late once the run has started */
    assert_int_equal(ncsim_sim_set_record_hooks(s, &h), NCSIM_USAGE);
    assert_non_null(strstr(ncsim_last_error(), "started"));
    return s;
}

static void test_records_and_counters(void **state)
{
    (void)state;
    ncsim_arch_t *a = pinned_arch();
    ncsim_program_t *p = NULL;
    assert_int_equal(ncsim_assemble(PROG, strlen(PROG), "rec.nca", a, &p), NCSIM_OK);
    seen_t seen = {0};
    ncsim_sim_t *s = run_with_hooks(p, a, NULL, &seen);
    assert_int_equal(seen.nops, 3);
    assert_int_equal(seen.dmas, 1);
    assert_int_equal(seen.other, 0);
    assert_int_equal(seen.lines[0], 6);
    assert_int_equal(seen.lines[2], 8);
    /* 64 cycles at 1.4 GHz = 45714.28... ps each, on the simulator's integer clock */
    assert_true(seen.nop_ps >= 3 * 45714 && seen.nop_ps <= 3 * 45715);
    assert_true(seen.transfers >= 1);
    assert_int_equal(seen.transfer_bytes, 128 * 8 * 4);

    uint64_t v = 0, total = 0;
    assert_int_equal(ncsim_sim_counter(s, "total_ps", &total), NCSIM_OK);
    ncsim_summary_t sum;
    assert_int_equal(ncsim_sim_summary(s, &sum), NCSIM_OK);
    assert_true(total > 0);
    assert_true((double)total / 1000.0 == sum.total_ns);
    assert_int_equal(ncsim_sim_counter(s, "instructions", &v), NCSIM_OK);
    assert_int_equal(v, 4);
    assert_int_equal(ncsim_sim_counter(s, "core.0.sp.instructions", &v), NCSIM_OK);
    assert_int_equal(v, 4);
    assert_int_equal(ncsim_sim_counter(s, "core.0.pe.instructions", &v), NCSIM_OK);
    assert_int_equal(v, 0);
    assert_int_equal(ncsim_sim_counter(s, "core.0.dma_bytes", &v), NCSIM_OK);
    assert_int_equal(v, 128 * 8 * 4);
    assert_int_equal(ncsim_sim_counter(s, "hbm_read_bytes", &v), NCSIM_OK);
    assert_int_equal(v, 128 * 8 * 4);
    assert_int_equal(ncsim_sim_counter(s, "core.0.used", &v), NCSIM_OK);
    assert_int_equal(v, 1);
    assert_int_equal(ncsim_sim_counter(s, "cores", &v), NCSIM_OK);
    assert_true(v >= 1);
    uint64_t ncores = v;
    assert_int_equal(ncsim_sim_counter(s, "core.0.sp.busy_ps", &v), NCSIM_OK);
    assert_true(v > 0 && v <= total);
    /* bad keys name themselves; a core out of range says how many there are */
    assert_int_equal(ncsim_sim_counter(s, "total_ns", &v), NCSIM_USAGE);
    assert_non_null(strstr(ncsim_last_error(), "'total_ns'"));
    assert_int_equal(ncsim_sim_counter(s, "core.0.xyz.busy_ps", &v), NCSIM_USAGE);
    assert_int_equal(ncsim_sim_counter(s, "core.0.", &v), NCSIM_USAGE);
    assert_int_equal(ncsim_sim_counter(s, "core.", &v), NCSIM_USAGE);
    char key[64];
    snprintf(key, sizeof key, "core.%u.dma_bytes", (unsigned)ncores);
    assert_int_equal(ncsim_sim_counter(s, key, &v), NCSIM_USAGE);
    assert_non_null(strstr(ncsim_last_error(), "cores"));
    assert_int_equal(ncsim_sim_counter(s, "core.99999999999999999999.used", &v), NCSIM_USAGE);
    assert_int_equal(ncsim_sim_counter(NULL, "total_ps", &v), NCSIM_USAGE);
    ncsim_sim_free(s);

    /* with a trace file too: the same records, and the trace is still written whole */
    char trace[] = "/tmp/ncsim-test-records-XXXXXX.json";
    int fd = mkstemps(trace, 5);
    assert_true(fd >= 0);
    close(fd);
    seen_t again = {0};
    s = run_with_hooks(p, a, trace, &again);
    assert_int_equal(ncsim_sim_close_trace(s), NCSIM_OK);
    ncsim_sim_free(s);
    assert_int_equal(again.nops, seen.nops);
    assert_int_equal(again.nop_ps, seen.nop_ps);
    assert_int_equal(again.transfers, seen.transfers);
    char *json = NULL;
    assert_int_equal(ncsim_report_json(trace, &json), NCSIM_OK);
    assert_non_null(strstr(json, "\"total"));
    ncsim_free(json);
    unlink(trace);

    /* hooks removed again (NULL): the run has none */
    ncsim_options_t o;
    ncsim_options_init(&o);
    o.timing_only = 1;
    assert_int_equal(ncsim_sim_create(p, a, &o, &s), NCSIM_OK);
    seen_t none = {0};
    ncsim_record_hooks_t h = {&none, on_instruction, on_transfer};
    assert_int_equal(ncsim_sim_set_record_hooks(s, &h), NCSIM_OK);
    assert_int_equal(ncsim_sim_set_record_hooks(s, NULL), NCSIM_OK);
    assert_int_equal(ncsim_sim_run(s), NCSIM_OK);
    assert_int_equal(none.nops + none.dmas + none.transfers, 0);
    ncsim_sim_free(s);
    ncsim_program_free(p);
    ncsim_arch_free(a);
}

static void test_opcodes(void **state)
{
    (void)state;
    int32_t mm = ncsim_opcode("matmul");
    assert_true(mm >= 0);
    assert_string_equal(ncsim_opcode_name(mm), "matmul");
    assert_int_equal(ncsim_opcode("no_such_instruction"), -1);
    assert_int_equal(ncsim_opcode(""), -1);
    assert_int_equal(ncsim_opcode(NULL), -1);
    assert_null(ncsim_opcode_name(-1));
    assert_null(ncsim_opcode_name(1 << 20));
    /* every opcode's name looks up to itself */
    for (int32_t i = 0; ncsim_opcode_name(i); i++)
        assert_int_equal(ncsim_opcode(ncsim_opcode_name(i)), i);
}

static void test_same_memory(void **state)
{
    (void)state;
    ncsim_arch_t *a = pinned_arch(), *b = NULL, *c = NULL;
    assert_int_equal(ncsim_arch_copy(a, &b), NCSIM_OK);
    assert_int_equal(ncsim_arch_same_memory(a, b), 1);
    /* a timing key changes no program */
    assert_int_equal(ncsim_arch_set(b, "hbm.bandwidth_gbps=1234"), NCSIM_OK);
    assert_int_equal(ncsim_arch_same_memory(a, b), 1);
    /* a memory size does: SBUF, PSUM or HBM */
    assert_int_equal(ncsim_arch_copy(a, &c), NCSIM_OK);
    assert_int_equal(ncsim_arch_set(c, "hbm.size_bytes=1073741824"), NCSIM_OK);
    assert_int_equal(ncsim_arch_same_memory(a, c), 0);
    assert_int_equal(ncsim_arch_set(b, "sbuf.bytes_per_partition=98304"), NCSIM_OK);
    assert_int_equal(ncsim_arch_same_memory(a, b), 0);
    assert_int_equal(ncsim_arch_same_memory(a, NULL), 0);
    ncsim_arch_free(a);
    ncsim_arch_free(b);
    ncsim_arch_free(c);
}

static void test_write_file(void **state)
{
    (void)state;
    char dir[] = "/tmp/ncsim-test-write-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    assert_int_equal(ncsim_write_file(path, "old\n", 4), NCSIM_OK);
    assert_int_equal(ncsim_write_file(path, "hello\n", 6), NCSIM_OK);
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    char buf[16] = {0};
    assert_int_equal(fread(buf, 1, sizeof buf, f), 6);
    fclose(f);
    assert_string_equal(buf, "hello\n");
    /* a place that cannot be written: NCSIM_IO naming it, and the old file untouched */
    char bad[160];
    snprintf(bad, sizeof bad, "%s/no/such/dir/x.txt", dir);
    assert_int_equal(ncsim_write_file(bad, "x", 1), NCSIM_IO);
    assert_non_null(strstr(ncsim_last_error(), "no/such/dir"));
    assert_int_equal(ncsim_last_error_info()->status, NCSIM_IO);
    assert_int_equal(ncsim_write_file(NULL, "x", 1), NCSIM_USAGE);
    /* nothing but the one file in the directory: no temporary left */
    char cmd[256];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) = 1", dir);
    assert_int_equal(system(cmd), 0);
    unlink(path);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_records_and_counters),
        cmocka_unit_test(test_opcodes),
        cmocka_unit_test(test_same_memory),
        cmocka_unit_test(test_write_file),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
