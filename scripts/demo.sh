#!/usr/bin/env bash
# Sets up what Kiln needs (idempotent) and runs the demo.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
bash scripts/setup.sh
cargo kiln demo
