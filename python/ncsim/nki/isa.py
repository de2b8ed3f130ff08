"""`nki.isa` (nisa) on ncsim: each call becomes (about) one NCA instruction on its engine."""
import enum

import numpy as np

from . import _core as C
from . import language as nl
from ._core import IndexExpr, Pred, Tensor, T, error, _prod
from ._dtypes import as_dtype, float32, uint32


class engine(enum.IntEnum):
    unknown = 0
    tensor = 1
    scalar = 2
    gpsimd = 3
    vector = 5
    sync = 6


tensor_engine = engine.tensor
vector_engine = engine.vector
scalar_engine = engine.scalar
gpsimd_engine = engine.gpsimd
dma_engine = engine.sync
unknown_engine = engine.unknown


class reduce_cmd(enum.IntEnum):
    idle = 0
    reset = 1
    reduce = 2
    reset_reduce = 3


class dge_mode(enum.IntEnum):
    none = 0
    swdge = 1
    hwdge = 2
    unknown = 3


class oob_mode(enum.IntEnum):
    error = 0
    skip = 1


class nc_version(enum.IntEnum):
    gen2 = 2
    gen3 = 3


def get_nc_version():
    return nc_version.gen2


fp32 = nl.fp32

_ENG = {engine.vector: "dve", engine.scalar: "act", engine.gpsimd: "pool", engine.tensor: "pe"}


def _eng(e, default, allowed=("dve", "act", "pool")):
    if e is None or e == engine.unknown:
        return default
    n = _ENG.get(engine(int(e)))
    if n not in allowed:
        error("err_unsupported_engine", f"this instruction cannot run on {engine(int(e)).name}")
    return n


def _dt(dtype, default):
    return as_dtype(dtype) if dtype is not None else default


def _new(space, shape, dt, emit, **kw):
    return T().make_pending(space, tuple(shape), dt, emit, **kw)


def _box(mask, shape):
    return nl._mask_box(mask, shape)


def _pool_src(v):
    """pool cannot read PSUM: copy such a source to SBUF first (documented)."""
    return nl._to_sbuf(v) if v.space == "psum" else v


# --------------------------------------------------------------------------- tensor engine

def nc_matmul(stationary, moving, *, is_stationary_onezero=False, is_moving_onezero=False,
              is_transpose=False, tile_position=(), tile_size=(), mask=None, **kw):
    if tile_position or tile_size:
        if not (tile_position and tile_size):
            error("err_invalid_tile_position", "tile_position and tile_size must be given together")
        for v in tuple(tile_position) + tuple(tile_size):
            if v % 32:
                error("err_invalid_tile_position", "PE tile positions and sizes are multiples of 32")
        if 32 in tuple(tile_size):
            error("err_invalid_tile_position", "NeuronCore-v2 PE tiles are 64 or 128 wide")
    return nl._matmul(stationary, moving, mask)


def nc_transpose(data, *, mask=None, dtype=None, engine=engine.unknown, **kw):
    data = nl._tile(data)
    if len(data.shape) != 2:
        data = data.clone_view(shape=(data.shape[0], _prod(data.shape[1:])), strides=[None, 1]) \
            if data._contig(data.shape[1:], data.strides[1:]) else nl._to_sbuf(data).reshape(
                (data.shape[0], _prod(data.shape[1:])))
    P, F = data.shape
    e = _eng(engine, None, ("pe", "dve"))
    if e is None:
        e = "pe" if (P > 32 or F > 32 or data.space != "sbuf") and data.space == "sbuf" else \
            ("dve" if P <= 32 and F <= 32 else "pe")
    if e == "pe":
        return nl.transpose(data, dtype=dtype)
    if P > 32 or F > 32:
        error("err_transpose_too_large", f"a Vector-engine transpose takes at most [32, 32], got {data.shape}")
    dt = _dt(dtype, data.dtype)

    def emit(d, _b):
        T().emit("dve", f"transpose {d.text()}, {data.text()}", reads=[data], writes=[d])
    return _new("sbuf", (F, P), dt, emit)


# --------------------------------------------------------------------------- scalar engine

