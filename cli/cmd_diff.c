/*
 * cmd_diff.c -- `ncsim diff A B`: how run B differs from run A (docs/explain.md).
 *
 * A and B are statistics files or traces, in any combination (each is read like `ncsim
 * report` reads it). The diff shows the total time, the verdicts, per-engine and per-line
 * deltas of busy and stall time, and the critical paths side by side (traces); --json for
 * machines, --fail-if-slower PCT for CI: exit 1 when B is slower than A by more than PCT %.
 */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "options.h"
#include "outputs.h"
#include "report.h"

static double ns(uint64_t ps)
{
    return (double)ps / 1000.0;
}

static double dns(uint64_t b, uint64_t a)
{
    return ((double)b - (double)a) / 1000.0;
}

static double pct_change(uint64_t a, uint64_t b)
{
    return a ? 100.0 * ((double)b - (double)a) / (double)a : 0.0;
}

static uint64_t engine_stall(const trc_report_engine_t *e)
{
    return e ? e->stall_ps : 0;
}

static const trc_report_engine_t *find_engine(const trc_report_t *r, uint32_t core,
                                              const char *name)
{
    for (size_t i = 0; i < r->nengines; i++)
        if (r->engines[i].core == core && strcmp(r->engines[i].name, name) == 0)
            return &r->engines[i];
    return NULL;
}

static uint64_t track_time(const trc_report_t *r, uint32_t core, const char *track)
{
    for (size_t i = 0; i < r->npath_tracks; i++)
        if (r->path_tracks[i].core == core && strcmp(r->path_tracks[i].track, track) == 0)
            return r->path_tracks[i].ps;
    return 0;
}

/* The engines of A and B, A's order first, then B's new ones. */
typedef struct eng_pair {
    uint32_t core;
    const char *name;
    const trc_report_engine_t *a, *b;
} eng_pair_t;

static size_t engine_pairs(const trc_report_t *A, const trc_report_t *B, eng_pair_t **out)
{
    eng_pair_t *p = calloc(A->nengines + B->nengines + 1, sizeof *p);
    size_t n = 0;
    if (!p)
        return 0;
    for (size_t i = 0; i < A->nengines; i++) {
        p[n].core = A->engines[i].core;
        p[n].name = A->engines[i].name;
        p[n].a = &A->engines[i];
        p[n].b = find_engine(B, p[n].core, p[n].name);
        n++;
    }
    for (size_t i = 0; i < B->nengines; i++)
        if (!find_engine(A, B->engines[i].core, B->engines[i].name)) {
            p[n].core = B->engines[i].core;
            p[n].name = B->engines[i].name;
            p[n].b = &B->engines[i];
            n++;
        }
    *out = p;
    return n;
}

/* The lines of A and B with the change of their cost, largest |change| first. */
typedef struct line_pair {
    uint32_t line;
    const trc_report_line_t *a, *b;
    double delta; /* ns of cost */
} line_pair_t;

static int cmp_line_pair(const void *x, const void *y)
{
    const line_pair_t *p = x, *q = y;
    double a = fabs(p->delta), b = fabs(q->delta);
    if (a != b)
        return a > b ? -1 : 1;
    return p->line < q->line ? -1 : p->line > q->line;
}

static uint64_t cost_of(const trc_report_line_t *l)
{
    return l ? trc_report_line_cost(l) : 0;
}

static size_t line_pairs(const trc_report_t *A, const trc_report_t *B, line_pair_t **out)
{
    line_pair_t *p = calloc(A->nlines + B->nlines + 1, sizeof *p);
    size_t n = 0;
    if (!p)
        return 0;
    for (size_t i = 0; i < A->nlines; i++) {
        p[n].line = A->lines[i].line;
        p[n].a = &A->lines[i];
        p[n].b = trc_report_line_find(B, p[n].line);
        n++;
    }
    for (size_t i = 0; i < B->nlines; i++)
        if (!trc_report_line_find(A, B->lines[i].line)) {
            p[n].line = B->lines[i].line;
            p[n].b = &B->lines[i];
            n++;
        }
    for (size_t i = 0; i < n; i++)
        p[i].delta = dns(cost_of(p[i].b), cost_of(p[i].a));
    qsort(p, n, sizeof *p, cmp_line_pair);
    *out = p;
    return n;
}

