#!/usr/bin/env python3
"""Writes multi-step reference vectors for streaming TFLite models: models whose state lives
between invocations in resource variables (VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE, and
CALL_ONCE running an init subgraph that assigns the initial values).

It writes, with STEPS = 24 steps per model, NN = 00..23:

    tests/models/tflite-real/hey_jarvis/steps/NN/inputs/input_0.npy     (int8 [1, 3, 40])
    tests/models/tflite-real/hey_jarvis/steps/NN/expected/output_0.npy  (uint8 [1, 1])
        for the microWakeWord model already there (the model and the other files of that
        folder are left alone; note that scripts/make_real_tflite.py rebuilds
        tests/models/tflite-real/ from scratch, so rerun this script after it);

    tests/models/tflite-real/audio_preprocessor_int8/steps/NN/inputs/input_0.npy (int16
        [1, 480]) and .../expected/output_0.npy (int8 [40]), the same way, for TFLM's
        micro_speech audio front end, whose spectral subtraction keeps a noise estimate
        between invocations (inputs: see audio_frames);

    tests/models/tflite-streaming/<name>.tflite
    tests/models/tflite-streaming/<name>/steps/NN/inputs/input_0.npy
    tests/models/tflite-streaming/<name>/steps/NN/expected/output_0.npy
    tests/models/tflite-streaming/README.md, SHA256SUMS
        for three small models built here with TensorFlow the way microWakeWord builds its
        streaming layers (a ring buffer of past frames in a tf.Variable: read it, concatenate
        the new frame, assign the shifted buffer back, compute on the window), converted from a
        SavedModel with `experimental_enable_resource_variables = True`:
        stream_conv_float (float32), stream_conv_int8 (the same network, full int8 post-training
        quantization, int8 variables) and stream_accumulate_float (one variable with a non-zero
        initial value, read, updated, assigned, then read again in the same invocation).

Step NN's expected output is the output of invocation NN of ONE TensorFlow Lite Micro
interpreter (the `tflite-micro` wheel's Python interpreter, its reference kernels) that was
fed steps 00..NN in order, without reset: step NN depends on all the steps before it.

Inputs: floats uniform in [-1, 1]; int8 uniform over the full range [-128, 127]; each model's
generator is seeded from its name. For hey_jarvis, such noise (and the other simple
distributions tried: narrower uniform ranges, constant frames, per-feature profiles, frames held
for several steps) leaves the output at 0 for all 24 steps: the detector's logit stays far below
the sigmoid's first step of 1/256, and it needs ~20 steps to fill its receptive field. So its
inputs come from a seeded random search: start from full-range uniform int8 noise (seed from
the name), then SEARCH_ITERS times replace one random 40-feature frame, or one feature over the
3 frames of one step, with fresh full-range uniform int8 values, keeping the change when it does
not lower (number of distinct outputs over the 24 steps, sum of the pre-sigmoid logit over steps
08..23), both read from TFLM (logit through kPreserveAllTensors). The script checks that every
model's 24 outputs are not all equal and fails otherwise.

Checks (the script fails if one fails): every model's op list holds VAR_HANDLE, READ_VARIABLE,
ASSIGN_VARIABLE and CALL_ONCE; generated models are under 20 KB; a fresh TFLM interpreter fed
step 00 again gives step 00's output; the float models agree with TensorFlow's own
tf.lite.Interpreter (LiteRT) within 1e-5 on every step (for the int8 models LiteRT's distance
is printed, for information). TFLM's reset() is also tried and its step-00 output printed:
reset() refills each variable with its zero point (0 for float) and does not rerun CALL_ONCE,
so it does not restore a non-zero initial value (stream_accumulate_float shows it).

Pinned versions (Python 3.11, x86_64 Linux), in a scratch environment outside the repository:
    python3 -m venv /tmp/tfgen
    /tmp/tfgen/bin/pip install tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 \\
        numpy==2.4.6
Then, from the repository root:
    TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfgen/bin/python scripts/make_streaming_tflite.py
Everything is seeded; a rerun with the pinned versions reproduces the same bytes.
"""

import hashlib
import os
import pathlib
import shutil
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import warnings  # noqa: E402