def activation(op, data, *, bias=None, scale=1.0, reduce_op=None, reduce_res=None,
               reduce_cmd=reduce_cmd.idle, mask=None, dtype=None, **kw):
    func = nl._act_name(op)
    data = nl._tile(data)
    dt = _dt(dtype, data.dtype)
    box = _box(mask, data.shape)
    if reduce_res is not None and reduce_op is not None and nl._alu_name(reduce_op) != "add":
        error("err_unsupported_reduce_op", "on NeuronCore-v2 the activation reduction is add")

    cmd = reduce_cmd

    def emit(d, _b):
        if box is False:
            return
        if cmd in (reduce_cmd.idle, 0) and reduce_res is None:
            nl._activate_into(d, func, data, box, scale=scale, bias=bias)
            return
        if cmd in (reduce_cmd.idle, reduce_cmd.reset_reduce, 0, 3) and reduce_res is not None \
                and cmd != reduce_cmd.idle or (cmd == reduce_cmd.idle and reduce_res is not None):
            _act_reduce(d, func, data, box, scale, bias, reduce_res)
            return
        # the accumulator registers: one fp32 [P, 1] tile per kernel, chained across calls
        tr = T()
        P = data.shape[0]
        key = ("act_accumulator", P)
        acc = tr.consts.get(key)
        if acc is None:
            acc = tr.consts[key] = tr.new_onchip("sbuf", float32, (P, 1), 0, site=key)
        if cmd == reduce_cmd.reset:
            nl._memset_into(acc, 0.0, None)
            nl._activate_into(d, func, data, box, scale=scale, bias=bias)
        elif cmd == reduce_cmd.reset_reduce:
            nl._activate_into(d, func, data, box, scale=scale, bias=bias, sum_=acc)
        elif cmd == reduce_cmd.reduce:
            nl._activate_into(d, func, data, box, scale=scale, bias=bias, sumacc=acc)
        else:
            nl._activate_into(d, func, data, box, scale=scale, bias=bias)
        if reduce_res is not None:
            rv = nl._pvec(nl._tile(reduce_res, "reduce_res"), P)
            nl._copy_into(rv, acc, None)
    return _new("sbuf", data.shape, dt, emit)


def _act_reduce(d, func, data, box, scale, bias, reduce_res):
    tr = T()
    rr = nl._tile(reduce_res, "reduce_res")
    P = data.shape[0]
    rv = nl._pvec(rr, P)
    if rv is None:
        error("err_invalid_reduce_res", f"reduce_res must be a [{P}, 1] tile")
    if rv.dtype is float32:
        nl._activate_into(d, func, data, box, scale=scale, bias=bias, sum_=rv)
    else:
        tmp = tr.new_onchip("sbuf", float32, (P, 1), 0)
        nl._activate_into(d, func, data, box, scale=scale, bias=bias, sum_=tmp)
        nl._copy_into(rv, tmp, [box[0], (0, 1)] if box else None)


def activation_reduce(op, data, *, reduce_op, reduce_res, bias=None, scale=1.0, mask=None,
                      dtype=None, **kw):
    return activation(op, data, bias=bias, scale=scale, reduce_op=reduce_op, reduce_res=reduce_res,
                      reduce_cmd=reduce_cmd.reset_reduce, mask=mask, dtype=dtype)


# --------------------------------------------------------------------------- vector engine

def tensor_tensor(data1, data2, op, *, dtype=None, mask=None, engine=engine.unknown, **kw):
    a, b = nl._tile(data1), nl._tile(data2)
    opn = nl._alu_name(op)
    if a.shape[0] != b.shape[0]:
        error("err_num_partition_mismatch",
              f"tensor_tensor operands have {a.shape[0]} and {b.shape[0]} partitions")
    if _prod(a.shape[1:]) != _prod(b.shape[1:]):
        error("err_shape_mismatch", f"tensor_tensor operands {a.shape} and {b.shape} differ")
    if a.space == "psum" and b.space == "psum":
        error("err_unsupported_memory", "tensor_tensor cannot read both operands from PSUM")
    dt = _dt(dtype, nl.promote(a.dtype, b.dtype))
    if opn in nl._BITWISE:
        nl._integer_operands(f"tensor_tensor {opn}", [a, b], dt)
    e = _eng(engine, "pool" if opn == "pow" else "dve", ("dve", "pool"))
    box = _box(mask, a.shape)
    bb = b if b.shape == a.shape else b.reshape(a.shape) if b._contig(b.shape[1:], b.strides[1:]) else b

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        dv = C._reshape_like(d, a.shape) if d.shape != a.shape else d
        dv, av, bv = dv.restrict(box), a.restrict(box), bb.restrict(box)
        if e == "pool":
            nl._engine_ok("pool", av, bv, dv)
        tr.emit(e, f"tensor_tensor {dv.text()}, {av.text()}, {bv.text()}, {opn}", reads=[av, bv], writes=[dv])
    return _new("sbuf", a.shape, dt, emit)


def _scalar_operand(v, P, box):
    if nl._is_scalar(v):
        return None, v
    pv = nl._pvec(v, P)
    if pv is None:
        error("err_invalid_scalar_operand",
              f"operand must be a scalar or a [{P}, 1] vector, got {getattr(v, 'shape', v)}")
    return pv.restrict(box and [box[0], (0, 1)]), None


