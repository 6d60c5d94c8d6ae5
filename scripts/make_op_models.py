#!/usr/bin/env python3
"""Builds one small ONNX model per op case into tests/ops/<case>/ with onnxruntime's outputs.

Each case folder holds model.onnx, its runtime inputs input_N.npy (fixed seed) and
onnxruntime's outputs output_N.npy (onnx's reference evaluator's for an op newer than
onnxruntime runs). Multi-node cases cover control flow (If, Loop, Scan) and optionals. Inputs marked as constants become initializers, so that
ops whose arguments must be known at compile time (shapes, pads, axes) see them as such.
tests/ops/invalid/ holds models that must fail to import: two unknown custom ops, an input
with a free non-batch dim, a string input. tests/ops/mlperf_int8/<model>/ holds onnxruntime's
outputs of the int8 QDQ MLPerf Tiny models (from --mlperf-models) on a TFLite test vector,
tests/ops/mlperf_float/str_ww_float/ those of str_ww_float on a realistic input.

Run from the repository root after scripts/setup-python.sh:
    .venv/bin/python scripts/make_op_models.py

The cases themselves are in scripts/op_model_cases.py.
"""

import argparse
import dataclasses
import pathlib
import shutil

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator

# Importing the cases registers them, in the order their inputs draw from the seeded generator.
from op_model_cases import CASES, F32, ints, rn


def session(model):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model.SerializeToString(), options,
                                providers=["CPUExecutionProvider"])


def build(case):
    """The case's model and its runtime inputs."""
    names, graph_inputs, inits, feeds = [], [], [], {}
    for i, arg in enumerate(case.args):
        if arg is None:
            names.append("")
            continue
        kind, value = arg
        name = f"{kind}{i}"
        names.append(name)
        value = np.asarray(value)
        if kind == "x":
            elem = helper.np_dtype_to_tensor_dtype(value.dtype)
            graph_inputs.append(helper.make_tensor_value_info(name, elem, value.shape))
            feeds[name] = value
        else:
            inits.append(numpy_helper.from_array(value, name))
    outputs = [f"y{k}" for k in range(case.outputs)]
    node = helper.make_node(case.op, names, outputs, name=case.name, **case.attrs)
    graph = helper.make_graph([node], case.name, graph_inputs,
                              [onnx.ValueInfoProto(name=o) for o in outputs], inits)
    opsets = [helper.make_opsetid("", case.opset)]
    model = helper.make_model(graph, producer_name="kiln-op-models", opset_imports=opsets)
    try:
        model.ir_version = helper.find_min_ir_version_for(opsets)
    except ValueError:
        # An opset newer than the helper's table: the newest IR version.
        model.ir_version = onnx.IR_VERSION
    model = onnx.shape_inference.infer_shapes(model)
    for out in model.graph.output:
        if not out.type.HasField("tensor_type"):
            # Inference does not see through some function ops; theirs keep the input's type.
            out.type.CopyFrom(graph_inputs[0].type)
    onnx.checker.check_model(model, full_check=True)
    return model, [feeds[i.name] for i in graph_inputs]


def write_case(root, case):
    model, inputs = build(case)
    if case.reference == "onnx":
        names = [i.name for i in model.graph.input]
        outputs = ReferenceEvaluator(model).run(None, dict(zip(names, inputs)))
    else:
        sess = session(model)
        feeds = {i.name: v for i, v in zip(sess.get_inputs(), inputs)}
        outputs = sess.run(None, feeds)
    out = root / case.name
    out.mkdir(parents=True)
    onnx.save(model, out / "model.onnx")
    for k, v in enumerate(inputs):
        np.save(out / f"input_{k}.npy", v)
    for k, v in enumerate(outputs):
        np.save(out / f"output_{k}.npy", v)


