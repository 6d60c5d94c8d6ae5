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
  # The hosted AArch64 board (qemu-aarch64): a Linux C compiler and C library for it, and
  # QEMU's user-mode emulation, which runs its programs here.
  gcc-aarch64-linux-gnu
  libc6-dev-arm64-cross
  qemu-user
)

bash "$root/scripts/apt-install.sh" setup-toolchain --no-install-recommends "${packages[@]}"

"$root/scripts/qemu-plugin.sh"