def tensor_scalar(data, op0, operand0, reverse0=False, op1=None, operand1=None, reverse1=False, *,
                  dtype=None, mask=None, engine=engine.unknown, **kw):
    data = nl._tile(data)
    o0 = nl._alu_name(op0)
    o1 = nl._alu_name(op1) if op1 is not None else None
    integer = o0 in nl._BITWISE or (o1 in nl._BITWISE)
    if o1 is not None and (o0 in nl._BITWISE) != (o1 in nl._BITWISE):
        error("err_tensor_scalar_mixed_ops", "tensor_scalar ops must both be arithmetic or both bitvec")
    if reverse1 and o1 is None:
        error("err_invalid_argument", "reverse1=True reverses the operands of op1, and op1 is not "
              "given (give op1 and operand1, or drop reverse1)")
    e = _eng(engine, None)
    if integer and e not in (None, "dve"):
        error("err_unsupported_engine", "bitvec tensor_scalar runs on the Vector engine")
    dt = _dt(dtype, data.dtype)
    if integer:
        nl._integer_operands(f"tensor_scalar {o0 if o0 in nl._BITWISE else o1}", [data], dt,
                             [v for v in (operand0, operand1) if nl._is_scalar(v)])
    box = _box(mask, data.shape)
    P = data.shape[0]

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        ok = ("dve", "act") if o0 in ("add", "subtract", "multiply") and o1 in (None, "add", "subtract", "multiply") \
            and not integer and not data.dtype.is_int else ("dve",)
        per_partition = not (nl._is_scalar(operand0) and (o1 is None or nl._is_scalar(operand1)))
        ee = e or tr.pick(tr.pol.per_partition_op_engine if per_partition else
                          tr.pol.scalar_op_engine, ok)
        dv = C._reshape_like(d, data.shape) if d.shape != data.shape else d
        dv, sv = dv.restrict(box), data.restrict(box)
        v0, s0 = _scalar_operand(operand0, P, box)
        reads = [sv] + ([v0] if v0 is not None else [])
        txt = f"tensor_scalar {dv.text()}, {sv.text()}, {o0}, " + (v0.text() if v0 is not None else nl._fmt(s0, integer))
        if o1 is not None:
            v1, s1 = _scalar_operand(operand1, P, box)
            reads += [v1] if v1 is not None else []
            txt += f", {o1}, " + (v1.text() if v1 is not None else nl._fmt(s1, integer))
        if reverse0:
            txt += ", rev0"
        if reverse1:
            txt += ", rev1"
        if ee == "pool" and any(r.space == "psum" for r in reads + [dv]):
            ee = "dve"
        tr.emit(ee, txt, reads=reads, writes=[dv])
    return _new("sbuf", data.shape, dt, emit)


def scalar_tensor_tensor(*, data, op0, operand0, op1, operand1, reverse0=False, reverse1=False,
                         dtype=None, mask=None, **kw):
    data, b = nl._tile(data), nl._tile(operand1, "operand1")
    o0, o1 = nl._alu_name(op0), nl._alu_name(op1)
    # a reversed commutative operator is the same operator; NCA's scalar_tensor_tensor has no
    # reversed forms, so a reversed non-commutative one is two instructions (docs/nki.md)
    rev0 = bool(reverse0) and o0 not in _COMMUTATIVE
    rev1 = bool(reverse1) and o1 not in _COMMUTATIVE
    if data.space == "psum" and b.space == "psum":
        error("err_unsupported_memory", "scalar_tensor_tensor cannot read both tensors from PSUM "
              "(a Vector-engine instruction reads at most one input from PSUM)")
    dt = _dt(dtype, nl.promote(data.dtype, b.dtype))
    for o in (o0, o1):
        if o in nl._BITWISE:
            nl._integer_operands(f"scalar_tensor_tensor {o}", [data, b], dt,
                                 [operand0] if nl._is_scalar(operand0) else [])
    box = _box(mask, data.shape)
    P = data.shape[0]

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        dv = C._reshape_like(d, data.shape) if d.shape != data.shape else d
        dv, av, bv = dv.restrict(box), data.restrict(box), b.bcast(data.shape).restrict(box)
        v0, s0 = _scalar_operand(operand0, P, box)
        s = v0.text() if v0 is not None else nl._fmt(s0)
        sreads = [v0] if v0 is not None else []
        if not rev0 and not rev1:
            tr.emit("dve", f"scalar_tensor_tensor {dv.text()}, {av.text()}, {o0}, {s}, {o1}, "
                    f"{bv.text()}", reads=[av, bv] + sreads, writes=[dv])
            return
        t = tr.new_onchip("sbuf", float32, tuple(data.shape), 0).restrict(box)
        tr.emit("dve", f"tensor_scalar {t.text()}, {av.text()}, {o0}, {s}" + (", rev0" if rev0 else ""),
                reads=[av] + sreads, writes=[t])
        x, y = (bv, t) if rev1 else (t, bv)
        tr.emit("dve", f"tensor_tensor {dv.text()}, {x.text()}, {y.text()}, {o1}",
                reads=[x, y], writes=[dv])
    return _new("sbuf", data.shape, dt, emit)


_COMMUTATIVE = {"add", "multiply", "max", "min", "is_equal", "not_equal", "logical_and",
                "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor"}


