/*
 * test_asm.c -- the assembler: the ISA.md example, each directive, views, expressions and
 * placement, checked against hand-computed programs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "asm.h"
#include "testutil.h"

static isa_program_t *assemble(const char *text, isa_diag_t *diag)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_init(diag, 0);
    isa_program_t *p = NULL;
    isa_assemble(text, strlen(text), &opt, &p, diag);
    return p;
}

static isa_program_t *assemble_ok(const char *text)
{
    isa_diag_t d;
    isa_program_t *p = assemble(text, &d);
    if (!p)
        fprintf(stderr, "unexpected errors:\n%s", d.text ? d.text : "");
    isa_diag_free(&d);
    assert_non_null(p);
    return p;
}

/* Assemble text that must fail; the diagnostics must contain `expect`. */
static void assemble_fails(const char *text, const char *expect)
{
    isa_diag_t d;
    isa_program_t *p = assemble(text, &d);
    if (p || !d.text || !strstr(d.text, expect))
        fprintf(stderr, "expected '%s', got:\n%s", expect, d.text ? d.text : "(nothing)");
    assert_null(p);
    assert_non_null(d.text);
    assert_non_null(strstr(d.text, expect));
    isa_diag_free(&d);
}

static const isa_view_t *arg_view(const isa_program_t *p, const isa_instr_t *in, int slot)
{
    const isa_arg_t *a = &isa_instr_args(p, in)[slot];
    assert_true(a->present && a->is_view);
    return &p->views[a->index];
}

static void test_isa_example(void **state)
{
    (void)state;
    char *text = tu_read_file(tu_source_path("tests/asm/isa_example.nca"), NULL);
    assert_non_null(text);
    isa_program_t *p = assemble_ok(text);
    free(text);
    assert_int_equal(p->chips, 1);
    assert_int_equal(p->ncores, 2);
    assert_int_equal(p->ntensors, 7);
    assert_int_equal(p->nsems, 3);
    /* HBM placement: first fit, 64-byte aligned */
    assert_int_equal(p->tensors[0].offset, 0);
    assert_int_equal(p->tensors[1].offset, 128 * 128 * 2);
    assert_int_equal(p->tensors[2].offset, 128 * 128 * 2 + 128 * 512 * 2);
    /* SBUF placement: as at 0 (256 B per partition), bs at 256, cs after bs */
    assert_int_equal(p->tensors[3].offset, 0);
    assert_int_equal(p->tensors[4].offset, 256);
    assert_int_equal(p->tensors[6].offset, 256 + 1024);
    const isa_stream_t *sp = isa_stream(p, 0, ISA_ENGINE_SP);
    const isa_stream_t *pe = isa_stream(p, 0, ISA_ENGINE_PE);
    const isa_stream_t *act = isa_stream(p, 0, ISA_ENGINE_ACT);
    assert_int_equal(sp->count, 3);
    assert_int_equal(pe->count, 2); /* matmul shorthand: ldweights + matmul */
    assert_int_equal(act->count, 1);
    const isa_instr_t *lw = &p->instrs[pe->first];
    const isa_instr_t *mm = &p->instrs[pe->first + 1];
    assert_int_equal(lw->op, ISA_OP_LDWEIGHTS);
    assert_int_equal(lw->nwait, 1); /* waits go on the ldweights */
    assert_int_equal(lw->npost, 0);
    assert_int_equal(mm->op, ISA_OP_MATMUL);
    assert_int_equal(mm->nwait, 0);
    assert_int_equal(mm->npost, 1); /* posts on the matmul */
    assert_int_equal(lw->wait[0].value, 2);
    assert_int_equal(lw->line, 19);
    const isa_view_t *stat = arg_view(p, lw, 0);
    assert_int_equal(stat->space, ISA_SPACE_SBUF);
    assert_int_equal(stat->pcount, 128);
    assert_int_equal(stat->ndims, 1);
    assert_int_equal(stat->count[0], 128);
    const isa_instr_t *d0 = &p->instrs[sp->first];
    assert_int_equal(d0->op, ISA_OP_DMA);
    assert_int_equal(isa_instr_args(p, d0)[2].v.i, 0);
    const isa_view_t *hb = arg_view(p, d0, 1);
    assert_int_equal(hb->space, ISA_SPACE_HBM);
    assert_int_equal(hb->ndims, 2);
    assert_int_equal(hb->stride[0], 128);
    assert_int_equal(hb->count[0], 128);
    const isa_instr_t *a0 = &p->instrs[act->first];
    assert_int_equal(isa_instr_args(p, a0)[2].v.i, ISA_FUNC_COPY);
    assert_int_equal(a0->post[0].op, ISA_POST_ADD);
    assert_int_equal(a0->post[0].value, 1);
    isa_program_free(p);
}

