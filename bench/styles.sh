#!/usr/bin/env bash
# Compaction styles compared on write amplification, space and reads (issue #16's table):
# for each repetition, every configuration in turn (the order reversed on even repetitions),
# each on a fresh DB:
#   fillrandom, settle, stats; then overwrite (--num writes), settle, stats (a second process,
#   so each phase's --statistics counters are its own)
#   readrandom for --duration seconds; seekrandom + 10 next (fwdrange) for --duration seconds;
#   compact (everything into one run: the live data, for space amplification)
# Configurations: leveled and universal (benchmark.sh's univ_const_params) for strata and
# rocksdb, and Strata's tiered style (--compaction_style=4): tieredN runs fan-in N with a budget
# of 2N sorted runs (tiered8 is the engine's default; tiered4,tiered8,tiered12,tiered16 sweeps it);
# on request also universal_inc (--universal_incremental) and tiered8_skew (tiered with
# --tiered_skewed_filter_bits). readrandom runs with --statistics (bloom filter counters).
#
#   bash bench/styles.sh [--num N] [--reps R] [--duration S] [--out DIR] [--db-dir DIR]
#                        [--engines strata,rocksdb] [--styles leveled,universal,tiered8,tiered12]
#                        [--lock FILE] [-- extra strata-bench flags]
#
# --engines/--styles pick a subset (tiered is Strata's only). RocksDB needs the rocksdb feature
# (built here when rocksdb is among the engines). --lock runs each strata-bench process under
# `flock FILE` (a machine shared with builds). Flags after `--` go to every strata-bench run.
#
# Writes DIR/results.tsv, one row per configuration and repetition: ops/sec of each step;
# W-Amp of the fill phase, of the overwrite phase alone and of both ((flush + compaction
# bytes written) / flush bytes, from each engine's exact --statistics counters
# rocksdb.flush.write.bytes and rocksdb.compact.write.bytes);
# stall percent of each phase; du of the settled DB and of the same DB compacted into one run
# (the live data) in KiB and their ratio (space amplification); per read of readrandom, the
# filter checks that answered "maybe" (true and false positives) and "no". Logs stay in
# DIR/logs. A repetition takes about 5 minutes at 2M keys.
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
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "bench/styles.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

source bench/features.sh
strata_bench_features ${engines//,/ }
cargo build --release -p strata-bench "${feature_args[@]}"
bin="${CARGO_TARGET_DIR:-target}/release/strata-bench"
out="${out:-bench/out/styles-$(date -u +%Y%m%d-%H%M%S)}"
db_dir="${db_dir:-$out/db}"
mkdir -p "$out/logs" "$db_dir"

common=(--num="$num" --key_size=16 --value_size=100 --compression_ratio=0.5
  --cache_size=$((64 << 20)) --compression_type=snappy --bloom_bits=10
  --write_buffer_size=$((8 << 20)) --target_file_size_base=$((8 << 20))
  --max_bytes_for_level_base=$((32 << 20)) --max_write_buffer_number=2 --max_background_jobs=2
  --level_compaction_dynamic_level_bytes=true --histogram=1)
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
    universal_inc) echo "${universal[@]}" --universal_incremental=true --max_compaction_bytes=$((32 << 20)) ;;
    tiered8_skew) echo --compaction_style=4 --num_levels=40 --tiered_skewed_filter_bits=true ;;
    tiered*) local n="${1#tiered}"
      echo --compaction_style=4 --num_levels=40 --tiered_fan_in="$n" --tiered_max_sorted_runs=$((2 * n)) ;;
  esac
}

# Runs strata-bench with the arguments, under the lock when one was given, after a `sync`
# (the run before left its writes in the page cache; this one's flushes should not queue
# behind that writeback).
bench() {
  sync
  if [ -n "$lock" ]; then flock "$lock" "$bin" "$@" "${extra[@]}"; else "$bin" "$@" "${extra[@]}"; fi
}

# ops/sec of benchmark $2 in log $1.
ops() { awk -v b="$2" '$1 == b { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec") v = $i } END { print v }' "$1"; }

# W-Amp of the fill log $1, of the overwrite log $2, of both; then each one's stall percent.
wamp() {
  awk '
    FNR == 1 { n++ }
    $1 == "rocksdb.flush.write.bytes" { f[n] = $NF }
    $1 == "rocksdb.compact.write.bytes" { c[n] = $NF }
    /Cumulative stall:/ { st[n] = $(NF - 1) }
    END {
      printf "%.3f\t%.3f\t%.3f\t%s\t%s\n", (f[1] + c[1]) / f[1], (f[2] + c[2]) / f[2],
        (f[1] + c[1] + f[2] + c[2]) / (f[1] + f[2]), st[1], st[2]
    }' "$1" "$2"
}

