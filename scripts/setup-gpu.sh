#!/usr/bin/env bash
# Installs what the edge-GPU targets need to run on the CPU: PoCL (OpenCL 1.2) with the ICD
# loader and headers, Mesa's lavapipe (Vulkan 1.3) with the loader and headers, and the GLSL to
# SPIR-V compiler and tools. Idempotent: `apt-get update` runs only when a package is missing.
#
#   scripts/setup-gpu.sh
set -euo pipefail

packages=(
  pocl-opencl-icd
  ocl-icd-opencl-dev
  clinfo
  mesa-vulkan-drivers
  vulkan-tools
  libvulkan-dev
  glslc
  spirv-tools
)

bash "$(dirname "${BASH_SOURCE[0]}")/apt-install.sh" setup-gpu "${packages[@]}"
