/*
 * test_ncx.c -- the .ncx container (isa/ncx.c) and the disassembler (isa/dis.c).
 *
 * Programs are built in memory with the isa_builder_* functions. Checked here: write -> read
 * -> write gives identical bytes; writing is deterministic and canonical; every class of
 * corruption is rejected with its own message and never crashes the loader; the
 * disassembler's exact text; and assemble -> write -> read -> disassemble -> assemble gives
 * the identical binary.
 */
#define _GNU_SOURCE /* F_SETLEASE (Linux) */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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

#include "asm.h"
#include "check.h"
#include "dis.h"
#include "encoding.h"
#include "isa_internal.h"
#include "load.h"
#include "ncx.h"
#include "testutil.h"

/* ---- building programs in memory ---------------------------------------------------------- */

#define PB_STREAMS (4 * ISA_ENGINE_COUNT) /* up to 2 chips */
#define PB_PER_STREAM 32

typedef struct pb {
    isa_builder_t b;
    isa_instr_t q[PB_STREAMS][PB_PER_STREAM];
    uint32_t nq[PB_STREAMS];
} pb_t;

static pb_t *pb_new(uint32_t chips, const char *arch, const char *source)
{
    pb_t *pb = calloc(1, sizeof *pb);
    assert_non_null(pb);
    assert_int_equal(isa_builder_init(&pb->b), 0);
    pb->b.prog->chips = chips;
    pb->b.prog->ncores = chips * ISA_CORES_PER_CHIP;
    if (arch)
        snprintf(pb->b.prog->arch, sizeof pb->b.prog->arch, "%s", arch);
    if (source)
        pb->b.prog->source = isa_builder_intern(&pb->b, source, strlen(source));
    return pb;
}

static uint32_t pb_name(pb_t *pb, const char *name)
{
    return name ? isa_builder_intern(&pb->b, name, strlen(name)) : ISA_NO_NAME;
}

static uint32_t pb_hbm(pb_t *pb, const char *name, isa_dtype_t dt, isa_tensor_kind_t kind,
                       int32_t chip, uint64_t addr, unsigned ndims, const uint64_t *dims)
{
    isa_tensor_t t;
    memset(&t, 0, sizeof t);
    t.name = pb_name(pb, name);
    t.space = ISA_SPACE_HBM;
    t.dtype = (uint8_t)dt;
    t.kind = (uint8_t)kind;
    t.ndims = (uint8_t)ndims;
    t.core = -1;
    t.chip = chip;
    t.offset = addr;
    memcpy(t.dims, dims, ndims * sizeof *dims);
    return isa_builder_tensor(&pb->b, &t);
}

static uint32_t pb_local(pb_t *pb, const char *name, isa_space_t space, isa_dtype_t dt,
                         int32_t core, uint32_t pstart, uint64_t offset, unsigned ndims,
                         const uint64_t *dims)
{
    isa_tensor_t t;
    memset(&t, 0, sizeof t);
    t.name = pb_name(pb, name);
    t.space = (uint8_t)space;
    t.dtype = (uint8_t)dt;
    t.kind = ISA_TK_LOCAL;
    t.ndims = (uint8_t)ndims;
    t.core = core;
    t.chip = -1;
    t.pstart = pstart;
    t.offset = offset;
    memcpy(t.dims, dims, ndims * sizeof *dims);
    return isa_builder_tensor(&pb->b, &t);
}

static void pb_sem(pb_t *pb, const char *name, int32_t core, uint8_t index, int32_t init)
{
    isa_sem_t s;
    memset(&s, 0, sizeof s);
    s.name = pb_name(pb, name);
    s.core = core;
    s.index = index;
    s.init = init;
    isa_builder_sem(&pb->b, &s);
}

static void pb_group(pb_t *pb, const char *name, uint32_t n, const int64_t *cores)
{
    isa_group_t g;
    g.name = pb_name(pb, name);
    g.ncores = n;
    g.first = isa_builder_ints(&pb->b, cores, n);
    isa_builder_group(&pb->b, &g);
}

/* The whole of tensor ti as a view (what the bare name denotes). */
static isa_view_t tview(const pb_t *pb, uint32_t ti)
{
    const isa_tensor_t *t = &pb->b.prog->tensors[ti];
    isa_view_t v;
    memset(&v, 0, sizeof v);
    v.space = t->space;
    v.dtype = t->dtype;
    v.offset = t->offset;
    v.pcount = 1;
    unsigned first = 0;
    if (t->space != ISA_SPACE_HBM) {
        v.pstart = (uint8_t)t->pstart;
        v.pcount = (uint16_t)t->dims[0];
        first = 1;
    }
    int64_t stride = 1;
    for (unsigned d = t->ndims; d-- > first;) {
        v.stride[d - first] = stride;
        v.count[d - first] = (uint32_t)t->dims[d];
        stride *= (int64_t)t->dims[d];
    }
    v.ndims = (uint8_t)(t->ndims - first);
    return v;
}

static isa_arg_t A_view(pb_t *pb, isa_view_t v)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.is_view = 1;
    a.index = isa_builder_view(&pb->b, &v);
    return a;
}
static isa_arg_t A_t(pb_t *pb, uint32_t ti)
{
    return A_view(pb, tview(pb, ti));
}
static isa_arg_t A_f(double f)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.v.f = f;
    return a;
}
static isa_arg_t A_i(int64_t i)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.v.i = i;
    return a;
}
static isa_arg_t A_list(pb_t *pb, uint32_t n, const int64_t *vals)
{
    isa_arg_t a;
    memset(&a, 0, sizeof a);
    a.present = 1;
    a.count = (uint16_t)n;
    a.index = isa_builder_ints(&pb->b, vals, n);
    return a;
}

static isa_sync_t sync_(uint8_t sem, isa_sync_op_t op, int32_t value)
{
    isa_sync_t s;
    memset(&s, 0, sizeof s);
    s.sem = sem;
    s.op = (uint8_t)op;
    s.value = value;
    return s;
}

/* Queue an instruction on (core, engine); args has the op's nslots entries (absent = 0). */
static isa_instr_t *pb_instr(pb_t *pb, uint32_t core, isa_engine_t e, isa_op_t op,
                             const isa_arg_t *args)
{
    const isa_op_info_t *info = isa_op_info(op);
    uint32_t s = core * ISA_ENGINE_COUNT + (uint32_t)e;
    assert_true(s < PB_STREAMS && pb->nq[s] < PB_PER_STREAM);
    isa_instr_t *in = &pb->q[s][pb->nq[s]++];
    memset(in, 0, sizeof *in);
    in->op = (uint16_t)op;
    in->engine = (uint8_t)e;
    in->args = info->nslots ? isa_builder_args(&pb->b, info->nslots) : pb->b.prog->nargs;
    if (info->nslots)
        memcpy(&pb->b.prog->args[in->args], args, info->nslots * sizeof *args);
    return in;
}

/* Lay the queued streams out, stream by stream, and hand over the program. */
static isa_program_t *pb_finish(pb_t *pb)
{
    isa_program_t *p = pb->b.prog;
    uint32_t n = p->ncores * ISA_ENGINE_COUNT;
    p->streams = calloc(n, sizeof *p->streams);
    assert_non_null(p->streams);
    for (uint32_t s = 0; s < n; s++) {
        p->streams[s].first = p->ninstrs;
        p->streams[s].count = s < PB_STREAMS ? pb->nq[s] : 0;
        for (uint32_t k = 0; k < p->streams[s].count; k++)
            isa_builder_instr(&pb->b, &pb->q[s][k]);
    }
    assert_false(pb->b.oom);
    free(pb);
    return p;
}

/*
 * ISA.md section 10 built by hand: C[128, 512] = A^T . B, with the matmul shorthand already
 * split into ldweights + matmul.
 */
enum { EX_A, EX_B, EX_C, EX_AS, EX_BS, EX_ACC, EX_CS };

static isa_program_t *example_program(int with_lines)
{
    pb_t *pb = pb_new(1, "trn1", "example.nca");
    pb_hbm(pb, "a", ISA_DT_BF16, ISA_TK_INPUT, 0, 0x0, 2, (uint64_t[]){128, 128});
    pb_hbm(pb, "b", ISA_DT_BF16, ISA_TK_INPUT, 0, 0x8000, 2, (uint64_t[]){128, 512});
    pb_hbm(pb, "c", ISA_DT_FP32, ISA_TK_OUTPUT, 0, 0x28000, 2, (uint64_t[]){128, 512});
    pb_local(pb, "as", ISA_SPACE_SBUF, ISA_DT_BF16, 0, 0, 0, 2, (uint64_t[]){128, 128});
    pb_local(pb, "bs", ISA_SPACE_SBUF, ISA_DT_BF16, 0, 0, 256, 2, (uint64_t[]){128, 512});
    pb_local(pb, "acc", ISA_SPACE_PSUM, ISA_DT_FP32, 0, 0, 0, 2, (uint64_t[]){128, 512});
    pb_local(pb, "cs", ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 1280, 2, (uint64_t[]){128, 512});
    pb_sem(pb, "loaded", 0, 0, 0);
    pb_sem(pb, "mm", 0, 1, 0);
    pb_sem(pb, "copied", 0, 2, 0);
    isa_instr_t *in;
    in = pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_DMA,
                  (isa_arg_t[]){A_t(pb, EX_AS), A_t(pb, EX_A), A_i(0), {0}});
    in->npost = 1, in->post[0] = sync_(0, ISA_POST_ADD, 1), in->line = with_lines ? 15 : 0;
    in = pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_DMA,
                  (isa_arg_t[]){A_t(pb, EX_BS), A_t(pb, EX_B), A_i(1), {0}});
    in->npost = 1, in->post[0] = sync_(0, ISA_POST_ADD, 1), in->line = with_lines ? 16 : 0;
    in = pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_DMA,
                  (isa_arg_t[]){A_t(pb, EX_C), A_t(pb, EX_CS), A_i(2), {0}});
    in->nwait = 1, in->wait[0] = sync_(2, ISA_WAIT_GE, 1), in->line = with_lines ? 17 : 0;
    in = pb_instr(pb, 0, ISA_ENGINE_PE, ISA_OP_LDWEIGHTS, (isa_arg_t[]){A_t(pb, EX_AS)});
    in->nwait = 1, in->wait[0] = sync_(0, ISA_WAIT_GE, 2), in->line = with_lines ? 19 : 0;
    in = pb_instr(pb, 0, ISA_ENGINE_PE, ISA_OP_MATMUL,
                  (isa_arg_t[]){A_t(pb, EX_ACC), A_t(pb, EX_BS), {0}});
    in->npost = 1, in->post[0] = sync_(1, ISA_POST_ADD, 1), in->line = with_lines ? 19 : 0;
    in = pb_instr(
        pb, 0, ISA_ENGINE_ACT, ISA_OP_ACTIVATE,
        (isa_arg_t[]){A_t(pb, EX_CS), A_t(pb, EX_ACC), A_i(ISA_FUNC_COPY), {0}, {0}, {0}, {0}});
    in->nwait = 1, in->wait[0] = sync_(1, ISA_WAIT_GE, 1);
    in->npost = 1, in->post[0] = sync_(2, ISA_POST_ADD, 1), in->line = with_lines ? 21 : 0;
    return pb_finish(pb);
}

static const char example_text[] = "; disassembled by ncsim\n"
                                   ".arch trn1\n"
                                   ".chips 1\n"
                                   ".source example.nca\n"
                                   ".hbm a bf16 [128, 128] input @0x0 chip=0\n"
                                   ".hbm b bf16 [128, 512] input @0x8000 chip=0\n"
                                   ".hbm c fp32 [128, 512] output @0x28000 chip=0\n"
                                   "\n"
                                   ".core 0\n"
                                   ".sbuf as bf16 [128, 128] @0 +0\n"
                                   ".sbuf bs bf16 [128, 512] @0 +256\n"
                                   ".psum acc fp32 [128, 512] @0 +0\n"
                                   ".sbuf cs fp32 [128, 512] @0 +1280\n"
                                   ".sem loaded = 0\n"
                                   ".sem mm = 0\n"
                                   ".sem copied = 0\n"
                                   ".engine pe\n"
                                   ".loc 19\n"
                                   "    ldweights as | wait loaded >= 2\n"
                                   "    matmul acc, bs | post mm\n"
                                   ".engine act\n"
                                   ".loc 21\n"
                                   "    activate cs, acc, copy | wait mm >= 1 | post copied\n"
                                   ".engine sp\n"
                                   ".loc 15\n"
                                   "    dma as, a, queue=0 | post loaded\n"
                                   ".loc 16\n"
                                   "    dma bs, b, queue=1 | post loaded\n"
                                   ".loc 17\n"
                                   "    dma c, cs, queue=2 | wait copied >= 1\n";

/* ---- helpers over binaries ------------------------------------------------------------------ */

