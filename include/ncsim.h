/*
 * ncsim.h -- the public C API of libncsim (docs/api.md).
 *
 * Assemble NCA text or load .ncx programs, pick an architecture, simulate with real numerics
 * and engine-level timing, read any tensor afterwards, get statistics, traces and the checker's
 * findings. Everything is reached through opaque handles; no internal type appears here.
 *
 * Conventions
 *   - Every call that can fail returns an ncsim_status_t. On failure the message of the error
 *     (naming file, line and instruction where there is one) is kept per thread:
 *     ncsim_last_error() and ncsim_last_error_info(). A successful call does not clear it.
 *   - Strings and buffers the library allocates for the caller (char **out) are freed with
 *     ncsim_free().
 *   - Times are in nanoseconds (double).
 *
 * Thread safety
 *   Handles are independent: several simulators (and programs, architectures) may be used at
 *   once from different threads, one thread per handle at a time. A program may be shared by
 *   several simulators, read-only, from several threads. ncsim_sim_cancel() is the one call
 *   that may be made on a simulator from another thread (or a signal handler) while it runs.
 *   The last-error message is thread-local.
 *
 * Depends on the C standard library only (stddef.h, stdint.h, stdio.h).
 */
#ifndef NCSIM_H
#define NCSIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define NCSIM_API __attribute__((visibility("default")))
#else
#define NCSIM_API
#endif

/* ---- Version ------------------------------------------------------------------------------- */

#define NCSIM_VERSION_MAJOR 0
#define NCSIM_VERSION_MINOR 2
#define NCSIM_VERSION_PATCH 0
/* One number for compile-time tests: 10000 * major + 100 * minor + patch. */
#define NCSIM_VERSION_NUMBER                                                                   \
    (NCSIM_VERSION_MAJOR * 10000 + NCSIM_VERSION_MINOR * 100 + NCSIM_VERSION_PATCH)

/* "MAJOR.MINOR.PATCH" of the library actually loaded (may differ from the header's macros). */
NCSIM_API const char *ncsim_version(void);
/* NCSIM_VERSION_NUMBER of the library actually loaded. */
NCSIM_API int ncsim_version_number(void);

/* ---- Status --------------------------------------------------------------------------------- */

/* XX(NAME, exit code of the ncsim command, description). The one table of statuses: the
 * command line exits with the code of the status that ended it. */
#define NCSIM_STATUS_MAP(XX)                                                                   \
    XX(OK, 0, "success")                                                                       \
    XX(PROGRAM, 1, "the program is wrong (run-time error, deadlock or check finding)")         \
    XX(USAGE, 2, "usage error")                                                                \
    XX(ASSEMBLY, 2, "assembly error")                                                          \
    XX(IO, 3, "input/output error")                                                            \
    XX(FORMAT, 3, "corrupt or unsupported input file")                                         \
    XX(NOMEM, 4, "out of memory")                                                              \
    XX(INTERNAL, 4, "internal error")                                                          \
    XX(CANCELLED, 130, "the run was cancelled")

typedef enum ncsim_status {
#define XX(name, code, text) NCSIM_##name,
    NCSIM_STATUS_MAP(XX)
#undef XX
        NCSIM_STATUS_COUNT
} ncsim_status_t;

/* Process exit code for a status (the ncsim command's). */
NCSIM_API int ncsim_status_exit_code(ncsim_status_t status);
/* Short English description of a status; "unknown status" when out of range. */
NCSIM_API const char *ncsim_status_text(ncsim_status_t status);
/* Short name: "OK", "PROGRAM", "USAGE", ... */
NCSIM_API const char *ncsim_status_name(ncsim_status_t status);

/* Where an error happened, as far as it is known. Fields that do not apply are empty strings,
 * 0 (line, column) or -1 (core, engine, instruction). */
typedef struct ncsim_error_info {
    ncsim_status_t status;
    const char *message;  /* the whole message, possibly several lines */
    const char *kind;     /* "assembly", "format", "runtime", "deadlock", "input", "config",
                           * "io", "usage", "memory", "cancelled", "check" or "" */
    const char *file;     /* source or input file */
    uint32_t line, column;
    int32_t core;
    int32_t engine;       /* ncsim_engine_t */
    int64_t instruction;  /* index in the engine's instruction stream */
} ncsim_error_info_t;

/* The message of the last failed call in this thread ("" when none). Valid until the next
 * failing call in this thread. */
NCSIM_API const char *ncsim_last_error(void);
/* The same, with its location. Never NULL. */
NCSIM_API const ncsim_error_info_t *ncsim_last_error_info(void);