static void test_slicing(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".sbuf x bf16 [128, 4, 256]\n"
                                   ".psum y fp32 [64, 512] @64\n"
                                   ".engine dve\n"
                                   "tensor_copy x[0:64, 1, 0:256:2], y[:, 0:128]\n"
                                   "tensor_copy x[64:128, 3, ::-2], y[:, 384:512]\n"
                                   "tensor_copy x[32, 2:4], x[32, 0:2]\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_DVE);
    assert_int_equal(s->count, 3);
    const isa_view_t *v = arg_view(p, &p->instrs[s->first], 0);
    assert_int_equal(v->pstart, 0);
    assert_int_equal(v->pcount, 64);
    assert_int_equal(v->ndims, 1); /* integer index dropped the middle dim */
    assert_int_equal(v->stride[0], 2);
    assert_int_equal(v->count[0], 128);
    assert_int_equal(v->offset, 256 * 2);
    const isa_view_t *y = arg_view(p, &p->instrs[s->first], 1);
    assert_int_equal(y->space, ISA_SPACE_PSUM);
    assert_int_equal(y->pstart, 64);
    v = arg_view(p, &p->instrs[s->first + 1], 0);
    assert_int_equal(v->pstart, 64);
    assert_int_equal(v->stride[0], -2);
    assert_int_equal(v->count[0], 128);
    assert_int_equal(v->offset, (3 * 256 + 255) * 2);
    y = arg_view(p, &p->instrs[s->first + 1], 1);
    assert_int_equal(y->offset, 384 * 4);
    /* an integer index on the partition dim keeps it (one partition) */
    v = arg_view(p, &p->instrs[s->first + 2], 0);
    assert_int_equal(v->pstart, 32);
    assert_int_equal(v->pcount, 1);
    assert_int_equal(v->ndims, 2);
    assert_int_equal(v->count[0], 2);
    assert_int_equal(v->count[1], 256);
    isa_program_free(p);
    assemble_fails(".sbuf x bf16 [128, 4]\n.engine dve\ntensor_copy x[5, 0:2], x[32, 0:2]\n",
                   "t.nca:3:13: error: D: 1 partitions cannot start at partition 5");
}

static void test_raw_views(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".engine dve\n"
                                   "tensor_copy sb:bf16@0:128+1024[64x4, 1x8], "
                                   "sb:fp32@0:128+0[0x32]\n"
                                   ".engine sp\n"
                                   "dma sb:bf16@0:128+0[1x512], hbm:bf16+0x100000[8192x128, 1x512]\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_DVE);
    const isa_view_t *v = arg_view(p, &p->instrs[s->first], 0);
    assert_int_equal(v->offset, 1024);
    assert_int_equal(v->ndims, 2);
    assert_int_equal(v->stride[0], 64);
    assert_int_equal(v->count[0], 4);
    assert_int_equal(v->stride[1], 1);
    assert_int_equal(v->count[1], 8);
    v = arg_view(p, &p->instrs[s->first], 1);
    assert_int_equal(v->stride[0], 0); /* "0x32": broadcast stride 0, count 32 */
    assert_int_equal(v->count[0], 32);
    s = isa_stream(p, 0, ISA_ENGINE_SP);
    v = arg_view(p, &p->instrs[s->first], 1);
    assert_int_equal(v->space, ISA_SPACE_HBM);
    assert_int_equal(v->offset, 0x100000);
    assert_int_equal(v->stride[0], 8192);
    isa_program_free(p);
}

