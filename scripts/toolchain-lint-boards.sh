#!/usr/bin/env bash
# Format check and clippy (warnings are errors) for the board crates, each board for its own
# target, as the root workspace's `cargo fmt --check` and `cargo clippy` do for the host.
#
#   scripts/toolchain-lint-boards.sh [BOARD...]      (default: every board)
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
    "$root/scripts/toolchain-cargo.sh" "$target" clippy --quiet --release -- -D warnings)
  echo "toolchain-lint-boards: $board ($target) is clean"
done
