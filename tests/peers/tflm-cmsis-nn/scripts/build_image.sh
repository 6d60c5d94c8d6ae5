#!/usr/bin/env bash
# build_image.sh <model> <board: an386|an505> [perop]  ->  $WORK/build/<board>/<model>[-perop]/peer.elf
# perop: each operator's kernel (its registration's invoke) bracketed by marker stores instead
# of the whole Invoke().
# Needs build_lib.sh's output ($WORK/build/lib-<board>.env).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
MODEL=$1; BOARD=$2; VARIANT=${3:-}
board_settings "$BOARD"
source "$WORK/build/lib-$BOARD.env"   # LIB, INCLUDES, CXXFLAGS from TFLM's Makefile
TFLM=$WORK/src/tflite-micro
OUT=$WORK/build/$BOARD/$MODEL${VARIANT:+-$VARIANT}
DEFS=""; [ "$VARIANT" = perop ] && DEFS=-DPER_OP
mkdir -p "$OUT"
T=$WORK/toolchain/bin
$PY "$HERE/scripts/gen_model.py" "$TFLM" "$MODELS/$MODEL.tflite" "$VECTORS/$MODEL.tflm.npz" "$OUT"
sed -e "s/@BOARD@/$BOARD/" -e "s/@KILNBOARD@/$KILN_BOARD/" -e "s/@FLASH@/$FLASH/" -e "s/@RAM@/$RAM/" \
  "$HERE/app/link.ld.in" > "$OUT/link.ld"
# TFLM's include paths are relative to its root.
INC=$(for i in $INCLUDES; do case "$i" in -I/*) echo "$i";; -I*) echo "-I$TFLM/${i#-I}";; esac; done | tr -d '"' | tr '\n' ' ')
# TFLM's own C++ flags for the application code, at its kernel level (-O2); -MD and the CMSIS
# device-header defines (quoted for make's shell; main.cc does not use them) dropped.
APPFLAGS=$(for f in $CXXFLAGS; do case "$f" in -MD|*'"'*) ;; *) echo "$f";; esac; done | tr '\n' ' ')
cd "$OUT"
$T/arm-none-eabi-g++ $APPFLAGS -O2 $INC $DEFS -I"$OUT" -c "$HERE/app/main.cc" -o main.o
$T/arm-none-eabi-g++ $APPFLAGS -O2 -I"$OUT" -c model_data.cc -o model_data.o
$T/arm-none-eabi-gcc $CPU_FLAGS -O2 -ffunction-sections -fdata-sections -c "$HERE/app/startup.c" -o startup.o
$T/arm-none-eabi-g++ $CPU_FLAGS -nostartfiles -T link.ld -Wl,--gc-sections -Wl,-Map=peer.map \
  main.o model_data.o startup.o "$LIB" -lm -lc -lgcc -o peer.elf
arm-none-eabi-size peer.elf
