#!/usr/bin/env bash
# randomtransaction on Strata and RocksDB in one run, engines interleaved: for each kind of
# transaction (--transaction_db, --optimistic_transaction_db) and thread count, each
# repetition runs both engines in turn (alternating which goes first), each on a fresh DB for
# --duration seconds; prints per step both engines' median ops/s and the median, min and max of
# the per-repetition ratios strata/rocksdb, and keeps every run's output.
#
#   bash bench/transactions.sh [--reps 3] [--threads "1 4"] [--num 100000] [--sets 5]
#                              [--duration 10] [--bin PATH] [--out DIR]
#
# --bin: a strata-bench built with the `rocksdb` feature (default: built here, release). The
# workload is db_bench's randomtransaction (docs/db_bench.md §5.11) with --transaction_sets
# sets over --num keys; the other flags are the engines' defaults except a 64 MiB block cache
# and 10 Bloom bits for both.
set -euo pipefail

die() { echo "bench/transactions.sh: $*" >&2; exit 2; }
reps=3 threads="1 4" num=100000 sets=5 duration=10 bin="" out=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --num) num="$2"; shift 2 ;;
    --sets) sets="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    *) die "unknown argument '$1' (see the header of $0)" ;;
  esac
done
repo="$(cd "$(dirname "$0")/.." && pwd)"
if [ -z "$bin" ]; then
  source "$repo/bench/features.sh"
  strata_bench_features rocksdb
  (cd "$repo" && cargo build --release -p strata-bench --bin strata-bench "${feature_args[@]}") >&2
  bin="$repo/target/release/strata-bench"
fi
[ -x "$bin" ] || die "'$bin' is not an executable strata-bench"
"$bin" --engine=rocksdb --benchmarks=crc32c --num=1 > /dev/null 2>&1 ||
  die "$bin has no RocksDB engine: build it with --features rocksdb"
out="${out:-$(mktemp -d /tmp/strata-transactions.XXXXXX)}"
mkdir -p "$out"
: > "$out/results.tsv"
common=(--benchmarks=randomtransaction --num="$num" --transaction_sets="$sets"
  --duration="$duration" --cache_size=67108864 --bloom_bits=10 --seed=7)

run() { # rep engine mode threads
  local rep=$1 engine=$2 mode=$3 t=$4 db="$out/db" log line ops
  rm -rf "$db"
  log="$out/$mode.t$t.$engine.r$rep.log"
  "$bin" --engine="$engine" --db="$db" --"$mode"=true --threads="$t" "${common[@]}" > "$log" 2>&1 ||
    die "$engine $mode t$t failed; see $log"
  line=$(grep -E '^randomtransaction ' "$log" | head -1)
  ops=$(echo "$line" | sed -nE 's/.* ([0-9.]+) ops\/sec.*/\1/p')
  [ -n "$ops" ] || die "no result line in $log"
  printf '%s\t%s\t%s\t%s\t%s\n' "$rep" "$mode" "$t" "$engine" "$ops" | tee -a "$out/results.tsv"
}

for rep in $(seq 1 "$reps"); do
  for t in $threads; do
    for mode in transaction_db optimistic_transaction_db; do
      if [ $((rep % 2)) = 1 ]; then order="strata rocksdb"; else order="rocksdb strata"; fi
      for engine in $order; do run "$rep" "$engine" "$mode" "$t"; done
    done
  done
done
rm -rf "$out/db"

echo
printf '%-28s %12s %12s %8s %8s %8s\n' step strata rocksdb ratio min max
python3 - "$out/results.tsv" <<'EOF'
import statistics, sys
from collections import defaultdict
runs = defaultdict(dict)
for line in open(sys.argv[1]):
    rep, mode, t, engine, ops = line.split()
    runs[(mode, int(t))].setdefault(rep, {})[engine] = float(ops)
for (mode, t), reps in sorted(runs.items()):
    s = [r["strata"] for r in reps.values()]
    k = [r["rocksdb"] for r in reps.values()]
    ratios = [r["strata"] / r["rocksdb"] for r in reps.values()]
    print(f"{mode + ' t' + str(t):<28} {statistics.median(s):>12.0f} {statistics.median(k):>12.0f} "
          f"{statistics.median(ratios):>8.2f} {min(ratios):>8.2f} {max(ratios):>8.2f}")
EOF
echo "runs: $out" >&2
