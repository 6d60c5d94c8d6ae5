"""The TFLite suite's cases of the builtins Kiln had first, layers and arithmetic: CONV_2D,
DEPTHWISE_CONV_2D, FULLY_CONNECTED, ADD/SUB/MUL, the activations, DEQUANTIZE/QUANTIZE,
MAXIMUM/MINIMUM, the pools and the reductions.

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403
from tflite_suite_batch2 import _bias, _conv_weights, _pool, _reduce, conv_out, weight_type

# ================================================================ batch 3: Kiln's builtins
batch(3)


def pack_int4(values):
    """Two int4 values per byte, the first in the low nibble (TFLM's packed int4 layout)."""
    v = (np.asarray(values, np.int64).ravel() & 0xF).astype(np.uint8)
    if v.size % 2:
        v = np.append(v, 0)
    return (v[0::2] | (v[1::2] << 4)).astype(np.uint8).tobytes()


def _weights_const(g, t, w, wq, int4=False):
    if int4:
        assert wq is not None
        return g.main.tensor("weights", S.TensorType.INT4, w.shape, wq, data=pack_int4(w))
    return g.const("weights", weight_type(t), w, wq)


def _int4_weights(g, shape, axis):
    w = g.rng.standard_normal(shape) / np.sqrt(np.prod(shape) / shape[axis])
    red = tuple(i for i in range(len(shape)) if i != axis)
    scales = np.maximum(np.abs(w).max(axis=red), 1e-3) / 7.0
    q = Q(scales, np.zeros(shape[axis], np.int64), axis)
    return np.clip(quantize(w, q, "int8"), -8, 7), q


# ---- CONV_2D


def _conv(t, in_shape, cout, k, stride=(1, 1), pad="SAME", dil=(1, 1), act="NONE", bias=True,
          per_channel=True, groups=1, int4=False, bias_t=None):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        cin = in_shape[3] // groups
        wshape = (cout, k[0], k[1], cin)
        if int4:
            w, wq = _int4_weights(g, wshape, 0)
        else:
            w, wq = _conv_weights(g, t, wshape, 0, per_channel)
        wi = _weights_const(g, t, w, wq, int4)
        bi = -1
        if bias:
            bi = _bias(g, t, cout, qi, wq)
            if bias_t is not None:  # e.g. int32 bias with int16 activations
                bt = g.main.tensors[bi]
                old = np.frombuffer(bytes(g.buffers[bt.buffer].data), np.int64)
                bt.type = DTYPES[bias_t][0]
                g.buffers[bt.buffer].data = old.astype(DTYPES[bias_t][1]).tobytes()
        oshape = (in_shape[0], conv_out(in_shape[1], k[0], stride[0], pad, dil[0]),
                  conv_out(in_shape[2], k[1], stride[1], pad, dil[1]), cout)
        qo = default_q(t, -4.0, 5.0) if act == "NONE" else default_q(t, 0.0, 6.0)
        y = g.output("y", t, oshape, qo)
        g.op("CONV_2D", [xi, wi, bi], [y],
             options("Conv2D", padding=PAD[pad], strideW=stride[1], strideH=stride[0],
                     dilationWFactor=dil[1], dilationHFactor=dil[0],
                     fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"conv_2d_{_t}", "CONV_2D", _t,
        "[1,6,6,3] -> 4 channels, 3x3, stride 1, SAME, bias, per-channel weights",
        _conv(_t, (1, 6, 6, 3), 4, (3, 3)))
for _t in ("float32", "int8", "int16"):
    add(f"conv_2d_{_t}_s2_valid", "CONV_2D", _t, "[1,7,7,4] -> 5, 3x3, stride 2, VALID",
        _conv(_t, (1, 7, 7, 4), 5, (3, 3), (2, 2), "VALID"))
    add(f"conv_2d_{_t}_relu", "CONV_2D", _t, "fused RELU", _conv(_t, (1, 6, 6, 3), 4, (3, 3),
                                                                 act="RELU"))
    add(f"conv_2d_{_t}_relu6_1x1", "CONV_2D", _t, "1x1, fused RELU6, [1,5,7,8] -> 6",
        _conv(_t, (1, 5, 7, 8), 6, (1, 1), act="RELU6"))
    add(f"conv_2d_{_t}_dilation", "CONV_2D", _t, "3x3, dilation (2,1), SAME, [1,8,7,2] -> 3",
        _conv(_t, (1, 8, 7, 2), 3, (3, 3), dil=(2, 1)))
    add(f"conv_2d_{_t}_no_bias", "CONV_2D", _t, "no bias, 2x3 kernel, strides (2,1), SAME",
        _conv(_t, (1, 7, 5, 3), 4, (2, 3), (2, 1), bias=False))
add("conv_2d_float32_relu_n1_to_1", "CONV_2D", "float32", "fused RELU_N1_TO_1",
    _conv("float32", (1, 5, 5, 2), 3, (3, 3), act="RELU_N1_TO_1"))
add("conv_2d_int8_per_tensor", "CONV_2D", "int8", "per-tensor weight scale",
    _conv("int8", (1, 6, 6, 3), 4, (3, 3), per_channel=False))
add("conv_2d_int8_batch2", "CONV_2D", "int8", "batch 2, 3x3, stride 2, SAME",
    _conv("int8", (2, 5, 5, 3), 4, (3, 3), (2, 2)))
add("conv_2d_int8_grouped", "CONV_2D", "int8", "grouped: 6 input channels in 2 groups -> 4",
    _conv("int8", (1, 5, 5, 6), 4, (3, 3), groups=2))
add("conv_2d_float32_grouped", "CONV_2D", "float32", "grouped: 6 input channels in 3 groups -> 6",
    _conv("float32", (1, 5, 5, 6), 6, (3, 3), groups=3))
add("conv_2d_int8_int4_weights", "CONV_2D", "int8", "packed int4 per-channel weights",
    _conv("int8", (1, 6, 6, 3), 4, (3, 3), int4=True))
add("conv_2d_int16_bias_int32", "CONV_2D", "int16", "16x8 with an int32 bias",
    _conv("int16", (1, 6, 6, 3), 4, (3, 3), bias_t="int32"))

# ---- DEPTHWISE_CONV_2D


def _dw(t, in_shape, mult, k, stride=(1, 1), pad="SAME", dil=(1, 1), act="NONE", bias=True,
        per_channel=True, int4=False):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        cout = in_shape[3] * mult
        wshape = (1, k[0], k[1], cout)
        if int4:
            w, wq = _int4_weights(g, wshape, 3)
        else:
            w, wq = _conv_weights(g, t, wshape, 3, per_channel)
            if wq is not None and per_channel and t != "uint8":
                wq.axis = 3
        wi = _weights_const(g, t, w, wq, int4)
        # without bias the op has two inputs: TFLM's depthwise kernel crashes on a -1 bias
        ins = [xi, wi, _bias(g, t, cout, qi, wq)] if bias else [xi, wi]
        oshape = (in_shape[0], conv_out(in_shape[1], k[0], stride[0], pad, dil[0]),
                  conv_out(in_shape[2], k[1], stride[1], pad, dil[1]), cout)
        qo = default_q(t, -4.0, 5.0) if act == "NONE" else default_q(t, 0.0, 6.0)
        y = g.output("y", t, oshape, qo)
        g.op("DEPTHWISE_CONV_2D", ins, [y],
             options("DepthwiseConv2D", padding=PAD[pad], strideW=stride[1], strideH=stride[0],
                     depthMultiplier=mult, dilationWFactor=dil[1], dilationHFactor=dil[0],
                     fusedActivationFunction=ACT[act]))
    return build


for _t in NUM_TYPES:
    add(f"depthwise_conv_2d_{_t}", "DEPTHWISE_CONV_2D", _t,
        "[1,6,6,4], multiplier 1, 3x3, stride 1, SAME, bias, per-channel weights",
        _dw(_t, (1, 6, 6, 4), 1, (3, 3)))
for _t in ("float32", "int8", "int16"):
    add(f"depthwise_conv_2d_{_t}_m2_s2", "DEPTHWISE_CONV_2D", _t,
        "[1,7,7,3], multiplier 2, 3x3, stride 2, SAME, fused RELU6",
        _dw(_t, (1, 7, 7, 3), 2, (3, 3), (2, 2), act="RELU6"))
    add(f"depthwise_conv_2d_{_t}_valid_dilation", "DEPTHWISE_CONV_2D", _t,
        "[1,9,8,2], 3x3, dilation 2, VALID, fused RELU", _dw(_t, (1, 9, 8, 2), 1, (3, 3),
                                                             pad="VALID", dil=(2, 2), act="RELU"))
    add(f"depthwise_conv_2d_{_t}_no_bias", "DEPTHWISE_CONV_2D", _t,
        "no bias (two inputs), 5x3 kernel, strides (1,2)",
        _dw(_t, (1, 6, 7, 3), 1, (5, 3), (1, 2), bias=False))
add("depthwise_conv_2d_int8_per_tensor", "DEPTHWISE_CONV_2D", "int8", "per-tensor weight scale",
    _dw("int8", (1, 6, 6, 4), 1, (3, 3), per_channel=False))
add("depthwise_conv_2d_int8_int4_weights", "DEPTHWISE_CONV_2D", "int8",
    "packed int4 per-channel weights", _dw("int8", (1, 6, 6, 4), 1, (3, 3), int4=True))
add("depthwise_conv_2d_int8_m3", "DEPTHWISE_CONV_2D", "int8", "1 channel, multiplier 3",
    _dw("int8", (1, 5, 5, 1), 3, (3, 3)))

# ---- FULLY_CONNECTED


def _fc(t, in_shape, units, act="NONE", bias=True, per_channel=False, keep=False, int4=False):
    def build(g):
        qi = default_q(t, -2.0, 3.0)
        xi = g.input("x", t, data_for(g.rng, t, in_shape, -2.0, 3.0), qi)
        wshape = (units, in_shape[-1])
        if int4:
            w, wq = _int4_weights(g, wshape, 0)
            if not per_channel:
                wq = Q(float(np.max(wq.scale)), 0)
        else:
            w, wq = _conv_weights(g, t, wshape, 0, per_channel)
        wi = _weights_const(g, t, w, wq, int4)
        bi = _bias(g, t, units, qi, wq) if bias else -1
        lead = in_shape[:-1] if keep else (int(np.prod(in_shape[:-1])),)
        qo = default_q(t, -4.0, 5.0) if act == "NONE" else default_q(t, 0.0, 6.0)
        y = g.output("y", t, (*lead, units), qo)
        g.op("FULLY_CONNECTED", [xi, wi, bi], [y],
             options("FullyConnected", fusedActivationFunction=ACT[act], keepNumDims=keep))
    return build


for _t in NUM_TYPES:
    add(f"fully_connected_{_t}", "FULLY_CONNECTED", _t,
        "[2,16] -> [2,8], bias, per-tensor weights", _fc(_t, (2, 16), 8))
for _t in ("float32", "int8", "int16"):
    add(f"fully_connected_{_t}_relu", "FULLY_CONNECTED", _t, "fused RELU",
        _fc(_t, (2, 16), 8, act="RELU"))
    add(f"fully_connected_{_t}_no_bias", "FULLY_CONNECTED", _t, "no bias, [3,10] -> [3,5]",
        _fc(_t, (3, 10), 5, bias=False))
    add(f"fully_connected_{_t}_keep_num_dims", "FULLY_CONNECTED", _t,
        "keep_num_dims: [2,3,8] -> [2,3,4]", _fc(_t, (2, 3, 8), 4, keep=True))
    add(f"fully_connected_{_t}_flatten", "FULLY_CONNECTED", _t,
        "[2,3,8] flattened to [6,8] -> [6,4]", _fc(_t, (2, 3, 8), 4))
    add(f"fully_connected_{_t}_per_channel", "FULLY_CONNECTED", _t, "per-channel weights",
        _fc(_t, (2, 16), 8, per_channel=True))
add("fully_connected_float32_relu6", "FULLY_CONNECTED", "float32", "fused RELU6",
    _fc("float32", (2, 16), 8, act="RELU6"))
add("fully_connected_int8_relu6", "FULLY_CONNECTED", "int8", "fused RELU6",
    _fc("int8", (2, 16), 8, act="RELU6"))
add("fully_connected_int8_int4_weights", "FULLY_CONNECTED", "int8", "packed int4 weights",
    _fc("int8", (2, 16), 8, int4=True))

# ---- ADD / SUB / MUL

_ARITH_OUT = {"ADD": (-6.0, 7.0), "SUB": (-7.0, 6.0), "MUL": (-12.0, 12.0)}


def _arith(op, t, sa, sb, act="NONE", pot=False, same_q=False):
    def build(g):
        if t in ("int32", "int64"):
            a, b = ints(g.rng, sa, -100, 100, t), ints(g.rng, sb, -100, 100, t)
            qa = qb = qo = None
        else:
            a = data_for(g.rng, t, sa, -4.0, 4.0)
            b = data_for(g.rng, t, sb, -2.0, 3.0)
            qa, qb = default_q(t, -4.0, 4.0), default_q(t, -2.0, 3.0)
            lo, hi = _ARITH_OUT[op]
            if act == "RELU":
                lo = 0.0
            elif act == "RELU6":
                lo, hi = 0.0, 6.0
            elif act == "RELU_N1_TO_1":
                lo, hi = -1.0, 1.0
            qo = default_q(t, lo, hi)
            if same_q:
                qa = qb = qo = default_q(t, -5.0, 5.0)
            if pot:  # power-of-two int16 scales
                qa, qb, qo = Q(2.0 ** -13, 0), Q(2.0 ** -13, 0), Q(2.0 ** -12, 0)
        kind = {"ADD": "Add", "SUB": "Sub", "MUL": "Mul"}[op]
        fields = {"fusedActivationFunction": ACT[act]}
        if op != "MUL":
            fields["potScaleInt16"] = pot
        binary(g, op, t, a, b, qa, qb, qo, options(kind, **fields))
    return build


for _op in ("ADD", "SUB", "MUL"):
    _p = _op.lower()
    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[4,16] and [4,16]", _arith(_op, _t, (4, 16), (4, 16)))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_relu", _op, _t, "fused RELU", _arith(_op, _t, (4, 16), (4, 16), "RELU"))
        add(f"{_p}_{_t}_relu6", _op, _t, "fused RELU6",
            _arith(_op, _t, (4, 16), (4, 16), "RELU6"))
        add(f"{_p}_{_t}_scalar", _op, _t, "[4,8] and a scalar []",
            _arith(_op, _t, (4, 8), ()))
        add(f"{_p}_{_t}_broadcast_rank1", _op, _t, "[3,8] and [8]", _arith(_op, _t, (3, 8), (8,)))
        add(f"{_p}_{_t}_broadcast_rank4", _op, _t, "[2,1,3,4] and [1,5,1,4]",
            _arith(_op, _t, (2, 1, 3, 4), (1, 5, 1, 4)))
        add(f"{_p}_{_t}_broadcast_rank5", _op, _t, "[2,1,3,1,2] and [1,2,1,4,1]",
            _arith(_op, _t, (2, 1, 3, 1, 2), (1, 2, 1, 4, 1)))
    add(f"{_p}_float32_broadcast_rank6", _op, "float32", "[2,1,2,1,2,1] and [1,2,1,2,1,3]",
        _arith(_op, "float32", (2, 1, 2, 1, 2, 1), (1, 2, 1, 2, 1, 3)))
    add(f"{_p}_int32_broadcast_rank4", _op, "int32", "[2,1,3,4] and [1,5,1,4]",
        _arith(_op, "int32", (2, 1, 3, 4), (1, 5, 1, 4)))
    add(f"{_p}_int8_same_q", _op, "int8", "inputs and output quantized alike",
        _arith(_op, "int8", (4, 16), (4, 16), same_q=True))
    add(f"{_p}_float32_relu_n1_to_1", _op, "float32", "fused RELU_N1_TO_1",
        _arith(_op, "float32", (4, 16), (4, 16), "RELU_N1_TO_1"))
for _op in ("ADD", "SUB"):
    add(f"{_op.lower()}_int16_pot_scale", _op, "int16",
        "pot_scale_int16: power-of-two scales (2^-13, 2^-13 -> 2^-12)",
        _arith(_op, "int16", (4, 16), (4, 16), pot=True))

# ---- RELU / RELU6 / RELU_N1_TO_1 / LOGISTIC / TANH

unary_family("RELU", "max(x, 0)", -4.0, 4.0, (0.0, 4.0))
unary_family("RELU6", "min(max(x, 0), 6)", -3.0, 8.0, (0.0, 6.0))
unary_family("RELU_N1_TO_1", "min(max(x, -1), 1)", -2.0, 2.0, (-1.0, 1.0))
add("relu_int8_same_q", "RELU", "int8", "output quantized like the input",
    lambda g: unary(g, "RELU", "int8", sweep_int8(g.rng), qrange(-3.0, 5.0, "int8"),
                    qrange(-3.0, 5.0, "int8")))
add("relu6_int16_same_q", "RELU6", "int16", "output quantized like the input",
    lambda g: unary(g, "RELU6", "int16", sweep_int16(g.rng), Q(8.0 / 32768, 0),
                    Q(8.0 / 32768, 0)))

_SIGMOID_Q = {"int8": Q(1 / 256, -128), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 256, 0)}
_TANH_Q = {"int8": Q(1 / 128, 0), "int16": Q(1 / 32768, 0), "uint8": Q(1 / 128, 128)}
unary_family("LOGISTIC", "sigmoid, inputs over [-8, 8]", -8.0, 8.0, _SIGMOID_Q)
unary_family("TANH", "tanh, inputs over [-5, 5]", -5.0, 5.0, _TANH_Q)
for _op, _q in (("LOGISTIC", _SIGMOID_Q), ("TANH", _TANH_Q)):
    _p = _op.lower()
    add(f"{_p}_int8_narrow", _op, "int8", "inputs over [-2, 3] (asymmetric)",
        (lambda op, q: lambda g: unary(g, op, "int8", sweep_int8(g.rng), qrange(-2.0, 3.0, "int8"),
                                       q["int8"]))(_op, _q))
    add(f"{_p}_int16_pot", _op, "int16", "power-of-two input scale 2^-12 (range [-8, 8))",
        (lambda op, q: lambda g: unary(g, op, "int16", sweep_int16(g.rng), Q(2.0 ** -12, 0),
                                       q["int16"]))(_op, _q))

