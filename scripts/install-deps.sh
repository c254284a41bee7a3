#!/usr/bin/env bash
# Installs the Debian packages epoch needs (scripts/debian-packages.txt), only those missing,
# with apt-get (through sudo when not root). Safe to run again: it does nothing when
# everything is present.
set -euo pipefail

list="$(dirname "${BASH_SOURCE[0]}")/debian-packages.txt"
mapfile -t packages < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' -e '/^$/d' "$list")

if ! command -v dpkg-query > /dev/null; then
  echo "epoch: this is not a Debian or Ubuntu system (no dpkg-query); install the equivalents of: ${packages[*]}" >&2
  exit 1
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  if ! command -v sudo > /dev/null; then
    echo "epoch: missing packages and no sudo to install them; as root run: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  sudo=(sudo)
fi
echo "epoch: installing missing packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