def shape_arithmetic(root):
    """A multi-node case: the target shape of a Reshape computed from the input's shape."""
    x = rn(2, 3, 4)
    inits = [numpy_helper.from_array(v, n) for n, v in
             [("zero", np.array(0, np.int64)), ("axes", ints(0)), ("lo", ints(1)),
              ("hi", ints(3)), ("scale", np.array(0.5, F32))]]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        helper.make_node("Slice", ["s", "lo", "hi"], ["rest"]),
        helper.make_node("ReduceProd", ["rest"], ["inner"], keepdims=1),
        helper.make_node("Concat", ["batch1", "inner"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["flat"]),
        helper.make_node("Cast", ["inner"], ["inner_f"], to=TensorProto.FLOAT),
        helper.make_node("Mul", ["inner_f", "scale"], ["gain"]),
        helper.make_node("Mul", ["flat", "gain"], ["y"]),
    ]
    xi = helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)
    graph = helper.make_graph(nodes, "shape_arithmetic", [xi], [onnx.ValueInfoProto(name="y")],
                              inits)
    model = helper.make_model(graph, producer_name="kiln-op-models",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    onnx.checker.check_model(model, full_check=True)
    out = root / "shape_arithmetic"
    out.mkdir(parents=True)
    onnx.save(model, out / "model.onnx")
    np.save(out / "input_0.npy", x)
    np.save(out / "output_0.npy", session(model).run(None, {"x": x})[0])


# The int8 QDQ MLPerf Tiny models and the TFLite vectors whose first input they run on.
INT8_MODELS = {
    "ad_int8_qdq": "ad01_int8",
    "ic_int8_qdq": "pretrainedResnet_quant",
    "kws_int8_qdq": "kws_ref_model",
    "str_ww_int8_qdq": "str_ww_ref_model",
    "vww_int8_qdq": "vww_96_int8",
}


def control_flow(root):
    """If, Loop and Scan: multi-node models with subgraphs, each with onnxruntime's outputs."""
    rng = np.random.default_rng(20261203)
    f32 = onnx.TensorProto.FLOAT

    def value(name, elem=f32, shape=None):
        return helper.make_tensor_value_info(name, elem, shape)

    def save(name, graph, opset, feeds):
        opsets = [helper.make_opsetid("", opset)]
        model = helper.make_model(graph, producer_name="kiln-op-models", opset_imports=opsets)
        model.ir_version = helper.find_min_ir_version_for(opsets)
        onnx.checker.check_model(model, full_check=True)
        outputs = session(model).run(None, feeds)
        out = root / name
        if out.exists():
            shutil.rmtree(out)
        out.mkdir(parents=True)
        onnx.save(model, out / "model.onnx")
        for k, v in enumerate(feeds.values()):
            np.save(out / f"input_{k}.npy", v)
        for k, v in enumerate(outputs):
            np.save(out / f"output_{k}.npy", v)

    # Scan: a running sum over the rows of x, read from the last row, with the sums stacked
    # along axis 1.
    body = helper.make_graph(
        [helper.make_node("Add", ["s_in", "row"], ["s_out"]),
         helper.make_node("Mul", ["s_out", "row"], ["y"])],
        "scan_body", [value("s_in", shape=[3]), value("row", shape=[3])],
        [value("s_out", shape=[3]), value("y", shape=[3])])
    scan = helper.make_node("Scan", ["s0", "x"], ["s", "ys"], num_scan_inputs=1, body=body,
                            scan_input_directions=[1], scan_output_axes=[1])
    graph = helper.make_graph([scan], "control_scan", [value("s0", shape=[3]),
                              value("x", shape=[6, 3])],
                              [value("s", shape=[3]), value("ys", shape=[3, 6])])
    save("control_scan", graph, 16, {"s0": rng.standard_normal(3).astype(F32),
                                     "x": rng.standard_normal((6, 3)).astype(F32)})

    # Loop: four iterations of s = s * w + i, w read from the outer graph, s stacked.
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Cast", ["i"], ["fi"], to=f32),
         helper.make_node("Mul", ["s_in", "w"], ["sw"]),
         helper.make_node("Add", ["sw", "fi"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["scan"])],
        "loop_body", [value("i", onnx.TensorProto.INT64, []),
                      value("c_in", onnx.TensorProto.BOOL, []), value("s_in", shape=[2])],
        [value("c_out", onnx.TensorProto.BOOL, []), value("s_out", shape=[2]),
         value("scan", shape=[2])])
    loop = helper.make_node("Loop", ["m", "", "s0"], ["s", "scans"], body=body)
    graph = helper.make_graph(
        [loop], "control_loop", [value("s0", shape=[2]), value("w", shape=[2])],
        [value("s", shape=[2]), value("scans", shape=[4, 2])],
        [numpy_helper.from_array(np.array(4, np.int64), "m")])
    save("control_loop", graph, 16, {"s0": rng.standard_normal(2).astype(F32),
                                     "w": rng.standard_normal(2).astype(F32)})

    # If on a condition computed at run time, both branches of one shape.
    then_branch = helper.make_graph([helper.make_node("Neg", ["x"], ["a"])], "then", [],
                                    [value("a", shape=[2, 3])])
    else_branch = helper.make_graph([helper.make_node("Mul", ["x", "x"], ["b"])], "else", [],
                                    [value("b", shape=[2, 3])])
    nodes = [helper.make_node("ReduceSum", ["x"], ["total"], keepdims=0),
             helper.make_node("Greater", ["total", "zero"], ["c"]),
             helper.make_node("If", ["c"], ["y"], then_branch=then_branch,
                              else_branch=else_branch)]
    graph = helper.make_graph(nodes, "control_if", [value("x", shape=[2, 3])],
                              [value("y", shape=[2, 3])],
                              [numpy_helper.from_array(np.array(0, F32), "zero")])
    save("control_if", graph, 16, {"x": rng.standard_normal((2, 3)).astype(F32)})