static void write_ok(const isa_program_t *p, uint8_t **buf, size_t *len)
{
    assert_int_equal(isa_ncx_write(p, buf, len), NCSIM_OK);
    assert_non_null(*buf);
}

/* Format 1.0 (operands inline in STRM): the tests that edit STRM bytes use it. */
static void write_v10(const isa_program_t *p, uint8_t **buf, size_t *len)
{
    assert_int_equal(isa_ncx_write_version(p, 0, buf, len), NCSIM_OK);
    assert_non_null(*buf);
}

static isa_program_t *read_ok(const uint8_t *buf, size_t len)
{
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = NULL;
    ncsim_status_t st = isa_ncx_read(buf, len, &g, "t.ncx", &p, &d);
    if (st != NCSIM_OK)
        fprintf(stderr, "unexpected errors:\n%s", d.text ? d.text : "(none)");
    assert_int_equal(st, NCSIM_OK);
    assert_non_null(p);
    assert_int_equal(d.errors, 0);
    isa_diag_free(&d);
    return p;
}

/* The buffer must be rejected with a message containing `expect`. */
static void read_fails(const uint8_t *buf, size_t len, const char *expect)
{
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = (isa_program_t *)(uintptr_t)1;
    ncsim_status_t st = isa_ncx_read(buf, len, &g, "t.ncx", &p, &d);
    if (st != NCSIM_FORMAT || !d.text || !strstr(d.text, expect))
        fprintf(stderr, "expected \"%s\", got status %d:\n%s", expect, st,
                d.text ? d.text : "(nothing)");
    assert_int_equal(st, NCSIM_FORMAT);
    assert_null(p);
    assert_non_null(d.text);
    assert_non_null(strstr(d.text, expect));
    isa_diag_free(&d);
}

/* Independent bitwise CRC-32 (zlib polynomial), to cross-check the writer's table version. */
static uint32_t crc32_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
    }
    return ~c;
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static void wr8(uint8_t *p, uint8_t v)
{
    p[0] = v;
}
static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void wr32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}
static void wr64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void fix_crc(uint8_t *buf, size_t len)
{
    wr32(buf + NCX_HDR_CRC, crc32_bitwise(buf + NCX_HEADER_SIZE, len - NCX_HEADER_SIZE));
}

/* A file taken apart into its sections, to be edited and put back together. */
typedef struct sect {
    uint32_t tag, flags;
    uint8_t data[4096];
    size_t len;
} sect_t;

typedef struct ncx_file {
    uint8_t header[NCX_HEADER_SIZE];
    sect_t s[12];
    int n;
} ncx_file_t;

static ncx_file_t *split(const uint8_t *buf, size_t len)
{
    ncx_file_t *f = calloc(1, sizeof *f);
    assert_non_null(f);
    memcpy(f->header, buf, NCX_HEADER_SIZE);
    size_t pos = NCX_HEADER_SIZE;
    while (pos < len) {
        sect_t *s = &f->s[f->n++];
        s->tag = rd32(buf + pos);
        s->flags = rd32(buf + pos + 4);
        s->len = rd32(buf + pos + 8);
        assert_true(s->len <= sizeof s->data);
        memcpy(s->data, buf + pos + NCX_SEC_HEADER_SIZE, s->len);
        pos += NCX_SEC_HEADER_SIZE + ((s->len + 7) & ~(size_t)7);
    }
    return f;
}

static sect_t *find(ncx_file_t *f, uint32_t tag)
{
    for (int i = 0; i < f->n; i++)
        if (f->s[i].tag == tag)
            return &f->s[i];
    fail_msg("no such section");
    return NULL;
}

/* Put the file back together with a correct length, section count and CRC. */
static uint8_t *join(const ncx_file_t *f, size_t *len)
{
    size_t n = NCX_HEADER_SIZE;
    for (int i = 0; i < f->n; i++)
        n += NCX_SEC_HEADER_SIZE + ((f->s[i].len + 7) & ~(size_t)7);
    uint8_t *buf = calloc(1, n);
    assert_non_null(buf);
    memcpy(buf, f->header, NCX_HEADER_SIZE);
    size_t pos = NCX_HEADER_SIZE;
    for (int i = 0; i < f->n; i++) {
        wr32(buf + pos, f->s[i].tag);
        wr32(buf + pos + 4, f->s[i].flags);
        wr64(buf + pos + 8, f->s[i].len);
        memcpy(buf + pos + NCX_SEC_HEADER_SIZE, f->s[i].data, f->s[i].len);
        pos += NCX_SEC_HEADER_SIZE + ((f->s[i].len + 7) & ~(size_t)7);
    }
    wr64(buf + NCX_HDR_LENGTH, n);
    wr32(buf + NCX_HDR_NSECTIONS, (uint32_t)f->n);
    fix_crc(buf, n);
    *len = n;
    return buf;
}

static void join_fails(const ncx_file_t *f, const char *expect)
{
    size_t len;
    uint8_t *buf = join(f, &len);
    read_fails(buf, len, expect);
    free(buf);
}

/* Offset in the STRM payload of the body of stream `s` (core * 6 + engine). */
static size_t strm_body(const sect_t *strm, uint32_t s)
{
    uint32_t cores = rd32(strm->data + NCX_STRM_CORES);
    size_t pos = NCX_STRM_HEADER_SIZE + (size_t)cores * ISA_ENGINE_COUNT * NCX_STRM_DIR_SIZE;
    for (uint32_t k = 0; k < s; k++)
        pos += rd32(strm->data + NCX_STRM_HEADER_SIZE + k * NCX_STRM_DIR_SIZE + NCX_STRM_DIR_BYTES);
    return pos;
}

static void set_lines_zero(isa_program_t *p)
{
    for (uint32_t i = 0; i < p->ninstrs; i++)
        p->instrs[i].line = 0;
}

/* ---- round trips and determinism ------------------------------------------------------------- */

static void test_write_read_write(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    uint8_t *b1, *b2;
    size_t n1, n2;
    write_ok(p, &b1, &n1);
    assert_true(isa_ncx_is_binary(b1, n1));
    assert_memory_equal(b1, NCX_MAGIC NCX_SENTINEL, 8);
    assert_int_equal(rd32(b1 + NCX_HDR_CRC), crc32_bitwise(b1 + 32, n1 - 32));
    isa_program_t *q = read_ok(b1, n1);
    write_ok(q, &b2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);

    /* what was read is the same program */
    assert_string_equal(q->arch, "trn1");
    assert_string_equal(isa_string(q, q->source), "example.nca");
    assert_int_equal(q->ntensors, 7);
    assert_int_equal(q->nsems, 3);
    assert_int_equal(q->ninstrs, 6);
    assert_int_equal(isa_stream(q, 0, ISA_ENGINE_PE)->count, 2);
    const isa_instr_t *mm = &q->instrs[isa_stream(q, 0, ISA_ENGINE_PE)->first + 1];
    assert_int_equal(mm->op, ISA_OP_MATMUL);
    assert_int_equal(mm->line, 19);
    assert_int_equal(mm->npost, 1);
    const isa_instr_t *pmm = &p->instrs[isa_stream(p, 0, ISA_ENGINE_PE)->first + 1];
    assert_true(isa_view_equal(isa_arg_view(q, &isa_instr_args(q, mm)[0]),
                               isa_arg_view(p, &isa_instr_args(p, pmm)[0])));
    char *t1 = isa_disassemble(p), *t2 = isa_disassemble(q);
    assert_string_equal(t1, t2);
    free(t1);
    free(t2);
    free(b1);
    free(b2);
    isa_program_free(p);
    isa_program_free(q);
}

static void test_deterministic_and_canonical(void **state)
{
    (void)state;
    isa_program_t *p = example_program(0), *q = example_program(0);
    /* garbage where padding lives in memory must not reach the file */
    memset(q->arch + 5, 'Z', sizeof q->arch - 5);
    for (uint32_t i = 0; i < q->ninstrs; i++)
        memset(q->instrs[i]._pad, 0xAB, sizeof q->instrs[i]._pad);
    for (uint32_t i = 0; i < q->nviews; i++) {
        q->views[i]._pad = 0x5A5A;
        for (unsigned d = q->views[i].ndims; d < ISA_MAX_DIMS; d++)
            q->views[i].stride[d] = 77, q->views[i].count[d] = 99;
    }
    /* declaring on-core tensors before HBM ones, or semaphores out of index order, does not
     * matter either (the order inside each class does: it is the declaration order) */
    isa_tensor_t as = q->tensors[EX_AS];
    memmove(&q->tensors[1], &q->tensors[0], EX_AS * sizeof as);
    q->tensors[0] = as;
    isa_sem_t s0 = q->sems[0];
    q->sems[0] = q->sems[2];
    q->sems[2] = s0;
    uint8_t *b1, *b2, *b3;
    size_t n1, n2, n3;
    write_ok(p, &b1, &n1);
    write_ok(p, &b3, &n3);
    write_ok(q, &b2, &n2);
    assert_int_equal(n1, n3);
    assert_memory_equal(b1, b3, n1);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* without line numbers there is no LINE section */
    ncx_file_t *f = split(b1, n1);
    assert_int_equal(f->n, 6);
    assert_int_equal(f->s[0].tag, NCX_TAG_META);
    assert_int_equal(f->s[1].tag, NCX_TAG_STRS);
    assert_int_equal(f->s[2].tag, NCX_TAG_DECL);
    assert_int_equal(f->s[3].tag, NCX_TAG_VIEW);
    assert_int_equal(f->s[4].tag, NCX_TAG_OPND);
    assert_int_equal(f->s[5].tag, NCX_TAG_CODE);
    /* strings: used names in canonical order, the source name last */
    static const char strs[] = "a\0b\0c\0as\0bs\0acc\0cs\0loaded\0mm\0copied\0example.nca";
    assert_int_equal(f->s[1].len, sizeof strs);
    assert_memory_equal(f->s[1].data, strs, sizeof strs);
    free(f);
    free(b1);
    free(b2);
    free(b3);
    isa_program_free(p);
    isa_program_free(q);
}

