"""`nki.language` (nl) on ncsim: the NKI language calls, lowered to NCA instructions.

Engine choices (docs/nki.md, "Lowering"): loads and stores are DMAs; ScalarE activation
functions run on `act`; arithmetic, comparisons, bitwise ops, reductions, copies and memsets on
`dve` (the policy can move copies, memsets and arithmetic); `power` on `pool`; matmul and
transposes on `pe`, with results in PSUM."""
import builtins as _bi
import math
import sys

import numpy as np

from . import _core as C
from ._core import (Arange1D, IndexExpr, NkiError, Pred, Tensor, T, error, mgrid, par_dim,  # noqa: F401
                    split_shape, _prod)
from ._dtypes import (bfloat16, bool_, float8_e4m3, float8_e5m2, float16, float32, int8,  # noqa: F401
                      int16, int32, promote, scalar_dtype, tfloat32, uint8, uint16, uint32,
                      as_dtype)


# --------------------------------------------------------------------------- buffers, constants

class _Buffer:
    def __init__(self, name, kind):
        self.name, self.kind = name, kind

    def __repr__(self):
        return f"nl.{self.name}"


sbuf = _Buffer("sbuf", "sbuf")
psum = _Buffer("psum", "psum")
hbm = _Buffer("hbm", "hbm")
private_hbm = _Buffer("private_hbm", "hbm")
shared_hbm = _Buffer("shared_hbm", "shared_hbm")


class tile_size:
    pmax = 128
    psum_fmax = 512
    gemm_stationary_fmax = 128
    gemm_moving_fmax = 512
    bn_stats_fmax = 512
    psum_min_align = 4
    sbuf_min_align = 1
    total_available_sbuf_size = C.SBUF_USABLE


class fp32:
    min = float(np.frombuffer(np.uint32(0xff7fffff).tobytes(), dtype=np.float32)[0])


def _buf_kind(buffer):
    if buffer is None:
        return "sbuf"
    if isinstance(buffer, _Buffer):
        return buffer.kind
    if isinstance(buffer, str) and buffer in ("sbuf", "psum", "hbm", "shared_hbm", "private_hbm"):
        return {"private_hbm": "hbm"}.get(buffer, buffer)
    error("err_unsupported_buffer", f"unknown buffer {buffer!r} (nl.sbuf, nl.psum, nl.shared_hbm, "
          "nl.hbm, nl.private_hbm or an ncc allocation)")


# --------------------------------------------------------------------------- helpers

def _fmt(v, integer=False):
    if integer:
        return str(int(v))
    f = float(v)
    if math.isnan(f):
        return "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return repr(f)


def _fill_text(value, dt):
    """A memset's constant as written into a tile of type dt: into an integer type, a value
    outside the type's range saturates to it (NaN gives 0) and a fraction rounds to nearest even,
    as the engines' conversion does (a softmax's starting maximum -1e30 into an integer tile was
    written as a 31-digit integer literal, which the assembler refused)."""
    if not dt.is_int:
        return _fmt(value, False)
    f = float(value)
    if math.isnan(f):
        return "0"
    if f <= dt.min:
        return str(dt.min)
    if f >= dt.max:
        return str(dt.max)
    return str(int(value)) if isinstance(value, (int, np.integer)) else str(round(f))


def _tile(x, what="operand"):
    """x as a real on-chip tile (pending results are materialised)."""
    if not isinstance(x, Tensor):
        if isinstance(x, (IndexExpr, Arange1D)):
            error("err_unsupported_index_in_compute",
                  f"an index expression used as a tile {what}; materialise it with nisa.iota")
        error("err_unsupported_type", f"{what} must be a tile, got {type(x).__name__}")
    x._real()
    if x.space == "hbm":
        error("err_unsupported_memory",
              f"{what} is an HBM tensor; compute instructions take SBUF/PSUM tiles (nl.load it first)")
    if x.pdim != 0:
        error("err_failed_to_infer_tile_from_local_tensor",
              f"{what} has shape {x.shape} with the partition dim at {x.pdim}; index the block dims first")
    if x.alloc is not None and x.alloc.lazy_zero:
        T().touch_lazy_zero(x)
    return x


def _is_scalar(v):
    return isinstance(v, (int, float, bool, np.integer, np.floating, np.bool_))


def _oshape(*shapes):
    """Broadcast shape, partition first (shorter shapes get trailing 1s)."""
    n = _bi.max(len(s) for s in shapes)
    out = []
    for a in range(n):
        m = 1
        for s in shapes:
            d = s[a] if a < len(s) else 1
            if d != 1:
                if m != 1 and d != m:
                    error("err_shape_mismatch", f"shapes {' and '.join(str(tuple(x)) for x in shapes)} do not broadcast")
                m = d
        out.append(m)
    if len(out) < 2:
        out.append(1)
    return tuple(out)


def _mask_box(mask, shape):
    if mask is None:
        return None
    if isinstance(mask, bool):
        return None if mask else False
    if not isinstance(mask, Pred):
        error("err_unsupported_mask", "mask must be a predicate on index expressions")
    b = mask.box(shape)
    return False if b is None else b


def _sem_free(t):
    return _prod(t.shape[1:])


def _pvec(t, P):
    """t as a [P, 1] per-partition scalar view, or None if it is not one."""
    if not isinstance(t, Tensor):
        return None
    t = _tile(t)
    if t.shape[0] != P and not (t.shape[0] == 1 and P == 1):
        return None
    if _sem_free(t) != 1:
        return None
    return t.clone_view(shape=(t.shape[0], 1), strides=[None, 1], pdim=0) \
        if len(t.shape) != 2 else t


def _new(space, shape, dt, emit, **kw):
    return T().make_pending(space, tuple(shape), dt, emit, **kw)


def _engine_ok(eng, *views):
    if eng == "pool":
        for v in views:
            if isinstance(v, Tensor) and v.space == "psum":
                error("err_unsupported_memory", "GpSimd (pool) cannot access PSUM")


def _named(f, name):
    """Give a function made by a factory its NKI name, in tracebacks too (so that an error
    inside it names the call: nl.add, not f)."""
    f.__name__ = name
    f.__qualname__ = name
    try:
        f.__code__ = f.__code__.replace(co_name=name)
    except (AttributeError, TypeError, ValueError):
        pass


ALU = {}       # callable or name -> NCA ALU op


# NCA's ALU operators (isa/: the OP operand of tensor_tensor, tensor_scalar, ...).
_ALU_NAMES = frozenset(("add subtract multiply divide max min pow is_equal not_equal is_ge is_gt "
                        "is_le is_lt logical_and logical_or logical_xor bitwise_and bitwise_or "
                        "bitwise_xor shift_left shift_right mod fmod").split())


def _alu_name(op):
    if isinstance(op, str):
        if op not in _ALU_NAMES:
            error("err_unsupported_op", f"{op!r} is not an ALU operator (pass a function such as "
                  "np.add or nl.maximum)")
        return op
    n = ALU.get(op)
    if n is None:
        n = ALU.get(getattr(op, "__name__", None))
    if n is None:
        error("err_unsupported_op", f"{getattr(op, '__name__', op)!r} is not an ALU operator")
    return n


_BITWISE = {"bitwise_and", "bitwise_or", "bitwise_xor", "shift_left", "shift_right"}
_CMPOPS = {"is_equal", "not_equal", "is_ge", "is_gt", "is_le", "is_lt"}
_LOGIC = {"logical_and", "logical_or", "logical_xor"}


# --------------------------------------------------------------------------- element-wise binary

def _binary(op, a, b, dtype, mask, operator=False):
    """A new tile = a OP b (tiles or scalars)."""
    if isinstance(a, (IndexExpr, Arange1D)) or isinstance(b, (IndexExpr, Arange1D)):
        error("err_unsupported_index_in_compute", "an index expression in arithmetic with a tile; use nisa.iota")
    at, bt = isinstance(a, Tensor), isinstance(b, Tensor)
    if not at and not bt:
        error("err_unsupported_type", "at least one operand must be a tile")
    for x in (a, b):
        if not isinstance(x, Tensor) and not _is_scalar(x):
            error("err_unsupported_type",
                  f"an operand is a tile or a number, not {type(x).__name__} {x!r:.40}")
    if at:
        a = _tile(a)
    if bt:
        b = _tile(b)
    shapes = [x.shape for x in (a, b) if isinstance(x, Tensor)]
    shape = _oshape(*shapes)
    if operator and at and bt and a.shape[0] != b.shape[0]:
        error("err_unsupported_partition_broadcast",
              "operators do not broadcast along partitions; use nl.add/nl.multiply/... or .broadcast_to")
    if dtype is None:
        if op in _CMPOPS or op in _LOGIC:
            dt = bool_
        else:
            da = a.dtype if at else scalar_dtype(a)
            db = b.dtype if bt else scalar_dtype(b)
            dt = promote(da, db)
    else:
        dt = as_dtype(dtype)
    # partition broadcast ([1, F] with [P, F]) for the nl functions
    if at and bt and a.shape[0] != b.shape[0]:
        if a.shape[0] == 1:
            a = broadcast_to(a, shape=(shape[0],) + tuple(a.shape[1:]))
            a._real()
        elif b.shape[0] == 1:
            b = broadcast_to(b, shape=(shape[0],) + tuple(b.shape[1:]))
            b._real()
    if op in _BITWISE:
        _integer_operands(op, [x for x in (a, b) if isinstance(x, Tensor)], dt,
                          [x for x in (a, b) if not isinstance(x, Tensor)])
    box = _mask_box(mask, shape)

    def emit(d, _box, a=a, b=b):
        _binary_into(d, op, a, b, box, shape)
    return _new("sbuf", shape, dt, emit)