warnings.filterwarnings("ignore")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tflite_micro  # noqa: E402
from tflite_micro.python.tflite_micro import runtime as tflm  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/models/tflite-streaming"
REAL = ROOT / "tests/models/tflite-real"
HEY_JARVIS = "hey_jarvis"
AUDIO_PREPROCESSOR = "audio_preprocessor_int8"
SPECTRAL = "spectral_subtraction_clamped"
# TFLM's signal ops that keep samples between invocations, one op a model: (name, op, input
# type and shape, outputs (name, type, shape), options, input range).
SIGNAL_STATE = [
    ("signal_delay", "SignalDelay", ("int16", (2, 5)), [("delayed", "int16", (2, 5))],
     {"delay_length": 7}, 4000),
    ("signal_framer_prefill", "SignalFramer", ("int16", (2, 16)),
     [("frames", "int16", (2, 2, 12)), ("valid", "bool", ())],
     {"frame_size": 12, "frame_step": 8, "prefill": True}, 4000),
    ("signal_framer", "SignalFramer", ("int16", (8,)),
     [("frames", "int16", (1, 20)), ("valid", "bool", ())],
     {"frame_size": 20, "frame_step": 8, "prefill": False}, 4000),
    ("signal_stacker", "SignalStacker", ("int16", (6,)),
     [("stacked", "int16", (24,)), ("valid", "bool", ())],
     {"num_channels": 6, "stacker_left_context": 2, "stacker_right_context": 1,
      "stacker_step": 2}, 4000),
    ("signal_overlap_add_int16", "SignalOverlapAdd", ("int16", (2, 3, 10)),
     [("samples", "int16", (2, 12))], {"T": 7, "frame_step": 4}, 32767),
    ("signal_overlap_add_float", "SignalOverlapAdd", ("float32", (3, 10)),
     [("samples", "float32", (12,))], {"T": 0, "frame_step": 4}, 1),
]
STEPS = 24
SEARCH_ITERS = 3000
MAX_MODEL_BYTES = 20 * 1024
FLOAT_TOLERANCE = 1e-5
TFLM_ARENA = 1 << 20
REQUIREMENTS = "tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 numpy==2.4.6"
REQUIRED_OPS = ("VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE", "CALL_ONCE")

S = tflm.schema_fb
OP_NAMES = {v: k for k, v in vars(S.BuiltinOperator).items() if not k.startswith("_")}
TYPE_NAMES = {v: k for k, v in vars(S.TensorType).items() if not k.startswith("_")}
NP_TYPES = {"FLOAT32": np.float32, "INT8": np.int8, "UINT8": np.uint8, "INT16": np.int16,
            "INT32": np.int32, "INT64": np.int64, "BOOL": np.bool_}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def seed_of(name):
    return int(sha256(name.encode())[:8], 16)


# ---------------------------------------------------------------- the generated models


class Stream(tf.Module):
    """microWakeWord's streaming wrapper: keeps the last `frames` frames in a variable; each
    call returns the window (kept frames + the new one) and stores its last `frames` frames."""

    def __init__(self, frames, channels, name):
        super().__init__(name=name)
        with self.name_scope:
            self.states = tf.Variable(tf.zeros([1, frames, 1, channels]), trainable=False,
                                      name="states")

    def __call__(self, x):
        memory = tf.concat([self.states, x], 1)
        assign = self.states.assign(memory[:, 1:])
        with tf.control_dependencies([assign]):
            return tf.identity(memory)


class StreamConv(tf.Module):
    """frame [1, 1, 8] -> window of 3 frames -> CONV_2D 3x1, 8->6, ReLU -> window of 4 of those
    -> DEPTHWISE_CONV_2D 4x1 -> FULLY_CONNECTED 6->4."""

    def __init__(self):
        super().__init__(name="stream_conv")
        r = np.random.default_rng(seed_of("stream_conv weights"))

        def const(shape, sd):
            return tf.constant(r.normal(0, sd, shape).astype(np.float32))
        self.stream = Stream(2, 8, "stream")
        self.conv_w, self.conv_b = const((3, 1, 8, 6), 0.4), const((6,), 0.1)
        self.stream_1 = Stream(3, 6, "stream_1")
        self.dw_w, self.dw_b = const((4, 1, 6, 1), 0.5), const((6,), 0.1)
        self.fc_w, self.fc_b = const((6, 4), 0.5), const((4,), 0.1)

    @tf.function(input_signature=[tf.TensorSpec([1, 1, 8], tf.float32, name="frame")])
    def __call__(self, x):
        x = tf.reshape(x, [1, 1, 1, 8])
        window = self.stream(x)
        y = tf.nn.relu(tf.nn.conv2d(window, self.conv_w, 1, "VALID") + self.conv_b)
        window_1 = self.stream_1(y)
        z = tf.nn.depthwise_conv2d(window_1, self.dw_w, [1, 1, 1, 1], "VALID") + self.dw_b
        return tf.matmul(tf.reshape(z, [1, 6]), self.fc_w) + self.fc_b


class Accumulate(tf.Module):
    """state = 0.5 * state + x (assigned), then state read again: out = tanh(state) + 0.25 x."""

    INITIAL = np.array([[1.0, -0.5, 0.25, 2.0]], np.float32)

    def __init__(self):
        super().__init__(name="accumulate")
        with self.name_scope:
            self.state = tf.Variable(self.INITIAL, trainable=False, name="state")

    @tf.function(input_signature=[tf.TensorSpec([1, 4], tf.float32, name="x")])
    def __call__(self, x):
        old = self.state.read_value()
        self.state.assign(0.5 * old + x)
        new = self.state.read_value()
        return tf.tanh(new) + 0.25 * x


def convert(module, int8=False):
    with tempfile.TemporaryDirectory() as tmp:
        tf.saved_model.save(module, tmp, signatures=module.__call__.get_concrete_function())
        conv = tf.lite.TFLiteConverter.from_saved_model(tmp)
        conv.experimental_enable_resource_variables = True
        if int8:
            spec = module.__call__.input_signature[0]
            rng = np.random.default_rng(seed_of(f"{module.name} representative"))

            def representative():
                for _ in range(200):
                    yield [rng.uniform(-1, 1, spec.shape).astype(np.float32)]
            conv.optimizations = {tf.lite.Optimize.DEFAULT}
            conv._experimental_variable_quantization = True  # as microWakeWord does
            conv.representative_dataset = representative
            conv.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
            conv.inference_input_type = tf.int8
            conv.inference_output_type = tf.int8
        return bytes(conv.convert())


