#!/usr/bin/env bash
# Type-checks the engine crate for Windows and macOS, which CI does not run (it runs Linux).
# `cargo check` compiles and borrow-checks every line of the crate for the target and links
# nothing, so no cross linker or SDK is needed. zstd-sys would compile zstd's C sources for
# the target; it is pointed instead at a pkg-config stub (nothing is linked by a check).
# Skips, saying so, when rustup cannot add a target (offline).
set -euo pipefail
cd "$(dirname "$0")/.."
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(x86_64-pc-windows-gnu x86_64-apple-darwin)
stub="$(mktemp -d)"
trap 'rm -rf "$stub"' EXIT
cat > "$stub/libzstd.pc" <<'PC'
Name: libzstd
Description: stub for type checks on other targets (nothing is linked)
Version: 1.5.7
Libs: -lzstd
Cflags:
PC
for t in "${targets[@]}"; do
  if ! rustup target list --installed 2> /dev/null | grep -qx "$t" \
      && ! rustup target add "$t" > /dev/null 2>&1; then
    echo "cross-check: SKIPPED $t: rustup cannot add the target here" >&2
    continue
  fi
  echo "cross-check: cargo check -p strata --lib --target $t" >&2
  ZSTD_SYS_USE_PKG_CONFIG=1 PKG_CONFIG_ALLOW_CROSS=1 PKG_CONFIG_PATH="$stub" \
    cargo check -q -p strata --lib --target "$t"
done
