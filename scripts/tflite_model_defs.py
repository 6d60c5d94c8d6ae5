"""The models of make_tflite_models.py: one `@model(...)` builder per model, grouped by kind,
with the weight helpers they share. Each builder takes its seeded generator and returns the
Keras function of its inputs; registering happens on import, in file order."""

import dataclasses

import numpy as np
import tensorflow as tf
from tflite_micro.python.tflite_micro import runtime as tflm

SCHEMA = tflm.schema_fb

F32 = np.float32


@dataclasses.dataclass
class Input:
    name: str
    shape: tuple
    lo: float = -1.0  # calibration data is uniform over [lo, hi]
    hi: float = 1.0


@dataclasses.dataclass
class Model:
    name: str
    mode: str  # "int8", "int16" (16x8), "float", "int8_float_out", "float_in_int8"
    inputs: list
    build: object  # build(rng) -> python function of the input tensors
    about: str
    post: object = None  # optional rewrite of the converted flatbuffer


MODELS = []


def model(name, mode, inputs, about, post=None):
    def register(build):
        MODELS.append(Model(name, mode, inputs, build, about, post))
        return build

    return register


# ---------------------------------------------------------------- weight helpers


def weights(rng, shape, fan_in):
    return tf.constant((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(F32))


def bias(rng, n, scale=0.3):
    return tf.constant((rng.uniform(-scale, scale, n)).astype(F32))


def conv2d(rng, x, cin, cout, k, stride=1, padding="SAME", dilation=1, act=None, use_bias=True):
    kh, kw = (k, k) if isinstance(k, int) else k
    w = weights(rng, (kh, kw, cin, cout), kh * kw * cin)
    y = tf.nn.conv2d(x, w, strides=stride, padding=padding, dilations=dilation)
    if use_bias:
        y = y + bias(rng, cout)
    return act(y) if act else y


def depthwise(rng, x, cin, mult, k, stride=1, padding="SAME", dilation=1, act=None):
    w = weights(rng, (k, k, cin, mult), k * k)
    y = tf.nn.depthwise_conv2d(x, w, strides=[1, stride, stride, 1], padding=padding,
                               dilations=[dilation, dilation])
    y = y + bias(rng, cin * mult)
    return act(y) if act else y


def dense(rng, x, cin, cout, act=None, use_bias=True):
    y = tf.matmul(x, weights(rng, (cin, cout), cin))
    if use_bias:
        y = y + bias(rng, cout)
    return act(y) if act else y


relu, relu6 = tf.nn.relu, tf.nn.relu6

# ---------------------------------------------------------------- int8 models


@model("conv2d_3x3_s1_same_relu", "int8", [Input("x", (1, 8, 8, 3))],
       "3x3 conv, stride 1, SAME, 3->8 channels, bias, fused RELU")
def _(rng):
    return lambda x: conv2d(rng, x, 3, 8, 3, 1, "SAME", act=relu)


@model("conv2d_3x3_s2_valid", "int8", [Input("x", (1, 9, 9, 4))],
       "3x3 conv, stride 2, VALID, 4->6 channels, bias, no activation")
def _(rng):
    return lambda x: conv2d(rng, x, 4, 6, 3, 2, "VALID")


@model("conv2d_1x1_relu6", "int8", [Input("x", (1, 5, 7, 8))],
       "1x1 conv (pointwise), 8->5 channels, odd spatial size 5x7, fused RELU6")
def _(rng):
    return lambda x: conv2d(rng, x, 8, 5, 1, act=relu6)


@model("conv2d_3x3_dilation2", "int8", [Input("x", (1, 10, 10, 3))],
       "3x3 conv, dilation 2, stride 1, SAME, 3->4 channels, no activation")
def _(rng):
    return lambda x: conv2d(rng, x, 3, 4, 3, 1, "SAME", dilation=2)


@model("conv2d_5x3_s2x1_same", "int8", [Input("x", (1, 11, 7, 2), -0.5, 1.5)],
       "5x3 (non-square) conv, strides (2,1), SAME, 2->3 channels, asymmetric input range "
       "(non-zero input zero point)")
def _(rng):
    return lambda x: conv2d(rng, x, 2, 3, (5, 3), (2, 1), "SAME")


@model("depthwise_3x3_m1_relu", "int8", [Input("x", (1, 8, 8, 6))],
       "3x3 depthwise conv, multiplier 1, stride 1, SAME, 6 channels, fused RELU")
def _(rng):
    return lambda x: depthwise(rng, x, 6, 1, 3, 1, "SAME", act=relu)


@model("depthwise_3x3_m2_s2_same_relu6", "int8", [Input("x", (1, 9, 9, 3))],
       "3x3 depthwise conv, multiplier 2 (3->6 channels), stride 2, SAME, fused RELU6")
def _(rng):
    return lambda x: depthwise(rng, x, 3, 2, 3, 2, "SAME", act=relu6)


@model("depthwise_5x5_valid_dilation2", "int8", [Input("x", (1, 12, 11, 4))],
       "5x5 depthwise conv, multiplier 1, dilation 2, stride 1, VALID, 4 channels")
def _(rng):
    return lambda x: depthwise(rng, x, 4, 1, 5, 1, "VALID", dilation=2)


@model("fully_connected_bias_relu", "int8", [Input("x", (1, 20))],
       "fully connected 20->10 with bias, fused RELU")
def _(rng):
    return lambda x: dense(rng, x, 20, 10, act=relu)


@model("fully_connected_nobias", "int8", [Input("x", (3, 16))],
       "fully connected 16->7 without bias (bias input -1), batch of 3 rows")
def _(rng):
    return lambda x: dense(rng, x, 16, 7, use_bias=False)


@model("fully_connected_keep_dims", "int8", [Input("x", (2, 3, 12))],
       "fully connected 12->5 with bias on a rank-3 input (keep_num_dims=True)")
def _(rng):
    return lambda x: dense(rng, x, 12, 5)


@model("average_pool_3x3_s2_same", "int8", [Input("x", (1, 7, 7, 4))],
       "average pool 3x3, stride 2, SAME on 7x7 (partial windows at the edges)")
def _(rng):
    return lambda x: tf.nn.avg_pool2d(x, 3, 2, "SAME")


@model("average_pool_2x2_valid", "int8", [Input("x", (1, 8, 6, 5))],
       "average pool 2x2, stride 2, VALID")
def _(rng):
    return lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID")


@model("max_pool_3x3_s2_same", "int8", [Input("x", (1, 7, 7, 4))],
       "max pool 3x3, stride 2, SAME on 7x7 (partial windows at the edges)")
def _(rng):
    return lambda x: tf.nn.max_pool2d(x, 3, 2, "SAME")


@model("max_pool_2x3_s2_valid", "int8", [Input("x", (1, 9, 8, 3))],
       "max pool 2x3 (non-square), stride 2, VALID")
def _(rng):
    return lambda x: tf.nn.max_pool2d(x, (2, 3), 2, "VALID")


@model("add_relu", "int8", [Input("a", (1, 6, 6, 5), -1, 1), Input("b", (1, 6, 6, 5), -4, 4)],
       "elementwise add of two inputs with different scales, fused RELU")
def _(rng):
    return lambda a, b: relu(a + b)


@model("add_broadcast", "int8",
       [Input("a", (1, 4, 4, 6), -2, 2), Input("b", (1, 1, 1, 6), -1, 0.5)],
       "add with broadcasting of a per-channel vector (1x1x1x6) over 1x4x4x6")
def _(rng):
    return lambda a, b: a + b


@model("sub", "int8", [Input("a", (2, 5, 7), -2, 2), Input("b", (2, 5, 7), -0.5, 0.5)],
       "elementwise sub a - b, inputs with different scales")
def _(rng):
    return lambda a, b: a - b


@model("mul", "int8", [Input("a", (1, 4, 4, 8), -1, 1), Input("b", (1, 4, 4, 8), -3, 3)],
       "elementwise mul of two inputs with different scales")
def _(rng):
    return lambda a, b: a * b


@model("softmax", "int8", [Input("x", (4, 12))],
       "fully connected 12->10 logits, then softmax over the last axis, 4 rows")
def _(rng):
    return lambda x: tf.nn.softmax(dense(rng, x, 12, 10) * 3.0)


@model("logistic", "int8", [Input("x", (2, 40), -6, 6)], "logistic (sigmoid) on inputs in [-6, 6]")
def _(rng):
    return lambda x: tf.sigmoid(x)


@model("tanh", "int8", [Input("x", (2, 40), -3, 3)], "tanh on inputs in [-3, 3]")
def _(rng):
    return lambda x: tf.tanh(x)


@model("pad", "int8", [Input("x", (1, 5, 5, 3), -0.5, 1.5)],
       "zero padding H by (1,2) and W by (2,1); asymmetric input range so the pad value is a "
       "non-zero zero point")
def _(rng):
    return lambda x: tf.pad(x, [[0, 0], [1, 2], [2, 1], [0, 0]])


@model("concatenation", "int8", [Input("a", (1, 5, 5, 4), -1, 1), Input("b", (1, 5, 5, 3), -4, 4)],
       "concatenation on axis -1 of a 1x1 conv+RELU branch (from a) and input b; the converter "
       "gives both concat inputs the output's scale")
def _(rng):
    return lambda a, b: tf.concat([conv2d(rng, a, 4, 3, 1, act=relu), b], -1)


@model("quantize_requant_concat", "int8",
       [Input("a", (1, 4, 4, 3), -4, 4), Input("b", (1, 4, 4, 5), -4, 4)],
       "logistic(a) (fixed scale 1/256) and tanh(b) (fixed scale 1/128) each requantized by an "
       "int8->int8 QUANTIZE to a common scale, then concatenated on axis -1")
def _(rng):
    return lambda a, b: tf.concat([tf.sigmoid(a), tf.tanh(b)], -1)


@model("mean_hw_keepdims", "int8", [Input("x", (1, 6, 6, 8), -1, 2)],
       "mean over H and W (axes 1,2) with keepdims -> 1x1x1x8")
def _(rng):
    return lambda x: tf.reduce_mean(x, axis=[1, 2], keepdims=True)


@model("reduce_max", "int8", [Input("x", (1, 5, 7, 4))],
       "reduce max over H and W (axes 1,2), keepdims false -> 1x4")
def _(rng):
    return lambda x: tf.reduce_max(x, axis=[1, 2])


@model("reshape", "int8", [Input("x", (1, 4, 4, 6))], "reshape 1x4x4x6 -> 4x24")
def _(rng):
    return lambda x: tf.reshape(x, (4, 24))


@model("squeeze", "int8", [Input("x", (1, 5, 1, 7))],
       "squeeze axes 0 and 2: 1x5x1x7 -> 5x7 (the converter emits RESHAPE for a static squeeze; "
       "the script rewrites that op into SQUEEZE with squeeze_dims [0, 2])",
       post=lambda data: reshape_to_squeeze(data, [0, 2]))
def _(rng):
    return lambda x: tf.squeeze(x, axis=[0, 2])


@model("strided_slice", "int8", [Input("x", (1, 8, 8, 4))],
       "strided slice x[:, 1:7:2, ::3, 1:] -> 1x3x3x3 (begin/end masks, strides 2 and 3)")
def _(rng):
    return lambda x: x[:, 1:7:2, ::3, 1:]


@model("strided_slice_shrink_neg", "int8", [Input("x", (1, 6, 5, 4))],
       "strided slice x[0, 4:0:-2, :, ::-1] -> 2x5x4 (shrink axis, negative strides)")
def _(rng):
    return lambda x: x[0, 4:0:-2, :, ::-1]


@model("transpose", "int8", [Input("x", (1, 3, 4, 5))],
       "transpose perm (0,3,1,2): 1x3x4x5 -> 1x5x3x4")
def _(rng):
    return lambda x: tf.transpose(x, (0, 3, 1, 2))


@model("dequantize", "int8_float_out", [Input("x", (1, 16))],
       "int8 input, fully connected 16->6 with bias, DEQUANTIZE to a float32 output")
def _(rng):
    return lambda x: dense(rng, x, 16, 6)


@model("quantize_float_in", "float_in_int8", [Input("x", (1, 6, 6, 3))],
       "float32 input QUANTIZEd to int8, 3x3 conv SAME 3->4 with RELU, int8 output")
def _(rng):
    return lambda x: conv2d(rng, x, 3, 4, 3, act=relu)


@model("tiny_cnn", "int8", [Input("x", (1, 12, 12, 1))],
       "conv 3x3 SAME 1->6 RELU, depthwise 3x3 s2 SAME RELU6, max pool 2x2 VALID, reshape, "
       "fully connected 54->10, softmax")
def _(rng):
    def f(x):
        y = conv2d(rng, x, 1, 6, 3, act=relu)
        y = depthwise(rng, y, 6, 1, 3, 2, act=relu6)
        y = tf.nn.max_pool2d(y, 2, 2, "VALID")
        y = tf.reshape(y, (1, 54))
        return tf.nn.softmax(dense(rng, y, 54, 10))

    return f


@model("slice", "int8", [Input("x", (1, 6, 5, 4))],
       "slice begin (0,1,2,0) size (1,3,-1,2) -> 1x3x3x2")
def _(rng):
    return lambda x: tf.slice(x, [0, 1, 2, 0], [1, 3, -1, 2])


@model("split", "int8", [Input("x", (1, 4, 3, 6))], "split into 3 along channels -> 3 x 1x4x3x2")
def _(rng):
    return lambda x: tf.split(x, 3, axis=3)


@model("split_v", "int8", [Input("x", (1, 7, 3, 2))],
       "split_v sizes (2, -1, 1) along H -> 1x2x3x2, 1x4x3x2, 1x1x3x2")
def _(rng):
    return lambda x: tf.split(x, [2, -1, 1], axis=1)


@model("pack", "int8", [Input("a", (3, 4)), Input("b", (3, 4))],
       "pack two 3x4 inputs along axis 1 -> 3x2x4")
def _(rng):
    return lambda a, b: tf.stack([a, b], axis=1)


@model("unpack", "int8", [Input("x", (2, 3, 4))], "unpack along axis 1 -> 3 x 2x4")
def _(rng):
    return lambda x: tf.unstack(x, axis=1)


@model("space_to_depth", "int8", [Input("x", (1, 4, 6, 3))],
       "space to depth, blocks of 2 -> 1x2x3x12")
def _(rng):
    return lambda x: tf.nn.space_to_depth(x, 2)


@model("depth_to_space", "int8", [Input("x", (1, 2, 3, 8))],
       "depth to space, blocks of 2 -> 1x4x6x2")
def _(rng):
    return lambda x: tf.nn.depth_to_space(x, 2)


@model("maximum_minimum", "int8", [Input("a", (1, 4, 4, 3)), Input("b", (1, 1, 1, 3))],
       "maximum of a and a broadcast b, then minimum with a -> 1x4x4x3")
def _(rng):
    return lambda a, b: tf.minimum(tf.maximum(a, b), a)


@model("depthwise_16x8", "int16", [Input("x", (1, 6, 6, 3))],
       "16x8: depthwise 3x3 stride 1 SAME, multiplier 2, with bias (int64) and RELU6")
def _(rng):
    return lambda x: depthwise(rng, x, 3, 2, 3, act=relu6)


# ---------------------------------------------------------------- float32


@model("float32_cnn", "float", [Input("x", (1, 6, 6, 2))],
       "float32 throughout: conv 3x3 SAME 2->4 RELU, reshape, fully connected 144->5, softmax")
def _(rng):
    def f(x):
        y = conv2d(rng, x, 2, 4, 3, act=relu)
        y = tf.reshape(y, (1, 144))
        return tf.nn.softmax(dense(rng, y, 144, 5))

    return f


# ---------------------------------------------------------------- 16x8


@model("conv2d_16x8", "int16", [Input("x", (1, 8, 8, 3))],
       "16x8: 3x3 conv stride 1 SAME 3->4 with bias (int64) and RELU; int16 activations, "
       "int8 per-channel weights")
def _(rng):
    return lambda x: conv2d(rng, x, 3, 4, 3, act=relu)


@model("fully_connected_16x8", "int16", [Input("x", (2, 16))],
       "16x8: fully connected 16->8 with bias (int64); int16 activations, int8 weights")
def _(rng):
    return lambda x: dense(rng, x, 16, 8)


@model("add_16x8", "int16", [Input("a", (1, 5, 5, 4), -1, 1), Input("b", (1, 5, 5, 4), -3, 3)],
       "16x8: elementwise add of two int16 inputs with different scales")
def _(rng):
    return lambda a, b: a + b


# ---------------------------------------------------------------- flatbuffer rewrites


def drop_unused(mdl):
    """Removes tensors no op or model io refers to, then buffers no tensor or metadata uses."""
    sg = mdl.subgraphs[0]
    used = set(sg.inputs) | set(sg.outputs)
    for op in sg.operators:
        used |= {t for t in op.inputs if t >= 0} | set(op.outputs)
    keep = [t for t in range(len(sg.tensors)) if t in used]
    remap = {old: new for new, old in enumerate(keep)}
    remap[-1] = -1
    sg.tensors = [sg.tensors[t] for t in keep]
    sg.inputs = [remap[t] for t in sg.inputs]
    sg.outputs = [remap[t] for t in sg.outputs]
    for op in sg.operators:
        op.inputs = [remap[t] for t in op.inputs]
        op.outputs = [remap[t] for t in op.outputs]
    for sd in mdl.signatureDefs or []:
        for tm in (sd.inputs or []) + (sd.outputs or []):
            tm.tensorIndex = remap[tm.tensorIndex]
    bufs = {0} | {t.buffer for t in sg.tensors} | {md.buffer for md in mdl.metadata or []}
    keep_b = [b for b in range(len(mdl.buffers)) if b in bufs]
    bremap = {old: new for new, old in enumerate(keep_b)}
    mdl.buffers = [mdl.buffers[b] for b in keep_b]
    for t in sg.tensors:
        t.buffer = bremap[t.buffer]
    for md in mdl.metadata or []:
        md.buffer = bremap[md.buffer]


def pack(mdl):
    import flatbuffers

    b = flatbuffers.Builder(4096)
    b.Finish(mdl.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def reshape_to_squeeze(data, dims):
    """The converter turns a static-shape SQUEEZE into RESHAPE; turn it back.

    The single RESHAPE becomes SQUEEZE(squeeze_dims=dims) and loses its shape input."""
    mdl = tflm.convert_bytearray_to_object(bytearray(data))
    sg = mdl.subgraphs[0]
    (op,) = sg.operators
    code = mdl.operatorCodes[op.opcodeIndex]
    assert tflm.get_builtin_code_from_operator_code(code) == SCHEMA.BuiltinOperator.RESHAPE
    code.builtinCode = code.deprecatedBuiltinCode = SCHEMA.BuiltinOperator.SQUEEZE
    code.version = 1
    op.inputs = op.inputs[:1]
    op.builtinOptionsType = SCHEMA.BuiltinOptions.SqueezeOptions
    op.builtinOptions = SCHEMA.SqueezeOptionsT(squeezeDims=list(dims))
    drop_unused(mdl)
    return pack(mdl)