GENERATED = [
    ("stream_conv_float", StreamConv, False,
     "two streaming layers: a 3-frame window of the input (CONV_2D) and a 4-frame window of "
     "the conv's output (DEPTHWISE_CONV_2D), then FULLY_CONNECTED; float32"),
    ("stream_conv_int8", StreamConv, True,
     "the same network (same weights), full int8 post-training quantization "
     "(int8 input, output and variables)"),
    ("stream_accumulate_float", Accumulate, False,
     "one variable with a non-zero initial value: state = 0.5*state + x is assigned, then the "
     "variable is read again in the same invocation; output tanh(state) + 0.25*x; float32"),
]


# ---------------------------------------------------------------- reading the flatbuffer


def _s(b):
    return b.decode() if isinstance(b, bytes) else (b or "")


def tensor_desc(model, sg, i):
    t = sg.tensors[i]
    d = {"index": int(i), "name": _s(t.name), "type": TYPE_NAMES[t.type],
         "shape": [int(x) for x in (t.shape if t.shape is not None else [])], "quant": None}
    q = t.quantization
    if q is not None and q.scale is not None and len(q.scale):
        d["quant"] = ([float(x) for x in q.scale], [int(x) for x in q.zeroPoint])
    buf = model.buffers[t.buffer] if t.buffer else None
    if buf is not None and buf.data is not None and len(buf.data):
        d["value"] = np.frombuffer(bytes(bytearray(buf.data)),
                                   NP_TYPES[d["type"]]).reshape(d["shape"])
    return d


def fmt_tensor(d):
    q = ""
    if d["quant"]:
        s, z = d["quant"]
        q = f" scale {s[0]:.8g} zero point {z[0]}" if len(s) == 1 else f" {len(s)} scales"
    return f"{d['type']}{d['shape']}{q}"


def model_info(data):
    """Op lists per subgraph, and per variable (shared_name): its handles and the tensors
    assigned to it / read from it in each subgraph."""
    m = tflm.convert_bytearray_to_object(bytearray(data))
    subgraphs, variables = [], {}
    for si, sg in enumerate(m.subgraphs):
        ops, handles = [], {}
        for op in sg.operators:
            name = OP_NAMES[tflm.get_builtin_code_from_operator_code(
                m.operatorCodes[op.opcodeIndex])]
            ops.append(name)
            if name == "VAR_HANDLE":
                o = op.builtinOptions
                key = (_s(o.container), _s(o.sharedName))
                handles[int(op.outputs[0])] = key
                v = variables.setdefault(key, {"handles": [], "assign": [], "read": []})
                v["handles"].append((si, int(op.outputs[0])))
            elif name == "ASSIGN_VARIABLE":
                key = handles[int(op.inputs[0])]
                variables[key]["assign"].append((si, tensor_desc(m, sg, op.inputs[1])))
            elif name == "READ_VARIABLE":
                key = handles[int(op.inputs[0])]
                variables[key]["read"].append((si, tensor_desc(m, sg, op.outputs[0])))
            elif name == "CALL_ONCE":
                subgraphs_init = op.builtinOptions.initSubgraphIndex
                ops[-1] = f"CALL_ONCE(init subgraph {subgraphs_init})"
        subgraphs.append({"name": _s(sg.name), "ops": ops,
                          "inputs": [tensor_desc(m, sg, i) for i in sg.inputs],
                          "outputs": [tensor_desc(m, sg, i) for i in sg.outputs]})
    return {"subgraphs": subgraphs, "variables": variables}


def check_ops(name, info):
    ops = {o.split("(")[0] for sg in info["subgraphs"] for o in sg["ops"]}
    missing = [o for o in REQUIRED_OPS if o not in ops]
    if missing:
        sys.exit(f"{name}: the model lacks {', '.join(missing)}")


def value_text(d):
    v = d.get("value")
    if v is None:
        return "(no constant)"
    flat = v.reshape(-1)
    if np.all(flat == flat[0]):
        text = f"all {flat[0]!r}".replace("np.float32(", "").replace("np.int8(", "").rstrip(")")
    else:
        text = np.array2string(v, separator=", ").replace("\n", "")
    if d["quant"] and len(d["quant"][0]) == 1:
        s, z = d["quant"][0][0], d["quant"][1][0]
        real = (flat.astype(np.float64) - z) * s
        text += (" (real 0.0)" if np.all(real == 0) else
                 f" (real {np.array2string(real.astype(np.float32), separator=', ')})")
    return text


