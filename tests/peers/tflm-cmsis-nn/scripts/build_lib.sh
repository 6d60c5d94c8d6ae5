#!/usr/bin/env bash
# build_lib.sh <board: an386|an505>: builds libtensorflow-microlite.a with TFLM's own Makefile
# and flags (TARGET=cortex_m_generic OPTIMIZED_KERNEL_DIR=cmsis_nn BUILD_TYPE=release
# TOOLCHAIN=gcc; TARGET_ARCH cortex-m4+fp for an386, cortex-m33 for an505) and writes
# $WORK/build/lib-<board>.env: the library, TFLM's include folders and C++ flags.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
BOARD=${1:-an386}
board_settings "$BOARD"
TFLM=$WORK/src/tflite-micro
cd "$TFLM"
# The Makefile runs generate_cc_arrays.py (numpy, Pillow) while it parses the example tests.
export PATH=$WORK/pyenv/bin:$PATH
args=(-f tensorflow/lite/micro/tools/make/Makefile TARGET=cortex_m_generic TARGET_ARCH=$TFLM_ARCH
      OPTIMIZED_KERNEL_DIR=cmsis_nn TOOLCHAIN=gcc BUILD_TYPE=release
      TARGET_TOOLCHAIN_ROOT=$WORK/toolchain/bin/)
make "${args[@]}" -j"$(nproc)" microlite >&2
var() { make "${args[@]}" "print-$1" 2>/dev/null | sed -n "s/^$1=//p"; }
mkdir -p "$WORK/build"
{
  printf 'LIB=%q\n' "$TFLM/$(var MICROLITE_LIB_PATH)"
  printf 'INCLUDES=%q\n' "$(var INCLUDES)"
  printf 'CXXFLAGS=%q\n' "$(var CXXFLAGS)"
} > "$WORK/build/lib-$BOARD.env"
cat "$WORK/build/lib-$BOARD.env"
