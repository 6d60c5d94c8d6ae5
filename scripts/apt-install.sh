#!/usr/bin/env bash
# Installs the Debian packages that are missing, and nothing else: `apt-get update` runs only
# when one is missing. The setup scripts share it.
#
#   scripts/apt-install.sh LABEL [--no-install-recommends] PACKAGE...
set -euo pipefail
label=${1:?usage: apt-install.sh LABEL [--no-install-recommends] PACKAGE...}
shift
flags=()
if [[ ${1:-} == --no-install-recommends ]]; then
  flags+=("$1")
  shift
fi

missing=()
for package in "$@"; do
  dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q 'install ok installed' ||
    missing+=("$package")
done

if ((${#missing[@]} > 0)); then
  echo "$label: installing ${missing[*]}"
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq "${flags[@]}" "${missing[@]}" >/dev/null
else
  echo "$label: packages already installed"
fi
