/*
 * outputs.c -- the files a command was asked to write (docs/cli.md, "Output files").
 *
 * Every output is registered before the work starts and validated by creating its temporary
 * file beside the target (same directory, so the final rename is atomic and cannot cross a
 * file system): a bad directory, a directory as target, a read-only place or two outputs with
 * the same name are found before a long simulation, not after it. Writers write the
 * temporary name; cli_outputs_commit renames each into place; cli_outputs_abort removes the
 * temporaries and the targets, so that a failed run leaves nothing an earlier run wrote under
 * those names for a harness to mistake for its result. A target that exists and is not a
 * regular file (/dev/null, a FIFO) is written directly and never removed.
 */
#define _GNU_SOURCE
#include "outputs.h"

#include "ncsim.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void cli_outputs_init(cli_outputs_t *o, const char *cmd)
{
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
}

int cli_outputs_add(cli_outputs_t *o, const char *path, const char *what)
{
    if (o->n == CLI_MAX_OUTPUTS) {
        fprintf(stderr, "ncsim %s: too many output files (at most %d)\n", o->cmd,
                CLI_MAX_OUTPUTS);
        return -1;
    }
    cli_output_t *e = &o->v[o->n++];
    memset(e, 0, sizeof *e);
    e->path = strdup(path);
    e->what = what;
    e->is_stdout = strcmp(path, "-") == 0;
    e->pending_tmp = e->pending_target = -1;
    if (!e->path) {
        o->n--;
        fprintf(stderr, "ncsim %s: out of host memory\n", o->cmd);
        return -1;
    }
    return 0;
}

/* Directory part and base name of a path ("." for a bare name). */
static void split_path(const char *path, char *dir, size_t dirlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dirlen, ".");
        *base = path;
        return;
    }
    size_t n = (size_t)(slash - path);
    if (n == 0)
        n = 1; /* "/name": the root */
    snprintf(dir, dirlen, "%.*s", (int)n, path);
    *base = slash + 1;
}

/* Same file? Compares device and inode of existing files, the strings otherwise. */
static int same_target(const cli_output_t *a, const cli_output_t *b)
{
    if (strcmp(a->path, b->path) == 0)
        return 1;
    struct stat sa, sb;
    return stat(a->path, &sa) == 0 && stat(b->path, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_outputs_validate(cli_outputs_t *o)
{
    for (int i = 0; i < o->n; i++) {
        cli_output_t *e = &o->v[i];
        if (e->is_stdout)
            continue;
        if (ncsim_path_is_special(e->path)) {
            /* renaming a temporary over /dev/null would replace the device with a file */
            e->direct = 1;
            continue;
        }
        struct stat st;
        for (int j = 0; j < i; j++)
            if (!o->v[j].is_stdout && same_target(e, &o->v[j])) {
                fprintf(stderr, "ncsim %s: %s and %s name the same file '%s'\n", o->cmd,
                        o->v[j].what, e->what, e->path);
                return -1;
            }
        char dir[4096];
        const char *base;
        split_path(e->path, dir, sizeof dir, &base);
        if (!*base || (stat(e->path, &st) == 0 && S_ISDIR(st.st_mode))) {
            fprintf(stderr, "ncsim %s: %s '%s' is a directory, not a file name\n", o->cmd,
                    e->what, e->path);
            return -1;
        }
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
            fprintf(stderr, "ncsim %s: %s '%s': directory '%s' does not exist\n", o->cmd,
                    e->what, e->path, dir);
            return -1;
        }
        /* DIR/.BASE.ncsim-XXXXXX.SUFFIX: hidden, unique, and with the target's suffix
         * (.json.gz, .pftrace), which writers use to choose a format */
        const char *dot = strchr(base + 1, '.');
        const char *suffix = dot ? dot : "";
        size_t cap = strlen(dir) + strlen(base) + 32;
        e->tmp = malloc(cap);
        if (!e->tmp) {
            fprintf(stderr, "ncsim %s: out of host memory\n", o->cmd);
            return -1;
        }
        snprintf(e->tmp, cap, "%s/.%.*s.ncsim-XXXXXX%s", dir, (int)(suffix - base), base,
                 suffix);
        int fd = mkstemps(e->tmp, (int)strlen(suffix));
        if (fd < 0) {
            fprintf(stderr, "ncsim %s: cannot write %s '%s': %s\n", o->cmd, e->what, e->path,
                    strerror(errno));
            free(e->tmp);
            e->tmp = NULL;
            return -1;
        }
        /* mkstemps makes 0600; the result should have the permissions any new file gets */
        mode_t um = umask(0);
        umask(um);
        (void)fchmod(fd, 0666 & ~um);
        close(fd);
        /* a signal from here on removes the temporary, and the target an earlier run left */
        e->pending_tmp = ncsim_remove_on_signal(e->tmp);
        if (!e->keep)
            e->pending_target = ncsim_remove_on_signal(e->path);
    }
    o->validated = 1;
    return 0;
}

const char *cli_outputs_path(const cli_outputs_t *o, const char *path)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->v[i].path, path) == 0)
            return o->v[i].tmp ? o->v[i].tmp : o->v[i].path;
    return path;
}

