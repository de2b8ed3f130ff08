/*
 * test_asm.c -- the assembler: the ISA.md examples, every instruction on every engine where
 * it is legal, each directive, views, integer expressions, loops and .core blocks, placement,
 * long texts and the diagnostic limit, checked against hand-computed programs. The negative
 * corpus is tests/asm_errors (test_asm_errors.c).
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
#include "check.h"
#include "dis.h"
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

/* Assemble text that must be accepted; what the assembler emits must also pass the loader's
 * whole-program checks. */
static isa_program_t *assemble_ok(const char *text)
{
    isa_diag_t d;
    isa_program_t *p = assemble(text, &d);
    if (!p)
        fprintf(stderr, "unexpected errors:\n%s", d.text ? d.text : "");
    isa_diag_free(&d);
    assert_non_null(p);
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_init(&d, 0);
    ncsim_status_t st = isa_check_program(p, &g, "t.nca", &d);
    if (st != NCSIM_OK)
        fprintf(stderr, "isa_check_program rejects the program:\n%s", d.text ? d.text : "");
    isa_diag_free(&d);
    assert_int_equal(st, NCSIM_OK);
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
                   "t.nca:3:13: error: D: a view of 1 partition cannot start at partition 5");
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
    assert_non_null(strstr(d.text, "t.nca:4:9: error: unknown data type 'fp99'"));
    isa_diag_free(&d);
    /* one error per line even when a loop repeats it; and the loop stops at its first
     * failing iteration instead of replaying a billion of them */
    p = assemble(".sbuf x fp32 [128, 4]\n.engine dve\n.loop i = 0, 1000000000\n"
                 "memset x[:, i], 0\n.endloop\nmemset x[:, 9], 0\n", &d);
    assert_null(p);
    assert_int_equal(d.errors, 2);
    assert_non_null(strstr(d.text, "t.nca:4:13: error: index 4 out of range"));
    assert_non_null(strstr(d.text, "t.nca:6:13: error: index 9 out of range"));
    isa_diag_free(&d);
}


/* Loop bodies are compiled on their first execution and replayed (expressions as postfix
 * code, views through a memo of their slice values): a loop must emit exactly what the same
 * program written out line by line emits, and an error that appears only at a late
 * iteration must still carry its exact line and column. */
static void test_loop_replay_matches_unrolled(void **state)
{
    (void)state;
    static const char head[] = ".hbm x bf16 [1024, 64] input\n.sbuf xs bf16 [128, 4, 64]\n"
                               ".sem s\n.let B = 3\n.engine sp\n";
    char loop[1024], flat[16384];
    snprintf(loop, sizeof loop, "%s.loop i = 0, 20\n.let r = (i %% 8) * 128\n"
             "dma xs[:, i %% 4, 0:64:(i %% 2) + 1], x[r:r + 128, 0:64:(i %% 2) + 1], "
             "queue=-(-i) %% B + !(i > 5) | wait s >= i - 3 | post s\n.endloop\n", head);
    int n = snprintf(flat, sizeof flat, "%s", head);
    for (int i = 0; i < 20; i++)
        n += snprintf(flat + n, sizeof flat - (size_t)n,
                      "dma xs[:, %d, 0:64:%d], x[%d:%d, 0:64:%d], queue=%d | wait s >= %d "
                      "| post s\n", i % 4, i % 2 + 1, (i % 8) * 128, (i % 8) * 128 + 128,
                      i % 2 + 1, i % 3 + !(i > 5), i - 3);
    isa_program_t *a = assemble_ok(loop), *b = assemble_ok(flat);
    assert_int_equal(a->ninstrs, 20);
    assert_int_equal(a->ninstrs, b->ninstrs);
    for (uint32_t i = 0; i < a->ninstrs; i++) {
        const isa_instr_t *x = &a->instrs[i], *y = &b->instrs[i];
        assert_int_equal(x->op, y->op);
        assert_int_equal(x->wait[0].value, y->wait[0].value);
        const isa_op_info_t *info = isa_op_info((isa_op_t)x->op);
        for (unsigned k = 0; k < info->nslots; k++) {
            const isa_arg_t *u = &a->args[x->args + k], *v = &b->args[y->args + k];
            assert_int_equal(u->is_view, v->is_view);
            if (u->is_view) {
                const isa_view_t *vu = &a->views[u->index], *vv = &b->views[v->index];
                assert_int_equal(vu->offset, vv->offset);
                assert_int_equal(vu->pstart, vv->pstart);
                assert_int_equal(vu->pcount, vv->pcount);
                assert_int_equal(vu->ndims, vv->ndims);
                for (unsigned d = 0; d < vu->ndims; d++) {
                    assert_int_equal(vu->stride[d], vv->stride[d]);
                    assert_int_equal(vu->count[d], vv->count[d]);
                }
            } else if (u->present) {
                assert_int_equal(u->v.i, v->v.i);
            }
        }
    }
    isa_program_free(a);
    isa_program_free(b);
    /* errors at the 7th iteration, after six replays of compiled code */
    assemble_fails(".sbuf x fp32 [128, 4]\n.engine dve\n.loop i = 0, 10\n"
                   "memset x[:, 3 - i / 2], 0\n.endloop\n",
                   "t.nca:4:13: error: negative index -1");
    assemble_fails(".sbuf x fp32 [128, 4]\n.engine dve\n.loop i = 0, 10\n"
                   "memset x[:, 1 / (6 - i)], 0\n.endloop\n",
                   "t.nca:4:15: error: division by zero");
    assemble_fails(".sbuf x fp32 [128, 8]\n.engine dve\n.loop i = 0, 10\n"
                   "memset x[:, i : 8 - i], 0\n.endloop\n",
                   "t.nca:4:13: error: empty slice 4:4");
}

/* Every instruction of two programs, as the disassembler prints it (which shows every
 * operand, view and clause), and its stream, must be the same. */
static void assert_same_instructions(const isa_program_t *a, const isa_program_t *b)
{
    assert_int_equal(a->ninstrs, b->ninstrs);
    assert_int_equal(a->ncores, b->ncores);
    for (uint32_t c = 0; c < a->ncores; c++)
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            const isa_stream_t *s = isa_stream(a, c, (isa_engine_t)e),
                               *t = isa_stream(b, c, (isa_engine_t)e);
            assert_int_equal(s->count, t->count);
            for (uint32_t i = 0; i < s->count; i++) {
                const isa_instr_t *x = &a->instrs[s->first + i], *y = &b->instrs[t->first + i];
                char u[1024], v[1024];
                isa_format_instr(a, c, x, u, sizeof u);
                isa_format_instr(b, c, y, v, sizeof v);
                if (strcmp(u, v) != 0)
                    fprintf(stderr, "core %u %s instruction %u:\n  loop:     %s\n  unrolled: %s\n",
                            c, isa_engine_name((isa_engine_t)e), i, u, v);
                assert_string_equal(u, v);
                assert_int_equal(x->args, y->args);
                assert_int_equal(x->nwait, y->nwait);
                assert_int_equal(x->npost, y->npost);
            }
        }
}

/* A loop body and the same lines written out once per iteration after `.let i = K` (lines
 * outside a loop are parsed every time, never replayed). */
static char *unrolled(const char *head, const char *body, int iters, const char *tail)
{
    size_t cap = strlen(head) + strlen(tail) + (size_t)iters * (strlen(body) + 32) + 1;
    char *t = malloc(cap);
    assert_non_null(t);
    size_t n = (size_t)snprintf(t, cap, "%s", head);
    for (int k = 0; k < iters; k++)
        n += (size_t)snprintf(t + n, cap - n, ".let i = %d\n%s", k, body);
    snprintf(t + n, cap - n, "%s", tail);
    return t;
}

