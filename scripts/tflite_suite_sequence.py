"""Sequence ops of the TFLite conformance suite: SVDF and UNIDIRECTIONAL_SEQUENCE_LSTM.

Imported by scripts/make_tflite_suite.py after tflite_suite_cases, whose `add` registers these
cases. SVDF models are built from the schema like the other cases; their activation state is a
variable tensor, which TFLM resets to zeros (the zero point for int8) before the invocation.
Two SVDF ops sharing one state check the shift of the memory within one invocation.
"""

import numpy as np

import tflite_suite_cases as sc
from tflite_suite_cases import Q, add, options, uniform

S = sc.S


def svdf_model(g, *, batch_, n_in, filters, rank, memory, bias=True, act="NONE",
               quant=None, twice=False, zp_state=0):
    """An SVDF (or two sharing one state) on a `[batch_, n_in]` input.

    `quant`: None for float32; else `(state type, input Q, output Q)` for TFLM's integer
    kernel, the weight scales chosen here."""
    units = filters // rank
    opts = options("SVDF", rank=rank, fusedActivationFunction=sc.ACT[act])
    wf = uniform(g.rng, (filters, n_in))
    wt = uniform(g.rng, (filters, memory))
    b = uniform(g.rng, (units,), -0.5, 0.5)
    x = uniform(g.rng, (batch_, n_in), -2, 2)
    if quant is None:
        xin = g.input("x", "float32", x)
        ins = [xin, g.const("weights_feature", "float32", wf),
               g.const("weights_time", "float32", wt),
               g.const("bias", "float32", b) if bias else -1]
        state = g.main.tensor("state", "float32", (batch_, filters * memory), variable=True)
        outs = [g.output(f"y{k}", "float32", (batch_, units)) for k in range(1 + twice)]
    else:
        st, qin, qout = quant
        s_wf, s_wt = np.float32(1 / 127), np.float32(1 / (127 if st == "int8" else 32767))
        s_state = np.float32(qin.scale * s_wf * n_in / 4)
        xq = np.clip(np.round(x / qin.scale) + qin.zero_point, -128, 127)
        xin = g.input("x", "int8", xq, qin)
        s_b = np.float32(s_state * s_wt)
        ins = [xin,
               g.const("weights_feature", "int8", np.round(wf / s_wf), Q(s_wf)),
               g.const("weights_time", st, np.round(wt / s_wt), Q(s_wt)),
               g.const("bias", "int32", np.round(b / s_b), Q(s_b)) if bias else -1]
        state = g.main.tensor("state", st, (batch_, filters * memory), Q(s_state, zp_state),
                              variable=True)
        outs = [g.output(f"y{k}", "int8", (batch_, units), qout) for k in range(1 + twice)]
    for y in outs:
        g.op("SVDF", ins + [state], [y], opts)


add("svdf_float32", "SVDF", "float32", "rank 2, 4 units, memory 5, batch 2, bias",
    lambda g: svdf_model(g, batch_=2, n_in=6, filters=8, rank=2, memory=5))
add("svdf_float32_relu", "SVDF", "float32", "rank 1, RELU",
    lambda g: svdf_model(g, batch_=1, n_in=10, filters=4, rank=1, memory=3, act="RELU"))
add("svdf_float32_twice", "SVDF", "float32",
    "two SVDFs sharing one state: the second sees the first's shifted memory",
    lambda g: svdf_model(g, batch_=2, n_in=5, filters=6, rank=3, memory=4, twice=True))
add("svdf_int8", "SVDF", "int8", "int16 state and time weights, rank 2, batch 2",
    lambda g: svdf_model(g, batch_=2, n_in=6, filters=8, rank=2, memory=5,
                         quant=("int16", Q(2 / 127, 3), Q(1 / 32, -5))))
add("svdf_int8_twice", "SVDF", "int8",
    "two SVDFs sharing one int16 state, rank 1",
    lambda g: svdf_model(g, batch_=1, n_in=12, filters=4, rank=1, memory=6,
                         quant=("int16", Q(1 / 64, -10), Q(1 / 16, 7)), twice=True))
add("svdf_int8_state_int8_zero_point", "SVDF", "int8",
    "int8 state of zero point 4 (reset to it), two SVDFs sharing it",
    lambda g: svdf_model(g, batch_=1, n_in=8, filters=6, rank=2, memory=3, twice=True,
                         quant=("int8", Q(1 / 64, 2), Q(1 / 32, -1)), zp_state=4))
add("svdf_int8_state_int8", "SVDF", "int8", "int8 state and time weights, RELU (not applied)",
    lambda g: svdf_model(g, batch_=2, n_in=8, filters=6, rank=3, memory=4, act="RELU",
                         quant=("int8", Q(1 / 64, 0), Q(1 / 32, 0))))


GATE_NAMES = ("input", "forget", "cell", "output")


def symmetric(w):
    """`w` as int8 with a symmetric per-tensor scale, as the converter quantizes LSTM weights."""
    s = np.float32(np.abs(w).max() / 127)
    return np.clip(np.round(w / s), -127, 127), Q(s)


