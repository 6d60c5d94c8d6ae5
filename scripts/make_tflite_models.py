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

The models themselves are in scripts/tflite_model_defs.py.
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

# Importing the definitions registers the models.
from tflite_model_defs import F32, MODELS  # noqa: E402


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
