/*
 * status.h -- status codes shared by every ncsim library, and the exit codes they map to.
 *
 * Library code returns these; only the command line turns them into process exit codes
 * (shared/spec/CLI.md, "Exit codes").
 */
#ifndef NCSIM_STATUS_H
#define NCSIM_STATUS_H

/* XX(NAME, exit code, description) */
#define NCSIM_STATUS_MAP(XX)                                                                   \
    XX(OK, 0, "success")                                                                       \
    XX(PROGRAM, 1, "the program is wrong (run-time error, deadlock or check finding)")         \
    XX(USAGE, 2, "usage error")                                                                \
    XX(ASSEMBLY, 2, "assembly error")                                                          \
    XX(IO, 3, "input/output error")                                                            \
    XX(FORMAT, 3, "corrupt or unsupported input file")                                         \
    XX(NOMEM, 4, "out of memory")                                                              \
    XX(INTERNAL, 4, "internal error")

typedef enum ncsim_status {
#define XX(name, code, text) NCSIM_##name,
    NCSIM_STATUS_MAP(XX)
#undef XX
        NCSIM_STATUS_COUNT
} ncsim_status_t;

/* Process exit code for a status (CLI.md). */
int ncsim_status_exit_code(ncsim_status_t status);
/* Short English description of a status. */
const char *ncsim_status_text(ncsim_status_t status);

#endif