static const char *kind_of(const trc_report_t *r)
{
    return r->from_trace ? "trace" : "statistics file";
}

static void print_text(FILE *out, const trc_report_t *A, const trc_report_t *B, size_t top)
{
    fprintf(out, "ncsim diff: A = %s (%s), B = %s (%s)\n", A->source, kind_of(A), B->source,
            kind_of(B));
    double d = dns(B->total_ps, A->total_ps);
    fprintf(out, "total time: A %.3f ns, B %.3f ns, delta %+.3f ns (%+.2f %%)%s\n",
            ns(A->total_ps), ns(B->total_ps), d, pct_change(A->total_ps, B->total_ps),
            d > 0 ? ": B is slower" : d < 0 ? ": B is faster" : ": the same");
    char v[600];
    trc_report_verdict(A, v, sizeof v);
    fprintf(out, "verdict A: %s\n", v[0] ? v : "-");
    trc_report_verdict(B, v, sizeof v);
    fprintf(out, "verdict B: %s\n", v[0] ? v : "-");

    eng_pair_t *ep = NULL;
    size_t ne = engine_pairs(A, B, &ep);
    fprintf(out, "\nengines (delta = B - A)\n");
    fprintf(out, "  core  engine     busy A (ns)     busy B (ns)    delta (ns)     stall A (ns)    "
                 "stall B (ns)    delta (ns)\n");
    for (size_t i = 0; i < ne; i++) {
        uint64_t ba = ep[i].a ? ep[i].a->busy_ps : 0, bb = ep[i].b ? ep[i].b->busy_ps : 0;
        uint64_t sa = engine_stall(ep[i].a), sb = engine_stall(ep[i].b);
        fprintf(out, "  %4u  %-6s  %14.3f  %14.3f  %+12.3f  %15.3f  %14.3f  %+12.3f\n",
                ep[i].core, ep[i].name, ns(ba), ns(bb), dns(bb, ba), ns(sa), ns(sb), dns(sb, sa));
    }
    free(ep);

    line_pair_t *lp = NULL;
    size_t nl = line_pairs(A, B, &lp);
    fprintf(out, "\nlines (largest change of cost = busy + DMA data time first)\n");
    if (!nl)
        fprintf(out, "  no per-line figures in these files\n");
    else
        fprintf(out, "   line     cost A (ns)     cost B (ns)    delta (ns)    busy delta (ns)   "
                     "stall delta (ns)     DMA delta (ns)  source\n");
    for (size_t i = 0; i < nl && (!top || i < top); i++) {
        const trc_report_line_t *a = lp[i].a, *b = lp[i].b;
        uint64_t ba = a ? a->busy_ps : 0, bb = b ? b->busy_ps : 0;
        uint64_t sa = a ? trc_report_line_stall(a) : 0, sb = b ? trc_report_line_stall(b) : 0;
        uint64_t da = a ? a->dma_ps : 0, db = b ? b->dma_ps : 0;
        const char *text = b && b->text[0] ? b->text : a ? a->text : "";
        fprintf(out, "  %5u  %14.3f  %14.3f  %+12.3f  %17.3f  %17.3f  %17.3f  %s\n", lp[i].line,
                ns(cost_of(a)), ns(cost_of(b)), lp[i].delta, dns(bb, ba), dns(sb, sa),
                dns(db, da), text);
    }
    if (top && nl > top)
        fprintf(out, "  ... %zu more lines (--top 0 shows all) ...\n", nl - top);
    free(lp);

    fprintf(out, "\ncritical paths\n");
    if (!A->have_path || !B->have_path) {
        fprintf(out, "  not available: %s a statistics file (diff two traces for the paths)\n",
                !A->have_path && !B->have_path ? "A and B are" : !A->have_path ? "A is" : "B is");
        return;
    }
    fprintf(out, "  ends: A %.3f ns, B %.3f ns; waiting on the path: A %.3f ns, B %.3f ns\n",
            ns(A->path_end_ps), ns(B->path_end_ps), ns(A->path_wait_ps), ns(B->path_wait_ps));
    fprintf(out, "  time on the path by track:\n    core  track          A (ns)          B (ns)    "
                 "delta (ns)\n");
    for (int pass = 0; pass < 2; pass++) {
        const trc_report_t *R = pass ? B : A;
        for (size_t i = 0; i < R->npath_tracks; i++) {
            const trc_report_track_time_t *t = &R->path_tracks[i];
            int in_a = 0;
            for (size_t j = 0; j < A->npath_tracks; j++)
                in_a |= A->path_tracks[j].core == t->core &&
                        strcmp(A->path_tracks[j].track, t->track) == 0;
            if (pass && in_a)
                continue; /* printed with A's */
            uint64_t ta = track_time(A, t->core, t->track), tb = track_time(B, t->core, t->track);
            fprintf(out, "    %4u  %-8s  %14.3f  %14.3f  %+12.3f\n", t->core, t->track, ns(ta),
                    ns(tb), dns(tb, ta));
        }
    }
    fprintf(out, "  the paths side by side (runs of steps on one track, in time order):\n");
    fprintf(out, "    %-52s | %s\n", "A", "B");
    size_t n = A->npath > B->npath ? A->npath : B->npath;
    for (size_t i = 0; i < n && (!top || i < top); i++) {
        char ca[128] = "", cb[128] = "";
        if (i < A->npath)
            snprintf(ca, sizeof ca, "%-8s %-26.26s %12.3f ns", A->path[i].track, A->path[i].what,
                     dns(A->path[i].end_ps, A->path[i].start_ps));
        if (i < B->npath)
            snprintf(cb, sizeof cb, "%-8s %-26.26s %12.3f ns", B->path[i].track, B->path[i].what,
                     dns(B->path[i].end_ps, B->path[i].start_ps));
        fprintf(out, "    %-52s | %s\n", ca, cb);
    }
    if (top && n > top)
        fprintf(out, "    ... %zu more runs (--top 0 shows all) ...\n", n - top);
}