/* Free anything the library returned through a `char **` or `void **` out-parameter. */
NCSIM_API void ncsim_free(void *p);

/* Write a whole file the way the library writes every output: under a temporary name beside
 * PATH, renamed over it once complete, so a reader never sees a partial file; on failure (a
 * full disk) nothing is left, and a signal whose action is the default one removes the
 * temporary. "-" is stdout; an existing device or FIFO (/dev/null) is written in place.
 * NCSIM_IO (errno kept) when it cannot be written. */
NCSIM_API ncsim_status_t ncsim_write_file(const char *path, const void *data, size_t len);

/* Read a whole file the way the library reads a program: PATH ("-": stdin), any readable
 * stream, at most 1 GiB (a device such as /dev/zero or a mistaken path stops there, EFBIG).
 * On success *DATA (NUL-terminated; free with ncsim_free) and *LEN (without the NUL).
 * Otherwise *DATA is NULL and NCSIM_IO with errno kept (ENOENT, EISDIR, EFBIG, ENOMEM, ...)
 * and the last error "cannot read PATH: REASON"; NCSIM_USAGE for a NULL argument. For a path
 * that came from data, use ncsim_read_data_file, which also refuses devices, FIFOs and links. */
NCSIM_API ncsim_status_t ncsim_read_file(const char *path, void **data, size_t *len);

/* The files the library removes when a signal ends the process (its own temporaries are in
 * this list until committed). A client that writes an output in several steps (a temporary it
 * renames later, a target it must not leave half made) adds them: on SIGHUP, SIGINT, SIGQUIT,
 * SIGTERM, SIGPIPE, SIGALRM, SIGUSR1/2, SIGXCPU or SIGXFSZ whose action is still the default
 * one (a host's own handler, Python's SIGINT, or an ignored signal is left alone), every listed
 * file is removed and the process ends by the same signal. Thread-safe. ncsim_remove_on_signal
 * copies PATH and returns the entry's number, or -1 when the list is full (the file is then
 * not removed); ncsim_remove_on_signal_cancel takes entry N out (N < 0: nothing), leaving the
 * file alone. */
NCSIM_API int ncsim_remove_on_signal(const char *path);
NCSIM_API void ncsim_remove_on_signal_cancel(int n);

/* 1 when PATH exists and is neither a regular file nor a directory (/dev/null, a FIFO): such a
 * target is written where it is, never replaced by renaming a temporary over it. */
NCSIM_API int ncsim_path_is_special(const char *path);

/* ncsim_read_data_file's flags. */
#define NCSIM_READ_NO_SYMLINK 1u /* refuse PATH when it is a symbolic link */

/*
 * Read a whole file whose name came from data (a path in a sweep spec, a point file in a
 * shared folder) with the checks docs/security.md relies on: the file is opened without
 * blocking and the open descriptor is checked, so only a regular file of at most MAX_BYTES is
 * read, never a device (/dev/zero), a FIFO, a socket or a directory, and with
 * NCSIM_READ_NO_SYMLINK never through a symbolic link. On success *DATA (NUL-terminated, so a
 * text may be parsed as a string; free with ncsim_free) and *LEN (without the NUL). Otherwise
 * *DATA is NULL, NCSIM_IO with errno kept (ENOENT, EISDIR, EINVAL for another kind of file,
 * EFBIG, ELOOP for a refused link), the last error "cannot read PATH: WHY" and, when WHY is
 * not NULL, the reason alone in it (for a caller that words its own message); NCSIM_USAGE
 * for a NULL argument or an unknown flag.
 */
NCSIM_API ncsim_status_t ncsim_read_data_file(const char *path, uint64_t max_bytes,
                                              unsigned flags, void **data, size_t *len,
                                              char *why, size_t whylen);

/* ---- Names ------------------------------------------------------------------------------------ */

/* Element types of tensors, in the .ncx numbering. */
typedef enum ncsim_dtype {
    NCSIM_FP32, NCSIM_FP16, NCSIM_BF16, NCSIM_TF32, NCSIM_FP8E4, NCSIM_FP8E5, NCSIM_FP8E3,
    NCSIM_I8, NCSIM_U8, NCSIM_I16, NCSIM_U16, NCSIM_I32, NCSIM_U32,
    NCSIM_DTYPE_COUNT
} ncsim_dtype_t;

typedef enum ncsim_memory { NCSIM_SBUF, NCSIM_PSUM, NCSIM_HBM, NCSIM_MEMORY_COUNT } ncsim_memory_t;

typedef enum ncsim_role {
    NCSIM_INPUT, NCSIM_OUTPUT, NCSIM_INOUT, NCSIM_SCRATCH,
    NCSIM_LOCAL, /* an SBUF or PSUM tensor */
    NCSIM_ROLE_COUNT
} ncsim_role_t;

