"""The TFLite suite's fourth and fifth batches: SVDF and LSTM variants, IF and WHILE, TFLM's
custom ops and signal library, and the converter's weight forms (float16, hybrid, sparse).

Imported by scripts/make_tflite_suite.py, in batch order; see tflite_suite_cases.py.
"""

from tflite_suite_cases import *  # noqa: F401,F403

# ================================================================ batch 4
batch(4)

# ---- SVDF


def _svdf(t, act="NONE", batch_=2, inp=6, filters=4, memory=5, rank=2, bias=True):
    def build(g):
        units = filters // rank
        if t == "float32":
            xi = g.input("x", t, uniform(g.rng, (batch_, inp), -2.0, 2.0))
            wf = g.const("weights_feature", t, uniform(g.rng, (filters, inp), -0.6, 0.6))
            wt = g.const("weights_time", t, uniform(g.rng, (filters, memory), -0.6, 0.6))
            bi = g.const("bias", t, uniform(g.rng, (units,), -0.3, 0.3)) if bias else -1
            st = g.main.tensor("activation_state", t, (batch_, memory * filters),
                               variable=True)
            qo = None
        else:
            qi = qrange(-2.0, 2.0, "int8")
            xi = g.input("x", "int8", data_for(g.rng, "int8", (batch_, inp)), qi)
            wfq, wtq, sq = Q(0.6 / 127, 0), Q(0.6 / 32767, 0), Q(4.0 / 32767, 0)
            wf = g.const("weights_feature", "int8", ints(g.rng, (filters, inp), -127, 127, "int8"),
                         wfq)
            wt = g.const("weights_time", "int16",
                         ints(g.rng, (filters, memory), -32767, 32767, "int16"), wtq)
            bq = Q(sq.scale * wtq.scale, 0)
            bi = (g.const("bias", "int32", np.round(g.rng.uniform(-0.3, 0.3, units) / bq.scale),
                          bq) if bias else -1)
            st = g.main.tensor("activation_state", "int16", (batch_, memory * filters), sq,
                               variable=True)
            qo = qrange(-3.0, 3.0, "int8")
        y = g.output("y", t, (batch_, units), qo)
        g.op("SVDF", [xi, wf, wt, bi, st], [y],
             options("SVDF", rank=rank, fusedActivationFunction=ACT[act]))
    return build


# The SVDF cases are in tflite_suite_sequence.py; these are the variants it does not have.
for _t in ("float32", "int8"):
    add(f"svdf_{_t}_batch2_rank2", "SVDF", _t, "batch 2, input 6, 4 filters, memory 5, rank 2 "
        "(one step, zero state)", _svdf(_t))
    add(f"svdf_{_t}_no_bias", "SVDF", _t, "no bias (-1)", _svdf(_t, bias=False))

# ---- UNIDIRECTIONAL_SEQUENCE_LSTM


def _lstm(t, steps=4, features=3, units=5, batch_=2, time_major=False, intermediates=False):
    """The 24-input LSTM without peepholes, projection or layer norm, zero initial state."""
    def build(g):
        shape = (steps, batch_, features) if time_major else (batch_, steps, features)
        w_in = [g.rng.uniform(-0.6, 0.6, (units, features)) for _ in range(4)]
        w_rec = [g.rng.uniform(-0.6, 0.6, (units, units)) for _ in range(4)]
        bias = [g.rng.uniform(-0.3, 0.3, units) for _ in range(4)]
        gates = ("input", "forget", "cell", "output")
        oshape = (*shape[:2], units)
        if t == "float32":
            xi = g.input("x", t, uniform(g.rng, shape, -1.0, 1.0))
            wi = [g.const(f"input_to_{n}_w", t, w) for n, w in zip(gates, w_in)]
            wr = [g.const(f"recurrent_to_{n}_w", t, w) for n, w in zip(gates, w_rec)]
            bs = [g.const(f"{n}_gate_bias", t, b) for n, b in zip(gates, bias)]
            hs = g.main.tensor("output_state", t, (batch_, units), variable=True)
            cs = g.main.tensor("cell_state", t, (batch_, units), variable=True)
            y = g.output("y", t, oshape)
        else:
            qi, qo = qrange(-1.0, 1.0, "int8"), qrange(-1.0, 1.0, "int8")
            xi = g.input("x", "int8", data_for(g.rng, "int8", shape), qi)

            def w8(name, w):
                q = Q(float(np.abs(w).max() / 127), 0)
                return g.const(name, "int8", quantize(w, q, "int8"), q), q

            wi, wiq = zip(*[w8(f"input_to_{n}_w", w) for n, w in zip(gates, w_in)])
            wr, _ = zip(*[w8(f"recurrent_to_{n}_w", w) for n, w in zip(gates, w_rec)])
            bs = []
            for n, b, q in zip(gates, bias, wiq):
                bq = Q(float(qi.scale) * q.scale, 0)
                bs.append(g.const(f"{n}_gate_bias", "int32", np.round(b / bq.scale), bq))
            hs = g.main.tensor("output_state", "int8", (batch_, units), qo, variable=True)
            cs = g.main.tensor("cell_state", "int16", (batch_, units), Q(2.0 ** -11, 0),
                               variable=True)
            y = g.output("y", "int8", oshape, qo)
        ins = [xi, *wi, *wr, -1, -1, -1, *bs, -1, -1, hs, cs, -1, -1, -1, -1]
        g.op("UNIDIRECTIONAL_SEQUENCE_LSTM", ins, [y],
             options("UnidirectionalSequenceLSTM", fusedActivationFunction=ACT_TANH,
                     cellClip=0.0, projClip=0.0, timeMajor=time_major))
        if intermediates:  # gate and hidden quantization, as the converter records them
            names = ("input_gate", "forget_gate", "cell_gate", "output_gate", "hidden")
            inter = [g.main.tensor(f"intermediate_{n}", "int16" if k < 4 else "int8", (0,),
                                   Q(2.0 ** -12, 0) if k < 4 else qo)
                     for k, n in enumerate(names)]
            g.main.ops[-1].intermediates = inter
    return build