/* Instruction lines in a loop body are replayed from a memo of their inputs' values: the
 * result must be exactly the unrolled text's, for every kind of input (views, integer and
 * float operands, flags set by an expression, lists, raw views whose partitions are loop
 * variables, conditional clauses, the matmul shorthand, .let constants changing inside the
 * loop, per-core names and 'core', an engine switched inside the body, nop). */
static void test_instr_replay_matches_unrolled(void **state)
{
    (void)state;
    static const char head[] =
        ".hbm x bf16 [1024, 64] input\n.hbm g bf16 [1, 64] input\n"
        ".core 0, 1\n"
        ".sbuf xs bf16 [128, 4, 64]\n.sbuf ws bf16 [128, 4, 128]\n"
        ".sbuf ys fp32 [128, 4, 64]\n.sbuf ix i32 [128, 8]\n.psum acc fp32 [128, 4, 64]\n"
        ".sem s\n.sem t\n.let B = 3\n";
    /* the engine of the last lines alternates with i */
    static const char body2[] =
        ".let B = 3 + i % 3\n"
        ".engine sp\n"
        "dma xs[:, i % 4, 0:64:(i % 2) + 1], x[(i % 8) * 128:(i % 8) * 128 + 128, "
        "0:64:(i % 2) + 1], queue=i % B % 16 | wait s >= i - 3 | post s if i % 3 == 0 | post t\n"
        "dma xs[0:4, i % 4, :], broadcast(g[0, :], 4), queue=core\n"
        ".engine pe\n"
        "matmul acc[:, i % 4, :], ws[:, i % 2, :], xs[:, (i + 1) % 4, :], acc=i % 3 > 0 "
        "| wait t >= i + 1 | post s\n"
        ".engine act\n"
        "activate ys[:, i % 4, :], acc[:, i % 4, :], gelu, scale=1.0 / B + core "
        "| wait s >= 2 * i if i > 2\n"
        ".engine dve\n"
        "tensor_scalar ys[:, i % 4, :], ys[:, i % 4, :], multiply, 0.5 * B, add, i * 5 - core\n"
        "memset sb:fp32@(i % 4 * 32):(i % 4 * 32 + 32)+0[1x8], B\n"
        ".engine pool\n"
        "iota ix, base=i * core, steps=[i % 3 + 1]\n"
        ".if i % 2 == 0\n.engine dve\n.else\n.engine pool\n.endif\n"
        "tensor_copy ys[:, (i + 2) % 4, :], ys[:, i % 4, :] | post t if i % 2\n"
        "nop | wait t >= i if i % 2 == 1 | post t if i % 2 == 0\n";
    static const char tail[] = "nop\n";
    enum { N = 40 };
    size_t cap = sizeof head + sizeof body2 + sizeof tail + 64;
    char *loop = malloc(cap);
    assert_non_null(loop);
    snprintf(loop, cap, "%s.loop i = 0, %d\n%s.endloop\n%s", head, N, body2, tail);
    char *flat = unrolled(head, body2, N, tail);
    isa_program_t *a = assemble_ok(loop), *b = assemble_ok(flat);
    assert_same_instructions(a, b);
    assert_int_equal(a->ninstrs, 2 * (10 * N + 1)); /* 10 per iteration (matmul: 2), on 2 cores */
    isa_program_free(a);
    isa_program_free(b);
    free(loop);
    free(flat);
    /* a raw view inside broadcast() whose partitions are a loop variable, read outside an
     * expression: the view memo once reused the first iteration's view for every one */
    static const char bhead[] = ".sbuf a fp32 [128, 64]\n.engine dve\n";
    static const char bbody[] =
        "tensor_copy a[0:32, 0:16], broadcast(sb:fp32@(i * 32):(i * 32 + 32)+0[1x8], 2)\n";
    char bloop[512];
    snprintf(bloop, sizeof bloop, "%s.loop i = 0, 4\n%s.endloop\n", bhead, bbody);
    flat = unrolled(bhead, bbody, 4, "");
    a = assemble_ok(bloop);
    b = assemble_ok(flat);
    assert_same_instructions(a, b);
    assert_int_equal(arg_view(a, &a->instrs[3], 1)->pstart, 96);
    isa_program_free(a);
    isa_program_free(b);
    free(flat);
    /* errors that appear only at a late iteration of a replayed line: a wait or post value
     * out of range (its operands were seen before), a condition that adds a clause */
    assemble_fails(".sbuf x fp32 [128, 4]\n.sem s\n.engine dve\n.loop i = 0, 10\n"
                   "memset x[:, 0], 0 | post s = i * 1000000000\n.endloop\n",
                   "t.nca:5:30: error: post value 3000000000 does not fit a 32-bit semaphore");
    assemble_fails(".sbuf x fp32 [128, 4]\n.sem s\n.engine dve\n.loop i = 0, 10\n"
                   "memset x[:, i % 2], 0 | wait s >= 1 | wait s >= 2 if i > 4 | wait s >= 3\n"
                   ".endloop\n",
                   "t.nca:5:62: error: too many waits");
}

/* ---- ISA.md snippets ------------------------------------------------------------------------ */