def _binary_into(d, op, a, b, box, shape=None):
    """Emit d = a OP b (d a view, already the destination)."""
    if box is False:
        return
    tr = T()
    at, bt = isinstance(a, Tensor), isinstance(b, Tensor)
    if at:
        a = _tile(a)
    if bt:
        b = _tile(b)
    if shape is None:
        shape = _oshape(*[x.shape for x in (a, b) if isinstance(x, Tensor)])
    if d.alloc is not None and d.alloc.lazy_zero:
        tr.touch_lazy_zero(d)
    dv = C._reshape_like(d, shape) if d.shape != shape else d
    dv = dv.restrict(box)
    integer = op in _BITWISE
    P = shape[0]
    # choose tensor_scalar (one operand a scalar or a per-partition vector) or tensor_tensor
    sa = None if at and _sem_free(a) != 1 or not at else _pvec(a, P)
    sb = None if bt and _sem_free(b) != 1 or not bt else _pvec(b, P)
    full = _prod(shape[1:])
    if not at or (sa is not None and full > 1 and not (bt and sb is not None)):
        # S0 OP tile: rev0
        src = b.bcast(shape).restrict(box)
        s = _fmt(a, integer) if not at else sa.restrict(box and [box[0], (0, 1)]).text()
        eng = _ts_engine(op, src, dv, per_partition=at)
        tr.emit(eng, f"tensor_scalar {dv.text()}, {src.text()}, {op}, {s}, rev0",
                reads=[src] + ([sa.restrict(box and [box[0], (0, 1)])] if at else []), writes=[dv])
        return
    if not bt or (sb is not None and full > 1) or (sb is not None and sa is None):
        src = a.bcast(shape).restrict(box)
        s = _fmt(b, integer) if not bt else sb.restrict(box and [box[0], (0, 1)]).text()
        eng = _ts_engine(op, src, dv, per_partition=bt)
        tr.emit(eng, f"tensor_scalar {dv.text()}, {src.text()}, {op}, {s}",
                reads=[src] + ([sb.restrict(box and [box[0], (0, 1)])] if bt else []), writes=[dv])
        return
    av = a.bcast(shape).restrict(box)
    bv = b.bcast(shape).restrict(box)
    eng = "pool" if op == "pow" else tr.pol.elementwise_engine
    if eng == "pool" and op not in ("add", "subtract", "multiply", "pow"):
        eng = "dve"
    if av.space == "psum" and bv.space == "psum":
        bv = _to_sbuf(bv)
    if eng == "pool" and any(v.space == "psum" for v in (av, bv, dv)):
        if op == "pow":
            error("err_unsupported_memory", "power runs on GpSimd, which cannot access PSUM")
        eng = "dve"
    tr.emit(eng, f"tensor_tensor {dv.text()}, {av.text()}, {bv.text()}, {op}",
            reads=[av, bv], writes=[dv])


# The ALU operators the Vector engine reduces with (isa_alu_can_reduce in isa/: the
# tensor_reduce instruction's OP); a comparison or a divide accumulates nothing.
_REDUCIBLE = ("add", "multiply", "max", "min", "bitwise_and", "bitwise_or", "bitwise_xor")


def _check_reduce_op(op, what=""):
    if op not in _REDUCIBLE:
        error("err_unsupported_reduce_op",
              f"{what}{op} is not a reduction operator of the Vector engine (it reduces with "
              "add, multiply, maximum, minimum, bitwise_and, bitwise_or, bitwise_xor)")


def _integer_operands(name, tiles, dt, scalars=()):
    """Bitwise operations and shifts act on the bits of integers (the Vector engine's bitvec
    operators): float tiles, float scalars or a float result type are errors at the call."""
    for t in tiles:
        if not t.dtype.is_int:
            error("err_unsupported_dtype",
                  f"{name} is a bitwise operation on integers; this operand is {t.dtype!r} "
                  "(convert with .astype or use an integer tile)")
    for v in scalars:
        if isinstance(v, float) or isinstance(v, np.floating):
            error("err_unsupported_dtype", f"{name} is a bitwise operation on integers; the "
                  f"scalar {v!r} is a float")
    if not dt.is_int:
        error("err_unsupported_dtype",
              f"{name} is a bitwise operation on integers; the result type {dt!r} is a float type")


def _ts_engine(op, src, dv, per_partition=False):
    """The engine of a tensor_scalar: scalar_op_engine for an immediate scalar,
    per_partition_op_engine when the scalar is a per-partition [P, 1] tile."""
    tr = T()
    allowed = ("dve", "act") if op in ("add", "subtract", "multiply") else ("dve",)
    e = tr.pick(tr.pol.per_partition_op_engine if per_partition else tr.pol.scalar_op_engine,
                allowed)
    if e == "pool" and (src.space == "psum" or dv.space == "psum"):
        e = "dve"
    if e == "act" and op not in ("add", "subtract", "multiply"):
        e = "dve"
    if e == "act" and (src.dtype.is_int or dv.dtype.is_int):
        e = "dve"                  # ScalarE computes through fp32 (not exact for integers)
    return e


def _to_sbuf(v):
    t = T().new_onchip("sbuf", v.dtype, v.shape, 0)
    _copy_into(t, v, None)
    return t


def _mk_binary(name, alu, np_funcs=()):
    def f(x, y, *, dtype=None, mask=None, **kw):
        return _binary(alu, x, y, dtype, mask)
    _named(f, name)
    f._alu = alu
    ALU[f] = alu
    for nf in np_funcs:
        ALU[nf] = alu
    ALU[name] = alu
    return f


add = _mk_binary("add", "add", [np.add])
subtract = _mk_binary("subtract", "subtract", [np.subtract])
multiply = _mk_binary("multiply", "multiply", [np.multiply])
divide = _mk_binary("divide", "divide", [np.divide, np.true_divide])
maximum = _mk_binary("maximum", "max", [np.maximum, np.max, np.amax, max])
minimum = _mk_binary("minimum", "min", [np.minimum, np.min, np.amin, min])
power = _mk_binary("power", "pow", [np.power])
equal = _mk_binary("equal", "is_equal", [np.equal])
not_equal = _mk_binary("not_equal", "not_equal", [np.not_equal])
greater = _mk_binary("greater", "is_gt", [np.greater])
greater_equal = _mk_binary("greater_equal", "is_ge", [np.greater_equal])
less = _mk_binary("less", "is_lt", [np.less])
less_equal = _mk_binary("less_equal", "is_le", [np.less_equal])
logical_and = _mk_binary("logical_and", "logical_and", [np.logical_and])
logical_or = _mk_binary("logical_or", "logical_or", [np.logical_or])
logical_xor = _mk_binary("logical_xor", "logical_xor", [np.logical_xor])
bitwise_and = _mk_binary("bitwise_and", "bitwise_and", [np.bitwise_and])
bitwise_or = _mk_binary("bitwise_or", "bitwise_or", [np.bitwise_or])
bitwise_xor = _mk_binary("bitwise_xor", "bitwise_xor", [np.bitwise_xor])
left_shift = _mk_binary("left_shift", "shift_left", [np.left_shift])
right_shift = _mk_binary("right_shift", "shift_right", [np.right_shift])
ALU.update({"add": "add", "subtract": "subtract", "multiply": "multiply", "divide": "divide",
            "max": "max", "min": "min", "pow": "pow"})


def _unsupported(name, why):
    def f(*a, **kw):
        error("err_unsupported_by_ncsim", f"nl.{name} is not supported by ncsim: {why}")
    _named(f, name)
    return f


mod = _mk_binary("mod", "mod", [np.mod, np.remainder])      # Python's sign (of the divisor)
fmod = _mk_binary("fmod", "fmod", [np.fmod])                 # C's sign (of the dividend)

# --------------------------------------------------------------------------- unary