# ---- DEQUANTIZE / QUANTIZE


def _dequantize(t, per_channel=False):
    def build(g):
        if per_channel:
            x = data_for(g.rng, t, (4, 32))
            q = Q([0.01, 0.02, 0.05, 0.003], [3, -7, 0, 12] if t != "int16" else 0, 0)
            g.litert_because = "TFLM applies channel 0's scale and zero point to every channel"
        else:
            x, q = unary_input(g, t, -3.0, 5.0)
        unary(g, "DEQUANTIZE", t, x, q, out_t="float32")
    return build


for _t in ("int8", "int16", "uint8", "int32", "float16"):
    add(f"dequantize_{_t}", "DEQUANTIZE", _t, f"{_t} -> float32", _dequantize(_t)
        if _t != "float16" else
        (lambda g: unary(g, "DEQUANTIZE", "float16",
                         uniform(g.rng, (4, 16), -3, 3).astype(np.float16), out_t="float32")))
add("dequantize_int8_per_channel", "DEQUANTIZE", "int8", "per-channel along axis 0",
    _dequantize("int8", True))


def _quantize(src, dst, qi=None, qo=None, ties=False):
    def build(g):
        if src == "float32":
            x = uniform(g.rng, (4, 32), -4.0, 4.0)
            if ties:
                x = (g.rng.integers(-120, 120, (4, 32)) / 32.0).astype(np.float32)
            q_in = None
        else:
            x, q_in = unary_input(g, src, -4.0, 4.0)
            q_in = qi or q_in
        unary(g, "QUANTIZE", src, x, q_in, qo or qrange(-3.0, 5.0, dst), out_t=dst)
    return build


