#!/usr/bin/env bash
# Kiln's whole test suite: sets up what it needs, then runs every test of the workspace.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
cargo test --workspace --all-targets 2>&1
