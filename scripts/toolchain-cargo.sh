#!/usr/bin/env bash
# Runs cargo with a Rust toolchain that can build for TARGET:
# - the default toolchain, when its sysroot has TARGET's libraries (`rustup target add TARGET`);
# - else Debian's rustc-web (/usr/bin/cargo, /usr/bin/rustc) with its matching `core` sources,
#   building `core` from source (-Zbuild-std=core, RUSTC_BOOTSTRAP=1), or `std` for a target
#   with an operating system (`-linux-`); scripts/setup-toolchain.sh installs it.
#
#   scripts/toolchain-cargo.sh TARGET CARGO_ARGS...
set -euo pipefail
target=${1:?usage: toolchain-cargo.sh TARGET CARGO_ARGS...}
shift

sysroot=$(rustc --print sysroot 2>/dev/null || true)
if [[ -n $sysroot && -d $sysroot/lib/rustlib/$target/lib ]]; then
  exec cargo "$@"
fi

debian_sources=/usr/lib/rustlib/src/rust/library
if [[ -x /usr/bin/cargo && -x /usr/bin/rustc && -d $debian_sources ]]; then
  # /usr/bin first, so that `cargo clippy` finds Debian's clippy, not one of another version.
  # -Zbuild-std=core through the environment, so that it reaches the cargo that clippy runs.
  export PATH=/usr/bin:$PATH RUSTC_BOOTSTRAP=1 RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc
  case $target in
    *-linux-*) export CARGO_UNSTABLE_BUILD_STD=std ;;
    *) export CARGO_UNSTABLE_BUILD_STD=core ;;
  esac
  exec /usr/bin/cargo "$@"
fi

echo "toolchain-cargo: no Rust toolchain builds for $target:" \
  "run 'rustup target add $target' or scripts/setup-toolchain.sh" >&2
exit 1
