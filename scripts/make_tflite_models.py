#!/usr/bin/env python3
"""Builds small .tflite test models into tests/models/tflite/ with TFLM reference outputs.

Each model exercises one TFLite builtin op (or a small combination) with fixed random weights.
Most are full-integer int8 (per-channel int8 weights, int32 biases, int8 in/out), four are
16x8 (int16 activations, int8 weights, int16 in/out), one is float32 throughout and two mix
float and int8 at the boundary (QUANTIZE / DEQUANTIZE). For every model the script writes

    tests/models/tflite/<name>.tflite
    tests/models/tflite/<name>/input_<k>_<i>.npy    k = sample 0..4, i = model input index
    tests/models/tflite/<name>/output_<k>_<i>.npy   i = model output index

where the outputs come from TensorFlow Lite Micro's Python interpreter (the `tflite-micro`
PyPI wheel, built with TFLM's reference kernels). The full TFLite interpreter is not the
reference: its int8 softmax/logistic/tanh use other arithmetic. TensorFlow is used only to
build and convert the models. It also writes tests/models/tflite/README.md (the models, their
ops, tensors and quantization) and tests/models/tflite/SHA256SUMS. The output folder is
deleted and rebuilt on every run; everything is seeded, so a rerun reproduces the same bytes
with the same package versions.

Pinned versions (Python 3.11, x86_64 Linux):
    tensorflow-cpu==2.21.0  tflite-micro==0.dev20261023182759  numpy==2.4.6
(tflite-micro 0.dev20261023182759 reports itself as 0.dev20261023182759-g8f6596d; it accepts
any numpy, tensorflow-cpu 2.21.0 wants numpy>=1.26.) pip resolved these alongside them, and
the folder was made with them: flatbuffers==25.12.19 protobuf==7.36.2 ml_dtypes==0.7.0
keras==3.15.1. The script warns when the three pinned packages differ from these.

Run from the repository root, in a scratch environment outside the repository:
    python3 -m venv /tmp/tfgen
    /tmp/tfgen/bin/pip install tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 \\
        numpy==2.4.6
    /tmp/tfgen/bin/python scripts/make_tflite_models.py
Options: --out DIR (default tests/models/tflite), --only NAME[,NAME...] (build a subset;
README.md and SHA256SUMS then cover that subset only), --no-tflite-compare (skip the
informational comparison with the full TFLite interpreter).
"""

import argparse
import dataclasses
import hashlib
import os
import pathlib
import shutil
import sys
import zlib

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tflite_micro  # noqa: E402
from tflite_micro.python.tflite_micro import runtime as tflm  # noqa: E402