/* Every operand kind, several cores and chips, collectives, immediates at the edges. */
static isa_program_t *kitchen_sink(void)
{
    pb_t *pb = pb_new(2, NULL, NULL);
    uint32_t in = pb_hbm(pb, "in", ISA_DT_FP32, ISA_TK_INPUT, 0, 0, 2, (uint64_t[]){256, 64});
    uint32_t out = pb_hbm(pb, "out", ISA_DT_FP32, ISA_TK_OUTPUT, 1, 0, 2, (uint64_t[]){256, 64});
    uint32_t h0 = pb_hbm(pb, "h0", ISA_DT_FP32, ISA_TK_SCRATCH, 0, 0x10000, 1, (uint64_t[]){1024});
    uint32_t h1 = pb_hbm(pb, "h1", ISA_DT_FP32, ISA_TK_SCRATCH, 1, 0x10000, 1, (uint64_t[]){1024});
    uint32_t x =
        pb_local(pb, "x", ISA_SPACE_SBUF, ISA_DT_FP32, -1, 0, 0, 3, (uint64_t[]){128, 8, 16});
    uint32_t y =
        pb_local(pb, "y", ISA_SPACE_SBUF, ISA_DT_FP32, -1, 0, 512, 2, (uint64_t[]){128, 128});
    uint32_t v =
        pb_local(pb, "v", ISA_SPACE_SBUF, ISA_DT_FP32, -1, 0, 1024, 2, (uint64_t[]){128, 1});
    uint32_t ps =
        pb_local(pb, "ps", ISA_SPACE_PSUM, ISA_DT_FP32, 2, 0, 2048, 2, (uint64_t[]){128, 128});
    uint32_t q =
        pb_local(pb, "q", ISA_SPACE_SBUF, ISA_DT_I32, 3, 32, 4096, 2, (uint64_t[]){32, 16});
    pb_sem(pb, "g", -1, 0, -5);
    pb_sem(pb, "l2", 2, 1, 7);
    pb_sem(pb, "l0", 0, 1, 0);
    pb_group(pb, "all", 4, (int64_t[]){0, 1, 2, 3});
    pb_group(pb, "pair", 2, (int64_t[]){2, 0});

    isa_arg_t none = {0};
    /* core 0 act: activate with every option */
    isa_instr_t *i;
    i = pb_instr(pb, 0, ISA_ENGINE_ACT, ISA_OP_ACTIVATE,
                 (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_i(ISA_FUNC_GELU_TANH), A_f(0.1),
                               A_t(pb, v), none, A_t(pb, v)});
    i->nwait = 2, i->wait[0] = sync_(0, ISA_WAIT_EQ, -5), i->wait[1] = sync_(1, ISA_WAIT_GE, 3);
    i->npost = 2, i->post[0] = sync_(1, ISA_POST_SUB, 2), i->post[1] = sync_(0, ISA_POST_SET, 9);
    isa_arg_t scale_view = A_t(pb, v);
    pb_instr(pb, 0, ISA_ENGINE_ACT, ISA_OP_ACTIVATE,
             (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_i(ISA_FUNC_EXP), scale_view, none, A_t(pb, v),
                           none});
    /* core 0 dve: tensor_scalar with both ops and flags, reduce, scan, memset edges */
    isa_arg_t rev = A_i(1);
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_TENSOR_SCALAR,
             (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_i(ISA_ALU_SUBTRACT), A_f(-0.0),
                           A_i(ISA_ALU_MULTIPLY), A_t(pb, v), rev, rev});
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_TENSOR_SCALAR,
             (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_i(ISA_ALU_DIVIDE), A_f(1e300), none, none,
                           none, none});
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_TENSOR_REDUCE,
             (isa_arg_t[]){A_t(pb, v), A_t(pb, x), A_i(ISA_ALU_MAX), A_i(2), rev});
    isa_view_t row = tview(pb, y);
    row.count[0] = 16;
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_TENSOR_SCAN,
             (isa_arg_t[]){A_view(pb, row), A_view(pb, row), A_view(pb, row), A_i(ISA_ALU_ADD),
                           A_i(ISA_ALU_MULTIPLY), A_f(-HUGE_VAL)});
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_MEMSET, (isa_arg_t[]){A_t(pb, y), A_f(NAN)});
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_MEMSET, (isa_arg_t[]){A_t(pb, y), A_f(5e-324)});
    int64_t mask[32];
    for (int k = 0; k < 32; k++)
        mask[k] = k == 3 ? 255 : 31 - k;
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_SHUFFLE,
             (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_list(pb, 32, mask)});
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_DROPOUT,
             (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_f(0.25)});
    /* core 0 pool: iota and affine_select with lists, one of them empty */
    pb_instr(pb, 0, ISA_ENGINE_POOL, ISA_OP_IOTA,
             (isa_arg_t[]){A_t(pb, x), A_i(INT64_MIN), A_i(-1), A_list(pb, 2, (int64_t[]){16, 1})});
    pb_instr(pb, 0, ISA_ENGINE_POOL, ISA_OP_AFFINE_SELECT,
             (isa_arg_t[]){A_t(pb, y), A_t(pb, y), A_i(0), none, A_list(pb, 0, NULL),
                           A_i(ISA_CMP_GE), A_f(-1e30)});
    /* core 0 sp: DMA with a raw broadcast source (stride 0) and an accumulate flag */
    isa_view_t bc = tview(pb, y);
    bc.stride[0] = 0;
    i = pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_DMA,
                 (isa_arg_t[]){A_t(pb, y), A_view(pb, bc), A_i(15), A_i(1)});
    i->nwait = 1, i->wait[0] = sync_(1, ISA_WAIT_GE, 1);
    i = pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_NOP, NULL);
    i->npost = 1, i->post[0] = sync_(0, ISA_POST_ADD, 1);
    /* core 0 cc, core 2 cc: collectives over groups, point to point */
    pb_instr(pb, 0, ISA_ENGINE_CC, ISA_OP_ALL_REDUCE,
             (isa_arg_t[]){A_t(pb, h0), A_t(pb, h0), A_i(ISA_ALU_ADD), A_i(0)});
    pb_instr(pb, 0, ISA_ENGINE_CC, ISA_OP_SEND, (isa_arg_t[]){A_t(pb, in), A_i(2), A_i(7)});
    pb_instr(pb, 2, ISA_ENGINE_CC, ISA_OP_ALL_REDUCE,
             (isa_arg_t[]){A_t(pb, h1), A_t(pb, h1), A_i(ISA_ALU_MIN), A_i(0)});
    pb_instr(pb, 2, ISA_ENGINE_CC, ISA_OP_RECV, (isa_arg_t[]){A_t(pb, out), A_i(0), A_i(7)});
    isa_view_t half = tview(pb, h1);
    half.count[0] = 512;
    pb_instr(pb, 2, ISA_ENGINE_CC, ISA_OP_ALL_GATHER,
             (isa_arg_t[]){A_t(pb, h1), A_view(pb, half), A_i(1)});
    /* core 2 pe: transpose into its own PSUM tensor, waiting on a local semaphore */
    isa_view_t sq = tview(pb, y);
    i = pb_instr(pb, 2, ISA_ENGINE_PE, ISA_OP_TRANSPOSE,
                 (isa_arg_t[]){A_t(pb, ps), A_view(pb, sq)});
    i->nwait = 1, i->wait[0] = sync_(1, ISA_WAIT_GE, 1);
    /* core 3 pool: integer tensor at partition 32 */
    pb_instr(
        pb, 3, ISA_ENGINE_POOL, ISA_OP_TENSOR_SCALAR,
        (isa_arg_t[]){A_t(pb, q), A_t(pb, q), A_i(ISA_ALU_ADD), A_f(3.0), none, none, none, none});
    return pb_finish(pb);
}

static void test_every_kind_round_trips(void **state)
{
    (void)state;
    isa_program_t *p = kitchen_sink();
    uint8_t *b1, *b2;
    size_t n1, n2;
    write_ok(p, &b1, &n1);
    isa_program_t *q = read_ok(b1, n1);
    write_ok(q, &b2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    /* NaN and -0.0 survive bit for bit; lists, groups, flags too */
    const isa_stream_t *dve = isa_stream(q, 0, ISA_ENGINE_DVE);
    const isa_arg_t *ts = isa_instr_args(q, &q->instrs[dve->first]);
    assert_true(ts[3].present && !ts[3].is_view);
    uint64_t bits;
    memcpy(&bits, &ts[3].v.f, 8);
    assert_int_equal(bits, 0x8000000000000000ull);
    assert_true(ts[5].is_view && ts[6].present && ts[7].present);
    const isa_arg_t *ms = isa_instr_args(q, &q->instrs[dve->first + 4]);
    assert_true(ms[1].v.f != ms[1].v.f);
    const isa_stream_t *pool = isa_stream(q, 0, ISA_ENGINE_POOL);
    const isa_arg_t *io = isa_instr_args(q, &q->instrs[pool->first]);
    assert_int_equal(io[1].v.i, INT64_MIN);
    assert_int_equal(io[3].count, 2);
    assert_int_equal(q->ints[io[3].index + 1], 1);
    const isa_arg_t *af = isa_instr_args(q, &q->instrs[pool->first + 1]);
    assert_true(af[4].present);
    assert_int_equal(af[4].count, 0);
    assert_false(af[3].present);
    free(b1);
    free(b2);
    isa_program_free(p);
    isa_program_free(q);
}

/* A program that does not name what it need not name: only inputs and outputs keep names. */
static void test_stripped_names(void **state)
{
    (void)state;
    pb_t *pb = pb_new(1, NULL, NULL);
    uint32_t in = pb_hbm(pb, "in", ISA_DT_FP32, ISA_TK_INPUT, 0, 0, 2, (uint64_t[]){128, 4});
    uint32_t s = pb_hbm(pb, NULL, ISA_DT_FP32, ISA_TK_SCRATCH, 0, 4096, 2, (uint64_t[]){128, 4});
    uint32_t t1 = pb_local(pb, "t1", ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 0, 2, (uint64_t[]){128, 4});
    pb_sem(pb, NULL, -1, 0, 0);
    pb_group(pb, NULL, 2, (int64_t[]){0, 1});
    isa_instr_t *i = pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_DMA,
                              (isa_arg_t[]){A_t(pb, t1), A_t(pb, in), {0}, {0}});
    i->npost = 1, i->post[0] = sync_(0, ISA_POST_ADD, 4);
    pb_instr(pb, 0, ISA_ENGINE_SP, ISA_OP_DMA, (isa_arg_t[]){A_t(pb, s), A_t(pb, t1), {0}, {0}});
    pb_instr(pb, 0, ISA_ENGINE_CC, ISA_OP_ALL_GATHER,
             (isa_arg_t[]){A_t(pb, s),
                           A_view(pb, (isa_view_t){.space = ISA_SPACE_HBM,
                                                   .dtype = ISA_DT_FP32,
                                                   .pcount = 1,
                                                   .ndims = 1,
                                                   .offset = 4096,
                                                   .stride = {1},
                                                   .count = {256}}),
                           A_i(0)});
    isa_program_t *p = pb_finish(pb);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    ncx_file_t *f = split(b, n);
    static const char strs[] = "in\0t1";
    assert_int_equal(find(f, NCX_TAG_STRS)->len, sizeof strs);
    assert_memory_equal(find(f, NCX_TAG_STRS)->data, strs, sizeof strs);
    isa_program_t *q = read_ok(b, n);
    char *text = isa_disassemble(q);
    static const char expect[] = "; disassembled by ncsim\n"
                                 ".chips 1\n"
                                 ".hbm in fp32 [128, 4] input @0x0 chip=0\n"
                                 ".hbm t1_ fp32 [128, 4] scratch @0x1000 chip=0\n"
                                 ".sem s0 = 0\n"
                                 ".group g0 = 0, 1\n"
                                 "\n"
                                 ".core 0\n"
                                 ".sbuf t1 fp32 [128, 4] @0 +0\n"
                                 ".engine sp\n"
                                 ".loc 0\n"
                                 "    dma t1, in | post s0 += 4\n"
                                 "    dma t1_, t1\n"
                                 ".engine cc\n"
                                 "    all_gather t1_, hbm:fp32+0x1000[1x256], group=g0\n";
    assert_string_equal(text, expect);
    free(text);
    free(f);
    free(b);
    isa_program_free(p);
    isa_program_free(q);

    /* an input tensor cannot lose its name */
    pb = pb_new(1, NULL, NULL);
    pb_hbm(pb, NULL, ISA_DT_FP32, ISA_TK_INPUT, 0, 0, 1, (uint64_t[]){4});
    p = pb_finish(pb);
    write_ok(p, &b, &n);
    read_fails(b, n, "section DECL: tensor 0: an input tensor must have a name");
    free(b);
    isa_program_free(p);
}

static void test_writer_refuses_malformed(void **state)
{
    (void)state;
    isa_program_t *p = example_program(0);
    uint8_t *b = (uint8_t *)&b;
    size_t n = 1;
    p->args[0].index = 999999; /* a view index past the pool */
    assert_int_equal(isa_ncx_write(p, &b, &n), NCSIM_INTERNAL);
    assert_null(b);
    assert_int_equal(n, 0);
    isa_program_free(p);
}

/* ---- corruption ------------------------------------------------------------------------------ */

static void test_header_damage(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    uint8_t *m = malloc(n + 2);
    assert_non_null(m);

    read_fails(b, 0, "t.ncx: error: the file is empty");
    read_fails((const uint8_t *)".hbm a fp32 [1] input\n", 22, "not an .ncx file (bad magic)");
    memcpy(m, b, n);
    m[3] = 0x09; /* high bit stripped */
    read_fails(m, n, "lost its high bit");

    /* CR LF -> LF: the CR of the sentinel disappears, everything after shifts */
    memcpy(m, b, 4);
    memcpy(m + 4, b + 5, n - 5);
    read_fails(m, n - 1, "CR LF became LF");
    /* LF -> CR LF */
    memcpy(m, b, 5);
    m[5] = '\r';
    memcpy(m + 6, b + 5, n - 5);
    read_fails(m, n + 1, "LF became CR LF");
    read_fails(b, 6, "ends at the ^Z of the sentinel");
    memcpy(m, b, n);
    m[6] = 0;
    read_fails(m, n, "corruption sentinel damaged");

    memcpy(m, b, n);
    wr16(m + NCX_HDR_MAJOR, 2);
    wr16(m + NCX_HDR_MINOR, 1);
    read_fails(m, n, "format version 2.1 is newer than this reader (1.2)");
    wr16(m + NCX_HDR_MAJOR, 0);
    read_fails(m, n, "format version 0.1 is not supported");

    /* a newer minor is accepted; must-understand flags are not, informational ones are */
    memcpy(m, b, n);
    wr16(m + NCX_HDR_MINOR, 7);
    isa_program_free(read_ok(m, n));
    wr32(m + NCX_HDR_FLAGS, 0x00010000u);
    isa_program_free(read_ok(m, n));
    wr32(m + NCX_HDR_FLAGS, 0x00000004u);
    read_fails(m, n,
               "header flag bit 2 is not understood by this reader (the file is of a "
               "newer minor version than this reader's 1.2; a newer ncsim may read it)");

    memcpy(m, b, n);
    m[n] = 0;
    read_fails(m, n + 1, "1 unexpected bytes after the end of the file");
    read_fails(b, n - 1, "the file is truncated: the header says");
    memcpy(m, b, n);
    m[n / 2] ^= 0x10;
    read_fails(m, n, "CRC mismatch");

    free(m);
    free(b);
    isa_program_free(p);
}

