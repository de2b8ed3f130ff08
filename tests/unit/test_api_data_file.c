/*
 * test_api_data_file.c -- ncsim_read_data_file through include/ncsim.h alone (no internal
 * header): a good file (bytes and length exact, NUL after them, an empty file), and every
 * kind of path docs/security.md says a data file may not be -- a FIFO (refused at once, not
 * blocking), a character device, a directory, a file over the bound, a missing file, a
 * symbolic link with NCSIM_READ_NO_SYMLINK (followed without it) -- each NCSIM_IO with
 * errno, the reason and the last error naming the path; bad arguments are NCSIM_USAGE.
 * And ncsim_read_file, the unchecked reader of files a user names: any stream, bytes exact,
 * a missing file and a directory NCSIM_IO with errno and the path in the last error.
 * And the list of files removed when a signal ends the process (ncsim_remove_on_signal), in a
 * child killed by SIGTERM, and ncsim_path_is_special.
 */
#include <errno.h>
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

#include "ncsim.h"

typedef struct dir {
    char root[64];
    char path[128];
} dir_t;

static const char *in_dir(dir_t *d, const char *name)
{
    snprintf(d->path, sizeof d->path, "%s/%s", d->root, name);
    return d->path;
}

static int setup(void **state)
{
    dir_t *d = calloc(1, sizeof *d);
    assert_non_null(d);
    snprintf(d->root, sizeof d->root, "/tmp/ncsim-data-file-XXXXXX");
    assert_non_null(mkdtemp(d->root));
    *state = d;
    return 0;
}

