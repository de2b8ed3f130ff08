/*
 * fuzz_stats.c -- libFuzzer target for statistics files as `ncsim report` and `ncsim diff`
 * read them (cli_report_load in cli/cmd_report.c, compiled in here): a statistics file from
 * elsewhere is data. Any bytes are refused with a message, or give a report that prints, as
 * text, JSON and by line, with no control character in the names it shows, and without
 * opening the program path it records (only a file beside it, which here does not exist).
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"

/* the command's own source: the loader lives in the executable, not in a library */
#include "../../cli/cmd_report.c"
/* its output file (`report -o`) and its option table */
#include "../../cli/outputs.c"
#include "../../cli/options.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* cli/main.c's, which the executable has and this target does not */
int cli_exit(ncsim_status_t st)
{
    return ncsim_status_exit_code(st);
}

static void check_printable(const char *s, const char *what)
{
    for (; *s; s++)
        fz_check((unsigned char)*s >= 0x20 && *s != 0x7f, "fuzz_stats", what);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_write("s.json", data, size);
    if (!path)
        return 0;
    trc_report_t rep;
    char err[1024] = "";
    ncsim_status_t st = cli_report_load(path, &rep, err, sizeof err);
    if (st != NCSIM_OK) {
        fz_check(err[0] != 0, "fuzz_stats", "a refusal without a message");
        return 0;
    }
    check_printable(rep.program, "a control character in the program name");
    check_printable(rep.arch, "a control character in the architecture name");
    check_printable(rep.failed, "a control character in the failure message");
    char why[1024];
    (void)trc_report_line_texts(&rep, NULL, why, sizeof why);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        trc_report_print(null, &rep);
        trc_report_print_lines(null, &rep, 0);
        trc_report_print_lines_csv(null, &rep);
        fclose(null);
    }
    free(trc_report_json(&rep));
    free(trc_report_lines_json(&rep));
    trc_report_free(&rep);
    return 0;
}
