#!/usr/bin/env bash
# Creates the benchmark's Python environment `.venv-bench` at the repository root: the
# references Kiln is compared with (onnxruntime, tinygrad 0.9.1 with its CLANG backend,
# TensorFlow Lite Micro, LiteRT), at pinned versions.
# Idempotent: does nothing when `.venv-bench` already imports the pinned versions.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv-bench"
py="$venv/bin/python"

NUMPY=2.4.6
ONNX=1.22.0
ONNXRUNTIME=1.32.0
TINYGRAD=0.9.1
TFLITE_MICRO=0.dev20261023182759
LITERT=2.3.0

check='
import sys, importlib.metadata as md
names = ["numpy", "onnx", "onnxruntime", "tinygrad", "tflite-micro", "ai-edge-litert"]
have = [md.version(n) for n in names]
sys.exit(0 if have == sys.argv[1:] else 1)
'
want=("$NUMPY" "$ONNX" "$ONNXRUNTIME" "$TINYGRAD" "$TFLITE_MICRO" "$LITERT")

if [ -x "$py" ] && "$py" -c "$check" "${want[@]}" 2>/dev/null; then
    echo ".venv-bench is ready"
    exit 0
fi

# tinygrad's CLANG backend compiles with clang.
if ! command -v clang >/dev/null; then
    bash "$root/scripts/apt-install.sh" bench clang
fi

[ -x "$py" ] || python3 -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check \
    "numpy==$NUMPY" "onnx==$ONNX" "onnxruntime==$ONNXRUNTIME" "tinygrad==$TINYGRAD" \
    "tflite-micro==$TFLITE_MICRO" "ai-edge-litert==$LITERT"
"$py" -c "$check" "${want[@]}"
echo ".venv-bench created"
