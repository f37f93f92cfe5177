#!/usr/bin/env bash
# Same-run comparison of two strata-bench builds (say, the previous commit's and this one's) on
# the seeds' main steps, to show that a change does not make the embedded engine slower. Each
# repetition runs both builds in turn (alternating which goes first), each step as its own
# process on a fresh DB of that build; prints, per step, both medians and the median of the
# per-repetition ratios new/old with their min and max.
#
#   bash bench/builds.sh OLD_BIN NEW_BIN [--reps 3] [--num 500000] [--duration 6] [--out DIR]
#
# Build the old binary from a worktree of the old commit, e.g.
#   git worktree add /tmp/old <commit> && (cd /tmp/old && cargo build --release -p strata-bench)
# Steps (16-byte keys, 100-byte values, snappy, 10 Bloom bits, 64 MiB fixed clock cache; each
# step its own seed, the same for both builds: a step replaying the key sequence of the one
# before it would read or overwrite keys in the order they were written):
# fillrandom (fresh DB), overwrite (--num writes), waitforcompaction (untimed), readrandom,
# seekrandom --seek_nexts=10, readwhilewriting with its writer at 2 MB/s. The read steps last
# --duration seconds. Wall-clock figures are noisy on a shared machine: for a repeatable cost,
# also count instructions (valgrind --tool=callgrind) on a short run of each build.
set -euo pipefail

if [ $# -lt 2 ]; then
  sed -n '2,17p' "$0" >&2
  exit 2
fi
old_bin=$1 new_bin=$2
shift 2
reps=3 num=500000 duration=6 out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --num) num="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) echo "bench/builds.sh: unknown argument '$1' (see the header of $0)" >&2; exit 2 ;;
  esac
done
for b in "$old_bin" "$new_bin"; do
  [ -x "$b" ] || { echo "bench/builds.sh: '$b' is not an executable strata-bench" >&2; exit 2; }
done
out="${out:-$(mktemp -d /tmp/strata-builds.XXXXXX)}"
mkdir -p "$out"
: > "$out/results.tsv"
# The cache is named explicitly: builds before the growing clock table read the default
# `hyper_clock_cache` as the fixed table, later ones as the growing one (as RocksDB 11 does).
common=(--num="$num" --key_size=16 --value_size=100 --compression_type=snappy --bloom_bits=10
  --cache_size=67108864 --cache_type=fixed_hyper_clock_cache)

# step LABEL BIN DB NAME FLAGS...: runs one step, appends "rep label step ops/s".
step() {
  local label=$1 bin=$2 db=$3 name=$4
  shift 4
  local line ops
  step_no=$((step_no + 1))
  line=$("$bin" --db="$db" "${common[@]}" --seed=$((1000 * rep + step_no)) "$@" 2>&1 | grep -E "^$name " | head -1 || true)
  ops=$(echo "$line" | sed -nE 's/.* ([0-9.]+) ops\/sec.*/\1/p')
  if [ -z "$ops" ]; then
    echo "bench/builds.sh: $label ($bin) printed no result line for $name" >&2
    exit 1
  fi
  printf '%s\t%s\t%s\t%s\n' "$rep" "$label" "$name" "$ops" | tee -a "$out/results.tsv"
}

for rep in $(seq 1 "$reps"); do
  order="old new"
  [ $((rep % 2)) -eq 0 ] && order="new old"
  for label in $order; do
    bin=$old_bin
    [ "$label" = new ] && bin=$new_bin
    db="$out/db-$label"
    rm -rf "$db"
    step_no=0
    step "$label" "$bin" "$db" fillrandom --benchmarks=fillrandom --use_existing_db=0
    # A fixed count, not a duration: the read steps must see the same data for both builds
    # (a faster writer would otherwise leave a larger LSM tree for its reads).
    step "$label" "$bin" "$db" overwrite --benchmarks=overwrite --use_existing_db=1 \
      --writes="$num"
    "$bin" --db="$db" "${common[@]}" --benchmarks=waitforcompaction --use_existing_db=1 \
      > /dev/null 2>&1
    step "$label" "$bin" "$db" readrandom --benchmarks=readrandom --use_existing_db=1 \
      --duration="$duration"
    step "$label" "$bin" "$db" seekrandom --benchmarks=seekrandom --seek_nexts=10 \
      --use_existing_db=1 --duration="$duration"
    step "$label" "$bin" "$db" readwhilewriting --benchmarks=readwhilewriting \
      --benchmark_write_rate_limit=2097152 --use_existing_db=1 --duration="$duration"
    rm -rf "$db"
  done
done

python3 - "$out/results.tsv" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(lambda: collections.defaultdict(dict))
for line in open(sys.argv[1]):
    rep, label, step, ops = line.rstrip("\n").split("\t")
    runs[step][label][int(rep)] = float(ops)
print("| step | old ops/s (median) | new ops/s (median) | new/old: median [min, max] of per-rep ratios |")
print("|---|---:|---:|---:|")
for step, by in runs.items():
    ratios = [by["new"][r] / by["old"][r] for r in by["new"] if r in by["old"]]
    print(f"| {step} | {statistics.median(by['old'].values()):,.0f} | "
          f"{statistics.median(by['new'].values()):,.0f} | "
          f"{statistics.median(ratios):.2f} [{min(ratios):.2f}, {max(ratios):.2f}] |")
PY
echo "results: $out/results.tsv" >&2
