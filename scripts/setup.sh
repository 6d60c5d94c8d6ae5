#!/usr/bin/env bash
# Installs everything Kiln's demo and tests need on a fresh Debian machine, idempotently:
# a C compiler for the host kernels, the Python reference environment, and (where present)
# the cross toolchains and emulators for the boards. Safe to run again; skips what is there.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

apt_install() {
    local missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "installing: ${missing[*]}"
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
    fi
}

apt_install build-essential python3-venv
bash "$root/scripts/setup-python.sh"
bash "$root/scripts/setup-toolchain.sh"
bash "$root/scripts/setup-gpu.sh"
