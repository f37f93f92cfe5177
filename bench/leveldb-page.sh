#!/usr/bin/env bash
# LevelDB's benchmark page (Google, July 2011; seed 003) for every engine in one run:
# Strata, LevelDB, Kyoto Cabinet TreeDB, SQLite, RocksDB, fjall and redb, through strata-bench
# (one key and value generator: 16-byte keys, 100-byte values that compress to half), each
# engine configured as the page configures it, the medians of --reps runs with the engines
# interleaved, written as leveldb_page.md in the page's layout (its own figures quoted beside
# ours) plus leveldb_page.png.
#
#   bash bench/leveldb-page.sh [--out DIR] [--quick] [--reps N] [--num N]
#                              [--engines strata,leveldb,kyoto,sqlite,rocksdb,fjall,redb]
#
# The page's sections, one group of strata-bench steps each (every step its own process,
# as bench/run.sh; a group starts from an empty DB and its DB is removed after it):
#   baseline    4 MB of memory (LSM engines: 2 MB write buffer + 2 MB cache, as the page
#               gives LevelDB; B-trees: a 4 MB cache), asynchronous writes, light compression
#               (snappy; TreeDB: LZO; fjall: its own policy): fillseq; fillrandom, overwrite,
#               readrandom, readseq on the DB that leaves (LevelDB's db_bench order)
#   large       1,000 values of 100,000 bytes: fillseq, fillrandom
#   batch       1,000 batches of 1,000: fillseq and fillrandom with --batch_size=1000
#   sync        10,000 synchronous writes (--sync: LevelDB's WriteOptions.sync, TreeDB's
#               OAUTOSYNC, SQLite's synchronous=FULL, ...): fillseq, fillrandom
#   nocomp      compression off: fillseq, fillrandom
#   bigmem      128 MB (LSM: 120 MB write buffer + 8 MB cache; B-trees: 128 MB cache)
#   bigcache    128 MB for reads (LSM: 8 MB write buffer + 120 MB cache; B-trees: 128 MB):
#               fillrandom, overwrite, readrandom, readseq
#   nocompread  reads of an uncompressed DB (4 MB as baseline): same steps
#
# --quick: a smoke run (2,000 keys, 50 large values, 100 synced writes, 1 run). The full
# page (1M keys, 3 runs) takes about an hour or two on a 2-core machine. Engines whose cargo
# feature or system library is missing are skipped with the reason (bench/setup-peers.sh
# installs LevelDB's and Kyoto Cabinet's; RocksDB needs clang/libclang, see the README).
# Results: DIR (default bench/out/leveldb-page-<timestamp>)/{leveldb_page.md,
# leveldb_page.png, report.tsv, steps.tsv, skipped.tsv, machine.txt, logs/}.
set -euo pipefail
cd "$(dirname "$0")/.."

engines="strata,leveldb,kyoto,sqlite,rocksdb,fjall,redb"
num=1000000
large_num=1000
sync_writes=10000
reps=3
reps_given=0
out=""
quick=0

while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --out=*) out="${1#*=}"; shift ;;
    --quick) quick=1; shift ;;
    --reps) reps="$2"; reps_given=1; shift 2 ;;
    --reps=*) reps="${1#*=}"; reps_given=1; shift ;;
    --num) num="$2"; shift 2 ;;
    --num=*) num="${1#*=}"; shift ;;
    --engines) engines="$2"; shift 2 ;;
    --engines=*) engines="${1#*=}"; shift ;;
    -h|--help) sed -n '2,33p' "$0"; exit 0 ;;
    *) echo "bench/leveldb-page.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done
if [ "$quick" = 1 ]; then
  num=2000; large_num=50; sync_writes=100
  if [ "$reps_given" = 0 ]; then reps=1; fi
fi
for v in num reps; do
  case "${!v}" in
    ''|*[!0-9]*|0) echo "bench/leveldb-page.sh: --$v must be a positive integer" >&2; exit 2 ;;
  esac
done
# fillbatch-style rows write whole batches of 1,000.
if [ "$num" -lt 1000 ]; then
  echo "bench/leveldb-page.sh: --num must be at least 1000 (one batch of the batch rows)" >&2; exit 2
fi

stamp="$(date -u +%Y%m%d-%H%M%S)"
out="${out:-bench/out/leveldb-page-$stamp}"
mkdir -p "$out/logs"
out="$(cd "$out" && pwd)"
: > "$out/skipped.tsv"

