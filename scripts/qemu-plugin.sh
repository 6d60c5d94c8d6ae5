#!/usr/bin/env bash
# Builds the QEMU instruction-count plugin (boards/qemu-plugin/*.c) into
# target/qemu-plugin/libinsn.so, only when a source is newer than the library.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sources=("$root"/boards/qemu-plugin/*.c "$root"/boards/qemu-plugin/*.h)
library="$root/target/qemu-plugin/libinsn.so"

stale=0
[[ -f $library ]] || stale=1
for source in "${sources[@]}"; do
  [[ $stale == 1 || $source -nt $library ]] && stale=1
done
if [[ $stale == 0 ]]; then
  echo "qemu-plugin: $library is up to date"
  exit 0
fi
mkdir -p "$(dirname "$library")"
gcc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -o "$library" \
  "$root"/boards/qemu-plugin/*.c
echo "qemu-plugin: built $library"