# Per read of the readrandom log $1: filter checks that said "maybe", and that said no.
filter() {
  awk '
    $1 == "rocksdb.number.keys.read" { r = $NF }
    $1 == "rocksdb.bloom.filter.full.positive" { p = $NF }
    $1 == "rocksdb.bloom.filter.useful" { u = $NF }
    END { if (r > 0) printf "%.3f\t%.3f\n", p / r, u / r; else printf "-\t-\n" }' "$1"
}

configs=()
for style in ${styles//,/ }; do
  case "$style" in
    leveled | universal | universal_inc | tiered8_skew) ;;
    tiered[0-9]*)
      n="${style#tiered}"
      case "$n" in
        *[!0-9]*) echo "bench/styles.sh: style '$style': expected tiered<fan-in>, e.g. tiered4 or tiered12" >&2; exit 2 ;;
      esac
      if [ "$n" -lt 2 ]; then echo "bench/styles.sh: style '$style': the fan-in must be at least 2" >&2; exit 2; fi ;;
    *) echo "bench/styles.sh: unknown style '$style' (leveled, universal, universal_inc, tiered<fan-in> such as tiered8, tiered8_skew)" >&2; exit 2 ;;
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
printf 'rep\tstyle\tengine\tfillrandom\toverwrite\treadrandom\tfwdrange\tw_amp_fill\tw_amp_overwrite\tw_amp_both\tstall_pct_fill\tstall_pct_overwrite\tdu_kb\tlive_kb\tspace_amp\tfilter_maybe_per_read\tfilter_no_per_read\n' \
  > "$out/results.tsv"
for rep in $(seq 1 "$reps"); do
  order=("${configs[@]}")
  if [ $((rep % 2)) = 0 ]; then
    order=()
    for ((i = ${#configs[@]} - 1; i >= 0; i--)); do order+=("${configs[$i]}"); done
  fi
  # Each step its own seed, the same for every configuration of the repetition: a step
  # replaying the key sequence of the one before it would overwrite or read keys in the order
  # they were written, which decides where in the tree the keys it reads are.
  seed=$((1000 * rep))
  for c in "${order[@]}"; do
    read -r style engine <<< "$c"
    read -r -a sf <<< "$(style_flags "$style")"
    db="$db_dir/$engine"
    rm -rf "$db"
    log="$out/logs/$engine.$style.$rep"
    echo "== rep $rep: $engine $style" >&2
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --statistics=1 \
      --seed=$((seed + 1)) --benchmarks=fillrandom,waitforcompaction,stats > "$log.fill.log" 2>&1
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --statistics=1 \
      --seed=$((seed + 2)) --use_existing_db=1 --benchmarks=overwrite,waitforcompaction,stats > "$log.overwrite.log" 2>&1
    du_kb="$(du -sk "$db" | cut -f1)"
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --use_existing_db=1 \
      --duration="$duration" --statistics=1 --seed=$((seed + 3)) --benchmarks=readrandom,stats > "$log.readrandom.log" 2>&1
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --use_existing_db=1 \
      --duration="$duration" --seek_nexts=10 --reverse_iterator=false --seed=$((seed + 4)) \
      --benchmarks=seekrandom,stats > "$log.fwdrange.log" 2>&1
    bench --engine="$engine" --db="$db" "${common[@]}" "${sf[@]}" --use_existing_db=1 \
      --benchmarks=compact > "$log.compact.log" 2>&1
    live_kb="$(du -sk "$db" | cut -f1)"
    rm -rf "$db"
    printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$style" "$engine" \
      "$(ops "$log.fill.log" fillrandom)" "$(ops "$log.overwrite.log" overwrite)" \
      "$(ops "$log.readrandom.log" readrandom)" "$(ops "$log.fwdrange.log" seekrandom)" \
      "$(wamp "$log.fill.log" "$log.overwrite.log")" "$du_kb" "$live_kb" \
      "$(awk -v a="$du_kb" -v b="$live_kb" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }')" \
      "$(filter "$log.readrandom.log")" >> "$out/results.tsv"
  done
done
rmdir "$db_dir" 2>/dev/null || true
column -t -s $'\t' "$out/results.tsv"
