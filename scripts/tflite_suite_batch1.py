"""The TFLite suite's first batch: the ops real models need first (LEAKY_RELU, PRELU, the
resizes, elementwise math, comparisons, BATCH_MATMUL, SQUARED_DIFFERENCE, DIV, logical ops,
SELECT, CAST, GATHER, ARG_MAX/ARG_MIN).

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403

# ================================================================ batch 1
batch(1)

# ---- LEAKY_RELU


def _leaky(t, alpha, qo=None):
    def build(g):
        x, qi = unary_input(g, t, -6.0, 4.0)
        q = None
        if t in QUANT:
            q = qo or qrange(min(-6.0 * alpha, 0.0), 4.0, t)
        unary(g, "LEAKY_RELU", t, x, qi, q, options("LeakyRelu", alpha=alpha))
    return build


for _t in ALL_TYPES:
    add(f"leaky_relu_{_t}", "LEAKY_RELU", _t, "alpha 0.2", _leaky(_t, 0.2))
add("leaky_relu_int8_alpha_small", "LEAKY_RELU", "int8", "alpha 0.01, output scale differs",
    _leaky("int8", 0.01, qrange(-0.5, 5.0, "int8")))
add("leaky_relu_int8_alpha_big", "LEAKY_RELU", "int8", "alpha 1.7 (> 1)",
    _leaky("int8", 1.7, qrange(-10.5, 4.5, "int8")))
add("leaky_relu_int16_alpha_small", "LEAKY_RELU", "int16", "alpha 0.01, output scale differs",
    _leaky("int16", 0.01, Q(4.0 / 32767 * 1.3, 0)))

# ---- PRELU


def _prelu(t, alpha_shape):
    def build(g):
        shape = (1, 8, 8, 4)
        if t in QUANT:
            x, qi = data_for(g.rng, t, shape, sweep=True), qrange(-5.0, 3.0, t)
        else:
            x, qi = data_for(g.rng, t, shape, -5.0, 3.0), None
        alpha = g.rng.uniform(-0.3, 0.6, alpha_shape)
        xi = g.input("x", t, x, qi)
        if t in QUANT:
            qa = qrange(-0.3, 0.6, t)
            ai = g.const("alpha", t, quantize(alpha, qa, t), qa)
            qo = qrange(-1.6, 3.0, t)
        else:
            ai = g.const("alpha", t, alpha.astype(np.float32) if t == "float32"
                         else np.round(alpha * 4))
            qo = None
        y = g.output("y", t, shape, qo)
        g.op("PRELU", [xi, ai], [y])
    return build


for _t in NUM_TYPES:
    add(f"prelu_{_t}", "PRELU", _t, "x [1,8,8,4], constant alpha [1,1,4] (shared over H, W)",
        _prelu(_t, (1, 1, 4)))
for _t in ("float32", "int8", "int16"):
    add(f"prelu_{_t}_alpha_hwc", "PRELU", _t, "constant alpha [8,8,4] (one per element)",
        _prelu(_t, (8, 8, 4)))
    add(f"prelu_{_t}_alpha_c", "PRELU", _t, "constant alpha [4] (rank 1, per channel)",
        _prelu(_t, (4,)))

# ---- RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR


def _resize(op, t, in_hw, out_hw, align=False, half=False, channels=3):
    def build(g):
        shape = (1, *in_hw, channels)
        q = default_q(t, -3.0, 5.0)
        x = data_for(g.rng, t, shape, -3.0, 5.0)
        xi = g.input("x", t, x, q)
        size = g.const("size", "int32", list(out_hw))
        y = g.output("y", t, (1, *out_hw, channels), q)
        kind = "ResizeBilinear" if op == "RESIZE_BILINEAR" else "ResizeNearestNeighbor"
        g.op(op, [xi, size], [y], options(kind, alignCorners=align, halfPixelCenters=half))
    return build


for _op in ("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"):
    _p = _op.lower()
    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[1,5,4,3] -> [1,8,7,3], constant size",
            _resize(_op, _t, (5, 4), (8, 7)))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_align_corners", _op, _t, "[1,5,4,3] -> [1,8,7,3], align_corners",
            _resize(_op, _t, (5, 4), (8, 7), align=True))
        add(f"{_p}_{_t}_half_pixel", _op, _t, "[1,5,4,3] -> [1,8,7,3], half_pixel_centers",
            _resize(_op, _t, (5, 4), (8, 7), half=True))
    add(f"{_p}_float32_down", _op, "float32", "[1,9,7,2] -> [1,4,3,2] (downscale)",
        _resize(_op, "float32", (9, 7), (4, 3), channels=2))
    add(f"{_p}_int8_down_half_pixel", _op, "int8",
        "[1,9,7,2] -> [1,4,3,2] (downscale), half_pixel_centers",
        _resize(_op, "int8", (9, 7), (4, 3), half=True, channels=2))
    add(f"{_p}_int8_up2x_align_corners", _op, "int8",
        "[1,3,4,2] -> [1,6,8,2] (exact 2x), align_corners",
        _resize(_op, "int8", (3, 4), (6, 8), align=True, channels=2))

# ---- elementwise math

unary_family("RSQRT", "1/sqrt(x), x in (0, 8]", 0.0, 8.0, (0.3, 4.0), float_lo=0.02)
unary_family("SQRT", "sqrt(x), x in [0, 8]", 0.0, 8.0, (0.0, 2.9))
unary_family("LOG", "log(x), x in (0, 8]", 0.0, 8.0, (-4.0, 2.1), float_lo=0.01)
unary_family("EXP", "exp(x), x in [-5, 3]", -5.0, 3.0, (0.0, 20.1))
unary_family("ABS", "|x|", -5.0, 3.0, (0.0, 5.0))
unary_family("NEG", "-x", -5.0, 3.0, (-3.0, 5.0))
unary_family("SQUARE", "x*x", -3.0, 2.0, (0.0, 9.0))
unary_family("HARD_SWISH", "x*relu6(x+3)/6", -5.0, 5.0, (-0.375, 5.0))
unary_family("ELU", "x>0 ? x : exp(x)-1", -5.0, 3.0, (-1.0, 3.0))
unary_family("LOGICAL_NOT", "!x", 0, 1, None, types=("bool",))
add("abs_int8_same_q", "ABS", "int8", "|x| with output quantization equal to the input's",
    lambda g: unary(g, "ABS", "int8", sweep_int8(g.rng), qrange(-4.0, 6.0, "int8"),
                    qrange(-4.0, 6.0, "int8")))
add("hard_swish_int8_narrow", "HARD_SWISH", "int8", "input [-2, 1.5], output scale finer",
    lambda g: unary(g, "HARD_SWISH", "int8", sweep_int8(g.rng), qrange(-2.0, 1.5, "int8"),
                    qrange(-0.4, 1.2, "int8")))

# ---- comparisons


def _cmp_data(g, t, shape):
    """Small values with many ties."""
    if t == "float32":
        return (g.rng.integers(-6, 7, shape) / 2.0).astype(np.float32)
    if t == "bool":
        return bools(g.rng, shape)
    if t == "uint8":
        return g.rng.integers(120, 136, shape)
    return g.rng.integers(-8, 8, shape)


_CMP_FN = {"GREATER_EQUAL": np.greater_equal, "GREATER": np.greater, "LESS": np.less,
           "LESS_EQUAL": np.less_equal, "EQUAL": np.equal, "NOT_EQUAL": np.not_equal}


def _cmp(op, t, sa, sb, rescale=False):
    def build(g):
        a, b = _cmp_data(g, t, sa), _cmp_data(g, t, sb)
        if sb == ():
            b = np.array(1)  # mid-range: both answers occur
        qa = qb = default_q(t, -3.0, 5.0)
        if rescale:
            # b on a grid twice as coarse as a: many of a's values equal one of b's exactly
            qa, qb = Q(0.05, -3), Q(0.1, 5)
            a = g.rng.integers(-128, 128, sa)
            b = g.rng.integers(-20, 20, sb)
            real_b = 0.1 * (np.broadcast_to(b, bcast(sa, sb)) - 5)
            eq = np.round(real_b / 0.05) - 3
            # an element of a, wherever it meets b's first element under broadcasting
            eq = eq.reshape(-1)[0] if np.shape(a) != np.shape(eq) else eq
            a = np.where(g.rng.random(sa) < 0.5, eq, a)
        else:
            # same quantization (or none): the raw comparison is the answer
            g.check = lambda ins, outs: (None if np.array_equal(
                _CMP_FN[op](ins[0], ins[1]), outs[0]) else
                "TFLM's output is not the comparison of its inputs")
        binary(g, op, t, a, b, qa, qb, None, out_t="bool")
    return build


for _op in ("GREATER_EQUAL", "GREATER", "LESS", "LESS_EQUAL", "EQUAL", "NOT_EQUAL"):
    _p = _op.lower()
    for _t in ALL_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[4,16] vs [4,16], many ties", _cmp(_op, _t, (4, 16), (4, 16)))
    add(f"{_p}_int8_rescale", _op, "int8",
        "inputs quantized differently (s 0.05 zp -3 vs s 0.1 zp 5), half equal",
        _cmp(_op, "int8", (4, 16), (4, 16), rescale=True))
    add(f"{_p}_float32_broadcast", _op, "float32", "[2,3,1,4] vs [3,5,1]",
        _cmp(_op, "float32", (2, 3, 1, 4), (3, 5, 1)))
    add(f"{_p}_int8_broadcast", _op, "int8", "[2,1,5] vs [4,1], differently quantized",
        _cmp(_op, "int8", (2, 1, 5), (4, 1), rescale=True))
    add(f"{_p}_int32_broadcast", _op, "int32", "[3,4] vs scalar []",
        _cmp(_op, "int32", (3, 4), ()))
    add(f"{_p}_float32_broadcast_rank5", _op, "float32", "[2,1,3,1,2] vs [1,2,1,3,1]",
        _cmp(_op, "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))

# ---- BATCH_MATMUL


def _bmm(t, sa, sb, adj_x=False, adj_y=False, const_b=False):
    def build(g):
        qa = default_q(t, -3.0, 4.0)
        qb = {"int8": Q(0.03, 0), "int16": Q(4.0 / 32767, 0)}.get(t)
        if t == "uint8":
            qb = Q(0.03, 128)
        a = data_for(g.rng, t, sa, -3.0, 4.0) if t != "int32" else ints(g.rng, sa, -20, 20)
        b = data_for(g.rng, t, sb, -3.0, 4.0) if t != "int32" else ints(g.rng, sb, -20, 20)
        ai = g.input("a", t, a, qa)
        bi = g.const("b", t, b, qb) if const_b else g.input("b", t, b, qb)
        m = sa[-1] if adj_x else sa[-2]
        n = sb[-2] if adj_y else sb[-1]
        shape = (*bcast(sa[:-2], sb[:-2]), m, n)
        qo = default_q(t, -20.0, 24.0)
        y = g.output("y", t, shape, qo)
        g.op("BATCH_MATMUL", [ai, bi], [y], options("BatchMatMul", adjX=adj_x, adjY=adj_y))
    return build


for _t in NUM_TYPES:
    add(f"batch_matmul_{_t}", "BATCH_MATMUL", _t, "[2,3,4] x [2,4,5], both runtime inputs",
        _bmm(_t, (2, 3, 4), (2, 4, 5)))
for _t in ("float32", "int8", "int16"):
    add(f"batch_matmul_{_t}_adj_x", "BATCH_MATMUL", _t, "adj_x: [2,4,3]^T x [2,4,5]",
        _bmm(_t, (2, 4, 3), (2, 4, 5), adj_x=True))
    add(f"batch_matmul_{_t}_adj_y", "BATCH_MATMUL", _t, "adj_y: [2,3,4] x [2,5,4]^T",
        _bmm(_t, (2, 3, 4), (2, 5, 4), adj_y=True))
    add(f"batch_matmul_{_t}_broadcast", "BATCH_MATMUL", _t,
        "batch broadcast [2,1,3,4] x [1,3,4,5]", _bmm(_t, (2, 1, 3, 4), (1, 3, 4, 5)))
    add(f"batch_matmul_{_t}_const_rhs", "BATCH_MATMUL", _t, "[1,3,6] x constant [6,4] (rank 2)",
        _bmm(_t, (1, 3, 6), (6, 4), const_b=True))
add("batch_matmul_float32_adj_xy", "BATCH_MATMUL", "float32", "adj_x and adj_y",
    _bmm("float32", (2, 4, 3), (2, 5, 4), adj_x=True, adj_y=True))
add("batch_matmul_float32_rank2", "BATCH_MATMUL", "float32", "[3,4] x [4,5]",
    _bmm("float32", (3, 4), (4, 5)))
add("batch_matmul_float32_rank5", "BATCH_MATMUL", "float32", "[2,1,2,3,4] x [1,2,1,4,3]",
    _bmm("float32", (2, 1, 2, 3, 4), (1, 2, 1, 4, 3)))
add("batch_matmul_int8_const_rhs_adj_y", "BATCH_MATMUL", "int8", "constant rhs [4,6]^T, adj_y",
    _bmm("int8", (1, 3, 6), (4, 6), adj_y=True, const_b=True))

# ---- SQUARED_DIFFERENCE, DIV


def _binary_arith(op, t, sa, sb, act=None, kind=None, nonzero_b=False, out=(-8.0, 8.0)):
    def build(g):
        qa, qb = default_q(t, -4.0, 4.0), default_q(t, -2.0, 3.0)
        a = data_for(g.rng, t, sa, -4.0, 4.0)
        b = data_for(g.rng, t, sb, -2.0, 3.0)
        if t in ("int32", "int64"):
            a, b = ints(g.rng, sa, -100, 100, t), ints(g.rng, sb, -100, 100, t)
        if nonzero_b:
            if t == "float32":
                b = (g.rng.uniform(0.25, 3.0, sb) * g.rng.choice([-1, 1], sb)).astype(np.float32)
            elif t in QUANT:
                zp = qb.zero_point  # neither a real 0 nor a raw 0
                b = np.where((b.astype(np.int64) == zp) | (b == 0), zp + 1 if zp else 1, b)
            else:
                b = np.where(b == 0, 7, b)
        qo = default_q(t, *out)
        opts = None
        if kind:
            opts = options(kind, fusedActivationFunction=ACT[act or "NONE"])
        binary(g, op, t, a, b, qa, qb, qo, opts)
    return build


for _t in NUM_TYPES:
    add(f"squared_difference_{_t}", "SQUARED_DIFFERENCE", _t, "[4,16] and [4,16]",
        _binary_arith("SQUARED_DIFFERENCE", _t, (4, 16), (4, 16), out=(0.0, 40.0)))
for _t in ("float32", "int8", "int16"):
    add(f"squared_difference_{_t}_broadcast", "SQUARED_DIFFERENCE", _t, "[2,3,4] and [3,1]",
        _binary_arith("SQUARED_DIFFERENCE", _t, (2, 3, 4), (3, 1), out=(0.0, 40.0)))
add("squared_difference_float32_broadcast_rank5", "SQUARED_DIFFERENCE", "float32",
    "[2,1,3,1,2] and [1,2,1,3,1]", _binary_arith("SQUARED_DIFFERENCE", "float32",
                                                  (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))
add("div_float32_broadcast_rank5", "DIV", "float32", "[2,1,3,1,2] / [1,2,1,3,1]",
    _binary_arith("DIV", "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1), kind="Div",
                  nonzero_b=True, out=(-10.0, 10.0)))

for _t in NUM_TYPES:
    add(f"div_{_t}", "DIV", _t, "[4,16] / [4,16], nonzero divisors",
        _binary_arith("DIV", _t, (4, 16), (4, 16), kind="Div", nonzero_b=True,
                      out=(-10.0, 10.0)))
for _t in ("float32", "int8"):
    add(f"div_{_t}_broadcast", "DIV", _t, "[2,3,4] / [4], nonzero divisors",
        _binary_arith("DIV", _t, (2, 3, 4), (4,), kind="Div", nonzero_b=True, out=(-10.0, 10.0)))
    add(f"div_{_t}_relu", "DIV", _t, "fused RELU",
        _binary_arith("DIV", _t, (4, 16), (4, 16), act="RELU", kind="Div", nonzero_b=True,
                      out=(0.0, 10.0)))
    add(f"div_{_t}_relu6", "DIV", _t, "fused RELU6",
        _binary_arith("DIV", _t, (4, 16), (4, 16), act="RELU6", kind="Div", nonzero_b=True,
                      out=(0.0, 6.0)))

# ---- LOGICAL_AND / LOGICAL_OR


def _logical(op, sa, sb):
    return lambda g: binary(g, op, "bool", bools(g.rng, sa), bools(g.rng, sb))


for _op in ("LOGICAL_AND", "LOGICAL_OR"):
    add(f"{_op.lower()}_bool", _op, "bool", "[4,16] and [4,16]", _logical(_op, (4, 16), (4, 16)))
    add(f"{_op.lower()}_bool_broadcast", _op, "bool", "[2,3,4] and [3,1]",
        _logical(_op, (2, 3, 4), (3, 1)))

# ---- SELECT_V2 / SELECT


def _select(op, t, sc_, sx, sy):
    def build(g):
        q = default_q(t)
        c = g.input("cond", "bool", bools(g.rng, sc_))
        x = g.input("x", t, data_for(g.rng, t, sx), q)
        y = g.input("y", t, data_for(g.rng, t, sy), q)
        o = g.output("out", t, bcast(sc_, sx, sy) if op == "SELECT_V2" else sx, q)
        g.op(op, [c, x, y], [o])
    return build


for _t in ALL_TYPES:
    add(f"select_v2_{_t}", "SELECT_V2", _t, "cond, x, y all [4,16]",
        _select("SELECT_V2", _t, (4, 16), (4, 16), (4, 16)))
for _t in ("float32", "int8", "int16", "int32"):
    add(f"select_v2_{_t}_broadcast", "SELECT_V2", _t, "cond [3,1], x [2,1,4], y [4]",
        _select("SELECT_V2", _t, (3, 1), (2, 1, 4), (4,)))
add("select_v2_float32_broadcast_rank5", "SELECT_V2", "float32",
    "cond [2,1,3,1,1], x [1,2,1,2,1], y [2]",
    _select("SELECT_V2", "float32", (2, 1, 3, 1, 1), (1, 2, 1, 2, 1), (2,)))
for _t in ALL_TYPES:
    add(f"select_{_t}", "SELECT", _t, "cond, x, y all [4,16]",
        _select("SELECT", _t, (4, 16), (4, 16), (4, 16)))
add("select_float32_rank1_cond", "SELECT", "float32", "cond [4] picks rows of x, y [4,5]",
    _select("SELECT", "float32", (4,), (4, 5), (4, 5)))

# ---- CAST

_CAST_RANGE = {"float32": (-100.0, 100.0), "int8": (-128, 127), "int16": (-32768, 32767),
               "uint8": (0, 255), "int32": (-70000, 70000), "int64": (-5 * 10**9, 5 * 10**9)}
_CAST_FLOAT_TO = {"int8": (-128.0, 127.0), "int16": (-3000.0, 3000.0), "uint8": (0.0, 255.0),
                  "int32": (-1e6, 1e6), "int64": (-1e6, 1e6), "bool": (-2.0, 2.0),
                  "float32": (-100.0, 100.0)}


def _cast(src, dst):
    def build(g):
        shape = (4, 16)
        if src == "bool":
            x = bools(g.rng, shape)
        elif src == "float32":
            x = uniform(g.rng, shape, *_CAST_FLOAT_TO[dst])
            x.flat[:4] = [0.0, -0.0, 0.5, -0.5] if dst not in ("uint8",) else [0, 0.5, 1.5, 2.5]
        else:
            lo, hi = _CAST_RANGE[src]
            x = ints(g.rng, shape, lo, hi, src)
            x.flat[:3] = [0, lo, hi]
        unary(g, "CAST", src, x, out_t=dst,
              opts=options("Cast", inDataType=DTYPES[src][0], outDataType=DTYPES[dst][0]))
    return build


for _s in ALL_TYPES:
    for _d in ALL_TYPES:
        if _s != _d:
            add(f"cast_{_s}_to_{_d}", "CAST", _s, f"{_s} -> {_d}", _cast(_s, _d),
                probe=f"{_s}->{_d}")

# ---- GATHER


def _gather(t, params_shape, idx, axis=0, batch_dims=0, idx_t="int32"):
    def build(g):
        q = default_q(t)
        p = data_for(g.rng, t, params_shape)
        pi = g.input("params", t, p, q)
        ii = g.input("indices", idx_t, idx(g.rng))
        ax = axis % len(params_shape)
        ishape = np.shape(idx(np.random.default_rng(0)))
        shape = (*params_shape[:ax], *ishape[batch_dims:], *params_shape[ax + 1:])
        y = g.output("y", t, shape, q)
        g.op("GATHER", [pi, ii], [y], options("Gather", axis=axis, batchDims=batch_dims))
    return build


for _t in ALL_TYPES:
    add(f"gather_{_t}", "GATHER", _t, "params [5,6], indices [4] (int32), axis 0",
        _gather(_t, (5, 6), lambda r: r.integers(0, 5, (4,))))
for _t in ("float32", "int8", "int16"):
    add(f"gather_{_t}_axis1", "GATHER", _t, "params [3,7,2], indices [2,3], axis 1",
        _gather(_t, (3, 7, 2), lambda r: r.integers(0, 7, (2, 3)), axis=1))
add("gather_float32_axis_neg", "GATHER", "float32", "params [3,4,6], indices [5], axis -1",
    _gather("float32", (3, 4, 6), lambda r: r.integers(0, 6, (5,)), axis=-1))
add("gather_int8_indices_int64", "GATHER", "int8", "params [6,4], indices [3,2] int64, axis 0",
    _gather("int8", (6, 4), lambda r: r.integers(0, 6, (3, 2)), idx_t="int64"))
add("gather_float32_batch_dims", "GATHER", "float32",
    "params [2,5,3], indices [2,4], axis 1, batch_dims 1",
    _gather("float32", (2, 5, 3), lambda r: r.integers(0, 5, (2, 4)), axis=1, batch_dims=1))
add("gather_int8_batch_dims_axis2", "GATHER", "int8",
    "params [2,3,5,2], indices [2,3,4], axis 2, batch_dims 2",
    _gather("int8", (2, 3, 5, 2), lambda r: r.integers(0, 5, (2, 3, 4)), axis=2, batch_dims=2))

# ---- ARG_MAX / ARG_MIN


def _arg(op, t, shape, axis, out_t="int32", axis_t="int32"):
    def build(g):
        q = default_q(t)
        x = _cmp_data(g, t, shape)  # small values: many ties
        if t == "int8":
            x = g.rng.integers(-128, -120, shape)
        xi = g.input("x", t, x, q)
        ai = g.const("axis", axis_t, [axis])
        ax = axis % len(shape)
        y = g.output("y", out_t, shape[:ax] + shape[ax + 1:])
        kind = "ArgMax" if op == "ARG_MAX" else "ArgMin"
        g.op(op, [xi, ai], [y], options(kind, outputType=DTYPES[out_t][0]))
    return build


for _op in ("ARG_MAX", "ARG_MIN"):
    _p = _op.lower()
    for _t in ALL_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[3,4,5] along axis 2 (last), int32 output, ties",
            _arg(_op, _t, (3, 4, 5), 2))
    add(f"{_p}_float32_axis1", _op, "float32", "[3,4,5] along axis 1",
        _arg(_op, "float32", (3, 4, 5), 1))
    add(f"{_p}_int8_axis0", _op, "int8", "[3,4,5] along axis 0", _arg(_op, "int8", (3, 4, 5), 0))
    add(f"{_p}_float32_axis_neg", _op, "float32", "[3,4,5] along axis -2",
        _arg(_op, "float32", (3, 4, 5), -2))
    add(f"{_p}_int8_int64_out", _op, "int8", "int64 output, int64 axis tensor",
        _arg(_op, "int8", (4, 6), 1, out_t="int64", axis_t="int64"))
    add(f"{_p}_int16_axis0", _op, "int16", "[6,5] along axis 0", _arg(_op, "int16", (6, 5), 0))
