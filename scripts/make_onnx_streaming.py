#!/usr/bin/env python3
"""Writes streaming ONNX models and their multi-step reference vectors: models that take their
state as inputs and return the next state as outputs, compiled by Kiln with `--state OUT=IN`
so that the state stays on the device.

It writes, with STEPS = 24 steps per model, NN = 00..23:

    tests/models/onnx-streaming/<name>.onnx
    tests/models/onnx-streaming/<name>/steps/NN/inputs/input_K.npy    (every input of the file)
    tests/models/onnx-streaming/<name>/steps/NN/expected/output_K.npy (every output of the file)
    tests/models/onnx-streaming/README.md, SHA256SUMS, LICENSE-silero-vad

for
  - silero_vad: Silero VAD v5 (`silero_vad/data/silero_vad.onnx` of the PyPI wheel
    silero-vad==6.2.3, MIT licence, copied unchanged and checked against SILERO_SHA256): 576
    samples a window at 16 kHz (the wrapper's 64 samples of context, then 512 new ones), its
    LSTM state `state` [2, 1, 128] in, `stateN` out, and the sample rate `sr` (int64 scalar) on
    which its graph branches with `If`. Compiled with `--const sr=16000 --state stateN=state`.
    Its input is a seeded synthetic signal: low noise, with bursts of a voiced-like sound (a
    120-220 Hz harmonic series under a syllable-rate envelope) from window 6 on.
  - gru_stream: one GRU step (16 features in, hidden 32, linear_before_reset=1) and a MatMul to
    4 scores; state `h` [1, 1, 32] in, `hn` out. Compiled with `--state hn=h`.
  - lstm_stream: one LSTM step (12 features in, hidden 24) with peepholes absent, and its output
    through a Tanh; states `h`, `c` [1, 1, 24] in, `hn`, `cn` out. Compiled with
    `--state hn=h --state cn=c`.
The GRU and LSTM weights and every input are seeded normal / uniform values (seed from the name).

Step NN's inputs hold the state onnxruntime returned at step NN-1 (zeros at step 00): one
onnxruntime session fed its own state back, step after step. Its expected outputs are that
session's outputs for step NN, the next state included. Kiln reads such folders without the
inputs and outputs bound at compile time.

Run with the repository's virtual environment (onnx, onnxruntime, numpy):
    .venv/bin/python scripts/make_onnx_streaming.py
It downloads the silero-vad wheel with pip into a temporary folder.
"""

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "tests" / "models" / "onnx-streaming"
STEPS = 24
SILERO_WHEEL = "silero-vad==6.2.3"
SILERO_PATH = "silero_vad/data/silero_vad.onnx"
SILERO_SHA256 = "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


def save_model(model, name):
    onnx.checker.check_model(model)
    path = OUT / f"{name}.onnx"
    onnx.save(model, path)
    return path


def gru_model(name):
    rng = rng_for(name)
    f, hid, scores = 16, 32, 4
    w = rng.normal(0, 0.3, (1, 3 * hid, f)).astype(np.float32)
    r = rng.normal(0, 0.3, (1, 3 * hid, hid)).astype(np.float32)
    b = rng.normal(0, 0.1, (1, 6 * hid)).astype(np.float32)
    head = rng.normal(0, 0.3, (hid, scores)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in [(w, "W"), (r, "R"), (b, "B"), (head, "head")]]
    nodes = [
        helper.make_node("GRU", ["x", "W", "R", "B", "", "h"], ["y", "hn"], hidden_size=hid,
                         linear_before_reset=1, name="gru"),
        helper.make_node("Reshape", ["hn", "flat"], ["hflat"], name="flatten"),
        helper.make_node("MatMul", ["hflat", "head"], ["scores"], name="head"),
    ]
    inits.append(numpy_helper.from_array(np.array([1, hid], np.int64), "flat"))
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, f]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, 1, hid])],
        [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, scores]),
         helper.make_tensor_value_info("hn", TensorProto.FLOAT, [1, 1, hid])],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    steps = [{"x": rng.uniform(-1, 1, (1, 1, f)).astype(np.float32)} for _ in range(STEPS)]
    return save_model(model, name), steps, {"h": "hn"}


def lstm_model(name):
    rng = rng_for(name)
    f, hid = 12, 24
    w = rng.normal(0, 0.3, (1, 4 * hid, f)).astype(np.float32)
    r = rng.normal(0, 0.3, (1, 4 * hid, hid)).astype(np.float32)
    b = rng.normal(0, 0.1, (1, 8 * hid)).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in [(w, "W"), (r, "R"), (b, "B")]]
    nodes = [
        helper.make_node("LSTM", ["x", "W", "R", "B", "", "h", "c"], ["y", "hn", "cn"],
                         hidden_size=hid, name="lstm"),
        helper.make_node("Tanh", ["y"], ["out"], name="tanh"),
    ]
    state = [1, 1, hid]
    graph = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, f]),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("c", TensorProto.FLOAT, state)],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 1, 1, hid]),
         helper.make_tensor_value_info("hn", TensorProto.FLOAT, state),
         helper.make_tensor_value_info("cn", TensorProto.FLOAT, state)],
        inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    steps = [{"x": rng.uniform(-1, 1, (1, 1, f)).astype(np.float32)} for _ in range(STEPS)]
    return save_model(model, name), steps, {"h": "hn", "c": "cn"}


