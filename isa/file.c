/*
 * file.c -- whole files put in place by rename (file.h).
 */
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Temporaries are named PATH.tmp.PID.N: unique between processes by the pid and between
 * threads of one process (a sweep writes from several) by N. */
static atomic_uint file_counter;

/* ---- files removed on a signal ------------------------------------------------------------ */

/* Each slot: FREE, FILLING (a thread is storing its path), LIVE, or TAKEN (a signal handler is
 * removing it; the process ends right after). A path is freed only by the thread that moves
 * its slot from LIVE to FREE, so the handler never reads freed memory. */
enum { SLOT_FREE, SLOT_FILLING, SLOT_LIVE, SLOT_TAKEN };
#define PENDING_SLOTS 4096
static atomic_int pending_state[PENDING_SLOTS];
static char *_Atomic pending_path[PENDING_SLOTS];
static atomic_long pending_pid[PENDING_SLOTS]; /* a forked child leaves its parent's files be */
static atomic_uint pending_hint;
static pthread_once_t pending_once = PTHREAD_ONCE_INIT;
static const int pending_signals[] = {SIGHUP,  SIGINT,  SIGQUIT, SIGTERM, SIGPIPE,
                                      SIGALRM, SIGUSR1, SIGUSR2, SIGXCPU, SIGXFSZ};

void isa_file_pending_unlink_all(void)
{
    for (int i = 0; i < PENDING_SLOTS; i++) {
        int live = SLOT_LIVE;
        if (atomic_load(&pending_pid[i]) != (long)getpid())
            continue;
        if (atomic_compare_exchange_strong(&pending_state[i], &live, SLOT_TAKEN)) {
            char *p = atomic_load(&pending_path[i]);
            if (p)
                (void)unlink(p);
        }
    }
}

/* Remove the files, then end the process by the same signal, as its default action would. */
static void pending_on_signal(int sig)
{
    int saved = errno;
    isa_file_pending_unlink_all();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, sig);
    pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    raise(sig);
    errno = saved; /* a signal whose default is ignored would get here: carry on */
}

static void pending_install(void)
{
    for (size_t i = 0; i < sizeof pending_signals / sizeof *pending_signals; i++) {
        struct sigaction old, sa;
        if (sigaction(pending_signals[i], NULL, &old) != 0)
            continue;
        if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL)
            continue; /* somebody handles or ignores it: theirs */
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = pending_on_signal;
        sigfillset(&sa.sa_mask); /* no other handler in between */
        sigaction(pending_signals[i], &sa, NULL);
    }
}

int isa_file_pending_add(const char *path)
{
    pthread_once(&pending_once, pending_install);
    size_t len = strlen(path);
    char *copy = malloc(len + 1);
    if (!copy)
        return -1;
    memcpy(copy, path, len + 1);
    unsigned start = atomic_fetch_add(&pending_hint, 1u);
    for (unsigned k = 0; k < PENDING_SLOTS; k++) {
        int i = (int)((start + k) % PENDING_SLOTS), expect = SLOT_FREE;
        if (atomic_compare_exchange_strong(&pending_state[i], &expect, SLOT_FILLING)) {
            atomic_store(&pending_path[i], copy);
            atomic_store(&pending_pid[i], (long)getpid());
            atomic_store(&pending_state[i], SLOT_LIVE);
            return i;
        }
    }
    free(copy);
    return -1;
}

void isa_file_pending_remove(int n)
{
    if (n < 0 || n >= PENDING_SLOTS)
        return;
    int live = SLOT_LIVE;
    /* TAKEN: a handler is removing the files and ending the process; leave the slot be */
    if (!atomic_compare_exchange_strong(&pending_state[n], &live, SLOT_FILLING))
        return;
    char *p = atomic_exchange(&pending_path[n], NULL);
    atomic_store(&pending_state[n], SLOT_FREE);
    free(p);
}

int isa_file_is_special(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode);
}