ACT_FUNCS = {}     # callable -> NCA activation function

# ScalarE evaluates its functions from piece-wise polynomial tables loaded in sets (the NEFF
# lists sets such as reciprocal_sqrt_and_small and natural_log_exp_and_others); the functions
# whose set also holds reciprocal, so that a reciprocal after them needs no table switch
# (docs/nki.md, "Lowering": the engine of nisa.reciprocal).
RECIPROCAL_SET = frozenset({"sqrt", "rsqrt", "reciprocal"})


def _act_name(op):
    if isinstance(op, str):
        if ACT_FUNCS.get(op):
            return ACT_FUNCS[op]
        if op not in {v for v in ACT_FUNCS.values() if v}:
            error("err_unsupported_activation", f"{op!r} is not a ScalarE activation function "
                  "supported by ncsim (pass a function such as nl.exp)")
        return op
    n = ACT_FUNCS.get(op)
    if n is None:
        error("err_unsupported_activation",
              f"{getattr(op, '__name__', op)!r} is not a ScalarE activation function supported by ncsim")
    return n


def _activate_into(d, func, x, box, scale=None, bias=None, sum_=None, sumacc=None):
    tr = T()
    x = _tile(x)
    shape = x.shape
    dv = C._reshape_like(d, shape) if d.shape != shape else d
    dv, xv = dv.restrict(box), x.restrict(box)
    if dv.alloc is not None and dv.alloc.lazy_zero:
        tr.touch_lazy_zero(dv)
    txt = f"activate {dv.text()}, {xv.text()}, {func}"
    reads = [xv]
    P = shape[0]
    pb = box and [box[0], (0, 1)]
    if scale is not None and not (_is_scalar(scale) and float(scale) == 1.0):
        if _is_scalar(scale):
            txt += f", scale={_fmt(scale)}"
        else:
            sv = _pvec(scale, P)
            if sv is None:
                error("err_activation_scale_invalid_shape",
                      f"scale must be a scalar or a [{P}, 1] vector, got {getattr(scale, 'shape', scale)}")
            sv = sv.restrict(pb)
            txt += f", scale={sv.text()}"
            reads.append(sv)
    if bias is not None:
        if _is_scalar(bias):
            bv = _const_col(float(bias), P, float32)
        else:
            bv = _pvec(bias, P)
            if bv is None:
                error("err_activation_bias_invalid_type",
                      f"bias must be a [{P}, 1] vector, got {getattr(bias, 'shape', bias)}")
        bv = bv.restrict(pb)
        txt += f", bias={bv.text()}"
        reads.append(bv)
    writes = [dv]
    if sum_ is not None:
        txt += f", sum={sum_.restrict(pb).text()}"
        writes.append(sum_.restrict(pb))
    if sumacc is not None:
        txt += f", sumacc={sumacc.restrict(pb).text()}"
        reads.append(sumacc.restrict(pb))
        writes.append(sumacc.restrict(pb))
    tr.emit("act", txt, reads=reads, writes=writes)
    tr.act_func = func      # the function (and so the table set) ScalarE holds now


def _const_col(value, P, dt):
    """A [P, 1] SBUF tile holding `value` (made once per kernel)."""
    tr = T()
    key = ("col", value, P, dt.name)
    t = tr.consts.get(key)
    if t is None:
        t = tr.new_onchip("sbuf", dt, (P, 1), 0, site=key)
        tr.emit(tr.pol.memset_engine, f"memset {t.text()}, {_fmt(value)}", writes=[t])
        tr.consts[key] = t
    return t


def _mk_act(name, func, np_funcs=()):
    def f(x, *, dtype=None, mask=None, **kw):
        x = _tile(x)
        dt = as_dtype(dtype) if dtype is not None else x.dtype
        box = _mask_box(mask, x.shape)

        def emit(d, _b):
            if box is not False:
                _activate_into(d, func, x, box)
        return _new("sbuf", x.shape, dt, emit)
    _named(f, name)
    ACT_FUNCS[f] = func
    for nf in np_funcs:
        ACT_FUNCS[nf] = func
    return f


exp = _mk_act("exp", "exp", [np.exp])
log = _mk_act("log", "log", [np.log])
sqrt = _mk_act("sqrt", "sqrt", [np.sqrt])
rsqrt = _mk_act("rsqrt", "rsqrt")
reciprocal = _mk_act("reciprocal", "reciprocal", [np.reciprocal])
tanh = _mk_act("tanh", "tanh", [np.tanh])
sigmoid = _mk_act("sigmoid", "sigmoid")
relu = _mk_act("relu", "relu")
gelu = _mk_act("gelu", "gelu")
gelu_apprx_tanh = _mk_act("gelu_apprx_tanh", "gelu_tanh")
gelu_apprx_sigmoid = _mk_act("gelu_apprx_sigmoid", "gelu_sigmoid")
silu = _mk_act("silu", "silu")
softplus = _mk_act("softplus", "softplus")
mish = _mk_act("mish", "mish")
erf = _mk_act("erf", "erf")
square = _mk_act("square", "square", [np.square])
abs = _mk_act("abs", "abs", [np.abs, np.absolute])
sign = _mk_act("sign", "sign", [np.sign])
sin = _mk_act("sin", "sin", [np.sin])
arctan = _mk_act("arctan", "arctan", [np.arctan])
ACT_FUNCS[np.copy] = "copy"
ACT_FUNCS["copy"] = "copy"
ACT_FUNCS["identity"] = "identity"

def gather_flattened(data, indices, *, mask=None, dtype=None, **kw):
    error("err_unsupported_by_ncsim", "nl.gather_flattened (2.26) gathers with tensor-valued "
          "indices: NCA has no instruction with a run-time address yet")


def static_cast(x, dtype, **kw):
    """A conversion to dtype (as .astype): a copy into a tile of that type."""
    return copy(x, dtype=dtype)


class finfo:
    """Limits of an NKI float type (nl.finfo(nl.bfloat16).max ...): bits, eps, max, min, tiny."""
    _TABLE = {"float32": (32, 2.0 ** -23, 3.4028234663852886e38, 2.0 ** -126),
              "tfloat32": (32, 2.0 ** -10, 3.4028234663852886e38, 2.0 ** -126),
              "bfloat16": (16, 2.0 ** -7, 3.3895313892515355e38, 2.0 ** -126),
              "float16": (16, 2.0 ** -10, 65504.0, 2.0 ** -14),
              "float8_e4m3": (8, 2.0 ** -3, 240.0, 2.0 ** -6),
              "float8_e5m2": (8, 2.0 ** -2, 57344.0, 2.0 ** -14)}

    def __init__(self, dtype):
        d = as_dtype(dtype)
        if d.name not in self._TABLE:
            error("err_unsupported_dtype", f"nl.finfo takes a float type, not {d!r}")
        self.dtype = d
        self.bits, self.eps, self.max, self.tiny = self._TABLE[d.name]
        self.min = -self.max
        self.smallest_normal = self.tiny


gelu_dx = _mk_act("gelu_dx", "gelu_dx")
silu_dx = _mk_act("silu_dx", "silu_dx")
erf_dx = _mk_act("erf_dx", "erf_dx")


# cos, tan: ScalarE's sin with a bias of pi/2 (cos x = sin(x + pi/2)); tan = sin / cos with the
# division on the Vector engine. floor, ceil, trunc: one remainder and one subtraction on the
# Vector engine (floor x = x - mod(x, 1), ceil x = x + mod(-x, 1), trunc x = x - fmod(x, 1));
# on integer tiles a copy. docs/nki.md, "Functions ncsim composes".
_HALF_PI = float(np.float32(np.pi / 2))


def _mk_composed(name, body, np_funcs=()):
    def f(x, *, dtype=None, mask=None, **kw):
        x = _tile(x)
        dt = as_dtype(dtype) if dtype is not None else x.dtype
        box = _mask_box(mask, x.shape)

        def emit(d, _b):
            if box is not False:
                body(d, x, box)
        return _new("sbuf", x.shape, dt, emit)
    _named(f, name)
    return f


def _scratch(shape, dt=float32):
    return T().new_onchip("sbuf", dt, tuple(shape), 0)


def _cos_body(d, x, box):
    _activate_into(d, "sin", x, box, bias=_HALF_PI)


def _tan_body(d, x, box):
    s_, c_ = _scratch(x.shape), _scratch(x.shape)
    _activate_into(s_, "sin", x, box)
    _activate_into(c_, "sin", x, box, bias=_HALF_PI)
    _binary_into(d, "divide", s_, c_, box, x.shape)


