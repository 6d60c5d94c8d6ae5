#!/usr/bin/env bash
# Checks the board crates as the root workspace's checks do the host's: format, clippy
# (warnings are errors) and a release build of each board for its own target. The real boards
# are only built here; running them needs their debug probe.
#
#   scripts/toolchain-check-boards.sh [BOARD...]      (default: every board)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root/boards"
cargo fmt --all -- --check
if (($# == 0)); then
  for config in */.cargo/config.toml; do set -- "$@" "${config%%/*}"; done
fi
for board in "$@"; do
  target=$(sed -n 's/^target = "\(.*\)"$/\1/p' "$board/.cargo/config.toml")
  (cd "$board" &&
    "$root/scripts/toolchain-cargo.sh" "$target" clippy --quiet --release -- -D warnings &&
    "$root/scripts/toolchain-cargo.sh" "$target" build --quiet --release)
  # An emulated board that can also speak RTT (`kiln run --io rtt`): that firmware too.
  if grep -q '^rtt = ' "$board/Cargo.toml"; then
    (cd "$board" &&
      "$root/scripts/toolchain-cargo.sh" "$target" clippy --quiet --release \
        --no-default-features --features rtt -- -D warnings)
  fi
  echo "toolchain-check-boards: $board ($target) is clean and builds"
done