static json_t *jline(const trc_report_line_t *l)
{
    if (!l)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "instructions", json_integer((json_int_t)l->instructions));
    json_object_set_new(o, "busy_ns", json_real(ns(l->busy_ps)));
    json_object_set_new(o, "stall_ns", json_real(ns(trc_report_line_stall(l))));
    json_object_set_new(o, "dma_ns", json_real(ns(l->dma_ps)));
    json_object_set_new(o, "cost_ns", json_real(ns(trc_report_line_cost(l))));
    return o;
}

static json_t *jpath(const trc_report_t *r)
{
    if (!r->have_path)
        return json_null();
    json_t *o = json_object();
    json_object_set_new(o, "end_ns", json_real(ns(r->path_end_ps)));
    json_object_set_new(o, "waiting_ns", json_real(ns(r->path_wait_ps)));
    json_t *runs = json_array();
    for (size_t i = 0; i < r->npath; i++) {
        const trc_report_step_t *s = &r->path[i];
        json_t *x = json_object();
        json_object_set_new(x, "core", json_integer(s->core));
        json_object_set_new(x, "track", json_string(s->track));
        json_object_set_new(x, "what", json_string(s->what));
        json_object_set_new(x, "start_ns", json_real(ns(s->start_ps)));
        json_object_set_new(x, "end_ns", json_real(ns(s->end_ps)));
        json_object_set_new(x, "first_line", json_integer(s->line_first));
        json_object_set_new(x, "last_line", json_integer(s->line_last));
        json_array_append_new(runs, x);
    }
    json_object_set_new(o, "runs", runs);
    return o;
}

