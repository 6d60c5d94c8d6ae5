#!/usr/bin/env bash
# Checks emulated boards end to end with the add-relu test bundle: outputs match the expected
# ones, and damaged or mismatched bundles are refused at boot with the right error.
#
#   scripts/qemu-selftest.sh [BOARD...]      (default: every board that runs under QEMU)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
testdata=$root/boards/testdata/add-relu
work=$root/target/qemu-selftest

if (($# == 0)); then
  for config in "$root"/boards/*/.cargo/config.toml; do
    board=${config#"$root/boards/"}
    if grep -q '^runner = "qemu-system-' "$config"; then set -- "$@" "${board%%/*}"; fi
  done
fi

# Writes byte VALUE at OFFSET of FILE.
poke() { printf "\\x$(printf %02x "$3")" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none; }
peek() { od -An -tu1 -j "$2" -N1 "$1" | tr -d ' '; }

# A copy of the test bundle, to damage.
bundle_copy() {
  rm -rf "$work/$1" && mkdir -p "$work/$1" && cp "$testdata"/*.c "$testdata"/*.bin "$work/$1/"
  echo "$work/$1"
}

# Runs BOARD on BUNDLE_DIR; expects failure with a message matching PATTERN.
expect_refusal() {
  local board=$1 bundle=$2 pattern=$3 io=$work/io-refused status=0
  rm -rf "$io" && mkdir -p "$io" && cp "$testdata"/io/input_*.bin "$io/"
  scripts/qemu-run.sh "$board" "$bundle" "$io" >"$work/out.txt" 2>&1 || status=$?
  if ((status != 1)) || ! grep -q "$pattern" "$work/out.txt"; then
    echo "FAIL $board: expected exit 1 and '$pattern', got exit $status:" && cat "$work/out.txt"
    return 1
  fi
  echo "ok   $board refuses: $(grep -o 'kiln: .*' "$work/out.txt")"
}

cd "$root"
mkdir -p "$work"
failed=0
for board in "$@"; do
  io=$work/io-$board
  rm -rf "$io" && mkdir -p "$io" && cp "$testdata"/io/*.bin "$io/"
  if scripts/qemu-run.sh "$board" "$testdata" "$io" &&
    cargo run --quiet -p kiln-firmware --features std --example testdata -- check "$io"; then
    echo "ok   $board runs the test bundle"
  else
    echo "FAIL $board on the test bundle" && failed=1
  fi

  damaged=$(bundle_copy damaged)
  last=$(($(stat -c %s "$damaged/schedule.bin") - 1))
  poke "$damaged/schedule.bin" "$last" $(($(peek "$damaged/schedule.bin" "$last") ^ 1))
  expect_refusal "$board" "$damaged" "schedule is damaged" || failed=1

  version=$(bundle_copy version)
  poke "$version/schedule.bin" 4 2
  expect_refusal "$board" "$version" "format version 2" || failed=1

  KILN_ARENA_BYTES=64 expect_refusal "$board" "$testdata" "needs a 128-byte arena" || failed=1
done
exit "$failed"
