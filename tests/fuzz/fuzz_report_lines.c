/*
 * fuzz_report_lines.c -- libFuzzer target for the source text of `ncsim report --by-line`
 * (trc_report_line_texts, traces/report.c): the program name a trace records is data, and
 * so is the file found beside the trace under it (its `.source` directive included).
 *
 * Input: the recorded program name up to the first newline, then a line of profiled line
 * numbers (decimal, separated by spaces), then the text written beside the trace under the
 * recorded name's last component. Whatever the bytes: no crash, no read outside the scratch
 * directory, and every text shown is at most one line without control characters.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint8_t *next_line(const uint8_t *p, const uint8_t *end, char *out, size_t cap)
{
    size_t n = 0;
    while (p < end && *p != '\n') {
        if (n + 1 < cap && *p)
            out[n++] = (char)*p;
        p++;
    }
    out[n] = '\0';
    return p < end ? p + 1 : p;
}

static void check_texts(const trc_report_t *rep)
{
    for (size_t i = 0; i < rep->nlines; i++) {
        const char *t = rep->lines[i].text;
        fz_check(memchr(t, '\0', sizeof rep->lines[i].text) != NULL, "fuzz_report_lines",
                 "a text without its terminator");
        for (; *t; t++)
            fz_check((unsigned char)*t >= 0x20 && *t != 0x7f, "fuzz_report_lines",
                     "a control character in a source text");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    char program[512], numbers[512];
    p = next_line(p, end, program, sizeof program);
    p = next_line(p, end, numbers, sizeof numbers);
    trc_report_t rep;
    memset(&rep, 0, sizeof rep);
    snprintf(rep.program, sizeof rep.program, "%s", program);
    snprintf(rep.source, sizeof rep.source, "%s", fz_path("t.json"));
    char *s = numbers;
    for (int k = 0; k < 64 && *s; k++) {
        char *e;
        unsigned long v = strtoul(s, &e, 10);
        if (e == s)
            break;
        if (!trc_report_line(&rep, (uint32_t)v))
            break;
        s = e;
    }
    /* the text beside the trace, under the recorded name's last component when it has a
     * usable one (a name with a '/' at its end, "." or "..", gets none) */
    const char *slash = strrchr(program, '/');
    const char *base = slash ? slash + 1 : program;
    const char *beside = NULL;
    if (*base && strcmp(base, ".") && strcmp(base, ".."))
        beside = fz_write(base, p, (size_t)(end - p));
    char why[1024];
    int rc = trc_report_line_texts(&rep, NULL, why, sizeof why);
    fz_check(rc == 0 || rc == 1, "fuzz_report_lines", "an unexpected result without --source");
    fz_check(rc == 0 || why[0], "fuzz_report_lines", "no text and no reason");
    check_texts(&rep);
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        trc_report_print_lines(null, &rep, 0);
        trc_report_print_lines_csv(null, &rep);
        fclose(null);
    }
    char *j = trc_report_lines_json(&rep);
    free(j);
    /* the same bytes named with --source */
    const char *src = fz_write("named.txt", p, (size_t)(end - p));
    if (src) {
        rc = trc_report_line_texts(&rep, src, why, sizeof why);
        fz_check(rc == 0, "fuzz_report_lines", "--source of a regular file refused");
        check_texts(&rep);
    }
    if (beside)
        unlink(beside);
    trc_report_free(&rep);
    return 0;
}