def _rounding_body(kind):
    def body(d, x, box):
        if x.dtype.is_int:
            _copy_into(d, x, box)
            return
        r = _scratch(x.shape)
        if kind == "ceil":
            xv, rv = x.restrict(box), r.restrict(box)
            T().emit("dve", f"tensor_scalar {rv.text()}, {xv.text()}, multiply, -1.0, mod, 1.0",
                     reads=[xv], writes=[rv])
            _binary_into(d, "add", x, r, box, x.shape)
        else:
            _binary_into(r, "mod" if kind == "floor" else "fmod", x, 1.0, box, x.shape)
            _binary_into(d, "subtract", x, r, box, x.shape)
    return body


cos = _mk_composed("cos", _cos_body)
tan = _mk_composed("tan", _tan_body)
floor = _mk_composed("floor", _rounding_body("floor"))
ceil = _mk_composed("ceil", _rounding_body("ceil"))
trunc = _mk_composed("trunc", _rounding_body("trunc"))


def _mk_ts_unary(name, op, imm, integer=False, dt_default=None):
    def f(x, *, dtype=None, mask=None, **kw):
        x = _tile(x)
        dt = as_dtype(dtype) if dtype is not None else (dt_default or x.dtype)
        if integer:
            _integer_operands(name, [x], dt)
        box = _mask_box(mask, x.shape)

        def emit(d, _b):
            if box is not False:
                _binary_into(d, op, x, imm, box)
        return _new("sbuf", x.shape, dt, emit)
    _named(f, name)
    return f


negative = _mk_ts_unary("negative", "multiply", -1.0)
invert = _mk_ts_unary("invert", "bitwise_xor", -1, integer=True)
logical_not = _mk_ts_unary("logical_not", "is_equal", 0.0, dt_default=bool_)
ACT_FUNCS[negative] = None


# --------------------------------------------------------------------------- creation

def ndarray(shape, dtype, *, buffer=None, name="", **kw):
    dims, pd = split_shape(shape)
    dt = as_dtype(dtype)
    kind = _buf_kind(buffer)
    tr = T()
    if type(buffer) is not _Buffer and getattr(buffer, "direct", False) and not tr.force_auto:
        return _cc().new_direct(tr, buffer, dt, dims, pd, name)
    if tr.direct is not None and kind != "shared_hbm":
        _cc().auto_declared(tr, kind)
    if kind in ("hbm", "shared_hbm"):
        return _hbm_new(tr, dims, dt, kind, name)
    return tr.new_onchip(kind, dt, dims, pd, name=name)


def _cc():
    from . import compiler
    return compiler


def _hbm_new(tr, dims, dt, kind, name):
    if kind == "shared_hbm":
        i = tr.shared_idx
        tr.shared_idx += 1
        if i < len(tr.shared_outputs):
            b = tr.shared_outputs[i]
            if b.shape != tuple(dims) or b.dtype is not dt:
                error("err_shared_hbm_mismatch", "SPMD instances declare different shared_hbm tensors")
        else:
            b = tr.new_hbm(name or f"out{i}", dt, dims, "output")
            tr.shared_outputs.append(b)
            tr.shared_lines[b.name] = tr.line()      # (direct allocation: returned?)
        return tr.hbm_tensor(b)
    b = tr.new_hbm(name or "scratch", dt, dims, "scratch")
    return tr.hbm_tensor(b)


def _filled(shape, value, dtype, buffer, name):
    tr = T()
    if getattr(buffer, "direct", False) and not tr.force_auto:
        error("err_direct_allocation_init_value", f"a tensor in {buffer!r} cannot be created with "
              "an initial value (direct allocation): declare it with nl.ndarray and fill it")
    dims, pd = split_shape(shape)
    dt = as_dtype(dtype)
    kind = _buf_kind(buffer)
    if tr.direct is not None:
        _cc().auto_declared(tr, kind)
    if kind in ("hbm", "shared_hbm"):
        error("err_hbm_tensor_with_init_value_not_supported",
              "HBM tensors cannot be created with an initial value; nl.store a value into them")
    t = tr.new_onchip(kind, dt, dims, pd, name=name)
    if type(t.buf) is C.BlockBuf:
        # block tensors: each block is initialised when first touched (docs/nki.md)
        if kind == "psum" and value == 0:
            t.buf.lazy_zero = True
        else:
            t.buf.fill = value
        return t
    if kind == "psum" and value == 0:
        t.alloc.lazy_zero = True      # the start of a matmul accumulation group (docs/nki.md)
        return t
    _memset_into(t, value, None)
    return t


def zeros(shape, dtype, *, buffer=None, name="", **kw):
    return _filled(shape, 0, dtype, buffer, name)


def ones(shape, dtype, *, buffer=None, name="", **kw):
    return _filled(shape, 1, dtype, buffer, name)


def full(shape, fill_value, dtype, *, buffer=None, name="", **kw):
    return _filled(shape, fill_value, dtype, buffer, name)


def empty_like(a, dtype=None, *, buffer=None, name="", **kw):
    sh = list(a.shape)
    if a.pdim not in (None, 0):
        sh[a.pdim] = par_dim(sh[a.pdim])
    return ndarray(tuple(sh), dtype or a.dtype, buffer=buffer or (a.space if a.space != "hbm" else None),
                   name=name)


def zeros_like(a, dtype=None, *, buffer=None, name="", **kw):
    sh = list(a.shape)
    if a.pdim not in (None, 0):
        sh[a.pdim] = par_dim(sh[a.pdim])
    return zeros(tuple(sh), dtype or a.dtype, buffer=buffer, name=name)


def _memset_into(d, value, mask):
    tr = T()
    d._real()
    box = _mask_box(mask, d.shape)
    if box is False:
        return
    dv = d.restrict(box)
    eng = tr.pol.memset_engine
    if dv.space == "psum" and eng == "pool":
        eng = "dve"
    if dv.space == "hbm":
        error("err_unsupported_memory", "memset of an HBM tensor")
    if dv.alloc is not None and dv.alloc.lazy_zero:
        dv.alloc.lazy_zero = False
    tr.emit(eng, f"memset {dv.text()}, {_fill_text(value, dv.dtype)}", writes=[dv])


def shared_constant(constant, dtype=None, **kw):
    tr = T()
    arr = np.asarray(constant)
    dt = as_dtype(dtype) if dtype is not None else as_dtype(arr.dtype)
    key = ("const", arr.tobytes(), arr.shape, dt.name)
    b = tr.consts.get(key)
    if b is None:
        b = tr.new_hbm("const", dt, arr.shape, "input")
        b.host = arr.astype(dt.host)
        tr.consts[key] = b
    return tr.hbm_tensor(b)


def shared_identity_matrix(n, dtype=np.uint8, **kw):
    return shared_constant(np.eye(n), dtype=dtype)


# nl.rand: a counter-based hash on the Vector engine. The chip's random-number generator, its
# algorithm and its cost are not public; ncsim hashes a per-element counter (nisa.iota) with the
# integer mixer x ^= x >> 16; x *= 0x45d9f3 (twice); x ^= x >> 16, and scales the top bits of
# the hash to [0, 1) with as many bits as the type's mantissa holds (so values never round up
# to 1). Deterministic: the counter starts at a base made of nl.random_seed's value and the
# call's rank in the kernel. docs/nki.md, "Functions ncsim composes".
RAND_MULT = 0x45d9f3
_RAND_BITS = {"float32": 24, "tfloat32": 11, "float16": 11, "bfloat16": 8, "float8_e4m3": 4,
              "float8_e5m2": 3}


def rand_base(seed, call, n):
    """The first counter of the rand call number `call` (0, 1, ...) of n elements."""
    return (int(seed) * 1000003 + int(call) * int(n)) % ((1 << 31) - int(n))


def rand(shape, dtype=np.float32, **kw):
    dims, pd = split_shape(shape)
    dt = as_dtype(dtype)
    if dt.name not in _RAND_BITS:
        error("err_unsupported_dtype", f"nl.rand makes floating-point values; {dt!r} is not one")
    tr = T()
    P, n = dims[0], _prod(dims[1:]) if len(dims) > 1 else 1
    if P > 128:
        error("err_partition_dim_too_large",
              f"Size of partition dimension {P} exceeds architecture limitation of 128")
    call = tr.rand_calls
    tr.rand_calls = call + 1
    base = rand_base(tr.rand_seed, call, P * n)
    bits = _RAND_BITS[dt.name]
    shape2 = (P, n)

    def emit(d, _b):
        x, t = _scratch(shape2, int32), _scratch(shape2, int32)
        tr.emit("pool", f"iota {x.text()}, base={base}, pstep={n}, steps=[1]", writes=[x])
        for k in range(3):
            tr.emit("dve", f"tensor_scalar {t.text()}, {x.text()}, shift_right, 16",
                    reads=[x], writes=[t])
            tr.emit("dve", f"tensor_tensor {x.text()}, {x.text()}, {t.text()}, bitwise_xor",
                    reads=[x, t], writes=[x])
            if k < 2:
                tr.emit("dve", f"tensor_scalar {x.text()}, {x.text()}, multiply, {RAND_MULT}, "
                        "bitwise_or, 0", reads=[x], writes=[x])
        tr.emit("dve", f"tensor_scalar {t.text()}, {x.text()}, shift_right, {32 - bits}",
                reads=[x], writes=[t])
        dv = C._reshape_like(d, shape2) if tuple(d.shape) != shape2 else d
        tr.emit("dve", f"tensor_scalar {dv.text()}, {t.text()}, multiply, {2.0 ** -bits!r}",
                reads=[t], writes=[dv])
    return _new("sbuf", dims, dt, emit)


