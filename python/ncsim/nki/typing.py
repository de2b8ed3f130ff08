"""`neuronxcc.nki.typing` (nt): `nt.tensor[shape]` annotations and `nt.tensor[[shape], dtype]`
placeholders (a shape and dtype without data, for nki.benchmark)."""
from ._dtypes import as_dtype, float32


class _Placeholder:
    def __init__(self, shape, dtype):
        from ._errors import usage
        import numpy as np
        if not isinstance(shape, (tuple, list)) or not shape or any(
                not isinstance(s, (int, np.integer)) or isinstance(s, bool) or s <= 0 for s in shape):
            raise usage("err_invalid_shape", f"nt.tensor[{shape!r}, ...]: the shape is a list of "
                        "positive integers")
        self.shape = tuple(int(s) for s in shape)
        try:
            d = as_dtype(dtype)
        except (TypeError, ValueError) as e:
            raise usage("err_invalid_dtype", f"nt.tensor[..., {dtype!r}]: {e}") from None
        self.dtype = d.host if d.name not in ("bfloat16", "tfloat32", "float8_e4m3", "float8_e5m2") \
            else d.name
        self.nki_dtype = d

    def __repr__(self):
        return f"nt.tensor[{list(self.shape)}, {self.nki_dtype!r}]"


class TypedValues:
    """Host values with an NKI data type NumPy lacks (bfloat16, tfloat32, fp8): `values` is a
    float32 array (rounded to the type when the kernel reads it), `nki_dtype` the type the
    kernel sees. Made by `ncsim.nki.typed(values, dtype)`; outputs of these types come back
    as float32 arrays."""

    def __init__(self, values, dtype):
        import numpy as np
        self.nki_dtype = as_dtype(dtype)
        self.values = np.asarray(values, dtype=self.nki_dtype.host)
        self.shape = self.values.shape
        self.dtype = self.nki_dtype.name

    def __repr__(self):
        return f"ncsim.nki.typed(shape={list(self.shape)}, dtype={self.nki_dtype!r})"


class _TensorType:
    def __getitem__(self, key):
        if isinstance(key, tuple) and len(key) == 2 and isinstance(key[0], (list, tuple)):
            return _Placeholder(key[0], key[1])
        if isinstance(key, tuple):
            return _Placeholder(key, float32)
        return _Placeholder((key,), float32)


tensor = _TensorType()