ACT_TANH = S.ActivationFunctionType.TANH
# More LSTM cases are in tflite_suite_sequence.py; these are the variants it does not have.
add("unidirectional_sequence_lstm_float32_batch2", "UNIDIRECTIONAL_SEQUENCE_LSTM", "float32",
    "batch 2, 4 steps, 3 features, 5 units, no peephole/projection, zero state", _lstm("float32"))
add("unidirectional_sequence_lstm_int8_no_intermediates", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "int8 input/output state, int16 cell state 2^-11, int8 weights, int32 biases, "
    "no intermediates", _lstm("int8"))
add("unidirectional_sequence_lstm_int8_intermediates", "UNIDIRECTIONAL_SEQUENCE_LSTM", "int8",
    "as the converter writes it: five intermediates (gates int16 2^-12, hidden int8; "
    "shape [0])", _lstm("int8", intermediates=True))


# ---- IF / WHILE (several subgraphs)


def _if(t, cond):
    def build(g):
        q = default_q(t, -3.0, 3.0)
        qo = default_q(t, -9.0, 9.0)
        c = g.input("cond", "bool", np.array([cond]))
        a = g.input("a", t, data_for(g.rng, t, (2, 3), -3.0, 3.0), q)
        b = g.input("b", t, data_for(g.rng, t, (2, 3), -3.0, 3.0), q)
        y = g.output("y", t, (2, 3), qo)
        g.op("IF", [c, a, b], [y], options("If", thenSubgraphIndex=1, elseSubgraphIndex=2))
        for name, op, kind in (("then_add", "ADD", "Add"), ("else_mul", "MUL", "Mul")):
            sg = g.subgraph(name)
            sa, sb = sg.input("a", t, (2, 3), q), sg.input("b", t, (2, 3), q)
            so = sg.output("y", t, (2, 3), qo)
            sg.op(op, [sa, sb], [so], options(kind, fusedActivationFunction=ACT["NONE"]))
    return build


for _t in ("float32", "int8"):
    add(f"if_{_t}_then", "IF", _t, "cond true: then-subgraph a+b (else a*b)", _if(_t, True))
    add(f"if_{_t}_else", "IF", _t, "cond false: else-subgraph a*b (then a+b)", _if(_t, False))