static char *diff_json(const trc_report_t *A, const trc_report_t *B, double fail_pct)
{
    json_t *root = json_object();
    json_object_set_new(root, "a", json_string(A->source));
    json_object_set_new(root, "b", json_string(B->source));
    json_object_set_new(root, "a_kind", json_string(A->from_trace ? "trace" : "statistics"));
    json_object_set_new(root, "b_kind", json_string(B->from_trace ? "trace" : "statistics"));
    json_object_set_new(root, "total_a_ns", json_real(ns(A->total_ps)));
    json_object_set_new(root, "total_b_ns", json_real(ns(B->total_ps)));
    json_object_set_new(root, "delta_ns", json_real(dns(B->total_ps, A->total_ps)));
    json_object_set_new(root, "delta_pct", json_real(pct_change(A->total_ps, B->total_ps)));
    if (fail_pct >= 0)
        json_object_set_new(root, "fail_if_slower_pct", json_real(fail_pct));
    char v[600];
    trc_report_verdict(A, v, sizeof v);
    json_object_set_new(root, "verdict_a", json_string(v));
    trc_report_verdict(B, v, sizeof v);
    json_object_set_new(root, "verdict_b", json_string(v));
    eng_pair_t *ep = NULL;
    size_t ne = engine_pairs(A, B, &ep);
    json_t *engines = json_array();
    for (size_t i = 0; i < ne; i++) {
        uint64_t ba = ep[i].a ? ep[i].a->busy_ps : 0, bb = ep[i].b ? ep[i].b->busy_ps : 0;
        uint64_t sa = engine_stall(ep[i].a), sb = engine_stall(ep[i].b);
        json_t *o = json_object();
        json_object_set_new(o, "core", json_integer(ep[i].core));
        json_object_set_new(o, "engine", json_string(ep[i].name));
        json_object_set_new(o, "busy_a_ns", json_real(ns(ba)));
        json_object_set_new(o, "busy_b_ns", json_real(ns(bb)));
        json_object_set_new(o, "busy_delta_ns", json_real(dns(bb, ba)));
        json_object_set_new(o, "stall_a_ns", json_real(ns(sa)));
        json_object_set_new(o, "stall_b_ns", json_real(ns(sb)));
        json_object_set_new(o, "stall_delta_ns", json_real(dns(sb, sa)));
        json_array_append_new(engines, o);
    }
    free(ep);
    json_object_set_new(root, "engines", engines);
    line_pair_t *lp = NULL;
    size_t nl = line_pairs(A, B, &lp);
    json_t *lines = json_array();
    for (size_t i = 0; i < nl; i++) {
        json_t *o = json_object();
        json_object_set_new(o, "line", json_integer(lp[i].line));
        json_object_set_new(o, "a", jline(lp[i].a));
        json_object_set_new(o, "b", jline(lp[i].b));
        json_object_set_new(o, "cost_delta_ns", json_real(lp[i].delta));
        json_array_append_new(lines, o);
    }
    free(lp);
    json_object_set_new(root, "lines", lines);
    json_object_set_new(root, "critical_path_a", jpath(A));
    json_object_set_new(root, "critical_path_b", jpath(B));
    char *text = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(12));
    json_decref(root);
    if (!text)
        return NULL;
    size_t n = strlen(text);
    char *outp = realloc(text, n + 2);
    if (!outp) {
        free(text);
        return NULL;
    }
    outp[n] = '\n';
    outp[n + 1] = '\0';
    return outp;
}

/* ---- options: one row each (cli/options.h) -------------------------------------------------- */

typedef struct diff_args {
    int as_json;
    size_t top;
    double fail_pct;
    const char *out_path;
} diff_args_t;

static int opt_json(void *p, const char *name, const char *arg)
{
    (void)name;
    (void)arg;
    ((diff_args_t *)p)->as_json = 1;
    return 0;
}

static int opt_top(void *p, const char *name, const char *arg)
{
    uint64_t v;
    (void)name;
    if (cli_parse_u64(arg, &v)) {
        fprintf(stderr, "ncsim diff: --top wants a count, not '%s'\n", arg);
        return -1;
    }
    ((diff_args_t *)p)->top = (size_t)v;
    return 0;
}

static int opt_fail(void *p, const char *name, const char *arg)
{
    double v;
    (void)name;
    if (cli_parse_double(arg, &v) || !(v >= 0)) {
        fprintf(stderr, "ncsim diff: --fail-if-slower wants a percentage >= 0, not '%s'\n", arg);
        return -1;
    }
    ((diff_args_t *)p)->fail_pct = v;
    return 0;
}