def print_info(name, info):
    for si, sg in enumerate(info["subgraphs"]):
        print(f"  subgraph {si} '{sg['name']}': {' '.join(sg['ops'])}")
    for (container, shared), v in info["variables"].items():
        print(f"  variable shared_name={shared!r} container={container!r} "
              f"handles (subgraph, tensor)={v['handles']}")
        for si, d in v["assign"]:
            what = "init value" if si != 0 else "main assign"
            print(f"    ASSIGN_VARIABLE in subgraph {si}: t{d['index']} {fmt_tensor(d)}"
                  + (f" {what} {value_text(d)}" if si != 0 else ""))
        for si, d in v["read"]:
            print(f"    READ_VARIABLE   in subgraph {si}: t{d['index']} {fmt_tensor(d)}")
        quants = {repr(d["quant"]) for _, d in v["assign"] + v["read"]}
        types = {(d["type"], tuple(d["shape"])) for _, d in v["assign"] + v["read"]}
        print(f"    reads and assigns agree on type/shape: {len(types) == 1}; "
              f"on quantization: {len(quants) == 1}")


# ---------------------------------------------------------------- references


def tflm_run(data, inputs, config=None, logit=None):
    """Feeds the inputs in order to one fresh TFLM interpreter; returns the outputs (and the
    logit tensor's values when asked)."""
    kw = {"intrepreter_config": config} if config is not None else {}
    it = tflm.Interpreter.from_bytes(data, arena_size=TFLM_ARENA, **kw)
    outs, logits = [], []
    for x in inputs:
        it.set_input(x, 0)
        it.invoke()
        outs.append(np.array(it.get_output(0), copy=True))
        if logit is not None:
            logits.append(int(it.GetTensor(logit, 0)["tensor_data"].reshape(-1)[0]))
    return (outs, logits) if logit is not None else (outs, it)


def litert_run(data, inputs):
    it = tf.lite.Interpreter(model_content=data)
    it.allocate_tensors()
    i, o = it.get_input_details()[0]["index"], it.get_output_details()[0]["index"]
    outs = []
    for x in inputs:
        it.set_tensor(i, x)
        it.invoke()
        outs.append(np.array(it.get_tensor(o), copy=True))
    return outs


def random_inputs(shape, dtype, rng, n=STEPS):
    if np.issubdtype(dtype, np.floating):
        return [rng.uniform(-1, 1, shape).astype(dtype) for _ in range(n)]
    info = np.iinfo(dtype)
    return [rng.integers(info.min, info.max + 1, shape).astype(dtype) for _ in range(n)]


def distinct(outs):
    return len({o.tobytes() for o in outs})


def check_restart(name, data, inputs, outs, it):
    """A fresh interpreter must reproduce step 00; reset() is tried and reported."""
    fresh, _ = tflm_run(data, inputs[:1])
    if not np.array_equal(fresh[0], outs[0]):
        sys.exit(f"{name}: a fresh interpreter gives {fresh[0]} at step 00, not {outs[0]}")
    it.reset()
    it.set_input(inputs[0], 0)
    it.invoke()
    again = np.array(it.get_output(0), copy=True)
    same = np.array_equal(again, outs[0])
    print(f"  step 00: {outs[0].reshape(-1)}; fresh interpreter: {fresh[0].reshape(-1)}; "
          f"after reset(): {again.reshape(-1)} ({'same' if same else 'DIFFERENT'})")
    return same


def hey_jarvis_inputs(data, info):
    """Plain noise first; if the outputs do not vary, the seeded search of the docstring."""
    rng = np.random.default_rng(seed_of(HEY_JARVIS))
    inputs = random_inputs((1, 3, 40), np.int8, rng)
    outs, _ = tflm_run(data, inputs)
    print(f"  uniform full-range noise: {distinct(outs)} distinct output(s) "
          f"{[int(o.reshape(-1)[0]) for o in outs]}")
    if distinct(outs) > 1:
        return inputs, "seeded int8 noise, uniform over [-128, 127]"
    main = info["subgraphs"][0]
    logit = None
    m = tflm.convert_bytearray_to_object(bytearray(data))
    for op in m.subgraphs[0].operators:
        code = tflm.get_builtin_code_from_operator_code(m.operatorCodes[op.opcodeIndex])
        if OP_NAMES[code] == "LOGISTIC":
            logit = int(op.inputs[0])
    assert logit is not None, main["ops"]
    cfg = tflm.InterpreterConfig.kPreserveAllTensors
    xs = np.stack(inputs)

    def score(x):
        o, lg = tflm_run(data, list(x), cfg, logit)
        return (distinct(o), sum(lg[8:])), o, lg
    best, outs, lg = score(xs)
    for _ in range(SEARCH_ITERS):
        ys = xs.copy()
        s = rng.integers(0, STEPS)
        if rng.random() < 0.5:
            ys[s, 0, rng.integers(0, 3)] = rng.integers(-128, 128, 40)
        else:
            ys[s, 0, :, rng.integers(0, 40)] = rng.integers(-128, 128, 3)
        sc, o, lgs = score(ys)
        if sc >= best:
            xs, best, outs, lg = ys, sc, o, lgs
    print(f"  after the search ({SEARCH_ITERS} iterations): logits {lg}")
    return list(xs), (f"seeded random search from uniform int8 noise ({SEARCH_ITERS} "
                      "iterations, see scripts/make_streaming_tflite.py)")


# ---------------------------------------------------------------- writing


