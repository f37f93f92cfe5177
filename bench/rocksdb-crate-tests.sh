#!/usr/bin/env bash
# rust-rocksdb's own integration tests (its tests/ directory) built against Strata with only
# the dependency renamed, `rocksdb = { package = "strata", path = ... }`: per test file,
# whether it compiled, and the tests passed, failed and not run.
#
#   bash bench/rocksdb-crate-tests.sh --src DIR [--files "test_db test_iterator ..."]
#                                     [--work DIR] [--out DIR] [--test-threads N]
#
# DIR is a rust-rocksdb source tree at v0.25.0 (its tests/ directory and Cargo.toml; nothing
# is fetched here and nothing of it is committed):
#   git clone --depth 1 --branch v0.25.0 https://github.com/rust-rocksdb/rust-rocksdb /tmp/rr
# The tests are copied unedited into --work (default /tmp/strata-rocksdb-compat), a scratch
# crate whose only dependency on the engine is the renamed one; its target directory stays
# there between runs. The crate's dev-dependencies (bincode, pretty_assertions, tempfile,
# trybuild) come from crates.io. Output in --out (default bench/out/rocksdb-crate-<time>):
# <file>.build.log, <file>.log and summary.txt. Each test file gets at most 600 s to run.
# A file that does not compile counts all its `#[test]`s as not compiled.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

src=""
files=""
work=/tmp/strata-rocksdb-compat
out=""
threads=2
while [ $# -gt 0 ]; do
  case "$1" in
    --src) src=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --test-threads) threads=$2; shift 2 ;;
    -h|--help) sed -n '2,18p' "$0"; exit 0 ;;
    *) echo "rocksdb-crate-tests.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "rocksdb-crate-tests.sh: --src DIR is required (see --help)" >&2; exit 2; }
if [ ! -d "$src/tests" ] || ! grep -q '^name = "rocksdb"' "$src/Cargo.toml" 2>/dev/null; then
  echo "rocksdb-crate-tests.sh: skipped: $src is not a rust-rocksdb source tree (no tests/ or" \
    "Cargo.toml naming the rocksdb package)"
  exit 0
fi
src=$(cd "$src" && pwd)
out=${out:-$repo/bench/out/rocksdb-crate-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out" "$work"

# The scratch crate: the tests as they are, the engine under the crate's name.
rm -rf "$work/tests"
cp -r "$src/tests" "$work/tests"
cat >"$work/Cargo.toml" <<EOF
[package]
name = "rocksdb-compat-tests"
version = "0.0.0"
edition = "2021"
publish = false

[dependencies]
rocksdb = { package = "strata", path = "$repo/crates/strata" }

# rust-rocksdb's own features, with its defaults: its tests ask cfg!(feature = "zlib") and
# the like, meaning the features of the crate under test, which Strata's build always has.
[features]
default = ["snappy", "lz4", "zstd", "zlib", "bzip2"]
snappy = []
lz4 = []
zstd = []
zlib = []
bzip2 = []
multi-threaded-cf = []
jemalloc = []

[dev-dependencies]
bincode = "2"
pretty_assertions = "1"
tempfile = "3"
trybuild = "1"

[workspace]
EOF
mkdir -p "$work/src"
[ -f "$work/src/lib.rs" ] || : >"$work/src/lib.rs"

if [ -z "$files" ]; then
  files=$(cd "$work/tests" && ls test_*.rs | sed 's/\.rs$//' | tr '\n' ' ')
fi

summary=$out/summary.txt
printf '%-45s %-9s %6s %6s %6s %6s\n' file compiled tests passed failed ignored >"$summary"
tot_tests=0 tot_pass=0 tot_fail=0 tot_nc=0 tot_ign=0
for f in $files; do
  n=$(grep -c '#\[test\]' "$work/tests/$f.rs" || true)
  tot_tests=$((tot_tests + n))
  if ! (cd "$work" && CARGO_TARGET_DIR=$work/target cargo test --test "$f" --no-run) \
    >"$out/$f.build.log" 2>&1; then
    printf '%-45s %-9s %6s %6s %6s %6s\n' "$f" no "$n" 0 0 0 >>"$summary"
    tot_nc=$((tot_nc + n))
    continue
  fi
  # trybuild's compile-fail cases run cargo themselves, from the crate's directory.
  (cd "$work" && CARGO_TARGET_DIR=$work/target timeout 600 cargo test --test "$f" -- \
    --test-threads "$threads") >"$out/$f.log" 2>&1 || true
  line=$(grep -E '^test result:' "$out/$f.log" | tail -1 || true)
  p=$(sed -nE 's/.* ([0-9]+) passed.*/\1/p' <<<"$line")
  x=$(sed -nE 's/.* ([0-9]+) failed.*/\1/p' <<<"$line")
  i=$(sed -nE 's/.* ([0-9]+) ignored.*/\1/p' <<<"$line")
  p=${p:-0} x=${x:-0} i=${i:-0}
  if [ -z "$line" ]; then
    # The binary crashed or timed out: what did not report passing, failed.
    p=$(grep -cE '^test .* \.\.\. ok$' "$out/$f.log" || true)
    x=$((n - p))
  fi
  printf '%-45s %-9s %6s %6s %6s %6s\n' "$f" yes "$n" "$p" "$x" "$i" >>"$summary"
  tot_pass=$((tot_pass + p)) tot_fail=$((tot_fail + x)) tot_ign=$((tot_ign + i))
done
printf '%-45s %-9s %6s %6s %6s %6s\n' total "-$tot_nc" "$tot_tests" "$tot_pass" "$tot_fail" \
  "$tot_ign" >>"$summary"
echo "(compiled column of total: tests in files that did not compile, negated)" >>"$summary"
grep -hE '^test .* \.\.\. FAILED$' "$out"/*.log 2>/dev/null | sed 's/^test //; s/ \.\.\. FAILED$//' \
  >"$out/failed.txt" || true
cat "$summary"
echo "failed tests: $out/failed.txt; logs: $out"
