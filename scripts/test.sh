#!/usr/bin/env bash
# Kiln's whole test suite: sets up what it needs, then runs every test of the workspace.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
# The MLPerf Tiny models and vectors, the generated MobileNetV2, and the TFLM + CMSIS-NN
# images the benchmark and its tests run are the files their provenance names.
(cd tests/models/mlperf-tiny && sha256sum --check --quiet SHA256SUMS)
(cd tests/peers/tflm-cmsis-nn && sha256sum --check --quiet SHA256SUMS)
(cd tests/models/mobilenet-v2 && sha256sum --check --quiet SHA256SUMS)
# The set-up installed every part the tests need (QEMU and the cross compilers, the OpenCL and
# Vulkan drivers, the ONNX node tests): a missing one fails its test here instead of skipping it.
export KILN_REQUIRE_ALL=1
cargo test --workspace --all-targets --no-fail-fast 2>&1
# The examples in the documentation compile, and the public API documents without warnings.
cargo test --workspace --doc 2>&1
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet 2>&1
