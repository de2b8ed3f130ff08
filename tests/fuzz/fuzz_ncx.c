/*
 * fuzz_ncx.c -- libFuzzer target for the .ncx loader (isa/ncx.c) and the disassembler.
 *
 * Whatever bytes come in, the loader must either reject them with a message or produce a
 * program that is safe to use. A loaded program must also be stable and printable:
 *   - written, read back and written again it gives the same bytes (and the same text);
 *   - its disassembly assembles back to the same binary (FORMAT.md 4: line numbers, the
 *     source name and the names the disassembler invents for unnamed declarations aside);
 *   - the one-line formatter respects its buffer.
 * Violations abort, the fuzzer's way of reporting; crashes and sanitizer reports are found by
 * the build. Build: cmake -DCMAKE_C_COMPILER=clang -DNCSIM_FUZZ=ON; run: fuzz_ncx CORPUS_DIR.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "asm.h"
#include "dis.h"
#include "encoding.h"
#include "ncx.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(int ok, const char *what)
{
    if (!ok) {
        fprintf(stderr, "fuzz_ncx: %s\n", what);
        abort();
    }
}

/* Bitwise CRC-32 (zlib polynomial), independent of the loader's. */
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

/* Bytes of a program with what text cannot carry set aside; `like` gives the unnamed ones. */
static uint8_t *comparable(isa_program_t *p, const isa_program_t *like, size_t *n)
{
    for (uint32_t i = 0; i < p->ninstrs; i++)
        p->instrs[i].line = 0;
    p->source = ISA_NO_NAME;
    for (uint32_t i = 0; i < p->ntensors; i++)
        if (like->tensors[i].name == ISA_NO_NAME)
            p->tensors[i].name = ISA_NO_NAME;
    for (uint32_t i = 0; i < p->nsems; i++)
        if (like->sems[i].name == ISA_NO_NAME)
            p->sems[i].name = ISA_NO_NAME;
    for (uint32_t i = 0; i < p->ngroups; i++)
        if (like->groups[i].name == ISA_NO_NAME)
            p->groups[i].name = ISA_NO_NAME;
    uint8_t *b = NULL;
    check(isa_ncx_write(p, &b, n) == NCSIM_OK, "a loaded program does not write");
    return b;
}

/* dis -> asm gives the program back. q was read from canonical bytes, so its declarations are
 * in the order the disassembler prints them (and the assembler allocates them). */
static void reassemble(isa_program_t *q, const char *text)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    isa_diag_t d;
    isa_diag_init(&d, 8);
    isa_program_t *r = NULL;
    if (isa_assemble(text, strlen(text), &opt, &r, &d) != NCSIM_OK) {
        fprintf(stderr, "%s--- text ---\n%s", d.text ? d.text : "", text);
        check(0, "the disassembly does not assemble");
    }
    check(r->ntensors == q->ntensors && r->nsems == q->nsems && r->ngroups == q->ngroups,
          "reassembly declares different things");
    size_t n1, n2;
    uint8_t *b2 = comparable(r, q, &n2), *b1 = comparable(q, q, &n1);
    if (n1 != n2 || memcmp(b1, b2, n1) != 0) {
        fprintf(stderr, "--- text ---\n%s", text);
        check(0, "the disassembly assembles to a different binary");
    }
    free(b1);
    free(b2);
    isa_program_free(r);
    isa_diag_free(&d);
}

static void load_one(const uint8_t *data, size_t size)
{
    isa_geometry_t g;
    isa_geometry_default(&g);
    isa_diag_t d;
    isa_diag_init(&d, 8);
    isa_program_t *p = NULL;
    ncsim_status_t st = isa_ncx_read(data, size, &g, "fuzz.ncx", &p, &d);
    if (st != NCSIM_OK) {
        check(!p && d.text && d.errors > 0, "a rejection without a message, or with a program");
        isa_diag_free(&d);
        return;
    }
    uint8_t *b1 = NULL, *b2 = NULL;
    size_t n1 = 0, n2 = 0;
    check(isa_ncx_write(p, &b1, &n1) == NCSIM_OK, "a loaded program does not write");
    isa_diag_t d2;
    isa_diag_init(&d2, 8);
    isa_program_t *q = NULL;
    check(isa_ncx_read(b1, n1, &g, "again.ncx", &q, &d2) == NCSIM_OK, "written bytes do not load");
    check(isa_ncx_write(q, &b2, &n2) == NCSIM_OK && n1 == n2 && memcmp(b1, b2, n1) == 0,
          "write -> read -> write changed the bytes");
    char *t1 = isa_disassemble(p), *t2 = isa_disassemble(q);
    check(t1 && t2 && strcmp(t1, t2) == 0, "the program and its reloaded copy print differently");
    for (uint32_t core = 0; core < p->ncores; core++)
        for (int e = 0; e < ISA_ENGINE_COUNT; e++) {
            const isa_stream_t *s = isa_stream(p, core, (isa_engine_t)e);
            for (uint32_t i = 0; i < s->count; i++) {
                char small[24];
                size_t need =
                    isa_format_instr(p, core, &p->instrs[s->first + i], small, sizeof small);
                check(strlen(small) == (need < sizeof small ? need : sizeof small - 1),
                      "isa_format_instr overran or misreported");
            }
        }
    reassemble(q, t2);
    free(t1);
    free(t2);
    free(b1);
    free(b2);
    isa_program_free(q);
    isa_program_free(p);
    isa_diag_free(&d2);
    isa_diag_free(&d);
}

/*
 * Each input is loaded as it is, then (when it has a header) once more with the file length
 * and CRC fields repaired: random damage almost never keeps the CRC right, and without the
 * repair the decoders behind it would hardly be reached.
 */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    load_one(data, size);
    if (size < NCX_HEADER_SIZE)
        return 0;
    uint8_t *fixed = malloc(size);
    if (!fixed)
        return 0;
    memcpy(fixed, data, size);
    for (int i = 0; i < 8; i++)
        fixed[NCX_HDR_LENGTH + i] = (uint8_t)((uint64_t)size >> (8 * i));
    uint32_t crc = crc32_bitwise(fixed + NCX_HEADER_SIZE, size - NCX_HEADER_SIZE);
    for (int i = 0; i < 4; i++)
        fixed[NCX_HDR_CRC + i] = (uint8_t)(crc >> (8 * i));
    if (memcmp(fixed, data, size) != 0)
        load_one(fixed, size);
    free(fixed);
    return 0;
}