def _while(t, limit, step=None):
    """i < limit: i += 1, x += x (or x += y with `step`, y passed through unchanged). The counter
    starts as a constant, as TensorFlow's converter writes a `tf.while_loop` counted from a
    Python number."""
    def build(g):
        q = default_q(t, -3.0, 3.0)
        i0 = g.const("i", "int32", [0])
        x = uniform(g.rng, (4,), -0.18, 0.18)
        x0 = g.input("x", t, x if t == "float32" else quantize(x, q, t), q)
        i1 = g.output("i_out", "int32", (1,))
        x1 = g.output("x_out", t, (4,), q)
        ins, outs = [i0, x0], [i1, x1]
        if step is not None:
            y = uniform(g.rng, (4,), -step, step)
            ins.append(g.input("y", t, y if t == "float32" else quantize(y, q, t), q))
            outs.append(g.output("y_out", t, (4,), q))
        g.op("WHILE", ins, outs, options("While", condSubgraphIndex=1, bodySubgraphIndex=2))
        cond = g.subgraph("cond")
        ci = cond.input("i", "int32", (1,))
        for name in ("x", "y")[:len(ins) - 1]:
            cond.input(name, t, (4,), q)
        lim = cond.const("limit", "int32", [limit])
        co = cond.output("go", "bool", (1,))
        cond.op("LESS", [ci, lim], [co])
        body = g.subgraph("body")
        bi, bx = body.input("i", "int32", (1,)), body.input("x", t, (4,), q)
        one = body.const("one", "int32", [1])
        bi1 = body.output("i1", "int32", (1,))
        bx1 = body.output("x1", t, (4,), q)
        body.op("ADD", [bi, one], [bi1], options("Add", fusedActivationFunction=ACT["NONE"]))
        if step is None:
            body.op("ADD", [bx, bx], [bx1], options("Add", fusedActivationFunction=ACT["NONE"]))
        else:
            by = body.input("y", t, (4,), q)
            body.outputs.append(by)
            body.op("ADD", [bx, by], [bx1], options("Add", fusedActivationFunction=ACT["NONE"]))
    return build


for _t in ("float32", "int8"):
    add(f"while_{_t}", "WHILE", _t, "i < 4 from a constant 0: i += 1, x += x (four iterations)",
        _while(_t, 4))
    add(f"while_{_t}_pass_through", "WHILE", _t,
        "i < 3: i += 1, x += y, y an input the body passes through unchanged", _while(_t, 3, 0.5))
add("while_float32_no_iteration", "WHILE", "float32", "condition false at once (limit 0)",
    _while("float32", 0))

# ---- custom ops: CIRCULAR_BUFFER, TFLite_Detection_PostProcess


def _flex(d):
    from flatbuffers import flexbuffers
    return bytes(flexbuffers.Dumps(d))


def _circular(cycles):
    def build(g):
        q = Q(0.05, -4)
        xi = g.input("x", "int8", ints(g.rng, (1, 1, 1, 8), -128, 127, "int8"), q)
        y = g.output("y", "int8", (1, 3, 1, 8), q)
        g.op("CIRCULAR_BUFFER", [xi], [y], custom="CIRCULAR_BUFFER",
             custom_options=_flex({"cycles_max": cycles}))
        g.invocations = 3  # every slot written: the first outputs show unwritten arena bytes
    return build


add("circular_buffer_int8", "CIRCULAR_BUFFER", "int8",
    "custom op: [1,1,1,8] frame into a 3-slot [1,3,1,8] buffer, cycles_max 1; the output of "
    "the third invocation on the same frame (state kept between invocations)",
    _circular(1))