# Which engines can be built here; the others are skipped, with why.
skip() { # engine reason
  echo "bench/leveldb-page.sh: skipping $1: $2" >&2
  printf '%s\t%s\n' "$1" "$2" >> "$out/skipped.tsv"
}
source bench/features.sh
run_engines=()
features=()
IFS=',' read -r -a asked <<< "$engines"
for e in "${asked[@]}"; do
  case "$e" in
    strata) run_engines+=("$e") ;;
    sqlite|fjall|redb) run_engines+=("$e"); features+=("$e") ;;
    leveldb)
      if peer_buildable leveldb; then
        run_engines+=("$e"); features+=("$e")
      else
        skip leveldb "LevelDB's C API (leveldb/c.h) is not installed: apt-get install -y libleveldb-dev (bash bench/setup-peers.sh)"
      fi ;;
    kyoto)
      if peer_buildable kyoto; then
        run_engines+=("$e"); features+=("$e")
      else
        skip kyoto "Kyoto Cabinet's C API (kclangc.h) is not installed: apt-get install -y libkyotocabinet-dev (bash bench/setup-peers.sh)"
      fi ;;
    rocksdb)
      # The rocksdb crate's bindgen needs libclang at build time.
      if [ -n "${LIBCLANG_PATH:-}" ] || ldconfig -p 2>/dev/null | grep -q 'libclang'; then
        run_engines+=("$e"); features+=("$e")
      else
        skip rocksdb "the rocksdb feature needs clang and libclang-dev (apt-get install -y clang libclang-dev)"
      fi ;;
    *) echo "bench/leveldb-page.sh: unknown engine '$e' (strata, leveldb, kyoto, sqlite, rocksdb, fjall, redb)" >&2; exit 2 ;;
  esac
done
if [ ${#run_engines[@]} -eq 0 ]; then
  echo "bench/leveldb-page.sh: no engine to run" >&2; exit 2
fi

strata_bench_features "${features[@]}"
echo "== building strata-bench (release${feature_args[*]:+, ${feature_args[*]}})" >&2
cargo build --release -p strata-bench --bins "${feature_args[@]}"
target_dir="${CARGO_TARGET_DIR:-target}"
bin="$target_dir/release/strata-bench"
report_bin="$target_dir/release/strata-bench-report"

githash="$(git rev-parse --short=10 HEAD 2>/dev/null || true)"
{
  echo "date:     $(date -u '+%Y-%m-%d %H:%M UTC')   strata $githash"
  echo "cpu:      $(nproc) x $(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2- | sed 's/^ *//')"
  echo "memory:   $(free -h 2>/dev/null | awk '/^Mem:/ {print $2}')"
  echo "disk:     $(df -hT "$out" | awk 'NR==2 {print $1" ("$2"), "$5" free"}')"
  echo "kernel:   $(uname -sr)"
  echo "keys:     $num (large values: $large_num, synced writes: $sync_writes); runs: $reps"
  for e in "${run_engines[@]}"; do
    v="$("$bin" --engine="$e" --benchmarks= --db="$out/db/version" 2>&1 | grep -m1 -i 'version' || true)"
    echo "engine:   $e  ${v:-}"
  done
} > "$out/machine.txt"
rm -rf "$out/db"
steps="$out/steps.tsv"
printf '# engine\ttest\tbench\tlog\tdu_kb\ttime\tjob_id\tgithash\n' > "$steps"
timer=()
if [ -x /usr/bin/time ]; then timer=(/usr/bin/time -f '%e %U %S %M' -o); fi

is_lsm() { case "$1" in strata|leveldb|rocksdb|fjall) return 0 ;; *) return 1 ;; esac; }

# The memory flags of a budget, split as the page splits it: LSM engines a write buffer
# and a block cache, B-trees a page cache (SQLite and TreeDB with 1 KB pages, as the page).
memory_flags() { # engine write_buffer_bytes cache_bytes total_bytes
  if is_lsm "$1"; then
    echo "--write_buffer_size=$2 --cache_size=$3"
  else
    case "$1" in
      sqlite|kyoto) echo "--cache_size=$4 --block_size=1024" ;;
      *) echo "--cache_size=$4" ;;
    esac
  fi
}

# Turning compression off, for the engines that compress (SQLite does not: the page copies
# its baseline figures; redb does not either, and says so with "none").
nocomp_flags() { # engine
  case "$1" in sqlite) ;; *) echo "--compression_type=none" ;; esac
}

# The baseline's light compression: snappy for the LSM engines but fjall (its own policy:
# none in L0-L1, LZ4 below); TreeDB's default is LZO, as on the page; B-trees none.
light_comp_flags() { # engine
  case "$1" in strata|leveldb|rocksdb) echo "--compression_type=snappy" ;; esac
}

# Large values (2.A): the LSM engines with key-value separation from 4 KiB, as their
# documentation recommends for such values: Strata writing them to blob files as writes
# commit (the WAL and the memtable hold the index), RocksDB with its integrated BlobDB
# (values move to blob files at the flush). LevelDB and fjall are left as they are.
large_value_flags() { # engine
  case "$1" in
    strata) echo "--enable_blob_files=1 --min_blob_size=4096 --write_blobs_at_commit=1" ;;
    rocksdb) echo "--enable_blob_files=1 --min_blob_size=4096" ;;
  esac
}