typedef enum ncsim_engine {
    NCSIM_PE, NCSIM_ACT, NCSIM_DVE, NCSIM_POOL, NCSIM_SP, NCSIM_CC, NCSIM_ENGINE_COUNT
} ncsim_engine_t;

/* "fp32", "bf16", ...; "sbuf", "psum", "hbm"; "input", ..., "local"; "pe", "act", ... */
NCSIM_API const char *ncsim_dtype_name(ncsim_dtype_t dtype);
NCSIM_API size_t ncsim_dtype_size(ncsim_dtype_t dtype); /* bytes per element, 0 if unknown */
NCSIM_API const char *ncsim_memory_name(ncsim_memory_t memory);
NCSIM_API const char *ncsim_role_name(ncsim_role_t role);
NCSIM_API const char *ncsim_engine_name(ncsim_engine_t engine);
/* Instruction opcodes: the number of a mnemonic ("matmul", "activate", "dma", ...), -1 when
 * there is no such instruction; and back (NULL out of range). The numbering is the
 * instruction set's own (isa/ops.def) and may change between versions: look names up. */
NCSIM_API int32_t ncsim_opcode(const char *mnemonic);
NCSIM_API const char *ncsim_opcode_name(int32_t opcode);

/* ---- Architecture ------------------------------------------------------------------------------ */

typedef struct ncsim_arch ncsim_arch_t;

/* Built-in preset names, index 0, 1, ... until NULL. */
NCSIM_API const char *ncsim_preset_name(size_t index);
/* A preset by name ("trn1", "inf2", ...) or a JSON config file (a name containing '/' or
 * ending in ".json"). */
NCSIM_API ncsim_status_t ncsim_arch_load(const char *name_or_path, ncsim_arch_t **out);
/* A config from JSON text (the schema of the presets; "base": "trn1" may give only the keys it
 * changes). `name` is used in messages and may be NULL. */
NCSIM_API ncsim_status_t ncsim_arch_from_json(const char *json, size_t len, const char *name,
                                              ncsim_arch_t **out);
/* One override like the command line's --set: "hbm.bandwidth_gbps=1640". */
NCSIM_API ncsim_status_t ncsim_arch_set(ncsim_arch_t *arch, const char *assignment);
/* Check consistency (NCSIM_USAGE with a message naming the key). */
NCSIM_API ncsim_status_t ncsim_arch_validate(const ncsim_arch_t *arch);
/* The resolved config as JSON text (every key). */
NCSIM_API ncsim_status_t ncsim_arch_to_json(const ncsim_arch_t *arch, char **json);
/* One value as text, e.g. key "hbm.bandwidth_gbps". */
NCSIM_API ncsim_status_t ncsim_arch_get(const ncsim_arch_t *arch, const char *key, char **value);
NCSIM_API ncsim_status_t ncsim_arch_copy(const ncsim_arch_t *arch, ncsim_arch_t **out);
/* 1 when a program assembled or loaded for one architecture is the same program for the
 * other: the memory sizes the assembler checks against (partitions, SBUF, PSUM and its banks,
 * HBM) are equal; 0 otherwise. A sweep or a validation assembles its program once per
 * distinct memory layout, not once per configuration. */
NCSIM_API int ncsim_arch_same_memory(const ncsim_arch_t *a, const ncsim_arch_t *b);
NCSIM_API void ncsim_arch_free(ncsim_arch_t *arch);

/* ---- Programs -------------------------------------------------------------------------------- */

typedef struct ncsim_program ncsim_program_t;

/* Assemble `len` bytes of NCA text. `name` names the source in messages and traces (NULL:
 * "<string>"). `arch` gives the memory sizes to check against; NULL uses the program's own
 * `.arch` directive, else trn1. Errors: NCSIM_ASSEMBLY (every diagnostic in the message, the
 * first one's file, line and column in the error info). */
NCSIM_API ncsim_status_t ncsim_assemble(const char *text, size_t len, const char *name,
                                        const ncsim_arch_t *arch, ncsim_program_t **out);
/* Read a program file: NCA text is assembled, a .ncx binary is loaded and checked. */
NCSIM_API ncsim_status_t ncsim_program_load_file(const char *path, const ncsim_arch_t *arch,
                                                 ncsim_program_t **out);
/* The same, stopping after `max_errors` errors (0: the default, 50) with a last line "note:
 * too many errors, stopping" in the message. `ncsim sweep` keeps its reports to 20. */