def random_seed(seed, *, mask=None, **kw):
    """Seeds nl.rand: an integer (a compile-time constant) sets the base of the counters of
    the following rand calls. A seed held in a tile is not supported (the seed is folded into
    the program at trace time)."""
    if isinstance(seed, Tensor):
        error("err_unsupported_by_ncsim",
              "nl.random_seed with a seed held in a tile: ncsim seeds nl.rand at trace time; "
              "pass an integer")
    tr = T()
    tr.rand_seed = int(seed)
    tr.rand_calls = 0
    return None


# --------------------------------------------------------------------------- memory

def load(src, *, mask=None, dtype=None, **kw):
    if not isinstance(src, Tensor):
        error("err_unsupported_type", "nl.load takes an HBM tensor")
    src._real()
    if src.space != "hbm":
        error("err_unsupported_memory", "nl.load reads HBM; this tensor is in " + src.space)
    shape = tuple(src.shape) if len(src.shape) >= 2 else (tuple(src.shape) + (1,) if src.shape else (1, 1))
    if shape[0] > C.PMAX:
        error("err_partition_dim_too_large",
              f"Size of partition dimension {shape[0]} exceeds architecture limitation of {C.PMAX}")
    dt = as_dtype(dtype) if dtype is not None else src.dtype
    src.buf.read = True
    box = _mask_box(mask, shape)
    sv = src if len(src.shape) >= 2 else \
        src.clone_view(shape=shape, strides=list(src.strides) + [1] if src.shape else [1, 1])

    tr = T()
    key = site = None
    if box is None and tr.pol.resident_loads != "never" and tr.pol.dma_split_partitions == 0:
        # repeated loads of the same data (docs/nki.md, "Repeated loads")
        key = tr.load_key(sv, dt, shape)
        site = C.user_frame()
        hit = tr.resident_hit(key, site)
        if hit is not None:
            return hit

    # a whole load (no mask, or one that keeps everything), in one transfer: into a block
    # tensor whose loads are issued at its uses (docs/nki.md, "Loads issued at their uses"), no
    # instruction here (Tracer.sink_load)
    whole = (box is None or box is not False and _bi.all(b == (0, n) for b, n in zip(box, shape))) \
        and tr.pol.dma_split_partitions == 0

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        dv = C._reshape_like(d, shape) if d.shape != shape else d
        if dv.space == "psum":
            # `psum_tile[...] = nl.load(...)`: nl.load fills SBUF and a DMA cannot write PSUM
            # (NeuronCore-v2), so the load goes to an SBUF tile that an engine copies over
            # (zeroed first under a partial mask, and copied whole, as below)
            t = tr.new_onchip("sbuf", dt, shape, 0)
            partial = box is not None and any(b != (0, n) for b, n in zip(box, shape))
            if partial:
                _memset_into(t, 0, None)
            tr.dma(t.restrict(box), sv.restrict(box), "load")
            _copy_into(dv, t, None if partial else box)
            return
        if box is not None and any(b != (0, n) for b, n in zip(box, shape)):
            # a fresh tile that a mask fills partly: zero it first, so that unmasked
            # instructions over the whole tile read defined values (docs/nki.md)
            _memset_into(dv, 0, None)
        tr.load_whole = whole
        try:
            tr.dma(dv.restrict(box), sv.restrict(box), "load")
        finally:
            tr.load_whole = False
        if key is not None:
            tr.load_done(key, site, dv, sv)
    if whole:
        emit.sink = (sv, key)
    return _new("sbuf", shape, dt, emit)


def store(dst, value, *, mask=None, **kw):
    if not isinstance(dst, Tensor):
        error("err_unsupported_type", "nl.store writes an HBM tensor")
    dst._real()
    if dst.space != "hbm":
        error("err_unsupported_memory", "nl.store writes HBM; the destination is in " + dst.space)
    tr = T()
    if dst.buf.written is None:
        dst.buf.written = C.user_frame()
    dshape = tuple(dst.shape) if len(dst.shape) >= 1 else (1,)
    if _is_scalar(value):
        shape = dshape if len(dshape) >= 2 else dshape + (1,)
        v = tr.new_onchip("sbuf", dst.dtype, shape, 0)
        _memset_into(v, value, None)
        value = v
    v = _tile(value, "value")
    if v.space == "psum":
        v = _to_sbuf(v)
    box = _mask_box(mask, v.shape)
    if box is False:
        return
    n_v, n_d = _prod(v.shape), _prod(dshape)
    if n_v > n_d:
        error("err_store_dst_shape_smaller_than_other_shape",
              f"storing a {v.shape} tile into a {dst.shape} destination")
    _check_store_shape(tuple(v.shape), dshape)
    dv = dst
    if n_v < n_d:
        v = v.bcast(dshape if len(dshape) >= 2 else dshape + (1,))
    if box is not None:
        if tuple(v.shape) != tuple(dst.shape):
            if len(dst.shape) == len(v.shape) - 1 and v.shape[-1] == 1:
                dv = dst.reshape(tuple(dst.shape) + (1,))
            else:
                error("err_unsupported_mask", "a masked store needs the tile and destination shapes to agree")
        dv = dv.restrict(box)
        v = v.restrict(box)
    tr.dma(dv, v, "store")


def _check_store_shape(vshape, dshape):
    """nl.store writes a value of the destination's shape (size-1 axes aside), or one that
    broadcasts to it along free axes; it never reshapes (a [64, 256] tile is not a [128, 128]
    destination, though both hold 16,384 elements)."""
    sq = lambda s: tuple(x for x in s if x != 1)  # noqa: E731
    if sq(vshape) == sq(dshape):
        return
    d = dshape if len(dshape) >= 2 else dshape + (1,)
    v = vshape + (1,) * (len(d) - len(vshape))
    if len(v) == len(d) and v[0] == d[0] and \
            not [1 for a, b in zip(v[1:], d[1:]) if a != b and a != 1]:
        return
    error("err_store_shape_mismatch",
          f"storing a {vshape} tile into a {tuple(dshape)} destination: the shapes differ "
          "(index the destination to the tile's shape; nl.store does not reshape)")


def load_transpose2d(src, *, mask=None, dtype=None, **kw):
    src._real()
    if src.space != "hbm" or len(src.shape) != 2:
        error("err_unsupported_memory", "nl.load_transpose2d takes a 2-D HBM tensor")
    t = src.clone_view(shape=(src.shape[1], src.shape[0]), strides=[src.strides[1], src.strides[0]])
    return load(t, mask=mask, dtype=dtype)


def atomic_rmw(dst, value, op, *, mask=None, **kw):
    error("err_unsupported_by_ncsim", "nl.atomic_rmw needs indirect (dynamic) indexing, which NCA does not have yet")


def _copy_into(d, src, mask, eng=None):
    tr = T()
    src = _tile(src)
    box = _mask_box(mask, src.shape) if not isinstance(mask, list) else mask
    if box is False:
        return
    shape = src.shape
    if _prod(shape) != _prod(d.shape) or len(d.shape) > len(shape):
        sv = src.bcast(d.shape)
        dv = d
    else:
        sv = src
        dv = C._reshape_like(d, shape) if d.shape != shape else d
    dv, sv = dv.restrict(box), sv.restrict(box)
    if dv.alloc is not None and dv.alloc.lazy_zero:
        tr.touch_lazy_zero(dv)
    eng = eng or tr.pick(tr.pol.psum_copy_engine if sv.space == "psum" else tr.pol.copy_engine,
                         ("dve", "act") if not (sv.dtype.is_int or dv.dtype.is_int) else ("dve",))
    if eng == "pool" and (sv.space == "psum" or dv.space == "psum"):
        eng = "dve"
    tr.emit(eng, f"tensor_copy {dv.text()}, {sv.text()}", reads=[sv], writes=[dv])


def copy(src, *, mask=None, dtype=None, **kw):
    src = _tile(src)
    dt = as_dtype(dtype) if dtype is not None else src.dtype
    box = _mask_box(mask, src.shape)

    def emit(d, _b):
        _copy_into(d, src, box if box is not None else None)
    return _new("sbuf", src.shape, dt, emit)


