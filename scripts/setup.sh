#!/usr/bin/env bash
# Installs everything Kiln's demo and tests need on a fresh Debian machine, idempotently:
# a C compiler for the host kernels, the Python reference environment, the cross toolchains
# and emulators for the boards, and the OpenCL/Vulkan drivers that run on the CPU. Safe to run
# again; skips what is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

bash "$root/scripts/apt-install.sh" setup build-essential python3-venv
bash "$root/scripts/setup-python.sh"
bash "$root/scripts/setup-toolchain.sh"
bash "$root/scripts/setup-gpu.sh"
