/*
 * npy.h -- NumPy .npy files: the tensors `ncsim run --in/--out` binds.
 *
 * Format (NumPy's format.py, NEP 1): the magic "\x93NUMPY", a major and a minor version byte,
 * a little-endian header length (u16 for 1.0, u32 for 2.0 and 3.0), then an ASCII Python dict
 * literal {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), } padded with spaces and
 * a '\n' so the data starts on a 64-byte boundary, then the elements in C order.
 *
 * Reading accepts versions 1.0, 2.0 and 3.0 and plain little-endian numeric arrays; anything
 * else (Fortran order, big-endian, object, structured, string or complex arrays, truncated or
 * oversized data) is refused with a message naming the file and the problem, never a crash.
 * Writing produces version 1.0 (2.0 only if the header could not fit) through a temporary file
 * renamed into place, so a reader never sees half a file.
 *
 * Tensor types (shared/spec/CLI.md): fp32 '<f4', fp16 '<f2', i8 '|i1', u8 '|u1', i16 '<i2',
 * u16 '<u2', i32 '<i4', u32 '<u4'. bf16, tf32 and the fp8 types have no NumPy type: they are
 * read from '<f4' (the caller rounds to nearest even) and written as '<f4' (exactly).
 */
#ifndef NCSIM_MODELS_NPY_H
#define NCSIM_MODELS_NPY_H

#include <stddef.h>
#include <stdint.h>

#include "isa.h"

#define MDL_NPY_MAX_DIMS 8

/* XX(ID, descr as NumPy writes it, bytes per element, NumPy type name) -- the element types
 * the reader accepts. 1-byte types are also accepted with a '<' or '>' byte-order mark. */
#define MDL_NPY_TYPE_MAP(XX)                                                                       \
    XX(BOOL, "|b1", 1, "bool_")                                                                    \
    XX(I1, "|i1", 1, "int8")                                                                       \
    XX(U1, "|u1", 1, "uint8")                                                                      \
    XX(I2, "<i2", 2, "int16")                                                                      \
    XX(U2, "<u2", 2, "uint16")                                                                     \
    XX(I4, "<i4", 4, "int32")                                                                      \
    XX(U4, "<u4", 4, "uint32")                                                                     \
    XX(I8, "<i8", 8, "int64")                                                                      \
    XX(U8, "<u8", 8, "uint64")                                                                     \
    XX(F2, "<f2", 2, "float16")                                                                    \
    XX(F4, "<f4", 4, "float32")                                                                    \
    XX(F8, "<f8", 8, "float64")

typedef enum mdl_npy_type {
#define XX(id, descr, size, numpy) MDL_NPY_##id,
    MDL_NPY_TYPE_MAP(XX)
#undef XX
        MDL_NPY_TYPE_COUNT
} mdl_npy_type_t;

typedef struct mdl_npy {
    mdl_npy_type_t type;
    char descr[16];    /* canonical descr of `type`, e.g. "<f4" */
    uint32_t itemsize; /* bytes per element */
    uint8_t version;   /* major format version of the file read (1, 2 or 3) */
    uint32_t ndim;     /* 0 for a scalar */
    uint64_t shape[MDL_NPY_MAX_DIMS];
    uint64_t count; /* elements: product of shape (1 for a scalar) */
    void *data;     /* count * itemsize bytes, little-endian, C order; never NULL */
    size_t nbytes;
    uint8_t fortran, swap; /* while reading: the file's order and byte order (then 0) */
} mdl_npy_t;

/*
 * Read a .npy file. On success fills *out (free with mdl_npy_free). On failure *out is
 * zeroed and err says why: NCSIM_IO when the file cannot be opened or read, NCSIM_FORMAT when
 * it is not a supported .npy file, NCSIM_NOMEM when the data does not fit in memory.
 */
ncsim_status_t mdl_npy_read(const char *path, mdl_npy_t *out, char *err, size_t errlen);
/* The same from bytes in memory; `name` is used in messages. The data is copied. */
ncsim_status_t mdl_npy_parse(const void *bytes, size_t len, const char *name, mdl_npy_t *out,
                             char *err, size_t errlen);
void mdl_npy_free(mdl_npy_t *a);

/*
 * Write `data` (product of shape elements of `descr`, C order, little-endian) to `path`
 * atomically. `descr` is one of the descrs above ('<i1' and '|i1' are both fine). ndim 0
 * writes a scalar. NCSIM_USAGE for a bad descr or ndim, NCSIM_IO when the file cannot be
 * written (nothing is left behind).
 */
ncsim_status_t mdl_npy_write(const char *path, const char *descr, const uint64_t *shape,
                             uint32_t ndim, const void *data, char *err, size_t errlen);

/*
 * Conversions on input (docs/cli.md, "NumPy files"): float16/32/64 data for a float tensor
 * (read as float32 or float16; a float64 value is rounded to nearest even to float32, then
 * as any float32 input), and any integer data for an integer tensor when every value fits
 * (else NCSIM_FORMAT naming the first that does not). mdl_npy_convertible says whether
 * `from` data is accepted for a tensor read as `to`; mdl_npy_convert converts in place (no-op
 * when the types are equal or not convertible: mdl_npy_expect then refuses with its message).
 */
int mdl_npy_convertible(mdl_npy_type_t from, mdl_npy_type_t to);
ncsim_status_t mdl_npy_convert(mdl_npy_t *a, mdl_npy_type_t to, const char *path,
                               const char *tensor, char *err, size_t errlen);

/* Type of a descr string; MDL_NPY_TYPE_COUNT when not supported. */
mdl_npy_type_t mdl_npy_type_lookup(const char *descr);
const char *mdl_npy_type_descr(mdl_npy_type_t t);
uint32_t mdl_npy_type_size(mdl_npy_type_t t);

/* The .npy type a tensor of type t is read from and written as (CLI.md): F4 for fp32, bf16,
 * tf32 and fp8*, F2 for fp16, and the integer type of the same width and sign otherwise. */
mdl_npy_type_t mdl_npy_type_for_dtype(isa_dtype_t t);
/* 1 when the .npy bytes are the tensor's storage bytes (no conversion needed): every type
 * except bf16, tf32 and the fp8 types, which go through fp32. */
int mdl_npy_dtype_is_native(isa_dtype_t t);

/*
 * Check that a file read for tensor `tensor` of type t and shape dims[ndim] has the type and
 * shape the tensor needs (CLI.md: the shape must match the declaration exactly). NCSIM_FORMAT
 * with a message naming the path, the tensor and a fix (e.g. "save it with
 * arr.astype(np.float32)") when it does not.
 */
ncsim_status_t mdl_npy_expect(const mdl_npy_t *a, const char *path, const char *tensor,
                              isa_dtype_t t, const uint64_t *dims, uint32_t ndim, char *err,
                              size_t errlen);

#endif