# `nisa.activation(op=nl.copy, ...)`: the identity function of ScalarE (with scale and bias),
# as `np.copy` is; kernels evict PSUM with it (a scaled copy).
ACT_FUNCS[copy] = "copy"


def broadcast_to(src, *, shape, **kw):
    if getattr(src, "space", None) == "hbm":
        return src.broadcast_to(shape)          # a zero-stride HBM view, for a broadcast load
    src = _tile(src)
    shape = tuple(split_shape(shape)[0])
    if len(shape) < len(src.shape):
        error("err_shape_mismatch", f"cannot broadcast {src.shape} to {shape}")
    if src.shape[0] == shape[0]:
        return src.bcast(shape)
    if src.shape[0] != 1:
        error("err_shape_mismatch", f"cannot broadcast {src.shape} to {shape}")
    # partition broadcast: pe matmul with a row of ones (ones[1, P]^T . src[1, F])
    P = shape[0]
    s2 = src.bcast((1,) + shape[1:])
    F = _prod(shape[1:])
    if not src.dtype.is_float:
        error("err_unsupported_type", "partition broadcast of an integer tile (it runs on the tensor engine)")
    flat = T().new_onchip("sbuf", src.dtype, (1, F), 0) if not s2._contig(s2.shape[1:], s2.strides[1:]) else None
    if flat is not None:
        _copy_into(flat, s2, None)
        s2 = flat
    else:
        s2 = s2.clone_view(shape=(1, F), strides=[None, 1]) if len(s2.shape) != 2 else s2

    def emit(d, _b):
        tr = T()
        ones_ = tr.consts.get(("ones_row", P, src.dtype.name))
        if ones_ is None:
            ones_ = tr.new_onchip("sbuf", src.dtype, (1, P), 0, site=("ones_row", P, src.dtype.name))
            tr.emit(tr.pol.memset_engine, f"memset {ones_.text()}, 1.0", writes=[ones_])
            tr.consts[("ones_row", P, src.dtype.name)] = ones_
        dv = C._reshape_like(d, (P, F)) if d.shape != (P, F) else d
        for c0 in range(0, F, 512):
            c1 = _bi.min(F, c0 + 512)
            ps = tr.new_onchip("psum", float32, (P, c1 - c0), 0, site=("bcast_psum",))
            mv = s2.restrict([(0, 1), (c0, c1)])
            tr.emit("pe", f"matmul {ps.text()}, {ones_.text()}, {mv.text()}", reads=[ones_, mv], writes=[ps])
            _copy_into(dv.restrict([(0, P), (c0, c1)]), ps, None)
    return _new("sbuf", shape, src.dtype, emit)


def expand_dims(data, axis, **kw):
    data._real()
    axes = [axis] if isinstance(axis, int) else list(axis)
    shape, strides = list(data.shape), list(data.strides)
    for a in sorted(axes):
        if a < 0:
            a += len(shape) + 1
        if a != len(shape):
            error("err_unsupported", "nl.expand_dims inserts axes only after the last axis")
        shape.append(1)
        strides.append(0)
    return data.clone_view(shape=tuple(shape), strides=strides)


# --------------------------------------------------------------------------- reductions

def _merge(dims):
    out = []
    for s, n in dims:
        if n == 1:
            continue
        if out and out[-1][0] == s * n:
            out[-1] = (s, out[-1][1] * n)
        else:
            out.append((s, n))
    return out


def _axes(axis, nd):
    if isinstance(axis, (list, tuple)):
        ax = [int(a) for a in axis]
    else:
        ax = [int(axis)]
    ax = [a + nd if a < 0 else a for a in ax]
    for a in ax:
        if a == 0:
            error("err_reduce_partition_axis", "reductions along the partition axis (0) are not supported; "
                  "use nisa.tensor_partition_reduce or a matmul with ones")
        if not 0 < a < nd:
            error("err_invalid_axis", f"axis {a} out of range for a {nd}-d tile")
    return sorted(set(ax))


def _checked(v):
    """A view about to be written out as a raw NCA view by the caller (not through v.text()):
    the same checks first -- its out-of-bounds index ranges once the mask has been applied, a
    view across the blocks of a block tensor."""
    if v.chk:
        v.check_bounds()
    if type(v.buf) is C.BlockBuf:
        C._block_view_error(v)
    return v


def _reduce_into(d, op, x, ax, box, negate=False):
    """d[P, kept] = reduce x over axes ax (x restricted by box)."""
    tr = T()
    xv = _checked(x.restrict(box))
    P = xv.shape[0]
    kept = [(xv.strides[a], xv.shape[a]) for a in range(1, len(xv.shape)) if a not in ax]
    red = [(xv.strides[a], xv.shape[a]) for a in ax]
    km, rm = _merge(kept), _merge(red)
    if not rm:
        rm = [(1, 1)]
    dims = km + rm
    if len(dims) > 4:
        error("err_unsupported_access", "a reduction with more than 4 free dims")
    sz = x.dtype.itemsize
    from ..builder import raw_view
    sp = "sb" if xv.space == "sbuf" else "ps"
    srct = raw_view(sp, xv.dtype.nca, xv.buf.offset + xv.off * sz, dims, xv.p0, xv.p0 + P)
    nk = _prod([n for _, n in kept])
    pb = [box[0] if box else (0, P)]
    kept_axes = [a for a in range(len(x.shape)) if a not in ax]
    if box and tuple(d.shape) == tuple(x.shape[a] for a in kept_axes):
        # the mask's ranges on the kept axes restrict the destination as they do the source
        dbox = [box[a] for a in kept_axes]
    elif box and tuple(d.shape) == tuple(1 if a in ax else n for a, n in enumerate(x.shape)):
        dbox = [(0, 1) if a in ax else box[a] for a in range(len(x.shape))]     # keepdims
    else:
        dbox = pb + [(0, n) for n in d.shape[1:]] if box else None
    dv = C._reshape_like(d, d.shape).restrict(dbox)
    if _prod(dv.shape[1:]) != nk:
        dv = dv.clone_view()
    txt = f"tensor_reduce {dv.text()}, {srct}, {op}, axes={len(rm)}" + (", negate" if negate else "")
    tr.emit("dve", txt, reads=[xv], writes=[dv])


def _reduction(op, x, axis, dtype, mask, keepdims, post=None, negate=False, dt_default=None):
    x = _tile(x)
    ax = _axes(axis, len(x.shape))
    if keepdims:
        shape = tuple(1 if a in ax else n for a, n in enumerate(x.shape))
    else:
        shape = tuple(n for a, n in enumerate(x.shape) if a not in ax)
    dt = as_dtype(dtype) if dtype is not None else (dt_default or x.dtype)
    _check_reduce_op(op)
    if op in _BITWISE:
        _integer_operands(f"a {op} reduction", [x], dt)
    box = _mask_box(mask, x.shape)

    def emit(d, _b):
        if box is False:
            return
        _reduce_into(d, op, x, ax, box, negate)
        if post is not None:
            post(d, box)
    return _new("sbuf", shape, dt, emit)


def sum(x, axis, *, dtype=None, mask=None, keepdims=False, **kw):
    return _reduction("add", x, axis, dtype, mask, keepdims)


def max(x, axis, *, dtype=None, mask=None, keepdims=False, **kw):
    return _reduction("max", x, axis, dtype, mask, keepdims)


def min(x, axis, *, dtype=None, mask=None, keepdims=False, **kw):
    return _reduction("min", x, axis, dtype, mask, keepdims)


def prod(x, axis, *, dtype=None, mask=None, keepdims=False, **kw):
    return _reduction("multiply", x, axis, dtype, mask, keepdims)


def mean(x, axis, *, dtype=None, mask=None, keepdims=False, **kw):
    x = _tile(x)
    ax = _axes(axis, len(x.shape))
    box = _mask_box(mask, x.shape)
    n = _prod([(box[a][1] - box[a][0]) if box else x.shape[a] for a in ax])

    def post(d, box):
        dv = d.restrict([box[0]] + [(0, m) for m in d.shape[1:]]) if box else d
        T().emit("dve", f"tensor_scalar {dv.text()}, {dv.text()}, multiply, {_fmt(1.0 / n)}",
                 reads=[dv], writes=[dv])
    return _reduction("add", x, axis, dtype, mask, keepdims, post=post,
                      dt_default=float32 if x.dtype.is_int else None)