def _detection(regular, t="float32", max_det=5, n=16, classes=3, background=True, cols=4,
               score_threshold=0.1, iou=0.5):
    def build(g):
        side = int(round(n ** 0.5))
        gy, gx = np.meshgrid(np.arange(side) / side + 0.5 / side,
                             np.arange(side) / side + 0.5 / side, indexing="ij")
        anchors = np.stack([gy.ravel(), gx.ravel(), np.full(n, 0.3), np.full(n, 0.3)], -1)
        enc = g.rng.normal(0, 1.0, (1, n, cols))
        scores = g.rng.uniform(0, 1, (1, n, classes + int(background))) ** 3
        if t == "float32":
            bi = g.input("box_encodings", t, enc)
            ci = g.input("class_predictions", t, scores)
            ai = g.const("anchors", t, anchors)
        else:
            qb, qc, qa = qrange(-4.0, 4.0, t), qrange(0.0, 1.0, t), qrange(0.0, 1.0, t)
            bi = g.input("box_encodings", t, quantize(enc, qb, t), qb)
            ci = g.input("class_predictions", t, quantize(scores, qc, t), qc)
            ai = g.const("anchors", t, quantize(anchors, qa, t), qa)
        outs = [g.output("boxes", "float32", (1, max_det, 4)),
                g.output("classes", "float32", (1, max_det)),
                g.output("scores", "float32", (1, max_det)),
                g.output("num_detections", "float32", (1,))]
        opts = {"max_detections": max_det, "max_classes_per_detection": 1,
                "detections_per_class": 3, "use_regular_nms": regular,
                "nms_score_threshold": score_threshold, "nms_iou_threshold": iou,
                "num_classes": classes,
                "y_scale": 10.0, "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}
        g.op("TFLite_Detection_PostProcess", [bi, ci, ai], outs,
             custom="TFLite_Detection_PostProcess", custom_options=_flex(opts))
    return build


add("tflite_detection_postprocess_float32", "TFLite_Detection_PostProcess", "float32",
    "custom op: 16 anchors, 3 classes, fast NMS, 5 detections", _detection(False))
add("tflite_detection_postprocess_float32_regular_nms", "TFLite_Detection_PostProcess",
    "float32", "custom op: regular NMS", _detection(True))
add("tflite_detection_postprocess_float32_regular_nms_few", "TFLite_Detection_PostProcess",
    "float32", "custom op: regular NMS, score threshold 0.85 (fewer detections than slots: the "
    "rest are zeros), no background class, 6 encoding columns",
    _detection(True, background=False, cols=6, score_threshold=0.85))
add("tflite_detection_postprocess_float32_64_anchors", "TFLite_Detection_PostProcess",
    "float32", "custom op: fast NMS over 64 anchors, 5 classes, 10 detections, IoU 0.3",
    _detection(False, max_det=10, n=64, classes=5, iou=0.3))
add("tflite_detection_postprocess_int8", "TFLite_Detection_PostProcess", "int8",
    "custom op: int8 box encodings, scores and anchors", _detection(False, "int8"),
    fallback=True)
add("tflite_detection_postprocess_uint8", "TFLite_Detection_PostProcess", "uint8",
    "custom op: uint8 box encodings, scores and anchors", _detection(False, "uint8"),
    fallback=True)


# ---- TFLM signal library (custom ops; their flexbuffer options are read by position, in
# alphabetical order of the option names)


def _signal_window(g):
    x = g.input("x", "int16", sweep_int16(g.rng, (2, 32)))
    w = np.round(32767 * np.hanning(32)).astype(np.int16)
    wi = g.const("weights", "int16", w)
    y = g.output("y", "int16", (2, 32))
    g.op("SignalWindow", [x, wi], [y], custom="SignalWindow", custom_options=_flex({"shift": 15}))


def _signal_fft_auto_scale(g):
    x = g.input("x", "int16", ints(g.rng, (64,), -900, 900, "int16"))
    y = g.output("y", "int16", (64,))
    sb = g.output("scale_bits", "int32", ())
    g.op("SignalFftAutoScale", [x], [y, sb], custom="SignalFftAutoScale",
         custom_options=_flex({}))


def _signal_rfft(t, fft_length=32, frame=24):
    def build(g):
        if t == "float32":
            x = uniform(g.rng, (2, frame), -1.0, 1.0)
        elif t == "int16":
            x = ints(g.rng, (2, frame), -2000, 2000, "int16")
        else:
            x = ints(g.rng, (2, frame), -200000, 200000, "int32")
        xi = g.input("x", t, x)
        y = g.output("y", t, (2, fft_length + 2))
        g.op("SignalRfft", [xi], [y], custom="SignalRfft",
             custom_options=_flex({"T": int(DTYPES[t][0]), "fft_length": fft_length}))
    return build


def _signal_energy(g):
    x = g.input("spectrum", "int16", ints(g.rng, (2 * 17,), -3000, 3000, "int16"))
    y = g.output("energy", "uint32", (17,))
    g.op("SignalEnergy", [x], [y], custom="SignalEnergy",
         custom_options=_flex({"end_index": 17, "start_index": 0}))


add("signal_window_int16", "SignalWindow", "int16",
    "TFLM signal custom op: int16 Hann window (Q15) on two 32-sample frames, shift 15",
    _signal_window)
add("signal_fft_auto_scale_int16", "SignalFftAutoScale", "int16",
    "TFLM signal custom op: scale a small int16 frame up to full range, and the shift",
    _signal_fft_auto_scale)
for _t in ("int16", "int32", "float32"):
    add(f"signal_rfft_{_t}", "SignalRfft", _t,
        "TFLM signal custom op: real FFT of two 24-sample frames, zero-padded to 32 "
        "(interleaved complex output)", _signal_rfft(_t))
add("signal_energy_int16", "SignalEnergy", "int16",
    "TFLM signal custom op: |z|^2 of an int16 complex spectrum, all 17 bins (a narrower "
    "[start, end) range would leave output elements unwritten)", _signal_energy)


# ================================================================ converter forms
batch(5)


def _convert(g, fn, shape, float16=False):
    """A tf.function of one float32 input through the TF converter: dynamic range ("hybrid")
    quantization, or float16 weights."""
    import tensorflow as tf

    func = tf.function(fn).get_concrete_function(tf.TensorSpec(shape, tf.float32))
    conv = tf.lite.TFLiteConverter.from_concrete_functions([func])
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if float16:
        conv.target_spec.supported_types = [tf.float16]
    g.raw = conv.convert()
    g.feeds = [uniform(g.rng, shape, -2.0, 2.0)]


def _fc_conv(units, cin, float16):
    def build(g):
        import tensorflow as tf
        w = tf.constant(g.rng.normal(0, 1 / np.sqrt(cin), (cin, units)).astype(np.float32))
        b = tf.constant(g.rng.uniform(-0.3, 0.3, units).astype(np.float32))
        _convert(g, lambda x: tf.nn.relu(tf.matmul(x, w) + b), (2, cin), float16)
    return build


def _conv_conv(cin, cout, float16):
    def build(g):
        import tensorflow as tf
        w = tf.constant(g.rng.normal(0, 1 / np.sqrt(9 * cin), (3, 3, cin, cout)).astype(np.float32))
        b = tf.constant(g.rng.uniform(-0.3, 0.3, cout).astype(np.float32))
        _convert(g, lambda x: tf.nn.conv2d(x, w, 1, "SAME") + b, (1, 5, 5, cin), float16)
    return build


add("dequantize_float16_fully_connected", "DEQUANTIZE", "float32",
    "TF converter float16 quantization: FULLY_CONNECTED(RELU) whose weights and bias come from "
    "DEQUANTIZE of float16 constants", _fc_conv(24, 32, True), probe="float16 weights",
    fallback=True)
add("dequantize_float16_conv_2d", "DEQUANTIZE", "float32",
    "TF converter float16 quantization: CONV_2D 3x3 with DEQUANTIZE(float16) weights and bias",
    _conv_conv(4, 6, True), probe="float16 weights", fallback=True)
add("fully_connected_float32_hybrid", "FULLY_CONNECTED", "float32",
    "TF converter dynamic range (hybrid) quantization: float32 in/out, int8 weights [64,32]",
    _fc_conv(64, 32, False), probe="hybrid", fallback=True)
add("conv_2d_float32_hybrid", "CONV_2D", "float32",
    "TF converter dynamic range (hybrid) quantization: float32 in/out, int8 per-channel "
    "weights [16,3,3,16]", _conv_conv(16, 16, False), probe="hybrid", fallback=True)


def _sparse_fc(g):
    """DENSIFY of a CSR-sparse constant [6,8] weight feeding FULLY_CONNECTED."""
    w = g.rng.uniform(-1, 1, (6, 8)).astype(np.float32)
    w[g.rng.random((6, 8)) < 0.6] = 0.0
    rows, cols = np.nonzero(w)
    segments = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=6))])
    sp = S.SparsityParametersT()
    sp.traversalOrder = [0, 1]
    d0 = S.DimensionMetadataT()
    d0.format, d0.denseSize = S.DimensionType.DENSE, 6
    d1 = S.DimensionMetadataT()
    d1.format = S.DimensionType.SPARSE_CSR
    d1.arraySegmentsType = d1.arrayIndicesType = S.SparseIndexVector.Int32Vector
    d1.arraySegments = S.Int32VectorT()
    d1.arraySegments.values = [int(v) for v in segments]
    d1.arrayIndices = S.Int32VectorT()
    d1.arrayIndices.values = [int(v) for v in cols]
    sp.dimMetadata = [d0, d1]
    xi = g.input("x", "float32", uniform(g.rng, (2, 8), -2.0, 2.0))
    ws = g.main.tensor("weights_sparse", "float32", (6, 8), data=w[rows, cols].tobytes())
    g.main.tensors[ws].sparsity = sp
    wd = g.tensor("weights", "float32", (6, 8))
    g.op("DENSIFY", [ws], [wd])
    bi = g.const("bias", "float32", uniform(g.rng, (6,), -0.3, 0.3))
    y = g.output("y", "float32", (2, 6))
    g.op("FULLY_CONNECTED", [xi, wd, bi], [y],
         options("FullyConnected", fusedActivationFunction=ACT["NONE"]))


add("densify_float32_fully_connected", "DENSIFY", "float32",
    "sparse constant weight [6,8] (CSR: dim 0 dense, dim 1 sparse, 60% zeros) through DENSIFY "
    "into FULLY_CONNECTED", _sparse_fc, fallback=True)