NCSIM_API ncsim_status_t ncsim_program_load_file_max_errors(const char *path,
                                                            const ncsim_arch_t *arch,
                                                            unsigned max_errors,
                                                            ncsim_program_t **out);
/* A .ncx image in memory (NCSIM_FORMAT when corrupt). */
NCSIM_API ncsim_status_t ncsim_program_load(const void *bytes, size_t len, const char *name,
                                            const ncsim_arch_t *arch, ncsim_program_t **out);
/* The .ncx image of a program (free with ncsim_free). */
NCSIM_API ncsim_status_t ncsim_program_save(const ncsim_program_t *prog, void **bytes,
                                            size_t *len);
NCSIM_API ncsim_status_t ncsim_program_save_file(const ncsim_program_t *prog, const char *path);
/* NCA text that assembles back to the same program. */
NCSIM_API ncsim_status_t ncsim_program_disassemble(const ncsim_program_t *prog, char **text);
NCSIM_API void ncsim_program_free(ncsim_program_t *prog);

/* The `.arch` the program names ("" when none); chips it uses; instructions in all streams. */
NCSIM_API const char *ncsim_program_arch(const ncsim_program_t *prog);
NCSIM_API uint32_t ncsim_program_chips(const ncsim_program_t *prog);
/* NeuronCores of the chips it uses (two per chip). */
NCSIM_API uint32_t ncsim_program_cores(const ncsim_program_t *prog);
NCSIM_API uint64_t ncsim_program_instructions(const ncsim_program_t *prog);

#define NCSIM_MAX_DIMS 6

/* A declared tensor. SBUF/PSUM tensors have the partition dimension first. */
typedef struct ncsim_tensor_info {
    const char *name;     /* valid while the program lives */
    ncsim_memory_t memory;
    ncsim_dtype_t dtype;
    ncsim_role_t role;
    uint32_t ndim;
    uint64_t shape[NCSIM_MAX_DIMS];
    int32_t core;         /* SBUF/PSUM: owning core, -1 for every core; HBM: -1 */
    int32_t chip;         /* HBM: the chip; -1 otherwise */
    uint64_t elements;
} ncsim_tensor_info_t;

NCSIM_API uint32_t ncsim_program_tensor_count(const ncsim_program_t *prog);
NCSIM_API ncsim_status_t ncsim_program_tensor(const ncsim_program_t *prog, uint32_t index,
                                              ncsim_tensor_info_t *info);
/* Index of the tensor named `name` (the first one with that name), or -1. */
NCSIM_API int32_t ncsim_program_find_tensor(const ncsim_program_t *prog, const char *name);
/* Instructions (in all streams) that come from source line `line`. */
NCSIM_API uint64_t ncsim_program_line_instructions(const ncsim_program_t *prog, uint32_t line);
/* Host seconds ncsim_program_load_file spent reading (and assembling) the program; 0 for
 * other programs. Shown by ncsim_sim_print_summary. */
NCSIM_API double ncsim_program_load_seconds(const ncsim_program_t *prog);

/* ---- Simulators ------------------------------------------------------------------------------ */

typedef struct ncsim_sim ncsim_sim_t;

/* Checks of the checker (docs/check.md), as a mask for ncsim_options_t.checks. */
#define NCSIM_CHECK_RACES 0x01u
#define NCSIM_CHECK_UNINIT 0x02u
#define NCSIM_CHECK_NAN 0x04u
#define NCSIM_CHECK_PSUM 0x08u
#define NCSIM_CHECK_SEMS 0x10u
#define NCSIM_CHECK_ALL 0x1fu

/* Options of a simulator. Zero them (or use ncsim_options_init) and set what you need; new
 * fields are only ever added at the end. */
typedef struct ncsim_options {
    int timing_only;            /* model time only, skip the arithmetic */
    int stochastic_rounding;    /* round by the seeded stochastic rule */
    uint64_t seed;              /* for stochastic rounding and dropout */
    unsigned checks;            /* NCSIM_CHECK_* mask, 0: no checker */
    const char *trace_path;     /* .json, .json.gz or .pftrace; NULL: no trace */
    double trace_start_ns;      /* keep what ends at or after this time (0: from the start) */
    double trace_end_ns;        /* keep what starts at or before this time (0: to the end) */
    const char *trace_engines;  /* "pe,act,dma": tracks to keep; NULL: all */
    const char *program_name;   /* recorded in traces and statistics (NULL: the source name) */
} ncsim_options_t;