def optionals(root):
    """An optional made of a tensor, asked whether it has one, and read: each with onnxruntime's
    outputs."""
    rng = np.random.default_rng(20261204)
    f32 = onnx.TensorProto.FLOAT
    x = helper.make_tensor_value_info("x", f32, [2, 3])
    nodes = [helper.make_node("Optional", ["x"], ["o"]),
             helper.make_node("OptionalHasElement", ["o"], ["has"]),
             helper.make_node("OptionalGetElement", ["o"], ["got"])]
    graph = helper.make_graph(nodes, "optional_tensor", [x],
                              [helper.make_tensor_value_info("has", onnx.TensorProto.BOOL, []),
                               helper.make_tensor_value_info("got", f32, [2, 3])])
    opsets = [helper.make_opsetid("", 18)]
    model = helper.make_model(graph, producer_name="kiln-op-models", opset_imports=opsets)
    model.ir_version = helper.find_min_ir_version_for(opsets)
    onnx.checker.check_model(model, full_check=True)
    feeds = {"x": rng.standard_normal((2, 3)).astype(F32)}
    outputs = session(model).run(None, feeds)
    out = root / "optional_tensor"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    onnx.save(model, out / "model.onnx")
    np.save(out / "input_0.npy", feeds["x"])
    for k, v in enumerate(outputs):
        np.save(out / f"output_{k}.npy", v)


def int8_references(root, mlperf):
    """onnxruntime's outputs of the int8 QDQ models on the first TFLite test vector."""
    for name, vectors in INT8_MODELS.items():
        model = onnx.load(mlperf / "onnx" / f"{name}.onnx")
        x = np.load(mlperf / "vectors" / f"{vectors}.tflm.npz")["x"][0]
        out = root / name
        out.mkdir(parents=True)
        np.save(out / "input_0.npy", x)
        feed = {model.graph.input[0].name: x}
        np.save(out / "output_0.npy", session(model).run(None, feed)[0])


