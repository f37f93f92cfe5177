#!/usr/bin/env bash
# The seeds' benchmark suite (the README's main job): builds strata-bench in release mode and
# runs, for every engine asked for, the sequence of the public benchmark pages in
# shared/seeds (RocksDB's benchmark.sh jobs, the read-modify-write page, LevelDB's
# fillsync): each step is one strata-bench process, like benchmark.sh.
#
#   bash bench/run.sh [--engines strata,rocksdb,sqlite,leveldb,kyoto,fjall,redb,db_bench]
#                     [--num N] [--duration S]
#                     [--threads T] [--value-size B] [--sync-writes N] [--out DIR] [--keep-db]
#                     [--job-id ID] [--styles leveled,universal,fifo,tiered]
#
# --styles runs the whole sequence once per compaction style (each engine in turn within a
# style; test names get a .<style> suffix unless only leveled runs): leveled as above,
# universal with benchmark.sh's COMPACTION_STYLE=universal settings (--num_levels=40, L0/run
# triggers 8/20/30, --universal_* at benchmark.sh's defaults), FIFO with a 1 GiB budget and
# intra-L0 compaction (db_bench's defaults), tiered (Strata's write-optimised style,
# --compaction_style=4 at its defaults; Strata only: other engines skip it).
#
# Engines other than strata need their cargo feature (rocksdb: a C++ toolchain and
# clang/libclang for bindgen; the first build of RocksDB takes tens of minutes; leveldb and
# kyoto: the system libraries bench/setup-peers.sh installs). The peers get what each can
# honour of the LSM settings below (leveldb: snappy, filters, write buffer; fjall: filters,
# write buffer, its own compression); the B-trees (sqlite, kyoto, redb) skip `compact`, and
# every peer skips mergerandom (no merge operator) and the non-leveled styles.
# Results: bench/out/<timestamp>/{report.tsv, relative_qps.md, relative_qps.txt,
# relative_qps.png (with a second engine), qps.png, steps.tsv, logs/}. report.tsv has
# benchmark.sh's columns in its order (+ engine, du_mb, message); each step runs under
# /usr/bin/time for its CPU seconds and peak RSS (left blank without /usr/bin/time).
set -euo pipefail
cd "$(dirname "$0")/.."

engines="strata"
num=1000000          # keys (16-byte keys, 100-byte values: ~110 MiB of user data)
duration=10          # seconds of each duration-bounded step
threads=1            # reader/writer threads of the multi-threaded steps
value_size=100
sync_writes=2000     # fillsync: synced writes per run
write_rate=$((2 << 20)) # readwhilewriting: background writer limit (bytes/s), as benchmark_compare.sh
out=""
keep_db=0
job_id="${JOB_ID:-}"
styles="leveled"

while [ $# -gt 0 ]; do
  case "$1" in
    --engines) engines="$2"; shift 2 ;;
    --engines=*) engines="${1#*=}"; shift ;;
    --num) num="$2"; shift 2 ;;
    --num=*) num="${1#*=}"; shift ;;
    --duration) duration="$2"; shift 2 ;;
    --duration=*) duration="${1#*=}"; shift ;;
    --threads) threads="$2"; shift 2 ;;
    --threads=*) threads="${1#*=}"; shift ;;
    --value-size) value_size="$2"; shift 2 ;;
    --value-size=*) value_size="${1#*=}"; shift ;;
    --sync-writes) sync_writes="$2"; shift 2 ;;
    --sync-writes=*) sync_writes="${1#*=}"; shift ;;
    --out) out="$2"; shift 2 ;;
    --out=*) out="${1#*=}"; shift ;;
    --keep-db) keep_db=1; shift ;;
    --job-id) job_id="$2"; shift 2 ;;
    --job-id=*) job_id="${1#*=}"; shift ;;
    --styles) styles="$2"; shift 2 ;;
    --styles=*) styles="${1#*=}"; shift ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    [0-9]*) num="$1"; shift ;; # the placeholder script's positional NUM
    *) echo "bench/run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

features=()
IFS=',' read -r -a engine_list <<< "$engines"
for e in "${engine_list[@]}"; do
  case "$e" in
    strata) ;;
    rocksdb|sqlite|leveldb|kyoto|fjall|redb) features+=("$e") ;;
    db_bench)
      # RocksDB's own db_bench from Debian's rocksdb-tools (RocksDB 7.8.3, built with
      # assertions on, so slower than a release build): a quick reference run when the
      # rocksdb crate is not built. Install with `apt-get install -y rocksdb-tools`.
      command -v db_bench >/dev/null || {
        echo "bench/run.sh: db_bench not found (apt-get install -y rocksdb-tools)" >&2; exit 2; } ;;
    *) echo "bench/run.sh: unknown engine '$e' (strata, rocksdb, sqlite, leveldb, kyoto, fjall, redb, db_bench)" >&2; exit 2 ;;
  esac
