"""`neuronxcc.nki.typing` (nt): `nt.tensor[shape]` annotations and `nt.tensor[[shape], dtype]`
placeholders (a shape and dtype without data, for nki.benchmark)."""
from ._dtypes import as_dtype, float32


class _Placeholder:
    def __init__(self, shape, dtype):
        self.shape = tuple(int(s) for s in shape)
        d = as_dtype(dtype)
        self.dtype = d.host if d.name not in ("bfloat16", "tfloat32", "float8_e4m3", "float8_e5m2") \
            else d.name
        self.nki_dtype = d

    def __repr__(self):
        return f"nt.tensor[{list(self.shape)}, {self.nki_dtype!r}]"


class _TensorType:
    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], (list, tuple)):
            return _Placeholder(key[0], key[1])
        if isinstance(key, tuple):
            return _Placeholder(key, float32)
        return _Placeholder((key,), float32)


tensor = _TensorType()
