#!/usr/bin/env bash
# benchmark.sh's bulkload step (fillrandom with its `params_bulkload` flags: 20 + 400 bytes,
# zstd, 128 MiB write buffers, eight of them, the WAL and automatic compactions off, one
# thread) for Strata with the skiplist, Strata with the vector memtable and RocksDB with its
# vector memtable, interleaved: each repetition runs the three, in an order that rotates.
# Prints one line per run (the step's db_bench result line) and the ratios to RocksDB.
#
#   bash bench/bulkload.sh [--num 2000000] [--reps 3] [--bin target/release/strata-bench]
#                          [--db /tmp/strata-bulkload]
#
# The binary needs the `rocksdb` feature; the set the other scripts build (bench/features.sh):
#   source bench/features.sh; strata_bench_features rocksdb
#   cargo build --release -p strata-bench "${feature_args[@]}"
set -euo pipefail
num=2000000 reps=3 bin=target/release/strata-bench db=/tmp/strata-bulkload
while [ $# -gt 0 ]; do
  case "$1" in
    --num) num="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --db) db="$2"; shift 2 ;;
    *) echo "bench/bulkload.sh: unknown argument $1 (expected --num, --reps, --bin, --db)" >&2; exit 2 ;;
  esac
done
[ -x "$bin" ] || { echo "bench/bulkload.sh: no strata-bench at $bin (build it with --features rocksdb)" >&2; exit 2; }
m=1048576
flags=(--benchmarks=fillrandom --use_existing_db=0 --disable_auto_compactions=1 --sync=0
  --max_background_jobs=16 --max_write_buffer_number=8 --allow_concurrent_memtable_write=false
  --level0_file_num_compaction_trigger=$((10 * m)) --level0_slowdown_writes_trigger=$((10 * m))
  --level0_stop_writes_trigger=$((10 * m)) --threads=1 --disable_wal=1 --num="$num"
  --key_size=20 --value_size=400 --block_size=8192 --cache_size=$((1024 * m))
  --compression_type=zstd --compression_ratio=0.5 --write_buffer_size=$((128 * m))
  --target_file_size_base=$((128 * m)) --max_bytes_for_level_base=$((1024 * m)) --bloom_bits=10
  --open_files=-1 --progress_reports=false)
configs=("strata skip_list" "strata vector" "rocksdb vector")
declare -A ops
for rep in $(seq 1 "$reps"); do
  for i in "${!configs[@]}"; do
    c="${configs[$(((i + rep) % ${#configs[@]}))]}"
    read -r engine rep_name <<<"$c"
    rm -rf "$db"
    line=$("$bin" --engine="$engine" --memtablerep="$rep_name" --db="$db" --seed=$((1000 + rep)) \
      "${flags[@]}" 2>&1 | grep -E '^fillrandom ' || true)
    if [ -z "$line" ]; then
      echo "bench/bulkload.sh: $engine --memtablerep=$rep_name printed no result" >&2; exit 1
    fi
    echo "rep $rep  $engine $rep_name  $line"
    ops["$rep $engine $rep_name"]=$(sed -E 's/.* ([0-9]+) ops\/sec.*/\1/' <<<"$line")
  done
done
rm -rf "$db"
for c in "strata skip_list" "strata vector"; do
  ratios=()
  for rep in $(seq 1 "$reps"); do
    ratios+=("$(awk -v a="${ops["$rep $c"]}" -v b="${ops["$rep rocksdb vector"]}" 'BEGIN { printf "%.3f", a / b }')")
  done
  echo "$c / rocksdb vector, per repetition: ${ratios[*]}"
done