int isa_file_begin(isa_file_out_t *o, const char *path)
{
    memset(o, 0, sizeof *o);
    o->pending = -1;
    struct stat st;
    int exists = stat(path, &st) == 0; /* one stat: a sweep writes thousands of files */
    if (exists && S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    size_t pl = strlen(path);
    if (!(o->path = malloc(pl + 1)))
        return -1;
    memcpy(o->path, path, pl + 1);
    if (exists && !S_ISREG(st.st_mode)) { /* isa_file_is_special */
        /* no O_TRUNC on a FIFO or device: it means nothing there, and fopen "wb" asks it */
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && !(o->f = fdopen(fd, "wb")))
            close(fd);
    } else if ((o->tmp = malloc(pl + 48))) {
        int fd = -1;
        for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
            snprintf(o->tmp, pl + 48, "%s.tmp.%ld.%u", path, (long)getpid(),
                     atomic_fetch_add(&file_counter, 1u));
            /* mode 0666: the file gets the permissions any new file gets (umask) */
            fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
            if (fd < 0 && errno != EEXIST)
                break;
        }
        if (fd >= 0)
            o->pending = isa_file_pending_add(o->tmp);
        if (fd >= 0 && !(o->f = fdopen(fd, "wb"))) {
            int e = errno;
            close(fd);
            unlink(o->tmp);
            isa_file_pending_remove(o->pending);
            errno = e;
        }
    }
    if (o->f)
        return 0;
    int e = errno;
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    o->pending = -1;
    errno = e;
    return -1;
}

int isa_file_commit(isa_file_out_t *o, int ok)
{
    if (!o->f) {
        errno = EBADF;
        return -1;
    }
    int e = ok ? 0 : errno ? errno : EIO; /* the caller's failed write said why */
    if (ok && ferror(o->f)) {
        ok = 0;
        e = EIO;
    }
    if (fclose(o->f) != 0 && ok) {
        ok = 0;
        e = errno;
    }
    o->f = NULL;
    if (ok && o->tmp && rename(o->tmp, o->path) != 0) {
        ok = 0;
        e = errno;
    }
    if (!ok && o->tmp)
        unlink(o->tmp);
    isa_file_pending_remove(o->pending);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
    o->pending = -1;
    errno = e;
    return ok ? 0 : -1;
}

void isa_file_abort(isa_file_out_t *o)
{
    if (o->f) {
        int e = errno;
        (void)isa_file_commit(o, 0);
        errno = e;
    }
}

int isa_file_write(const char *path, const void *data, size_t len)
{
    isa_file_out_t o;
    if (isa_file_begin(&o, path))
        return -1;
    return isa_file_commit(&o, fwrite(data, 1, len, o.f) == len);
}

/* What a file that is not regular is, for messages. */
static const char *file_kind(mode_t m)
{
    return S_ISDIR(m)    ? "a directory"
           : S_ISFIFO(m) ? "a FIFO"
           : S_ISCHR(m)  ? "a character device"
           : S_ISBLK(m)  ? "a block device"
           : S_ISSOCK(m) ? "a socket"
                         : "not a plain file";
}

FILE *isa_file_open_data(const char *path, unsigned long long max_bytes, unsigned flags, char *why,
                         size_t whylen)
{
    int oflags = O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
    if (flags & ISA_FILE_NO_SYMLINK)
        oflags |= O_NOFOLLOW;
    int fd = open(path, oflags);
    if (fd < 0) {
        int e = errno;
        if (e == ELOOP && (flags & ISA_FILE_NO_SYMLINK))
            snprintf(why, whylen, "a symbolic link, which is not followed here");
        else
            snprintf(why, whylen, "%s", strerror(e));
        errno = e;
        return NULL;
    }
    struct stat st;
    int e = 0;
    if (fstat(fd, &st) != 0) {
        e = errno;
        snprintf(why, whylen, "%s", strerror(e));
    } else if (!S_ISREG(st.st_mode)) {
        e = S_ISDIR(st.st_mode) ? EISDIR : EINVAL;
        snprintf(why, whylen, "not a regular file (%s)", file_kind(st.st_mode));
    } else if ((unsigned long long)st.st_size > max_bytes) {
        e = EFBIG;
        snprintf(why, whylen, "larger than %llu bytes (%llu)", max_bytes,
                 (unsigned long long)st.st_size);
    } else {
        int fl = fcntl(fd, F_GETFL);
        FILE *f = NULL;
        if (fl >= 0 && fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) == 0)
            f = fdopen(fd, "rb");
        if (f)
            return f;
        e = errno;
        snprintf(why, whylen, "%s", strerror(e));
    }
    close(fd);
    errno = e;
    return NULL;
}
