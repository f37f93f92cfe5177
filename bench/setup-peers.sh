#!/usr/bin/env bash
# Installs the C libraries of strata-bench's peer engines from Debian's packages (as root):
#   libleveldb-dev        LevelDB 1.23 and its C API (leveldb/c.h): feature `leveldb`
#   libkyotocabinet-dev   Kyoto Cabinet 1.2.79 and its C API (kclangc.h): feature `kyoto`
#   pkg-config            how the features' build scripts find both libraries
# fjall and redb (features `fjall`, `redb`) are Rust crates: cargo fetches them, nothing to
# install. The `rocksdb` feature needs clang and libclang-dev (see the README).
#
#   bash bench/setup-peers.sh            # installs what is missing; idempotent
set -euo pipefail

packages=(libleveldb-dev libkyotocabinet-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "bench/setup-peers.sh: ${packages[*]} already installed" >&2
  exit 0
fi
sudo_cmd=()
if [ "$(id -u)" != 0 ]; then
  command -v sudo >/dev/null || {
    echo "bench/setup-peers.sh: need root (or sudo) to install ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
echo "== apt-get install -y ${missing[*]}" >&2
"${sudo_cmd[@]}" apt-get update
DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y "${missing[@]}"
