/*
 * file.h -- writing a whole file so that nobody sees half of it.
 *
 * Every file ncsim writes outside the command line's own outputs (a .ncx, statistics,
 * .npy arrays, PNG plots) goes through here: the bytes go to a temporary beside the target,
 * which is renamed over it once everything was written and closed, so a reader sees the old
 * file or the new one and a failed write leaves the old one alone. A target that exists and
 * is neither a regular file nor a directory (/dev/null, a FIFO, a terminal) is written in
 * place instead: renaming over it would replace the device node with a regular file, and
 * removing it after a failure would delete the device.
 */
#ifndef NCSIM_ISA_FILE_H
#define NCSIM_ISA_FILE_H

#include <stddef.h>
#include <stdio.h>

typedef struct isa_file_out {
    FILE *f;    /* write here */
    char *tmp;  /* the temporary renamed over `path` at commit; NULL when written in place */
    char *path; /* the target (a copy) */
    int pending; /* the temporary's entry in the list removed on a signal (-1: none) */
} isa_file_out_t;

/*
 * Files removed when a signal ends the process. Every temporary of isa_file_begin is in this
 * list until it is committed or abandoned, and the command line adds the outputs it must not
 * leave behind (cli/outputs.c). The first entry installs a handler for the signals that end a
 * process by default (SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGPIPE, SIGALRM, SIGUSR1, SIGUSR2,
 * SIGXCPU, SIGXFSZ), only where the disposition is still the default one, so a host program's
 * own handler (Python's SIGINT) or an ignored signal (nohup) is left alone: the handler removes
 * every listed file, then ends the process by the same signal, as the default would have.
 * Async-signal-safe and thread-safe (a sweep writes from several threads).
 */
/* Add PATH (copied); the entry's number, or -1 when the list is full or memory is short (the
 * file is then simply not removed on a signal). */
int isa_file_pending_add(const char *path);
/* Remove entry N from the list (N < 0: nothing). The file itself is left alone. */
void isa_file_pending_remove(int n);
/* Remove every listed file now: async-signal-safe, for a signal handler of the caller's own
 * (ncsim run's, which stops the run and closes the trace, calls it on a second signal). */
void isa_file_pending_unlink_all(void);

/* 1 when PATH exists and is neither a regular file nor a directory: such a target is
 * written where it is, never renamed over or removed. */
int isa_file_is_special(const char *path);

/* Open PATH for writing (a temporary beside it, or PATH itself when isa_file_is_special).
 * 0, or -1 with errno set and nothing created. A directory is refused with EISDIR. */
int isa_file_begin(isa_file_out_t *o, const char *path);

/* Close and put in place. `ok` 0 (the caller's writes failed) aborts instead. 0, or -1 with
 * errno set; on failure the temporary is removed and the target is left as it was. */
int isa_file_commit(isa_file_out_t *o, int ok);

/* Give up: close and remove the temporary (the target is left as it was). */
void isa_file_abort(isa_file_out_t *o);

/* The whole of DATA to PATH through the above. 0, or -1 with errno set. */
int isa_file_write(const char *path, const void *data, size_t len);

/*
 * Reading a path that came from data (a trace, a statistics file, a sweep spec) rather than
 * from the user: every such open goes through isa_file_open_data. Only a regular file is
 * opened, at most MAX_BYTES long; never a device, FIFO, socket or directory, and opening never
 * blocks (O_NONBLOCK, cleared once the file is known to be regular). With
 * ISA_FILE_NO_SYMLINK a symbolic link as the last component is refused too (a link beside a
 * trace could point anywhere). The checks are made on the open descriptor (fstat), so the
 * file cannot be swapped between check and read. NULL with errno set and a one-line reason
 * in WHY ("not a regular file (a FIFO)", "larger than 64 MiB", the strerror text).
 */
#define ISA_FILE_NO_SYMLINK 1u
FILE *isa_file_open_data(const char *path, unsigned long long max_bytes, unsigned flags,
                         char *why, size_t whylen);

#endif
