/*
 * report_lines.c -- the per-line profile (`ncsim report --by-line`): per source line (or
 * .loc), instructions, busy time, stall by cause and the data and waiting time of the
 * transfers its dma instructions issued, from the slices of the model (report_model.c) or
 * filled by report_load.c from a statistics file; the text of each line (from --source, or
 * the recorded program beside the file read, checked); the table, CSV and JSON of it.
 */
#include "report_internal.h"

#include "file.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- figures --------------------------------------------------------------------------------- */

static size_t line_slot(uint32_t line, size_t cap)
{
    return (size_t)(((uint64_t)line * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

/* The line index (line -> position in rep->lines + 1, open addressing), grown to keep it at
 * most half full; rebuilt whole when the lines have moved (`rebuild`: trc_report_finish). A
 * linear search made a statistics file of 100,000 lines take tens of seconds. */
int rpt_line_index(trc_report_t *rep, int rebuild)
{
    if (!rebuild && (rep->nlines + 1) * 2 <= rep->nline_slots)
        return 0;
    size_t cap = 64;
    while ((rep->nlines + 1) * 2 > cap)
        cap *= 2;
    size_t *slots = calloc(cap, sizeof *slots);
    if (!slots) {
        free(rep->line_slots);
        rep->line_slots = NULL;
        rep->nline_slots = 0;
        return -1;
    }
    for (size_t i = 0; i < rep->nlines; i++) {
        size_t j = line_slot(rep->lines[i].line, cap);
        while (slots[j])
            j = (j + 1) & (cap - 1);
        slots[j] = i + 1;
    }
    free(rep->line_slots);
    rep->line_slots = slots;
    rep->nline_slots = cap;
    return 0;
}

/* The slot of the index holding `line`, or the empty one where it would go. */
static size_t line_slot_of(const trc_report_t *rep, uint32_t line)
{
    size_t j = line_slot(line, rep->nline_slots);
    while (rep->line_slots[j] && rep->lines[rep->line_slots[j] - 1].line != line)
        j = (j + 1) & (rep->nline_slots - 1);
    return j;
}

const trc_report_line_t *trc_report_line_find(const trc_report_t *rep, uint32_t line)
{
    if (!rep->nline_slots) { /* no index (out of memory when it was built) */
        for (size_t i = 0; i < rep->nlines; i++)
            if (rep->lines[i].line == line)
                return &rep->lines[i];
        return NULL;
    }
    size_t j = line_slot_of(rep, line);
    return rep->line_slots[j] ? &rep->lines[rep->line_slots[j] - 1] : NULL;
}

trc_report_line_t *trc_report_line(trc_report_t *rep, uint32_t line)
{
    if (rpt_line_index(rep, 0))
        return NULL;
    size_t j = line_slot_of(rep, line);
    if (rep->line_slots[j])
        return &rep->lines[rep->line_slots[j] - 1];
    trc_report_line_t *l = rpt_append((void **)&rep->lines, &rep->nlines, sizeof *rep->lines);
    if (l) {
        l->line = line;
        rep->line_slots[j] = rep->nlines;
    }
    return l;
}

uint64_t trc_report_line_stall(const trc_report_line_t *l)
{
    uint64_t s = 0;
    for (int c = 0; c < TRC_STALL_COUNT; c++)
        s += l->stall_by[c];
    return s;
}

uint64_t trc_report_line_cost(const trc_report_line_t *l)
{
    return l->busy_ps + l->dma_ps;
}

/* The per-line profile from the slices: instructions by their line, transfers by their dma
 * instruction's line (any number a .loc may give). */
int rpt_lines_from_slices(model_t *m)
{
    for (size_t i = 0; i < m->nsl; i++) {
        const rs_t *x = &m->sl[i];
        trc_report_line_t *l = trc_report_line(m->rep, x->line);
        if (!l)
            return -1;
        if (x->kind == TRC_SLICE_INSTR) {
            l->instructions++;
            l->busy_ps += x->dur;
            for (int c = 0; c < TRC_STALL_COUNT; c++)
                l->stall_by[c] += x->wait[c];
        } else {
            l->transfers++;
            l->dma_bytes += x->bytes;
            l->dma_ps += x->dur;
            l->dma_wait_ps += x->queued;
        }
    }
    return 0;
}

/* ---- the source text of each line ------------------------------------------------------------ */

/* Line numbers in ascending order: read_line_texts walks them with the file, once. */
static int cmp_line_ptr(const void *a, const void *b)
{
    uint32_t x = (*(trc_report_line_t *const *)a)->line, y = (*(trc_report_line_t *const *)b)->line;
    return x < y ? -1 : x > y;
}

/* The text of every profiled line from f (line 1 is f's first line), in one pass over the
 * file and the lines sorted by number (a crafted file with a million lines costs a sort, not
 * a million passes). Control characters (terminal escapes above all) become '?'. */
static void read_line_texts(trc_report_t *rep, FILE *f)
{
    trc_report_line_t **order = malloc(rep->nlines * sizeof *order);
    if (!order)
        return;
    for (size_t i = 0; i < rep->nlines; i++)
        order[i] = &rep->lines[i];
    qsort(order, rep->nlines, sizeof *order, cmp_line_ptr);
    size_t next = 0;
    while (next < rep->nlines && order[next]->line == 0)
        next++;
    char buf[4096];
    uint32_t no = 0;
    while (next < rep->nlines && fgets(buf, sizeof buf, f)) {
        size_t n = strlen(buf);
        int whole = n && buf[n - 1] == '\n';
        no++;
        for (; next < rep->nlines && order[next]->line == no; next++) {
            char *text = order[next]->text;
            const char *p = buf;
            while (*p == ' ' || *p == '\t')
                p++;
            /* keep what fits of the line (a longer line is cut, on purpose) */
            size_t len = strlen(p), cap = sizeof order[next]->text - 1;
            if (len > cap)
                len = cap;
            memcpy(text, p, len);
            text[len] = '\0';
            char *e = text + strlen(text);
            while (e > text && (e[-1] == '\n' || e[-1] == '\r' || e[-1] == ' '))
                *--e = '\0';
            for (char *c = text; *c; c++)
                if ((unsigned char)*c < 0x20 || *c == 0x7f)
                    *c = '?';
        }
        /* a line longer than the buffer: skip its rest */
        while (!whole && fgets(buf, sizeof buf, f)) {
            n = strlen(buf);
            whole = n && buf[n - 1] == '\n';
        }
    }
    free(order);
}

/* The name given by the program's first `.source NAME` directive (the rest of the line,
 * trimmed: docs/isa-notes.md), or "" when it has none. */
static void find_source_name(FILE *f, char *name, size_t cap)
{
    char buf[4096];
    name[0] = '\0';
    while (fgets(buf, sizeof buf, f)) {
        size_t n = strlen(buf);
        int whole = n && buf[n - 1] == '\n';
        const char *p = buf;
        while (*p == ' ' || *p == '\t')
            p++;
        if (strncmp(p, ".source", 7) == 0 && (p[7] == ' ' || p[7] == '\t') && whole) {
            p += 8;
            while (*p == ' ' || *p == '\t')
                p++;
            size_t len = strlen(p);
            while (len && (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' ||
                           p[len - 1] == '\t'))
                len--;
            if (len && len < cap) {
                memcpy(name, p, len);
                name[len] = '\0';
                return;
            }
        }
        while (!whole && fgets(buf, sizeof buf, f)) {
            n = strlen(buf);
            whole = n && buf[n - 1] == '\n';
        }
    }
}

/* The last component of a recorded name ("" for none, or for "." and ".."). */
static const char *recorded_base(const char *name)
{
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    if (!strcmp(base, ".") || !strcmp(base, ".."))
        return "";
    return base;
}

/* DIR(rep->source)/BASE through the checked open (regular, bounded, no symbolic link);
 * NULL, with why set, when there is no such file. */
static FILE *open_beside(const trc_report_t *rep, const char *base, char *path, size_t cap,
                         char *why, size_t whylen)
{
    const char *slash = strrchr(rep->source, '/');
    int n = slash ? snprintf(path, cap, "%.*s/%s", (int)(slash - rep->source), rep->source, base)
                  : snprintf(path, cap, "%s", base);
    if (!*base || n < 0 || (size_t)n >= cap) {
        snprintf(why, whylen, "no usable file name");
        return NULL;
    }
    return isa_file_open_data(path, TRC_REPORT_MAX_SOURCE_BYTES, ISA_FILE_NO_SYMLINK, why,
                              whylen);
}

int trc_report_line_texts(trc_report_t *rep, const char *source, char *why, size_t whylen)
{
    char reason[256], path[2048];
    why[0] = '\0';
    if (!rep->nlines)
        return 0;
    if (source) {
        /* the user named the text: read it (a regular file of bounded size all the same) */
        FILE *f = isa_file_open_data(source, TRC_REPORT_MAX_SOURCE_BYTES, 0, reason,
                                     sizeof reason);
        if (!f) {
            snprintf(why, whylen, "--source %s: %s", source, reason);
            return -1;
        }
        read_line_texts(rep, f);
        fclose(f);
        return 0;
    }
    /* The recorded name (the .nca text, or the file its `.source` named, e.g. an NKI
     * kernel's Python file) is data: only its last component is used, and only beside the
     * file the user named; never a binary .ncx. */
    const char *base = recorded_base(rep->program);
    size_t L = strlen(base);
    if (!L || (L >= 4 && strcmp(base + L - 4, ".ncx") == 0)) {
        snprintf(why, whylen, "the program is %s; name its source text with --source FILE",
                 L ? "a binary .ncx" : "not recorded");
        return 1;
    }
    FILE *f = open_beside(rep, base, path, sizeof path, reason, sizeof reason);
    if (!f) {
        snprintf(why, whylen,
                 "'%s' (the program's recorded name) is not beside %s as a readable regular "
                 "file (%s); name the source text with --source FILE",
                 base, rep->source, reason);
        return 1;
    }
    /* In a .nca the line map refers to the `.source` file when the program names one (a
     * compiler's output): that file is looked for beside it the same way. When it is not
     * there, the program's own lines are shown. */
    char name[1024] = "";
    if (L >= 4 && strcmp(base + L - 4, ".nca") == 0)
        find_source_name(f, name, sizeof name);
    FILE *src = name[0] ? open_beside(rep, recorded_base(name), path, sizeof path, reason,
                                      sizeof reason)
                        : NULL;
    if (src) {
        fclose(f);
        f = src;
    } else {
        rewind(f);
    }
    read_line_texts(rep, f);
    fclose(f);
    return 0;
}

/* ---- rendering ------------------------------------------------------------------------------- */

void trc_report_print_lines(FILE *out, const trc_report_t *r, size_t limit)
{
    char a[40], b[40], c[40], d[40], e[40], f[40], g[40], w[40];
    uint64_t total = 0;
    for (size_t i = 0; i < r->nlines; i++)
        total += trc_report_line_cost(&r->lines[i]);
    fprintf(out, "by source line (%s %s; sorted by cost = busy + DMA data time; line 0: "
                 "instructions with no line)\n",
            r->from_trace ? "trace" : "statistics file", r->source);
    if (!r->nlines) {
        fprintf(out, "  no per-line figures in this file\n");
        return;
    }
    fprintf(out,
            "   line   instrs       busy (ns)      stall (ns)  semaphore (ns)       port (ns)  "
            "interlock (ns)  collective (ns)  transfers     DMA data (ns)   DMA wait (ns)  "
            "cost (%%)  source\n");
    for (size_t i = 0; i < r->nlines && (!limit || i < limit); i++) {
        const trc_report_line_t *l = &r->lines[i];
        fprintf(out, "  %5u  %7llu  %14s  %14s  %14s  %14s  %14s  %15s  %9llu  %16s  %14s  %8.1f  "
                     "%s\n",
                l->line, (unsigned long long)l->instructions, rpt_ns3(a, sizeof a, l->busy_ps),
                rpt_ns3(b, sizeof b, trc_report_line_stall(l)),
                rpt_ns3(c, sizeof c, l->stall_by[TRC_STALL_SEMAPHORE]),
                rpt_ns3(d, sizeof d, l->stall_by[TRC_STALL_PORT]),
                rpt_ns3(e, sizeof e, l->stall_by[TRC_STALL_INTERLOCK]),
                rpt_ns3(f, sizeof f, l->stall_by[TRC_STALL_COLLECTIVE]),
                (unsigned long long)l->transfers, rpt_ns3(w, sizeof w, l->dma_ps),
                rpt_ns3(g, sizeof g, l->dma_wait_ps),
                rpt_pct((double)trc_report_line_cost(l), (double)total), l->text);
    }
    if (limit && r->nlines > limit)
        fprintf(out, "  ... %zu more lines (--top 0 shows all) ...\n", r->nlines - limit);
}

/* A CSV field: quoted, quotes doubled. */
static void csv_text(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '"')
            fputc('"', out);
        fputc(*s, out);
    }
    fputc('"', out);
}

void trc_report_print_lines_csv(FILE *out, const trc_report_t *r)
{
    char a[40], b[40], c[40], d[40], e[40], f[40], w[40], x[40], y[40];
    fprintf(out, "line,instructions,busy_ns,stall_ns,semaphore_ns,port_ns,interlock_ns,"
                 "collective_ns,transfers,dma_bytes,dma_ns,dma_wait_ns,cost_ns,source\n");
    for (size_t i = 0; i < r->nlines; i++) {
        const trc_report_line_t *l = &r->lines[i];
        fprintf(out, "%u,%llu,%s,%s,%s,%s,%s,%s,%llu,%llu,%s,%s,%s,", l->line,
                (unsigned long long)l->instructions, rpt_ns3(a, sizeof a, l->busy_ps),
                rpt_ns3(b, sizeof b, trc_report_line_stall(l)),
                rpt_ns3(c, sizeof c, l->stall_by[TRC_STALL_SEMAPHORE]),
                rpt_ns3(d, sizeof d, l->stall_by[TRC_STALL_PORT]),
                rpt_ns3(e, sizeof e, l->stall_by[TRC_STALL_INTERLOCK]),
                rpt_ns3(f, sizeof f, l->stall_by[TRC_STALL_COLLECTIVE]),
                (unsigned long long)l->transfers, (unsigned long long)l->dma_bytes,
                rpt_ns3(w, sizeof w, l->dma_ps), rpt_ns3(x, sizeof x, l->dma_wait_ps),
                rpt_ns3(y, sizeof y, trc_report_line_cost(l)));
        csv_text(out, l->text);
        fputc('\n', out);
    }
}

static void lines_json(yajl_gen g, const trc_report_t *r)
{
    yajl_gen_array_open(g);
    for (size_t i = 0; i < r->nlines; i++) {
        const trc_report_line_t *l = &r->lines[i];
        yajl_gen_map_open(g);
        rpt_jint(g, "line", l->line);
        rpt_jint(g, "instructions", l->instructions);
        rpt_jns(g, "busy_ns", l->busy_ps);
        rpt_jns(g, "stall_ns", trc_report_line_stall(l));
        rpt_jkey(g, "stall_by_cause_ns");
        yajl_gen_map_open(g);
        for (int c = 0; c < TRC_STALL_COUNT; c++)
            rpt_jns(g, trc_stall_key((trc_stall_t)c), l->stall_by[c]);
        yajl_gen_map_close(g);
        rpt_jint(g, "transfers", l->transfers);
        rpt_jint(g, "dma_bytes", l->dma_bytes);
        rpt_jns(g, "dma_ns", l->dma_ps);
        rpt_jns(g, "dma_wait_ns", l->dma_wait_ps);
        rpt_jns(g, "cost_ns", trc_report_line_cost(l));
        rpt_jstr(g, "source", l->text);
        yajl_gen_map_close(g);
    }
    yajl_gen_array_close(g);
}

char *trc_report_lines_json(const trc_report_t *r)
{
    yajl_gen g = rpt_json_open();
    if (!g)
        return NULL;
    yajl_gen_map_open(g);
    rpt_jstr(g, "source", r->source);
    rpt_jstr(g, "source_kind", r->from_trace ? "trace" : "statistics");
    rpt_jstr(g, "program", r->program);
    rpt_jkey(g, "lines");
    lines_json(g, r);
    yajl_gen_map_close(g);
    return rpt_json_close(g);
}