NCSIM_API void ncsim_options_init(ncsim_options_t *opt);
/* "races,uninit" or "all" -> NCSIM_CHECK_* mask (NCSIM_USAGE on an unknown name). */
NCSIM_API ncsim_status_t ncsim_parse_checks(const char *list, unsigned *mask);
/* Check a list of trace tracks, "pe,act,dma" (ncsim_options_t.trace_engines): NCSIM_USAGE
 * naming the unknown one. */
NCSIM_API ncsim_status_t ncsim_parse_trace_engines(const char *list);

/* A simulator for `prog` on `arch` (NULL: the program's `.arch`, else trn1). The architecture
 * is copied (validated, and grown to the program's chips is not done: it must fit). The
 * program must outlive the simulator. opt may be NULL. The trace file, when asked for, is
 * created here. */
NCSIM_API ncsim_status_t ncsim_sim_create(const ncsim_program_t *prog, const ncsim_arch_t *arch,
                                          const ncsim_options_t *opt, ncsim_sim_t **out);
/* Finishes the trace file (if still open) and frees everything. NULL is fine. */
NCSIM_API void ncsim_sim_free(ncsim_sim_t *sim);

/* ---- Tensor data ---- */

/* Element types of host buffers. */
typedef enum ncsim_host_type {
    NCSIM_HOST_F32, /* float values: converted to the tensor's type (floats round to nearest
                     * even; integer tensors take integral values in range) */
    NCSIM_HOST_RAW, /* the tensor's own bits: 2 bytes per bf16/fp16, 1 per fp8, ... */
    NCSIM_HOST_TYPE_COUNT
} ncsim_host_type_t;

/*
 * Write a tensor from host memory. `shape` must equal the tensor's shape (ndim dims);
 * `byte_strides` gives the distance in bytes between neighbours along each dim (NULL:
 * C-contiguous), so Fortran-order and sliced arrays are read in place. `core` chooses the core
 * of an SBUF/PSUM tensor declared for every core (-1: the tensor's own, or core 0); HBM
 * tensors ignore it. Writing an input marks it bound. Not in timing-only runs.
 */
NCSIM_API ncsim_status_t ncsim_sim_write_tensor(ncsim_sim_t *sim, uint32_t tensor, int32_t core,
                                                ncsim_host_type_t type, const void *data,
                                                uint32_t ndim, const uint64_t *shape,
                                                const int64_t *byte_strides);
/* Read a tensor into `out` (C order, `out_bytes` at least elements * 4 for F32 or elements *
 * dtype size for RAW). Any tensor: HBM (input, output, inout, scratch), SBUF, PSUM. */
NCSIM_API ncsim_status_t ncsim_sim_read_tensor(ncsim_sim_t *sim, uint32_t tensor, int32_t core,
                                               ncsim_host_type_t type, void *out,
                                               size_t out_bytes);
/* Bind an input from a .npy file (the type and shape rules of `ncsim run --in`). */
NCSIM_API ncsim_status_t ncsim_sim_load_npy(ncsim_sim_t *sim, uint32_t tensor, const char *path);
/* The same from a .npy image in memory (what numpy.save writes); `name` stands for the file
 * in messages (NULL: "<memory>"). The Python package binds its arrays through it, so an array
 * and a file meet the same checks, messages and statuses. */
NCSIM_API ncsim_status_t ncsim_sim_load_npy_bytes(ncsim_sim_t *sim, uint32_t tensor,
                                                  const void *bytes, size_t len,
                                                  const char *name);
/* Read and parse a .npy file as ncsim_sim_load_npy does, binding nothing: NCSIM_OK when it
 * is a .npy file the simulator reads; else NCSIM_IO (NCSIM_NOMEM) with the same message
 * ncsim_sim_load_npy would give. Checks inputs once before many runs use them. */
NCSIM_API ncsim_status_t ncsim_npy_check_file(const char *path);
/* Write an HBM tensor to a .npy file (the rules of `ncsim run --out`). */
NCSIM_API ncsim_status_t ncsim_sim_save_npy(ncsim_sim_t *sim, uint32_t tensor, const char *path);
/* Fill one tensor with seeded uniform values in [-1, 1) (the values of --random-inputs). */
NCSIM_API ncsim_status_t ncsim_sim_fill_random(ncsim_sim_t *sim, uint32_t tensor, uint64_t seed);
/* Fill every inout HBM tensor and every input HBM tensor some instruction reads, not yet
 * bound, as `ncsim run --random-inputs SEED` (an input nothing reads stays unfilled: it costs
 * no host memory). NCSIM_NOMEM, before allocating, when the values cannot fit in this host's
 * memory. */