/* Every prefix of a valid file is rejected, with a message, and nothing is read past it. */
static void test_truncated_everywhere(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    for (size_t k = 0; k < n; k++) {
        uint8_t *copy = malloc(k ? k : 1); /* exact size, so ASan sees any overread */
        assert_non_null(copy);
        memcpy(copy, b, k);
        isa_diag_t d;
        isa_diag_init(&d, 0);
        isa_program_t *q = NULL;
        assert_int_equal(isa_ncx_read(copy, k, NULL, "t.ncx", &q, &d), NCSIM_FORMAT);
        assert_null(q);
        assert_true(d.errors >= 1);
        assert_non_null(strstr(d.text, "t.ncx: error: "));
        isa_diag_free(&d);
        free(copy);
    }
    free(b);
    isa_program_free(p);
}

/* Each byte changed, CRC repaired so the damage reaches the decoder: never a crash, and
 * whatever loads writes back the same way twice. */
static void test_every_byte_mutated(void **state)
{
    (void)state;
    isa_program_t *p = kitchen_sink();
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    uint8_t *m = malloc(n);
    assert_non_null(m);
    static const uint8_t flips[] = {0x01, 0x80, 0xFF, 0x7F};
    unsigned loaded = 0, rejected = 0;
    for (size_t k = NCX_HEADER_SIZE; k < n; k++)
        for (size_t f = 0; f < sizeof flips; f++) {
            memcpy(m, b, n);
            m[k] ^= flips[f];
            fix_crc(m, n);
            isa_diag_t d;
            isa_diag_init(&d, 4);
            isa_program_t *q = NULL;
            ncsim_status_t st = isa_ncx_read(m, n, NULL, "m.ncx", &q, &d);
            if (st == NCSIM_OK) {
                loaded++;
                uint8_t *w1, *w2;
                size_t l1, l2;
                write_ok(q, &w1, &l1);
                isa_program_t *r = read_ok(w1, l1);
                write_ok(r, &w2, &l2);
                assert_int_equal(l1, l2);
                assert_memory_equal(w1, w2, l1);
                char *text = isa_disassemble(q);
                assert_non_null(text);
                free(text);
                free(w1);
                free(w2);
                isa_program_free(r);
                isa_program_free(q);
            } else {
                rejected++;
                assert_int_equal(st, NCSIM_FORMAT);
                assert_null(q);
                assert_true(d.errors >= 1);
            }
            isa_diag_free(&d);
        }
    assert_true(rejected > loaded); /* most damage is caught */
    assert_true(loaded > 0);        /* some is harmless (an immediate, a line number) */
    free(m);
    free(b);
    isa_program_free(p);
}

static void test_sections(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    uint8_t *b;
    size_t n;
    write_v10(p, &b, &n);
    ncx_file_t *f = split(b, n);
    assert_int_equal(f->n, 5);

    /* an unknown optional section is skipped; a required one stops the reader */
    ncx_file_t *g = calloc(1, sizeof *g);
    assert_non_null(g);
    *g = *f;
    memmove(&g->s[3], &g->s[2], 3 * sizeof g->s[0]);
    g->n = 6;
    g->s[2].tag = NCX_TAG('X', 'T', 'R', 'A');
    g->s[2].flags = 0;
    g->s[2].len = 5;
    memcpy(g->s[2].data, "hello", 5);
    size_t len;
    uint8_t *buf = join(g, &len);
    isa_program_t *q = read_ok(buf, len);
    uint8_t *again;
    size_t alen;
    write_v10(q, &again, &alen);
    assert_int_equal(alen, n);
    assert_memory_equal(again, b, n);
    free(again);
    free(buf);
    isa_program_free(q);
    g->s[2].flags = NCX_SEC_REQUIRED;
    join_fails(g, "section XTRA: unknown section marked required");
    g->s[2].tag = NCX_TAG('X', 0x01, 'R', 'A');
    join_fails(g, "section X\\x01RA: unknown section marked required");
    g->s[2].tag = NCX_TAG_SEQR;
    g->s[2].flags = 0;
    join_fails(g, "section SEQR: sequencer registers are reserved");
    g->s[2] = f->s[0];
    join_fails(g, "section META: appears twice");
    *g = *f;
    g->s[4].flags = 0x10;
    join_fails(g, "section LINE: flags 0x00000010 have reserved bits set");

    /* missing sections */
    *g = *f;
    memmove(&g->s[3], &g->s[4], sizeof g->s[0]);
    g->n = 4;
    join_fails(g, "section STRM is missing");
    *g = *f;
    memmove(&g->s[0], &g->s[1], 4 * sizeof g->s[0]);
    g->n = 4;
    join_fails(g, "section META is missing");

    /* lengths */
    *g = *f;
    g->s[0].len = 47;
    join_fails(g, "section META: length is 47 bytes, expected 48");
    memcpy(buf = malloc(n), b, n);
    wr64(buf + NCX_HEADER_SIZE + NCX_SEC_LENGTH, 1u << 20);
    fix_crc(buf, n);
    read_fails(buf, n, "section META: length 1048576 runs past the end of the file");
    memcpy(buf, b, n);
    wr32(buf + NCX_HDR_NSECTIONS, 4);
    read_fails(buf, n, "bytes after the last of 4 sections");
    wr32(buf + NCX_HDR_NSECTIONS, 6);
    read_fails(buf, n, "section 5 of 6: header runs past the end of the file");
    memcpy(buf, b, n);
    size_t at = NCX_HEADER_SIZE; /* the first padding byte after STRM (577 bytes long) */
    for (int i = 0; i < 3; i++)
        at += NCX_SEC_HEADER_SIZE + ((f->s[i].len + 7) & ~(size_t)7);
    assert_int_equal(f->s[3].len % 8, 1);
    buf[at + NCX_SEC_HEADER_SIZE + f->s[3].len] = 1;
    fix_crc(buf, n);
    read_fails(buf, n, "section STRM: padding byte 0 is not zero");
    free(buf);

    free(g);
    free(f);
    free(b);
    isa_program_free(p);
}

static void test_meta_strs_decl(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    ncx_file_t *f = split(b, n), *g = calloc(1, sizeof *g);
    assert_non_null(g);

#define EDIT(sec, off, width, val, expect)                                                         \
    do {                                                                                           \
        *g = *f;                                                                                   \
        wr##width(find(g, sec)->data + (off), val);                                                \
        join_fails(g, expect);                                                                     \
    } while (0)

    EDIT(NCX_TAG_META, NCX_META_CORES, 32, 3, "section META: core count 3 does not match 1 chips");
    EDIT(NCX_TAG_META, NCX_META_CHIPS, 32, 65, "section META: chip count 65 is out of range");
    EDIT(NCX_TAG_META, NCX_META_CHIPS, 32, 0, "chip count 0 is out of range");
    EDIT(NCX_TAG_META, NCX_META_RESERVED, 32, 1, "section META: reserved field is not zero");
    EDIT(NCX_TAG_META, NCX_META_SOURCE, 32, 5000, "source file name offset 5000 is outside");
    EDIT(NCX_TAG_META, NCX_META_ARCH, 32, 0x2d2d2d2d, "architecture name \"----\" is not");
    EDIT(NCX_TAG_META, NCX_META_ARCH + 8, 32, 1, "architecture name padding is not zero");

    *g = *f;
    sect_t *strs = find(g, NCX_TAG_STRS);
    strs->data[strs->len - 1] = 'x';
    join_fails(g, "section STRS: the last string is not NUL-terminated");
    *g = *f;
    find(g, NCX_TAG_STRS)->data[0] = '9';
    join_fails(g, "section DECL: tensor 0: tensor name \"9\" is not an identifier");

    size_t t0 = NCX_DECL_HEADER_SIZE, t3 = NCX_DECL_HEADER_SIZE + 3 * NCX_TENSOR_SIZE;
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_NAME, 32, 9999,
         "section DECL: tensor 0: tensor name offset 9999 is outside the string table");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_NAME, 32, 7, "tensor name offset 7 is not at the start");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_NAME, 32, 2,
         "section DECL: tensor 1 (b): another tensor of the same scope is named \"b\"");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_DTYPE, 8, 200, "tensor 0 (a): dtype 200 is unknown");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_SPACE, 8, 3, "memory space 3 is unknown");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_KIND, 8, 9, "tensor kind 9 is unknown");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_KIND, 8, ISA_TK_LOCAL, "kind local does not fit a hbm");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_NDIMS, 8, 6, "6 dims, expected 1..5");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_DIMS + 8, 64, 0, "dim 1 is 0");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_DIMS + 16, 64, 4, "unused dim 2 is not zero");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_DIMS, 64, 1ull << 40, "are outside the HBM");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_CHIP, 32, 1, "chip 1 is out of range");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_CORE, 32, 0, "an HBM tensor has core 0");
    EDIT(NCX_TAG_DECL, t0 + NCX_TENSOR_RESERVED, 32, 1, "reserved field is not zero");
    EDIT(NCX_TAG_DECL, t3 + NCX_TENSOR_CORE, 32, 2, "tensor 3 (as): core 2 is out of range");
    EDIT(NCX_TAG_DECL, t3 + NCX_TENSOR_PSTART, 32, 64,
         "tensor 3 (as): partitions 64..192 are outside 0..128");
    EDIT(NCX_TAG_DECL, t3 + NCX_TENSOR_OFFSET, 64, 196600, "are outside the SBUF");

    /* semaphores: canonical indices, range, reserved bytes */
    size_t s0 = NCX_DECL_HEADER_SIZE + 7 * NCX_TENSOR_SIZE;
    EDIT(NCX_TAG_DECL, s0 + NCX_SEM_INDEX, 8, 5,
         "section DECL: semaphore 0 (loaded): index 5, expected 0");
    EDIT(NCX_TAG_DECL, s0 + NCX_SEM_INDEX, 8, 64, "index 64 is out of range (0..63)");
    EDIT(NCX_TAG_DECL, s0 + NCX_SEM_CORE, 32, 9, "semaphore 0 (loaded): core 9 is out of range");
    EDIT(NCX_TAG_DECL, s0 + NCX_SEM_RESERVED + 1, 8, 1, "reserved bytes are not zero");
    /* counts that do not fit the section */
    EDIT(NCX_TAG_DECL, NCX_DECL_NTENSORS, 32, 0xFFFFFFFFu, "need at least");
    EDIT(NCX_TAG_DECL, NCX_DECL_NGROUPS, 32, 1, "need at least 632 bytes, the section has 624");
    EDIT(NCX_TAG_DECL, NCX_DECL_NSEMS, 32, 2, "bytes left after the last group");
    EDIT(NCX_TAG_DECL, NCX_DECL_RESERVED, 32, 1, "section DECL: reserved field is not zero");
#undef EDIT
    free(g);
    free(f);
    free(b);
    isa_program_free(p);
}

static void test_groups_and_names(void **state)
{
    (void)state;
    isa_program_t *p = kitchen_sink();
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    ncx_file_t *f = split(b, n), *g = calloc(1, sizeof *g);
    assert_non_null(g);
    const sect_t *decl = find(f, NCX_TAG_DECL);
    size_t gr0 = NCX_DECL_HEADER_SIZE + rd32(decl->data) * NCX_TENSOR_SIZE +
                 rd32(decl->data + 4) * NCX_SEM_SIZE;
    *g = *f;
    wr32(find(g, NCX_TAG_DECL)->data + gr0 + NCX_GROUP_HEADER_SIZE + 4, 0);
    join_fails(g, "section DECL: group 0 (all): core 0 appears twice");
    *g = *f;
    wr32(find(g, NCX_TAG_DECL)->data + gr0 + NCX_GROUP_HEADER_SIZE + 4, 4);
    join_fails(g, "group 0 (all): member 1 is core 4, out of range (0..3)");
    *g = *f;
    wr32(find(g, NCX_TAG_DECL)->data + gr0 + NCX_GROUP_NCORES, 0);
    join_fails(g, "group 0 (all): 0 members, expected 1..4");
    *g = *f;
    wr32(find(g, NCX_TAG_DECL)->data + gr0 + NCX_GROUP_NCORES, 100);
    join_fails(g, "group 0 (all): 100 members, expected 1..4");
    *g = *f;
    wr32(find(g, NCX_TAG_DECL)->data + gr0 + NCX_GROUP_HEADER_SIZE + 16 + NCX_GROUP_NCORES, 4);
    join_fails(g, "group 1 (pair): member list runs past the end of the section");
    *g = *f;
    wr32(find(g, NCX_TAG_DECL)->data + NCX_DECL_NGROUPS, 3);
    join_fails(g, "section DECL: group 2: truncated group record");
    free(g);
    free(f);
    free(b);
    isa_program_free(p);

    /* a per-core name may not hide a global one (the assembler could not say it) */
    pb_t *pb = pb_new(1, NULL, NULL);
    pb_local(pb, "x", ISA_SPACE_SBUF, ISA_DT_FP32, 1, 0, 0, 2, (uint64_t[]){128, 4});
    pb_local(pb, "x", ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 0, 2, (uint64_t[]){128, 4});
    pb_local(pb, "x", ISA_SPACE_SBUF, ISA_DT_FP32, -1, 0, 64, 2, (uint64_t[]){128, 4});
    p = pb_finish(pb);
    write_ok(p, &b, &n);
    read_fails(b, n, "section DECL: tensor 1 (x): a tensor of core 0 hides the global tensor");
    free(b);
    isa_program_free(p);
    pb = pb_new(1, NULL, NULL);
    pb_sem(pb, "s", -1, 0, 0);
    pb_sem(pb, "s", 1, 1, 0);
    p = pb_finish(pb);
    write_ok(p, &b, &n);
    read_fails(b, n, "semaphore 1 (s): a semaphore of core 1 hides the global semaphore");
    free(b);
    isa_program_free(p);
    /* tensor placement follows the partition rules of declarations (ISA.md 5.2) */
    pb = pb_new(1, NULL, NULL);
    pb_local(pb, "x", ISA_SPACE_SBUF, ISA_DT_FP32, 0, 32, 0, 2, (uint64_t[]){64, 4});
    p = pb_finish(pb);
    write_ok(p, &b, &n);
    read_fails(b, n, "tensor 0 (x): 64 partitions cannot start at partition 32");
    free(b);
    isa_program_free(p);
}