const char *cli_outputs_message(const cli_outputs_t *o, const char *msg, char *buf, size_t cap)
{
    size_t n = 0;
    while (*msg && n + 1 < cap) {
        const cli_output_t *hit = NULL;
        for (int i = 0; i < o->n && !hit; i++)
            if (o->v[i].tmp && strncmp(msg, o->v[i].tmp, strlen(o->v[i].tmp)) == 0)
                hit = &o->v[i];
        if (hit) {
            n += (size_t)snprintf(buf + n, cap - n, "%s", hit->path);
            if (n >= cap)
                n = cap - 1;
            msg += strlen(hit->tmp);
        } else {
            buf[n++] = *msg++;
        }
    }
    buf[n] = '\0';
    return buf;
}

void cli_outputs_protect(cli_outputs_t *o, const char *path)
{
    cli_output_t in;
    memset(&in, 0, sizeof in);
    in.path = (char *)path;
    for (int i = 0; i < o->n; i++)
        if (same_target(&o->v[i], &in))
            o->v[i].keep = 1;
}

void cli_outputs_mark_written(cli_outputs_t *o, const char *path)
{
    for (int i = 0; i < o->n; i++)
        if (strcmp(o->v[i].path, path) == 0)
            o->v[i].written = 1;
}

/* Out of the list a signal removes. */
static void forget_pending(cli_output_t *e)
{
    ncsim_remove_on_signal_cancel(e->pending_tmp);
    ncsim_remove_on_signal_cancel(e->pending_target);
    e->pending_tmp = e->pending_target = -1;
}

int cli_outputs_commit(cli_outputs_t *o)
{
    int rc = 0;
    for (int i = 0; i < o->n; i++) {
        cli_output_t *e = &o->v[i];
        if (!e->tmp)
            continue;
        if (!e->written) { /* asked for but not produced by this run: leave nothing */
            unlink(e->tmp);
            if (!e->keep)
                unlink(e->path);
        } else if (rename(e->tmp, e->path) != 0) {
            fprintf(stderr, "ncsim %s: cannot write %s '%s': %s\n", o->cmd, e->what, e->path,
                    strerror(errno));
            unlink(e->tmp);
            rc = -1;
        }
        forget_pending(e);
        free(e->tmp);
        e->tmp = NULL;
    }
    return rc;
}

void cli_outputs_abort(cli_outputs_t *o)
{
    for (int i = 0; i < o->n; i++) {
        cli_output_t *e = &o->v[i];
        if (e->is_stdout || e->direct)
            continue;
        if (e->tmp)
            unlink(e->tmp);
        if (!e->keep)
            unlink(e->path);
        forget_pending(e);
        free(e->tmp);
        e->tmp = NULL;
    }
}

void cli_outputs_free(cli_outputs_t *o)
{
    for (int i = 0; i < o->n; i++) {
        if (o->v[i].tmp)
            unlink(o->v[i].tmp);
        forget_pending(&o->v[i]);
        free(o->v[i].tmp);
        free(o->v[i].path);
    }
    o->n = 0;
}

int cli_output_begin(cli_outputs_t *o, const char *cmd, const char *out, const char *input,
                     const char *input2)
{
    cli_outputs_init(o, cmd);
    if (cli_outputs_add(o, out, "--output"))
        return 4; /* out of host memory (the message is printed) */
    if (input)
        cli_outputs_protect(o, input);
    if (input2)
        cli_outputs_protect(o, input2);
    if (cli_outputs_validate(o)) {
        cli_outputs_free(o);
        return 3;
    }
    return 0;
}

int cli_output_write(cli_outputs_t *o, const char *out, const void *data, size_t len)
{
    int bad = strcmp(out, "-") == 0
                  ? fwrite(data, 1, len, stdout) != len || fflush(stdout) != 0
                  : ncsim_write_file(cli_outputs_path(o, out), data, len) != NCSIM_OK;
    if (bad) {
        fprintf(stderr, "ncsim %s: cannot write %s: %s\n", o->cmd, out, strerror(errno));
        return 3;
    }
    cli_outputs_mark_written(o, out);
    return 0;
}

FILE *cli_output_open(cli_outputs_t *o, const char *out)
{
    if (strcmp(out, "-") == 0)
        return stdout;
    FILE *f = fopen(cli_outputs_path(o, out), "w");
    if (!f)
        fprintf(stderr, "ncsim %s: cannot write %s: %s\n", o->cmd, out, strerror(errno));
    return f;
}

int cli_output_close(cli_outputs_t *o, const char *out, FILE *f)
{
    int bad = ferror(f) != 0;
    if (f == stdout)
        bad |= fflush(f) != 0;
    else
        bad |= fclose(f) != 0;
    if (bad) {
        fprintf(stderr, "ncsim %s: cannot write %s: %s\n", o->cmd, out,
                errno ? strerror(errno) : "write error");
        return 3;
    }
    cli_outputs_mark_written(o, out);
    return 0;
}

int cli_output_end_keep(cli_outputs_t *o, int rc, int keep_on_1)
{
    if (rc == 0 || (rc == 1 && keep_on_1)) {
        if (cli_outputs_commit(o) && rc == 0)
            rc = 3;
    } else {
        cli_outputs_abort(o);
    }
    cli_outputs_free(o);
    return rc;
}

int cli_output_end(cli_outputs_t *o, int rc)
{
    return cli_output_end_keep(o, rc, 0);
}

int cli_output_guard(const char *path)
{
    if (!path || strcmp(path, "-") == 0 || ncsim_path_is_special(path))
        return -1;
    return ncsim_remove_on_signal(path);
}

void cli_output_unguard(int handle)
{
    ncsim_remove_on_signal_cancel(handle);
}
