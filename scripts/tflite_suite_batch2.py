"""The TFLite suite's second batch: the rest of TFLM's builtins (ADD_N, BATCH_TO_SPACE_ND,
BROADCAST_TO, rounding and trigonometry, CUMSUM, DYNAMIC_UPDATE_SLICE, EMBEDDING_LOOKUP, FILL,
FLOOR_DIV/FLOOR_MOD, GATHER_ND, normalisations and LOG_SOFTMAX, MIRROR_PAD, REDUCE_ALL/ANY,
REVERSE_V2, SHAPE, TRANSPOSE_CONV, ZEROS_LIKE).

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403

# ================================================================ batch 2
batch(2)

# ---- ADD_N


def _add_n(t, n=3, same_q=False):
    def build(g):
        ins = []
        for k in range(n):
            q = default_q(t, -3.0, 3.0)  # TFLM wants the inputs quantized alike
            x = data_for(g.rng, t, (4, 16), -2.0 - k, 2.0 + k)
            ins.append(g.input(f"x{k}", t, x, q))
        qo = default_q(t, -8.0, 8.0) if not same_q else default_q(t, -3.0, 3.0)
        y = g.output("y", t, (4, 16), qo)
        g.op("ADD_N", ins, [y])
    return build


for _t in NUM_TYPES:
    add(f"add_n_{_t}", "ADD_N", _t, "three [4,16] inputs, output quantized differently",
        _add_n(_t))
add("add_n_int8_same_q", "ADD_N", "int8", "three inputs and the output quantized alike",
    _add_n("int8", same_q=True))
add("add_n_float32_rank4", "ADD_N", "float32", "four [1,2,3,4] inputs",
    lambda g: _add_n_shape(g, 4, (1, 2, 3, 4)))


def _add_n_shape(g, n, shape):
    ins = [g.input(f"x{k}", "float32", uniform(g.rng, shape, -2.0, 2.0)) for k in range(n)]
    g.op("ADD_N", ins, [g.output("y", "float32", shape)])
add("add_n_float32_two", "ADD_N", "float32", "two inputs", _add_n("float32", n=2))

# ---- BATCH_TO_SPACE_ND / SPACE_TO_BATCH_ND


def _b2s(t, in_shape, block, crops):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        bi = g.const("block_shape", "int32", block)
        ci = g.const("crops", "int32", np.array(crops).reshape(-1, 2))
        nb = int(np.prod(block))
        sp = [in_shape[1 + i] * b - sum(crops[i]) for i, b in enumerate(block)]
        y = g.output("y", t, (in_shape[0] // nb, *sp, *in_shape[1 + len(block):]), q)
        g.op("BATCH_TO_SPACE_ND", [xi, bi, ci], [y])
    return build


def _s2b(t, in_shape, block, pads):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        bi = g.const("block_shape", "int32", block)
        pi = g.const("paddings", "int32", np.array(pads).reshape(-1, 2))
        nb = int(np.prod(block))
        sp = [(in_shape[1 + i] + sum(pads[i])) // b for i, b in enumerate(block)]
        y = g.output("y", t, (in_shape[0] * nb, *sp, *in_shape[1 + len(block):]), q)
        g.op("SPACE_TO_BATCH_ND", [xi, bi, pi], [y])
    return build


for _t in ALL_TYPES:
    add(f"batch_to_space_nd_{_t}", "BATCH_TO_SPACE_ND", _t,
        "[4,2,3,2], block [2,2], crops [[1,0],[0,1]] -> [1,3,5,2]",
        _b2s(_t, (4, 2, 3, 2), [2, 2], [[1, 0], [0, 1]]))
for _t in ("float32", "int8"):
    add(f"batch_to_space_nd_{_t}_3d", "BATCH_TO_SPACE_ND", _t,
        "rank 3: [6,3,2], block [3], crops [[1,2]] -> [2,6,2]",
        _b2s(_t, (6, 3, 2), [3], [[1, 2]]))
    add(f"batch_to_space_nd_{_t}_no_crop", "BATCH_TO_SPACE_ND", _t,
        "[8,2,2,1], block [2,2], no crops -> [2,4,4,1]",
        _b2s(_t, (8, 2, 2, 1), [2, 2], [[0, 0], [0, 0]]))
for _t in ALL_TYPES:
    add(f"space_to_batch_nd_{_t}", "SPACE_TO_BATCH_ND", _t,
        "[1,5,4,2], block [2,2], paddings [[1,0],[1,1]] -> [4,3,3,2] (pads with zero point)",
        _s2b(_t, (1, 5, 4, 2), [2, 2], [[1, 0], [1, 1]]))
for _t in ("float32", "int8"):
    add(f"space_to_batch_nd_{_t}_3d", "SPACE_TO_BATCH_ND", _t,
        "rank 3: [2,4,3], block [3], paddings [[2,0]] -> [6,2,3]",
        _s2b(_t, (2, 4, 3), [3], [[2, 0]]))
    add(f"space_to_batch_nd_{_t}_no_pad", "SPACE_TO_BATCH_ND", _t,
        "[2,4,4,1], block [2,2], no padding -> [8,2,2,1]",
        _s2b(_t, (2, 4, 4, 1), [2, 2], [[0, 0], [0, 0]]))

# ---- BROADCAST_ARGS / BROADCAST_TO


def _bargs(t):
    def build(g):
        a = g.input("s0", t, [2, 1, 3])
        b = g.input("s1", t, [4, 1])
        y = g.output("y", t, (3,))
        g.op("BROADCAST_ARGS", [a, b], [y])
    return build


for _t in ("int32", "int64"):
    add(f"broadcast_args_{_t}", "BROADCAST_ARGS", _t, "shapes [2,1,3] and [4,1] -> [2,4,3]",
        _bargs(_t))


def _bto(t, in_shape, shape, shape_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        si = g.const("shape", shape_t, shape)
        y = g.output("y", t, tuple(shape), q)
        g.op("BROADCAST_TO", [xi, si], [y], version=2)  # TFLite registers versions 2 and up
    return build


for _t in ALL_TYPES:
    add(f"broadcast_to_{_t}", "BROADCAST_TO", _t, "[3,1] -> [2,3,4], constant int32 shape",
        _bto(_t, (3, 1), [2, 3, 4]))
add("broadcast_to_float32_rank5", "BROADCAST_TO", "float32", "[2,1,3,1] -> [2,2,2,3,2]",
    _bto("float32", (2, 1, 3, 1), [2, 2, 2, 3, 2]))
add("broadcast_to_int8_shape_int64", "BROADCAST_TO", "int8", "[4] -> [3,4], int64 shape",
    _bto("int8", (4,), [3, 4], "int64"))

# ---- CEIL / FLOOR / ROUND / COS / SIN


def _rounding(op):
    def build(g):
        x = uniform(g.rng, (2, 64), -6.0, 6.0)
        x[0, :32] = np.round(x[0, :32] * 2) / 2  # exact halves: ties
        x[0, :4] = [0.0, -0.0, 0.5, -0.5]
        unary(g, op, "float32", x)
    return build


for _op in ("CEIL", "FLOOR", "ROUND"):
    for _t in NUM_TYPES:
        add(f"{_op.lower()}_{_t}", _op, _t, "x in [-6, 6], a quarter exact halves",
            _rounding(_op) if _t == "float32" else
            (lambda op, t: lambda g: unary(g, op, t, *unary_input(g, t, -6.0, 6.0),
                                           default_q(t, -6.0, 6.0)))(_op, _t))
unary_family("COS", "cos(x), x in [-7, 7]", -7.0, 7.0, (-1.0, 1.0), types=NUM_TYPES)
unary_family("SIN", "sin(x), x in [-7, 7]", -7.0, 7.0, (-1.0, 1.0), types=NUM_TYPES)

# ---- CUMSUM


def _cumsum(t, shape, axis, exclusive=False, reverse=False):
    def build(g):
        qi = default_q(t, -2.0, 2.0)
        xi = g.input("x", t, data_for(g.rng, t, shape, -2.0, 2.0), qi)
        ai = g.const("axis", "int32", axis)
        qo = default_q(t, -8.0, 8.0)
        y = g.output("y", t, shape, qo)
        g.op("CUMSUM", [xi, ai], [y], options("Cumsum", exclusive=exclusive, reverse=reverse))
    return build


for _t in NUM_TYPES:
    add(f"cumsum_{_t}", "CUMSUM", _t, "[3,8] along axis 1", _cumsum(_t, (3, 8), 1))
for _t in ("float32", "int8", "int32"):
    add(f"cumsum_{_t}_exclusive", "CUMSUM", _t, "exclusive", _cumsum(_t, (3, 8), 1, True))
    add(f"cumsum_{_t}_reverse", "CUMSUM", _t, "reverse", _cumsum(_t, (3, 8), 1, False, True))
    add(f"cumsum_{_t}_exclusive_reverse", "CUMSUM", _t, "exclusive and reverse",
        _cumsum(_t, (3, 8), 1, True, True))
add("cumsum_float32_axis0", "CUMSUM", "float32", "[4,3,2] along axis 0",
    _cumsum("float32", (4, 3, 2), 0))
add("cumsum_int8_axis_neg", "CUMSUM", "int8", "[4,3,5] along axis -2",
    _cumsum("int8", (4, 3, 5), -2))

# ---- DYNAMIC_UPDATE_SLICE


def _dus(t, start, idx_t="int32"):
    def build(g):
        q = default_q(t)
        oi = g.input("operand", t, data_for(g.rng, t, (4, 5)), q)
        ui = g.input("update", t, data_for(g.rng, t, (2, 3)), q)
        si = g.input("start", idx_t, start)
        y = g.output("y", t, (4, 5), q)
        g.op("DYNAMIC_UPDATE_SLICE", [oi, ui, si], [y])
    return build


for _t in ALL_TYPES:
    add(f"dynamic_update_slice_{_t}", "DYNAMIC_UPDATE_SLICE", _t,
        "operand [4,5], update [2,3] at runtime start [1,2]", _dus(_t, [1, 2]))
add("dynamic_update_slice_float32_clamped", "DYNAMIC_UPDATE_SLICE", "float32",
    "start [3,-1] out of range: clamped to [2,0]", _dus("float32", [3, -1]))
add("dynamic_update_slice_int8_start_int64", "DYNAMIC_UPDATE_SLICE", "int8",
    "int64 start indices [2,1]", _dus("int8", [2, 1], "int64"))

# ---- EMBEDDING_LOOKUP


def _embedding(t, out_t=None):
    def build(g):
        q = default_q(t, -1.0, 1.5)
        if t == "int8" and out_t == "float32":
            q = Q(0.01, 0)  # hybrid: symmetric per-tensor weights
        ids = g.input("ids", "int32", g.rng.integers(0, 6, (4,)))
        vi = g.const("table", t, data_for(g.rng, t, (6, 5), -1.0, 1.5), q)
        y = g.output("y", out_t or t, (4, 5), None if out_t == "float32" else q)
        g.op("EMBEDDING_LOOKUP", [ids, vi], [y])
    return build


for _t in ALL_TYPES:
    add(f"embedding_lookup_{_t}", "EMBEDDING_LOOKUP", _t, "ids [4] into constant table [6,5]",
        _embedding(_t))
add("embedding_lookup_int8_hybrid", "EMBEDDING_LOOKUP", "int8",
    "int8 table (scale 0.01) looked up into float32 output", _embedding("int8", "float32"))

# ---- FILL


def _fill(t, dims_t="int32"):
    def build(g):
        q = default_q(t)
        di = g.const("dims", dims_t, [2, 3, 4])
        v = data_for(g.rng, t, ())
        vi = g.input("value", t, v, q)
        y = g.output("y", t, (2, 3, 4), q)
        g.op("FILL", [di, vi], [y])
    return build


for _t in ALL_TYPES:
    add(f"fill_{_t}", "FILL", _t, "constant dims [2,3,4], runtime scalar value", _fill(_t))
add("fill_float32_dims_int64", "FILL", "float32", "int64 dims", _fill("float32", "int64"))

# ---- FLOOR_DIV / FLOOR_MOD


def _floor(op, t, sa, sb):
    def build(g):
        if t == "float32":
            a = uniform(g.rng, sa, -9.0, 9.0)
            b = (g.rng.uniform(0.5, 4.0, sb) * g.rng.choice([-1, 1], sb)).astype(np.float32)
        else:
            a = data_for(g.rng, t, sa) if t in QUANT else ints(g.rng, sa, -50, 50, t)
            lo = 1
            b = g.rng.integers(lo, 9, sb) * g.rng.choice([-1, 1], sb)
            if t == "uint8":
                b = np.abs(b)
        q = default_q(t, -9.0, 9.0)
        binary(g, op, t, a, b, q, q, q)
    return build


for _op in ("FLOOR_DIV", "FLOOR_MOD"):
    for _t in NUM_TYPES:
        add(f"{_op.lower()}_{_t}", _op, _t, "[4,16] by [4,16], nonzero divisors of both signs",
            _floor(_op, _t, (4, 16), (4, 16)))
    for _t in ("float32", "int32"):
        add(f"{_op.lower()}_{_t}_broadcast", _op, _t, "[3,8] by [8]",
            _floor(_op, _t, (3, 8), (8,)))
    add(f"{_op.lower()}_float32_broadcast_rank5", _op, "float32", "[2,1,3,1,2] by [1,2,1,3,1]",
        _floor(_op, "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))

# ---- GATHER_ND


def _gather_nd(t, params_shape, idx_fn, idx_t="int32"):
    def build(g):
        q = default_q(t)
        pi = g.input("params", t, data_for(g.rng, t, params_shape), q)
        idx = idx_fn(g.rng)
        ii = g.input("indices", idx_t, idx)
        shape = (*idx.shape[:-1], *params_shape[idx.shape[-1]:])
        y = g.output("y", t, shape, q)
        g.op("GATHER_ND", [pi, ii], [y])
    return build


def _nd_idx(shape, n, depth):
    return lambda r: np.stack([r.integers(0, shape[d], n) for d in range(depth)], -1)


for _t in ALL_TYPES:
    add(f"gather_nd_{_t}", "GATHER_ND", _t, "params [3,4,2], indices [5,2] -> [5,2]",
        _gather_nd(_t, (3, 4, 2), _nd_idx((3, 4, 2), 5, 2)))
add("gather_nd_float32_full_depth", "GATHER_ND", "float32",
    "params [3,4,2], indices [6,3] (scalars) -> [6]",
    _gather_nd("float32", (3, 4, 2), _nd_idx((3, 4, 2), 6, 3)))
add("gather_nd_int8_slices", "GATHER_ND", "int8", "params [4,3,2], indices [2,2,1] -> [2,2,3,2]",
    _gather_nd("int8", (4, 3, 2), lambda r: r.integers(0, 4, (2, 2, 1))))
add("gather_nd_float32_indices_int64", "GATHER_ND", "float32", "int64 indices [4,2]",
    _gather_nd("float32", (3, 4, 2), _nd_idx((3, 4, 2), 4, 2), "int64"))

# ---- L2_NORMALIZATION / L2_POOL_2D / LOG_SOFTMAX


def _l2norm(t, shape, act="NONE"):
    def build(g):
        if t in QUANT:
            x, qi = data_for(g.rng, t, shape), qrange(-3.0, 2.0, t)
        else:
            x, qi = data_for(g.rng, t, shape, -3.0, 2.0), None
        qo = {"int8": Q(1 / 128, 0), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 128, 128)}.get(t)
        unary(g, "L2_NORMALIZATION", t, x, qi, qo,
              options("L2Norm", fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"l2_normalization_{_t}", "L2_NORMALIZATION", _t, "[4,16], along the last axis",
        _l2norm(_t, (4, 16)))
add("l2_normalization_int8_4d", "L2_NORMALIZATION", "int8", "[1,2,3,8]",
    _l2norm("int8", (1, 2, 3, 8)))


def conv_out(size, k, stride, pad, dilation=1):
    eff = (k - 1) * dilation + 1
    return -(-size // stride) if pad == "SAME" else (size - eff) // stride + 1


def _pool(op, t, in_shape, k, stride, pad, act="NONE", q_out=None):
    def build(g):
        qi = default_q(t, -3.0, 5.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -3.0, 5.0), qi)
        oshape = (in_shape[0], conv_out(in_shape[1], k[0], stride[0], pad),
                  conv_out(in_shape[2], k[1], stride[1], pad), in_shape[3])
        y = g.output("y", t, oshape, q_out or qi)
        g.op(op, [xi], [y], options("Pool2D", padding=PAD[pad], strideW=stride[1],
                                    strideH=stride[0], filterWidth=k[1], filterHeight=k[0],
                                    fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"l2_pool_2d_{_t}", "L2_POOL_2D", _t, "[1,6,6,2], 2x2, stride 2, VALID",
        _pool("L2_POOL_2D", _t, (1, 6, 6, 2), (2, 2), (2, 2), "VALID"))
add("l2_pool_2d_float32_same", "L2_POOL_2D", "float32", "[1,5,7,3], 3x2, stride 1, SAME",
    _pool("L2_POOL_2D", "float32", (1, 5, 7, 3), (3, 2), (1, 1), "SAME"))
add("l2_pool_2d_float32_relu6", "L2_POOL_2D", "float32", "[1,6,6,2], 2x2, stride 2, SAME, RELU6",
    _pool("L2_POOL_2D", "float32", (1, 6, 6, 2), (2, 2), (2, 2), "SAME", "RELU6"))


def _log_softmax(t, shape, lo=-4.0, hi=4.0):
    def build(g):
        qi = default_q(t, lo, hi)
        x = data_for(g.rng, t, shape, lo, hi)
        qo = {"int8": Q(16 / 256, 127), "uint8": Q(16 / 256, 255), "int16": Q(16 / 32768, 32767)
              }.get(t)
        unary(g, "LOG_SOFTMAX", t, x, qi, qo, options("LogSoftmax"))
    return build


for _t in NUM_TYPES:
    add(f"log_softmax_{_t}", "LOG_SOFTMAX", _t, "[4,16], along the last axis",
        _log_softmax(_t, (4, 16)))
add("log_softmax_int8_wide", "LOG_SOFTMAX", "int8", "[2,3,10], inputs over [-10, 6]",
    _log_softmax("int8", (2, 3, 10), -10.0, 6.0))
add("log_softmax_float32_wide", "LOG_SOFTMAX", "float32", "[2,3,10], inputs over [-30, 30]",
    _log_softmax("float32", (2, 3, 10), -30.0, 30.0))

# ---- MIRROR_PAD


def _mirror(t, shape, pads, mode, pad_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, shape), q)
        pi = g.const("paddings", pad_t, np.array(pads).reshape(-1, 2))
        y = g.output("y", t, tuple(s + sum(p) for s, p in zip(shape, pads)), q)
        g.op("MIRROR_PAD", [xi, pi], [y],
             options("MirrorPad", mode=getattr(S.MirrorPadMode, mode)))
    return build


for _mode in ("REFLECT", "SYMMETRIC"):
    _m = _mode.lower()
    for _t in ALL_TYPES:
        add(f"mirror_pad_{_t}_{_m}", "MIRROR_PAD", _t, f"{_mode}, [3,4] pads [[1,2],[2,1]]",
            _mirror(_t, (3, 4), [[1, 2], [2, 1]], _mode), probe=_t)
    add(f"mirror_pad_int8_{_m}_4d", "MIRROR_PAD", "int8",
        f"{_mode}, [1,3,4,2] pads [[0,0],[2,1],[1,3],[0,0]]",
        _mirror("int8", (1, 3, 4, 2), [[0, 0], [2, 1], [1, 3], [0, 0]], _mode))
    add(f"mirror_pad_float32_{_m}_paddings_int64", "MIRROR_PAD", "float32",
        f"{_mode}, int64 paddings", _mirror("float32", (4, 3), [[0, 3], [1, 0]], _mode, "int64"))

# ---- REDUCE_ALL / REDUCE_ANY


def _reduce(op, t, shape, axes, keep=False, q_out=None, lo=-4.0, hi=4.0, axes_t="int32"):
    def build(g):
        qi = default_q(t, lo, hi)
        xi = g.input("x", t, data_for(g.rng, t, shape, lo, hi), qi)
        ai = g.const("axes", axes_t, axes)
        ax = sorted({a % len(shape) for a in np.atleast_1d(axes)})
        oshape = tuple(1 if i in ax else s for i, s in enumerate(shape)) if keep else \
            tuple(s for i, s in enumerate(shape) if i not in ax)
        y = g.output("y", t, oshape, q_out if q_out is not None else qi)
        g.op(op, [xi, ai], [y], options("Reducer", keepDims=keep))
    return build


for _op in ("REDUCE_ALL", "REDUCE_ANY"):
    _p = _op.lower()
    add(f"{_p}_bool", _op, "bool", "[3,4,5] over axis 1", _reduce(_op, "bool", (3, 4, 5), [1]))
    add(f"{_p}_bool_keep_dims", _op, "bool", "[3,4,5] over axes [0,2], keep_dims",
        _reduce(_op, "bool", (3, 4, 5), [0, 2], keep=True))
    add(f"{_p}_bool_axis_neg", _op, "bool", "[3,4,2] over axis -1",
        _reduce(_op, "bool", (3, 4, 2), [-1]))

# ---- REVERSE_V2


def _reverse(t, shape, axes):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, shape), q)
        ai = g.const("axis", "int32", axes)
        y = g.output("y", t, shape, q)
        g.op("REVERSE_V2", [xi, ai], [y])
    return build


for _t in ALL_TYPES:
    add(f"reverse_v2_{_t}", "REVERSE_V2", _t, "[3,4,5] along axis 1", _reverse(_t, (3, 4, 5), [1]))
add("reverse_v2_float32_axes_0_1", "REVERSE_V2", "float32", "[3,4,5] along axes [0,1]",
    _reverse("float32", (3, 4, 5), [0, 1]))
add("reverse_v2_int16_axes_1_2", "REVERSE_V2", "int16", "[3,4,5] along axes [1,2]",
    _reverse("int16", (3, 4, 5), [1, 2]))
add("reverse_v2_int8_axis_neg", "REVERSE_V2", "int8", "[2,3,4] along axis -1",
    _reverse("int8", (2, 3, 4), [-1]))

# ---- SHAPE


def _shape(out_t, in_t="float32"):
    def build(g):
        xi = g.input("x", in_t, data_for(g.rng, in_t, (2, 3, 4)), default_q(in_t))
        y = g.output("y", out_t, (3,))
        g.op("SHAPE", [xi], [y], options("Shape", outType=DTYPES[out_t][0]))
    return build


for _t in ("int32", "int64"):
    add(f"shape_{_t}", "SHAPE", _t, f"shape of a float32 [2,3,4] as {_t}", _shape(_t))
add("shape_int32_of_int8", "SHAPE", "int32", "shape of an int8 [2,3,4]", _shape("int32", "int8"))

# ---- TRANSPOSE_CONV


def _conv_weights(g, t, shape, axis, per_channel=True):
    """Float weights and (data, quantization) for a conv weight tensor of type t."""
    w = g.rng.standard_normal(shape) / np.sqrt(np.prod(shape) / shape[axis])
    if t == "float32":
        return w.astype(np.float32), None
    if t in ("int32", "int64"):
        return np.round(w * 4), None
    if t == "uint8":  # the old uint8 scheme: per-tensor, zero point 128
        q = Q(float(np.abs(w).max() / 127.0), 128)
        return quantize(w, q, "uint8"), q
    wt = "int8"
    n = shape[axis]
    if per_channel:
        red = tuple(i for i in range(len(shape)) if i != axis)
        scales = np.maximum(np.abs(w).max(axis=red), 1e-3) / 127.0
        q = Q(scales, np.zeros(n, np.int64), axis)
    else:
        q = Q(float(np.abs(w).max() / 127.0), 0)
    return quantize(w, q, wt), q


def weight_type(t):
    return {"int16": "int8"}.get(t, t)


def _bias(g, t, n, in_q, w_q):
    """Constant bias: float32, int32 (int8 activations) or int64 (int16 activations)."""
    b = g.rng.uniform(-0.5, 0.5, n)
    if t == "float32":
        return g.const("bias", "float32", b.astype(np.float32))
    if t in ("int32", "int64"):
        return g.const("bias", t, np.round(b * 8))
    scales = np.asarray(in_q.scale, np.float64) * np.atleast_1d(np.asarray(w_q.scale))
    scales = np.broadcast_to(scales, (n,))
    bt = "int64" if t == "int16" else "int32"
    data = np.round(b / scales)
    q = Q(scales if len(np.atleast_1d(w_q.scale)) > 1 else float(scales[0]),
          np.zeros(n, np.int64) if len(np.atleast_1d(w_q.scale)) > 1 else 0, 0)
    return g.const("bias", bt, data, q)


def _tconv(t, in_shape, cout, k, stride, pad, bias=True, act="NONE", per_channel=True):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        cin = in_shape[3]
        w, wq = _conv_weights(g, t, (cout, k[0], k[1], cin), 0, per_channel)
        wi = g.const("weights", weight_type(t), w, wq)
        if pad == "SAME":
            oh, ow = in_shape[1] * stride[0], in_shape[2] * stride[1]
        else:
            oh = (in_shape[1] - 1) * stride[0] + k[0]
            ow = (in_shape[2] - 1) * stride[1] + k[1]
        oshape = (in_shape[0], oh, ow, cout)
        si = g.const("output_shape", "int32", oshape)
        bi = _bias(g, t, cout, qi, wq) if bias else -1
        y = g.output("y", t, oshape, default_q(t, -4.0, 5.0))
        g.op("TRANSPOSE_CONV", [si, wi, xi, bi], [y],
             options("TransposeConv", padding=PAD[pad], strideW=stride[1], strideH=stride[0],
                     fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"transpose_conv_{_t}", "TRANSPOSE_CONV", _t,
        "[1,3,4,3] -> [1,6,8,4], 3x3, stride 2, SAME, bias, per-channel weights",
        _tconv(_t, (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME"))
for _t in ("float32", "int8", "int16"):
    add(f"transpose_conv_{_t}_valid", "TRANSPOSE_CONV", _t,
        "[1,3,3,2] -> [1,7,7,3], 3x3, stride 2, VALID", _tconv(_t, (1, 3, 3, 2), 3, (3, 3), (2, 2),
                                                               "VALID"))
    add(f"transpose_conv_{_t}_no_bias", "TRANSPOSE_CONV", _t, "no bias, 2x3 kernel, stride (1,2)",
        _tconv(_t, (1, 4, 3, 2), 3, (2, 3), (1, 2), "SAME", bias=False))
add("transpose_conv_float32_relu", "TRANSPOSE_CONV", "float32", "fused RELU",
    _tconv("float32", (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME", act="RELU"))
add("transpose_conv_int8_relu6", "TRANSPOSE_CONV", "int8", "fused RELU6",
    _tconv("int8", (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME", act="RELU6"))
add("transpose_conv_int8_per_tensor", "TRANSPOSE_CONV", "int8", "per-tensor weight scale",
    _tconv("int8", (1, 3, 4, 3), 4, (3, 3), (2, 2), "SAME", per_channel=False))

# ---- ZEROS_LIKE

for _t in ALL_TYPES:
    add(f"zeros_like_{_t}", "ZEROS_LIKE", _t, "[3,5]",
        (lambda t: lambda g: unary(g, "ZEROS_LIKE", t, data_for(g.rng, t, (3, 5)),
                                   default_q(t), default_q(t)))(_t))