NCSIM_API ncsim_status_t ncsim_sim_random_inputs(ncsim_sim_t *sim, uint64_t seed);
/* Write any tensor (HBM of any role, SBUF or PSUM of core `core`; -1: the tensor's own core,
 * or 0) to a .npy file, in its own NumPy type where there is one, else float32 (the rules of
 * `ncsim run --dump`). NCSIM_IO when the file cannot be written. */
NCSIM_API ncsim_status_t ncsim_sim_dump_npy(ncsim_sim_t *sim, uint32_t tensor, int32_t core,
                                            const char *path);

/* Notes on inputs (data of another type converted to the tensor's, as ncsim_sim_load_npy
 * does), one line each without a newline, to `fn`; NULL: not reported (the default). */
NCSIM_API void ncsim_sim_set_notes(ncsim_sim_t *sim, void (*fn)(void *ctx, const char *note),
                                   void *ctx);
/* Before the run: call `fn` each time an instruction (or a DMA transfer, or a collective) of
 * source line `line` that writes memory has taken effect on core `core` (an ldweights does
 * not count: it writes no memory). Inside it ncsim_sim_dump_npy and ncsim_sim_read_tensor
 * see the state that instruction left (`ncsim run --dump-at`, docs/explain.md); the
 * simulator must not be run from it. NCSIM_USAGE once the run has started or when no
 * instruction comes from `line`. line 0 or fn NULL: no callback. */
NCSIM_API ncsim_status_t ncsim_sim_set_line_hook(ncsim_sim_t *sim, uint32_t line,
                                                 void (*fn)(void *ctx, ncsim_sim_t *sim,
                                                            uint32_t core),
                                                 void *ctx);

/* ---- Running ---- */

typedef struct ncsim_progress {
    double now_ns;           /* simulated time so far */
    uint64_t instructions;   /* started so far */
    uint64_t total_instructions;
    double host_seconds;     /* wall time since the run began */
} ncsim_progress_t;

/* Called between slices of a run, about every `interval_seconds` of host time. Return nonzero
 * to cancel the run (NCSIM_CANCELLED). */
typedef int (*ncsim_progress_fn)(void *ctx, const ncsim_progress_t *progress);
NCSIM_API void ncsim_sim_set_progress(ncsim_sim_t *sim, ncsim_progress_fn fn, void *ctx,
                                      double interval_seconds);
/* Ask a running simulator to stop at its next slice (async-signal-safe, any thread). */
NCSIM_API void ncsim_sim_cancel(ncsim_sim_t *sim);

/*
 * Run to the end. Every input must be bound (or the run is timing-only). NCSIM_PROGRAM on a
 * run-time error or deadlock (ncsim_sim_error; the error info names core, engine, instruction
 * and line), NCSIM_CANCELLED when cancelled (the run may continue with another call).
 * Checker findings do not fail the run: read them with ncsim_sim_finding*.
 */
NCSIM_API ncsim_status_t ncsim_sim_run(ncsim_sim_t *sim);
/* Process events up to simulated time `time_ns` (or the end). */
NCSIM_API ncsim_status_t ncsim_sim_run_until(ncsim_sim_t *sim, double time_ns);
/* Process one event. */
NCSIM_API ncsim_status_t ncsim_sim_step(ncsim_sim_t *sim);
NCSIM_API int ncsim_sim_finished(const ncsim_sim_t *sim);
NCSIM_API double ncsim_sim_now_ns(const ncsim_sim_t *sim);
/* The run-time error or deadlock report of this simulator ("" when none). */
NCSIM_API const char *ncsim_sim_error(const ncsim_sim_t *sim);
/* Finish the trace file now (also done by ncsim_sim_free); NCSIM_IO when writing failed. */
NCSIM_API ncsim_status_t ncsim_sim_close_trace(ncsim_sim_t *sim);

/* ---- Records of a run ---- */

/* What ran, as it completes, for figures the statistics do not hold (mean durations of one
 * kind of instruction, intervals, transfer times). Times are picoseconds, the simulator's own
 * exact clock (integers: sums and differences stay exact). */
typedef struct ncsim_instruction_record {
    uint32_t core;
    int32_t engine;        /* ncsim_engine_t */
    uint32_t index;        /* in the engine's instruction stream */
    int32_t opcode;        /* ncsim_opcode_name(); -1 when the record has no instruction */
    uint32_t line;         /* source line, 0 when unknown */
    uint64_t ready_ps;     /* when it could have started but for waits, ports, interlock */
    uint64_t start_ps;
    uint64_t end_ps;       /* completion */
} ncsim_instruction_record_t;

/* One transfer of a dma instruction on one DMA queue: issued, data moving from start_ps,
 * landed at end_ps. */