for _d in ("int8", "int16", "uint8", "int32"):
    add(f"quantize_{_d}", "QUANTIZE", _d, f"float32 -> {_d}", _quantize("float32", _d),
        probe=f"float32->{_d}")
add("quantize_int8_ties", "QUANTIZE", "int8", "float32 -> int8, scale 1/16: many exact halves",
    _quantize("float32", "int8", qo=Q(1 / 16, -3), ties=True), probe="float32->int8")
for _s, _d in (("int8", "int8"), ("int16", "int16"), ("int16", "int8"), ("int8", "int16"),
               ("uint8", "int8"), ("int8", "uint8"), ("int8", "int32"), ("int16", "int32")):
    add(f"quantize_{_d}_from_{_s}", "QUANTIZE", _d, f"requantize {_s} -> {_d}",
        _quantize(_s, _d, qo=qrange(-2.5, 3.5, _d) if _d != "int32" else Q(0.001, 0)),
        probe=f"{_s}->{_d}")
add("quantize_int8_from_int8_same_scale", "QUANTIZE", "int8",
    "requantize int8 -> int8, same scale, zero point moved",
    _quantize("int8", "int8", qi=Q(0.03, -5), qo=Q(0.03, 20)), probe="int8->int8")

# ---- MAXIMUM / MINIMUM