def tensor_reduce(op, data, axis, *, mask=None, dtype=None, negate=False, keepdims=False, **kw):
    data = nl._tile(data)
    opn = nl._alu_name(op)
    ax = nl._axes(axis, len(data.shape))
    return nl._reduction(opn, data, ax, dtype, mask, keepdims, negate=negate)


def tensor_scalar_reduce(*, data, op0, operand0, reduce_op, reduce_res, reverse0=False, dtype=None,
                         mask=None, **kw):
    data = nl._tile(data)
    o0, ro = nl._alu_name(op0), nl._alu_name(reduce_op)
    if reverse0:
        error("err_unsupported", "tensor_scalar_reduce: reverse0 is not supported yet (as in NKI)")
    dt = _dt(dtype, data.dtype)
    nl._check_reduce_op(ro, "tensor_scalar_reduce: ")
    for o in (o0, ro):
        if o in nl._BITWISE:
            nl._integer_operands(f"tensor_scalar_reduce {o}", [data], dt,
                                 [operand0] if nl._is_scalar(operand0) else [])
    box = _box(mask, data.shape)
    P = data.shape[0]

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        dv = C._reshape_like(d, data.shape) if d.shape != data.shape else d
        dv2, sv = dv.restrict(box), data.restrict(box)
        v0, s0 = _scalar_operand(operand0, P, box)
        tr.emit("dve", f"tensor_scalar {dv2.text()}, {sv.text()}, {o0}, " + (v0.text() if v0 is not None else nl._fmt(s0)),
                reads=[sv] + ([v0] if v0 is not None else []), writes=[dv2])
        rr = nl._pvec(nl._tile(reduce_res, "reduce_res"), P)
        nl._reduce_into(rr, ro, dv, list(range(1, len(dv.shape))), box)
    return _new("sbuf", data.shape, dt, emit)


def tensor_tensor_scan(data0, data1, initial, op0, op1, reverse0=False, reverse1=False, *, dtype=None,
                       mask=None, **kw):
    a, b = nl._tile(data0), nl._tile(data1)
    if reverse0 and nl._alu_name(op0) not in _COMMUTATIVE or \
            reverse1 and nl._alu_name(op1) not in _COMMUTATIVE:
        error("err_unsupported_by_ncsim", "tensor_tensor_scan with a reversed non-commutative "
              "operator: NCA's tensor_scan has no reversed forms, and a scan cannot be split")
    if a.shape != b.shape:
        error("err_shape_mismatch", f"tensor_tensor_scan operands {a.shape} and {b.shape} differ")
    if a.space == "psum" and b.space == "psum":
        error("err_unsupported_memory", "tensor_tensor_scan cannot read both data0 and data1 "
              "from PSUM (a Vector-engine instruction reads at most one input from PSUM)")
    o0, o1 = nl._alu_name(op0), nl._alu_name(op1)
    # the result's type by NKI's promotion of the two operands (an integer data0 of ones and
    # fp32 data1 scan to fp32), as tensor_tensor's
    dt = _dt(dtype, nl.promote(a.dtype, b.dtype))
    for o in (o0, o1):
        if o in nl._BITWISE:
            nl._integer_operands(f"tensor_tensor_scan {o}", [a, b], dt)
    box = _box(mask, a.shape)
    P = a.shape[0]

    def emit(d, _b):
        if box is False:
            return
        dv = C._reshape_like(d, a.shape) if d.shape != a.shape else d
        dv, av, bv = dv.restrict(box), a.restrict(box), b.restrict(box)
        vi, si = _scalar_operand(initial, P, box)
        init = vi.text() if vi is not None else nl._fmt(si)
        T().emit("dve", f"tensor_scan {dv.text()}, {av.text()}, {bv.text()}, {o0}, {o1}, init={init}",
                 reads=[av, bv] + ([vi] if vi is not None else []), writes=[dv])
    return _new("sbuf", a.shape, dt, emit)


def reciprocal(data, *, dtype=None, mask=None, **kw):
    data = nl._tile(data)
    box = _box(mask, data.shape)

    def emit(d, _b):
        if box is False:
            return
        dv = C._reshape_like(d, data.shape) if d.shape != data.shape else d
        dv, sv = dv.restrict(box), data.restrict(box)
        tr = T()
        eng = tr.pol.reciprocal_engine
        if eng == "table":
            eng = "act" if getattr(tr, "act_func", None) in nl.RECIPROCAL_SET else "dve"
        if eng == "act":
            # ScalarE's reciprocal takes no bias on NeuronCore-v2, and needs none here
            tr.emit("act", f"activate {dv.text()}, {sv.text()}, reciprocal", reads=[sv], writes=[dv])
            tr.act_func = "reciprocal"
        else:
            tr.emit("dve", f"reciprocal {dv.text()}, {sv.text()}", reads=[sv], writes=[dv])
    return _new("sbuf", data.shape, _dt(dtype, data.dtype), emit)


