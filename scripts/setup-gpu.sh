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

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for package in "${packages[@]}"; do
  installed "$package" || missing+=("$package")
done

if ((${#missing[@]} > 0)); then
  echo "setup-gpu: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "setup-gpu: all packages present"
fi