static int opt_output(void *p, const char *name, const char *arg)
{
    (void)name;
    ((diff_args_t *)p)->out_path = arg;
    return 0;
}

static const cli_option_t diff_options[] = {
    {"json", 0, NULL, opt_json, "machine-readable output"},
    {"top", 0, "N", opt_top, "lines and path runs shown (default 20; 0: all)"},
    {"fail-if-slower", 0, "PCT", opt_fail,
     "exit 1 when B's total time exceeds A's by more than PCT %"},
    {"output", 'o', "FILE", opt_output, "write to FILE instead of stdout"},
    {NULL, 0, NULL, NULL, NULL},
};

static const cli_command_t diff_command = {
    "diff",
    "usage: ncsim diff A B [--json] [--top N] [--fail-if-slower PCT] [-o FILE]\n"
    "\n"
    "Compare two runs: A and B are statistics files (`ncsim run --stats`) or traces\n"
    "(`ncsim run --trace`). Prints the total times and their difference, both verdicts,\n"
    "per-engine busy and stall deltas, per-line deltas (largest change first) and, for\n"
    "traces, the critical paths side by side. Positive deltas: B takes longer.\n",
    diff_options,
    24,
    "exit codes: 0 (or 1 with --fail-if-slower), 2 usage, 3 a file cannot be read.\n",
    2,
    2,
    "expected two files, A and B",
};

int cli_diff(int argc, char **argv)
{
    diff_args_t a = {0, 20, -1, NULL};
    int first;
    int rc = cli_parse(&diff_command, argc, argv, &a, &first);
    if (rc >= 0)
        return rc;
    int as_json = a.as_json;
    size_t top = a.top;
    double fail_pct = a.fail_pct;
    const char *out_path = a.out_path;
    /* -o FILE: checked now, put in place when complete; a failure or a signal leaves no
     * file of an earlier run under the name (docs/cli.md, "Output files") */
    if (!out_path)
        out_path = "-";
    static cli_outputs_t outputs;
    rc = cli_output_begin(&outputs, "diff", out_path, argv[first], argv[first + 1]);
    if (rc)
        return rc;
    trc_report_t A, B;
    char err[1024];
    ncsim_status_t st = cli_report_load(argv[first], &A, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim diff: %s\n", err);
        return cli_output_end(&outputs, cli_exit(st));
    }
    st = cli_report_load(argv[first + 1], &B, err, sizeof err);
    if (st != NCSIM_OK) {
        fprintf(stderr, "ncsim diff: %s\n", err);
        trc_report_free(&A);
        return cli_output_end(&outputs, cli_exit(st));
    }
    /* source text only beside each file, under the program's recorded name (docs/security.md) */
    char why[1024];
    (void)trc_report_line_texts(&A, NULL, why, sizeof why);
    (void)trc_report_line_texts(&B, NULL, why, sizeof why);
    if (as_json) {
        char *text = diff_json(&A, &B, fail_pct);
        if (!text) {
            fputs("ncsim diff: out of memory\n", stderr);
            rc = cli_exit(NCSIM_NOMEM);
        } else {
            rc = cli_output_write(&outputs, out_path, text, strlen(text));
            free(text);
        }
    } else {
        FILE *out = cli_output_open(&outputs, out_path);
        if (!out) {
            rc = cli_exit(NCSIM_IO);
        } else {
            print_text(out, &A, &B, top);
            rc = cli_output_close(&outputs, out_path, out);
        }
    }
    if (!rc && fail_pct >= 0 && pct_change(A.total_ps, B.total_ps) > fail_pct) {
        fprintf(stderr, "ncsim diff: B is %.2f %% slower than A (limit %.2f %%)\n",
                pct_change(A.total_ps, B.total_ps), fail_pct);
        rc = 1;
    }
    trc_report_free(&A);
    trc_report_free(&B);
    /* a diff over the limit is still a complete, valid comparison: it is kept */
    return cli_output_end_keep(&outputs, rc, 1);
}