def silero_signal(name):
    """STEPS windows of 576 samples (64 of context, 512 new) of a seeded synthetic signal."""
    rng = rng_for(name)
    sr, hop, context = 16000, 512, 64
    n = STEPS * hop
    t = np.arange(n) / sr
    signal = rng.normal(0, 0.003, n)
    voiced = np.zeros(n)
    f0 = 120 + 100 * (0.5 + 0.5 * np.sin(2 * np.pi * 0.7 * t))
    phase = 2 * np.pi * np.cumsum(f0) / sr
    for k in range(1, 12):
        voiced += np.sin(k * phase) / k
    envelope = np.clip(np.sin(2 * np.pi * 4 * t), 0, None) ** 0.5
    envelope[: 6 * hop] = 0
    signal += 0.3 * voiced * envelope
    padded = np.concatenate([np.zeros(context), signal])
    return [padded[k * hop: k * hop + hop + context].astype(np.float32)[None, :] for k in range(STEPS)]


def silero_model(name, wheel_dir):
    wheel = next(Path(wheel_dir).glob("silero_vad-*.whl"))
    with zipfile.ZipFile(wheel) as z:
        data = z.read(SILERO_PATH)
        licence = next(n for n in z.namelist() if n.endswith("licenses/LICENSE"))
        (OUT / "LICENSE-silero-vad").write_bytes(z.read(licence))
    digest = hashlib.sha256(data).hexdigest()
    if SILERO_SHA256 and digest != SILERO_SHA256:
        sys.exit(f"{SILERO_PATH}: SHA-256 {digest}, expected {SILERO_SHA256}")
    path = OUT / f"{name}.onnx"
    path.write_bytes(data)
    steps = [{"input": x, "sr": np.array(16000, np.int64)} for x in silero_signal(name)]
    return path, steps, {"state": "stateN"}, {"state": (2, 1, 128)}


def run_steps(path, steps, links, shapes=None):
    """Feeds `steps` to one session, each state input fed the output that `links` names."""
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = sess.get_inputs()
    outputs = [o.name for o in sess.get_outputs()]
    shapes = shapes or {}
    state = {i.name: np.zeros(shapes.get(i.name, i.shape), np.float32) for i in inputs if i.name in links}
    written = []
    for feed in steps:
        feed = {**feed, **state}
        got = sess.run(outputs, feed)
        written.append(([feed[i.name] for i in inputs], got))
        state = {i: got[outputs.index(o)] for i, o in links.items()}
    return written


def write_steps(name, written):
    folder = OUT / name / "steps"
    for k, (ins, outs) in enumerate(written):
        for sub, tensors, prefix in [("inputs", ins, "input"), ("expected", outs, "output")]:
            d = folder / f"{k:02}" / sub
            d.mkdir(parents=True, exist_ok=True)
            for i, t in enumerate(tensors):
                np.save(d / f"{prefix}_{i}.npy", np.asarray(t))
    first = written[0][1][0]
    if all(np.array_equal(first, w[1][0]) for w in written):
        sys.exit(f"{name}: its first output is the same at every step")


README = """# Streaming ONNX models

Models that take their state as inputs and return the next state as outputs, with 24 steps
each of one onnxruntime session fed its own state back (`<name>/steps/NN/inputs/input_K.npy`:
every input of the file, the state being the one step NN-1 returned, zeros at step 00;
`<name>/steps/NN/expected/output_K.npy`: every output, the next state included). Made by
`scripts/make_onnx_streaming.py`; the models' SHA-256 are in `SHA256SUMS`.

| model | what | source | compiled with | licence |
| --- | --- | --- | --- | --- |
| `silero_vad` | Silero VAD v5: 576 samples a window at 16 kHz, an LSTM state [2, 1, 128], `If` on the sample rate | `silero_vad/data/silero_vad.onnx` of the PyPI wheel `silero-vad==6.2.3`, copied unchanged | `--shape input=1x576 --shape state=2x1x128 --const sr=16000 --state stateN=state` | MIT (`LICENSE-silero-vad`) |
| `gru_stream` | one GRU step (16 in, hidden 32) and a MatMul to 4 scores, seeded weights | generated by the script | `--state hn=h` | the repository's |
| `lstm_stream` | one LSTM step (12 in, hidden 24) and a Tanh, seeded weights | generated by the script | `--state hn=h --state cn=c` | the repository's |

Silero VAD's input is a seeded synthetic signal: low noise, with bursts of a voiced-like sound
(a 120-220 Hz harmonic series under a syllable-rate envelope) from window 6 on, each window the
wrapper's 64 samples of context and 512 new ones.
"""


def main():
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", SILERO_WHEEL, "--no-deps",
                        "-d", tmp, "-q"], check=True)
        path, steps, links, shapes = silero_model("silero_vad", tmp)
        write_steps("silero_vad", run_steps(path, steps, links, shapes))
    for make in (gru_model, lstm_model):
        name = make.__name__.replace("_model", "_stream")
        path, steps, links = make(name)
        write_steps(name, run_steps(path, steps, links))
    (OUT / "README.md").write_text(README)
    sums = []
    for p in sorted(OUT.glob("*.onnx")):
        sums.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}")
    (OUT / "SHA256SUMS").write_text("\n".join(sums) + "\n")
    print("\n".join(sums))


if __name__ == "__main__":
    main()