static void test_isa_view_examples(void **state)
{
    (void)state;
    /* section 5.1: x[0:128, 1, 0:256]  x[:, 0:512:2]  a[i*128:(i+1)*128, k*512:(k+1)*512] */
    isa_program_t *p = assemble_ok(".hbm a bf16 [256, 1024] input\n"
                                   ".sbuf x fp32 [128, 4, 256]\n"
                                   ".sbuf y fp32 [128, 512]\n"
                                   ".sbuf xs bf16 [128, 512]\n"
                                   ".engine dve\n"
                                   "tensor_copy x[0:128, 1, 0:256], y[:, 0:512:2]\n"
                                   ".engine sp\n"
                                   ".loop i = 0, 2\n"
                                   ".loop k = 0, 2\n"
                                   "dma xs, a[i*128:(i+1)*128, k*512:(k+1)*512]\n"
                                   ".endloop\n"
                                   ".endloop\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_DVE);
    const isa_view_t *v = arg_view(p, &p->instrs[s->first], 0);
    assert_int_equal(v->pcount, 128);
    assert_int_equal(v->ndims, 1);
    assert_int_equal(v->count[0], 256);
    assert_int_equal(v->offset, 256 * 4); /* row 1 of each partition */
    v = arg_view(p, &p->instrs[s->first], 1);
    assert_int_equal(v->stride[0], 2);
    assert_int_equal(v->count[0], 256);
    s = isa_stream(p, 0, ISA_ENGINE_SP);
    assert_int_equal(s->count, 4);
    for (uint32_t n = 0; n < 4; n++) {
        uint32_t i = n / 2, k = n % 2;
        v = arg_view(p, &p->instrs[s->first + n], 1);
        assert_int_equal(v->space, ISA_SPACE_HBM);
        assert_int_equal(v->ndims, 2);
        assert_int_equal(v->stride[0], 1024);
        assert_int_equal(v->count[0], 128);
        assert_int_equal(v->stride[1], 1);
        assert_int_equal(v->count[1], 512);
        assert_int_equal(v->offset, (i * 128 * 1024 + k * 512) * 2);
    }
    isa_program_free(p);
}

static void test_isa_raw_examples(void **state)
{
    (void)state;
    /* section 5.1's three raw views, each in an instruction where it is legal */
    isa_program_t *p = assemble_ok(
        ".engine pe\n"
        "ldweights sb:bf16@0:128+0[1x128]\n"
        "matmul ps:fp32@0:128+2048[1x512], sb:bf16@0:128+1024[64x4, 1x8, 1x16]\n"
        ".engine sp\n"
        "dma sb:bf16@0:128+1024[64x4, 1x8, 4x16], hbm:bf16+0x100000[8192x128, 1x512]\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_PE);
    assert_int_equal(s->count, 2);
    const isa_view_t *v = arg_view(p, &p->instrs[s->first + 1], 0);
    assert_int_equal(v->space, ISA_SPACE_PSUM);
    assert_int_equal(v->dtype, ISA_DT_FP32);
    assert_int_equal(v->pstart, 0);
    assert_int_equal(v->pcount, 128);
    assert_int_equal(v->offset, 2048);
    assert_int_equal(v->ndims, 1);
    assert_int_equal(v->count[0], 512);
    v = arg_view(p, &p->instrs[s->first + 1], 1);
    assert_int_equal(v->ndims, 3);
    assert_int_equal(v->stride[0], 64);
    assert_int_equal(v->count[0], 4);
    s = isa_stream(p, 0, ISA_ENGINE_SP);
    v = arg_view(p, &p->instrs[s->first], 1);
    assert_int_equal(v->space, ISA_SPACE_HBM);
    assert_int_equal(v->dtype, ISA_DT_BF16);
    assert_int_equal(v->offset, 0x100000);
    assert_int_equal(v->ndims, 2);
    assert_int_equal(v->stride[0], 8192);
    assert_int_equal(v->count[0], 128);
    assert_int_equal(v->stride[1], 1);
    assert_int_equal(v->count[1], 512);
    isa_program_free(p);
    /* raw counts may be constants glued to the x, or expressions after a lone x */
    p = assemble_ok(".let N = 8\n.engine dve\n"
                    "tensor_copy sb:fp32@0:32+0[1xN], sb:fp32@32:64+(N*4)[2 x N/2, 1x2]\n");
    s = isa_stream(p, 0, ISA_ENGINE_DVE);
    v = arg_view(p, &p->instrs[s->first], 0);
    assert_int_equal(v->count[0], 8);
    v = arg_view(p, &p->instrs[s->first], 1);
    assert_int_equal(v->pstart, 32);
    assert_int_equal(v->pcount, 32);
    assert_int_equal(v->offset, 32);
    assert_int_equal(v->count[0], 4);
    assert_int_equal(v->stride[0], 2);
    isa_program_free(p);
}

static void test_isa_clause_example(void **state)
{
    (void)state;
    /* section 6 */
    isa_program_t *p = assemble_ok(".sbuf xs bf16 [128, 512]\n.psum acc fp32 [128, 512]\n"
                                   ".sem w_ready\n.sem mm_done\n.engine pe\n"
                                   "matmul acc[:, 0:512], xs[:, 0:512]   | wait w_ready >= 1 | "
                                   "post mm_done\n"
                                   "nop | wait mm_done == 2 | post w_ready -= 3 | post mm_done = 0\n"
                                   "nop | post w_ready += 5\n");
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_PE);
    assert_int_equal(s->count, 3);
    const isa_instr_t *in = &p->instrs[s->first];
    assert_int_equal(in->op, ISA_OP_MATMUL);
    assert_int_equal(in->nwait, 1);
    assert_int_equal(in->wait[0].sem, 0);
    assert_int_equal(in->wait[0].op, ISA_WAIT_GE);
    assert_int_equal(in->wait[0].value, 1);
    assert_int_equal(in->npost, 1);
    assert_int_equal(in->post[0].sem, 1);
    assert_int_equal(in->post[0].op, ISA_POST_ADD);
    assert_int_equal(in->post[0].value, 1);
    in++;
    assert_int_equal(in->wait[0].op, ISA_WAIT_EQ);
    assert_int_equal(in->wait[0].value, 2);
    assert_int_equal(in->npost, 2);
    assert_int_equal(in->post[0].op, ISA_POST_SUB);
    assert_int_equal(in->post[0].value, 3);
    assert_int_equal(in->post[1].op, ISA_POST_SET);
    assert_int_equal(in->post[1].value, 0);
    in++;
    assert_int_equal(in->post[0].op, ISA_POST_ADD);
    assert_int_equal(in->post[0].value, 5);
    isa_program_free(p);
}

/* ---- every instruction of ISA.md section 7, on every engine where it is legal ---------------- */

/* One sample per row; `engines` 0 means "every engine of the opcode". The declarations are
 * shared (every_op_decls). */
static const struct {
    isa_op_t op;
    uint32_t engines;
    const char *text;
} every_op[] = {
    {ISA_OP_LDWEIGHTS, 0, "ldweights w"},
    {ISA_OP_MATMUL, 0, "matmul acc, m, acc"},
    {ISA_OP_TRANSPOSE, ISA_ENG_PE, "transpose pt, w"},
    {ISA_OP_TRANSPOSE, ISA_ENG_DVE, "transpose t, x[0:32, 0:32]"},
    {ISA_OP_ACTIVATE, 0, "activate x, pv, gelu_tanh, scale=0.5, bias=v, sumacc=v"},
    {ISA_OP_TENSOR_TENSOR, ISA_ENG_DVE, "tensor_tensor x, y, pv, divide"},
    {ISA_OP_TENSOR_TENSOR, ISA_ENG_POOL, "tensor_tensor x, y, z, pow"},
    {ISA_OP_TENSOR_SCALAR, 0, "tensor_scalar x, y, multiply, 2.0, add, v, rev1"},
    {ISA_OP_SCALAR_TENSOR_TENSOR, 0, "scalar_tensor_tensor x, y, multiply, v, add, z"},
    {ISA_OP_TENSOR_REDUCE, 0, "tensor_reduce v, x, max, axes=1, negate"},
    {ISA_OP_TENSOR_SCAN, 0, "tensor_scan x, y, z, multiply, add, init=0.0"},
    {ISA_OP_TENSOR_COPY, 0, "tensor_copy x, y"},
    {ISA_OP_MEMSET, 0, "memset x, -inf"},
    {ISA_OP_SELECT, 0, "select x, y, z, reverse"},
    {ISA_OP_RECIPROCAL, 0, "reciprocal x, pv"},
    {ISA_OP_BN_STATS, 0, "bn_stats st, x"},
    {ISA_OP_BN_AGGR, 0, "bn_aggr ag, st"},
    {ISA_OP_SHUFFLE, 0,
     "shuffle t, t, mask=[31, 30, 29, 28, 27, 26, 25, 24, 23, 22, 21, 20, 19, 18, 17, 16, 15, "
     "14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 255]"},
    {ISA_OP_MAX8, 0, "max8 e8, x"},
    {ISA_OP_FIND_INDEX8, 0, "find_index8 idx, x, e8"},
    {ISA_OP_MATCH_REPLACE8, 0, "match_replace8 x, y, e8, -1e30"},
    {ISA_OP_DROPOUT, 0, "dropout x, y, prob=0.125"},
    {ISA_OP_IOTA, 0, "iota ix, base=0, pstep=64, steps=[1]"},
    {ISA_OP_AFFINE_SELECT, 0, "affine_select x, y, base=0, pstep=1, steps=[-1], cmp=ge, fill=-inf"},
    {ISA_OP_PARTITION_REDUCE, 0, "partition_reduce r1, x, add"},
    {ISA_OP_DMA, 0, "dma x, h, queue=15, accumulate"},
    {ISA_OP_ALL_REDUCE, 0, "all_reduce h2, h, op=min, group=g"},
    {ISA_OP_ALL_GATHER, 0, "all_gather hg, h, group=g"},
    {ISA_OP_REDUCE_SCATTER, 0, "reduce_scatter h, hg, op=add, group=g"},
    {ISA_OP_ALL_TO_ALL, 0, "all_to_all h2, h, group=g"},
    {ISA_OP_SEND, 0, "send h, to=1, tag=7"},
    {ISA_OP_RECV, 0, "recv h2, from=1, tag=7"},
    {ISA_OP_NOP, 0, "nop | post s"},
};

static const char every_op_decls[] = ".hbm h fp32 [128, 64] scratch\n"
                                     ".hbm h2 fp32 [128, 64] scratch\n"
                                     ".hbm hg fp32 [256, 64] scratch\n"
                                     ".group g = 0, 1\n"
                                     ".core 0\n"
                                     ".sbuf x fp32 [128, 64]\n"
                                     ".sbuf y fp32 [128, 64]\n"
                                     ".sbuf z fp32 [128, 64]\n"
                                     ".sbuf v fp32 [128, 1]\n"
                                     ".sbuf w bf16 [128, 128]\n"
                                     ".sbuf m bf16 [128, 512]\n"
                                     ".sbuf t fp32 [32, 32]\n"
                                     ".sbuf st fp32 [128, 3]\n"
                                     ".sbuf ag fp32 [128, 2]\n"
                                     ".sbuf e8 fp32 [128, 8]\n"
                                     ".sbuf idx u32 [128, 8]\n"
                                     ".sbuf ix i32 [128, 64]\n"
                                     ".sbuf r1 fp32 [1, 64]\n"
                                     ".psum acc fp32 [128, 512]\n"
                                     ".psum pt fp32 [128, 128]\n"
                                     ".psum pv fp32 [128, 64]\n"
                                     ".sem s\n";

static uint32_t row_engines(size_t r)
{
    return every_op[r].engines ? every_op[r].engines : isa_op_info(every_op[r].op)->engines;
}

static void test_every_instruction(void **state)
{
    (void)state;
    size_t nrows = sizeof every_op / sizeof every_op[0];
    /* the table covers every (opcode, legal engine) pair of ops.def, and nothing illegal */
    for (int op = 0; op < ISA_OP_COUNT; op++) {
        uint32_t covered = 0;
        for (size_t r = 0; r < nrows; r++)
            if ((int)every_op[r].op == op)
                covered |= row_engines(r);
        if (covered != isa_op_info((isa_op_t)op)->engines)
            fprintf(stderr, "every_op does not cover %s on every engine\n",
                    isa_op_info((isa_op_t)op)->mnemonic);
        assert_int_equal(covered, isa_op_info((isa_op_t)op)->engines);
    }
    size_t cap = 16384, len = 0;
    char *text = malloc(cap);
    assert_non_null(text);
    len += (size_t)snprintf(text, cap, "%s", every_op_decls);
    for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
        len += (size_t)snprintf(text + len, cap - len, ".engine %s\n",
                                isa_engine_name((isa_engine_t)e));
        for (size_t r = 0; r < nrows; r++)
            if (row_engines(r) & (1u << e))
                len += (size_t)snprintf(text + len, cap - len, "    %s\n", every_op[r].text);
        assert_true(len < cap);
    }
    isa_program_t *p = assemble_ok(text);
    free(text);
    /* each engine's stream holds exactly its rows, in order */
    for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
        const isa_stream_t *s = isa_stream(p, 0, (isa_engine_t)e);
        uint32_t k = 0;
        for (size_t r = 0; r < nrows; r++) {
            if (!(row_engines(r) & (1u << e)))
                continue;
            assert_true(k < s->count);
            const isa_instr_t *in = &p->instrs[s->first + k];
            assert_int_equal(in->op, every_op[r].op);
            assert_int_equal(in->engine, e);
            k++;
        }
        assert_int_equal(s->count, k);
        assert_int_equal(isa_stream(p, 1, (isa_engine_t)e)->count, 0);
    }
    /* spot checks of decoded operands */
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_CC);
    const isa_arg_t *a = isa_instr_args(p, &p->instrs[s->first]);
    assert_int_equal(a[2].v.i, ISA_ALU_MIN);
    assert_int_equal(a[3].v.i, 0);
    s = isa_stream(p, 0, ISA_ENGINE_SP);
    a = isa_instr_args(p, &p->instrs[s->first]);
    assert_int_equal(a[2].v.i, 15);
    assert_true(a[3].present);
    isa_program_free(p);
}

