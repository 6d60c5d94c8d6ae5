#!/usr/bin/env python3
"""Builds small QDQ models into tests/ops/qdq_<case>/ with onnxruntime's outputs.

Each is a group that Kiln rewrites into a quantized operator (onnx/qdq.rs) or one it must leave
in float: a convolution with a ReLU whose zero point is not the type's minimum, a uint8 one with
a Clip, a Gemm with a transposed per-channel weight, a MatMul with its bias Add, a MatMul with a
uint8 weight off zero, and an input that a convolution and a float Add share. Weights are
random (fixed seed), biases are int32 of scale s_x * s_w as onnxruntime's quantizer writes them.

The reference is onnxruntime's default session (graph optimizations on, as users run it); the
script checks that its outputs equal those of a session without optimizations (the graph as
written), so that the case holds whichever way onnxruntime computes it.

Run from the repository root after scripts/setup-python.sh:
    .venv/bin/python scripts/make_qdq_models.py
"""

import pathlib
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

RNG = np.random.default_rng(7031)
F32 = np.float32
OUT = pathlib.Path("tests/ops")


class Graph:
    def __init__(self):
        self.nodes, self.inits = [], []

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, output, domain="", **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def dq(self, x, scale, zp, axis=None):
        s = self.const(f"{x}_dq_scale", np.asarray(scale, F32))
        z = self.const(f"{x}_dq_zp", zp)
        attrs = {} if axis is None else {"axis": axis}
        return self.node("DequantizeLinear", [x, s, z], f"{x}_dq", **attrs)

    def q(self, x, scale, zp, name):
        s = self.const(f"{name}_scale", np.array(scale, F32))
        z = self.const(f"{name}_zp", zp)
        return self.node("QuantizeLinear", [x, s, z], name)

    def weight(self, name, q, scale, zp, axis=None):
        self.const(name, q)
        return self.dq(name, scale, zp, axis)

    def bias(self, name, n, scale):
        self.const(name, RNG.integers(-2000, 2000, n).astype(np.int32))
        axis = 0 if np.ndim(scale) else None
        return self.dq(name, scale, np.zeros(np.shape(scale), np.int32), axis)


def i8(*shape):
    return RNG.integers(-128, 128, shape).astype(np.int8)


def u8(*shape):
    return RNG.integers(0, 256, shape).astype(np.uint8)


def save(name, g, x, out_names, x_type):
    inp = helper.make_tensor_value_info("x", x_type, x.shape)
    zp_type = {i.name: i.data_type for i in g.inits}
    outs = [helper.make_tensor_value_info(o, zp_type[f"{o}_zp"], None) for o in out_names]
    graph = helper.make_graph(g.nodes, name, [inp], outs, g.inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model)
    results = []
    for level in [ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
                  ort.GraphOptimizationLevel.ORT_DISABLE_ALL]:
        so = ort.SessionOptions()
        so.graph_optimization_level = level
        so.intra_op_num_threads = 1
        s = ort.InferenceSession(model.SerializeToString(), so,
                                 providers=["CPUExecutionProvider"])
        results.append(s.run(None, {"x": x}))
    for a, b in zip(*results):
        assert np.array_equal(a, b), f"{name}: onnxruntime differs with and without optimizations"
    d = OUT / name
    shutil.rmtree(d, ignore_errors=True)
    d.mkdir(parents=True)
    onnx.save(model, d / "model.onnx")
    np.save(d / "input_0.npy", x)
    for k, y in enumerate(results[0]):
        np.save(d / f"output_{k}.npy", y)
    print(f"{name}: {[y.shape for y in results[0]]}")


def conv_relu():
    g, sx, sw = Graph(), 0.05, RNG.uniform(0.002, 0.01, 4).astype(F32)
    x = g.dq("x", sx, np.int8(3))
    w = g.weight("w", i8(4, 3, 3, 3), sw, np.zeros(4, np.int8), axis=0)
    b = g.bias("b", 4, (F32(sx) * sw).astype(F32))
    c = g.node("Conv", [x, w, b], "c", pads=[1, 1, 1, 1])
    r = g.node("Relu", [c], "r")
    g.q(r, 0.02, np.int8(-10), "y")
    save("qdq_conv_relu", g, i8(1, 3, 6, 6), ["y"], TensorProto.INT8)


def conv_clip_u8():
    g, sx, sw = Graph(), 0.04, F32(0.006)
    x = g.dq("x", sx, np.uint8(128))
    w = g.weight("w", i8(2, 2, 3, 3), sw, np.int8(0))
    b = g.bias("b", 2, F32(F32(sx) * sw))
    c = g.node("Conv", [x, w, b], "c", strides=[2, 2])
    lo, hi = g.const("lo", np.array(0.0, F32)), g.const("hi", np.array(6.0, F32))
    r = g.node("Clip", [c, lo, hi], "r")
    g.q(r, 0.03, np.uint8(3), "y")
    save("qdq_conv_clip_u8", g, u8(1, 2, 7, 7), ["y"], TensorProto.UINT8)


def gemm_trans_b():
    g, sx, sw = Graph(), 0.1, RNG.uniform(0.002, 0.01, 5).astype(F32)
    a = g.dq("x", sx, np.int8(-4))
    w = g.weight("w", i8(5, 8), sw, np.zeros(5, np.int8), axis=0)
    b = g.bias("b", 5, (F32(sx) * sw).astype(F32))
    m = g.node("Gemm", [a, w, b], "m", transB=1)
    g.q(m, 0.05, np.int8(2), "y")
    save("qdq_gemm_trans_b", g, i8(2, 8), ["y"], TensorProto.INT8)


def matmul_add_relu():
    g, sx, sw = Graph(), 0.08, RNG.uniform(0.002, 0.01, 5).astype(F32)
    a = g.dq("x", sx, np.int8(1))
    w = g.weight("w", i8(8, 5), sw, np.zeros(5, np.int8), axis=1)
    b = g.bias("b", 5, (F32(sx) * sw).astype(F32))
    m = g.node("MatMul", [a, w], "m")
    s = g.node("Add", [b, m], "s")
    r = g.node("Relu", [s], "r")
    g.q(r, 0.04, np.int8(-128), "y")
    save("qdq_matmul_add_relu", g, i8(3, 8), ["y"], TensorProto.INT8)


def matmul_u8_weight():
    g = Graph()
    a = g.dq("x", 0.07, np.int8(0))
    w = g.weight("w", u8(6, 4), F32(0.01), np.uint8(128))
    m = g.node("MatMul", [a, w], "m")
    g.q(m, 0.2, np.int8(-3), "y")
    save("qdq_matmul_u8_weight", g, i8(2, 6), ["y"], TensorProto.INT8)


def shared_input():
    g, sx, sw = Graph(), 0.05, F32(0.004)
    x = g.dq("x", sx, np.int8(-2))
    w = g.weight("w", i8(3, 3, 1, 1), sw, np.int8(0))
    c = g.node("Conv", [x, w], "c")
    yc = g.q(c, 0.03, np.int8(0), "yc")
    cd = g.dq(yc, 0.03, np.int8(0))
    s = g.node("Add", [x, cd], "s")
    g.q(s, 0.06, np.int8(0), "y")
    save("qdq_shared_input", g, i8(1, 3, 4, 4), ["y"], TensorProto.INT8)


for make in [conv_relu, conv_clip_u8, gemm_trans_b, matmul_add_relu, matmul_u8_weight,
             shared_input]:
    make()
