#!/usr/bin/env bash
# Builds a board with a bundle, runs it under QEMU on the inputs of an I/O folder, and prints
# the instructions each step's kernel executed.
#
#   scripts/qemu-run.sh BOARD BUNDLE_DIR IO_DIR
#
# BUNDLE_DIR holds kernels.c, schedule.bin and weights.bin. IO_DIR holds input_<i>.bin (raw
# little-endian tensors); the firmware writes output_<i>.bin there. Exits with the firmware's
# status: 0 on success, 1 when it refused the bundle or failed; QEMU is stopped after
# KILN_QEMU_TIMEOUT seconds (default 300). Also prints the image's flash and static RAM use.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
board=${1:?usage: qemu-run.sh BOARD BUNDLE_DIR IO_DIR}
bundle_dir=$(realpath "${2:?usage: qemu-run.sh BOARD BUNDLE_DIR IO_DIR}")
io_dir=$(realpath "${3:?usage: qemu-run.sh BOARD BUNDLE_DIR IO_DIR}")
board_dir=$root/boards/$board
config=$board_dir/.cargo/config.toml
[[ -f $config ]] || { echo "qemu-run: no board $board (no $config)" >&2; exit 2; }

# The board's target and QEMU command line live in its cargo config, and only there.
setting() { sed -n "s/^$1 = \"\(.*\)\"$/\1/p" "$config" | head -n 1; }
target=$(setting target)
read -r -a runner <<<"$(setting runner)"
if [[ ${runner[0]:-} != qemu-system-* ]]; then
  echo "qemu-run: $board does not run under QEMU" >&2
  exit 2
fi

target_dir=$root/target/boards/$board
(cd "$board_dir" && KILN_BUNDLE_DIR=$bundle_dir \
  "$root/scripts/toolchain-cargo.sh" "$target" build --quiet --release --target-dir "$target_dir")
elf=$target_dir/$target/release/$board

# The instruction counter needs the marker's address. A firmware that can never run a kernel
# (the compiler saw the bundle is refused) has no marker, and nothing to count.
"$root/scripts/qemu-plugin.sh" >/dev/null
marker=$(readelf -sW "$elf" | awk '$8 == "KILN_MARKER" { print "0x" $2 }')
log=$(mktemp)
trap 'rm -f "$log"' EXIT
counter=()
if [[ -n $marker ]]; then
  counter=(-plugin "$root/target/qemu-plugin/libinsn.so,marker=$marker" -d plugin -D "$log")
fi
status=0
(cd "$io_dir" && timeout "${KILN_QEMU_TIMEOUT:-300}" "${runner[@]}" "$elf" "${counter[@]}") ||
  status=$?

# The plugin logs the running count at each marker store: before and after each step.
awk '
  $1 == "kiln-insn" { count[n++] = $2 }
  $1 == "kiln-insn-total" { total = $2 }
  END {
    if (n == 0) exit
    printf "%-6s %14s\n", "step", "instructions"
    for (i = 0; i + 1 < n; i += 2) {
      printf "%-6d %14d\n", i / 2, count[i + 1] - count[i]
      kernels += count[i + 1] - count[i]
    }
    printf "%-6s %14d\n%-6s %14d\n", "steps", kernels, "run", total
  }' "$log"

# Flash: every loaded section; static RAM: every writable one (.data is in both) but the
# stack and heap that riscv-rt reserves as sections.
flash=0 ram=0
while read -r name type size flags; do
  if [[ $type == PROGBITS && $flags == *A* ]]; then flash=$((flash + 16#$size)); fi
  if [[ $flags == *A* && $flags == *W* && $name != .stack && $name != .heap ]]; then
    ram=$((ram + 16#$size))
  fi
done < <(readelf -SW "$elf" | sed -n 's/^ *\[ *[0-9]*\] *//p' | awk '{ print $1, $2, $5, $7 }')
arena=$(readelf -sW "$elf" | awk '$8 ~ /ARENA$/ { print $3 }')
echo "flash $flash bytes, static RAM $ram bytes (arena ${arena:-0})"
exit "$status"