/* ---- integer expressions ----------------------------------------------------------------------- */

static void test_int_expressions(void **state)
{
    (void)state;
    static const struct {
        const char *expr;
        int64_t value;
    } cases[] = {
        {"2 + 3 * 4", 14},          {"(2 + 3) * 4", 20},       {"10 - 4 - 3", 3},
        {"100 / 10 / 5", 2},        {"-7 / 2", -3},            {"-7 % 2", -1},
        {"7 / -2", -3},             {"7 % -2", 1},             {"2 * -3", -6},
        {"- -4", 4},                {"+5", 5},                 {"1 < 2", 1},
        {"2 < 1", 0},               {"2 <= 2", 1},             {"3 > 3", 0},
        {"3 >= 3", 1},              {"3 == 3", 1},             {"3 != 3", 0},
        {"5 > 3 > 0", 1},           {"1 + 2 == 3", 1},         {"1 < 2 == 1", 1},
        {"1 && 0", 0},              {"2 && 3", 1},             {"0 || 5", 1},
        {"0 || 0", 0},              {"1 || 0 && 0", 1},        {"!0", 1},
        {"!7", 0},                  {"!0 + 1", 2},             {"!(1 - 1)", 1},
        {"0x10", 16},               {"0XfF", 255},             {"1_000_000", 1000000},
        {"0xff_ff", 65535},         {"9223372036854775807", INT64_MAX},
        {"-9223372036854775807 - 1", INT64_MIN},
        {"N * 2 + N % 3", 2 * 37 + 37 % 3},
        {"(N > 30) * 100 + (N < 30)", 100},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[256];
        snprintf(text, sizeof text, ".let N = 37\n.sbuf x i32 [128, 4]\n.engine pool\n"
                                    "iota x, base=%s\n", cases[i].expr);
        isa_program_t *p = assemble_ok(text);
        const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_POOL);
        int64_t got = isa_instr_args(p, &p->instrs[s->first])[1].v.i;
        if (got != cases[i].value)
            fprintf(stderr, "%s = %lld, expected %lld\n", cases[i].expr, (long long)got,
                    (long long)cases[i].value);
        assert_true(got == cases[i].value);
        isa_program_free(p);
    }
    assemble_fails(".let x = -9223372036854775807 - 2\n",
                   "t.nca:1:31: error: integer overflow: -9223372036854775807 - 2");
    assemble_fails(".let x = 3037000500 * 3037000500\n", "t.nca:1:21: error: integer overflow");
    assemble_fails(".let m = -9223372036854775807 - 1\n.let x = m / -1\n",
                   "t.nca:2:12: error: integer overflow");
    assemble_fails(".let m = -9223372036854775807 - 1\n.let x = -m\n",
                   "t.nca:2:10: error: integer overflow");
    assemble_fails(".let x = 1 % 0\n", "t.nca:1:12: error: division by zero");
}

