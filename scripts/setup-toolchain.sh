#!/usr/bin/env bash
# Installs what the board builds and the emulated boards need, then builds the QEMU
# instruction-count plugin. Idempotent: each step checks first, and `apt-get update` runs only
# when a package is missing.
#
#   scripts/setup-toolchain.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# Emulators, linkers and the cross C compilers for the kernels (Arm, RISC-V). rustc-web,
# cargo-web, rust-web-src and rust-web-clippy are Debian's Rust with matching `core` sources:
# the fallback that builds (and lints) for a microcontroller target when rustup has no such
# target installed (see scripts/toolchain-cargo.sh).
packages=(
  build-essential
  qemu-system-arm
  qemu-system-misc
  gcc-arm-none-eabi
  gcc-riscv64-unknown-elf
  lld
  rustc-web
  cargo-web
  rust-web-src
  rust-web-clippy
)

installed() {
  dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'
}

missing=()
for package in "${packages[@]}"; do
  installed "$package" || missing+=("$package")
done

if ((${#missing[@]} > 0)); then
  echo "setup-toolchain: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}"
else
  echo "setup-toolchain: packages already installed"
fi

"$root/scripts/qemu-plugin.sh"