static int teardown(void **state)
{
    dir_t *d = *state;
    const char *names[] = {"good", "empty", "fifo", "big", "link", "sub"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        remove(in_dir(d, names[i]));
    rmdir(d->root);
    free(d);
    return 0;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

/* A refused path: NCSIM_IO, no data, errno E, the reason containing REASON, and the last
 * error "cannot read PATH: " followed by that reason, with the path as its file. */
static void expect_refused(const char *path, uint64_t max, unsigned flags, int e,
                           const char *reason)
{
    void *data = (void *)1;
    size_t len = 99;
    char why[256];
    errno = 0;
    assert_int_equal(ncsim_read_data_file(path, max, flags, &data, &len, why, sizeof why),
                     NCSIM_IO);
    assert_int_equal(errno, e);
    assert_null(data);
    assert_int_equal(len, 0);
    if (!strstr(why, reason))
        fail_msg("%s: reason '%s' lacks '%s'", path, why, reason);
    char expect[512];
    snprintf(expect, sizeof expect, "cannot read %s: %s", path, why);
    assert_string_equal(ncsim_last_error(), expect);
    const ncsim_error_info_t *info = ncsim_last_error_info();
    assert_int_equal(info->status, NCSIM_IO);
    assert_string_equal(info->kind, "io");
    assert_string_equal(info->file, path);
}

static void test_good_file(void **state)
{
    dir_t *d = *state;
    unsigned char bytes[3000];
    for (size_t i = 0; i < sizeof bytes; i++)
        bytes[i] = (unsigned char)(i * 7 + 1);
    bytes[100] = 0; /* a NUL inside is data like any other byte */
    write_bytes(in_dir(d, "good"), bytes, sizeof bytes);
    void *data = NULL;
    size_t len = 0;
    /* a bound equal to the size is enough */
    assert_int_equal(ncsim_read_data_file(in_dir(d, "good"), sizeof bytes, 0, &data, &len,
                                          NULL, 0),
                     NCSIM_OK);
    assert_int_equal(len, sizeof bytes);
    assert_memory_equal(data, bytes, sizeof bytes);
    assert_int_equal(((unsigned char *)data)[len], 0);
    ncsim_free(data);

    /* the same file with NCSIM_READ_NO_SYMLINK: it is no link, so it is read */
    char why[64] = "stale";
    assert_int_equal(ncsim_read_data_file(in_dir(d, "good"), 1 << 20, NCSIM_READ_NO_SYMLINK,
                                          &data, &len, why, sizeof why),
                     NCSIM_OK);
    assert_int_equal(len, sizeof bytes);
    assert_string_equal(why, "");
    ncsim_free(data);

    write_bytes(in_dir(d, "empty"), "", 0);
    assert_int_equal(ncsim_read_data_file(in_dir(d, "empty"), 0, 0, &data, &len, NULL, 0),
                     NCSIM_OK);
    assert_int_equal(len, 0);
    assert_non_null(data);
    assert_int_equal(((char *)data)[0], 0);
    ncsim_free(data);
}

static void test_fifo(void **state)
{
    dir_t *d = *state;
    assert_int_equal(mkfifo(in_dir(d, "fifo"), 0600), 0);
    /* no writer: a blocking open would hang here for ever */
    expect_refused(in_dir(d, "fifo"), 1 << 20, 0, EINVAL, "not a regular file (a FIFO)");
}

static void test_device_and_directory(void **state)
{
    dir_t *d = *state;
    expect_refused("/dev/zero", 1 << 20, 0, EINVAL, "not a regular file (a character device)");
    assert_int_equal(mkdir(in_dir(d, "sub"), 0700), 0);
    expect_refused(in_dir(d, "sub"), 1 << 20, 0, EISDIR, "not a regular file (a directory)");
}

static void test_over_size(void **state)
{
    dir_t *d = *state;
    char bytes[101];
    memset(bytes, 'x', sizeof bytes);
    write_bytes(in_dir(d, "big"), bytes, sizeof bytes);
    expect_refused(in_dir(d, "big"), 100, 0, EFBIG, "larger than 100 bytes (101)");
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(ncsim_read_data_file(in_dir(d, "big"), 101, 0, &data, &len, NULL, 0),
                     NCSIM_OK);
    assert_int_equal(len, 101);
    ncsim_free(data);
}

static void test_symlink_and_missing(void **state)
{
    dir_t *d = *state;
    write_bytes(in_dir(d, "good"), "hello", 5);
    char target[128];
    snprintf(target, sizeof target, "%s", in_dir(d, "good"));
    assert_int_equal(symlink(target, in_dir(d, "link")), 0);
    expect_refused(in_dir(d, "link"), 1 << 20, NCSIM_READ_NO_SYMLINK, ELOOP,
                   "a symbolic link, which is not followed here");
    /* without the flag the link is followed to the regular file */
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(ncsim_read_data_file(in_dir(d, "link"), 1 << 20, 0, &data, &len, NULL, 0),
                     NCSIM_OK);
    assert_int_equal(len, 5);
    assert_string_equal(data, "hello");
    ncsim_free(data);
    /* a link to a FIFO is refused for what it leads to, not followed into a block */
    remove(in_dir(d, "link"));
    assert_int_equal(mkfifo(in_dir(d, "fifo"), 0600), 0);
    snprintf(target, sizeof target, "%s", in_dir(d, "fifo"));
    assert_int_equal(symlink(target, in_dir(d, "link")), 0);
    expect_refused(in_dir(d, "link"), 1 << 20, 0, EINVAL, "a FIFO");

    expect_refused(in_dir(d, "missing"), 1 << 20, 0, ENOENT, strerror(ENOENT));
}

static void test_bad_arguments(void **state)
{
    (void)state;
    void *data = NULL;
    size_t len = 0;
    assert_int_equal(ncsim_read_data_file(NULL, 1, 0, &data, &len, NULL, 0), NCSIM_USAGE);
    assert_int_equal(ncsim_read_data_file("/etc/hostname", 1, 0, NULL, &len, NULL, 0),
                     NCSIM_USAGE);
    assert_int_equal(ncsim_read_data_file("/etc/hostname", 1, 0, &data, NULL, NULL, 0),
                     NCSIM_USAGE);
    assert_int_equal(ncsim_read_data_file("/etc/hostname", 1, 4, &data, &len, NULL, 0),
                     NCSIM_USAGE);
    assert_non_null(strstr(ncsim_last_error(), "unknown flags 0x4"));
    assert_null(data);
}

static void test_read_file(void **state)
{
    dir_t *d = *state;
    static const char bytes[] = {'a', 0, 'b', '\n'};
    write_bytes(in_dir(d, "good"), bytes, sizeof bytes);
    void *data = NULL;
    size_t len = 99;
    assert_int_equal(ncsim_read_file(in_dir(d, "good"), &data, &len), NCSIM_OK);
    assert_int_equal(len, sizeof bytes);
    assert_memory_equal(data, bytes, sizeof bytes);
    assert_int_equal(((char *)data)[len], 0);
    ncsim_free(data);

    data = (void *)1;
    errno = 0;
    assert_int_equal(ncsim_read_file(in_dir(d, "missing"), &data, &len), NCSIM_IO);
    assert_int_equal(errno, ENOENT);
    assert_null(data);
    assert_int_equal(len, 0);
    assert_non_null(strstr(ncsim_last_error(), "missing"));

    assert_int_equal(mkdir(in_dir(d, "sub"), 0700), 0);
    errno = 0;
    assert_int_equal(ncsim_read_file(in_dir(d, "sub"), &data, &len), NCSIM_IO);
    assert_int_equal(errno, EISDIR);
    assert_null(data);

    assert_int_equal(ncsim_read_file(NULL, &data, &len), NCSIM_USAGE);
    assert_int_equal(ncsim_read_file("/etc/hostname", NULL, &len), NCSIM_USAGE);
    assert_int_equal(ncsim_read_file("/etc/hostname", &data, NULL), NCSIM_USAGE);
}

/* A child lists "good" (and cancels it when `cancel`), then dies of SIGTERM. */
static void signal_child(dir_t *d, int cancel)
{
    write_bytes(in_dir(d, "good"), "x", 1);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int n = ncsim_remove_on_signal(in_dir(d, "good"));
        if (n < 0)
            _exit(3);
        if (cancel)
            ncsim_remove_on_signal_cancel(n);
        raise(SIGTERM);
        _exit(4); /* not reached: the default action ends the process */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGTERM);
}

static void test_remove_on_signal(void **state)
{
    dir_t *d = *state;
    struct stat st;
    signal_child(d, 0);
    assert_int_equal(stat(in_dir(d, "good"), &st), -1);
    signal_child(d, 1);
    assert_int_equal(stat(in_dir(d, "good"), &st), 0);
    assert_int_equal(ncsim_remove_on_signal(NULL), -1);
    ncsim_remove_on_signal_cancel(-1);

    assert_int_equal(ncsim_path_is_special("/dev/null"), 1);
    assert_int_equal(ncsim_path_is_special(in_dir(d, "good")), 0);
    assert_int_equal(ncsim_path_is_special(d->root), 0);
    assert_int_equal(ncsim_path_is_special(in_dir(d, "missing")), 0);
    assert_int_equal(ncsim_path_is_special(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_good_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fifo, setup, teardown),
        cmocka_unit_test_setup_teardown(test_device_and_directory, setup, teardown),
        cmocka_unit_test_setup_teardown(test_over_size, setup, teardown),
        cmocka_unit_test_setup_teardown(test_symlink_and_missing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_remove_on_signal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