/* ---- .let, loops, .core -------------------------------------------------------------------- */

/* The `base=` of every iota of a stream of core `core`, into out[]; returns the count. */
static uint32_t iota_bases(const isa_program_t *p, uint32_t core, int64_t *out, uint32_t max)
{
    const isa_stream_t *s = isa_stream(p, core, ISA_ENGINE_POOL);
    uint32_t n = 0;
    for (uint32_t i = 0; i < s->count && n < max; i++)
        if (p->instrs[s->first + i].op == ISA_OP_IOTA)
            out[n++] = isa_instr_args(p, &p->instrs[s->first + i])[1].v.i;
    return n;
}

/* Pool iota bases of core 0 of a program that must assemble. */
static uint32_t bases_of(const char *text, int64_t *out, uint32_t max)
{
    isa_program_t *p = assemble_ok(text);
    uint32_t n = iota_bases(p, 0, out, max);
    isa_program_free(p);
    return n;
}

/* Directive lines in a loop body (.let, .if/.elif/.else, .loop headers) run from their
 * compiled code after their first run, and expressions read the symbols no loop sets as
 * constants (language.md 4.2): the values must be the interpreter's, also when a folded
 * symbol changes (another core, a .let in the body, a loop variable of the same name), and
 * every error must be the one the interpreter reports, at its line and column. */
static void test_compiled_directives(void **state)
{
    (void)state;
    int64_t b[256];
    /* .if/.elif/.else with && || ! and comparisons, .let, and a nested loop whose header
     * depends on the outer variable, against the same lines unrolled (outside any loop
     * they are interpreted) */
    static const char head[] = ".sbuf x i32 [128, 4]\n.engine pool\n.let K = 3\n.let Z = 0\n";
    static const char body[] =
        ".let h = (i * 7 + K) % 5 - 2\n"
        ".if i == K - 1 && h >= 0 || !(i % 4) && i > 0\n"
        "  iota x, base=1000 + i\n"
        ".elif h < 0 && (i / 2) % 2 == 1\n"
        "  iota x, base=2000 + h\n"
        ".elif i >= 2 * K || h == Z\n"
        "  .let h = -h + K * K\n"
        "  iota x, base=3000 + h\n"
        ".else\n"
        "  iota x, base=4000 - i\n"
        ".endif\n"
        ".loop j = i % 3, i / 2 + 2, (i % 2) + 1\n"
        "  iota x, base=j * 100 + h\n"
        ".endloop\n"
        ".loop j = 3, -1, -2\n"
        "  .if j != 1\n    iota x, base=-j\n  .endif\n"
        ".endloop\n";
    enum { N = 17 };
    char loop[2048];
    snprintf(loop, sizeof loop, "%s.loop i = 0, %d\n%s.endloop\n", head, N, body);
    char *flat = unrolled(head, body, N, "");
    isa_program_t *a = assemble_ok(loop), *f = assemble_ok(flat);
    assert_same_instructions(a, f);
    assert_true(a->ninstrs > 3 * N);
    isa_program_free(a);
    isa_program_free(f);
    free(flat);

    /* a folded symbol that the loop body then sets: K is a constant until `.let K` in the
     * body makes it vary */
    static const int64_t w1[] = {20, 31, 42, 53};
    assert_int_equal(bases_of(".sbuf x i32 [128, 4]\n.engine pool\n.let K = 2\n"
                              ".loop i = 0, 4\n"
                              "  iota x, base=K * 10 + i\n"
                              "  .let K = K + 1\n"
                              ".endloop\n", b, 256), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(b[i], w1[i]);
    /* a folded symbol that becomes a loop variable, and has its value back after the loop */
    static const int64_t w2[] = {50, 0, 100, 50, 51, 1, 101, 51};
    assert_int_equal(bases_of(".sbuf x i32 [128, 4]\n.engine pool\n.let j = 50\n"
                              ".loop a = 0, 2\n"
                              "  iota x, base=j + a\n"
                              "  .loop j = 0, 2\n    iota x, base=j * 100 + a\n  .endloop\n"
                              "  iota x, base=j + a\n"
                              ".endloop\n", b, 256), 8);
    for (int i = 0; i < 8; i++)
        assert_int_equal(b[i], w2[i]);
    /* a folded symbol with another value on each core, and 'core' itself */
    isa_program_t *p = assemble_ok(".core 0, 1\n.sbuf x i32 [128, 4]\n.let K = core + 2\n"
                                   ".engine pool\n"
                                   ".loop i = 0, 3\n"
                                   "  .if i * K > 2 && K != 3\n    iota x, base=i * K\n"
                                   "  .elif i == 2\n    iota x, base=-K\n"
                                   "  .else\n    iota x, base=100 * core + 10 * K + i\n"
                                   "  .endif\n"
                                   ".endloop\n");
    static const int64_t w3[][3] = {{20, 21, 4}, {130, 131, -3}};
    for (uint32_t c = 0; c < 2; c++) {
        assert_int_equal(iota_bases(p, c, b, 256), 3);
        for (int i = 0; i < 3; i++)
            assert_int_equal(b[i], w3[c][i]);
    }
    isa_program_free(p);

    /* errors at a late iteration of a compiled line: the interpreter's message and column */
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.loop i = 0, 10\n"
                   "  .if 4 / (6 - i) > 0\n    iota x, base=i\n  .endif\n.endloop\n",
                   "t.nca:4:9: error: division by zero");
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.loop i = 0, 10\n"
                   "  .if i < 5\n    iota x, base=i\n  .elif zz > 0\n  .endif\n.endloop\n",
                   "t.nca:6:9: error: undefined name 'zz'");
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.loop i = 0, 10\n"
                   "  .let v = (i + 1) * 4611686018427387904\n  iota x, base=i\n.endloop\n",
                   "t.nca:4:20: error: integer overflow: 2 * 4611686018427387904 does not fit "
                   "in 64 bits");
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.loop i = 0, 4\n"
                   "  .if i == 3\n    .let bad = 9223372036854775807 + i - 2\n  .endif\n"
                   "  iota x, base=i\n.endloop\n",
                   "t.nca:5:36: error: integer overflow: 9223372036854775807 + 3 does not fit "
                   "in 64 bits");
    /* a loop step that becomes zero; a step of a folded constant minus the loop variable */
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.loop i = 2, -1, -1\n"
                   "  .loop j = 0, 4, i\n    iota x, base=j\n  .endloop\n.endloop\n",
                   "t.nca:4:19: error: loop step cannot be zero");
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.let K = 2\n.loop i = 0, 3\n"
                   "  .loop j = 0, 2, K - i\n    iota x, base=j\n  .endloop\n.endloop\n",
                   "t.nca:5:19: error: loop step cannot be zero");
    /* a folded division that fails on the second core only */
    assemble_fails(".core 0, 1\n.sbuf x i32 [128, 4]\n.let Z = 1 - core\n.engine pool\n"
                   ".loop i = 0, 3\n  .let q = 8 / Z\n  iota x, base=q + i\n.endloop\n",
                   "t.nca:6:14: error: division by zero");
    /* a loop variable out of scope */
    assemble_fails(".sbuf x i32 [128, 4]\n.engine pool\n.loop i = 0, 3\n"
                   "  .loop j = 0, 2\n    iota x, base=j\n  .endloop\n"
                   "  .loop k = 0, j\n  .endloop\n.endloop\n",
                   "t.nca:7:16: error: undefined name 'j'");
}

