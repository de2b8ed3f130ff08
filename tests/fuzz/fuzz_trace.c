/*
 * fuzz_trace.c -- libFuzzer target for the trace readers (traces/json_reader.c and
 * pftrace_reader.c, through trc_report_from_trace, which `ncsim report` and the viewer use):
 * any bytes are refused with a message or summarised. The format is chosen by content, so
 * one target covers both; fuzz_pftrace.c makes every input look like a Perfetto trace.
 */
#include <stdint.h>
#include <string.h>

#include "fuzz_util.h"
#include "report.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#ifndef FUZZ_TRACE_PREFIX
#define FUZZ_TRACE_PREFIX 0
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path;
    if (FUZZ_TRACE_PREFIX && (size == 0 || data[0] != FUZZ_TRACE_PREFIX)) {
        uint8_t *b = malloc(size + 1);
        if (!b)
            return 0;
        b[0] = FUZZ_TRACE_PREFIX;
        memcpy(b + 1, data, size);
        path = fz_write("t.pftrace", b, size + 1);
        free(b);
    } else {
        path = fz_write("t.trace", data, size);
    }
    if (!path)
        return 0;
    trc_report_t rep;
    char err[1024] = "";
    ncsim_status_t st = trc_report_from_trace(path, &rep, err, sizeof err);
    if (st != NCSIM_OK) {
        fz_check(err[0] != 0, "fuzz_trace", "a refusal without a message");
        return 0;
    }
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        trc_report_print(null, &rep);
        fclose(null);
    }
    char *j = trc_report_json(&rep);
    free(j);
    trc_report_free(&rep);
    return 0;
}