def write_steps(folder, inputs, outs):
    """Step n's input, and its output (or its list of outputs)."""
    steps = folder / "steps"
    if steps.exists():
        shutil.rmtree(steps)
    for n, (x, y) in enumerate(zip(inputs, outs)):
        (steps / f"{n:02d}" / "inputs").mkdir(parents=True)
        (steps / f"{n:02d}" / "expected").mkdir(parents=True)
        np.save(steps / f"{n:02d}" / "inputs" / "input_0.npy", x)
        for k, yk in enumerate(y if isinstance(y, list) else [y]):
            np.save(steps / f"{n:02d}" / "expected" / f"output_{k}.npy", yk)


def check_written(folder, inputs, outs):
    for n in range(STEPS):
        x = np.load(folder / f"steps/{n:02d}/inputs/input_0.npy")
        assert x.dtype == inputs[n].dtype and x.shape == inputs[n].shape
        assert np.array_equal(x, inputs[n])
        for k, want in enumerate(outs[n] if isinstance(outs[n], list) else [outs[n]]):
            y = np.load(folder / f"steps/{n:02d}/expected/output_{k}.npy")
            assert y.dtype == want.dtype and y.shape == want.shape
            assert np.array_equal(y, want)


def build_generated(name, cls, int8, about):
    print(f"{name}:")
    data = convert(cls(), int8)
    info = model_info(data)
    print_info(name, info)
    check_ops(name, info)
    if len(data) > MAX_MODEL_BYTES:
        sys.exit(f"{name}: {len(data)} bytes, over {MAX_MODEL_BYTES}")
    inp = info["subgraphs"][0]["inputs"][0]
    rng = np.random.default_rng(seed_of(name))
    inputs = random_inputs(inp["shape"], NP_TYPES[inp["type"]], rng)
    outs, it = tflm_run(data, inputs)
    if distinct(outs) < 2:
        sys.exit(f"{name}: the {STEPS} outputs are all equal")
    reset_same = check_restart(name, data, inputs, outs, it)
    lit = litert_run(data, inputs)
    diff = max(float(np.max(np.abs(a.astype(np.float64) - b.astype(np.float64))))
               for a, b in zip(outs, lit))
    print(f"  LiteRT vs TFLM over {STEPS} steps: max abs difference {diff:.3g}")
    if not int8 and diff > FLOAT_TOLERANCE:
        sys.exit(f"{name}: LiteRT and TFLM differ by {diff}")
    (OUT / f"{name}.tflite").write_bytes(data)
    write_steps(OUT / name, inputs, outs)
    check_written(OUT / name, inputs, outs)
    print(f"  {len(data)} bytes, {distinct(outs)} distinct outputs in {STEPS} steps")
    return {"name": name, "about": about, "bytes": len(data), "sha": sha256(data),
            "info": info, "litert": diff, "reset_same": reset_same,
            "distinct": distinct(outs)}


def build_hey_jarvis():
    print(f"{HEY_JARVIS}:")
    data = (REAL / f"{HEY_JARVIS}.tflite").read_bytes()
    info = model_info(data)
    print_info(HEY_JARVIS, info)
    check_ops(HEY_JARVIS, info)
    inputs, how = hey_jarvis_inputs(data, info)
    outs, it = tflm_run(data, inputs)
    if distinct(outs) < 2:
        sys.exit(f"{HEY_JARVIS}: the {STEPS} outputs are all equal")
    print(f"  outputs: {[int(o.reshape(-1)[0]) for o in outs]}")
    reset_same = check_restart(HEY_JARVIS, data, inputs, outs, it)
    lit = litert_run(data, inputs)
    diff = max(int(np.max(np.abs(a.astype(np.int32) - b.astype(np.int32))))
               for a, b in zip(outs, lit))
    print(f"  LiteRT vs TFLM over {STEPS} steps: max abs difference {diff} (uint8 steps)")
    write_steps(REAL / HEY_JARVIS, inputs, outs)
    check_written(REAL / HEY_JARVIS, inputs, outs)
    return {"how": how, "outs": [int(o.reshape(-1)[0]) for o in outs],
            "reset_same": reset_same, "litert": diff, "info": info}


def audio_frames(rng):
    """24 windows of 480 int16 samples (30 ms at 16 kHz) every 320 samples (20 ms) of one
    signal: seeded Gaussian noise throughout (standard deviation 200), a 1 kHz tone with a
    300 Hz undertone under a raised-cosine envelope from 0.16 s to 0.32 s, then quieter noise."""
    rate, hop, width = 16000, 320, 480
    n = hop * (STEPS - 1) + width
    t = np.arange(n) / rate
    noise = rng.normal(0.0, 200.0, n) * np.where(t < 0.36, 1.0, 0.4)
    env = np.clip((t - 0.16) / 0.16, 0.0, 1.0)
    env = np.where((t >= 0.16) & (t <= 0.32), 0.5 - 0.5 * np.cos(2 * np.pi * env), 0.0)
    tone = env * (6000 * np.sin(2 * np.pi * 1000 * t) + 2500 * np.sin(2 * np.pi * 300 * t))
    signal = np.clip(np.round(noise + tone), -32768, 32767).astype(np.int16)
    return [signal[k * hop:k * hop + width].reshape(1, width) for k in range(STEPS)]


