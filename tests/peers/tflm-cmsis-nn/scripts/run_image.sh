#!/usr/bin/env bash
# run_image.sh <image.elf> <board: an386|an505>: runs a peer image under the board's QEMU command
# line (boards/qemu-<board>/.cargo/config.toml's runner) with the repository's instruction-count
# plugin, as `cargo kiln bench` does:
#   <runner> image.elf -plugin target/qemu-plugin/libinsn.so,marker=<KILN_MARKER>,core=<m4|m33> -d plugin -D insn.log
# Prints the image's own lines, its exit status (0: every output equals TFLM's reference) and
# the plugin's marks (`kiln-insn <instructions> <cycles>`, two per Invoke(); vector 0's first).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"
ELF=$(realpath "$1"); BOARD=$2
board_settings "$BOARD"
bash "$REPO/scripts/qemu-plugin.sh" >&2
MARKER=$(arm-none-eabi-nm "$ELF" | awk '$3 == "KILN_MARKER" {print "0x"$1}')
[ -n "$MARKER" ] || { echo "no KILN_MARKER in $ELF" >&2; exit 1; }
LOG=$(mktemp)
set +e
timeout 600 "${QEMU[@]}" "$ELF" -plugin "$REPO/target/qemu-plugin/libinsn.so,marker=$MARKER,core=$CORE" \
  -d plugin -D "$LOG" < /dev/null
STATUS=$?
set -e
echo "exit status $STATUS"
cat "$LOG"; echo
rm -f "$LOG"
exit $STATUS
