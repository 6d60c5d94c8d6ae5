"""Writes the benchmark's two large float networks, with seeded random weights, 224×224 inputs:

- `resnet50.onnx`: the ResNet-50 v1.5 layout (a 7×7 stem with max pooling, bottleneck blocks
  [3, 4, 6, 3] with the stride on the 3×3 convolution, 1×1 projections on the shortcuts,
  global average pooling and a 1000-way dense layer), each convolution followed by a
  BatchNormalization as exporters write them before folding;
- `mobilenet.onnx`: the MobileNet v1 (width 1.0) layout (a 3×3 stem, 13 depthwise-separable
  blocks, five of them with stride 2, average pooling, a 1000-way dense layer), ReLU after
  every BatchNormalization.

Only the layouts are those networks'; the weights are He-initialised random numbers, so the
outputs mean nothing, and the files are generated where they are needed rather than kept in
the repository (about 100 MB and 17 MB). Usage: python make_large_models.py OUT_DIR
(needs numpy and onnx, as `.venv-bench` has them). Deterministic: the same seed, the same files.
"""

import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 13


class Net:
    def __init__(self, name, seed):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.inits = []
        self.count = 0

    def fresh(self, kind):
        self.count += 1
        return f"{kind}{self.count}"

    def const(self, kind, value):
        name = self.fresh(kind)
        self.inits.append(numpy_helper.from_array(value.astype(np.float32), name))
        return name

    def conv_bn(self, x, cin, cout, k, stride=1, groups=1, relu=True):
        fan_in = cin // groups * k * k
        w = self.rng.standard_normal((cout, cin // groups, k, k)) * np.sqrt(2.0 / fan_in)
        y = self.fresh("conv")
        pad = k // 2
        self.nodes.append(helper.make_node(
            "Conv", [x, self.const("w", w)], [y], kernel_shape=[k, k], strides=[stride] * 2,
            pads=[pad] * 4, group=groups))
        scale = self.rng.uniform(0.5, 1.0, cout)
        bias = self.rng.uniform(-0.1, 0.1, cout)
        mean = self.rng.uniform(-0.1, 0.1, cout)
        var = self.rng.uniform(0.5, 1.5, cout)
        z = self.fresh("bn")
        self.nodes.append(helper.make_node(
            "BatchNormalization",
            [y, self.const("scale", scale), self.const("bias", bias), self.const("mean", mean),
             self.const("var", var)], [z], epsilon=1e-5))
        return self.relu(z) if relu else z

    def relu(self, x):
        y = self.fresh("relu")
        self.nodes.append(helper.make_node("Relu", [x], [y]))
        return y

    def add(self, a, b):
        y = self.fresh("add")
        self.nodes.append(helper.make_node("Add", [a, b], [y]))
        return y

    def head(self, x, channels, pool):
        """Average pooling over the last `pool`×`pool` map, flattened, a 1000-way dense layer."""
        p = self.fresh("pool")
        self.nodes.append(helper.make_node("AveragePool", [x], [p], kernel_shape=[pool, pool]))
        flat = self.fresh("flat")
        shape = self.fresh("shape")
        self.inits.append(numpy_helper.from_array(np.array([1, channels], dtype=np.int64), shape))
        self.nodes.append(helper.make_node("Reshape", [p, shape], [flat]))
        w = self.rng.standard_normal((channels, 1000)) * np.sqrt(1.0 / channels)
        b = self.rng.uniform(-0.1, 0.1, 1000)
        self.nodes.append(helper.make_node(
            "Gemm", [flat, self.const("fc_w", w), self.const("fc_b", b)], ["logits"]))
        return "logits"

    def save(self, path):
        x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 224, 224])
        y = helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, 1000])
        graph = helper.make_graph(self.nodes, self.name, [x], [y], self.inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
        model.producer_name = "kiln scripts/make_large_models.py"
        onnx.checker.check_model(model)
        onnx.save(model, path)


def resnet50(path):
    n = Net("resnet50", seed=50)
    x = n.conv_bn("input", 3, 64, 7, stride=2)
    p = n.fresh("maxpool")
    n.nodes.append(helper.make_node("MaxPool", [x], [p], kernel_shape=[3, 3], strides=[2, 2],
                                    pads=[1, 1, 1, 1]))
    x, cin = p, 64
    for stage, (blocks, width) in enumerate([(3, 64), (4, 128), (6, 256), (3, 512)]):
        for b in range(blocks):
            stride = 2 if stage > 0 and b == 0 else 1
            cout = width * 4
            y = n.conv_bn(x, cin, width, 1)
            y = n.conv_bn(y, width, width, 3, stride=stride)
            y = n.conv_bn(y, width, cout, 1, relu=False)
            short = x if (cin == cout and stride == 1) else n.conv_bn(
                x, cin, cout, 1, stride=stride, relu=False)
            x, cin = n.relu(n.add(y, short)), cout
    n.head(x, 2048, 7)
    n.save(path)


def mobilenet(path):
    n = Net("mobilenet", seed=1)
    x = n.conv_bn("input", 3, 32, 3, stride=2)
    cin = 32
    blocks = [(64, 1), (128, 2), (128, 1), (256, 2), (256, 1), (512, 2)] + [(512, 1)] * 5 + [
        (1024, 2), (1024, 1)]
    for cout, stride in blocks:
        x = n.conv_bn(x, cin, cin, 3, stride=stride, groups=cin)
        x = n.conv_bn(x, cin, cout, 1)
        cin = cout
    n.head(x, 1024, 7)
    n.save(path)


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    for name, make in [("resnet50", resnet50), ("mobilenet", mobilenet)]:
        path = os.path.join(out, name + ".onnx")
        if not os.path.exists(path):
            make(path + ".part")
            os.replace(path + ".part", path)
        print(path)


if __name__ == "__main__":
    main()