done
source bench/features.sh
strata_bench_features "${features[@]}"

echo "== building strata-bench (release${feature_args[*]:+, ${feature_args[*]}})" >&2
cargo build --release -p strata-bench --bins "${feature_args[@]}"
target_dir="${CARGO_TARGET_DIR:-target}"
bin="$target_dir/release/strata-bench"
report_bin="$target_dir/release/strata-bench-report"

stamp="$(date -u +%Y%m%d-%H%M%S)"
out="${out:-bench/out/$stamp}"
mkdir -p "$out/logs"
out="$(cd "$out" && pwd)"
steps="$out/steps.tsv"
printf '# engine\ttest\tbench\tlog\tdu_kb\ttime\tjob_id\tgithash\n' > "$steps"
seed="$(date +%s)"
githash="$(git rev-parse --short=10 HEAD 2>/dev/null || true)"
# benchmark.sh's get_cmd: `/usr/bin/time -f '%e %U %S'`, plus %M (peak RSS, KiB).
timer=()
if [ -x /usr/bin/time ]; then
  timer=(/usr/bin/time -f '%e %U %S %M' -o)
else
  echo "bench/run.sh: no /usr/bin/time: u_cpu, s_cpu and rss stay blank (apt-get install -y time)" >&2
fi

# Flags every engine gets, so that they are configured alike (each engine honours all it gets:
# strata-bench rejects flags an engine cannot honour).
common=(
  --num="$num" --key_size=16 --value_size="$value_size" --compression_ratio=0.5
  --cache_size=$((64 << 20)) --histogram=1
)
# LSM engines (strata, rocksdb) also get the same LSM configuration.
lsm=(
  --compression_type=snappy --bloom_bits=10 --write_buffer_size=$((32 << 20))
  --max_write_buffer_number=2 --max_background_jobs=2 --level_compaction_dynamic_level_bytes=true
)
step_no=0
IFS=',' read -r -a style_list <<< "$styles"
for style in "${style_list[@]}"; do
  case "$style" in
    leveled|universal|fifo|tiered) ;;
    *) echo "bench/run.sh: unknown style '$style' (leveled, universal, fifo, tiered)" >&2; exit 2 ;;
  esac
done
style_flags=() # set per style below; LSM engines only
suffix=""

# The flags of a compaction style (benchmark.sh's univ_const_params and l0_config for
# universal; db_bench's FIFO defaults with benchmark.sh's leveled L0 triggers).
set_style() {
  case "$1" in
    leveled) style_flags=(--compaction_style=0) ;;
    universal) style_flags=(--compaction_style=1 --num_levels=40
      --universal_compression_size_percent=-1 --universal_min_merge_width=2
      --universal_max_merge_width=20 --universal_size_ratio=1
      --universal_max_size_amplification_percent=200 --universal_allow_trivial_move=false
      --level0_file_num_compaction_trigger=8 --level0_slowdown_writes_trigger=20
      --level0_stop_writes_trigger=30) ;;
    fifo) style_flags=(--compaction_style=2 --fifo_compaction_max_table_files_size_mb=1024
      --fifo_compaction_allow_compaction=true) ;;
    tiered) style_flags=(--compaction_style=4 --num_levels=40) ;;
  esac
  if [ "$styles" = leveled ]; then suffix=""; else suffix=".$1"; fi
}