def build_audio_preprocessor():
    """TFLM's micro_speech audio front end: its spectral subtraction keeps a noise estimate
    between invocations, so each step's features depend on the steps before."""
    print(f"{AUDIO_PREPROCESSOR}:")
    data = (REAL / f"{AUDIO_PREPROCESSOR}.tflite").read_bytes()
    inputs = audio_frames(np.random.default_rng(seed_of(AUDIO_PREPROCESSOR)))
    outs, it = tflm_run(data, inputs)
    if distinct(outs) < 2:
        sys.exit(f"{AUDIO_PREPROCESSOR}: the {STEPS} outputs are all equal")
    fresh, _ = tflm_run(data, inputs[5:6])
    if np.array_equal(fresh[0], outs[5]):
        sys.exit(f"{AUDIO_PREPROCESSOR}: step 05 does not depend on the steps before it")
    reset_same = check_restart(AUDIO_PREPROCESSOR, data, inputs, outs, it)
    write_steps(REAL / AUDIO_PREPROCESSOR, inputs, outs)
    check_written(REAL / AUDIO_PREPROCESSOR, inputs, outs)
    return {"reset_same": reset_same, "distinct": distinct(outs)}


def spectral_subtraction_model():
    """One SignalFilterBankSpectralSubtraction op (24 channels, clamping on, different
    coefficients on odd channels), written with the TFLite suite's flatbuffer writer; its two
    outputs are the subtracted channels and the noise estimate."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import tflite_suite_cases as sc
    from flatbuffers import flexbuffers
    g = sc.Graph(np.random.default_rng(0))
    x = g.input("channels", "uint32", np.zeros(24, np.uint32))
    y = g.output("subtracted", "uint32", (24,))
    noise = g.output("noise_estimate", "uint32", (24,))
    options = {"alternate_one_minus_smoothing": 15684, "alternate_smoothing": 700,
               "clamping": True, "min_signal_remaining": 1638, "num_channels": 24,
               "one_minus_smoothing": 14884, "smoothing": 1500, "smoothing_bits": 10,
               "spectral_subtraction_bits": 14}
    code = "SignalFilterBankSpectralSubtraction"
    g.op(code, [x], [y, noise], custom=code, custom_options=bytes(flexbuffers.Dumps(options)))
    return g.serialize()


def spectral_inputs(rng):
    """Loud frames, then quiet ones (the estimate above the signal: clamping), then loud again;
    a few channels near 2^32 so that `x << smoothing_bits` wraps as TFLM's uint32 does."""
    levels = [1 << 20] * 8 + [1 << 12] * 8 + [1 << 22] * 8
    frames = []
    for level in levels:
        x = rng.integers(0, level, 24, dtype=np.uint64)
        x[rng.integers(0, 24, 2)] = rng.integers(2**31, 2**32, 2, dtype=np.uint64)
        frames.append(x.astype(np.uint32))
    return frames


def build_spectral_subtraction():
    print(f"{SPECTRAL}:")
    data = spectral_subtraction_model()
    inputs = spectral_inputs(np.random.default_rng(seed_of(SPECTRAL)))
    it = tflm.Interpreter.from_bytes(data, arena_size=TFLM_ARENA)
    outs = []
    for x in inputs:
        it.set_input(x, 0)
        it.invoke()
        outs.append([np.array(it.get_output(k), copy=True) for k in range(2)])
    if distinct([o[1] for o in outs]) < 2:
        sys.exit(f"{SPECTRAL}: the noise estimate never changes")
    (OUT / f"{SPECTRAL}.tflite").write_bytes(data)
    write_steps(OUT / SPECTRAL, inputs, outs)
    check_written(OUT / SPECTRAL, inputs, outs)
    return {"bytes": len(data), "sha": sha256(data)}