/* Instruction-level damage in the example: pe stream = ldweights, matmul; act = activate;
 * sp = three dma. */
static void test_instruction_damage(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    uint8_t *b;
    size_t n;
    write_v10(p, &b, &n);
    ncx_file_t *f = split(b, n), *g = calloc(1, sizeof *g);
    assert_non_null(g);
    const sect_t *strm0 = find(f, NCX_TAG_STRM);
    size_t pe = strm_body(strm0, ISA_ENGINE_PE), act = strm_body(strm0, ISA_ENGINE_ACT);
    size_t sp = strm_body(strm0, ISA_ENGINE_SP);
    /* ldweights: header, one wait, STAT view of 1 free dim */
    size_t ld_view = pe + NCX_INSTR_HEADER_SIZE + NCX_CLAUSE_SIZE;
    size_t mm = ld_view + NCX_VIEW_SIZE(1);
    size_t act_func = act + NCX_INSTR_HEADER_SIZE + 2 * NCX_CLAUSE_SIZE + 2 * NCX_VIEW_SIZE(1);
    size_t dma_queue =
        sp + NCX_INSTR_HEADER_SIZE + NCX_CLAUSE_SIZE + NCX_VIEW_SIZE(1) + NCX_VIEW_SIZE(2);

#define EDIT(off, width, val, expect)                                                              \
    do {                                                                                           \
        *g = *f;                                                                                   \
        wr##width(find(g, NCX_TAG_STRM)->data + (off), val);                                       \
        join_fails(g, expect);                                                                     \
    } while (0)
#define EDIT8(off, val, expect)                                                                    \
    do {                                                                                           \
        *g = *f;                                                                                   \
        find(g, NCX_TAG_STRM)->data[off] = (uint8_t)(val);                                         \
        join_fails(g, expect);                                                                     \
    } while (0)

    EDIT(pe + NCX_INSTR_OPCODE, 16, 999,
         "t.ncx: error: section STRM: instruction 0 of core 0 pe: opcode 999 is unknown");
    EDIT(mm + NCX_INSTR_OPCODE, 16, 0x105,
         "instruction 1 of core 0 pe: opcode 0x0105 is in the range reserved for sequencer");
    EDIT(pe + NCX_INSTR_OPCODE, 16, ISA_OP_ACTIVATE,
         "instruction 0 of core 0 pe: activate: activate is not legal on engine pe");
    EDIT8(pe + NCX_INSTR_ENGINE, ISA_ENGINE_SP,
          "ldweights: engine byte 4 does not match the stream's engine (pe)");
    EDIT8(pe + NCX_INSTR_SYNC, NCX_SYNC_BYTE(3, 0), "3 waits and 0 posts, at most 2 of each");
    EDIT8(pe + NCX_INSTR_PRESENT, 0x3, "operand mask 0x03 marks slots the instruction does not");
    EDIT8(pe + NCX_INSTR_PRESENT, 0x0, "ldweights: required operand STAT is missing");
    EDIT8(pe + NCX_INSTR_EXT, 1, "extension byte or reserved field is set");
    EDIT(pe + NCX_INSTR_RESERVED, 16, 1, "extension byte or reserved field is set");
    /* clauses */
    size_t cl = pe + NCX_INSTR_HEADER_SIZE;
    EDIT8(cl + NCX_CLAUSE_SEM, 70, "wait clause: semaphore index 70 is out of range (0..63)");
    EDIT8(cl + NCX_CLAUSE_SEM, 9, "wait clause: semaphore 9 is not declared on core 0");
    EDIT8(cl + NCX_CLAUSE_OP, ISA_POST_ADD, "wait clause: operation 2 is not a wait");
    EDIT(cl + NCX_CLAUSE_RESERVED, 16, 1, "wait clause 0: reserved field is not zero");
    /* views */
    EDIT8(ld_view + NCX_VIEW_NDIMS, 9, "operand STAT: 9 dims, at most 4 for sb");
    EDIT8(ld_view + NCX_VIEW_SPACE, 7, "operand STAT: memory space 7 is unknown");
    EDIT8(ld_view + NCX_VIEW_DTYPE, 13, "operand STAT: dtype 13 is unknown");
    EDIT(ld_view + NCX_VIEW_DYN, 16, 1, "operand STAT: dynamic addressing field is set");
    EDIT(ld_view + NCX_VIEW_PCOUNT, 16, 0, "operand STAT: partitions 0..0 are outside 0..128");
    EDIT8(ld_view + NCX_VIEW_PSTART, 1, "operand STAT: partitions 1..129 are outside 0..128");
    EDIT(ld_view + NCX_VIEW_OFFSET, 64, 1ull << 50, "offset 1125899906842624 exceeds the format");
    EDIT(ld_view + NCX_VIEW_OFFSET, 64, 196600, "operand STAT: bytes 196600..196856 are outside");
    EDIT(ld_view + NCX_VIEW_HEADER_SIZE, 64, (uint64_t) - (1ll << 41),
         "stride -2199023255552 of dim 0 exceeds the format limit");
    EDIT(ld_view + NCX_VIEW_HEADER_SIZE, 64, (uint64_t)-1, "operand STAT: bytes -254..2 are");
    EDIT(ld_view + NCX_VIEW_HEADER_SIZE + 8, 32, 0, "count 0 of dim 0 is out of range (1..65535)");
    EDIT(ld_view + NCX_VIEW_HEADER_SIZE + 8, 32, 70000, "count 70000 of dim 0 is out of range");
    /* enums, ints: values out of range, and the static checks behind the structure */
    EDIT8(act_func, 99,
          "instruction 0 of core 0 act: activate: operand FUNC: activation "
          "function 99 is unknown");
    EDIT(dma_queue, 64, 20, "queue=20 out of range 0..15");
    /* stream directory */
    EDIT(NCX_STRM_CORES, 32, 4, "section STRM: 4 cores, but META says 2");
    EDIT(NCX_STRM_ENGINES, 32, 7, "section STRM: 7 engines per core, expected 6");
    EDIT(NCX_STRM_HEADER_SIZE + NCX_STRM_DIR_COUNT, 32, 1,
         "stream of core 0 pe: 72 bytes left after its 1 instructions");
    EDIT(NCX_STRM_HEADER_SIZE + NCX_STRM_DIR_COUNT, 32, 3,
         "instruction 2 of core 0 pe: truncated instruction header");
    EDIT(NCX_STRM_HEADER_SIZE + NCX_STRM_DIR_COUNT, 32, 1000, "1000 instructions cannot fit");
    EDIT(NCX_STRM_HEADER_SIZE + NCX_STRM_DIR_BYTES, 32, 8, "2 instructions cannot fit in 8 bytes");
    EDIT(NCX_STRM_HEADER_SIZE + NCX_STRM_DIR_BYTES, 32, 120,
         "section STRM: the streams hold 477 bytes, the section 473 after its directory");
#undef EDIT
#undef EDIT8

    /* LINE */
    *g = *f;
    wr32(find(g, NCX_TAG_LINE)->data + NCX_LINE_COUNT, 5);
    join_fails(g, "section LINE: 5 lines for 6 instructions");
    *g = *f;
    find(g, NCX_TAG_LINE)->len -= 4;
    join_fails(g, "section LINE: length 28, expected 32 for 6 lines");

    /* a canonical NaN only */
    free(g);
    free(f);
    free(b);
    isa_program_free(p);
}

static void test_noncanonical_nan_rejected(void **state)
{
    (void)state;
    pb_t *pb = pb_new(1, NULL, NULL);
    uint32_t y = pb_local(pb, "y", ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 0, 2, (uint64_t[]){128, 4});
    double weird;
    uint64_t bits = 0xFFF8000000000001ull;
    memcpy(&weird, &bits, 8);
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_MEMSET, (isa_arg_t[]){A_t(pb, y), A_f(weird)});
    isa_program_t *p = pb_finish(pb);
    uint8_t *b;
    size_t n;
    write_v10(p, &b, &n); /* the writer canonicalises it */
    isa_program_t *q = read_ok(b, n);
    memcpy(&bits, &isa_instr_args(q, &q->instrs[0])[1].v.f, 8);
    assert_int_equal(bits, NCX_CANONICAL_NAN);
    ncx_file_t *f = split(b, n);
    sect_t *strm = find(f, NCX_TAG_STRM);
    wr64(strm->data + strm_body(strm, ISA_ENGINE_DVE) + NCX_INSTR_HEADER_SIZE + NCX_VIEW_SIZE(1),
         0x7FF0000000000001ull);
    join_fails(f, "operand VALUE: NaN 0x7ff0000000000001 is not the canonical quiet NaN");
    free(f);
    free(b);
    isa_program_free(p);
    isa_program_free(q);
}

/* ---- the disassembler ------------------------------------------------------------------------ */

static void test_dis_example_text(void **state)
{
    (void)state;
    isa_program_t *p = example_program(1);
    char *text = isa_disassemble(p);
    assert_non_null(text);
    assert_string_equal(text, example_text);
    free(text);

    char buf[128];
    const isa_instr_t *act = &p->instrs[isa_stream(p, 0, ISA_ENGINE_ACT)->first];
    size_t need = isa_format_instr(p, 0, act, buf, sizeof buf);
    assert_string_equal(buf, "activate cs, acc, copy | wait mm >= 1 | post copied");
    assert_int_equal(need, strlen(buf));
    /* snprintf semantics: truncated, NUL-terminated, full length returned */
    char small[9];
    assert_int_equal(isa_format_instr(p, 0, act, small, sizeof small), need);
    assert_string_equal(small, "activate");
    assert_int_equal(isa_format_instr(p, 0, act, NULL, 0), need);
    isa_program_free(p);
}

static void test_format_view_raw(void **state)
{
    (void)state;
    char buf[96];
    isa_view_t v = {.space = ISA_SPACE_SBUF,
                    .dtype = ISA_DT_BF16,
                    .pstart = 0,
                    .pcount = 128,
                    .offset = 1024,
                    .ndims = 2,
                    .stride = {64, 1},
                    .count = {4, 8}};
    isa_format_view(&v, buf, sizeof buf);
    assert_string_equal(buf, "sb:bf16@0:128+1024[64x4, 1x8]");
    isa_view_t w = {.space = ISA_SPACE_PSUM,
                    .dtype = ISA_DT_FP32,
                    .pstart = 0,
                    .pcount = 128,
                    .offset = 2048,
                    .ndims = 1,
                    .stride = {1},
                    .count = {512}};
    isa_format_view(&w, buf, sizeof buf);
    assert_string_equal(buf, "ps:fp32@0:128+2048[1x512]");
    isa_view_t h = {.space = ISA_SPACE_HBM,
                    .dtype = ISA_DT_BF16,
                    .pcount = 1,
                    .offset = 0x100000,
                    .ndims = 2,
                    .stride = {8192, 1},
                    .count = {128, 512}};
    size_t need = isa_format_view(&h, buf, sizeof buf);
    assert_string_equal(buf, "hbm:bf16+0x100000[8192x128, 1x512]");
    assert_int_equal(need, strlen(buf));
    isa_view_t z = {.space = ISA_SPACE_SBUF,
                    .dtype = ISA_DT_U8,
                    .pstart = 96,
                    .pcount = 32,
                    .offset = 7,
                    .ndims = 3,
                    .stride = {0, -2, 1},
                    .count = {3, 5, 1}};
    isa_format_view(&z, buf, sizeof buf);
    assert_string_equal(buf, "sb:u8@96:128+7[0x3, -2x5, 1x1]");
    z.ndims = 0;
    char tiny[6];
    assert_int_equal(isa_format_view(&z, tiny, sizeof tiny), strlen("sb:u8@96:128+7[]"));
    assert_string_equal(tiny, "sb:u8");
}

