#!/usr/bin/env python3
"""Builds Kiln's small test models into tests/models/ with fixed random weights.

Run from the repository root after scripts/setup-python.sh:
    .venv/bin/python scripts/make_test_models.py

Opsets vary on purpose: most models use 13, residual.onnx uses 7 and softmax_head.onnx 21.
mlp.onnx and softmax_head.onnx have a free batch dimension; concat_transpose.onnx has two
inputs, a Constant node and unnamed nodes.
"""

import argparse
import pathlib

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

FLOAT = TensorProto.FLOAT


class Builder:
    """Collects nodes and initializers; weights come from one seeded generator."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []

    def weight(self, name, shape, scale=0.5):
        value = (self.rng.standard_normal(shape) * scale).astype(np.float32)
        self.inits.append(numpy_helper.from_array(value, name))
        return name

    def const(self, name, value):
        self.inits.append(numpy_helper.from_array(np.asarray(value), name))
        return name

    def node(self, op, inputs, output, name=None, **attrs):
        self.nodes.append(helper.make_node(op, inputs, [output], name=name, **attrs))
        return output

    def batchnorm(self, x, channels, name, **attrs):
        scale = (1.0 + 0.1 * self.rng.standard_normal(channels)).astype(np.float32)
        bias = (0.1 * self.rng.standard_normal(channels)).astype(np.float32)
        mean = (0.1 * self.rng.standard_normal(channels)).astype(np.float32)
        var = (0.5 + self.rng.random(channels)).astype(np.float32)
        names = [f"{name}.{p}" for p in ("scale", "bias", "mean", "var")]
        for n, v in zip(names, (scale, bias, mean, var)):
            self.inits.append(numpy_helper.from_array(v, n))
        return self.node("BatchNormalization", [x, *names], f"{name}.out", name=name, epsilon=1e-5,
                         **attrs)

    def model(self, name, inputs, outputs, opset):
        if opset < 9:
            # IR version 3 wants every initializer listed among the graph inputs too.
            inputs = inputs + [
                helper.make_tensor_value_info(t.name, t.data_type, t.dims) for t in self.inits
            ]
        graph = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        model = helper.make_model(
            graph, producer_name="kiln-test-models", opset_imports=[helper.make_opsetid("", opset)]
        )
        model.ir_version = {7: 3, 13: 7, 21: 10}[opset]
        onnx.checker.check_model(model, full_check=True)
        return model


def mlp():
    """Gemm + Relu twice, then Softmax; free batch dim "batch"."""
    b = Builder(1)
    h = b.node("Gemm", ["x", b.weight("fc1.w", [32, 16]), b.weight("fc1.b", [32])], "fc1", "fc1",
               transB=1)
    h = b.node("Relu", [h], "relu1", "relu1")
    h = b.node("Gemm", [h, b.weight("fc2.w", [32, 10]), b.weight("fc2.b", [10])], "fc2", "fc2")
    h = b.node("Relu", [h], "relu2", "relu2")
    b.node("Softmax", [h], "probs", "softmax", axis=1)
    x = helper.make_tensor_value_info("x", FLOAT, ["batch", 16])
    y = helper.make_tensor_value_info("probs", FLOAT, ["batch", 10])
    return b.model("mlp", [x], [y], 13)


def dw_separable():
    """Conv-BN-Relu, depthwise Conv + Clip(0, 6), pointwise Conv, global pool, Gemm head."""
    b = Builder(2)
    h = b.node("Conv", ["image", b.weight("conv1.w", [8, 3, 3, 3])], "conv1", "conv1",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2])
    h = b.batchnorm(h, 8, "bn1")
    h = b.node("Relu", [h], "relu1", "relu1")
    h = b.node("Conv", [h, b.weight("dw.w", [8, 1, 3, 3]), b.weight("dw.b", [8])], "dw", "dw",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1], group=8)
    lo, hi = b.const("clip.min", np.float32(0.0)), b.const("clip.max", np.float32(6.0))
    h = b.node("Clip", [h, lo, hi], "relu6", "relu6")
    h = b.node("Conv", [h, b.weight("pw.w", [16, 8, 1, 1]), b.weight("pw.b", [16])], "pw", "pw",
               kernel_shape=[1, 1])
    h = b.node("GlobalAveragePool", [h], "gap", "gap")
    h = b.node("Flatten", [h], "flat", "flatten", axis=1)
    b.node("Gemm", [h, b.weight("fc.w", [16, 5]), b.weight("fc.b", [5])], "logits", "fc")
    x = helper.make_tensor_value_info("image", FLOAT, [1, 3, 16, 16])
    y = helper.make_tensor_value_info("logits", FLOAT, [1, 5])
    return b.model("dw_separable", [x], [y], 13)


def residual():
    """Conv-BN-Relu-Conv-BN plus a skip Add and Relu, then MaxPool and AveragePool; opset 7
    (IR version 3: the initializers are graph inputs too; BatchNormalization has `spatial`)."""
    b = Builder(3)
    h = b.node("Conv", ["x", b.weight("c1.w", [4, 4, 3, 3])], "c1", "c1",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = b.batchnorm(h, 4, "bn1", spatial=1)
    h = b.node("Relu", [h], "r1", "r1")
    h = b.node("Conv", [h, b.weight("c2.w", [4, 4, 3, 3]), b.weight("c2.b", [4])], "c2", "c2",
               kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    h = b.batchnorm(h, 4, "bn2")
    h = b.node("Add", [h, "x"], "skip", "skip")
    h = b.node("Relu", [h], "r2", "r2")
    h = b.node("MaxPool", [h], "mp", "maxpool", kernel_shape=[2, 2], strides=[2, 2])
    b.node("AveragePool", [h], "y", "avgpool", kernel_shape=[3, 3], strides=[1, 1],
           pads=[1, 1, 1, 1], count_include_pad=0)
    x = helper.make_tensor_value_info("x", FLOAT, [1, 4, 8, 8])
    y = helper.make_tensor_value_info("y", FLOAT, [1, 4, 4, 4])
    return b.model("residual", [x], [y], 7)


def softmax_head():
    """MatMul + Add, a Reshape (with 0 and -1 in its shape) and Softmax over the last axis;
    opset 21, free batch dim "N"."""
    b = Builder(4)
    h = b.node("MatMul", ["tokens", b.weight("proj.w", [12, 6])], "proj", "proj")
    h = b.node("Add", [h, b.weight("proj.b", [6])], "proj_b", "proj_bias")
    h = b.node("Reshape", [h, b.const("shape", np.array([0, 2, -1], np.int64))], "r", "reshape")
    b.node("Softmax", [h], "scores", "softmax", axis=-1)
    x = helper.make_tensor_value_info("tokens", FLOAT, ["N", 8, 12])
    y = helper.make_tensor_value_info("scores", FLOAT, ["N", 2, 24])
    return b.model("softmax_head", [x], [y], 21)


def concat_transpose():
    """Two inputs: Transpose, Concat on axis 1, Pad, Mul by a Constant node, Reshape; the
    nodes have no names."""
    b = Builder(5)
    a = b.node("Transpose", ["a"], "a_nhwc", perm=[0, 2, 3, 1])
    h = b.node("Concat", [a, "b"], "cat", axis=1)
    pads = b.const("pads", np.array([0, 1, 0, 0, 0, 2, 0, 0], np.int64))
    h = b.node("Pad", [h, pads, b.const("pad_value", np.float32(0.5))], "padded")
    gain = b.rng.standard_normal(4).astype(np.float32)
    b.nodes.append(helper.make_node("Constant", [], ["gain"],
                                    value=numpy_helper.from_array(gain, "gain")))
    h = b.node("Mul", [h, "gain"], "scaled")
    b.node("Reshape", [h, b.const("flat", np.array([1, 15, 24], np.int64))], "out")
    xa = helper.make_tensor_value_info("a", FLOAT, [1, 4, 6, 6])
    xb = helper.make_tensor_value_info("b", FLOAT, [1, 6, 6, 4])
    y = helper.make_tensor_value_info("out", FLOAT, [1, 15, 24])
    return b.model("concat_transpose", [xa, xb], [y], 13)


MODELS = [mlp, dw_separable, residual, softmax_head, concat_transpose]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/models", help="output folder")
    args = parser.parse_args()
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for make in MODELS:
        model = make()
        path = out / f"{make.__name__}.onnx"
        onnx.save(model, path)
        print(f"{path}: {path.stat().st_size} bytes, opset {model.opset_import[0].version}")


if __name__ == "__main__":
    main()