def flatten_reshape(axis):
    """Flatten (with `axis`, which must be an int) then a Reshape that cannot fit."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Flatten", ["x"], ["f"], name="flat", axis=axis),
        helper.make_node("Reshape", ["f", "shape"], ["y"], name="bad_reshape"),
    ]
    shape = numpy_helper.from_array(ints(5, -1), "shape")
    graph = helper.make_graph(nodes, "bad_nodes", [x], [y], [shape])
    model = helper.make_model(graph, producer_name="kiln-op-models",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def str_ww_reference(root, mlperf):
    """str_ww_float on the first TFLite test vector, dequantized as the int8 QDQ model's input
    is: a less saturated output than a random input gives."""
    qdq = onnx.load(mlperf / "onnx/str_ww_int8_qdq.onnx")
    inits = {t.name: numpy_helper.to_array(t) for t in qdq.graph.initializer}
    first = next(n for n in qdq.graph.node if qdq.graph.input[0].name in n.input)
    dq = next(n for n in qdq.graph.node if n.op_type == "DequantizeLinear"
              and n.input[0] in first.output)
    scale, zero = inits[dq.input[1]], inits[dq.input[2]]
    x = np.load(mlperf / "vectors/str_ww_ref_model.tflm.npz")["x"][0]
    x = ((x.astype(F32) - zero) * scale).astype(F32)
    model = onnx.load(mlperf / "onnx/str_ww_float.onnx")
    out = root / "str_ww_float"
    out.mkdir(parents=True)
    np.save(out / "input_0.npy", x)
    np.save(out / "output_0.npy", session(model).run(None, {model.graph.input[0].name: x})[0])


def invalid_models(root):
    """Models the importer must reject, each for one reason."""
    root.mkdir(parents=True)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    nodes = [
        helper.make_node("Frobnicate", ["x"], ["a"], name="frob_a", domain="kiln.test"),
        helper.make_node("Relu", ["a"], ["b"], name="relu"),
        helper.make_node("Twiddle", ["b"], ["c"], name="twiddle", domain="kiln.test"),
        helper.make_node("Frobnicate", ["c"], ["y"], name="frob_b", domain="kiln.test"),
    ]
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("kiln.test", 1)]
    graph = helper.make_graph(nodes, "unknown_ops", [x], [y])
    model = helper.make_model(graph, producer_name="kiln-op-models", opset_imports=opsets)
    model.ir_version = 8
    onnx.save(model, root / "unknown_ops.onnx")

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "features"])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "features"])
    graph = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "free_dim", [x], [y])
    model = helper.make_model(graph, producer_name="kiln-op-models",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, root / "free_dim.onnx")

    for name, axis in [("bad_attribute", 1.5), ("bad_reshape", 1)]:
        onnx.save(flatten_reshape(axis), root / f"{name}.onnx")

    x = helper.make_tensor_value_info("x", TensorProto.STRING, [2])
    y = helper.make_tensor_value_info("y", TensorProto.STRING, [2])
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "text", [x], [y])
    model = helper.make_model(graph, producer_name="kiln-op-models",
                              opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    onnx.save(model, root / "string_input.onnx")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="tests/ops", type=pathlib.Path)
    parser.add_argument("--only", help="build only cases whose name contains this")
    parser.add_argument("--mlperf-models", default="tests/models/mlperf-tiny", type=pathlib.Path,
                        help="the MLPerf Tiny models, for the int8 references")
    args = parser.parse_args()
    if args.out.exists() and not args.only:
        shutil.rmtree(args.out)
    names = [c.name for c in CASES]
    dupes = {n for n in names if names.count(n) > 1}
    if dupes:
        raise SystemExit(f"duplicate case names: {sorted(dupes)}")
    for case in CASES:
        if args.only and args.only not in case.name:
            continue
        if args.only and (args.out / case.name).exists():
            shutil.rmtree(args.out / case.name)
        write_case(args.out, case)
    if not args.only or "control" in args.only:
        control_flow(args.out)
    if not args.only or "optional" in args.only:
        optionals(args.out)
    if not args.only:
        shape_arithmetic(args.out)
        invalid_models(args.out / "invalid")
        int8_references(args.out / "mlperf_int8", args.mlperf_models)
        str_ww_reference(args.out / "mlperf_float", args.mlperf_models)
    total = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"{len(CASES)} cases in {args.out}, {total / 1024:.0f} KiB")


if __name__ == "__main__":
    main()
