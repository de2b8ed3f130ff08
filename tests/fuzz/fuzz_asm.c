/*
 * fuzz_asm.c -- libFuzzer target for the NCA assembler (isa/lex.c, isa/asm.c, isa/check.c).
 *
 * The input bytes are assembled as text. Whatever the bytes, the assembler must return
 * NCSIM_OK with a program or NCSIM_ASSEMBLY with at least one diagnostic, never crash, hang
 * or leak; a program it accepts must also pass the loader's whole-program checks
 * (isa_check_program), since a program the assembler emits is one the simulator will load.
 * Violations abort so that libFuzzer records the input.
 *
 * Build: tests/CMakeLists.txt (-DNCSIM_FUZZ=ON with clang for libFuzzer, otherwise a corpus
 * replayer with tests/fuzz/replay_main.c). Seeds: tests/fuzz/corpus/fuzz_asm/; dictionary of
 * NCA words: tests/fuzz/fuzz_asm.dict.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "asm.h"
#include "check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    isa_asm_options_t opt;
    isa_asm_options_default(&opt);
    opt.filename = "fuzz.nca";
    /* bound the work per input: a short text can legally expand to millions of
     * instructions, which under full instrumentation takes minutes */
    opt.max_instructions = 1u << 16;
    opt.max_steps = 1u << 18;
    isa_diag_t diag;
    isa_diag_init(&diag, 0);
    isa_program_t *prog = NULL;
    ncsim_status_t st = isa_assemble((const char *)data, size, &opt, &prog, &diag);
    if (st == NCSIM_OK) {
        if (!prog || diag.errors) {
            fprintf(stderr, "fuzz_asm: success without a program, or with errors:\n%s",
                    diag.text ? diag.text : "");
            abort();
        }
        isa_diag_t check;
        isa_diag_init(&check, 0);
        if (isa_check_program(prog, &opt.geometry, opt.filename, &check) != NCSIM_OK) {
            fprintf(stderr, "fuzz_asm: the assembler emitted a program the checker rejects:\n%s",
                    check.text ? check.text : "");
            abort();
        }
        isa_diag_free(&check);
    } else if (st == NCSIM_ASSEMBLY) {
        if (prog || !diag.errors || !diag.text) {
            fprintf(stderr, "fuzz_asm: assembly error without a diagnostic\n");
            abort();
        }
    } else if (st != NCSIM_NOMEM) {
        fprintf(stderr, "fuzz_asm: unexpected status %d\n", (int)st);
        abort();
    }
    isa_program_free(prog);
    isa_diag_free(&diag);
    return 0;
}