typedef struct ncsim_transfer_record {
    uint32_t core;
    uint32_t queue;
    int32_t engine;        /* the engine that issued the dma instruction */
    uint32_t index;        /* the dma instruction's index in that engine's stream */
    uint32_t line;
    uint64_t issue_ps, start_ps, end_ps;
    uint64_t bytes;
} ncsim_transfer_record_t;

/* Zero them and set what you need; new fields are only ever added at the end. */
typedef struct ncsim_record_hooks {
    void *ctx;
    void (*instruction)(void *ctx, const ncsim_instruction_record_t *record);
    void (*transfer)(void *ctx, const ncsim_transfer_record_t *record);
} ncsim_record_hooks_t;

/* Before the run: call the hooks (either may be NULL) for every instruction and transfer as
 * it completes, in simulated-time order per engine. They are called alongside the trace file
 * (options.trace_path) when there is one, and add no cost to runs without them. NULL: none.
 * NCSIM_USAGE once the run has started. */
NCSIM_API ncsim_status_t ncsim_sim_set_record_hooks(ncsim_sim_t *sim,
                                                    const ncsim_record_hooks_t *hooks);

/* ---- Statistics ---- */

/*
 * One counter of the statistics by name, exact (picoseconds, bytes, counts), for what the
 * summary rounds or sums: "total_ps", "instructions", "events", "tensor_flops",
 * "hbm_read_bytes", "hbm_write_bytes", "cores" (cores simulated); per core C (0 ..
 * cores - 1) "core.C.used" (1 when it ran an instruction), "core.C.end_ps",
 * "core.C.dma_transfers", "core.C.dma_bytes", "core.C.dma_busy_ps" (time with a transfer
 * moving), "core.C.hbm_read_bytes", "core.C.hbm_write_bytes"; per core C and engine E ("pe",
 * "act", ...) "core.C.E.instructions", "core.C.E.busy_ps" (sum of initiation intervals),
 * "core.C.E.active_ps", "core.C.E.stall_ps", "core.C.E.end_ps", "core.C.E.flops".
 * NCSIM_USAGE naming an unknown key or core. Final after the run; so far during it.
 */
NCSIM_API ncsim_status_t ncsim_sim_counter(ncsim_sim_t *sim, const char *key, uint64_t *value);


/* Headline figures (final after the run; so far during it). */
typedef struct ncsim_summary {
    double total_ns;
    double mfu;                       /* tensor FLOPs over the bf16 peak of the cores used */
    double hfu;                       /* the same with transposes counted */
    uint64_t instructions;
    uint64_t events;
    uint64_t tensor_flops;
    uint64_t hbm_read_bytes, hbm_write_bytes;
    uint64_t dma_bytes;
    uint32_t cores_used;
    double engine_busy_ns[NCSIM_ENGINE_COUNT];  /* summed over the cores */
    double engine_stall_ns[NCSIM_ENGINE_COUNT]; /* summed over the cores */
    double host_seconds;              /* wall time spent in the run calls */
} ncsim_summary_t;

NCSIM_API ncsim_status_t ncsim_sim_summary(ncsim_sim_t *sim, ncsim_summary_t *out);
/* Record that the caller judges the run failed, and why (the first line is kept): the
 * statistics then say "status": "error" with it. NULL: the run's own outcome again (failed
 * when it stopped on a run-time error or deadlock, with the first line of that message). */
NCSIM_API ncsim_status_t ncsim_sim_set_failure(ncsim_sim_t *sim, const char *why);
/* The statistics JSON of `ncsim run --stats` (with the resolved config). */
NCSIM_API ncsim_status_t ncsim_sim_stats_json(ncsim_sim_t *sim, char **json);
/* The human summary `ncsim run` prints. */
NCSIM_API ncsim_status_t ncsim_sim_print_summary(ncsim_sim_t *sim, FILE *out);
/* The resolved architecture of the simulator as JSON. */
NCSIM_API ncsim_status_t ncsim_sim_arch_json(const ncsim_sim_t *sim, char **json);

/* ---- Checker findings (options.checks) ---- */

typedef struct ncsim_site {
    int valid;
    uint32_t core;
    int32_t engine;        /* ncsim_engine_t */
    int32_t queue;         /* DMA queue of a transfer, -1 for the engine itself */
    uint32_t instruction;  /* index in the engine's stream */
    uint32_t line;         /* source line, 0 when unknown */
    int write;
} ncsim_site_t;

