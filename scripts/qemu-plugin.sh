#!/usr/bin/env bash
# Builds the QEMU instruction-count plugin (boards/qemu-plugin/insn.c) into
# target/qemu-plugin/libinsn.so, only when the source is newer than the library.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source="$root/boards/qemu-plugin/insn.c"
library="$root/target/qemu-plugin/libinsn.so"

if [[ -f $library && $library -nt $source ]]; then
  echo "qemu-plugin: $library is up to date"
  exit 0
fi
mkdir -p "$(dirname "$library")"
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -o "$library" "$source"
echo "qemu-plugin: built $library"