def _maxmin(op, t, sa, sb):
    def build(g):
        q = default_q(t)
        binary(g, op, t, data_for(g.rng, t, sa), data_for(g.rng, t, sb), q, q, q)
    return build


for _op in ("MAXIMUM", "MINIMUM"):
    for _t in ALL_TYPES:
        add(f"{_op.lower()}_{_t}", _op, _t, "[4,16] and [4,16], all quantized alike",
            _maxmin(_op, _t, (4, 16), (4, 16)))
    for _t in ("float32", "int8", "int16"):
        add(f"{_op.lower()}_{_t}_broadcast", _op, _t, "[2,1,3,4] and [5,1,4]",
            _maxmin(_op, _t, (2, 1, 3, 4), (5, 1, 4)))
    add(f"{_op.lower()}_float32_scalar", _op, "float32", "[3,8] and a scalar []",
        _maxmin(_op, "float32", (3, 8), ()))
    add(f"{_op.lower()}_float32_broadcast_rank5", _op, "float32", "[2,1,3,1,2] and [1,2,1,3,1]",
        _maxmin(_op, "float32", (2, 1, 3, 1, 2), (1, 2, 1, 3, 1)))

# ---- AVERAGE_POOL_2D / MAX_POOL_2D

for _op in ("AVERAGE_POOL_2D", "MAX_POOL_2D"):
    _p = _op.lower()
    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[1,6,6,3], 2x2, stride 2, VALID",
            _pool(_op, _t, (1, 6, 6, 3), (2, 2), (2, 2), "VALID"))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_same", _op, _t, "[1,7,5,2], 3x3, stride 2, SAME (partial windows)",
            _pool(_op, _t, (1, 7, 5, 2), (3, 3), (2, 2), "SAME"))
        add(f"{_p}_{_t}_relu6", _op, _t, "[1,5,6,2], 3x2, strides (1,2), SAME, fused RELU6",
            _pool(_op, _t, (1, 5, 6, 2), (3, 2), (1, 2), "SAME", "RELU6"))
        add(f"{_p}_{_t}_global", _op, _t, "[2,4,5,3], 4x5 window (global), VALID",
            _pool(_op, _t, (2, 4, 5, 3), (4, 5), (1, 1), "VALID"))
    add(f"{_p}_float32_relu", _op, "float32", "fused RELU",
        _pool(_op, "float32", (1, 6, 6, 3), (2, 2), (2, 2), "VALID", "RELU"))
    add(f"{_p}_int8_relu", _op, "int8", "fused RELU",
        _pool(_op, "int8", (1, 6, 6, 3), (2, 2), (2, 2), "VALID", "RELU"))