/* ---- assembler round trips ------------------------------------------------------------------- */

static isa_program_t *assemble_text(const char *text, const char *filename)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = filename;
    isa_diag_t d;
    isa_diag_init(&d, 0);
    isa_program_t *p = NULL;
    if (isa_assemble(text, strlen(text), &opt, &p, &d) != NCSIM_OK)
        fprintf(stderr, "assembly failed:\n%s\n--- text ---\n%s", d.text ? d.text : "", text);
    isa_diag_free(&d);
    assert_non_null(p);
    return p;
}

/*
 * text -> asm -> write -> read -> dis -> asm -> write: the same bytes, once the line numbers
 * (which text cannot carry, FORMAT.md 4) are dropped. Returns the disassembly.
 */
static char *asm_dis_asm(const char *text)
{
    isa_program_t *p = assemble_text(text, "prog.nca");
    uint8_t *b1, *b2, *b3;
    size_t n1, n2, n3;
    write_ok(p, &b1, &n1);
    isa_program_t *q = read_ok(b1, n1);
    char *dis = isa_disassemble(q);
    assert_non_null(dis);
    isa_program_t *r = assemble_text(dis, "prog.nca");
    set_lines_zero(p);
    set_lines_zero(r);
    write_ok(p, &b2, &n2);
    write_ok(r, &b3, &n3);
    if (n2 != n3 || memcmp(b2, b3, n2))
        fprintf(stderr, "round trip differs; disassembly:\n%s", dis ? dis : "");
    assert_int_equal(n2, n3);
    assert_memory_equal(b2, b3, n2);
    free(b1);
    free(b2);
    free(b3);
    isa_program_free(p);
    isa_program_free(q);
    isa_program_free(r);
    return dis;
}

static const char isa_example[] =
    "; C[128, 512] = A[128(K), 128(M)]^T . B[128(K), 512(N)], bf16 in, fp32 out\n"
    ".hbm a bf16 [128, 128] input\n"
    ".hbm b bf16 [128, 512] input\n"
    ".hbm c fp32 [128, 512] output\n"
    ".core 0\n"
    ".sbuf as bf16 [128, 128]\n"
    ".sbuf bs bf16 [128, 512]\n"
    ".psum acc fp32 [128, 512]\n"
    ".sbuf cs fp32 [128, 512]\n"
    ".sem loaded\n"
    ".sem mm\n"
    ".sem copied\n"
    ".engine sp\n"
    "    dma as, a, queue=0       | post loaded\n"
    "    dma bs, b, queue=1       | post loaded\n"
    "    dma c, cs, queue=2       | wait copied >= 1\n"
    ".engine pe\n"
    "    matmul acc, as, bs       | wait loaded >= 2 | post mm\n"
    ".engine act\n"
    "    activate cs, acc, copy   | wait mm >= 1 | post copied\n";

static void test_asm_dis_asm_isa_example(void **state)
{
    (void)state;
    char *dis = asm_dis_asm(isa_example);
    assert_non_null(strstr(dis, "    ldweights as | wait loaded >= 2\n"
                                "    matmul acc, bs | post mm\n"));
    assert_non_null(strstr(dis, "    dma c, cs, queue=2 | wait copied >= 1\n"));
    free(dis);
    /* with line numbers the binaries differ only in LINE: same up to that section */
    isa_program_t *p = assemble_text(isa_example, "prog.nca");
    char *text = isa_disassemble(p);
    isa_program_t *r = assemble_text(text, "prog.nca");
    uint8_t *b1, *b2;
    size_t n1, n2;
    write_ok(p, &b1, &n1);
    write_ok(r, &b2, &n2);
    ncx_file_t *f1 = split(b1, n1), *f2 = split(b2, n2);
    assert_int_equal(f1->n, 7);
    assert_int_equal(f2->n, 7);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(f1->s[i].len, f2->s[i].len);
        assert_memory_equal(f1->s[i].data, f2->s[i].data, f1->s[i].len);
    }
    assert_int_equal(f1->s[6].tag, NCX_TAG_LINE);
    free(f1);
    free(f2);
    free(b1);
    free(b2);
    free(text);
    isa_program_free(p);
    isa_program_free(r);
}

/* One named slice through the whole loop: `dma d, SLICE` with d sized to match. */
static void slice_case(const char *slice, uint64_t rows, uint64_t cols, const char *expect)
{
    char text[1024], line[256];
    snprintf(text, sizeof text,
             ".hbm r fp32 [1024, 256] input\n"
             ".hbm d fp32 [%llu, %llu] scratch @0x200000\n"
             ".core 0\n"
             ".sbuf x fp32 [128, 8, 256]\n"
             ".sbuf z fp32 [64, 4] @64\n"
             ".engine sp\n"
             "    dma d, %s\n",
             (unsigned long long)rows, (unsigned long long)cols, slice);
    char *dis = asm_dis_asm(text);
    snprintf(line, sizeof line, "    dma d, %s\n", expect);
    if (!strstr(dis, line))
        fprintf(stderr, "expected \"%s\" in:\n%s", line, dis ? dis : "");
    assert_non_null(strstr(dis, line));
    free(dis);
}

static void test_dis_named_slices(void **state)
{
    (void)state;
    slice_case("x", 128, 2048, "x");
    slice_case("x[:, :]", 128, 2048, "x");
    slice_case("x[0:64]", 64, 2048, "x[0:64]");
    slice_case("x[32]", 1, 2048, "x[32]");
    slice_case("x[:, 1]", 128, 256, "x[:, 1]");
    slice_case("x[:, 1, 5]", 128, 1, "x[:, 1, 5]");
    slice_case("x[:, :, 0:256:2]", 128, 1024, "x[:, :, ::2]");
    slice_case("x[:, 2:6, 10:20]", 128, 40, "x[:, 2:6, 10:20]");
    slice_case("x[:, ::-1]", 128, 2048, "x[:, ::-1]");
    slice_case("x[:, 6:1:-2, 3]", 128, 3, "x[:, 6:0:-2, 3]");
    slice_case("x[:, 3::-1]", 128, 1024, "x[:, 3::-1]");
    slice_case("x[:, 0:1]", 128, 256, "x[:, 0:1]");
    slice_case("x[:, 2:3:5]", 128, 256, "x[:, 2:3]"); /* one element: the step is moot */
    slice_case("sb:fp32@0:128+0[7x1, 1x4]", 128, 4, "sb:fp32@0:128+0[7x1, 1x4]");
    slice_case("x[64:128, 7, 255]", 64, 1, "x[64:128, 7, 255]");
    slice_case("x[32:64, 0:8:3]", 32, 768, "x[32:64, ::3]");
    slice_case("x[32:64, 1:8:3]", 32, 768, "x[32:64, 1:8:3]");
    slice_case("x[:, :, ::-3]", 128, 688, "x[:, :, ::-3]");
    slice_case("r[0:128]", 128, 256, "r[0:128]");
    slice_case("r[5]", 1, 256, "r[5]");
    slice_case("r[5, 7]", 1, 1, "r[5, 7]");
    slice_case("r[::2, 0:256:16]", 512, 16, "r[::2, ::16]");
    slice_case("r[1023:0:-1]", 1023, 256, "r[1023:0:-1]");
    slice_case("z[0, 3]", 1, 1, "z[0, 3]");
    slice_case("z", 64, 4, "z");
    /* no tensor denotes these: raw form */
    slice_case("sb:fp32@0:128+0[0x4]", 128, 4, "sb:fp32@0:128+0[0x4]");
    slice_case("sb:fp32@0:128+4[1x8, 8x4]", 128, 32, "sb:fp32@0:128+4[1x8, 8x4]");
    slice_case("sb:fp32@0:128+8196[1x4]", 128, 4, "sb:fp32@0:128+8196[1x4]");
    slice_case("hbm:fp32+0x1000[]", 1, 1, "r[4, 0]");
    slice_case("hbm:fp32+0x100002[1x1]", 1, 1, "hbm:fp32+0x100002[1x1]");
    slice_case("hbm:i32+0x1000[1x4]", 2, 2, "hbm:i32+0x1000[1x4]");
}

static void test_dis_immediates_and_names(void **state)
{
    (void)state;
    char *dis = asm_dis_asm(".let big = 123456789012345678\n"
                            ".core 0\n"
                            ".sbuf y fp32 [128, 4]\n"
                            ".sbuf inf fp32 [128, 1] +1024\n"
                            ".sbuf rev0 fp32 [128, 1] +2048\n"
                            ".sbuf w i32 [128, 2, 4] +4096\n"
                            ".engine dve\n"
                            "    memset y, 0.1\n"
                            "    memset y, 1\n"
                            "    memset y, -0.0\n"
                            "    memset y, 1e300\n"
                            "    memset y, 5e-324\n"
                            "    memset y, -inf\n"
                            "    memset y, nan\n"
                            "    memset y, -3\n"
                            "    memset y, big\n"
                            "    memset y, 0.30000000000000004\n"
                            "    tensor_scalar y, y, add, inf\n"
                            "    tensor_scalar y, y, add, (inf)\n"
                            "    tensor_scalar y, y, add, 1.5, multiply, rev0[:], rev1\n"
                            ".engine pool\n"
                            "    iota w, base=-9223372036854775807-1, pstep=-1, steps=[0x10, -4]\n"
                            "    affine_select y, y, base=3, steps=[], cmp=lt, fill=-1e30\n");
    static const char *const expect[] = {
        "    memset y, 0.1\n",
        "    memset y, 1.0\n",
        "    memset y, -0.0\n",
        "    memset y, 1e+300\n",
        "    memset y, 5e-324\n",
        "    memset y, -inf\n",
        "    memset y, nan\n",
        "    memset y, -3.0\n",
        "    memset y, 1.2345678901234568e+17\n",
        "    memset y, 0.30000000000000004\n",
        "    tensor_scalar y, y, add, inf\n",   /* the tensor `inf` */
        "    tensor_scalar y, y, add, (inf)\n", /* the number */
        "    tensor_scalar y, y, add, 1.5, multiply, rev0[:], rev1\n",
        "    iota w, base=(-9223372036854775807-1), pstep=-1, steps=[16, -4]\n",
        "    affine_select y, y, base=3, steps=[], cmp=lt, fill=-1e+30\n"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        if (!strstr(dis, expect[i]))
            fprintf(stderr, "expected \"%s\" in:\n%s", expect[i], dis ? dis : "");
        assert_non_null(strstr(dis, expect[i]));
    }
    free(dis);
}

static void test_dis_cores_sems_groups(void **state)
{
    (void)state;
    char *dis =
        asm_dis_asm(".arch inf2\n"
                    ".chips 2\n"
                    ".hbm src fp32 [256] input\n"
                    ".hbm dst fp32 [1024] output chip=1\n"
                    ".hbm s0 fp32 [1024] scratch\n"
                    ".hbm s1 fp32 [1024] scratch chip=1\n"
                    ".sbuf shared fp32 [128, 8]\n"
                    ".sem go = 3\n"
                    ".sem done\n"
                    ".group all = 0..3\n"
                    ".group back = 2, 0\n"
                    ".core 0, 2\n"
                    ".sem mine = -7\n"
                    ".sbuf loc fp32 [64, 2] @64\n"
                    ".engine sp\n"
                    "    nop | wait go == 3 | wait mine >= -7 | post done = 2 | post mine -= 1\n"
                    ".engine cc\n"
                    "    .if core == 0\n"
                    "    send src, to=2, tag=5\n"
                    "    all_reduce s0, s0, op=max, group=all\n"
                    "    .else\n"
                    "    recv dst[0:256], from=0, tag=5\n"
                    "    all_reduce s1, s1, op=max, group=all\n"
                    "    all_gather dst[0:512], s1[0:256], group=back\n"
                    "    .endif\n"
                    ".core 1\n"
                    ".sem other\n"
                    ".engine cc\n"
                    "    all_reduce s0, s0, op=add, group=all | post other += 5\n"
                    ".core 3\n"
                    ".engine cc\n"
                    "    all_reduce s1, s1, op=add, group=all\n");
    static const char *const expect[] = {
        ".arch inf2\n.chips 2\n",
        ".hbm dst fp32 [1024] output @0x",
        ".sbuf shared fp32 [128, 8] @0 +0\n.sem go = 3\n.sem done = 0\n"
        ".group all = 0, 1, 2, 3\n.group back = 2, 0\n\n.core 0\n.sbuf loc fp32 [64, 2] @64 +",
        "    nop | wait go == 3 | wait mine >= -7 | post done = 2 | post mine -= 1\n",
        ".core 1\n.sem other = 0\n.engine cc\n.loc ",
        "    all_reduce s0, s0, op=add, group=all | post other += 5\n",
        "    all_gather dst[0:512], s1[0:256], group=back\n"};
    for (size_t i = 0; i < sizeof expect / sizeof expect[0]; i++) {
        if (!strstr(dis, expect[i]))
            fprintf(stderr, "expected \"%s\" in:\n%s", expect[i], dis ? dis : "");
        assert_non_null(strstr(dis, expect[i]));
    }
    free(dis);
}