def signal_state_model(op, input_, outputs, options):
    """One signal op, written with the TFLite suite's flatbuffer writer."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import tflite_suite_cases as sc
    from flatbuffers import flexbuffers
    g = sc.Graph(np.random.default_rng(0))
    dtype, shape = input_
    x = g.input("x", dtype, np.zeros(shape, sc.DTYPES[dtype][1]))
    ys = [g.output(name, t, shp) for name, t, shp in outputs]
    g.op(op, [x], ys, custom=op, custom_options=bytes(flexbuffers.Dumps(options)))
    return g.serialize()


def build_signal_state(name, op, input_, outputs, options, scale):
    """24 steps of seeded inputs through one TFLM interpreter, every output recorded. Where a
    validity output is false TFLM leaves the frames unwritten: those steps' frames are not a
    reference (the tests compare only the validity there)."""
    print(f"{name}:")
    data = signal_state_model(op, input_, outputs, options)
    dtype, shape = input_
    rng = np.random.default_rng(seed_of(name))
    if dtype == "float32":
        inputs = [rng.uniform(-scale, scale, shape).astype(np.float32) for _ in range(STEPS)]
    else:
        inputs = [rng.integers(-scale, scale + 1, shape).astype(np.int16) for _ in range(STEPS)]
    it = tflm.Interpreter.from_bytes(data, arena_size=TFLM_ARENA)
    outs = []
    for x in inputs:
        it.set_input(x, 0)
        it.invoke()
        outs.append([np.array(it.get_output(k), copy=True) for k in range(len(outputs))])
    valid = [bool(o[1]) for o in outs] if len(outputs) > 1 else [True] * STEPS
    print(f"  valid at steps {[n for n, v in enumerate(valid) if v]}")
    if sum(valid) < 2 or distinct([o[0] for o, v in zip(outs, valid) if v]) < 2:
        sys.exit(f"{name}: fewer than two distinct valid outputs")
    (OUT / f"{name}.tflite").write_bytes(data)
    write_steps(OUT / name, inputs, outs)
    check_written(OUT / name, inputs, outs)
    return {"name": name, "op": op, "options": options, "bytes": len(data),
            "sha": sha256(data), "valid": valid}


def write_readme(rows, jarvis):
    tflm_version = tflite_micro.__version__
    lines = [
        "# Streaming TFLite models",
        "",
        "Small streaming models: their state is kept between invocations in TFLite resource "
        "variables (`VAR_HANDLE`, `READ_VARIABLE`, `ASSIGN_VARIABLE`, and `CALL_ONCE` running an "
        "init subgraph that assigns the initial values), with multi-step references from "
        f"TensorFlow Lite Micro (`tflite-micro` {tflm_version}). Generated by "
        "`scripts/make_streaming_tflite.py` with TensorFlow, the way microWakeWord builds its "
        "streaming layers (a `tf.Variable` ring buffer of past frames: read it, concatenate the "
        "new frame, assign the shifted buffer back, compute on the window), converted from a "
        "SavedModel with `converter.experimental_enable_resource_variables = True`.",
        "",
        "| model | what | bytes | SHA-256 | input | output | LiteRT vs TFLM, max abs diff |",
        "| --- | --- | ---: | --- | --- | --- | --- |",
    ]
    for r in rows:
        sg = r["info"]["subgraphs"][0]
        lines.append(f"| `{r['name']}.tflite` | {r['about']} | {r['bytes']} | "
                     f"`{r['sha'][:16]}…` | {fmt_tensor(sg['inputs'][0])} | "
                     f"{fmt_tensor(sg['outputs'][0])} | {r['litert']:.3g} |")
    lines += ["", "## Ops and variables", ""]
    for r in rows:
        lines += [f"### `{r['name']}`", ""]
        for si, sg in enumerate(r["info"]["subgraphs"]):
            lines.append(f"* subgraph {si} `{sg['name']}`: {', '.join(sg['ops'])}")
        for (container, shared), v in r["info"]["variables"].items():
            init = [d for si, d in v["assign"] if si != 0]
            main = [d for si, d in v["assign"] if si == 0]
            reads = [d for si, d in v["read"] if si == 0]
            text = (f"* variable `{shared}` (container `{container}`): "
                    f"{fmt_tensor(main[0] if main else init[0])}; initial value "
                    f"{value_text(init[0]) if init else '(none)'}; "
                    f"{len(reads)} READ_VARIABLE, {len(main)} ASSIGN_VARIABLE in subgraph 0")
            quants = {repr(d["quant"]) for d in init + main + reads}
            if any(d["quant"] for d in init + main + reads):
                text += ("; the init constant, the assigned tensor and the read tensor carry "
                         + ("the same quantization" if len(quants) == 1 else
                            "DIFFERENT quantizations"))
            lines.append(text)
        lines.append("")
    acc_reset = next(r["reset_same"] for r in rows if r["name"] == "stream_accumulate_float")
    lines += [
        "Notes:",
        "",
        "* The converter puts the initial values in subgraph 1 (`NoOp`): one VAR_HANDLE and one "
        "ASSIGN_VARIABLE of a constant per variable; subgraph 0 starts with CALL_ONCE of it and "
        "then has its own VAR_HANDLE per variable. Both handles of a variable name it by the "
        "same `shared_name` (container empty); that is how they meet.",
        "* In `stream_conv_*` each window is assigned back (STRIDED_SLICE, ASSIGN_VARIABLE) "
        "before the convolution reads the window, as in microWakeWord (a control dependency).",
        "* `stream_conv_int8`: the variables are int8 and the READ_VARIABLE output, the "
        "assigned tensor and the init constant share one scale and zero point. The initial "
        "value is real 0, i.e. the zero point, which is not int8 0 for every variable.",
        "* `stream_accumulate_float`: the converter kept the second READ_VARIABLE (after the "
        "ASSIGN_VARIABLE); the output is computed from the new value.",
        "* TFLM's `reset()` refills every variable with its zero point (0 for float) and does "
        "not rerun CALL_ONCE, so it does not restore a non-zero initial value: on "
        "`stream_accumulate_float`, step 00 after reset() "
        + ("equals" if acc_reset else "differs from") + " step 00 of a fresh interpreter. "
        "The references here never reset.",
        "",
        "## Layout",
        "",
        "For each model `<name>.tflite`, `<name>/steps/NN/inputs/input_0.npy` and "
        f"`<name>/steps/NN/expected/output_0.npy`, NN = 00..{STEPS - 1:02d}: step NN's expected "
        "output is what invocation NN of ONE TFLM interpreter returned, after steps 00..NN "
        "were fed in order without reset (so step NN depends on every step before it). Inputs "
        "are seeded: floats uniform in [-1, 1], int8 uniform over [-128, 127]. The dtypes "
        "and shapes are the model's input and output. `SHA256SUMS`: `sha256sum -c SHA256SUMS` "
        "from this folder checks every file.",
        "",
        "The same layout holds the steps of the microWakeWord model "
        "`tests/models/tflite-real/hey_jarvis.tflite` (its licence: "
        "`tests/models/tflite-real/LICENSE-pymicro-wakeword`), in "
        "`tests/models/tflite-real/hey_jarvis/steps/`: int8 [1, 3, 40] in, uint8 [1, 1] out, "
        f"outputs {jarvis['outs']}. Its inputs are a {jarvis['how']}, since plain noise keeps "
        "its output at 0 for all 24 steps. Its 6 variables are initialized to their zero point "
        "(real 0), so reset() does reproduce its step 00 "
        f"({'checked' if jarvis['reset_same'] else 'NOT, in fact'}).",
        "",
        "So does TFLM's micro_speech audio front end "
        "`tests/models/tflite-real/audio_preprocessor_int8.tflite` (its licence: "
        "`tests/models/tflite-real/LICENSE-tflite-micro`), in "
        "`tests/models/tflite-real/audio_preprocessor_int8/steps/`: int16 [1, 480] in (30 ms "
        "at 16 kHz, windows 20 ms apart of one signal: seeded noise, a tone burst from 0.16 s "
        "to 0.32 s, quieter noise after 0.36 s), int8 [40] out. Its state is not a variable "
        "but the noise estimate of its `SignalFilterBankSpectralSubtraction` custom op, zeros "
        "after loading and after reset() "
        f"({'checked' if jarvis['audio']['reset_same'] else 'NOT, in fact'}); "
        f"{jarvis['audio']['distinct']} distinct outputs in {STEPS} steps.",
        "",
        f"`{SPECTRAL}.tflite` ({jarvis['spectral']['bytes']} bytes, SHA-256 "
        f"`{jarvis['spectral']['sha'][:16]}…`) is one `SignalFilterBankSpectralSubtraction` op "
        "written with the TFLite suite's flatbuffer writer (scripts/tflite_suite_cases.py): "
        "24 uint32 channels, clamping on, other coefficients on odd channels (the micro_speech "
        "front end has clamping off). Its steps hold both outputs, the subtracted channels "
        "(`output_0`) and the noise estimate (`output_1`); the inputs are 8 loud frames, 8 "
        "quiet ones (the estimate above the signal), 8 loud ones, with two channels a frame "
        "near 2^32 (`x << smoothing_bits` wraps in uint32).",
        "",
        "TFLM's signal ops that keep samples between invocations, one op a model written the "
        "same way, seeded inputs (int16 uniform in ±4000, or over the full range for the int16 "
        "overlap-add, whose sums saturate; floats in ±1), every output recorded. Where a "
        "model's second output (`valid`) is false, TFLM leaves its frames unwritten, so those "
        "steps' frames are no reference:",
        "",
        "| model | op | options | bytes | SHA-256 | steps valid |",
        "| --- | --- | --- | ---: | --- | --- |",
    ] + [
        f"| `{r['name']}.tflite` | `{r['op']}` | `{r['options']}` | {r['bytes']} | "
        f"`{r['sha'][:16]}…` | {sum(r['valid'])} of {STEPS} |"
        for r in jarvis["signal_state"]
    ] + [
        "",
        "## Regenerating",
        "",
        "```",
        "python3 -m venv /tmp/tfgen",
        f"/tmp/tfgen/bin/pip install {REQUIREMENTS}",
        "TF_CPP_MIN_LOG_LEVEL=3 /tmp/tfgen/bin/python scripts/make_streaming_tflite.py",
        "```",
        "",
        "The script checks the op lists, the model sizes, that every model's outputs vary over "
        "the steps, that a fresh interpreter reproduces step 00, and that LiteRT "
        f"(`tf.lite.Interpreter`) agrees with TFLM within {FLOAT_TOLERANCE:g} on the float "
        "models.",
        "",
        "## Licence",
        "",
        "These models and vectors are generated by this repository's script, so they are under "
        "the repository's licence, MIT OR Apache-2.0.",
    ]
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


def main():
    print(f"tensorflow {tf.__version__}, tflite-micro {tflite_micro.__version__}, "
          f"numpy {np.__version__}")
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    jarvis = build_hey_jarvis()
    jarvis["audio"] = build_audio_preprocessor()
    jarvis["spectral"] = build_spectral_subtraction()
    jarvis["signal_state"] = [build_signal_state(*m) for m in SIGNAL_STATE]
    rows = [build_generated(*g) for g in GENERATED]
    write_readme(rows, jarvis)
    sums = [f"{sha256(p.read_bytes())}  {p.relative_to(OUT)}\n"
            for p in sorted(OUT.rglob("*")) if p.is_file() and p.name != "SHA256SUMS"]
    (OUT / "SHA256SUMS").write_text("".join(sums))
    total = sum(p.stat().st_size for p in OUT.rglob("*") if p.is_file())
    for name in (HEY_JARVIS, AUDIO_PREPROCESSOR):
        total += sum(p.stat().st_size for p in (REAL / name / "steps").rglob("*")
                     if p.is_file())
    print(f"total size of the files written: {total} bytes")


if __name__ == "__main__":
    main()
