/*
 * encoding.h -- byte layout of the .ncx container (isa/FORMAT.md), as field offsets and
 * constants. isa/ncx.c reads and writes every field through these macros, so this file and
 * the code cannot drift apart. All multi-byte fields are little-endian.
 */
#ifndef NCSIM_ISA_ENCODING_H
#define NCSIM_ISA_ENCODING_H

#include <stdint.h>

/*
 * ---- File header (32 bytes) ------------------------------------------------------------------
 *
 *   0       4       8       12      16              24      28      32
 *   +-------+-------+---+---+-------+---------------+-------+-------+
 *   | magic |sentnl |maj|min| flags |  file length  | CRC32 | nsect |
 *   +-------+-------+---+---+-------+---------------+-------+-------+
 *           "\r\n\x1a\n"  u16 u16  u32     u64        u32     u32
 *
 *   CRC-32 (zlib/PNG polynomial) of bytes [32, file length).
 */
#define NCX_MAGIC "NCX\x89"
#define NCX_MAGIC_LEN 4
#define NCX_SENTINEL "\r\n\x1a\n"
#define NCX_SENTINEL_LEN 4
#define NCX_VERSION_MAJOR 1
#define NCX_VERSION_MINOR 2 /* what the writer emits by default and the reader knows */

#define NCX_HDR_MAGIC 0
#define NCX_HDR_SENTINEL 4
#define NCX_HDR_MAJOR 8
#define NCX_HDR_MINOR 10
#define NCX_HDR_FLAGS 12
#define NCX_HDR_LENGTH 16
#define NCX_HDR_CRC 24
#define NCX_HDR_NSECTIONS 28
#define NCX_HEADER_SIZE 32

/* Header flags: bits 0..15 must be understood by a reader, bits 16..31 may be ignored.
 * None is defined in 1.0. */
#define NCX_FLAGS_MUST_UNDERSTAND 0x0000FFFFu
#define NCX_FLAGS_KNOWN 0u

/*
 * ---- Section header (16 bytes), then payload, then zero padding to a multiple of 8 ----------
 *
 *   0       4       8               16
 *   +-------+-------+---------------+---------...---+-----+
 *   |  tag  | flags |    length     |    payload    | pad |
 *   +-------+-------+---------------+---------...---+-----+
 */
#define NCX_SEC_TAG 0
#define NCX_SEC_FLAGS 4
#define NCX_SEC_LENGTH 8
#define NCX_SEC_HEADER_SIZE 16
#define NCX_SEC_ALIGN 8
#define NCX_SEC_REQUIRED 0x1u /* an unknown section with this bit makes the file unreadable */

/* Tags as the u32 their 4 bytes read as, little-endian: NCX_TAG('M','E','T','A'). */
#define NCX_TAG(a, b, c, d)                                                                        \
    ((uint32_t)(uint8_t)(a) | (uint32_t)(uint8_t)(b) << 8 | (uint32_t)(uint8_t)(c) << 16 |         \
     (uint32_t)(uint8_t)(d) << 24)
#define NCX_TAG_META NCX_TAG('M', 'E', 'T', 'A')
#define NCX_TAG_STRS NCX_TAG('S', 'T', 'R', 'S')
#define NCX_TAG_DECL NCX_TAG('D', 'E', 'C', 'L')
#define NCX_TAG_STRM NCX_TAG('S', 'T', 'R', 'M')
#define NCX_TAG_LINE NCX_TAG('L', 'I', 'N', 'E')
#define NCX_TAG_SEQR NCX_TAG('S', 'E', 'Q', 'R') /* reserved: sequencer registers */
/* 1.1: shared tables and compact streams (instead of STRM) */
#define NCX_TAG_VIEW NCX_TAG('V', 'I', 'E', 'W')
#define NCX_TAG_OPND NCX_TAG('O', 'P', 'N', 'D')
#define NCX_TAG_CODE NCX_TAG('C', 'O', 'D', 'E')

/*
 * ---- META (48 bytes) ------------------------------------------------------------------------
 *
 *   0       4       8       12      16                              48
 *   +-------+-------+-------+-------+-------------------------------+
 *   | chips | cores |source |   0   | arch name, NUL-padded         |
 *   +-------+-------+-------+-------+-------------------------------+
 */
#define NCX_META_CHIPS 0
#define NCX_META_CORES 4
#define NCX_META_SOURCE 8
#define NCX_META_RESERVED 12
#define NCX_META_ARCH 16
#define NCX_META_ARCH_LEN 32
#define NCX_META_SIZE 48

/* A name field that holds no name. */
#define NCX_NO_NAME 0xFFFFFFFFu