# ---- MEAN / SUM / REDUCE_MAX / REDUCE_MIN / REDUCE_PROD

_RED_OUT = {"MEAN": (-3.0, 4.0), "SUM": (-40.0, 40.0), "REDUCE_MAX": None, "REDUCE_MIN": None,
            "REDUCE_PROD": (-30.0, 30.0)}
for _op in ("MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"):
    _p = _op.lower()
    _lo, _hi = (-1.5, 2.0) if _op == "REDUCE_PROD" else (-4.0, 4.0)

    def _qo(t, op=_op):
        r = _RED_OUT[op]
        return default_q(t, *r) if r and t in QUANT else None

    for _t in NUM_TYPES:
        add(f"{_p}_{_t}", _op, _t, "[2,4,4,3] over axes [1,2], keep_dims (global pooling)",
            _reduce(_op, _t, (2, 4, 4, 3), [1, 2], True, _qo(_t), _lo, _hi))
    for _t in ("float32", "int8", "int16"):
        add(f"{_p}_{_t}_last_axis", _op, _t, "[3,4,5] over axis -1, no keep_dims",
            _reduce(_op, _t, (3, 4, 5), [-1], False, _qo(_t), _lo, _hi))
        add(f"{_p}_{_t}_axis0", _op, _t, "[4,3,2] over axis 0, keep_dims",
            _reduce(_op, _t, (4, 3, 2), [0], True, _qo(_t), _lo, _hi))
        add(f"{_p}_{_t}_all_axes", _op, _t, "[3,4,2] over axes [0,1,2]",
            _reduce(_op, _t, (3, 4, 2), [0, 1, 2], False, _qo(_t), _lo, _hi))
    add(f"{_p}_int8_same_q", _op, "int8", "[2,4,4,3] over [1,2], output quantized like input",
        _reduce(_op, "int8", (2, 4, 4, 3), [1, 2], True, None, _lo, _hi))
    add(f"{_p}_float32_axes_int64", _op, "float32", "int64 axes tensor [1]",
        _reduce(_op, "float32", (3, 4, 5), [1], False, None, _lo, _hi, axes_t="int64"))