static void test_let_rebinding_and_nested_loops(void **state)
{
    (void)state;
    int64_t b[64];
    /* a .let inside a loop is evaluated per iteration and keeps its last value */
    isa_program_t *p = assemble_ok(".sbuf x i32 [128, 4]\n.engine pool\n"
                                   ".let acc = 0\n"
                                   ".loop i = 0, 4\n"
                                   "  .let acc = acc + i\n"
                                   "  iota x, base=acc\n"
                                   ".endloop\n"
                                   "iota x, base=acc\n");
    assert_int_equal(iota_bases(p, 0, b, 64), 5);
    assert_int_equal(b[0], 0);
    assert_int_equal(b[1], 1);
    assert_int_equal(b[2], 3);
    assert_int_equal(b[3], 6);
    assert_int_equal(b[4], 6);
    isa_program_free(p);
    /* nested loops: the inner bounds depend on the outer variable; negative steps; a loop
     * variable shadowing a .let gets its old value back after the loop */
    p = assemble_ok(".sbuf x i32 [128, 4]\n.engine pool\n"
                    ".let j = 99\n"
                    ".loop i = 0, 3\n"
                    "  .loop j = i, 3\n"
                    "    iota x, base=i*10+j\n"
                    "  .endloop\n"
                    ".endloop\n"
                    "iota x, base=j\n"
                    ".loop k = 10, 0, -4\n"
                    "  iota x, base=k\n"
                    ".endloop\n"
                    ".loop k = 0, 0\n"
                    "  iota x, base=1000\n"
                    ".endloop\n");
    static const int64_t want[] = {0, 1, 2, 11, 12, 22, 99, 10, 6, 2};
    assert_int_equal(iota_bases(p, 0, b, 64), sizeof want / sizeof want[0]);
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        assert_int_equal(b[i], want[i]);
    isa_program_free(p);
    /* .if chains inside loops pick one branch per iteration */
    p = assemble_ok(".sbuf x i32 [128, 4]\n.engine pool\n"
                    ".loop i = 0, 5\n"
                    "  .if i == 0\n    iota x, base=100\n"
                    "  .elif i % 2\n    iota x, base=200 + i\n"
                    "  .elif i == 4\n"
                    "  .else\n    iota x, base=300 + i\n"
                    "  .endif\n"
                    ".endloop\n");
    static const int64_t want2[] = {100, 201, 302, 203};
    assert_int_equal(iota_bases(p, 0, b, 64), 4);
    for (size_t i = 0; i < 4; i++)
        assert_int_equal(b[i], want2[i]);
    isa_program_free(p);
}

static void test_core_lists(void **state)
{
    (void)state;
    int64_t b[8];
    isa_program_t *p = assemble_ok(".chips 3\n"
                                   ".sbuf x i32 [128, 4]\n"
                                   ".core 0\n.engine pool\niota x, base=core\n"
                                   ".core 1..3\n.engine pool\niota x, base=core * 10\n"
                                   ".core 4, 2, 5\n.engine pool\niota x, base=core + 100\n"
                                   ".if core == 5\niota x, base=-1\n.endif\n");
    assert_int_equal(p->ncores, 6);
    static const int64_t want[6][3] = {{0}, {10}, {20, 102}, {30}, {104}, {105, -1}};
    static const uint32_t nwant[6] = {1, 1, 2, 1, 1, 2};
    for (uint32_t c = 0; c < 6; c++) {
        assert_int_equal(iota_bases(p, c, b, 8), nwant[c]);
        for (uint32_t i = 0; i < nwant[c]; i++)
            assert_int_equal(b[i], want[c][i]);
    }
    isa_program_free(p);
    /* a name declared in one core's block is that core's: the same name on another core
     * is another tensor, placed independently */
    p = assemble_ok(".core 0\n.sbuf a fp32 [128, 16]\n.sbuf t fp32 [128, 4]\n"
                    ".core 1\n.sbuf t fp32 [128, 4]\n.engine dve\nmemset t, 0\n");
    assert_int_equal(p->ntensors, 3);
    assert_int_equal(p->tensors[1].core, 0);
    assert_int_equal(p->tensors[1].offset, 64);
    assert_int_equal(p->tensors[2].core, 1);
    assert_int_equal(p->tensors[2].offset, 0);
    isa_program_free(p);
}

/* ---- placement ----------------------------------------------------------------------------------- */

static void test_sbuf_placement(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".sbuf e fp32 [128, 16] +64\n" /* explicit: bytes 64..128 */
                                   ".sbuf a fp32 [128, 16]\n"     /* fits below e: 0 */
                                   ".sbuf b fp32 [128, 32]\n"     /* 128 B: after e, 128 */
                                   ".sbuf c fp32 [128, 1]\n"      /* after b: 256 */
                                   ".sbuf p0 fp32 [32, 100] @0\n" /* 400 B at 320 (64-aligned) */
                                   ".sbuf p1 fp32 [32, 100] @32\n" /* other partitions: 320 */
                                   ".sbuf p2 fp32 [64, 10]\n"     /* over p0 and p1: 768 */
                                   ".sbuf p3 fp32 [32, 10] @96\n"); /* free partitions: 320 */
    static const uint64_t want[] = {64, 0, 128, 256, 320, 320, 768, 320};
    assert_int_equal(p->ntensors, 8);
    for (uint32_t i = 0; i < 8; i++)
        assert_int_equal(p->tensors[i].offset, want[i]);
    assert_int_equal(p->tensors[5].pstart, 32);
    isa_program_free(p);
}

static void test_psum_banks(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".psum a fp32 [64, 600]\n"   /* 2400 B: banks 0 and 1 */
                                   ".psum b fp32 [64, 4] @64\n" /* other partitions: bank 0 */
                                   ".psum c bf16 [128, 4]\n"   /* over a: bank 2 */
                                   ".sbuf w bf16 [128, 64]\n.sbuf m bf16 [128, 512]\n"
                                   ".engine pe\n"
                                   "matmul a[:, 0:512], w, m\n"
                                   "matmul a[:, 512:600], w, m[:, 0:88]\n");
    assert_int_equal(p->tensors[0].offset, 0);
    assert_int_equal(p->tensors[1].offset, 0);
    assert_int_equal(p->tensors[2].offset, 4096);
    isa_program_free(p);
    /* bytes 2048.. of a: a 512-wide matmul from column 1 crosses into bank 1 */
    assemble_fails(".psum a fp32 [128, 600]\n.sbuf w bf16 [128, 128]\n.sbuf m bf16 [128, 512]\n"
                   ".engine pe\nmatmul a[:, 1:513], w, m\n",
                   "t.nca:5:8: error: matmul output bytes 4..2051 cross a PSUM bank boundary");
    /* 8 banks: a ninth bank-sized tensor does not fit */
    assemble_fails(".psum a fp32 [128, 4096]\n.psum b fp32 [128, 1]\n",
                   "t.nca:2:14: error: tensor 'b' (4 bytes per partition) does not fit in PSUM");
}

