"""The TFLite suite's cases of the builtins Kiln had first that move tensors: RESHAPE, SQUEEZE,
EXPAND_DIMS, TRANSPOSE, PAD, CONCATENATION, the slices, SPLIT, PACK/UNPACK, SPACE_TO_DEPTH /
DEPTH_TO_SPACE, SOFTMAX.

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403

# ---- RESHAPE / SQUEEZE / EXPAND_DIMS


def _reshape(t, in_shape, new, mode="tensor"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        size = int(np.prod(in_shape))
        oshape = [d if d != -1 else size // -int(np.prod(new)) for d in new]
        ins = [xi]
        if mode == "tensor":
            ins.append(g.const("shape", "int32", new))
        opts = options("Reshape", newShape=list(new)) if mode == "options" else None
        y = g.output("y", t, oshape, q)
        g.op("RESHAPE", ins, [y], opts)
    return build


for _t in ALL_TYPES:
    add(f"reshape_{_t}", "RESHAPE", _t, "[2,3,4] -> [4,6], constant shape tensor",
        _reshape(_t, (2, 3, 4), [4, 6]))
add("reshape_float32_minus_one", "RESHAPE", "float32", "[2,3,4] -> [-1,2] = [12,2]",
    _reshape("float32", (2, 3, 4), [-1, 2]))
add("reshape_int8_new_shape_option", "RESHAPE", "int8",
    "[1,2,6] -> [3,4] from the new_shape option, no shape tensor",
    _reshape("int8", (1, 2, 6), [3, 4], mode="options"))


def _squeeze(t, in_shape, dims):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        nd = len(in_shape)
        drop = {d % nd for d in dims} if dims else {i for i, s in enumerate(in_shape) if s == 1}
        y = g.output("y", t, [s for i, s in enumerate(in_shape) if i not in drop], q)
        g.op("SQUEEZE", [xi], [y], options("Squeeze", squeezeDims=list(dims)))
    return build


for _t in ALL_TYPES:
    add(f"squeeze_{_t}", "SQUEEZE", _t, "[1,3,1,4] squeeze_dims [0,2]",
        _squeeze(_t, (1, 3, 1, 4), [0, 2]))
add("squeeze_float32_all", "SQUEEZE", "float32", "[1,3,1,4,1], no squeeze_dims: all 1s",
    _squeeze("float32", (1, 3, 1, 4, 1), []))
add("squeeze_int8_negative", "SQUEEZE", "int8", "[2,1,3,1] squeeze_dims [-1]",
    _squeeze("int8", (2, 1, 3, 1), [-1]))


def _expand(t, in_shape, axis, axis_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        ai = g.const("axis", axis_t, [axis])
        ax = axis % (len(in_shape) + 1)
        oshape = list(in_shape[:ax]) + [1] + list(in_shape[ax:])
        y = g.output("y", t, oshape, q)
        g.op("EXPAND_DIMS", [xi, ai], [y])
    return build


for _t in ALL_TYPES:
    add(f"expand_dims_{_t}", "EXPAND_DIMS", _t, "[3,4] axis 1 -> [3,1,4]", _expand(_t, (3, 4), 1))
add("expand_dims_float32_negative", "EXPAND_DIMS", "float32", "[3,4] axis -1 -> [3,4,1]",
    _expand("float32", (3, 4), -1))
add("expand_dims_int8_axis_int64", "EXPAND_DIMS", "int8", "[3,4] int64 axis 0 -> [1,3,4]",
    _expand("int8", (3, 4), 0, "int64"))

# ---- TRANSPOSE


def _transpose(t, in_shape, perm):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        pi = g.const("perm", "int32", perm)
        y = g.output("y", t, [in_shape[p] for p in perm], q)
        g.op("TRANSPOSE", [xi, pi], [y])
    return build


for _t in ALL_TYPES:
    add(f"transpose_{_t}", "TRANSPOSE", _t, "[2,3,4] perm [2,0,1]",
        _transpose(_t, (2, 3, 4), [2, 0, 1]))
add("transpose_float32_rank2", "TRANSPOSE", "float32", "[5,7] perm [1,0]",
    _transpose("float32", (5, 7), [1, 0]))
add("transpose_int8_rank4", "TRANSPOSE", "int8", "[1,2,3,4] NHWC->NCHW perm [0,3,1,2]",
    _transpose("int8", (1, 2, 3, 4), [0, 3, 1, 2]))
add("transpose_float32_rank5", "TRANSPOSE", "float32", "[2,1,3,2,2] perm [4,2,0,3,1]",
    _transpose("float32", (2, 1, 3, 2, 2), [4, 2, 0, 3, 1]))
add("transpose_int8_rank6", "TRANSPOSE", "int8", "[2,1,2,3,1,2] perm [5,4,3,2,1,0]",
    _transpose("int8", (2, 1, 2, 3, 1, 2), [5, 4, 3, 2, 1, 0]))

# ---- PAD / PADV2


def _pad(op, t, in_shape, pads, value=None, pad_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        pi = g.const("paddings", pad_t, np.array(pads).reshape(-1, 2))
        ins = [xi, pi]
        if value is not None:
            v = value if t == "float32" else (quantize(value, q, t) if t in QUANT else
                                              np.round(value))
            ins.append(g.const("value", t, np.asarray(v).reshape(()), q))
        y = g.output("y", t, [s + sum(p) for s, p in zip(in_shape, pads)], q)
        g.op(op, ins, [y])
    return build


for _t in ALL_TYPES:
    add(f"pad_{_t}", "PAD", _t, "[1,3,4,2] pads [[0,0],[1,2],[2,0],[0,0]] (zero point)",
        _pad("PAD", _t, (1, 3, 4, 2), [[0, 0], [1, 2], [2, 0], [0, 0]]))
add("pad_float32_rank2", "PAD", "float32", "[3,4] pads [[1,1],[0,3]]",
    _pad("PAD", "float32", (3, 4), [[1, 1], [0, 3]]))
add("pad_int8_paddings_int64", "PAD", "int8", "int64 paddings, [2,3] pads [[2,1],[1,2]]",
    _pad("PAD", "int8", (2, 3), [[2, 1], [1, 2]], pad_t="int64"))
add("pad_float32_rank5", "PAD", "float32", "[1,2,2,2,2] pads [[0,1],[1,0],[0,1],[1,1],[0,0]]",
    _pad("PAD", "float32", (1, 2, 2, 2, 2), [[0, 1], [1, 0], [0, 1], [1, 1], [0, 0]]))
for _t in ALL_TYPES:
    add(f"padv2_{_t}", "PADV2", _t, "[1,3,4,2] pads [[0,0],[1,2],[2,0],[0,0]], value 1.5",
        _pad("PADV2", _t, (1, 3, 4, 2), [[0, 0], [1, 2], [2, 0], [0, 0]], value=1.5))
add("padv2_int8_negative_value", "PADV2", "int8", "[3,4] pads [[1,0],[2,2]], value -3.9",
    _pad("PADV2", "int8", (3, 4), [[1, 0], [2, 2]], value=-3.9))

# ---- CONCATENATION


def _concat(t, shapes, axis, same_q=True, act="NONE"):
    def build(g):
        ins = []
        for k, s in enumerate(shapes):
            q = default_q(t) if same_q else default_q(t, -1.0 - k, 2.0 + 2 * k)
            ins.append(g.input(f"x{k}", t, data_for(g.rng, t, s), q))
        ax = axis % len(shapes[0])
        oshape = list(shapes[0])
        oshape[ax] = sum(s[ax] for s in shapes)
        y = g.output("y", t, oshape, default_q(t) if same_q else default_q(t, -3.0, 6.0))
        g.op("CONCATENATION", ins, [y],
             options("Concatenation", axis=axis, fusedActivationFunction=ACT[act]))
    return build


for _t in ALL_TYPES:
    add(f"concatenation_{_t}", "CONCATENATION", _t, "[2,3,4], [2,2,4], [2,1,4] along axis 1",
        _concat(_t, [(2, 3, 4), (2, 2, 4), (2, 1, 4)], 1))
add("concatenation_float32_axis_neg", "CONCATENATION", "float32", "[2,3], [2,5] along axis -1",
    _concat("float32", [(2, 3), (2, 5)], -1))
add("concatenation_int8_axis0", "CONCATENATION", "int8", "[1,2,3,2], [2,2,3,2] along axis 0",
    _concat("int8", [(1, 2, 3, 2), (2, 2, 3, 2)], 0))
add("concatenation_int8_requantize", "CONCATENATION", "int8",
    "inputs quantized differently from the output", _concat("int8", [(2, 4), (2, 3)], 1, False))
add("concatenation_float32_relu", "CONCATENATION", "float32", "fused RELU",
    _concat("float32", [(2, 4), (2, 3)], 1, act="RELU"))

# ---- STRIDED_SLICE / SLICE


def _strided(t, in_shape, begin, end, strides, idx_t="int32", **masks):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        b = g.const("begin", idx_t, begin)
        e = g.const("end", idx_t, end)
        s = g.const("strides", idx_t, strides)
        shape = None  # left to shape inference when masks are involved
        if not masks:
            shape = np.empty(in_shape)[tuple(map(slice, begin, end, strides))].shape
        y = g.output("y", t, shape, q)
        g.op("STRIDED_SLICE", [xi, b, e, s], [y], options("StridedSlice", **masks))
    return build


for _t in ALL_TYPES:
    add(f"strided_slice_{_t}", "STRIDED_SLICE", _t, "[4,6,3] begin [1,0,0] end [3,6,2] "
        "strides [1,2,1]", _strided(_t, (4, 6, 3), [1, 0, 0], [3, 6, 2], [1, 2, 1]))
add("strided_slice_float32_negative_stride", "STRIDED_SLICE", "float32",
    "[5,6] begin [-1,4] end [0,0] strides [-2,-1] (reversed)",
    _strided("float32", (5, 6), [-1, 4], [0, 0], [-2, -1]))
add("strided_slice_int8_masks", "STRIDED_SLICE", "int8",
    "[4,5,6] begin_mask 1, end_mask 4, shrink_axis_mask 2",
    _strided("int8", (4, 5, 6), [2, 3, 1], [3, 4, 5], [1, 1, 2], beginMask=1, endMask=4,
             shrinkAxisMask=2))
add("strided_slice_float32_ellipsis", "STRIDED_SLICE", "float32",
    "[2,3,4,5] ellipsis_mask 1: [..., 1:4:2]",
    _strided("float32", (2, 3, 4, 5), [0, 1], [0, 4], [1, 2], ellipsisMask=1))
add("strided_slice_int8_new_axis", "STRIDED_SLICE", "int8", "[3,4] new_axis_mask 2: [1:, None, :3]",
    _strided("int8", (3, 4), [1, 0, 0], [3, 0, 3], [1, 1, 1], newAxisMask=2))
add("strided_slice_float32_offset", "STRIDED_SLICE", "float32",
    "offset: end is relative to begin ([4,6] begin [1,2] end [2,3])",
    _strided("float32", (4, 6), [1, 2], [2, 3], [1, 1], offset=True))
add("strided_slice_int16_rank5", "STRIDED_SLICE", "int16", "[2,3,2,4,3] with strides 2 and -1",
    _strided("int16", (2, 3, 2, 4, 3), [0, 0, 0, 3, 0], [2, 3, 2, 0, 3], [1, 2, 1, -1, 2]))
add("strided_slice_float32_indices_int64", "STRIDED_SLICE", "float32", "int64 begin/end/strides",
    _strided("float32", (4, 6), [1, 1], [4, 5], [2, 1], idx_t="int64"))


def _slice(t, in_shape, begin, size, idx_t="int32"):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        b = g.const("begin", idx_t, begin)
        s = g.const("size", idx_t, size)
        oshape = [sz if sz != -1 else d - bg for d, bg, sz in zip(in_shape, begin, size)]
        y = g.output("y", t, oshape, q)
        g.op("SLICE", [xi, b, s], [y])
    return build


for _t in ALL_TYPES:
    add(f"slice_{_t}", "SLICE", _t, "[4,5,3] begin [1,2,0] size [2,3,3]",
        _slice(_t, (4, 5, 3), [1, 2, 0], [2, 3, 3]))
add("slice_float32_size_minus_one", "SLICE", "float32", "[4,5] begin [1,2] size [-1,2]",
    _slice("float32", (4, 5), [1, 2], [-1, 2]))
add("slice_int8_int64_indices", "SLICE", "int8", "int64 begin/size, rank 5",
    _slice("int8", (2, 3, 2, 3, 2), [1, 0, 1, 1, 0], [1, 2, 1, 2, 2], "int64"))

# ---- SPLIT / SPLIT_V


def _split(t, in_shape, axis, n):
    def build(g):
        q = default_q(t)
        ai = g.const("axis", "int32", axis)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        ax = axis % len(in_shape)
        oshape = list(in_shape)
        oshape[ax] //= n
        ys = [g.output(f"y{k}", t, oshape, q) for k in range(n)]
        g.op("SPLIT", [ai, xi], ys, options("Split", numSplits=n))
    return build


for _t in ALL_TYPES:
    add(f"split_{_t}", "SPLIT", _t, "[2,6,3] into 3 along axis 1", _split(_t, (2, 6, 3), 1, 3))
add("split_float32_axis_neg", "SPLIT", "float32", "[4,2] into 2 along axis -2",
    _split("float32", (4, 2), -2, 2))


def _split_v(t, in_shape, sizes, axis):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        si = g.const("size_splits", "int32", sizes)
        ai = g.const("axis", "int32", axis)
        ax = axis % len(in_shape)
        real = [s if s != -1 else in_shape[ax] - sum(x for x in sizes if x != -1) for s in sizes]
        ys = []
        for k, s in enumerate(real):
            oshape = list(in_shape)
            oshape[ax] = s
            ys.append(g.output(f"y{k}", t, oshape, q))
        g.op("SPLIT_V", [xi, si, ai], ys, options("SplitV", numSplits=len(sizes)))
    return build


for _t in ALL_TYPES:
    add(f"split_v_{_t}", "SPLIT_V", _t, "[2,7,2] sizes [1,4,2] along axis 1",
        _split_v(_t, (2, 7, 2), [1, 4, 2], 1))
add("split_v_float32_minus_one", "SPLIT_V", "float32", "[6,3] sizes [2,-1] along axis -2",
    _split_v("float32", (6, 3), [2, -1], -2))

# ---- PACK / UNPACK


def _pack(t, shape, n, axis):
    def build(g):
        q = default_q(t)
        ins = [g.input(f"x{k}", t, data_for(g.rng, t, shape), q) for k in range(n)]
        ax = axis % (len(shape) + 1)
        y = g.output("y", t, list(shape[:ax]) + [n] + list(shape[ax:]), q)
        g.op("PACK", ins, [y], options("Pack", valuesCount=n, axis=axis))
    return build


def _unpack(t, shape, axis):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, shape), q)
        ax = axis % len(shape)
        oshape = [s for i, s in enumerate(shape) if i != ax]
        ys = [g.output(f"y{k}", t, oshape, q) for k in range(shape[ax])]
        g.op("UNPACK", [xi], ys, options("Unpack", num=shape[ax], axis=axis))
    return build


for _t in ALL_TYPES:
    add(f"pack_{_t}", "PACK", _t, "three [2,3] along axis 1 -> [2,3,3]", _pack(_t, (2, 3), 3, 1))
add("pack_float32_axis_neg", "PACK", "float32", "two [2,3] along axis -1 -> [2,3,2]",
    _pack("float32", (2, 3), 2, -1))
add("pack_int8_axis0", "PACK", "int8", "four [3] along axis 0 -> [4,3]", _pack("int8", (3,), 4, 0))
for _t in ALL_TYPES:
    add(f"unpack_{_t}", "UNPACK", _t, "[2,3,4] along axis 1 -> three [2,4]",
        _unpack(_t, (2, 3, 4), 1))
add("unpack_float32_axis_neg", "UNPACK", "float32", "[2,3,2] along axis -1 -> two [2,3]",
    _unpack("float32", (2, 3, 2), -1))

# ---- SPACE_TO_DEPTH / DEPTH_TO_SPACE


def _s2d(op, t, in_shape, block):
    def build(g):
        q = default_q(t)
        xi = g.input("x", t, data_for(g.rng, t, in_shape), q)
        n, h, w, c = in_shape
        if op == "SPACE_TO_DEPTH":
            oshape = (n, h // block, w // block, c * block * block)
            kind = "SpaceToDepth"
        else:
            oshape = (n, h * block, w * block, c // (block * block))
            kind = "DepthToSpace"
        y = g.output("y", t, oshape, q)
        g.op(op, [xi], [y], options(kind, blockSize=block))
    return build


for _t in ALL_TYPES:
    add(f"space_to_depth_{_t}", "SPACE_TO_DEPTH", _t, "[1,4,6,2] block 2 -> [1,2,3,8]",
        _s2d("SPACE_TO_DEPTH", _t, (1, 4, 6, 2), 2))
add("space_to_depth_float32_block3", "SPACE_TO_DEPTH", "float32", "[2,3,6,1] block 3",
    _s2d("SPACE_TO_DEPTH", "float32", (2, 3, 6, 1), 3))
for _t in ALL_TYPES:
    add(f"depth_to_space_{_t}", "DEPTH_TO_SPACE", _t, "[1,2,3,8] block 2 -> [1,4,6,2]",
        _s2d("DEPTH_TO_SPACE", _t, (1, 2, 3, 8), 2))
add("depth_to_space_float32_block3", "DEPTH_TO_SPACE", "float32", "[2,1,2,9] block 3",
    _s2d("DEPTH_TO_SPACE", "float32", (2, 1, 2, 9), 3))

# ---- SOFTMAX


def _softmax(t, shape, beta=1.0, lo=-4.0, hi=4.0, out_t=None, qi=None):
    def build(g):
        q_in = qi or default_q(t, lo, hi)
        ot = out_t or t
        qo = {"int8": Q(1 / 256, -128), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 256, 0)}.get(ot)
        if (t, ot) == ("int8", "int16"):
            qo = Q(1 / 65536, -32768)
        unary(g, "SOFTMAX", t, data_for(g.rng, t, shape, lo, hi), q_in, qo,
              options("Softmax", beta=beta), out_t=ot)
    return build


for _t in NUM_TYPES:
    add(f"softmax_{_t}", "SOFTMAX", _t, "[4,16] along the last axis, beta 1",
        _softmax(_t, (4, 16)), probe=f"{_t}->{_t}")
add("softmax_float32_beta", "SOFTMAX", "float32", "beta 0.5, [2,3,10], inputs over [-20, 20]",
    _softmax("float32", (2, 3, 10), 0.5, -20.0, 20.0), probe="float32->float32")
add("softmax_int8_beta", "SOFTMAX", "int8", "beta 0.7, [1,2,2,12], inputs over [-10, 6]",
    _softmax("int8", (1, 2, 2, 12), 0.7, -10.0, 6.0), probe="int8->int8")
add("softmax_int8_int16_out", "SOFTMAX", "int8", "int8 in, int16 out (1/65536, -32768)",
    _softmax("int8", (4, 16), out_t="int16"), probe="int8->int16")
add("softmax_int16_wide", "SOFTMAX", "int16", "inputs over [-10, 10]",
    _softmax("int16", (3, 20), lo=-10.0, hi=10.0), probe="int16->int16")