/*
 * ---- DECL -------------------------------------------------------------------------------------
 *
 *   0        4        8        12       16
 *   +--------+--------+--------+--------+-----------+---------+-----------------+
 *   |ntensors| nsems  |ngroups |   0    | tensors   | sems    | groups          |
 *   +--------+--------+--------+--------+-----------+---------+-----------------+
 *
 *   tensor (80 bytes)
 *   0      4     5     6    7     8      12     16      20   24       32           80
 *   +------+-----+-----+----+-----+------+------+-------+----+--------+------------+
 *   | name |space|dtype|kind|ndims| core | chip |pstart | 0  | offset | dims[6] u64|
 *   +------+-----+-----+----+-----+------+------+-------+----+--------+------------+
 *
 *   semaphore (16 bytes)             group (8 + 4n bytes)
 *   0      4      8     9   12       0      4      8
 *   +------+------+-----+---+------+ +------+------+---------------+
 *   | name | core |index| 0 | init | | name |  n   | n x u32 core  |
 *   +------+------+-----+---+------+ +------+------+---------------+
 */
#define NCX_DECL_NTENSORS 0
#define NCX_DECL_NSEMS 4
#define NCX_DECL_NGROUPS 8
#define NCX_DECL_RESERVED 12
#define NCX_DECL_HEADER_SIZE 16

#define NCX_TENSOR_NAME 0
#define NCX_TENSOR_SPACE 4
#define NCX_TENSOR_DTYPE 5
#define NCX_TENSOR_KIND 6
#define NCX_TENSOR_NDIMS 7
#define NCX_TENSOR_CORE 8
#define NCX_TENSOR_CHIP 12
#define NCX_TENSOR_PSTART 16
#define NCX_TENSOR_RESERVED 20
#define NCX_TENSOR_OFFSET 24
#define NCX_TENSOR_DIMS 32
#define NCX_TENSOR_MAX_DIMS 6
#define NCX_TENSOR_SIZE 80

#define NCX_SEM_NAME 0
#define NCX_SEM_CORE 4
#define NCX_SEM_INDEX 8
#define NCX_SEM_RESERVED 9 /* 3 bytes */
#define NCX_SEM_INIT 12
#define NCX_SEM_SIZE 16

#define NCX_GROUP_NAME 0
#define NCX_GROUP_NCORES 4
#define NCX_GROUP_HEADER_SIZE 8
#define NCX_GROUP_CORE_SIZE 4

/*
 * ---- STRM -------------------------------------------------------------------------------------
 *
 *   0        4        8
 *   +--------+--------+-----------------------------------+-------------------------+
 *   | cores  |engines | cores*engines x (count, bytes)    | bodies, back to back    |
 *   +--------+--------+-----------------------------------+-------------------------+
 *
 *   instruction
 *   0       2     3     4       5     6       8
 *   +-------+-----+-----+-------+-----+-------+---------------+---------------------+
 *   |opcode | eng |sync |present| ext |   0   | clauses x 8 B | present operands    |
 *   +-------+-----+-----+-------+-----+-------+---------------+---------------------+
 *   sync = nwait | npost << 4;  present bit i = slot i present;  ext reserved (0)
 *
 *   clause (8 bytes): waits first, then posts
 *   0     1     2       4
 *   +-----+-----+-------+-------+
 *   | sem | op  |   0   | value |
 *   +-----+-----+-------+-------+
 */
#define NCX_STRM_CORES 0
#define NCX_STRM_ENGINES 4
#define NCX_STRM_HEADER_SIZE 8
#define NCX_STRM_DIR_COUNT 0
#define NCX_STRM_DIR_BYTES 4
#define NCX_STRM_DIR_SIZE 8

#define NCX_INSTR_OPCODE 0
#define NCX_INSTR_ENGINE 2
#define NCX_INSTR_SYNC 3
#define NCX_INSTR_PRESENT 4
#define NCX_INSTR_EXT 5 /* reserved: sequencer-register / predicated forms */
#define NCX_INSTR_RESERVED 6
#define NCX_INSTR_HEADER_SIZE 8
#define NCX_SYNC_NWAIT(b) ((unsigned)(b)&0xFu)
#define NCX_SYNC_NPOST(b) ((unsigned)(b) >> 4)
#define NCX_SYNC_BYTE(nwait, npost) ((uint8_t)((nwait) | (npost) << 4))

#define NCX_CLAUSE_SEM 0
#define NCX_CLAUSE_OP 1
#define NCX_CLAUSE_RESERVED 2
#define NCX_CLAUSE_VALUE 4
#define NCX_CLAUSE_SIZE 8