typedef struct ncsim_finding {
    const char *kind;      /* "race", "uninit", "nan", "psum-acc", "psum-open", "wait-unsat",
                            * "post-orphan", "sem-overflow" */
    const char *race;      /* "RAW", "WAR", "WAW" for races, else "" */
    const char *message;   /* the text `ncsim check` prints (several lines) */
    const char *memory;    /* "sbuf", "psum", "hbm" or "" */
    const char *tensor;    /* tensor holding the start of the range, or "" */
    uint32_t unit;         /* core (SBUF/PSUM, semaphores) or chip (HBM) */
    uint32_t partition_lo, partition_hi;
    uint64_t byte_lo, byte_hi;
    ncsim_site_t first, second; /* first: the earlier access or the instruction at fault */
    uint64_t count;        /* occurrences merged into this finding */
} ncsim_finding_t;

NCSIM_API size_t ncsim_sim_finding_count(const ncsim_sim_t *sim);
/* Strings in *out are valid until the simulator is freed. */
NCSIM_API ncsim_status_t ncsim_sim_finding(ncsim_sim_t *sim, size_t index, ncsim_finding_t *out);
/* Findings beyond the kept limit (only counted). */
NCSIM_API uint64_t ncsim_sim_findings_dropped(const ncsim_sim_t *sim);
/* The findings as the text `ncsim check` prints (at most `limit` groups, 0: all), or JSON. */
NCSIM_API ncsim_status_t ncsim_sim_findings_print(const ncsim_sim_t *sim, FILE *out, size_t limit);
NCSIM_API ncsim_status_t ncsim_sim_findings_json(const ncsim_sim_t *sim, char **json);

/* ---- Profile summary (the Neuron profiler's) ---- */

/* What ncsim_profile_summary prints. */
typedef enum ncsim_profile_format {
    NCSIM_PROFILE_SUMMARY_JSON, /* {"KEY": {field: value}}: `neuron-profile view
                                 * --output-format summary-json` */
    NCSIM_PROFILE_JSON,         /* {"summary": [{...}], "instruction": [{...}, ...]}: its
                                 * `--output-format json` (records need a trace) */
    NCSIM_PROFILE_TEXT,         /* field, value, unit per line (summary-text) */
    NCSIM_PROFILE_FORMAT_COUNT
} ncsim_profile_format_t;

/* Options of ncsim_profile_summary. Zero them (or ncsim_profile_options_init) and set what you
 * need; new fields are only ever added at the end. */
typedef struct ncsim_profile_options {
    ncsim_profile_format_t format;
    uint32_t core;              /* the NeuronCore summarised (nc_idx) */
    const char *program_path;   /* the program that ran (.nca or .ncx), for the declared tensor
                                 * sizes; NULL: those fields are left out */
    const char *key;            /* summary-json's top-level key; NULL: "ncsim" */
    int64_t spill_save_bytes;   /* the lowering's spills, when the caller knows them; -1: from
                                 * the statistics file, else 0 */
    int64_t spill_reload_bytes;
} ncsim_profile_options_t;

NCSIM_API void ncsim_profile_options_init(ncsim_profile_options_t *opt);

/* The profiler's summary of a run from `path`: a trace (ncsim_options_t.trace_path, `ncsim run
 * --trace`; every field) or a statistics file (`ncsim run --stats`; the fields its totals hold).
 * Fields have the profiler's names and units: seconds, bytes, FLOPs, cycles, `*_percent` as
 * fractions; `is_simulation` is true. docs/nki.md lists every field. Free *text with
 * ncsim_free. Errors: NCSIM_IO, NCSIM_FORMAT, NCSIM_USAGE (the core ran nothing), and the
 * program's load errors. */
/* The summary's fields, index 0, 1, ... until NULL: the key; its unit ("s", "fraction", "B",
 * "FLOP", "FLOP/B", "count", "cycles") and how ncsim computes it, when unit/text are not NULL;
 * *trace_only is 1 for fields a statistics file cannot give. Strings are static. */
NCSIM_API const char *ncsim_profile_field(size_t index, const char **unit, const char **text,
                                          int *trace_only);
NCSIM_API ncsim_status_t ncsim_profile_summary(const char *path, const ncsim_profile_options_t *opt,
                                               char **text);

/* ---- Reports ---- */

/* The report `ncsim report --json PATH` prints, for a trace (.json, .json.gz, .pftrace) or a
 * statistics file: total time, the verdict (what bounds the run) and its candidates
 * ("bounds"), engines, DMA, HBM, stalls, critical path (traces). One implementation for the
 * command line, this API and the Python package. *json is malloc'd (free with ncsim_free).
 * NCSIM_IO: unreadable; NCSIM_FORMAT: neither a trace nor a statistics file. */
NCSIM_API ncsim_status_t ncsim_report_json(const char *path, char **json);

#ifdef __cplusplus
}
#endif

#endif