def var(x, axis, *, dtype=None, mask=None, **kw):
    x = _tile(x)
    ax = _axes(axis, len(x.shape))
    if len(x.shape) != 2 or ax != [1]:
        error("err_unsupported_by_ncsim", "nl.var is supported over the free axis of a 2-D tile")
    P, F = x.shape
    dt = as_dtype(dtype) if dtype is not None else x.dtype
    box = _mask_box(mask, x.shape)

    def emit(d, _b):
        tr = T()
        xv = x.restrict(box)
        p, f = xv.shape
        nch = -(-f // 512)
        st = tr.new_onchip("sbuf", float32, (P, 3 * nch), 0)
        for c in range(nch):
            sv = xv.restrict([(0, p), (c * 512, _bi.min(f, c * 512 + 512))])
            stv = st.restrict([(0, p), (3 * c, 3 * c + 3)]).clone_view()
            stv = stv.clone_view(p0=xv.p0 - x.p0 + stv.p0) if False else st.restrict(
                [((box[0][0] if box else 0), (box[0][1] if box else P)), (3 * c, 3 * c + 3)])
            tr.emit("dve", f"bn_stats {stv.text()}, {sv.text()}", reads=[sv], writes=[stv])
        pr = (box[0] if box else (0, P))
        mv = tr.new_onchip("sbuf", float32, (P, 2), 0)
        sr, mr = st.restrict([pr, (0, 3 * nch)]), mv.restrict([pr, (0, 2)])
        tr.emit("dve", f"bn_aggr {mr.text()}, {sr.text()}", reads=[sr], writes=[mr])
        _copy_into(C._reshape_like(d, (P, 1)).restrict([pr, (0, 1)]), mv.restrict([pr, (1, 2)]), None)
    return _new("sbuf", (P,), dt, emit)


def all(x, axis, *, dtype=bool_, mask=None, **kw):
    x = _tile(x)
    nz = _binary("not_equal", x, 0.0, uint8, mask)
    return _reduction("min", nz, axis, dtype, mask, False)


def loop_reduce(x, op, loop_indices, *, dtype=None, mask=None, **kw):
    """dst = dst OP x, dst being what the result is assigned to: `b[...] = loop_reduce(a, ...)`
    or `b = loop_reduce(a, ...)` with b an on-chip tensor already (nki-api: "b = tensor_tensor(b,
    a, op)" on every iteration). A destination nothing has written yet takes x: the first
    iteration starts the reduction. `loop_indices` is a hint for the compiler's loop
    optimisations; it does not change the result (docs/nki.md)."""
    a = _tile(x)
    opn = _alu_name(op)
    for i in (loop_indices if isinstance(loop_indices, (list, tuple)) else [loop_indices]):
        if not isinstance(i, (int, np.integer)):
            error("err_invalid_loop_indices", "loop_indices lists loop variables (of the loops "
                  "the reduction runs over)")
    dt = as_dtype(dtype) if dtype is not None else a.dtype
    if opn in _BITWISE:
        _integer_operands(f"loop_reduce with {opn}", [a], dt)
    box = _mask_box(mask, a.shape)

    def emit(d, _b):
        if box is False:
            return
        al = d.alloc
        if al is None:
            _binary_into(d, opn, d, a, box, shape=a.shape)
            return
        # Alloc.written: False, True (an instruction other than a loop_reduce wrote it) or the
        # frozenset of the boxes loop_reduces alone have written: a reduction into another
        # part of the tensor (a second column of statistics) starts its own.
        w, key = al.written, d.box()[1:]
        if w is not True and not al.lazy_zero and not (w and key in w):
            _copy_into(d, a, mask)
        else:
            _binary_into(d, opn, d, a, box, shape=a.shape)
        if w is not True:
            al.written = (w or frozenset()) | {key}
    dst = C.assigned_local(sys._getframe(1))
    if isinstance(dst, Tensor) and dst.pend is None and dst.is_onchip:
        if _prod(dst.shape) != _prod(a.shape):
            error("err_shape_mismatch", f"loop_reduce of a {a.shape} tile into {dst.shape}")
        T().run_pending(C.Pending("sbuf", emit, None, None, T().line()), dst, None)
        return dst
    return _new("sbuf", a.shape, dt, emit)


def all_reduce(x, op, program_axes, *, dtype=None, mask=None, **kw):
    error("err_unsupported_by_ncsim", "nl.all_reduce (a collective across SPMD programs on several "
          "NeuronCores) is not supported: ncsim runs a kernel's grid on one core, one program "
          "after another, so no other program runs at the same time")



# --------------------------------------------------------------------------- matmul, transpose


def _emit_matmul(d, stat, mov, acc):
    tr = T()
    if d.space != "psum":
        error("err_unsupported_memory", "matmul results are written to PSUM")
    if d.dtype is not float32:
        error("err_unsupported_type", "a matmul writes fp32 PSUM")
    key, p0, p1, lo, hi = d.box()
    a, b = (key.offset + lo) // C.PSUM_BANK, (key.offset + hi - 1) // C.PSUM_BANK
    if a != b:
        error("err_psum_bank_crossing", "a matmul output must lie inside one 2 KiB PSUM bank "
              f"(at most {tile_size.psum_fmax} fp32 per partition)")
    M, N = stat.shape[1] if len(stat.shape) > 1 else 1, _prod(mov.shape[1:])
    dv = C._reshape_like(d, (M, N)) if d.shape != (M, N) else d
    if not acc and d.alloc is not None:
        d.alloc.acc_started.add((p0, lo))
        d.alloc.lazy_zero = d.alloc.lazy_zero
    tr.emit("pe", f"matmul {dv.text()}, {stat.text()}, {mov.text()}" + (", acc" if acc else ""),
            reads=[stat, mov] + ([dv] if acc else []), writes=[dv])


def _matmul(stat, mov, mask=None):
    if mask is None and type(stat) is Tensor and type(mov) is Tensor and C._fast[0]:
        # the common call (two [K, M] and [K, N] SBUF tiles, no mask), tested at once; any
        # other goes the general way below, which raises the errors
        ss, ms = stat.shape, mov.shape
        sb, mb = stat.buf, mov.buf
        if len(ss) == 2 and len(ms) == 2 and type(sb) is C.Slot and type(mb) is C.Slot and \
                sb.kind == "sbuf" and mb.kind == "sbuf" and stat.pdim == 0 and mov.pdim == 0 and \
                ss[0] == ms[0] and ss[1] <= tile_size.gemm_stationary_fmax and \
                ms[1] <= tile_size.gemm_moving_fmax and stat.dtype.kind == "f" and \
                mov.dtype.kind == "f" and stat.pend is None and mov.pend is None and \
                (stat.alloc is None or not stat.alloc.lazy_zero) and \
                (mov.alloc is None or not mov.alloc.lazy_zero):
            def emit(d, _b):
                _emit_matmul(d, stat, mov, False)
            return T().make_pending("psum", (ss[1], ms[1]), float32, emit, (stat, mov),
                                    ms[1] * 4)
    stat, mov = _tile(stat, "stationary"), _tile(mov, "moving")
    for t, nm in ((stat, "stationary"), (mov, "moving")):
        if t.space != "sbuf":
            error("err_unsupported_memory", f"the {nm} matmul operand must be in SBUF (it is in {t.space})")
        if not t.dtype.is_float:
            error("err_unsupported_type", f"the tensor engine takes float inputs, {nm} is {t.dtype!r}")
    K, M = stat.shape[0], _prod(stat.shape[1:])
    K2, N = mov.shape[0], _prod(mov.shape[1:])
    if K != K2:
        error("err_num_partition_mismatch",
              f"matmul contraction (partition) sizes differ: {K} and {K2}")
    if M > tile_size.gemm_stationary_fmax:
        error("err_matmul_stationary_too_large", f"stationary free size {M} exceeds {tile_size.gemm_stationary_fmax}")
    if N > tile_size.gemm_moving_fmax:
        error("err_matmul_moving_too_large", f"moving free size {N} exceeds {tile_size.gemm_moving_fmax}")
    if len(stat.shape) != 2:
        stat = stat.clone_view(shape=(K, M), strides=[None, 1]) if stat._contig(stat.shape[1:], stat.strides[1:]) \
            else _to_sbuf(stat).reshape((K, M))
    if len(mov.shape) != 2:
        mov = mov.clone_view(shape=(K, N), strides=[None, 1]) if mov._contig(mov.shape[1:], mov.strides[1:]) \
            else _to_sbuf(mov).reshape((K, N))

    # mask: a predicate on the result's axes (partitions M, free N), as on every instruction:
    # the stationary's columns and the moving's columns outside it are not read
    box = _mask_box(mask, (M, N))
    if box:
        stat = stat.restrict([(0, K), box[0]])
        mov = mov.restrict([(0, K), box[1]])

    def emit(d, _b):
        if box is not False:
            _emit_matmul(d.restrict(box), stat, mov, False)
    return _new("psum", (M, N), float32, emit, matmul=(stat, mov) if box is None else (stat, mov, box))


def matmul(x, y, *, transpose_x=False, mask=None, **kw):
    x = _tile(x)
    if not transpose_x:
        xt = transpose(x)
        xs = T().new_onchip("sbuf", x.dtype, (x.shape[1], x.shape[0]), 0)
        _copy_into(xs, xt, None)
        x = xs
    return _matmul(x, y, mask)


def transpose(x, *, dtype=None, mask=None, **kw):
    x = _tile(x)
    if T().direct is not None:
        _cc().hidden_tensor("the identity matrix of a transpose on the Tensor engine")
    if len(x.shape) != 2:
        error("err_unsupported_shape", "nl.transpose takes a 2-D tile")
    P, F = x.shape
    if P > 128 or F > 128:
        error("err_transpose_too_large", f"nl.transpose takes at most [128, 128], got {x.shape}")
    if x.space != "sbuf":
        x = _to_sbuf(x)
    dt = as_dtype(dtype) if dtype is not None else x.dtype
    if not x.dtype.is_float:
        error("err_unsupported_type", "transpose on the tensor engine takes float tiles")

    def emit(d, _b):
        if d.space == "psum" and not d.dtype.is_float:
            error("err_unsupported_type", f"a transpose on the Tensor engine writes floating-point "
                  f"PSUM, not {d.dtype!r} (transpose into an fp32 tile and copy)")
        T().emit("pe", f"transpose {d.text()}, {x.text()}", reads=[x], writes=[d])
        if d.alloc is not None:
            d.alloc.acc_started.add((d.p0, d.off * d.dtype.itemsize))
    return _new("psum", (F, P), dt if dt.is_float else float32, emit)


# --------------------------------------------------------------------------- higher level

def where(condition, x, y, *, dtype=None, mask=None, **kw):
    condition = _tile(condition, "condition")
    shape = condition.shape
    xt = isinstance(x, Tensor)
    dt = as_dtype(dtype) if dtype is not None else (x.dtype if xt else (y.dtype if isinstance(y, Tensor) else float32))
    box = _mask_box(mask, shape)

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        dv = d.restrict(box)
        if isinstance(y, Tensor):
            _copy_into(dv, y, box)
        else:
            _memset_into(dv, y, None)
        xv = _tile(x).bcast(shape).restrict(box) if xt else None
        if xv is None:
            xv = _const_fill(x, shape, dt).restrict(box)
        cv = condition.restrict(box)
        if cv.space == "psum" and xv.space == "psum":
            xv = _to_sbuf(xv)
        tr.emit("dve", f"select {dv.text()}, {cv.text()}, {xv.text()}", reads=[cv, xv, dv], writes=[dv])
    return _new("sbuf", shape, dt, emit)


def _const_fill(v, shape, dt):
    t = T().new_onchip("sbuf", dt, shape, 0)
    _memset_into(t, v, None)
    return t


def softmax(x, axis, *, dtype=None, compute_dtype=None, mask=None, **kw):
    x = _tile(x)
    ax = _axes(axis, len(x.shape))
    if len(x.shape) != 2 or ax != [1]:
        error("err_unsupported_by_ncsim", "nl.softmax is supported over the free axis of a 2-D tile")
    P, F = x.shape
    dt = as_dtype(dtype) if dtype is not None else x.dtype
    box = _mask_box(mask, x.shape)

    def emit(d, _b):
        tr = T()
        pr = box[0] if box else (0, P)
        nm = tr.new_onchip("sbuf", float32, (P, 1), 0)
        s = tr.new_onchip("sbuf", float32, (P, 1), 0)
        _reduce_into(nm, "max", x, [1], box, negate=True)
        dv = d.restrict(box)
        _activate_into(d, "exp", x, box, bias=nm, sum_=s)
        r = tr.new_onchip("sbuf", float32, (P, 1), 0)
        rv, sv = r.restrict([pr, (0, 1)]), s.restrict([pr, (0, 1)])
        tr.emit("dve", f"reciprocal {rv.text()}, {sv.text()}", reads=[sv], writes=[rv])
        tr.emit("dve", f"tensor_scalar {dv.text()}, {dv.text()}, multiply, {rv.text()}", reads=[dv, rv],
                writes=[dv])
    return _new("sbuf", x.shape, dt, emit)


def rms_norm(x, w, axis, n, epsilon=1e-06, *, dtype=None, compute_dtype=None, mask=None, **kw):
    x = _tile(x)
    ax = _axes(axis, len(x.shape))
    if len(x.shape) != 2 or ax != [1]:
        error("err_unsupported_by_ncsim", "nl.rms_norm is supported over the free axis of a 2-D tile")
    P, F = x.shape
    dt = as_dtype(dtype) if dtype is not None else x.dtype
    box = _mask_box(mask, x.shape)
    w = _tile(w, "w")
    if w.shape[0] != P:
        w = broadcast_to(w, shape=(P, F))

    def emit(d, _b):
        tr = T()
        pr = box[0] if box else (0, P)
        sq = tr.new_onchip("sbuf", float32, (P, F), 0)
        ss = tr.new_onchip("sbuf", float32, (P, 1), 0)
        _activate_into(sq, "square", x, box, sum_=ss)
        sv = ss.restrict([pr, (0, 1)])
        tr.emit("dve", f"tensor_scalar {sv.text()}, {sv.text()}, multiply, {_fmt(1.0 / n)}, add, {_fmt(epsilon)}",
                reads=[sv], writes=[sv])
        tr.emit("act", f"activate {sv.text()}, {sv.text()}, rsqrt", reads=[sv], writes=[sv])
        tr.act_func = "rsqrt"
        dv = d.restrict(box)
        xv = x.restrict(box)
        tr.emit("dve", f"tensor_scalar {dv.text()}, {xv.text()}, multiply, {sv.text()}", reads=[xv, sv], writes=[dv])
        _binary_into(d, "multiply", d, w, box)
    return _new("sbuf", x.shape, dt, emit)


def dropout(x, rate, *, dtype=None, mask=None, **kw):
    x = _tile(x)
    dt = as_dtype(dtype) if dtype is not None else x.dtype
    box = _mask_box(mask, x.shape)

    def emit(d, _b):
        if box is False:
            return
        dv, xv = d.restrict(box), x.restrict(box)
        if _is_scalar(rate):
            p = _fmt(rate)
            reads = [xv]
        else:
            pv = _pvec(rate, x.shape[0])
            if pv is None:
                error("err_unsupported", "dropout rate must be a scalar or a [P, 1] tile")
            p = pv.text()
            reads = [xv, pv]
        T().emit("dve", f"dropout {dv.text()}, {xv.text()}, prob={p}", reads=reads, writes=[dv])
    return _new("sbuf", x.shape, dt, emit)


def device_print(prefix, x, *, mask=None, **kw):
    """Print a tile's values after a functional run (nki.simulate_kernel / baremetal): the tile
    is stored to a hidden HBM output at this point of the kernel and printed with `prefix`."""
    tr = T()
    x = _tile(x, "x")
    if x.space == "psum":
        x = _to_sbuf(x)
    b = tr.new_hbm(f"device_print{len(tr.prints)}", x.dtype, x.shape, "output")
    tr.dma(tr.hbm_tensor(b), x, "store")
    tr.prints.append((str(prefix), b.name))


# --------------------------------------------------------------------------- indexing, loops, SPMD

def arange(*args):
    if len(args) == 1:
        return Arange1D(0, args[0])
    return Arange1D(*args)


def ds(start, size):
    return slice(start, start + size)


def affine_range(*args, **kw):
    return C.LoopRange(range(*[int(a) for a in args]))


def sequential_range(*args, **kw):
    return C.LoopRange(range(*[int(a) for a in args]))


def static_range(*args, **kw):
    return C.LoopRange(range(*[int(a) for a in args]))


def program_id(axis):
    tr = T()
    if axis >= len(tr.program_id):
        error("err_invalid_program_axis", f"program_id({axis}) but the launch grid has {len(tr.program_id)} dims")
    return tr.program_id[axis]


def num_programs(axes=None):
    tr = T()
    g = tr.grid
    if axes is None:
        return _prod(g) if g else 1
    if isinstance(axes, (list, tuple)):
        return _prod([g[a] for a in axes])
    if axes >= len(g):
        return 1
    return g[axes]


def program_ndim():
    return len(T().grid)


class nc:
    """A grid dim distributed over n NeuronCores (trn2). On NeuronCore-v2 it is n instances."""

    def __init__(self, n):
        self.n = int(n)

    def __mul__(self, k):
        return int(self.n * k)

    __rmul__ = __mul__

    def __index__(self):
        return self.n


def spmd_dim(*dims):
    return _prod([int(getattr(d, "n", d)) for d in dims])