/* The in-memory kitchen sink goes through dis -> asm too. */
static void test_dis_kitchen_sink_reassembles(void **state)
{
    (void)state;
    isa_program_t *p = kitchen_sink();
    char *dis = isa_disassemble(p);
    assert_non_null(dis);
    isa_program_t *r = assemble_text(dis, "k.nca");
    set_lines_zero(r);
    r->source = ISA_NO_NAME;
    uint8_t *b1, *b2;
    size_t n1, n2;
    write_ok(p, &b1, &n1);
    write_ok(r, &b2, &n2);
    if (n1 != n2 || memcmp(b1, b2, n1)) {
        fprintf(stderr, "kitchen sink round trip differs; disassembly:\n%s", dis ? dis : "");
        ncx_file_t *x1 = split(b1, n1), *x2 = split(b2, n2);
        for (int i = 0; i < x1->n && i < x2->n; i++)
            fprintf(stderr, "  section %d: %zu and %zu bytes\n", i, x1->s[i].len, x2->s[i].len);
        free(x1);
        free(x2);
    }
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    assert_non_null(strstr(dis, "    dma y, sb:fp32@0:128+512[0x128], queue=15, accumulate"));
    assert_non_null(strstr(dis, "scale=0.1, bias=v, sumacc=v"));
    free(b1);
    free(b2);
    free(dis);
    isa_program_free(p);
    isa_program_free(r);
}

/* Invented names and the choice among aliasing tensors do not depend on declaration order:
 * a program prints the same before and after a write -> read (which makes the order canonical).
 * Both were found by fuzzing. */
static void test_dis_independent_of_order(void **state)
{
    (void)state;
    pb_t *pb = pb_new(1, NULL, NULL);
    uint32_t l1 = pb_local(pb, NULL, ISA_SPACE_SBUF, ISA_DT_FP32, 1, 0, 0, 2, (uint64_t[]){128, 4});
    uint32_t l0 = pb_local(pb, NULL, ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 0, 2, (uint64_t[]){128, 4});
    pb_local(pb, "alias", ISA_SPACE_SBUF, ISA_DT_FP32, 0, 0, 0, 2, (uint64_t[]){128, 4});
    uint32_t g =
        pb_local(pb, "glob", ISA_SPACE_SBUF, ISA_DT_FP32, -1, 0, 0, 2, (uint64_t[]){128, 4});
    pb_hbm(pb, NULL, ISA_DT_FP32, ISA_TK_SCRATCH, 0, 0, 2, (uint64_t[]){128, 4});
    pb_sem(pb, NULL, 1, 0, 0);
    pb_sem(pb, NULL, 0, 0, 0);
    pb_instr(pb, 0, ISA_ENGINE_DVE, ISA_OP_TENSOR_COPY, (isa_arg_t[]){A_t(pb, l0), A_t(pb, g)});
    pb_instr(pb, 1, ISA_ENGINE_DVE, ISA_OP_TENSOR_COPY, (isa_arg_t[]){A_t(pb, l1), A_t(pb, g)});
    isa_program_t *p = pb_finish(pb);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    isa_program_t *q = read_ok(b, n);
    char *t1 = isa_disassemble(p), *t2 = isa_disassemble(q);
    assert_string_equal(t1, t2);
    /* the global tensor wins over the core's own aliases; invented names count canonically */
    assert_non_null(strstr(t1, ".hbm t0 fp32 [128, 4] scratch @0x0 chip=0\n"));
    assert_non_null(strstr(t1, ".core 0\n.sbuf t2 fp32 [128, 4] @0 +0\n.sbuf alias"));
    assert_non_null(strstr(t1, ".core 1\n.sbuf t4 fp32 [128, 4] @0 +0\n.sem s1 = 0\n"));
    assert_non_null(strstr(t1, "    tensor_copy glob, glob\n"));
    free(t1);
    free(t2);
    free(b);
    isa_program_free(p);
    isa_program_free(q);
}


/* ---- format 1.1: shared tables ---------------------------------------------------------------- */

/* A 1.0 file written by the 1.0 writer (kept in tests/ncx_v1_0) still loads, and means what
 * its source means; 1.0 and 1.1 files of the same program load to the same program. */
static void test_v1_0_fixture_loads(void **state)
{
    (void)state;
    const char *src = getenv("NCSIM_SOURCE_DIR");
    char path[1024];
    snprintf(path, sizeof path, "%s/tests/ncx_v1_0/small.ncx", src ? src : ".");
    size_t n;
    uint8_t *b = (uint8_t *)tu_read_file(path, &n);
    assert_non_null(b);
    assert_int_equal(rd32(b + NCX_HDR_MAJOR) & 0xFFFFu, 1);
    assert_int_equal(rd32(b + NCX_HDR_MAJOR) >> 16, 0); /* minor 0: a genuine 1.0 file */
    isa_program_t *p = read_ok(b, n);
    snprintf(path, sizeof path, "%s/tests/ncx_v1_0/small.nca", src ? src : ".");
    size_t tn;
    char *text = tu_read_file(path, &tn);
    assert_non_null(text);
    /* (assembled under the name it was assembled from, which .source records) */
    isa_program_t *q = assemble_text(text, isa_string(p, p->source));
    char *d1 = isa_disassemble(p), *d2 = isa_disassemble(q);
    assert_string_equal(d1, d2);
    assert_int_equal(p->ninstrs, 9);
    /* 1.0 and 1.1 of the same program read back to the same 1.1 bytes */
    uint8_t *b0, *b1, *c0, *c1;
    size_t n0, n1, m0, m1;
    write_v10(q, &b0, &n0);
    write_ok(q, &b1, &n1);
    assert_true(n1 < n0);
    isa_program_t *r0 = read_ok(b0, n0), *r1 = read_ok(b1, n1);
    write_ok(r0, &c0, &m0);
    write_ok(r1, &c1, &m1);
    assert_int_equal(m0, n1);
    assert_memory_equal(c0, b1, n1);
    assert_int_equal(m1, n1);
    assert_memory_equal(c1, b1, n1);
    free(b0), free(b1), free(c0), free(c1), free(d1), free(d2), free(text), free(b);
    isa_program_free(p), isa_program_free(q), isa_program_free(r0), isa_program_free(r1);
}

/* Shared views and operand blocks are stored once and loaded once: 200 instructions of two
 * kinds cost 14 bytes each in the file (8 + one 6-byte post) and share two blocks of
 * operands in memory. */
static void test_v1_1_sharing(void **state)
{
    (void)state;
    char text[256 + 64 * 200];
    int at = snprintf(text, sizeof text, ".sbuf x fp32 [128, 4, 64]\n.sem s\n.engine dve\n");
    for (int i = 0; i < 200; i++)
        at += snprintf(text + at, sizeof text - (size_t)at, "tensor_copy x[:, %d, :], x[:, %d, :] | post s\n",
                       i % 2, 2 + i % 2);
    isa_program_t *p = assemble_text(text, "many.nca");
    set_lines_zero(p);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    ncx_file_t *f = split(b, n);
    assert_int_equal(rd32(find(f, NCX_TAG_VIEW)->data), 4);
    assert_int_equal(rd32(find(f, NCX_TAG_OPND)->data), 2);
    size_t code = find(f, NCX_TAG_CODE)->len;
    assert_int_equal(code, NCX_STRM_HEADER_SIZE + 2 * ISA_ENGINE_COUNT * NCX_STRM_DIR_SIZE +
                               200 * (NCX_CODE_HEADER_SIZE + NCX_CODE_CLAUSE_SIZE));
    isa_program_t *q = read_ok(b, n);
    assert_int_equal(q->ninstrs, 200);
    assert_int_equal(q->nviews, 4);
    assert_true(q->nargs <= 2 * ISA_MAX_SLOTS);
    assert_int_equal(q->instrs[0].args, q->instrs[2].args);
    assert_int_not_equal(q->instrs[0].args, q->instrs[1].args);
    free(f);
    free(b);
    isa_program_free(p);
    isa_program_free(q);
}

/* Damage to the 1.1 sections is named precisely. */
static void test_v1_1_damage(void **state)
{
    (void)state;
    isa_program_t *p = example_program(0);
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    ncx_file_t *f = split(b, n);
    ncx_file_t *g = calloc(1, sizeof *g);
    assert_non_null(g);
    sect_t *view = NULL, *opnd = NULL, *code = NULL;
#define AGAIN() (*g = *f, view = find(g, NCX_TAG_VIEW), opnd = find(g, NCX_TAG_OPND),          \
                 code = find(g, NCX_TAG_CODE))
    AGAIN();
    wr32(view->data, 1000);
    join_fails(g, "section VIEW: 1000 records cannot fit");
    AGAIN();
    wr32(view->data + 4, 1);
    join_fails(g, "section VIEW: reserved field is not zero");
    AGAIN();
    view->data[NCX_TABLE_HEADER_SIZE + NCX_VIEW_SPACE] = 9;
    join_fails(g, "section VIEW: operand view 0: memory space 9 is unknown");
    AGAIN();
    wr32(view->data, rd32(view->data) - 1);
    join_fails(g, "section VIEW: ");
    join_fails(g, "bytes left after its");
    AGAIN();
    wr16(opnd->data + NCX_TABLE_HEADER_SIZE + NCX_BLOCK_OPCODE, 999);
    join_fails(g, "section OPND: block 0: opcode 999 is unknown");
    AGAIN();
    opnd->data[NCX_TABLE_HEADER_SIZE + NCX_BLOCK_RESERVED] = 1;
    join_fails(g, "section OPND: block 0: ");
    join_fails(g, "reserved byte is set");
    AGAIN();
    /* the first block's first operand is a view: point it past the table */
    wr32(opnd->data + NCX_TABLE_HEADER_SIZE + NCX_BLOCK_HEADER_SIZE, 4000);
    join_fails(g, "view 4000 does not exist");
    size_t body = strm_body(find(f, NCX_TAG_CODE), 0);
    AGAIN();
    wr32(code->data + body + NCX_CODE_BLOCK, 99999);
    join_fails(g, "section CODE: instruction 0 of core 0 pe: ");
    join_fails(g, "operand block 99999 does not exist");
    AGAIN();
    code->data[body + NCX_CODE_RESERVED] = 1;
    join_fails(g, "reserved byte is set");
    AGAIN();
    wr16(code->data + body + NCX_CODE_OPCODE, 0x0150);
    join_fails(g, "reserved for sequencer");
    /* CODE without its tables, STRM and CODE together */
    AGAIN();
    view->tag = NCX_TAG('X', 'T', 'R', 'A'); /* VIEW becomes an unknown optional section */
    view->flags = 0;
    join_fails(g, "section CODE needs sections VIEW and OPND");
    free(g);
    free(f);
    free(b);
    isa_program_free(p);
#undef AGAIN
}

/* A 1.1 instruction's clauses are checked in one pass; a bad one is still named with its kind
 * and number, here the post after a good wait. The loader does not check clauses twice, so
 * these messages are the only ones. */
static void test_v1_1_bad_clause(void **state)
{
    (void)state;
    isa_program_t *p = assemble_text(".sbuf x fp32 [128, 4, 64]\n.sem s\n.sem t\n.engine dve\n"
                                     "tensor_copy x[:, 0, :], x[:, 1, :] | wait s >= 0 | post t\n",
                                     "clauses.nca");
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    ncx_file_t *f = split(b, n);
    ncx_file_t *g = calloc(1, sizeof *g);
    assert_non_null(g);
    size_t post = strm_body(find(f, NCX_TAG_CODE), ISA_ENGINE_DVE) + NCX_CODE_HEADER_SIZE +
                  NCX_CODE_CLAUSE_SIZE;
    *g = *f;
    find(g, NCX_TAG_CODE)->data[post + NCX_CLAUSE_SEM] = 9;
    join_fails(g, "post clause: semaphore 9 is not declared on core 0");
    *g = *f;
    find(g, NCX_TAG_CODE)->data[post + NCX_CLAUSE_SEM] = 64;
    join_fails(g, "post clause: semaphore index 64 is out of range (0..63)");
    *g = *f;
    find(g, NCX_TAG_CODE)->data[post + NCX_CLAUSE_OP] = ISA_WAIT_GE;
    join_fails(g, "post clause: operation 0 is not a post");
    *g = *f;
    find(g, NCX_TAG_CODE)->data[post - NCX_CODE_CLAUSE_SIZE + NCX_CLAUSE_OP] = ISA_POST_ADD;
    join_fails(g, "wait clause: operation 2 is not a wait");
    free(g);
    free(f);
    free(b);
    isa_program_free(p);
}