def lstm_model(g, *, time, batch_, n_in, hidden, time_major=False, cell_clip=0.0, w_scale=0.6,
               quant=None):
    """A UNIDIRECTIONAL_SEQUENCE_LSTM in the form the TF converter emits for a Keras LSTM:
    four gates, tanh, no peephole, projection or layer norm; the states variable tensors.

    `quant`: None for float32; else `(input Q, hidden/output Q, cell scale)` for TFLM's int8
    kernel (int8 weights, int32 biases, int16 cell state)."""
    shape = (time, batch_, n_in) if time_major else (batch_, time, n_in)
    xf = uniform(g.rng, shape, -2, 2)
    wx = [uniform(g.rng, (hidden, n_in), -w_scale, w_scale) for _ in GATE_NAMES]
    wh = [uniform(g.rng, (hidden, hidden), -w_scale, w_scale) for _ in GATE_NAMES]
    bs = [uniform(g.rng, (hidden,), -0.5, 0.5) for _ in GATE_NAMES]
    out_shape = (time, batch_, hidden) if time_major else (batch_, time, hidden)
    if quant is None:
        ins = [g.input("x", "float32", xf)]
        ins += [g.const(f"input_to_{n}", "float32", w) for n, w in zip(GATE_NAMES, wx)]
        ins += [g.const(f"recurrent_to_{n}", "float32", w) for n, w in zip(GATE_NAMES, wh)]
        ins += [-1, -1, -1]
        ins += [g.const(f"{n}_bias", "float32", b) for n, b in zip(GATE_NAMES, bs)]
        ins += [-1, -1]
        ins.append(g.main.tensor("output_state", "float32", (batch_, hidden), variable=True))
        ins.append(g.main.tensor("cell_state", "float32", (batch_, hidden), variable=True))
        y = g.output("y", "float32", out_shape)
    else:
        qin, qh, s_c = quant
        xq = np.clip(np.round(xf / qin.scale) + qin.zero_point, -128, 127)
        ins = [g.input("x", "int8", xq, qin)]
        scales = []
        for n, w in zip(GATE_NAMES, wx):
            wq, q = symmetric(w)
            scales.append(q.scale)
            ins.append(g.const(f"input_to_{n}", "int8", wq, q))
        for n, w in zip(GATE_NAMES, wh):
            ins.append(g.const(f"recurrent_to_{n}", "int8", *symmetric(w)))
        ins += [-1, -1, -1]
        for n, b, s_w in zip(GATE_NAMES, bs, scales):
            s_b = np.float32(np.float32(qin.scale) * s_w)
            ins.append(g.const(f"{n}_bias", "int32", np.round(b / s_b), Q(s_b)))
        ins += [-1, -1]
        ins.append(g.main.tensor("output_state", "int8", (batch_, hidden), qh, variable=True))
        ins.append(g.main.tensor("cell_state", "int16", (batch_, hidden), Q(s_c),
                                 variable=True))
        y = g.output("y", "int8", out_shape, qh)
    ins += [-1] * 4
    opts = options("UnidirectionalSequenceLSTM", fusedActivationFunction=S.ActivationFunctionType.TANH,
                   cellClip=cell_clip, timeMajor=time_major)
    g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y], opts)


add("unidirectional_sequence_lstm_float32", "UNIDIRECTIONAL_SEQUENCE_LSTM", "float32",
    "batch-major, 5 steps, batch 2, 3 inputs, 4 units",
    lambda g: lstm_model(g, time=5, batch_=2, n_in=3, hidden=4))
add("unidirectional_sequence_lstm_float32_time_major", "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "float32", "time-major, 6 steps, batch 3",
    lambda g: lstm_model(g, time=6, batch_=3, n_in=5, hidden=3, time_major=True))
add("unidirectional_sequence_lstm_float32_cell_clip", "UNIDIRECTIONAL_SEQUENCE_LSTM",
    "float32", "cell_clip 0.3, strong weights",
    lambda g: lstm_model(g, time=8, batch_=1, n_in=4, hidden=5, cell_clip=0.3, w_scale=1.5))
add("unidirectional_sequence_lstm_float32_long", "UNIDIRECTIONAL_SEQUENCE_LSTM", "float32",
    "1000 steps: one loop, not 1000 copies",
    lambda g: lstm_model(g, time=1000, batch_=1, n_in=4, hidden=8))
add("unidirectional_sequence_lstm_int8", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "batch-major, 6 steps, batch 2, int16 cell state of scale 2^-11",
    lambda g: lstm_model(g, time=6, batch_=2, n_in=3, hidden=4,
                         quant=(Q(4 / 255, 1), Q(2 / 255, -3), 2.0 ** -11)))
add("unidirectional_sequence_lstm_int8_time_major", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "time-major, 7 steps, batch 3, cell scale 2^-14",
    lambda g: lstm_model(g, time=7, batch_=3, n_in=5, hidden=3, time_major=True,
                         quant=(Q(4 / 255, -2), Q(1 / 128, 0), 2.0 ** -14)))
add("unidirectional_sequence_lstm_int8_cell_clip", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "cell_clip 0.4, strong weights",
    lambda g: lstm_model(g, time=8, batch_=1, n_in=4, hidden=5, cell_clip=0.4, w_scale=1.5,
                         quant=(Q(4 / 255, 0), Q(2 / 255, 5), 2.0 ** -12)))
add("unidirectional_sequence_lstm_int8_long", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "300 steps: one loop, not 300 copies",
    lambda g: lstm_model(g, time=300, batch_=1, n_in=4, hidden=6,
                         quant=(Q(4 / 255, 1), Q(2 / 255, 0), 2.0 ** -11)))