static void test_loops_lets_ifs(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".let N = 4\n"
                                   ".sbuf x fp32 [128, 64]\n"
                                   ".engine dve\n"
                                   ".loop i = 0, N\n"
                                   "  .let j = i * 2\n"
                                   "  .if i % 2 == 0\n"
                                   "    memset x[:, j:j+1], 1.5\n"
                                   "  .elif i == 1\n"
                                   "    memset x[:, 10:11], -2\n"
                                   "  .else\n"
                                   "    .loop k = 3, 0, -1\n"
                                   "      memset x[:, k:k+1], 1.0/4\n"
                                   "    .endloop\n"
                                   "  .endif\n"
                                   ".endloop\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_DVE);
    /* i=0: 1, i=1: 1, i=2: 1, i=3: 3 (k = 3, 2, 1) */
    assert_int_equal(s->count, 6);
    const isa_instr_t *in = &p->instrs[s->first + 2];
    assert_int_equal(arg_view(p, in, 0)->offset, 4 * 4); /* j = 4 */
    in = &p->instrs[s->first + 1];
    assert_true(isa_instr_args(p, in)[1].v.f == -2.0);
    in = &p->instrs[s->first + 3];
    assert_true(isa_instr_args(p, in)[1].v.f == 0.25);
    assert_int_equal(arg_view(p, in, 0)->offset, 3 * 4);
    assert_int_equal(p->instrs[s->first + 5].line, 12);
    isa_program_free(p);
    /* a loop variable is out of scope after its loop */
    assemble_fails(".sbuf x fp32 [128, 64]\n.engine dve\n.loop i = 0, 2\n.endloop\n"
                   "memset x[:, i:i+1], 0\n",
                   "t.nca:5:13: error: undefined name 'i'");
}

static void test_cores_and_sems(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".chips 2\n"
                                   ".sem g = 3\n"
                                   ".sbuf shared fp32 [128, 16]\n"
                                   ".group all = 0..3\n"
                                   ".core 0..3\n"
                                   ".sem mine\n"
                                   ".sbuf t fp32 [128, 16]\n"
                                   ".engine pool\n"
                                   "memset t[:, core:core+1], 0 | post mine | wait g >= 3\n"
                                   ".core 1, 3\n"
                                   ".engine sp\n"
                                   "nop | post g = 7\n");
    assert_int_equal(p->ncores, 4);
    assert_int_equal(p->nsems, 5);
    assert_int_equal(p->sems[0].core, -1);
    assert_int_equal(p->sems[0].init, 3);
    assert_int_equal(p->sems[1].index, 1); /* per-core sems follow the global ones */
    for (uint32_t c = 0; c < 4; c++) {
        const isa_stream_t *s = isa_stream(p, c, ISA_ENGINE_POOL);
        assert_int_equal(s->count, 1);
        const isa_view_t *v = arg_view(p, &p->instrs[s->first], 0);
        /* per-core t sits after the global tensor on every core */
        assert_int_equal(v->offset, 64 + c * 4);
        assert_int_equal(p->instrs[s->first].post[0].sem, 1);
        assert_int_equal(isa_stream(p, c, ISA_ENGINE_SP)->count, c % 2);
    }
    assert_int_equal(p->ngroups, 1);
    assert_int_equal(p->groups[0].ncores, 4);
    isa_program_free(p);
}

static void test_psum_placement(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".psum a fp32 [128, 100]\n"
                                   ".psum b fp32 [128, 1024]\n"
                                   ".psum c fp32 [128, 8] +100\n"
                                   ".psum d bf16 [128, 8]\n");
    assert_int_equal(p->tensors[0].offset, 0);
    assert_int_equal(p->tensors[1].offset, 2048);
    assert_int_equal(p->tensors[2].offset, 100); /* explicit: overlap allowed */
    assert_int_equal(p->tensors[3].offset, 6144);
    isa_program_free(p);
}

