#!/usr/bin/env python3
"""Generates the memory benchmark's MobileNetV2 (width 0.35, 144x144 RGB input, the network
msf-CNN's peak-memory figures are for) as a full-integer int8 .tflite with seeded random weights,
and its reference output, into tests/models/mobilenet-v2/:

    mobilenet_v2_035_144_int8.tflite   Keras' MobileNetV2(alpha=0.35), its average-pooled
                                       features into 10 logits, int8 in and out
    mobilenet_v2_035_144_int8/input_0.npy    a seeded int8 input
    mobilenet_v2_035_144_int8/output_0.npy   TensorFlow Lite Micro's output on it
    SHA256SUMS

The weights are Keras' seeded initializers (random, not trained): the memory a schedule needs
and the arithmetic it does depend on the shapes alone. Batch normalization takes the statistics
of a batch of seeded inputs, so that every layer's activations span their int8 range. The head ends at the logits: TFLM's Python
interpreter aborts on this network with Keras' softmax after them. The converter quantizes with a
representative set of 8 seeded inputs uniform in [-1, 1].

Run once, in a scratch environment outside the repository (Python 3.11, x86_64 Linux):
    python3 -m venv /tmp/tfgen
    /tmp/tfgen/bin/pip install tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 \\
        numpy==2.4.6
    /tmp/tfgen/bin/python scripts/make_mobilenet_v2.py
"""

import hashlib
import os
import pathlib
import subprocess
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/models/mobilenet-v2"
NAME = "mobilenet_v2_035_144_int8"
SHAPE = (144, 144, 3)


def model_bytes():
    import tensorflow as tf
    tf.keras.utils.set_random_seed(35)
    base = tf.keras.applications.MobileNetV2(
        input_shape=SHAPE, alpha=0.35, weights=None, include_top=False, pooling="avg")
    net = tf.keras.Model(base.input, tf.keras.layers.Dense(10)(base.output))
    rng = np.random.default_rng(144)
    # Batch normalization's statistics from a batch of seeded inputs (one step at learning
    # rate 0, momentum 0): every layer's activations normalized, as a trained network's are,
    # instead of fading out through layers of random weights.
    for layer in net.layers:
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            layer.momentum = 0.0
    net.compile(optimizer=tf.keras.optimizers.SGD(learning_rate=0.0), loss="mse")
    batch = rng.uniform(-1, 1, (16, *SHAPE)).astype(np.float32)
    net.fit(batch, np.zeros((16, 10), np.float32), batch_size=16, epochs=1, verbose=0)

    def representative():
        for _ in range(8):
            yield [rng.uniform(-1, 1, (1, *SHAPE)).astype(np.float32)]

    conv = tf.lite.TFLiteConverter.from_keras_model(net)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    conv.representative_dataset = representative
    conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    conv.inference_input_type = tf.int8
    conv.inference_output_type = tf.int8
    return conv.convert()


def main():
    # TensorFlow and TFLM's interpreter abort when loaded in one process: the model is
    # converted in a process of its own.
    subprocess.run([sys.executable, __file__, "--convert"], check=True)
    from tflite_micro.python.tflite_micro import runtime as tflm
    data = (OUT / f"{NAME}.tflite").read_bytes()
    x = np.random.default_rng(7).integers(-128, 128, (1, *SHAPE)).astype(np.int8)
    interp = tflm.Interpreter.from_bytes(bytes(data), arena_size=64 << 20)
    interp.set_input(x, 0)
    interp.invoke()
    y = np.array(interp.get_output(0), copy=True)
    vec = OUT / NAME
    vec.mkdir(exist_ok=True)
    np.save(vec / "input_0.npy", x)
    np.save(vec / "output_0.npy", y)
    files = [f"{NAME}.tflite", f"{NAME}/input_0.npy", f"{NAME}/output_0.npy"]
    sums = "".join(
        f"{hashlib.sha256((OUT / f).read_bytes()).hexdigest()}  {f}\n" for f in files)
    (OUT / "SHA256SUMS").write_text(sums)
    print(f"{NAME}: {len(data)} bytes, output {y.tolist()}")


if __name__ == "__main__":
    if sys.argv[1:] == ["--convert"]:
        OUT.mkdir(parents=True, exist_ok=True)
        (OUT / f"{NAME}.tflite").write_bytes(model_bytes())
    else:
        main()