/* Opcode space: ops.def rows, room for more ISA rows, then reserved ranges. */
#define NCX_OP_ISA_LAST 0x00FFu
#define NCX_OP_SEQ_FIRST 0x0100u /* reserved: sequencer registers, branches, loops */
#define NCX_OP_SEQ_LAST 0x01FFu

/*
 * Operand encodings, by slot kind (isa_kind_t):
 *
 *   VIEW    view record
 *   SCALAR  u8 form (NCX_SCALAR_IMM: f64 follows; NCX_SCALAR_VIEW: view record follows)
 *   FLOAT   f64                     INT    i64
 *   LIST    u16 count, u16 0, count x i64
 *   ALU RED FUNC CMP  u8            GROUP  u32 index      FLAG  (nothing)
 *
 *   view record (16 + 12 x ndims bytes)
 *   0     1     2     3      4      6     8          16
 *   +-----+-----+-----+------+------+-----+----------+-----------------+----------------+
 *   |space|dtype|ndims|pstart|pcount| dyn | offset   | ndims x i64     | ndims x u32    |
 *   |     |     |     |      | u16  | u16 | u64      | strides         | counts         |
 *   +-----+-----+-----+------+------+-----+----------+-----------------+----------------+
 *   dyn reserved for dynamic addressing (0)
 */
#define NCX_SCALAR_IMM 0
#define NCX_SCALAR_VIEW 1
#define NCX_LIST_HEADER_SIZE 4

#define NCX_VIEW_SPACE 0
#define NCX_VIEW_DTYPE 1
#define NCX_VIEW_NDIMS 2
#define NCX_VIEW_PSTART 3
#define NCX_VIEW_PCOUNT 4
#define NCX_VIEW_DYN 6
#define NCX_VIEW_OFFSET 8
#define NCX_VIEW_HEADER_SIZE 16
#define NCX_VIEW_STRIDE_SIZE 8
#define NCX_VIEW_COUNT_SIZE 4
#define NCX_VIEW_SIZE(ndims) (NCX_VIEW_HEADER_SIZE + 12u * (unsigned)(ndims))

/* Format limits that keep every address computation inside 64 bits. */
#define NCX_MAX_ABS_STRIDE ((int64_t)1 << 40) /* elements */
#define NCX_MAX_OFFSET ((uint64_t)1 << 48)    /* bytes */

/* The one NaN bit pattern a file may hold. */
#define NCX_CANONICAL_NAN 0x7FF8000000000000ull

/*
 * ---- 1.1: VIEW, OPND, CODE -------------------------------------------------------------------
 *
 *   VIEW: u32 count, u32 0, count x view record (each distinct view once)
 *   OPND: u32 count, u32 0, count x operand block (each distinct block once):
 *     0       2       3   4
 *     +-------+-------+---+------------------------------------------------+
 *     |opcode |present| 0 | present operands as in STRM, except that a view |
 *     +-------+-------+---+ is a u32 index into VIEW (scalar: form, then u32)|
 *   CODE: header and directory as STRM; instruction (8 + 6 x clauses bytes):
 *     0       2     3     4               8
 *     +-------+-----+-----+---------------+---------------+
 *     |opcode |sync |  0  | block (u32)   | clauses x 6 B |
 *     +-------+-----+-----+---------------+---------------+
 *     clause: sem u8, op u8, value i32
 */
#define NCX_TABLE_COUNT 0
#define NCX_TABLE_RESERVED 4
#define NCX_TABLE_HEADER_SIZE 8
#define NCX_BLOCK_OPCODE 0
#define NCX_BLOCK_PRESENT 2
#define NCX_BLOCK_RESERVED 3
#define NCX_BLOCK_HEADER_SIZE 4
#define NCX_CODE_OPCODE 0
#define NCX_CODE_SYNC 2
#define NCX_CODE_RESERVED 3
#define NCX_CODE_BLOCK 4
#define NCX_CODE_HEADER_SIZE 8
#define NCX_CODE_CLAUSE_VALUE 2 /* a CODE clause: sem u8, op u8, value i32 (no reserved field) */
#define NCX_CODE_CLAUSE_SIZE 6

/*
 * ---- LINE -----------------------------------------------------------------------------------
 *
 *   0        4        8
 *   +--------+--------+-------------------------------+
 *   | ninstr |   0    | ninstr x u32 line             |
 *   +--------+--------+-------------------------------+
 */
#define NCX_LINE_COUNT 0
#define NCX_LINE_RESERVED 4
#define NCX_LINE_HEADER_SIZE 8

#endif