static void test_hbm_placement(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".chips 2\n"
                                   ".hbm a fp32 [16] input\n"          /* chip 0: 0 */
                                   ".hbm b fp32 [16] input chip=1\n"   /* chip 1: 0 */
                                   ".hbm x fp32 [16] scratch @0x80\n"  /* chip 0: explicit */
                                   ".hbm c fp32 [48] output chip=0\n"  /* 192 B: after x */
                                   ".hbm d fp32 [1] inout\n"           /* first fit: 64 */
                                   ".hbm e u8 [3] scratch chip=1\n"    /* chip 1: 64 */
                                   ".core 2\n.sbuf s fp32 [1, 16]\n.engine sp\ndma s, b\n"
                                   "dma s, hbm:fp32+0[1x16]\n");
    static const uint64_t want[] = {0, 0, 0x80, 0xc0, 64, 64};
    static const int32_t chips[] = {0, 1, 0, 0, 0, 1};
    assert_int_equal(p->ntensors, 7);
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(p->tensors[i].offset, want[i]);
    for (uint32_t i = 0; i < 6; i++)
        assert_int_equal(p->tensors[i].chip, chips[i]);
    assert_int_equal(p->tensors[0].kind, ISA_TK_INPUT);
    assert_int_equal(p->tensors[4].kind, ISA_TK_INOUT);
    assert_int_equal(isa_stream(p, 2, ISA_ENGINE_SP)->count, 2);
    isa_program_free(p);
}

/* ---- text details ------------------------------------------------------------------------------ */

static void test_text_details(void **state)
{
    (void)state;
    /* byte-order mark, CRLF, tabs, both comment styles, blank lines */
    static const char text[] = "\xef\xbb\xbf; header\r\n.sbuf x fp32 [128, 4] # trailing\r\n"
                               "\r\n\t.engine dve\r\n\tmemset x, 1.5e0 ; one and a half\r\n";
    isa_program_t *p = assemble_ok(text);
    const isa_stream_t *s = isa_stream(p, 0, ISA_ENGINE_DVE);
    assert_int_equal(s->count, 1);
    assert_int_equal(p->instrs[s->first].line, 5);
    assert_true(isa_instr_args(p, &p->instrs[s->first])[1].v.f == 1.5);
    isa_program_free(p);
    /* a NUL byte is not text */
    isa_diag_t d;
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_init(&d, 0);
    p = NULL;
    assert_int_equal(isa_assemble(".let x = 1\n\0\n", 13, &opt, &p, &d), NCSIM_ASSEMBLY);
    assert_null(p);
    assert_non_null(strstr(d.text, "t.nca: error: input contains a NUL byte"));
    isa_diag_free(&d);
    /* the empty program is a program */
    p = assemble_ok("");
    assert_int_equal(p->ninstrs, 0);
    assert_int_equal(p->ncores, 2);
    isa_program_free(p);
}

/* ---- the diagnostic limit ------------------------------------------------------------------------ */

static void test_diag_limit(void **state)
{
    (void)state;
    /* 60 bad lines: the default limit (50) stops the assembler with a note */
    char text[4096];
    size_t len = 0;
    for (int i = 0; i < 60; i++)
        len += (size_t)snprintf(text + len, sizeof text - len, ".let x%d = %d / 0\n", i, i);
    isa_diag_t d;
    isa_program_t *p = assemble(text, &d);
    assert_null(p);
    assert_int_equal(d.errors, 50);
    assert_non_null(strstr(d.text, "t.nca:50:"));
    assert_null(strstr(d.text, "t.nca:51:"));
    const char *note = strstr(d.text, "note: too many errors, stopping\n");
    assert_non_null(note);
    assert_string_equal(note, "note: too many errors, stopping\n"); /* last line */
    isa_diag_free(&d);
    /* a caller-chosen limit */
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "t.nca";
    isa_diag_init(&d, 3);
    assert_int_equal(isa_assemble(text, len, &opt, &p, &d), NCSIM_ASSEMBLY);
    assert_int_equal(d.errors, 3);
    assert_non_null(strstr(d.text, "t.nca:3:"));
    assert_null(strstr(d.text, "t.nca:4:"));
    assert_non_null(strstr(d.text, "note: too many errors"));
    isa_diag_free(&d);
    /* 49 errors: no note */
    p = assemble(strstr(text, ".let x11 ="), &d);
    assert_int_equal(d.errors, 49);
    assert_null(strstr(d.text, "note:"));
    isa_diag_free(&d);
}

/* ---- long texts: the structure pass lexes in chunks, execution re-lexes in windows ------------ */

typedef struct expect_seq {
    int64_t base[8000];
    uint32_t line[8000];
    uint32_t n;
} expect_seq_t;

static void emit(char *text, size_t cap, size_t *len, uint32_t *line, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void emit(char *text, size_t cap, size_t *len, uint32_t *line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(text + *len, cap - *len, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < cap - *len);
    *len += (size_t)n;
    for (int i = 0; i < n; i++)
        *line += text[*len - (size_t)n + (size_t)i] == '\n';
}

static void test_long_text(void **state)
{
    (void)state;
    size_t cap = 1 << 20, len = 0;
    char *text = malloc(cap);
    expect_seq_t *want = calloc(2, sizeof *want);
    assert_non_null(text);
    assert_non_null(want);
    uint32_t line = 1; /* number of the line being written */
    emit(text, cap, &len, &line, ".chips 2\n.sbuf x i32 [128, 4]\n");
    for (int k = 0; k < 300; k++) /* push everything past the first chunk and window */
        emit(text, cap, &len, &line, k % 3 ? "; comment %d\n" : "\n", k);
    emit(text, cap, &len, &line, ".core 0..1\n.engine pool\n");
    /* straight-line code executed once per core: core 1 re-lexes it from the start */
    for (int k = 0; k < 700; k++) {
        for (uint32_t c = 0; c < 2; c++) {
            want[c].base[want[c].n] = k * 10 + c;
            want[c].line[want[c].n++] = line;
        }
        emit(text, cap, &len, &line, "iota x, base=%d * 10 + core%s\n", k,
             k % 5 ? "" : " ; with a comment");
        if (k % 7 == 0)
            emit(text, cap, &len, &line, "\n");
    }
    /* a loop whose 300-line body crosses chunk boundaries */
    emit(text, cap, &len, &line, ".loop i = 0, 3\n");
    uint32_t body_first = line;
    for (int j = 0; j < 300; j++)
        emit(text, cap, &len, &line, "    iota x, base=100000 + i * 1000 + %d\n", j);
    emit(text, cap, &len, &line, ".endloop\n");
    for (uint32_t c = 0; c < 2; c++)
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 300; j++) {
                want[c].base[want[c].n] = 100000 + i * 1000 + j;
                want[c].line[want[c].n++] = body_first + (uint32_t)j;
            }
    /* an .if whose taken branch spans several windows */
    emit(text, cap, &len, &line, ".if core == 1\n");
    for (int j = 0; j < 600; j++) {
        want[1].base[want[1].n] = 200000 + j;
        want[1].line[want[1].n++] = line;
        emit(text, cap, &len, &line, "iota x, base=200000 + %d\n", j);
    }
    emit(text, cap, &len, &line, ".else\n");
    for (int j = 0; j < 5; j++) {
        want[0].base[want[0].n] = 300000 + j;
        want[0].line[want[0].n++] = line;
        emit(text, cap, &len, &line, "iota x, base=300000 + %d\n", j);
    }
    emit(text, cap, &len, &line, ".endif\n");
    isa_program_t *p = assemble_ok(text);
    for (uint32_t c = 0; c < 2; c++) {
        const isa_stream_t *s = isa_stream(p, c, ISA_ENGINE_POOL);
        assert_int_equal(s->count, want[c].n);
        for (uint32_t i = 0; i < s->count; i++) {
            const isa_instr_t *in = &p->instrs[s->first + i];
            if (isa_instr_args(p, in)[1].v.i != want[c].base[i] || in->line != want[c].line[i])
                fprintf(stderr, "core %u instruction %u: base %lld line %u, expected %lld %u\n",
                        c, i, (long long)isa_instr_args(p, in)[1].v.i, in->line,
                        (long long)want[c].base[i], want[c].line[i]);
            assert_int_equal(isa_instr_args(p, in)[1].v.i, want[c].base[i]);
            assert_int_equal(in->line, want[c].line[i]);
        }
    }
    isa_program_free(p);
    /* errors far into a long text carry their own line numbers */
    len = 0;
    line = 1;
    for (int k = 0; k < 4000; k++)
        emit(text, cap, &len, &line, k % 2 ? ".let a%d = %d\n" : "\n", k, k);
    uint32_t bad_lex = line;
    emit(text, cap, &len, &line, ".let z = 1 $ 2\n");
    for (int k = 0; k < 600; k++)
        emit(text, cap, &len, &line, "; filler\n");
    uint32_t bad_loop = line;
    emit(text, cap, &len, &line, "  .loop i = 0, 2\n");
    char want_lex[64], want_loop[96];
    snprintf(want_lex, sizeof want_lex, "t.nca:%u:12: error: unexpected character '$'", bad_lex);
    snprintf(want_loop, sizeof want_loop, "t.nca:%u:3: error: '.loop' is never closed",
             bad_loop);
    isa_diag_t d;
    assert_null(assemble(text, &d));
    assert_non_null(strstr(d.text, want_lex));
    assert_non_null(strstr(d.text, want_loop));
    assert_int_equal(d.errors, 2);
    isa_diag_free(&d);
    /* and at run time, past many windows */
    len = 0;
    line = 1;
    emit(text, cap, &len, &line, ".sbuf x i32 [128, 4]\n.engine pool\n");
    for (int k = 0; k < 3000; k++)
        emit(text, cap, &len, &line, "iota x, base=%d\n", k);
    uint32_t bad_run = line;
    emit(text, cap, &len, &line, "iota x, base=1 / (2 - 2)\n");
    snprintf(want_loop, sizeof want_loop, "t.nca:%u:16: error: division by zero", bad_run);
    assemble_fails(text, want_loop);
    free(want);
    free(text);
}

