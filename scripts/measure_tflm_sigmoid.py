#!/usr/bin/env python3
"""Measures the sigmoid table behind TensorFlow Lite Micro's int16 LOGISTIC and TANH and writes
it as codegen/src/tflite/ops/sigmoid_table.rs.

TFLM interpolates linearly between 256 entries of sigmoid(i / 24) in 0.16 fixed point, and the
entries are not a plain rounding of that function, so bit-exactness needs TFLM's own values.
They are read off its int16 TANH, run by TFLM's Python interpreter (the `tflite-micro` wheel,
Apache-2.0) on a one-op model: with an input scale of 1/48 TFLM scales an input x to 256·x,
which lands exactly on entry |x| (no fraction), where the output is entry − 32768. The last
entry is read from the slope into it: with an input scale of 1/6144 TFLM scales x to 2·x, and
x = 32639 lands on entry 254 with the fraction 254/256, where the output is
entry(254) − 32768 + floor((254·step + 128) / 256), which equals the step while it is at most 64.

Run in the suite generator's environment (see scripts/make_tflite_suite.py):
    /tmp/tfgen/bin/python scripts/measure_tflm_sigmoid.py
"""

import pathlib
import sys

import flatbuffers
import numpy as np
from tflite_micro.python.tflite_micro import runtime as tflm

S = tflm.schema_fb
OUT = pathlib.Path(__file__).resolve().parent.parent / "codegen/src/tflite/ops/sigmoid_table.rs"


def tanh_model(in_scale, n):
    def tensor(name, scale, buffer):
        t = S.TensorT()
        t.name, t.type, t.shape, t.buffer = name, S.TensorType.INT16, [n], buffer
        q = S.QuantizationParametersT()
        q.scale, q.zeroPoint = [scale], [0]
        t.quantization = q
        return t

    sg = S.SubGraphT()
    sg.tensors = [tensor("x", in_scale, 1), tensor("y", 2.0 ** -15, 2)]
    sg.inputs, sg.outputs = [0], [1]
    op = S.OperatorT()
    op.opcodeIndex, op.inputs, op.outputs = 0, [0], [1]
    sg.operators = [op]
    code = S.OperatorCodeT()
    code.builtinCode = S.BuiltinOperator.TANH
    code.deprecatedBuiltinCode = S.BuiltinOperator.TANH
    code.version = 1
    m = S.ModelT()
    m.version, m.operatorCodes, m.subgraphs = 3, [code], [sg]
    m.buffers = [S.BufferT() for _ in range(3)]
    b = flatbuffers.Builder(1024)
    b.Finish(m.Pack(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def run(data, x):
    interp = tflm.Interpreter.from_bytes(data, arena_size=1 << 16)
    interp.set_input(x, 0)
    interp.invoke()
    return np.array(interp.get_output(0), copy=True).astype(np.int64)


def main():
    # Entries 0..254: x = i lands on entry i exactly (scale 1/48: multiplier 16384, shift 6).
    x = np.arange(255, dtype=np.int16)
    entries = list(run(tanh_model(1.0 / 48.0, 255), x) + 32768)
    # Entry 255: the step from entry 254, read at fraction 254 (scale 1/6144: 2·x).
    y = run(tanh_model(1.0 / 6144.0, 1), np.array([32639], dtype=np.int16))
    step = int(y[0]) + 32768 - entries[254]
    if not 0 <= step <= 64:
        sys.exit(f"the last step {step} is out of the range this measurement reads")
    entries.append(entries[254] + step)
    if entries[0] != 32768 or any(b < a for a, b in zip(entries, entries[1:])):
        sys.exit(f"not a sigmoid table: {entries}")
    rows = ",\n".join(
        "    " + ", ".join(str(v) for v in entries[i:i + 12]) for i in range(0, 256, 12))
    OUT.write_text(f"""\
//! The sigmoid table of TensorFlow Lite Micro's int16 `LOGISTIC` and `TANH`: sigmoid(i / 24)
//! in 0.16 fixed point for i in 0‥255, with TFLM's own entries (they are tuned for linear
//! interpolation, not a plain rounding). Measured from TFLM's int16 TANH (the `tflite-micro`
//! wheel, Apache-2.0) by `scripts/measure_tflm_sigmoid.py`, which writes this file.

/// `sigmoid(i / 24)` · 65536, as TFLM tabulates it.
pub(super) const SIGMOID_Q16: [u16; 256] = [
{rows},
];
""")
    print(f"wrote {OUT}")


if __name__ == "__main__":
    main()