static void test_options_flags(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(
        ".sbuf x fp32 [128, 64]\n.sbuf v fp32 [128, 1]\n.sbuf i u32 [128, 8]\n"
        ".engine act\n"
        "activate x, x, gelu, scale=0.5, bias=v, sum=v\n"
        ".engine dve\n"
        "tensor_scalar x, x, add, v, multiply, 2.0, rev1\n"
        "tensor_reduce v, x, max, axes=1, negate\n"
        "find_index8 i, x, x[:, 0:8]\n"
        ".engine pool\n"
        "affine_select x, x, base=-3, pstep=1, steps=[-1], cmp=ge, fill=-inf\n"
        "iota i, base=7, steps=[2]\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_ACT);
    const isa_arg_t *a = isa_instr_args(p, &p->instrs[s->first]);
    assert_int_equal(a[2].v.i, ISA_FUNC_GELU);
    assert_true(a[3].present && !a[3].is_view && a[3].v.f == 0.5);
    assert_true(a[4].present && a[4].is_view);
    assert_true(a[5].present && !a[6].present);
    s = isa_stream(p, 0, ISA_ENGINE_DVE);
    a = isa_instr_args(p, &p->instrs[s->first]);
    assert_true(a[3].is_view);
    assert_int_equal(a[4].v.i, ISA_ALU_MULTIPLY);
    assert_true(!a[6].present && a[7].present);
    a = isa_instr_args(p, &p->instrs[s->first + 1]);
    assert_int_equal(a[3].v.i, 1);
    assert_true(a[4].present);
    s = isa_stream(p, 0, ISA_ENGINE_POOL);
    a = isa_instr_args(p, &p->instrs[s->first]);
    assert_int_equal(a[2].v.i, -3);
    assert_int_equal(a[4].count, 1);
    assert_int_equal(p->ints[a[4].index], -1);
    assert_int_equal(a[5].v.i, ISA_CMP_GE);
    assert_true(a[6].v.f < -1e300);
    isa_program_free(p);
}

static void test_flag_vs_tensor_name(void **state)
{
    (void)state;
    /* ISA.md's example names a PSUM tensor `acc`; after D and MOV a bare acc is the flag */
    isa_program_t *p = assemble_ok(".sbuf w bf16 [128, 128]\n.sbuf m bf16 [128, 512]\n"
                                   ".psum acc fp32 [128, 512]\n.engine pe\n"
                                   "ldweights w\nmatmul acc, m, acc\nmatmul acc, w, m\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_PE);
    assert_int_equal(s->count, 4);
    assert_true(isa_instr_args(p, &p->instrs[s->first + 1])[2].present);
    assert_int_equal(p->instrs[s->first + 2].op, ISA_OP_LDWEIGHTS);
    assert_false(isa_instr_args(p, &p->instrs[s->first + 3])[2].present);
    isa_program_free(p);
}

static void test_many_errors_reported(void **state)
{
    (void)state;
    isa_diag_t d;
    isa_program_t *p = assemble(".engine dve\nfoo\nbar\n.sbuf x fp99 [1]\n", &d);
    assert_null(p);
    assert_int_equal(d.errors, 3);
    assert_non_null(strstr(d.text, "t.nca:2:1: error: unknown instruction 'foo'"));
    assert_non_null(strstr(d.text, "t.nca:3:1: error: unknown instruction 'bar'"));
    assert_non_null(strstr(d.text, "t.nca:4:9: error: expected a data type"));
    isa_diag_free(&d);
    /* one error per line even when a loop repeats it */
    p = assemble(".sbuf x fp32 [128, 4]\n.engine dve\n.loop i = 0, 10\nmemset x[:, i], 0\n"
                 ".endloop\n", &d);
    assert_null(p);
    assert_int_equal(d.errors, 1);
    isa_diag_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_isa_example),    cmocka_unit_test(test_slicing),
        cmocka_unit_test(test_raw_views),      cmocka_unit_test(test_loops_lets_ifs),
        cmocka_unit_test(test_cores_and_sems), cmocka_unit_test(test_psum_placement),
        cmocka_unit_test(test_options_flags),  cmocka_unit_test(test_flag_vs_tensor_name),
        cmocka_unit_test(test_many_errors_reported),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
