#!/usr/bin/env python3
"""Writes reference inputs and onnxruntime outputs for Kiln's tests.

For every tests/models/*.onnx and the five MLPerf Tiny float models, writes fixed-seed random
inputs (a free leading batch dim set to 1) to tests/data/<model>/input_N.npy and onnxruntime's
outputs (one thread, all graph optimizations off) to tests/data/<model>/output_N.npy, and
records the tool versions in tests/data/VERSIONS.

Run from the repository root after scripts/setup-python.sh:
    .venv/bin/python scripts/make_references.py [--mlperf-models tests/models/mlperf-tiny]
"""

import argparse
import pathlib
import platform
import zlib

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

MLPERF_TINY = ["ad_float", "ic_float", "kws_float", "str_ww_float", "vww_float"]


def input_shape(value):
    dims = []
    for axis, d in enumerate(value.type.tensor_type.shape.dim):
        if d.HasField("dim_value"):
            dims.append(d.dim_value)
        elif axis == 0:
            dims.append(1)
        else:
            raise SystemExit(f"input {value.name}: free dim at axis {axis} has no default")
    return dims


def random_input(rng, value):
    dtype = helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
    shape = input_shape(value)
    if np.issubdtype(dtype, np.floating):
        return rng.standard_normal(shape).astype(dtype)
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    info = np.iinfo(dtype)
    return rng.integers(max(info.min, -100), min(info.max, 100), shape, dtype=dtype)


def shapes(arrays):
    return ", ".join("x".join(map(str, a.shape)) for a in arrays)


def session(path):
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def make_reference(path, out_root):
    name = path.stem
    model = onnx.load(path)
    init_names = {t.name for t in model.graph.initializer}
    inputs = [v for v in model.graph.input if v.name not in init_names]
    rng = np.random.default_rng(zlib.crc32(name.encode()))
    feeds = {v.name: random_input(rng, v) for v in inputs}
    outputs = session(path).run(None, feeds)
    out = out_root / name
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*_*.npy"):
        old.unlink()
    for i, v in enumerate(inputs):
        np.save(out / f"input_{i}.npy", feeds[v.name])
    for i, y in enumerate(outputs):
        np.save(out / f"output_{i}.npy", y)
    print(f"{name}: inputs {shapes(feeds.values())} -> outputs {shapes(outputs)}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mlperf-models", default="tests/models/mlperf-tiny",
                        help="folder holding onnx/*_float.onnx")
    parser.add_argument("--models", default="tests/models", help="Kiln's own test models")
    parser.add_argument("--out", default="tests/data", help="output folder")
    args = parser.parse_args()
    paths = sorted(pathlib.Path(args.models).glob("*.onnx"))
    mlperf = pathlib.Path(args.mlperf_models) / "onnx"
    paths += [mlperf / f"{name}.onnx" for name in MLPERF_TINY]
    out = pathlib.Path(args.out)
    for path in paths:
        make_reference(path, out)
    (out / "VERSIONS").write_text(
        f"python {platform.python_version()}\n"
        f"numpy {np.__version__}\n"
        f"onnx {onnx.__version__}\n"
        f"onnxruntime {ort.__version__}\n"
    )


if __name__ == "__main__":
    main()
