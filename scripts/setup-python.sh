#!/usr/bin/env bash
# Creates the Python environment used to build the test models and their reference outputs:
# `.venv` at the repository root with pinned numpy, onnx and onnxruntime.
# Idempotent: does nothing when `.venv` exists and already imports the pinned versions.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="$root/.venv"
py="$venv/bin/python"

NUMPY=2.4.6
ONNX=1.22.0
ONNXRUNTIME=1.32.0

check='
import sys, numpy, onnx, onnxruntime
want = sys.argv[1:]
have = [numpy.__version__, onnx.__version__, onnxruntime.__version__]
sys.exit(0 if have == want else 1)
'

if [ -x "$py" ] && "$py" -c "$check" "$NUMPY" "$ONNX" "$ONNXRUNTIME" 2>/dev/null; then
    echo ".venv is ready (numpy $NUMPY, onnx $ONNX, onnxruntime $ONNXRUNTIME)"
    exit 0
fi

[ -x "$py" ] || python3 -m venv "$venv"
"$py" -m pip install --quiet --disable-pip-version-check \
    "numpy==$NUMPY" "onnx==$ONNX" "onnxruntime==$ONNXRUNTIME"
"$py" -c "$check" "$NUMPY" "$ONNX" "$ONNXRUNTIME"
echo ".venv created (numpy $NUMPY, onnx $ONNX, onnxruntime $ONNXRUNTIME)"
