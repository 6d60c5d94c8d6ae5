# Paths, sourced by the other scripts. HERE: this folder's parent (the images, app/, scripts/);
# REPO: the repository; WORK: where the sources are laid out and built ($WORK, default
# target/peers/tflm-cmsis-nn in the repository); MODELS and VECTORS: the MLPerf Tiny int8 models
# and their TFLM reference vectors in the repository.
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO=$(cd "$HERE/../../.." && pwd)
WORK=${WORK:-$REPO/target/peers/tflm-cmsis-nn}
MODELS=${MODELS:-$REPO/tests/models/mlperf-tiny/tflite}
VECTORS=${VECTORS:-$REPO/tests/models/mlperf-tiny/vectors}
# numpy for gen_model.py, in the environment setup_sources.sh makes.
PY=${PY:-$WORK/pyenv/bin/python}
source "$HERE/scripts/boards.sh"
