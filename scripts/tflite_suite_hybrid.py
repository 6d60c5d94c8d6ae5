"""Hybrid cases of the TFLite conformance suite: float32 activations, int8 constant weights.

Dynamic-range quantized models keep their activations in float32 and only their weights in
int8 with a scale (per tensor, or per output channel). TFLM refuses them ("Hybrid models are
not supported"), so their outputs come from LiteRT's reference kernels (`litert-ref`): the
float input is quantized per batch row at run time (symmetric, or asymmetric with a zero point
where the op's `asymmetric_quantize_inputs` says so; always for a per-channel
convolution), multiplied with the weights in integers
and scaled back to float.

Also a few int8 LOG_SOFTMAX cases (TFLM runs them) that stress its fixed-point arithmetic.

Imported by scripts/make_tflite_suite.py after tflite_suite_cases, whose `add` registers these.
"""

import numpy as np

from tflite_suite_cases import ACT, PAD, Q, add, options, uniform

# TFLM refuses hybrid models ("Hybrid models are not supported"; "Input type: FLOAT32 with
# filter type: INT8 not supported"): these cases fall back on LiteRT's reference kernels.
ABOUT = "TFLM refuses hybrid models"


def _weights(rng, shape, axis, per_channel):
    """Random int8 weights and their quantization: symmetric, zero point 0."""
    w = rng.integers(-127, 128, shape).astype(np.int8)
    n = shape[axis]
    scale = rng.uniform(0.002, 0.02, n).astype(np.float32) if per_channel else 0.01
    return w, Q(scale, 0, axis)


def _fc(per_channel, asym, bias, act, zero_row=False, batch=3, n_in=24, n_out=10):
    def build(g):
        xv = uniform(g.rng, (batch, n_in), -3.0, 2.0)
        if zero_row:
            xv[1] = 0.0
        x = g.input("x", "float32", xv)
        w, q = _weights(g.rng, (n_out, n_in), 0, per_channel)
        wi = g.const("w", "int8", w, q)
        ins = [x, wi, -1]
        if bias:
            ins[2] = g.const("b", "float32", uniform(g.rng, (n_out,), -0.5, 0.5))
        y = g.output("y", "float32", (batch, n_out))
        g.op("FULLY_CONNECTED", ins, [y],
             options("FullyConnected", fusedActivationFunction=ACT[act],
                     asymmetricQuantizeInputs=asym))
    return build


def _conv(depthwise, act, pad="SAME", stride=1):
    def build(g):
        x = g.input("x", "float32", uniform(g.rng, (2, 7, 6, 3), -2.0, 3.0))
        if depthwise:
            w, q = _weights(g.rng, (1, 3, 3, 6), 3, True)
            kind, op = "DepthwiseConv2D", "DEPTHWISE_CONV_2D"
            extra = {"depthMultiplier": 2}
        else:
            w, q = _weights(g.rng, (5, 3, 3, 3), 0, True)
            kind, op, extra = "Conv2D", "CONV_2D", {}
        n = w.shape[3] if depthwise else w.shape[0]
        wi = g.const("w", "int8", w, q)
        b = g.const("b", "float32", uniform(g.rng, (n,), -0.5, 0.5))
        oh = -(-7 // stride) if pad == "SAME" else (7 - 3) // stride + 1
        ow = -(-6 // stride) if pad == "SAME" else (6 - 3) // stride + 1
        y = g.output("y", "float32", (2, oh, ow, n))
        g.op(op, [x, wi, b], [y],
             options(kind, padding=PAD[pad], strideH=stride, strideW=stride,
                     fusedActivationFunction=ACT[act], **extra))
    return build


for _pc in (False, True):
    for _asym in (False, True):
        _name = "fully_connected_hybrid_{}_{}".format("per_channel" if _pc else "per_tensor",
                                                     "asym" if _asym else "sym")
        _what = "{} weight scales, {} input quantization".format(
            "per-channel" if _pc else "per-tensor", "asymmetric" if _asym else "symmetric")
        add(_name, "FULLY_CONNECTED", "int8",
            f"float32 [3,24] x int8 [10,24], {_what}, float bias, RELU; {ABOUT}",
            _fc(_pc, _asym, True, "RELU"), probe="int8_hybrid", fallback=True)
add("fully_connected_hybrid_no_bias", "FULLY_CONNECTED", "int8",
    f"float32 [3,24] x int8 [10,24], per-tensor scale, no bias; {ABOUT}",
    _fc(False, False, False, "NONE"), probe="int8_hybrid", fallback=True)
add("fully_connected_hybrid_zero_row", "FULLY_CONNECTED", "int8",
    f"float32 [3,24] (row 1 all zeros) x int8 [10,24], per-channel, RELU6; {ABOUT}",
    _fc(True, False, True, "RELU6", zero_row=True),
    probe="int8_hybrid", fallback=True)

add("conv_2d_hybrid", "CONV_2D", "int8",
    f"float32 [2,7,6,3] * int8 [5,3,3,3] per-channel, SAME, RELU; {ABOUT}",
    _conv(False, "RELU"), probe="int8_hybrid", fallback=True)
add("depthwise_conv_2d_hybrid", "DEPTHWISE_CONV_2D", "int8",
    f"float32 [2,7,6,3] * int8 [1,3,3,6] per-channel, multiplier 2, SAME; {ABOUT}",
    _conv(True, "NONE"), probe="int8_hybrid", fallback=True)
add("conv_2d_hybrid_valid_stride2", "CONV_2D", "int8",
    f"float32 [2,7,6,3] * int8 [5,3,3,3] per-channel, VALID, stride 2, RELU6; {ABOUT}",
    _conv(False, "RELU6", "VALID", 2), probe="int8_hybrid", fallback=True)



# ---- int8 LOG_SOFTMAX beyond the plain cases: input scales that move the fixed-point
# multiplier's shift, rows whose small entries fall below the cut-off, rows of one element.


def _log_softmax_int8(shape, scale, zero_point=0):
    def build(g):
        x = g.rng.integers(-128, 128, shape).astype(np.int8)
        x.reshape(-1, shape[-1])[0] = 127  # a row of equal values
        g.op("LOG_SOFTMAX", [g.input("x", "int8", x, Q(scale, zero_point))],
             [g.output("y", "int8", shape, Q(16 / 256, 127))], options("LogSoftmax"))
    return build


for _name, _shape, _scale, _zp, _what in [
        ("coarse", (16, 24), 0.25, -3, "input scale 1/4: most entries below the cut-off"),
        ("fine", (16, 24), 1 / 512, 5, "input scale 1/512: every entry counts"),
        ("mid", (3, 5, 40), 0.06, 0, "input scale 0.06, rows of 40"),
        ("single", (6, 1), 0.1, 0, "rows of one element")]:
    add(f"log_softmax_int8_{_name}", "LOG_SOFTMAX", "int8",
        f"[{','.join(map(str, _shape))}], {_what}; all-equal first row",
        _log_softmax_int8(_shape, _scale, _zp))