SCHEMA = tflm.schema_fb
OP_NAMES = {v: k for k, v in vars(SCHEMA.BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k.lower() for k, v in vars(SCHEMA.TensorType).items() if not k.startswith("_")}
NUMPY_TYPES = {"int8": np.int8, "int16": np.int16, "float32": np.float32}

PINNED = {"tensorflow": "2.21.0", "tflite-micro": "0.dev20261023182759-g8f6596d", "numpy": "2.4.6"}
REQUIREMENTS = "tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 numpy==2.4.6"
RESOLVED = "flatbuffers 25.12.19, protobuf 7.36.2, ml_dtypes 0.7.0, keras 3.15.1"

NUM_SAMPLES = 5
NUM_CALIBRATION = 50
INT16_TEST_RANGE = 16384  # int16 test inputs are uniform over [-16384, 16383]
TFLM_ARENA = 1 << 20

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


# ---------------------------------------------------------------- conversion


def seed_of(name):
    return zlib.crc32(name.encode())


def convert(m):
    rng = np.random.default_rng(seed_of(m.name))
    body = m.build(rng)
    sig = [tf.TensorSpec(i.shape, tf.float32, name=i.name) for i in m.inputs]
    fn = tf.function(body, input_signature=sig)
    conv = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()], fn)
    if m.mode != "float":
        calib = np.random.default_rng(seed_of(m.name) + 1)

        def representative():
            for _ in range(NUM_CALIBRATION):
                yield [calib.uniform(i.lo, i.hi, i.shape).astype(F32) for i in m.inputs]

        conv.optimizations = [tf.lite.Optimize.DEFAULT]
        conv.representative_dataset = representative
        if m.mode == "int16":
            conv.target_spec.supported_ops = [
                tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
            conv.inference_input_type = tf.int16
            conv.inference_output_type = tf.int16
        else:
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            conv.inference_input_type = tf.float32 if m.mode == "float_in_int8" else tf.int8
            conv.inference_output_type = tf.float32 if m.mode == "int8_float_out" else tf.int8
    data = conv.convert()
    return m.post(data) if m.post else data


ENUM_FIELDS = {"padding": SCHEMA.Padding, "fusedActivationFunction": SCHEMA.ActivationFunctionType,
               "weightsFormat": SCHEMA.FullyConnectedOptionsWeightsFormat,
               "quantizedBiasType": SCHEMA.TensorType}


def options_of(op):
    """The op's builtin options as {field: value}, enums by name."""
    opts = op.builtinOptions
    if opts is None:
        return {}
    out = {}
    for k, v in vars(opts).items():
        if v is None or (k == "quantizedBiasType" and v == 0):  # 0: not set
            continue
        if k in ENUM_FIELDS:
            names = {n: m for m, n in vars(ENUM_FIELDS[k]).items() if not m.startswith("_")}
            v = names.get(v, v)
        elif isinstance(v, (bool, np.bool_)):
            v = bool(v)
        elif isinstance(v, np.ndarray):
            v = v.tolist()
        out[k] = v
    return out


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


def describe(data):
    """Op list and io tensors of a flatbuffer, read with TFLM's own schema."""
    mdl = tflm.convert_bytearray_to_object(bytearray(data))
    assert len(mdl.subgraphs) == 1
    sg = mdl.subgraphs[0]

    def tensor(t):
        ten = sg.tensors[t]
        q = ten.quantization
        scales = [] if q is None or q.scale is None else [float(s) for s in q.scale]
        zps = [] if q is None or q.zeroPoint is None else [int(z) for z in q.zeroPoint]
        return dict(name=ten.name.decode(), shape=[int(d) for d in ten.shape],
                    dtype=TYPE_NAMES[ten.type], scales=scales, zero_points=zps,
                    axis=0 if q is None else int(q.quantizedDimension),
                    const=ten.buffer > 0 and mdl.buffers[ten.buffer].data is not None)

    ops = []
    for op in sg.operators:
        code = mdl.operatorCodes[op.opcodeIndex]
        ops.append(dict(
            op=OP_NAMES[tflm.get_builtin_code_from_operator_code(code)], version=code.version,
            options=options_of(op),
            inputs=[tensor(t) if t >= 0 else None for t in op.inputs],
            outputs=[tensor(t) for t in op.outputs]))
    return dict(ops=ops, inputs=[tensor(t) for t in sg.inputs],
                outputs=[tensor(t) for t in sg.outputs])


def test_inputs(m, info, k):
    rng = np.random.default_rng(seed_of(m.name) + 100 + k)
    arrays = []
    for t in info["inputs"]:
        shape, dtype = tuple(t["shape"]), t["dtype"]
        if dtype == "int8":
            arrays.append(rng.integers(-128, 128, shape, dtype=np.int8))
        elif dtype == "int16":
            arrays.append(rng.integers(-INT16_TEST_RANGE, INT16_TEST_RANGE, shape, dtype=np.int16))
        elif dtype == "float32":
            spec = next(i for i in m.inputs if i.name == t["name"])
            arrays.append(rng.uniform(spec.lo, spec.hi, shape).astype(F32))
        else:
            raise ValueError(f"{m.name}: unexpected input dtype {dtype}")
    return arrays


def run_tflm(data, inputs, n_out):
    interp = tflm.Interpreter.from_bytes(bytes(data), arena_size=TFLM_ARENA)
    for i, a in enumerate(inputs):
        interp.set_input(a, i)
    interp.invoke()
    return [np.array(interp.get_output(i), copy=True) for i in range(n_out)]


def run_tflite(data, inputs, n_out):
    """Full TFLite interpreter, only to report how far it is from TFLM (not saved)."""
    interp = tf.lite.Interpreter(model_content=bytes(data))
    interp.allocate_tensors()
    for d, a in zip(interp.get_input_details(), inputs):
        interp.set_tensor(d["index"], a)
    interp.invoke()
    return [interp.get_tensor(d["index"]) for d in interp.get_output_details()[:n_out]]


def fmt_tensor(t, with_q=True):
    s = f"{t['dtype']}[{'x'.join(map(str, t['shape']))}]"
    if with_q and t["scales"]:
        if len(t["scales"]) == 1:
            s += f" s={t['scales'][0]:.6g} zp={t['zero_points'][0]}"
        else:
            s += f" per-axis({len(t['scales'])}, axis {t['axis']})"
    return s


def fmt_ops(info):
    parts = []
    for op in info["ops"]:
        ins = ", ".join("-" if t is None else fmt_tensor(t, with_q=t["const"] and
                                                         len(t["scales"]) > 1)
                        + (" const" if t is not None and t["const"] else "")
                        for t in op["inputs"])
        outs = ", ".join(fmt_tensor(t, with_q=False) for t in op["outputs"])
        opts = ", ".join(f"{k}={v}" for k, v in op["options"].items())
        line = f"{op['op']} v{op['version']} ({ins}) -> {outs}"
        parts.append(line + (f" {{{opts}}}" if opts else ""))
    return parts


README_HEAD = """\
# TFLite test models

Small `.tflite` models, each exercising one TFLite builtin op or a small combination, with
random weights, and reference outputs for random inputs from **TensorFlow Lite Micro's
reference kernels**. Generated by `scripts/make_tflite_models.py`; do not edit by hand —
rerun the script (see its docstring) and commit the whole folder.

* `<name>.tflite` — the model (one subgraph).
* `<name>/input_<k>_<i>.npy` — sample `k` (0..4) for model input `i`, in the input's own dtype
  (int8 inputs are uniform over the whole range [-128, 127]; int16 inputs uniform over
  [-16384, 16383]; float32 inputs uniform over the calibration range listed below).
* `<name>/output_<k>_<i>.npy` — TFLM's output `i` for sample `k`, in the output's dtype.
* `SHA256SUMS` — `sha256sum -c SHA256SUMS` from this folder checks every file.

## How they were made

Each model is a `tf.function` on constant float weights (normal, scaled by 1/sqrt(fan-in);
biases uniform in [-0.3, 0.3]), converted by `tf.lite.TFLiteConverter.from_concrete_functions`.
Quantized models use `optimizations=[tf.lite.Optimize.DEFAULT]` and a representative dataset of
50 random samples, uniform over each input's calibration range. int8 models use
`supported_ops=[TFLITE_BUILTINS_INT8]` with int8 input and output (so the converter's defaults
apply: per-channel int8 weights for CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED, int32
biases, int8 activations); 16x8 models use
`EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8` with int16 input and output
(symmetric int16 activations, zero point 0, int64 biases for conv/FC). `dequantize` keeps a
float32 output and `quantize_float_in` a float32 input; `float32_cnn` is not quantized. Seeds
are derived from each model's name (CRC32), so models are independent of one another and of
their order.

`squeeze` is the one model edited after conversion: the converter turns a static-shape
SQUEEZE into RESHAPE, so the script rewrites that op (flatbuffer object API from the
tflite-micro wheel's schema) into SQUEEZE with `squeeze_dims` and drops its shape tensor.

The reference outputs come from the `tflite-micro` Python interpreter
(`tflite_micro.runtime.Interpreter`, arena 1 MiB, one fresh interpreter per sample), which is
built with TFLM's portable reference kernels (no CMSIS-NN or other optimized kernels). They
are **not** the full TFLite interpreter's outputs: its kernels may round differently (its int8
SOFTMAX, LOGISTIC and TANH use other implementations than TFLM's). For information only, the
op lists below give the largest difference, over the 5 samples, between TFLM and the full
TFLite interpreter (`tf.lite.Interpreter`, default XNNPACK delegate) in output units.

Versions used:

* {versions}
* resolved by pip alongside: {resolved}
* to rebuild, in a scratch venv outside the repository: `pip install {requirements}`, then
  from the repository root `python scripts/make_tflite_models.py`

Licence: these files were generated for this project by its own script from random weights
and random data, and hold no third-party content; they are under the project's licence,
MIT OR Apache-2.0.

## Models

Tensors are written `dtype[shape]`; `s`/`zp` are the quantization scale and zero point of the
model's input/output tensors; `per-axis(n, axis a)` marks per-channel quantized weights; `-` is
an omitted optional input (e.g. no bias).
"""


def write_readme(out, built, versions):
    lines = [README_HEAD.format(versions=versions, requirements=REQUIREMENTS, resolved=RESOLVED)]
    lines.append("| model | what it holds | inputs | outputs |")
    lines.append("| --- | --- | --- | --- |")
    for m, info, _ in built:
        ins = "<br>".join(f"`{t['name']}` {fmt_tensor(t)}"
                          + ("" if m.mode == "float" else f", calibrated on [{i.lo:g}, {i.hi:g}]")
                          for t, i in zip(info["inputs"], m.inputs))
        outs = "<br>".join(fmt_tensor(t) for t in info["outputs"])
        lines.append(f"| `{m.name}` | {m.about} | {ins} | {outs} |")
    lines.append("")
    lines.append("## Op lists")
    lines.append("")
    lines.append("Builtin op, its version in the flatbuffer, input tensors (constants marked) and "
                 "output tensors, in execution order.")
    lines.append("")
    for m, info, diff in built:
        lines.append(f"### `{m.name}` ({m.mode})")
        lines.append("")
        for p in fmt_ops(info):
            lines.append(f"* {p}")
        if diff is not None:
            lines.append(f"* full TFLite vs TFLM, max abs difference: {diff:g}")
        lines.append("")
    (out / "README.md").write_text("\n".join(lines))


def write_sums(out):
    files = sorted(p for p in out.rglob("*") if p.is_file() and p.name != "SHA256SUMS")
    text = "".join(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  "
                   f"{p.relative_to(out).as_posix()}\n" for p in files)
    (out / "SHA256SUMS").write_text(text)


def main():
    root = pathlib.Path(__file__).resolve().parent.parent
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=pathlib.Path, default=root / "tests" / "models" / "tflite")
    ap.add_argument("--only", default="")
    ap.add_argument("--no-tflite-compare", action="store_true")
    args = ap.parse_args()

    names = [m.name for m in MODELS]
    assert len(set(names)) == len(names), "duplicate model names"
    todo = MODELS
    if args.only:
        want = args.only.split(",")
        unknown = set(want) - set(names)
        if unknown:
            sys.exit(f"unknown models: {sorted(unknown)}")
        todo = [m for m in MODELS if m.name in want]

    versions = (f"tensorflow-cpu {tf.__version__}, tflite-micro {tflite_micro.__version__}, "
                f"numpy {np.__version__}, Python {sys.version.split()[0]}")
    print(versions)
    have = {"tensorflow": tf.__version__, "tflite-micro": tflite_micro.__version__,
            "numpy": np.__version__}
    for pkg, want in PINNED.items():
        if have[pkg] != want:
            print(f"WARNING: {pkg} {have[pkg]} is not the pinned {want}; outputs may differ")

    out = args.out
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)

    built, refused = [], []
    for m in todo:
        data = convert(m)
        info = describe(data)
        in_names = [t["name"] for t in info["inputs"]]
        # The converter may prefix names (e.g. "serving_default_x:0"); check the order only.
        for spec, t in zip(m.inputs, info["inputs"]):
            assert tuple(t["shape"]) == tuple(spec.shape), (m.name, in_names)
            assert spec.name in t["name"], (m.name, in_names)
        print(f"\n== {m.name} ({m.mode}, {len(data)} bytes)")
        for p in fmt_ops(info):
            print("   ", p)
        try:
            samples = []
            for k in range(NUM_SAMPLES):
                xs = test_inputs(m, info, k)
                ys = run_tflm(data, xs, len(info["outputs"]))
                for y, t in zip(ys, info["outputs"]):
                    assert y.dtype == NUMPY_TYPES[t["dtype"]], (m.name, y.dtype, t["dtype"])
                    assert list(y.shape) == t["shape"], (m.name, y.shape, t["shape"])
                samples.append((xs, ys))
        except Exception as e:  # TFLM refused the model: report and drop it
            print(f"   TFLM REFUSED: {e}")
            refused.append((m.name, str(e)))
            continue
        (out / f"{m.name}.tflite").write_bytes(data)
        d = out / m.name
        d.mkdir()
        for k, (xs, ys) in enumerate(samples):
            for i, x in enumerate(xs):
                np.save(d / f"input_{k}_{i}.npy", x)
            for i, y in enumerate(ys):
                np.save(d / f"output_{k}_{i}.npy", y)
        diff = None
        if not args.no_tflite_compare:
            try:
                diffs = []
                for xs, ys in samples:
                    zs = run_tflite(data, xs, len(ys))
                    diffs += [float(np.max(np.abs(y.astype(np.float64) - z.astype(np.float64))))
                              for y, z in zip(ys, zs)]
                diff = max(diffs)
                print(f"    full TFLite vs TFLM: max |diff| {diff:g}")
            except Exception as e:
                print(f"    (full TFLite comparison skipped: {e})")
        built.append((m, info, diff))

    write_readme(out, built, versions)
    write_sums(out)
    total = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    print(f"\n{len(built)} models written to {out}, {total} bytes in all")
    if refused:
        print("refused by TFLM:")
        for name, err in refused:
            print(f"  {name}: {err}")
        sys.exit(1)


if __name__ == "__main__":
    main()