def bn_stats(data, *, mask=None, dtype=None, **kw):
    data = nl._tile(data)
    if len(data.shape) != 2:
        error("err_unsupported_shape", "bn_stats takes a 2-D tile")
    P, F = data.shape
    box = _box(mask, data.shape)
    if (box[1][1] - box[1][0] if box else F) > nl.tile_size.bn_stats_fmax:
        error("err_bn_stats_too_large", f"bn_stats takes at most {nl.tile_size.bn_stats_fmax} elements per partition")

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        pr = box[0] if box else (0, P)
        sv = data.restrict(box)
        n = sv.shape[1]
        dv = C._reshape_like(d, (P, 6)) if d.shape != (P, 6) else d
        dest = None
        if dv.dtype is not float32:
            # the Vector engine writes fp32 statistics: into an fp32 tile, then a copy converts
            # them to the destination's type (an assignment converts, docs/nki.md)
            dest, dv = dv, tr.new_onchip("sbuf", float32, (P, 6), 0)
        for h in (0, 1):
            part = sv.clone_view(shape=(sv.shape[0], (n - h + 1) // 2), off=sv.off + h * sv.strides[1],
                                 strides=[None, 2 * sv.strides[1]])
            o = dv.restrict([pr, (3 * h, 3 * h + 3)])
            if part.shape[1] == 0:
                tr.emit("dve", f"memset {o.text()}, 0.0", writes=[o])
                continue
            tr.emit("dve", f"bn_stats {o.text()}, {part.text()}", reads=[part], writes=[o])
        if dest is not None:
            nl._copy_into(dest, dv, [pr, (0, 6)])
    return _new("sbuf", (P, 6), float32, emit)


def bn_aggr(data, *, mask=None, dtype=None, **kw):
    data = nl._tile(data)
    P = data.shape[0]
    if _prod(data.shape[1:]) % 3:
        error("err_bn_aggr_invalid_shape", "bn_aggr takes bn_stats outputs (a multiple of 3 per partition)")
    box = _box(mask, (P, 2))

    def emit(d, _b):
        tr = T()
        pr = box[0] if box else (0, P)
        full = C._reshape_like(d, (P, 2)) if d.shape != (P, 2) else d
        dest = None
        if full.dtype is not float32:
            # fp32 results (as bn_stats above), converted by a copy into the destination
            dest, full = full, tr.new_onchip("sbuf", float32, (P, 2), 0)
        dv = full.restrict([pr, (0, 2)])
        sv = data.restrict([pr] + [(0, n) for n in data.shape[1:]])
        tr.emit("dve", f"bn_aggr {dv.text()}, {sv.text()}", reads=[sv], writes=[dv])
        if dest is not None:
            nl._copy_into(dest, full, [pr, (0, 2)])
    return _new("sbuf", (P, 2), float32, emit)


def dropout(data, prob, *, mask=None, dtype=None, **kw):
    return nl.dropout(data, prob, dtype=dtype, mask=mask)


def tensor_copy(src, *, mask=None, dtype=None, engine=engine.unknown, **kw):
    src = nl._tile(src)
    e = _eng(engine, None)
    box = _box(mask, src.shape)

    def emit(d, _b):
        nl._copy_into(d, src, box, eng=e)
    return _new("sbuf", src.shape, _dt(dtype, src.dtype), emit)


def _unsup(name, why):
    def f(*a, **kw):
        error("err_unsupported_by_ncsim", f"nisa.{name} is not supported by ncsim: {why}")
    f.__name__ = name
    return f


tensor_copy_dynamic_src = _unsup("tensor_copy_dynamic_src", "NCA has no dynamic addressing yet")
tensor_copy_dynamic_dst = _unsup("tensor_copy_dynamic_dst", "NCA has no dynamic addressing yet")
local_gather = _unsup("local_gather", "not in NCA")
builtin_custom_op = _unsup("builtin_custom_op", "undocumented")
select_reduce = _unsup("select_reduce", "2.26 API, not in NCA")
sequence_bounds = _unsup("sequence_bounds", "2.26 API, not in NCA")


# range_select: keep on_true_tile where comp_op0(j, bound0) & comp_op1(j, bound1), j the free
# index plus range_start, else on_false_value (fp32.min), optionally with the row maximum in
# reduce_res. NCA has no such single instruction; ncsim composes it on the Vector engine
# (iota of j, two comparisons, memset, select, reduce): docs/nki.md, "Functions ncsim composes".
_RS_CMP = {"is_equal", "is_lt", "is_le", "is_gt", "is_ge"}


_RC = reduce_cmd


def range_select(*, on_true_tile, comp_op0, comp_op1, bound0, bound1, reduce_cmd=reduce_cmd.idle,
                 reduce_res=None, reduce_op=np.amax, range_start=0, on_false_value=None,
                 mask=None, dtype=None, **kw):
    t = nl._tile(on_true_tile, "on_true_tile")
    if len(t.shape) != 2:
        error("err_unsupported_shape", "range_select takes a 2-D tile")
    P, F = t.shape
    ops = []
    for nm, op in (("comp_op0", comp_op0), ("comp_op1", comp_op1)):
        a = nl._alu_name(op)
        if a not in _RS_CMP:
            error("err_unsupported_op", f"range_select {nm} must be a comparison (equal, less, "
                  f"less_equal, greater, greater_equal), not {getattr(op, '__name__', op)!r}")
        ops.append(a)
    fmin = float(np.finfo(np.float32).min)
    if on_false_value is not None and float(on_false_value) != fmin:
        error("err_unsupported_value", "range_select's on_false_value must be nl.fp32.min "
              "(the hardware fills with the lowest fp32 value)")
    if not isinstance(range_start, (int, np.integer)) or \
            not (0 <= range_start and range_start + F <= (1 << 24)):
        error("err_unsupported_value", f"range_start ({range_start!r}) is an integer from 0 with "
              f"range_start + free size ({F}) at most 2^24: the indices are compared in fp32, "
              "which holds integers exactly only up to 2^24")
    bounds = []
    for nm, b in (("bound0", bound0), ("bound1", bound1)):
        if nl._is_scalar(b):
            bounds.append(nl._fmt(float(b)))
        else:
            bv = nl._pvec(nl._tile(b, nm), P)
            if bv is None:
                error("err_unsupported_shape", f"range_select {nm} must be a [{P}, 1] vector")
            bounds.append(bv)
    cmd = int(reduce_cmd)
    if reduce_res is not None:
        if reduce_op not in (np.amax, np.max, nl.max, nl.maximum, np.maximum, max):
            error("err_unsupported_reduce_op", "range_select reduces with max")
        rr = nl._pvec(nl._tile(reduce_res, "reduce_res"), P)
        if rr is None:
            error("err_unsupported_shape", f"reduce_res must be a [{P}, 1] tile")
    dt = _dt(dtype, t.dtype)
    box = _box(mask, t.shape)

    def emit(d, _b):
        if box is False:
            return
        tr = T()
        j, m = nl._scratch((P, F)), nl._scratch((P, F))
        jv, mv, tv = j.restrict(box), m.restrict(box), t.restrict(box)
        dv = (C._reshape_like(d, (P, F)) if tuple(d.shape) != (P, F) else d).restrict(box)
        pb = box and [box[0], (0, 1)]
        sv = [b if isinstance(b, str) else b.restrict(pb) for b in bounds]
        rd = [b for b in sv if not isinstance(b, str)]
        txt = [b if isinstance(b, str) else b.text() for b in sv]
        tr.emit("pool", f"iota {j.text()}, base={int(range_start)}, pstep=0, steps=[1]", writes=[j])
        tr.emit("dve", f"tensor_scalar {mv.text()}, {jv.text()}, {ops[0]}, {txt[0]}",
                reads=[jv] + rd[:1] if not isinstance(sv[0], str) else [jv], writes=[mv])
        tr.emit("dve", f"scalar_tensor_tensor {mv.text()}, {jv.text()}, {ops[1]}, {txt[1]}, "
                f"logical_and, {mv.text()}",
                reads=[jv, mv] + ([sv[1]] if not isinstance(sv[1], str) else []), writes=[mv])
        tr.emit(tr.pol.memset_engine, f"memset {dv.text()}, {nl._fmt(fmin)}", writes=[dv])
        tr.emit("dve", f"select {dv.text()}, {mv.text()}, {tv.text()}", reads=[mv, tv, dv],
                writes=[dv])
        if reduce_res is not None and cmd in (int(_RC.reduce), int(_RC.reset_reduce)) \
                or reduce_res is not None and cmd == int(_RC.idle):
            r = rr.restrict(pb)
            if cmd == int(_RC.reduce):
                tmp = nl._scratch((P, 1))
                tv2 = tmp.restrict(pb)
                tr.emit("dve", f"tensor_reduce {tv2.text()}, {dv.text()}, max, axes=1",
                        reads=[dv], writes=[tv2])
                tr.emit("dve", f"tensor_tensor {r.text()}, {r.text()}, {tv2.text()}, max",
                        reads=[r, tv2], writes=[r])
            else:
                tr.emit("dve", f"tensor_reduce {r.text()}, {dv.text()}, max, axes=1",
                        reads=[dv], writes=[r])
    return _new("sbuf", (P, F), dt, emit)


def tensor_copy_predicated(*, src, dst, predicate, mask=None, dtype=None, reverse_pred=False, **kw):
    dst = nl._tile(dst, "dst")
    pred = nl._tile(predicate, "predicate")
    shape = dst.shape
    box = _box(mask, shape)
    if box is False:
        return
    tr = T()
    dv, pv = dst.restrict(box), pred.bcast(shape).restrict(box)
    if isinstance(src, Tensor):
        sv = nl._tile(src).bcast(shape).restrict(box)
    else:
        sv = nl._const_fill(src, shape, dst.dtype).restrict(box)
    if sv.space == "psum" and pv.space == "psum":
        sv = nl._to_sbuf(sv)
    tr.emit("dve", f"select {dv.text()}, {pv.text()}, {sv.text()}" + (", reverse" if reverse_pred else ""),
            reads=[pv, sv, dv], writes=[dv])


def memset(shape, value, dtype, *, mask=None, engine=engine.unknown, **kw):
    dims, pd = C.split_shape(shape)
    dt = as_dtype(dtype)
    e = _eng(engine, T().pol.memset_engine, ("dve", "pool"))
    box = _box(mask, dims)

    v = int(nl._fill_text(value, dt)) if dt.is_int else value    # the memset's own type first

    def emit(d, _b):
        if box is False:
            return
        dv = d.restrict(box)
        ee = "dve" if (e == "pool" and dv.space == "psum") else e
        T().emit(ee, f"memset {dv.text()}, {nl._fill_text(v, dv.dtype)}", writes=[dv])
    return _new("sbuf", dims, dt, emit)


def max8(*, src, mask=None, dtype=None, **kw):
    src = nl._tile(src)
    n = _prod(src.shape[1:])
    if not 8 <= n <= 16384:
        error("err_max8_invalid_size", f"max8 takes 8..16384 elements per partition, got {n}")
    P = src.shape[0]

    def emit(d, _b):
        T().emit("dve", f"max8 {d.text()}, {src.text()}", reads=[src], writes=[d])
    return _new("sbuf", (P, 8), _dt(dtype, src.dtype), emit)


def _vals8(name, data, vals):
    """The 8 values per partition that nc_find_index8 / nc_match_replace8 look for: one row
    of 8 for each partition of data."""
    if vals.shape[0] != data.shape[0]:
        error("err_num_partition_mismatch", f"{name}: vals has {vals.shape[0]} partitions and "
              f"data {data.shape[0]} (the 8 values of each partition are looked for in its row)")
    if _prod(vals.shape[1:]) != 8:
        error("err_shape_mismatch", f"{name}: vals holds 8 values per partition (max8's "
              f"result), not {_prod(vals.shape[1:])}")


def nc_find_index8(*, data, vals, mask=None, dtype=None, **kw):
    data, vals = nl._tile(data), nl._tile(vals, "vals")
    _vals8("nc_find_index8", data, vals)
    P = data.shape[0]

    def emit(d, _b):
        tr = T()
        dv = C._reshape_like(d, (P, 8)) if d.shape != (P, 8) else d
        if dv.dtype is not uint32:
            # the Vector engine writes uint32 indices; a destination of another type (dtype=
            # np.uint16, an int32 tile) gets them through a converting copy
            t = tr.new_onchip("sbuf", uint32, (P, 8), 0)
            tr.emit("dve", f"find_index8 {t.text()}, {data.text()}, {vals.text()}",
                    reads=[data, vals], writes=[t])
            nl._copy_into(dv, t, None)
            return
        tr.emit("dve", f"find_index8 {dv.text()}, {data.text()}, {vals.text()}", reads=[data, vals],
                writes=[dv])
    return _new("sbuf", (P, 8), _dt(dtype, uint32), emit)


def nc_match_replace8(*, data, vals, imm, mask=None, dtype=None, **kw):
    data, vals = nl._tile(data), nl._tile(vals, "vals")
    _vals8("nc_match_replace8", data, vals)

    def emit(d, _b):
        T().emit("dve", f"match_replace8 {d.text()}, {data.text()}, {vals.text()}, {nl._fmt(imm)}",
                 reads=[data, vals], writes=[d])
    return _new("sbuf", data.shape, _dt(dtype, data.dtype), emit)


def nc_stream_shuffle(src, dst, shuffle_mask, *, dtype=None, mask=None, **kw):
    src, dst = nl._tile(src), nl._tile(dst, "dst")
    m = list(shuffle_mask)
    if len(m) != 32:
        error("err_invalid_shuffle_mask", "the shuffle mask has 32 entries")
    T().emit("dve", f"shuffle {dst.text()}, {src.text()}, mask=[{', '.join(str(int(x)) for x in m)}]",
             reads=[src], writes=[dst])


# --------------------------------------------------------------------------- gpsimd

def iota(expr, dtype, *, mask=None, **kw):
    if isinstance(expr, int):
        expr = IndexExpr(expr, {}, (1, 1))
    if not isinstance(expr, IndexExpr):
        error("err_unsupported_type", "nisa.iota takes an affine index expression")
    shape = tuple(expr.shape)
    if len(shape) < 2:
        error("err_1d_arange_not_supported", "nisa.iota needs a 2-D (or more) index expression")
    dt = as_dtype(dtype)

    def emit(d, _b):
        steps = [expr.coefs.get(a, 0) for a in range(1, len(shape))]
        dv = nl._checked(C._reshape_like(d, shape) if d.shape != shape else d)
        fd = [(s, n) for s, n in zip(steps, shape[1:])]
        # one steps entry per free dim of D's view as written
        dims = [(s, n) for (s, n) in zip(dv.strides[1:], shape[1:])]
        if len(dims) > 4:
            error("err_unsupported_access", "iota over more than 4 free dims")
        from ..builder import raw_view
        sz = dv.dtype.itemsize
        txt = raw_view("sb", dv.dtype.nca, dv.buf.offset + dv.off * sz, dims, dv.p0, dv.p0 + shape[0])
        T().emit("pool", f"iota {txt}, base={expr.const}, pstep={expr.coefs.get(0, 0)}, "
                 f"steps=[{', '.join(str(s) for s, _ in fd)}]", writes=[dv])
    return _new("sbuf", shape, dt, emit)


_CMP = {">=": "ge", ">": "gt", "<=": "le", "<": "lt", "==": "eq", "!=": "ne"}


def affine_select(pred, on_true_tile, on_false_value, *, mask=None, dtype=None, **kw):
    if not isinstance(pred, Pred) or len(pred.conds) != 1:
        error("err_unsupported_predicate", "affine_select takes one affine comparison of index expressions")
    t = nl._tile(on_true_tile, "on_true_tile")
    e, op = pred.conds[0]
    shape = t.shape
    if len(e.shape) > len(shape):
        error("err_unsupported_predicate", "predicate has more axes than the tile")
    co = e._aligned(len(e.shape))
    dt = _dt(dtype, t.dtype)

    def emit(d, _b):
        src = nl._checked(_pool_src(t))
        dv = nl._checked(C._reshape_like(d, shape) if d.shape != shape else d)
        if dv.space == "psum":
            error("err_unsupported_memory", "affine_select runs on GpSimd, which cannot write PSUM")
        from ..builder import raw_view
        dims = list(zip(dv.strides[1:], shape[1:]))
        steps = [co.get(a, 0) for a in range(1, len(shape))]
        sz = dv.dtype.itemsize
        dtxt = raw_view("sb", dv.dtype.nca, dv.buf.offset + dv.off * sz, dims, dv.p0, dv.p0 + shape[0])
        ssz = src.dtype.itemsize
        stxt = raw_view("sb", src.dtype.nca, src.buf.offset + src.off * ssz, list(zip(src.strides[1:], shape[1:])),
                        src.p0, src.p0 + shape[0])
        T().emit("pool", f"affine_select {dtxt}, {stxt}, base={e.const}, pstep={co.get(0, 0)}, "
                 f"steps=[{', '.join(str(s) for s in steps)}], cmp={_CMP[op]}, fill={nl._fmt(on_false_value)}",
                 reads=[src], writes=[dv])
    return _new("sbuf", shape, dt, emit)


def tensor_partition_reduce(op, data, *, mask=None, dtype=None, **kw):
    data = nl._tile(data)
    opn = nl._alu_name(op)
    if opn not in ("add", "max", "bitwise_and", "bitwise_or"):
        error("err_unsupported_reduce_op", "tensor_partition_reduce takes add, max, bitwise_or or bitwise_and")
    if opn in nl._BITWISE:
        nl._integer_operands(f"tensor_partition_reduce {opn}", [data], _dt(dtype, data.dtype))
    shape = (1,) + tuple(data.shape[1:])

    def emit(d, _b):
        src = _pool_src(data)
        T().emit("pool", f"partition_reduce {d.text()}, {src.text()}, {opn}", reads=[src], writes=[d])
    return _new("sbuf", shape, _dt(dtype, data.dtype), emit)


# --------------------------------------------------------------------------- DMA

def dma_copy(*, dst, src, mask=None, dst_rmw_op=None, oob_mode=oob_mode.error, dge_mode=dge_mode.unknown, **kw):
    dst._real()
    src._real()
    tr = T()
    if dst.space == "psum" or src.space == "psum":
        error("err_unsupported_memory", "DMA cannot access PSUM")
    if dst.space == "hbm" and dst.buf.written is None:
        dst.buf.written = C.user_frame()
    if src.space == "hbm":
        src.buf.read = True
    acc = False
    if dst_rmw_op is not None:
        if nl._alu_name(dst_rmw_op) != "add":
            error("err_unsupported_op", "dma_copy accumulates with np.add only")
        acc = True
    if _prod(dst.shape) != _prod(src.shape):
        error("err_shape_mismatch", f"dma_copy of {src.shape} into {dst.shape}")
    box = _box(mask, src.shape)
    if box is False:
        return
    sv = src.restrict(box)
    dv = dst.restrict(box) if box else dst
    tr.dma(dv, sv, "store" if dst.space == "hbm" and src.space != "hbm" else "load", accumulate=acc)


def dma_transpose(src, *, mask=None, dtype=None, **kw):
    src._real()
    if len(src.shape) != 2:
        error("err_unsupported_by_ncsim", "ncsim supports dma_transpose of 2-D tensors")
    if src.space == "hbm":
        return nl.load_transpose2d(src, mask=mask, dtype=dtype)
    error("err_unsupported_by_ncsim", "dma_transpose from SBUF is not supported (use nc_transpose)")