#if defined(__x86_64__)
#include <cpuid.h>
/* The state components in use (XGETBV with ECX = 1), or 0 where the processor cannot tell. */
static uint64_t xinuse(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(0xd, 1, &a, &b, &c, &d) || !(a & 4))
        return 0;
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return (uint64_t)hi << 32 | lo;
}
#endif

/* Reading a .ncx (whose checksum ISA-L computes, with AVX-512 code where the processor has
 * it) leaves the upper halves of the AVX registers clear (isa_avx_clean): set, they slowed
 * every SSE instruction after it, the whole simulation. Bit 2 is the upper halves of ymm0-15,
 * bit 6 those of zmm0-15. (On a processor without XINUSE there is nothing to see.) */
static void test_read_leaves_avx_clean(void **state)
{
    (void)state;
#if defined(__x86_64__)
    char text[64 + 48 * 4000];
    int at = snprintf(text, sizeof text, ".sbuf x fp32 [128, 4, 64]\n.engine dve\n");
    for (int i = 0; i < 4000; i++) /* a file of some size: the wide code paths */
        at += snprintf(text + at, sizeof text - (size_t)at,
                       "tensor_copy x[:, %d, :], x[:, %d, :]\n", i % 2, 2 + i % 2);
    isa_program_t *p = assemble_text(text, "avx.nca");
    uint8_t *b;
    size_t n;
    write_ok(p, &b, &n);
    isa_program_t *q = read_ok(b, n);
    uint64_t used = xinuse();
    assert_int_equal(used & ((1u << 2) | (1u << 6)), 0);
    free(b);
    isa_program_free(p);
    isa_program_free(q);
#endif
}

/* isa_check_program remembers which operand blocks passed on which core, engine and opcode;
 * an instruction that shares a block must still fail where its own core, clauses or opcode
 * make it wrong. */
static void check_fails(isa_program_t *p, const char *expect)
{
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_t d;
    isa_diag_init(&d, 0);
    ncsim_status_t st = isa_check_program(p, &g, "t.ncx", &d);
    if (st == NCSIM_OK || !d.text || !strstr(d.text, expect))
        fprintf(stderr, "expected '%s', got:\n%s", expect, d.text ? d.text : "(nothing)");
    assert_int_equal(st, NCSIM_FORMAT);
    assert_non_null(strstr(d.text, expect));
    isa_diag_free(&d);
}

static void test_check_shared_blocks(void **state)
{
    (void)state;
    const char *text = ".hbm x fp32 [8] scratch\n.hbm y fp32 [8] scratch\n"
                       ".sbuf s fp32 [8, 8]\n.sem g\n"
                       ".core 0\n.sem only0\n.engine cc\nsend x, to=1, tag=7 | post g\n"
                       ".engine act\n.loop i = 0, 3\nactivate s, s, exp | post only0\n.endloop\n"
                       ".core 1\n.engine cc\nrecv y, from=0, tag=7 | wait g >= 0\n"
                       ".engine act\n.loop i = 0, 3\nactivate s, s, exp\n.endloop\n";
    isa_program_t *p = tu_assemble(text, "shared.nca");
    assert_non_null(p);
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_t d;
    isa_diag_init(&d, 0);
    assert_int_equal(isa_check_program(p, &g, "t.ncx", &d), NCSIM_OK);
    isa_diag_free(&d);
    const isa_stream_t *a0 = isa_stream(p, 0, ISA_ENGINE_ACT),
                       *a1 = isa_stream(p, 1, ISA_ENGINE_ACT),
                       *c0 = isa_stream(p, 0, ISA_ENGINE_CC), *c1 = isa_stream(p, 1, ISA_ENGINE_CC);
    assert_int_equal(a0->count, 3);
    assert_int_equal(a1->count, 3);
    /* the six activates share one block, checked once */
    assert_int_equal(p->instrs[a0->first].args, p->instrs[a1->first + 2].args);
    /* core 1 posts a semaphore only core 0 declares, through a block that passed there */
    isa_instr_t *last = &p->instrs[a1->first + 2];
    isa_instr_t saved = *last;
    last->npost = 1;
    last->post[0] = p->instrs[a0->first].post[0];
    check_fails(p, "is not declared on core 1");
    /* a bad post operation on a block that passed */
    *last = p->instrs[a0->first + 1];
    last->post[0].op = ISA_WAIT_GE;
    check_fails(p, "bad post operation");
    *last = saved;
    /* core 1 sends to itself through core 0's block (send x, to=1): legal only on core 0 */
    isa_instr_t recv = p->instrs[c1->first];
    p->instrs[c1->first] = p->instrs[c0->first];
    p->instrs[c1->first].npost = 0;
    check_fails(p, "core 1 cannot send to itself");
    p->instrs[c1->first] = recv;
    /* the same block under another opcode: what passed for activate says nothing of it */
    p->instrs[a1->first + 1].op = ISA_OP_MATMUL;
    check_fails(p, "'matmul' is not legal on engine act");
    isa_program_free(p);
}

static char mapped_path[256];
static int mapped_calls, mapped_open_errno;
static long long mapped_size;

/* Whether this file system grants read leases (the mapped load needs one). */
static int leases_work(const char *path)
{
    int fd = open(path, O_RDONLY);
    int ok = fd >= 0 && fcntl(fd, F_SETLEASE, F_RDLCK) == 0;
    if (ok)
        (void)fcntl(fd, F_SETLEASE, F_UNLCK);
    if (fd >= 0)
        close(fd);
    return ok;
}

/* sim_load_mapped_hook: what `cp` over the file would do while it is being decoded */
static void try_to_truncate(const char *path)
{
    mapped_calls++;
    assert_string_equal(path, mapped_path);
    int fd = open(path, O_WRONLY | O_TRUNC | O_NONBLOCK);
    mapped_open_errno = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    struct stat st;
    mapped_size = stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

/* A .ncx of SIM_MAP_MIN_BYTES or more is mapped, not read: it loads to the same program, and
 * a damaged one fails with the reader's message (and the text path still reads .nca). */
static void test_large_file_mapped(void **state)
{
    (void)state;
    char text[1024];
    snprintf(text, sizeof text,
             ".hbm x fp32 [128, 64] scratch\n.core 0\n.sbuf s fp32 [128, 64]\n.sem a\n"
             ".engine act\n.loop i = 0, 60000\nactivate s[:, i %% 64 : i %% 64 + 1], s[:, 0:1], "
             "exp, scale=i | post a\n.endloop\n");
    isa_program_t *p = tu_assemble(text, "big.nca");
    assert_non_null(p);
    uint8_t *bytes;
    size_t len;
    assert_int_equal(isa_ncx_write(p, &bytes, &len), NCSIM_OK);
    assert_true(len >= SIM_MAP_MIN_BYTES);
    char path[256];
    snprintf(path, sizeof path, "%s/ncsim-test-big-%d.ncx", tu_tmpdir(), (int)getpid());
    assert_int_equal(sim_write_file(path, bytes, len), 0);
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_t d;
    isa_diag_init(&d, 5);
    isa_program_t *q = NULL;
    assert_int_equal(sim_load_program(path, &g, NULL, NULL, &q, &d), NCSIM_OK);
    uint8_t *again;
    size_t len2;
    assert_int_equal(isa_ncx_write(q, &again, &len2), NCSIM_OK);
    assert_int_equal(len2, len);
    assert_memory_equal(again, bytes, len);
    free(again);
    isa_program_free(q);
    isa_diag_free(&d);
    /* while it is mapped, a writer cannot cut it short under the decoder (which would fault):
     * the read lease makes it wait (here, with O_NONBLOCK, fail at once) */
    snprintf(mapped_path, sizeof mapped_path, "%s", path);
    mapped_calls = 0;
    sim_load_mapped_hook = try_to_truncate;
    isa_diag_init(&d, 5);
    q = NULL;
    assert_int_equal(sim_load_program(path, &g, NULL, NULL, &q, &d), NCSIM_OK);
    sim_load_mapped_hook = NULL;
    if (leases_work(path)) {
        assert_int_equal(mapped_calls, 1);
        assert_int_equal(mapped_open_errno, EWOULDBLOCK);
        assert_int_equal(mapped_size, (long long)len);
    } else {
        /* a file system without leases (some container overlays): read, never mapped */
        fprintf(stderr, "note: no file leases on %s: the mapped path is not exercised\n", path);
        assert_int_equal(mapped_calls, 0);
    }
    assert_non_null(q);
    isa_program_free(q);
    isa_diag_free(&d);
    int w = open(path, O_WRONLY | O_NONBLOCK); /* released after the load */
    assert_true(w >= 0);
    /* a file some process has open for writing gets no lease: it is read, not mapped */
    sim_load_mapped_hook = try_to_truncate;
    mapped_calls = 0;
    isa_diag_init(&d, 5);
    q = NULL;
    assert_int_equal(sim_load_program(path, &g, NULL, NULL, &q, &d), NCSIM_OK);
    sim_load_mapped_hook = NULL;
    assert_int_equal(mapped_calls, 0);
    assert_non_null(q);
    isa_program_free(q);
    isa_diag_free(&d);
    close(w);
    /* cut in the middle of its streams */
    assert_int_equal(sim_write_file(path, bytes, len - 1000), 0);
    isa_diag_init(&d, 5);
    q = NULL;
    assert_int_equal(sim_load_program(path, &g, NULL, NULL, &q, &d), NCSIM_FORMAT);
    assert_null(q);
    assert_non_null(d.text);
    assert_non_null(strstr(d.text, path));
    isa_diag_free(&d);
    unlink(path);
    free(bytes);
    isa_program_free(p);
}

/* The assembler and the loader record the largest line + 1 (sim_create uses it instead of a
 * pass over every instruction); it must be exactly what such a pass finds. */
static void test_line_end(void **state)
{
    (void)state;
    /* the last line is replayed (a loop body): both ways of emitting record it */
    isa_program_t *p = tu_assemble(".hbm x fp32 [128, 64] scratch\n.core 0\n"
                                   ".sbuf s fp32 [128, 64]\n.engine sp\ndma x, s\n"
                                   ".engine act\n.loop i = 0, 4\nactivate s, s, exp\n.endloop\n"
                                   "; a comment line after the last instruction\n\n",
                                   "lines.nca");
    assert_non_null(p);
    uint32_t max = 0;
    for (uint32_t i = 0; i < p->ninstrs; i++)
        max = p->instrs[i].line > max ? p->instrs[i].line : max;
    assert_int_equal(max, 8);
    assert_int_equal(p->line_end, max + 1);
    uint8_t *bytes;
    size_t len;
    assert_int_equal(isa_ncx_write(p, &bytes, &len), NCSIM_OK);
    isa_program_t *q = NULL;
    assert_int_equal(isa_ncx_read(bytes, len, NULL, "lines.ncx", &q, NULL), NCSIM_OK);
    assert_int_equal(q->line_end, max + 1);
    free(bytes);
    isa_program_free(q);
    isa_program_free(p);
    /* nothing emitted: not known */
    p = tu_assemble(".hbm x fp32 [4] scratch\n", "empty.nca");
    assert_non_null(p);
    assert_int_equal(p->ninstrs, 0);
    assert_int_equal(p->line_end, 0);
    isa_program_free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_write_read_write),
        cmocka_unit_test(test_deterministic_and_canonical),
        cmocka_unit_test(test_every_kind_round_trips),
        cmocka_unit_test(test_stripped_names),
        cmocka_unit_test(test_writer_refuses_malformed),
        cmocka_unit_test(test_header_damage),
        cmocka_unit_test(test_truncated_everywhere),
        cmocka_unit_test(test_every_byte_mutated),
        cmocka_unit_test(test_sections),
        cmocka_unit_test(test_meta_strs_decl),
        cmocka_unit_test(test_groups_and_names),
        cmocka_unit_test(test_instruction_damage),
        cmocka_unit_test(test_noncanonical_nan_rejected),
        cmocka_unit_test(test_dis_example_text),
        cmocka_unit_test(test_format_view_raw),
        cmocka_unit_test(test_asm_dis_asm_isa_example),
        cmocka_unit_test(test_dis_named_slices),
        cmocka_unit_test(test_dis_immediates_and_names),
        cmocka_unit_test(test_dis_cores_sems_groups),
        cmocka_unit_test(test_dis_kitchen_sink_reassembles),
        cmocka_unit_test(test_dis_independent_of_order),
        cmocka_unit_test(test_v1_0_fixture_loads),
        cmocka_unit_test(test_v1_1_sharing),
        cmocka_unit_test(test_v1_1_damage),
        cmocka_unit_test(test_v1_1_bad_clause),
        cmocka_unit_test(test_read_leaves_avx_clean),
        cmocka_unit_test(test_check_shared_blocks),
        cmocka_unit_test(test_large_file_mapped),
        cmocka_unit_test(test_line_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
