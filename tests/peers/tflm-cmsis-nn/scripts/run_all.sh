#!/usr/bin/env bash
# The whole build, rerunnable:  scripts/run_all.sh [an386] [an505]
# Lays out the sources (setup_sources.sh), wraps the toolchain (make_toolchain.sh), builds TFLM +
# CMSIS-NN for each board (build_lib.sh) and each MLPerf Tiny int8 model's image, whole-Invoke
# and per operator (build_image.sh), into $WORK/build; then copies the images this folder holds
# over them (<board>/<model>.elf, an386/vww_96_int8-perop.elf) and runs each once
# (run_image.sh). Update SHA256SUMS afterwards: sha256sum an386/*.elf an505/*.elf > SHA256SUMS
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
BOARDS=("$@"); [ ${#BOARDS[@]} -gt 0 ] || BOARDS=(an386 an505)
MODELS_LIST=(kws_ref_model vww_96_int8 pretrainedResnet_quant ad01_int8 str_ww_ref_model)
S=$HERE/scripts
"$S/setup_sources.sh"
"$S/make_toolchain.sh" > /dev/null
for b in "${BOARDS[@]}"; do
  mkdir -p "$WORK/build"
  "$S/build_lib.sh" "$b" > "$WORK/build/lib-$b.out" 2> "$WORK/build/lib-$b.log" \
    || { tail -30 "$WORK/build/lib-$b.log"; exit 1; }
  for m in "${MODELS_LIST[@]}"; do
    for v in "" perop; do
      "$S/build_image.sh" "$m" "$b" $v > /dev/null
      built=$WORK/build/$b/$m${v:+-$v}/peer.elf
      kept=$HERE/$b/$m${v:+-$v}.elf
      if [ -z "$v" ] || [ -f "$kept" ]; then
        cp "$built" "$kept"
        "$S/run_image.sh" "$kept" "$b" | grep -E "exit status|worst|fail|fault|abort"
      fi
    done
  done
done