/* .loc and .source (extensions) carry the line map and source name through text. */
static void test_loc_and_source(void **state)
{
    (void)state;
    isa_program_t *p = assemble_ok(".source gen/3eed my;kernel#1.nca  \n.engine sp\nnop\n"
                                   ".loc 42\nnop\nnop\n.loc 0\nnop\n");
    const isa_stream_t *st = isa_stream(p, 0, ISA_ENGINE_SP);
    assert_int_equal(st->count, 4);
    assert_int_equal(p->instrs[st->first].line, 3);
    assert_int_equal(p->instrs[st->first + 1].line, 42);
    assert_int_equal(p->instrs[st->first + 2].line, 42);
    assert_int_equal(p->instrs[st->first + 3].line, 0);
    /* the name is raw text: not lexed as numbers, not cut at comment characters */
    assert_string_equal(isa_string(p, p->source), "gen/3eed my;kernel#1.nca");
    isa_program_free(p);
    assemble_fails(".loc -1\n", "t.nca:1:6: error: line -1 out of range");
    assemble_fails(".source\n", "t.nca:1:8: error: expected a source file name");
}

/* Streams are emitted in any order (sp before pe, a stream resumed after others, engines
 * switched inside a loop, two cores) and grow past several mappings (pe's to 8 MB, its
 * pages mapped in 2 MB at a time past 4 MB); the program's array
 * holds each one whole, in stream order, whether its pages were moved there or copied
 * (instr_vec_t in asm.c). Every instruction carries its own number in its wait value. */
static void test_stream_layout(void **state)
{
    (void)state;
    enum { NSP = 1000, NPE = 150001, NACT = 777, NMIX = 50 };
    char text[4096];
    snprintf(text, sizeof text,
             ".core 0..1\n.sem s\n"
             ".engine sp\n.loop i = 0, %d\nnop | wait s >= core * 1000000 + i\n.endloop\n"
             ".engine pe\n.loop i = 0, %d\nnop | wait s >= core * 1000000 + 100000 + i\n"
             ".endloop\n"
             ".engine act\n.loop i = 0, %d\nnop | wait s >= core * 1000000 + 200000 + i\n"
             ".endloop\n"
             ".engine sp\n.loop i = 0, 5\nnop | wait s >= core * 1000000 + %d + i\n.endloop\n"
             ".loop i = 0, %d\n.engine pool\nnop | wait s >= core * 1000000 + 300000 + i\n"
             ".engine act\nnop | wait s >= core * 1000000 + 200000 + %d + i\n.endloop\n",
             NSP, NPE, NACT, NSP, NMIX, NACT);
    isa_program_t *p = tu_assemble(text, "layout.nca");
    assert_non_null(p);
    static const struct {
        isa_engine_t e;
        uint32_t count;
        int32_t base;
    } want[] = {{ISA_ENGINE_SP, NSP + 5, 0},
                {ISA_ENGINE_PE, NPE, 100000},
                {ISA_ENGINE_ACT, NACT + NMIX, 200000},
                {ISA_ENGINE_POOL, NMIX, 300000}};
    uint32_t total = 0;
    for (uint32_t c = 0; c < 2; c++)
        for (size_t w = 0; w < sizeof want / sizeof want[0]; w++) {
            const isa_stream_t *st = isa_stream(p, c, want[w].e);
            assert_int_equal(st->count, want[w].count);
            total += st->count;
            for (uint32_t k = 0; k < st->count; k++) {
                const isa_instr_t *in = &p->instrs[st->first + k];
                assert_int_equal(in->engine, want[w].e);
                assert_int_equal(in->nwait, 1);
                assert_int_equal(in->wait[0].value,
                                 (int32_t)c * 1000000 + want[w].base + (int32_t)k);
            }
        }
    assert_int_equal(p->ninstrs, total);
    /* streams in stream order, back to back */
    uint32_t at = 0;
    for (uint32_t s = 0; s < p->ncores * ISA_ENGINE_COUNT; s++) {
        assert_int_equal(p->streams[s].first, at);
        at += p->streams[s].count;
    }
    isa_program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_loc_and_source),
        cmocka_unit_test(test_isa_example),
        cmocka_unit_test(test_slicing),
        cmocka_unit_test(test_raw_views),
        cmocka_unit_test(test_loops_lets_ifs),
        cmocka_unit_test(test_cores_and_sems),
        cmocka_unit_test(test_psum_placement),
        cmocka_unit_test(test_options_flags),
        cmocka_unit_test(test_flag_vs_tensor_name),
        cmocka_unit_test(test_many_errors_reported),
        cmocka_unit_test(test_isa_view_examples),
        cmocka_unit_test(test_isa_raw_examples),
        cmocka_unit_test(test_isa_clause_example),
        cmocka_unit_test(test_every_instruction),
        cmocka_unit_test(test_int_expressions),
        cmocka_unit_test(test_let_rebinding_and_nested_loops),
        cmocka_unit_test(test_core_lists),
        cmocka_unit_test(test_sbuf_placement),
        cmocka_unit_test(test_psum_banks),
        cmocka_unit_test(test_hbm_placement),
        cmocka_unit_test(test_text_details),
        cmocka_unit_test(test_diag_limit),
        cmocka_unit_test(test_long_text),
        cmocka_unit_test(test_loop_replay_matches_unrolled),
        cmocka_unit_test(test_instr_replay_matches_unrolled),
        cmocka_unit_test(test_compiled_directives),
        cmocka_unit_test(test_stream_layout),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
