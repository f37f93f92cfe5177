#!/usr/bin/env bash
# Compaction styles compared on write amplification, space and reads (issue #16's table):
# for each repetition, every configuration in turn (the order reversed on even repetitions),
# each on a fresh DB:
#   fillrandom, settle, stats, overwrite (--num writes), settle, stats   (one process)
#   readrandom for --duration seconds; seekrandom + 10 next (fwdrange) for --duration seconds
# Configurations: leveled and universal (benchmark.sh's univ_const_params) for strata and
# rocksdb, and Strata's tiered style (--compaction_style=4) at fan-in 8 (the default) and 12;
# on request also universal_inc (--universal_incremental) and tiered8_skew (tiered with
# --tiered_skewed_filter_bits). readrandom runs with --statistics (bloom filter counters).
#
#   bash bench/styles.sh [--num N] [--reps R] [--duration S] [--out DIR] [--db-dir DIR]
#                        [--engines strata,rocksdb] [--styles leveled,universal,tiered8,tiered12]
#                        [--lock FILE] [-- extra strata-bench flags]
#
# --engines/--styles pick a subset (tiered is Strata's only). RocksDB needs the rocksdb feature
# (built here when rocksdb is among the engines). --lock runs each strata-bench process under
# `flock FILE` (a machine shared with builds). Flags after `--` go to every strata-bench run. Writes DIR/results.tsv, one row per configuration and repetition:
# ops/sec of each step; W-Amp of the fill phase, of the overwrite phase alone and of both
# (each engine's `Interval compaction: X GB write` over its `Flush(GB)`, flushes included);
# stall percent; du of the settled DB in KiB. Logs stay in DIR/logs. Run each repetition
# under the machine's benchmark lock if it is shared; each takes about 5 minutes at 2M keys.
set -euo pipefail
cd "$(dirname "$0")/.."

num=2000000
reps=3
duration=4
out=""
db_dir=""
engines="strata,rocksdb"
styles="leveled,universal,tiered8,tiered12"
lock=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --num) num="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --db-dir) db_dir="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --styles) styles="$2"; shift 2 ;;
    --lock) lock="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "bench/styles.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

case ",$engines," in
  *,rocksdb,*) cargo build --release -p strata-bench --features rocksdb ;;
  *) cargo build --release -p strata-bench ;;
esac
bin="${CARGO_TARGET_DIR:-target}/release/strata-bench"
out="${out:-bench/out/styles-$(date -u +%Y%m%d-%H%M%S)}"
db_dir="${db_dir:-$out/db}"
mkdir -p "$out/logs" "$db_dir"

common=(--num="$num" --key_size=16 --value_size=100 --compression_ratio=0.5
  --cache_size=$((64 << 20)) --compression_type=snappy --bloom_bits=10
  --write_buffer_size=$((8 << 20)) --target_file_size_base=$((8 << 20))
  --max_bytes_for_level_base=$((32 << 20)) --max_write_buffer_number=2 --max_background_jobs=2
  --level_compaction_dynamic_level_bytes=true --histogram=1 --seed=42)
universal=(--compaction_style=1 --num_levels=40 --universal_compression_size_percent=-1
  --universal_min_merge_width=2 --universal_max_merge_width=20 --universal_size_ratio=1
  --universal_max_size_amplification_percent=200 --universal_allow_trivial_move=false
  --level0_file_num_compaction_trigger=8 --level0_slowdown_writes_trigger=20
  --level0_stop_writes_trigger=30)

style_flags() {
  case "$1" in
    leveled) echo --compaction_style=0 ;;
    universal) echo "${universal[@]}" ;;
    tiered8) echo --compaction_style=4 --num_levels=40 ;;
    tiered12) echo --compaction_style=4 --num_levels=40 --tiered_fan_in=12 --tiered_max_sorted_runs=24 ;;
    universal_inc) echo "${universal[@]}" --universal_incremental=true ;;
    tiered8_skew) echo --compaction_style=4 --num_levels=40 --tiered_skewed_filter_bits=true ;;
  esac
}

# Runs strata-bench with the arguments, under the lock when one was given.
bench() {
  if [ -n "$lock" ]; then flock "$lock" "$bin" "$@" "${extra[@]}"; else "$bin" "$@" "${extra[@]}"; fi
}

# ops/sec of benchmark $2 in log $1.
ops() { awk -v b="$2" '$1 == b { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec") v = $i } END { print v }' "$1"; }

# W-Amp of the two stats dumps of a write log: fill, overwrite alone, both.
wamp() {
  awk '
    /^Flush\(GB\): cumulative/ { gsub(",", "", $3); cum = $3; fl[++nf] = $5 }
    /^Interval compaction:/ { cw[++nc] = $3 }
    /Cumulative stall:/ { stall = $(NF - 1) }
    END {
      printf "%.2f\t%.2f\t%.2f\t%s\n", cw[1] / fl[1], cw[2] / fl[2], (cw[1] + cw[2]) / cum, stall
    }' "$1"
}

configs=()
for style in ${styles//,/ }; do
  case "$style" in
    leveled | universal | universal_inc | tiered8 | tiered12 | tiered8_skew) ;;
    *) echo "bench/styles.sh: unknown style '$style' (leveled, universal, universal_inc, tiered8, tiered12, tiered8_skew)" >&2; exit 2 ;;
  esac
  for engine in ${engines//,/ }; do
    case "$engine" in
      strata) ;;
      rocksdb) case "$style" in tiered*) continue ;; esac ;;
      *) echo "bench/styles.sh: unknown engine '$engine' (strata, rocksdb)" >&2; exit 2 ;;
    esac
    configs+=("$style $engine")
  done
done
printf 'rep\tstyle\tengine\tfillrandom\toverwrite\treadrandom\tfwdrange\tw_amp_fill\tw_amp_overwrite\tw_amp_both\tstall_pct\tdu_kb\n' \
  > "$out/results.tsv"
for rep in $(seq 1 "$reps"); do
  order=("${configs[@]}")
  if [ $((rep % 2)) = 0 ]; then
    order=()
    for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[$i]}"); done
  fi
  for c in "${order[@]}"; do
    read -r style engine <<< "$c"
    read -r -a sf <<< "$(style_flags "$style")"
    db="$db_dir/$engine"
    rm -rf "$db"
    log="$out/logs/$engine.$style.$rep"
    echo "== rep $rep: $engine $style" >&2
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" \
      --benchmarks=fillrandom,waitforcompaction,stats,overwrite,waitforcompaction,stats > "$log.write.log" 2>&1
    du_kb="$(du -sk "$db" | cut -f1)"
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --use_existing_db=1 \
      --duration="$duration" --statistics=1 --benchmarks=readrandom,stats > "$log.readrandom.log" 2>&1
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --use_existing_db=1 \
      --duration="$duration" --seek_nexts=10 --reverse_iterator=false \
      --benchmarks=seekrandom,stats > "$log.fwdrange.log" 2>&1
    rm -rf "$db"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$style" "$engine" \
      "$(ops "$log.write.log" fillrandom)" "$(ops "$log.write.log" overwrite)" \
      "$(ops "$log.readrandom.log" readrandom)" "$(ops "$log.fwdrange.log" seekrandom)" \
      "$(wamp "$log.write.log")" "$du_kb" >> "$out/results.tsv"
  done
done
rmdir "$db_dir" 2>/dev/null || true
column -t -s $'\t' "$out/results.tsv"
