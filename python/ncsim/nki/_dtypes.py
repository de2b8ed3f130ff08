"""NKI data types and their NCA counterparts (NKI's dtype table and promotion rules)."""
import numpy as np


class dtype:
    """An NKI data type: its NKI name, NCA name, size, and the NumPy type that holds its values
    on the host (bf16, tf32 and the fp8 types travel as float32: NumPy has no such types)."""

    def __init__(self, name, nca, size, kind, host, bits=None):
        self.name = name
        self.nca = nca
        self.itemsize = size
        self.kind = kind            # "f" float, "i" signed int, "u" unsigned int, "b" bool
        self.host = np.dtype(host)
        self.bits = bits or 8 * size

    @property
    def is_float(self):
        return self.kind == "f"

    @property
    def is_int(self):
        return self.kind in "iub"

    def __repr__(self):
        return f"nl.{self.name}"

    def __eq__(self, other):
        try:
            return as_dtype(other) is self
        except (TypeError, ValueError):
            return False

    def __hash__(self):
        return hash(self.name)

    # NumPy-like helpers used by kernels (nl.fp32.min)
    @property
    def min(self):
        if self.is_float:
            return float(np.finfo(np.float32).min) if self.nca in ("fp32", "tf32", "bf16") \
                else float(np.finfo(self.host).min) if self.host != np.float32 else -np.inf
        return int(np.iinfo(self.host).min)

    @property
    def max(self):
        if self.is_float:
            return float(np.finfo(np.float32).max) if self.nca in ("fp32", "tf32", "bf16") \
                else float(np.finfo(self.host).max)
        return int(np.iinfo(self.host).max)


float32 = dtype("float32", "fp32", 4, "f", np.float32)
tfloat32 = dtype("tfloat32", "tf32", 4, "f", np.float32)
float16 = dtype("float16", "fp16", 2, "f", np.float16)
bfloat16 = dtype("bfloat16", "bf16", 2, "f", np.float32)
float8_e4m3 = dtype("float8_e4m3", "fp8e4", 1, "f", np.float32)
float8_e5m2 = dtype("float8_e5m2", "fp8e5", 1, "f", np.float32)
int8 = dtype("int8", "i8", 1, "i", np.int8)
uint8 = dtype("uint8", "u8", 1, "u", np.uint8)
int16 = dtype("int16", "i16", 2, "i", np.int16)
uint16 = dtype("uint16", "u16", 2, "u", np.uint16)
int32 = dtype("int32", "i32", 4, "i", np.int32)
uint32 = dtype("uint32", "u32", 4, "u", np.uint32)
bool_ = dtype("bool_", "u8", 1, "b", np.bool_)

ALL = [float32, tfloat32, float16, bfloat16, float8_e4m3, float8_e5m2, int8, uint8, int16, uint16,
       int32, uint32, bool_]
_BY_NAME = {d.name: d for d in ALL}
_BY_NAME.update({"bool": bool_, "float8_e4m3fn": float8_e4m3, "fp32": float32, "fp16": float16,
                 "bf16": bfloat16})
_BY_NP = {np.dtype(np.float32): float32, np.dtype(np.float16): float16, np.dtype(np.int8): int8,
          np.dtype(np.uint8): uint8, np.dtype(np.int16): int16, np.dtype(np.uint16): uint16,
          np.dtype(np.int32): int32, np.dtype(np.uint32): uint32, np.dtype(np.bool_): bool_,
          np.dtype(np.float64): float32, np.dtype(np.int64): int32}


def as_dtype(x):
    """The NKI dtype for x: an NKI dtype, a NumPy dtype or type, or a name ("bfloat16")."""
    if isinstance(x, dtype):
        return x
    if isinstance(x, str):
        if x in _BY_NAME:
            return _BY_NAME[x]
        x = np.dtype(x)
    try:
        nd = np.dtype(x)
    except TypeError:
        raise TypeError(f"not a data type: {x!r}") from None
    if nd.name in _BY_NAME:            # ml_dtypes' bfloat16, float8_e5m2 ...
        return _BY_NAME[nd.name]
    if nd in _BY_NP:
        return _BY_NP[nd]
    raise TypeError(f"data type {nd} has no NKI equivalent (NKI has no 64-bit types)")


# ---- promotion (NKI's table: §1.9 of the API reference)
_FLOAT_RANK = {"float8_e4m3": 0, "float8_e5m2": 0, "float16": 1, "bfloat16": 1, "tfloat32": 2,
               "float32": 3}


def promote(a, b):
    """Result type of an arithmetic op on dtypes a and b."""
    a, b = as_dtype(a), as_dtype(b)
    if a is b:
        return a
    if a.is_float and not b.is_float:
        return a
    if b.is_float and not a.is_float:
        return b
    if a.is_float:
        names = {a.name, b.name}
        if names == {"float16", "bfloat16"}:
            return float32
        if names == {"float8_e4m3", "float8_e5m2"}:
            return bfloat16
        if names == {"float32", "tfloat32"}:
            return float32
        return a if _FLOAT_RANK[a.name] >= _FLOAT_RANK[b.name] else b
    # integers (bool counts as uint8)
    if a is bool_:
        a = uint8
    if b is bool_:
        b = uint8
    if a is b:
        return a
    sa, sb = a.kind == "i", b.kind == "i"
    if sa == sb:
        return a if a.itemsize >= b.itemsize else b
    s, u = (a, b) if sa else (b, a)
    if s.itemsize > u.itemsize:
        return s
    if u.itemsize == 4:
        return float32                  # int32 + uint32
    return {1: int16, 2: int32}[u.itemsize]


def scalar_dtype(v):
    """Weak type of a Python scalar (NKI: bool -> uint8, int -> int32, float -> float32)."""
    if isinstance(v, (bool, np.bool_)):
        return uint8
    if isinstance(v, (int, np.integer)) and not isinstance(v, np.generic):
        return int32
    if isinstance(v, np.generic):
        return as_dtype(v.dtype)
    return float32
