#!/usr/bin/env bash
# Lays out tflite-micro (at TFLM_COMMIT) and the third-party trees its Makefile would download,
# at the commits TFLM pins, into $WORK/src; unpacks Debian's newlib + libstdc++ for
# arm-none-eabi into $WORK/sysroot (not installed); makes $WORK/pyenv (numpy, Pillow).
# Each repository is cloned bare from GitHub into $WORK/git/<owner>+<name> once, or taken from
# MIRRORS/<owner>+<name>/repo where MIRRORS names a folder of such bare clones.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
TFLM_COMMIT=${TFLM_COMMIT:-90b983c2b3f1480642e040bbd2ddb37b998f3424}
SRC=$WORK/src
mkdir -p "$SRC"

git_dir() { # owner+name -> a bare repository with its history
  if [ -n "${MIRRORS:-}" ]; then echo "$MIRRORS/$1/repo"; return; fi
  local dir="$WORK/git/$1"
  [ -d "$dir" ] || git clone --quiet --bare "https://github.com/${1/+//}.git" "$dir"
  echo "$dir"
}

export_tree() { # owner+name commit dest
  local git; git=$(git_dir "$1")
  rm -rf "$3"; mkdir -p "$3"
  git --git-dir="$git" archive "$2" | tar -x -C "$3"
}

TFLM=$SRC/tflite-micro
if [ ! -f "$TFLM/.commit" ]; then
  export_tree tensorflow+tflite-micro "$TFLM_COMMIT" "$TFLM"
  git --git-dir="$(git_dir tensorflow+tflite-micro)" rev-parse "$TFLM_COMMIT^{commit}" > "$TFLM/.commit"
fi
MK=$TFLM/tensorflow/lite/micro/tools/make
D=$MK/downloads
mkdir -p "$D"
pin() { grep -m1 -o "$1=\"[^\"]*\"" "$2" | cut -d'"' -f2; }
pin_url() { grep -m1 "$1" "$2" | grep -o '[0-9a-f]\{40\}'; }

CMSIS_NN_PIN=$(pin ZIP_PREFIX_NN "$MK/ext_libs/cmsis_nn_download.sh")
CMSIS6_PIN=$(grep -m1 -o 'ZIP_PREFIX="[0-9a-f]*"' "$MK/ext_libs/cmsis_download.sh" | cut -d'"' -f2)
DFP_PIN=$(grep -o 'ZIP_PREFIX="[0-9a-f]*"' "$MK/ext_libs/cmsis_download.sh" | sed -n 2p | cut -d'"' -f2)
FB_TAG=$(pin ZIP_PREFIX "$MK/flatbuffers_download.sh")
GEMM_PIN=$(pin_url GEMMLOWP_URL "$MK/third_party_downloads.inc")
RUY_PIN=$(pin_url RUY_URL "$MK/third_party_downloads.inc")
CMSIS_NN_COMMIT=${CMSIS_NN_COMMIT:-$CMSIS_NN_PIN}

[ -d "$D/cmsis" ] || { export_tree ARM-software+CMSIS_6 "$CMSIS6_PIN" "$D/cmsis";
                       export_tree ARM-software+Cortex_DFP "$DFP_PIN" "$D/cmsis/Cortex_DFP"; }
if [ ! -f "$D/cmsis_nn/.commit" ] || [ "$(cat "$D/cmsis_nn/.commit")" != "$CMSIS_NN_COMMIT" ]; then
  export_tree ARM-software+CMSIS-NN "$CMSIS_NN_COMMIT" "$D/cmsis_nn"
  git --git-dir="$(git_dir ARM-software+CMSIS-NN)" rev-parse "$CMSIS_NN_COMMIT^{commit}" > "$D/cmsis_nn/.commit"
fi
if [ ! -d "$D/flatbuffers" ]; then
  export_tree google+flatbuffers "$FB_TAG" "$D/flatbuffers"
  (cd "$D/flatbuffers" && find . -name BUILD -o -name BUILD.bazel | xargs rm -f &&
   patch -p1 -s < "$MK/flatbuffers.patch")
fi
[ -d "$D/gemmlowp" ] || { export_tree google+gemmlowp "$GEMM_PIN" "$D/gemmlowp"; find "$D/gemmlowp" -name '*BUILD' -delete; }
[ -d "$D/ruy" ] || { export_tree google+ruy "$RUY_PIN" "$D/ruy"; find "$D/ruy" -name '*BUILD' -delete; }
# The signal library's kiss_fft wrappers in microlite include kissfft (v130 + TFLM's patch).
KISSFFT_TAG=$(grep -m1 KISSFFT_URL "$MK/third_party_downloads.inc" | grep -o 'v[0-9]*' | tail -1)
if [ ! -f "$D/kissfft/kiss_fft.c" ]; then
  export_tree mborgerding+kissfft "$KISSFFT_TAG" "$D/kissfft"
  (cd "$D/kissfft" && find . -name '*BUILD' -delete && patch -p1 -s < "$TFLM/third_party/kissfft/kissfft.patch")
fi
# Pigweed is only used by TFLM's tests; an empty folder stops its download script.
mkdir -p "$D/pigweed"

# newlib + libstdc++ for arm-none-eabi (Debian bookworm packages), unpacked, not installed.
if [ ! -d "$WORK/sysroot/usr/include/newlib/c++" ]; then
  mkdir -p "$WORK/debs" "$WORK/sysroot"
  (cd "$WORK/debs" && apt-get download libnewlib-arm-none-eabi libnewlib-dev \
      libstdc++-arm-none-eabi-newlib libstdc++-arm-none-eabi-dev)
  for d in "$WORK"/debs/*.deb; do dpkg -x "$d" "$WORK/sysroot"; done
fi

# Every TFLM object depends on these folders' mtimes: keep them old so that laying out a missing
# one later does not rebuild the library.
(cd "$D" && touch -d 2001-01-01 gemmlowp ruy flatbuffers kissfft cmsis cmsis_nn pigweed)

# TFLM's Makefile runs generate_cc_arrays.py (numpy, Pillow) while it parses; gen_model.py
# needs numpy.
[ -x "$WORK/pyenv/bin/python" ] || { python3 -m venv "$WORK/pyenv" && "$WORK/pyenv/bin/pip" install -q numpy pillow; }

# What was laid out, to compare with the README's list.
{
  echo "tflite-micro $(cat "$TFLM/.commit")"
  echo "CMSIS-NN $(cat "$D/cmsis_nn/.commit") (TFLM pin: $CMSIS_NN_PIN)"
  echo "CMSIS_6 $CMSIS6_PIN"
  echo "Cortex_DFP $DFP_PIN"
  echo "flatbuffers $FB_TAG $(git --git-dir="$(git_dir google+flatbuffers)" rev-parse "$FB_TAG^{commit}")"
  echo "gemmlowp $GEMM_PIN"
  echo "ruy $RUY_PIN"
  echo "kissfft $KISSFFT_TAG $(git --git-dir="$(git_dir mborgerding+kissfft)" rev-parse "$KISSFFT_TAG^{commit}")"
  echo "newlib/libstdc++ debs: $(cd "$WORK/debs" && ls *.deb | tr '\n' ' ')"
} > "$WORK/commits.txt"
cat "$WORK/commits.txt"