run_step() { # engine test bench extra-flags...
  local engine="$1" test="$2$suffix" bench="$3"; shift 3
  # Each step gets its own seed (as benchmark.sh's per-job epoch), the same for every engine:
  # a reader must not replay the exact key sequence of the writer before it.
  step_no=$((step_no + 1))
  local step_seed=$((seed + step_no))
  local db="$out/db/$engine$suffix" log="logs/$engine.$test.log"
  echo "== $engine: $test" >&2
  # The step before left its writes in the page cache: written out first, so that this step's
  # syncs and flushes do not queue behind another engine's writeback.
  sync
  local engine_flags=("${common[@]}")
  case "$engine" in
    strata|rocksdb|db_bench) engine_flags+=("${lsm[@]}" "${style_flags[@]}") ;;
    leveldb) engine_flags+=(--compression_type=snappy --bloom_bits=10 --write_buffer_size=$((32 << 20))) ;;
    fjall) engine_flags+=(--bloom_bits=10 --write_buffer_size=$((32 << 20)) --max_background_jobs=2) ;;
  esac
  local cmd=("$bin" --engine="$engine")
  if [ "$engine" = db_bench ]; then cmd=(db_bench); fi
  local time_file="" hash="$githash"
  if [ "$engine" = db_bench ]; then hash=""; fi # not built from this repository
  if [ ${#timer[@]} -gt 0 ]; then
    time_file="$log.time"
    cmd=("${timer[@]}" "$out/$time_file" "${cmd[@]}")
  fi
  if ! "${cmd[@]}" --db="$db" "${engine_flags[@]}" --seed="$step_seed" \
      --benchmarks="$bench,stats" "$@" \
      > "$out/$log" 2>&1; then
    echo "   (failed: see $out/$log)" >&2
  fi
  grep -E "^$bench " "$out/$log" | tail -1 >&2 || true
  local du_kb=""
  if [ -d "$db" ]; then du_kb="$(du -sk "$db" | cut -f1)"; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$engine" "$test" "$bench" "$log" "$du_kb" \
    "$time_file" "$job_id" "$hash" >> "$steps"
}

for style in "${style_list[@]}"; do
set_style "$style"
for engine in "${engine_list[@]}"; do
  case "$engine" in strata|rocksdb|db_bench) lsm_engine=1 ;; *) lsm_engine=0 ;; esac
  if [ "$style" != leveled ] && [ "$lsm_engine" = 0 ]; then continue; fi # no LSM styles
  if [ "$style" = tiered ] && [ "$engine" != strata ]; then continue; fi # Strata's own style
  # SQLite and the peers have no WAL-less writes: their load steps keep their own logs.
  nowal=(--disable_wal=1)
  if [ "$lsm_engine" = 0 ]; then nowal=(); fi
  # Load (seed 000 bulkload / benchmark.sh fillseq_disable_wal), then random load with the WAL.
  run_step "$engine" fillseq.wal_disabled fillseq "${nowal[@]}"
  run_step "$engine" fillrandom fillrandom
  # On the DB fillrandom left: overwrite, a full compaction, point reads, scans, reads under a
  # rate-limited writer.
  run_step "$engine" overwrite overwrite --use_existing_db=1 --duration="$duration"
  # Drain the LSM to one shape for every engine before the reads (benchmark.sh's bulkload
  # `compact` job; benchmark_compare.sh drains with flush_mt_l0). Without it the reads measure
  # where each engine's flush/compaction cycle happened to stop: 0 to 4 L0 files and a
  # memtable, which moves a seek's cost by 2-5x.
  if [ "$engine" != sqlite ] && [ "$engine" != kyoto ] && [ "$engine" != redb ]; then # B-trees: nothing to drain
    run_step "$engine" compact compact --use_existing_db=1
  fi
  run_step "$engine" readrandom readrandom --use_existing_db=1 --threads="$threads" --duration="$duration"
  run_step "$engine" readseq readseq --use_existing_db=1
  run_step "$engine" fwdrange seekrandom --use_existing_db=1 --threads="$threads" \
    --seek_nexts=10 --reverse_iterator=false --duration="$duration"
  run_step "$engine" revrange seekrandom --use_existing_db=1 --threads="$threads" \
    --seek_nexts=10 --reverse_iterator=true --duration="$duration"
  run_step "$engine" readwhilewriting readwhilewriting --use_existing_db=1 --threads="$threads" \
    --benchmark_write_rate_limit="$write_rate" --duration="$duration"
  # Read-modify-write (seed 001): 8-byte counters, no WAL, fresh DB each.
  run_step "$engine" updaterandom updaterandom --value_size=8 "${nowal[@]}" --duration="$duration"
  if [ "$lsm_engine" = 1 ]; then # SQLite and the peers have no merge operator
    run_step "$engine" mergerandom mergerandom --value_size=8 "${nowal[@]}" \
      --merge_operator=uint64add --duration="$duration"
  fi
  # Synchronous writes (LevelDB's fillsync): a fixed number of synced writes.
  run_step "$engine" fillsync fillsync --writes="$sync_writes"
  if [ "$keep_db" = 0 ]; then rm -rf "$out/db/$engine$suffix"; fi
  step_no=0
done
done
if [ "$keep_db" = 0 ]; then rmdir "$out/db" 2>/dev/null || true; fi

"$report_bin" "$out" >&2
echo
echo "== $out/report.tsv"
column -t -s $'\t' "$out/report.tsv" 2>/dev/null || cat "$out/report.tsv"
echo
echo "== $out/relative_qps.txt"
cat "$out/relative_qps.txt"