# Each step's seed: the same for every engine within a run (the same keys in the same
# order), another for each step and run (a reader does not replay its writer's sequence).
step_seed() { # test
  echo $((seed + rep * 100000 + $(printf '%s' "$1" | cksum | cut -d' ' -f1) % 100000))
}

mb=$((1 << 20))
rep=0
run_step() { # engine test bench flags...
  local engine="$1" test="$2" bench="$3"; shift 3
  local db="$out/db/$engine" log="logs/$engine.$test.r$rep.log"
  local cmd=("$bin" --engine="$engine")
  local time_file=""
  if [ ${#timer[@]} -gt 0 ]; then
    time_file="$log.time"
    cmd=("${timer[@]}" "$out/$time_file" "${cmd[@]}")
  fi
  echo "== run $rep/$reps $engine: $test" >&2
  # The step before left its writes in the page cache: written out first, so that this step's
  # syncs (the page's synchronous writes) do not queue behind another engine's writeback.
  sync
  if ! "${cmd[@]}" --db="$db" --key_size=16 --value_size=100 --compression_ratio=0.5 \
      --seed="$(step_seed "$test")" --progress_reports=false --benchmarks="$bench" "$@" \
      > "$out/$log" 2>&1; then
    echo "   (failed: see $out/$log)" >&2
  fi
  grep -E "^$bench " "$out/$log" | tail -1 >&2 || true
  local du_kb=""
  if [ -d "$db" ]; then du_kb="$(du -sk "$db" | cut -f1)"; fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t\t%s\n' "$engine" "$test" "$bench" "$log" "$du_kb" \
    "$time_file" "$githash" >> "$steps"
}

# One group of the page for one engine; the DB is removed after it.
run_group() { # group engine
  local g="$1" e="$2"
  # shellcheck disable=SC2046 # the flag helpers print words to split
  case "$g" in
    baseline|nocompread|bigcache)
      local mem comp
      case "$g" in
        bigcache) mem="$(memory_flags "$e" $((8 * mb)) $((120 * mb)) $((128 * mb)))" ;;
        *) mem="$(memory_flags "$e" $((2 * mb)) $((2 * mb)) $((4 * mb)))" ;;
      esac
      case "$g" in nocompread) comp="$(nocomp_flags "$e")" ;; *) comp="$(light_comp_flags "$e")" ;; esac
      if [ "$g" = baseline ]; then
        run_step "$e" baseline.fillseq fillseq --num="$num" $mem $comp
      fi
      run_step "$e" "$g.fillrandom" fillrandom --num="$num" $mem $comp
      run_step "$e" "$g.overwrite" overwrite --num="$num" --use_existing_db=1 $mem $comp
      run_step "$e" "$g.readrandom" readrandom --num="$num" --use_existing_db=1 $mem $comp
      run_step "$e" "$g.readseq" readseq --num="$num" --use_existing_db=1 $mem $comp
      ;;
    large|batch|sync|nocomp|bigmem)
      local mem comp="" extra=()
      case "$g" in
        bigmem) mem="$(memory_flags "$e" $((120 * mb)) $((8 * mb)) $((128 * mb)))" ;;
        *) mem="$(memory_flags "$e" $((2 * mb)) $((2 * mb)) $((4 * mb)))" ;;
      esac
      case "$g" in
        nocomp) comp="$(nocomp_flags "$e")" ;;
        *) comp="$(light_comp_flags "$e")" ;;
      esac
      case "$g" in
        large) extra=(--num="$large_num" --value_size=100000 $(large_value_flags "$e")) ;;
        batch) extra=(--num="$num" --batch_size=1000) ;;
        sync) extra=(--num="$num" --writes="$sync_writes" --sync=1) ;;
        *) extra=(--num="$num") ;;
      esac
      run_step "$e" "$g.fillseq" fillseq "${extra[@]}" $mem $comp
      run_step "$e" "$g.fillrandom" fillrandom "${extra[@]}" $mem $comp
      ;;
  esac
  rm -rf "$out/db/$e"
}

groups=(baseline large batch sync nocomp bigmem bigcache nocompread)
seed="$(date +%s)"
for rep in $(seq 1 "$reps"); do
  for g in "${groups[@]}"; do
    # Engines interleaved: each group runs on every engine before the next group, in an
    # order that rotates with the run, so no engine always follows the same one.
    n=${#run_engines[@]}
    for i in $(seq 0 $((n - 1))); do
      run_group "$g" "${run_engines[$(((i + rep - 1) % n))]}"
    done
  done
done
rmdir "$out/db" 2>/dev/null || true

"$report_bin" --leveldb-page "$out" >&2
echo
echo "== $out/leveldb_page.md"
cat "$out/leveldb_page.md"
