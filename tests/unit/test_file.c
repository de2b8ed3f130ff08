/*
 * test_file.c -- isa/file.h: whole files put in place by rename, devices and FIFOs written
 * where they are, nothing left behind by a failure.
 */
#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "file.h"
#include "testutil.h"

static char dir[4096];

static void path_of(char *out, size_t cap, const char *name)
{
    snprintf(out, cap, "%s/%s", dir, name);
}

/* The whole content of PATH, NUL-terminated; NULL when it cannot be read. */
static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    char *b = calloc(1, 1 << 16);
    size_t n = b ? fread(b, 1, (1 << 16) - 1, f) : 0;
    (void)n;
    fclose(f);
    return b;
}

/* Entries of the test directory whose name contains ".tmp." (temporaries left behind). */
static int temporaries(void)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    closedir(d);
    return n;
}

static void test_new_and_replaced(void **state)
{
    (void)state;
    char p[4200];
    path_of(p, sizeof p, "a.txt");
    unlink(p);
    assert_int_equal(isa_file_write(p, "first\n", 6), 0);
    char *c = slurp(p);
    assert_string_equal(c, "first\n");
    free(c);
    /* an existing file is replaced whole */
    assert_int_equal(isa_file_write(p, "second, longer\n", 15), 0);
    c = slurp(p);
    assert_string_equal(c, "second, longer\n");
    free(c);
    /* the temporary is not the target until commit: a reader sees the old file */
    isa_file_out_t o;
    assert_int_equal(isa_file_begin(&o, p), 0);
    assert_non_null(o.tmp);
    fputs("third\n", o.f);
    fflush(o.f);
    c = slurp(p);
    assert_string_equal(c, "second, longer\n");
    free(c);
    assert_int_equal(isa_file_commit(&o, 1), 0);
    c = slurp(p);
    assert_string_equal(c, "third\n");
    free(c);
    /* new files get the permissions the umask gives */
    mode_t um = umask(022);
    unlink(p);
    assert_int_equal(isa_file_write(p, "x", 1), 0);
    struct stat st;
    assert_int_equal(stat(p, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0644);
    umask(um);
    assert_int_equal(temporaries(), 0);
}

static void test_failures_leave_the_target(void **state)
{
    (void)state;
    char p[4200];
    path_of(p, sizeof p, "b.txt");
    assert_int_equal(isa_file_write(p, "kept\n", 5), 0);
    /* the caller's writes failed: nothing replaced, nothing left behind */
    isa_file_out_t o;
    assert_int_equal(isa_file_begin(&o, p), 0);
    fputs("half", o.f);
    errno = ENOSPC;
    assert_int_equal(isa_file_commit(&o, 0), -1);
    assert_int_equal(errno, ENOSPC);
    char *c = slurp(p);
    assert_string_equal(c, "kept\n");
    free(c);
    /* given up */
    assert_int_equal(isa_file_begin(&o, p), 0);
    fputs("half", o.f);
    isa_file_abort(&o);
    assert_null(o.f);
    c = slurp(p);
    assert_string_equal(c, "kept\n");
    free(c);
    /* a directory is refused, a missing directory fails, and neither creates anything */
    assert_int_equal(isa_file_begin(&o, dir), -1);
    assert_int_equal(errno, EISDIR);
    char q[4200];
    path_of(q, sizeof q, "no/such/dir/c.txt");
    assert_int_equal(isa_file_write(q, "x", 1), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(isa_file_commit(&o, 1), -1); /* never begun */
    assert_int_equal(temporaries(), 0);
}

typedef struct {
    char path[4200];
    char got[64];
} reader_t;

static void *read_fifo(void *arg)
{
    reader_t *r = arg;
    FILE *f = fopen(r->path, "rb");
    if (f) {
        size_t n = fread(r->got, 1, sizeof r->got - 1, f);
        r->got[n] = '\0';
        fclose(f);
    }
    return NULL;
}

/* A FIFO stands in for /dev/null: written where it is, never renamed over or removed, even
 * when the write fails. */
static void test_special_written_in_place(void **state)
{
    (void)state;
    reader_t r;
    memset(&r, 0, sizeof r);
    path_of(r.path, sizeof r.path, "fifo");
    unlink(r.path);
    assert_int_equal(mkfifo(r.path, 0600), 0);
    assert_int_equal(isa_file_is_special(r.path), 1);
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &r), 0);
    assert_int_equal(isa_file_write(r.path, "through\n", 8), 0);
    pthread_join(t, NULL);
    assert_string_equal(r.got, "through\n");
    struct stat st;
    assert_int_equal(stat(r.path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    /* a failed write leaves the FIFO */
    assert_int_equal(pthread_create(&t, NULL, read_fifo, &r), 0);
    isa_file_out_t o;
    assert_int_equal(isa_file_begin(&o, r.path), 0);
    assert_null(o.tmp);
    assert_int_equal(isa_file_commit(&o, 0), -1);
    pthread_join(t, NULL);
    assert_int_equal(stat(r.path, &st), 0);
    assert_true(S_ISFIFO(st.st_mode));
    /* regular files and directories are not special; a missing path is not either */
    char p[4200];
    path_of(p, sizeof p, "a.txt");
    assert_int_equal(isa_file_is_special(p), 0);
    assert_int_equal(isa_file_is_special(dir), 0);
    path_of(p, sizeof p, "missing");
    assert_int_equal(isa_file_is_special(p), 0);
    assert_int_equal(isa_file_is_special("/dev/null"), 1);
    unlink(r.path);
    assert_int_equal(temporaries(), 0);
}

/* A signal that ends the process removes the temporaries of files being written and the paths
 * added to the list, in that process only: a forked child's signal leaves its parent's be. */
static void test_signal_removes_pending(void **state)
{
    (void)state;
    char target[4200], stale[4200], parents[4200];
    path_of(target, sizeof target, "sig.out");
    path_of(stale, sizeof stale, "stale.out");
    path_of(parents, sizeof parents, "parent.out");
    assert_int_equal(isa_file_write(stale, "old\n", 4), 0);
    isa_file_out_t mine;
    assert_int_equal(isa_file_begin(&mine, parents), 0);
    assert_int_equal(temporaries(), 1);
    int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof sigs / sizeof *sigs; i++) {
        assert_int_equal(isa_file_write(stale, "old\n", 4), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            isa_file_out_t o;
            if (isa_file_begin(&o, target) || fputs("partial", o.f) < 0 || fflush(o.f))
                _exit(100);
            if (isa_file_pending_add(stale) < 0)
                _exit(101);
            raise(sigs[i]);
            _exit(102); /* not reached: the signal ends the child */
        }
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (!WIFSIGNALED(status) || WTERMSIG(status) != sigs[i])
            fail_msg("signal %d: child status 0x%x", sigs[i], status);
        struct stat st;
        assert_int_not_equal(stat(stale, &st), 0); /* the stale output went */
        assert_int_not_equal(stat(target, &st), 0);
        assert_int_equal(temporaries(), 1);        /* the parent's own temporary stays */
    }
    assert_int_equal(fputs("whole\n", mine.f) >= 0, 1);
    assert_int_equal(isa_file_commit(&mine, 1), 0);
    assert_int_equal(temporaries(), 0);
    char *text = slurp(parents);
    assert_string_equal(text, "whole\n");
    free(text);
    /* a committed file leaves the list: a later signal does not remove it */
    pid_t pid = fork();
    if (pid == 0) {
        raise(SIGTERM);
        _exit(102);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    struct stat st;
    assert_int_equal(stat(parents, &st), 0);
}

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "%s", tu_tmpdir());
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_and_replaced),
        cmocka_unit_test(test_failures_leave_the_target),
        cmocka_unit_test(test_special_written_in_place),
        cmocka_unit_test(test_signal_removes_pending),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
