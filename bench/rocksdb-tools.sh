#!/usr/bin/env bash
# Runs RocksDB's own benchmark scripts (tools/benchmark.sh, tools/benchmark_compare.sh) with
# strata-bench in db_bench's place, unchanged. The scripts are not part of this repository:
# they are taken from the RocksDB source tree that the `librocksdb-sys` crate ships (the
# dependency of strata-bench's `rocksdb` feature), which `cargo metadata` downloads and locates
# without building it.
#
#   bash bench/rocksdb-tools.sh jobs    [options] [JOB ...]
#       every job of benchmark.sh (or the JOBs named), each checked for a report.tsv row with
#       a non-zero ops_sec; randomtransaction and universal_compaction (no report row:
#       benchmark.sh does not summarize them) are checked for their result lines (and
#       randomtransaction for RandomTransactionVerify's success).
#   bash bench/rocksdb-tools.sh compare [options] [ENGINE ...]
#       benchmark_compare.sh over the engines (default: strata rocksdb), each behind its own
#       ./db_bench.<engine> wrapper, then the two report.tsv tables side by side.
#   bash bench/rocksdb-tools.sh regression [options]
#       regression_test.sh (its `make db_bench ldb` met by a Makefile that builds nothing,
#       ./db_bench the wrapper, ./ldb's `checkpoint` the engine's: `strata checkpoint` for
#       Strata, a copy of the closed DB for RocksDB), then its SUMMARY.csv checked for a row
#       with ops-per-s > 0 for each of its 8 benchmarks. Its two *_asyncio steps run for
#       the --duration=500 it passes: about 17 minutes in all. --options-file F passes
#       OPTIONS_FILE=F (db_bench's --options_file).
#   bash bench/rocksdb-tools.sh flags [--bin PATH]
#       every flag db_bench_tool.cc defines is one strata-bench knows (in its --help), and
#       every benchmark name it dispatches on is run by strata-bench or refused as "not
#       implemented" (never "unknown benchmark"); prints what is missing and fails if any is.
#
# Options: --bin PATH (strata-bench; default: built in release here, with the `rocksdb`
# feature when an engine needs it), --engine E (jobs, regression: default strata), --num-keys N
# (default 20000), --threads T (default 1), --duration S (default 3), --out DIR (default
# bench/out/rocksdb-tools-<timestamp>), --db DIR (default <out>/db), --wal DIR (jobs:
# default <out>/wal, a directory apart from the DB's), --sync (jobs: leave DB_BENCH_NO_SYNC
# unset, so benchmark.sh runs its write jobs with --sync=1 as it does by default; without it
# they run unsynced, as benchmark_compare.sh runs them).
# Needs bash, awk, bc and /usr/bin/time (Debian: apt-get install -y bc time), as the scripts do.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

die() { echo "rocksdb-tools.sh: $*" >&2; exit 2; }

mode="${1:-}"
case "$mode" in
  jobs|compare|regression|flags) shift ;;
  -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
  *) die "first argument must be 'jobs', 'compare', 'regression' or 'flags' (see --help)" ;;
esac

bin="" engine=strata num_keys=20000 threads=1 duration=3 out="" db="" wal="" sync=0
options_file="" duration_given=0
positional=()
while [ $# -gt 0 ]; do
  case "$1" in
    --bin) bin="$2"; shift 2 ;;
    --engine) engine="$2"; shift 2 ;;
    --num-keys) num_keys="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --duration) duration="$2"; duration_given=1; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --db) db="$2"; shift 2 ;;
    --wal) wal="$2"; shift 2 ;;
    --sync) sync=1; shift ;;
    --options-file) options_file="$2"; shift 2 ;;
    --*) die "unknown option '$1' (see --help)" ;;
    *) positional+=("$1"); shift ;;
  esac
done

# Options a mode does not use are refused, not dropped.
if [ "$mode" = regression ]; then
  [ -z "$db" ] && [ -z "$wal" ] && [ "$sync" = 0 ] && [ "$duration_given" = 0 ] \
    || die "regression: --db, --wal, --sync and --duration are not used (regression_test.sh sets its own)"
  [ ${#positional[@]} -eq 0 ] || die "regression takes no jobs or engines (use --engine E)"
elif [ -n "$options_file" ]; then
  die "--options-file is for regression only (benchmark.sh passes no --options_file)"
fi

# `flags` reads a source file and runs strata-bench alone: it needs none of them.
[ "$mode" = flags ] || for tool in awk bc /usr/bin/time; do
  command -v "$tool" > /dev/null || die "'$tool' is missing; RocksDB's scripts need it (Debian: apt-get install -y bc time)"
done

# RocksDB's tools directory in the librocksdb-sys source that Cargo.lock pins.
tools_dir() {
  local manifest
  manifest="$(cd "$repo" && cargo metadata --format-version 1 --features strata-bench/rocksdb 2> /dev/null \
    | grep -o '"manifest_path":"[^"]*/librocksdb-sys-[^"/]*/Cargo.toml"' | head -1 | cut -d'"' -f4)" || true
  [ -n "$manifest" ] || die "cargo metadata did not give the librocksdb-sys source (offline and not in ~/.cargo/registry?)"
  local dir
  dir="$(dirname "$manifest")/rocksdb/tools"
  [ -f "$dir/benchmark.sh" ] || die "no tools/benchmark.sh under $(dirname "$manifest")"
  echo "$dir"
}
tools="$(tools_dir)"

engines=(strata)
if [ "$mode" = compare ]; then
  engines=("${positional[@]}")
  [ ${#engines[@]} -gt 0 ] || engines=(strata rocksdb)
else
  engines=("$engine")
fi
if [ -z "$bin" ]; then
  source "$repo/bench/features.sh"
  strata_bench_features "${engines[@]}"
  (cd "$repo" && cargo build --release -p strata-bench "${feature_args[@]}") >&2
  bin="${CARGO_TARGET_DIR:-$repo/target}/release/strata-bench"
fi
[ -x "$bin" ] || die "--bin $bin is not an executable"
bin="$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin")"

if [ "$mode" = flags ]; then
  src="$tools/db_bench_tool.cc"
  [ -f "$src" ] || die "no $src"
  known="$("$bin" --help | sed -n 's/^  --\([A-Za-z0-9_]*\) (.*/\1/p' | sort -u)"
  defined="$(perl -0ne 'print "$1\n" while /\bDEFINE_[a-z0-9_]+\(\s*(\w+)\s*,/g' "$src" | sort -u)"
  missing="$(comm -23 <(echo "$defined") <(echo "$known"))"
  unknown_benchmarks=""
  for b in $(grep -o 'name == "[a-z0-9_]*"' "$src" | cut -d'"' -f2 | sort -u); do
    # A flag strata-bench refuses after it has checked the benchmark names: nothing runs.
    err="$("$bin" --benchmarks="$b" --trace_file=/dev/null 2>&1 || true)"
    case "$err" in
      *"unknown benchmark"*) unknown_benchmarks+="$b " ;;
    esac
  done
  echo "db_bench flags: $(echo "$defined" | wc -l), of which strata-bench lacks $(echo -n "$missing" | grep -c . || true)"
  [ -z "$missing" ] || echo "missing flags: $(echo $missing)"
  [ -z "$unknown_benchmarks" ] || echo "benchmarks strata-bench does not know: $unknown_benchmarks"
  [ -z "$missing" ] && [ -z "$unknown_benchmarks" ]
  exit
fi

out="${out:-$repo/bench/out/rocksdb-tools-$(date +%Y%m%dT%H%M%S)}"
mkdir -p "$out"
out="$(cd "$out" && pwd)"
db="${db:-$out/db}"
wal="${wal:-$out/wal}"
work="$out/tools"
mkdir -p "$work"
# The scripts call ./db_bench and ./benchmark.sh from the working directory: link them there.
ln -sf "$tools/benchmark.sh" "$work/benchmark.sh"
ln -sf "$tools/benchmark_compare.sh" "$work/benchmark_compare.sh"
wrapper() { # engine path
  printf '#!/bin/sh\nexec "%s" --engine=%s "$@"\n' "$bin" "$1" > "$2"
  chmod +x "$2"
}
echo "RocksDB scripts: $tools" >&2
echo "strata-bench:    $bin" >&2
echo "output:          $out" >&2

# benchmark.sh's jobs; the fills first (they make the DB the others read), merges last
# (a DB holding merge operands needs --merge_operator, which only the merge jobs pass).
all_jobs=(bulkload fillseq_disable_wal fillseq_enable_wal filluniquerandom readrandom
  multireadrandom fwdrange revrange overwrite overwritesome overwriteandwait flush_mt_l0
  waitforcompaction updaterandom readwhilewriting
  fwdrangewhilewriting revrangewhilewriting mergerandom readwhilemerging
  fwdrangewhilemerging revrangewhilemerging randomtransaction universal_compaction)
# Jobs that write no report row (benchmark.sh does not summarize them): lines their output
# must hold instead.
no_row_lines() {
  case "$1" in
    flush_mt_l0) echo "flush memtable|compact0 found|finished with status \(OK\)" ;;
    waitforcompaction) echo "finished with status \(OK\)" ;;
    universal_compaction) echo "^fillrandom +:|^compact +:" ;;
    randomtransaction) echo "^randomtransaction +:|RandomTransactionVerify Success" ;;
    *) echo "" ;;
  esac
}

rows() { # report.tsv -> data rows
  if [ -f "$1" ]; then grep -cv '^ops_sec\|^#' "$1" || true; else echo 0; fi
}

run_jobs() {
  local jobs=("${positional[@]}")
  [ ${#jobs[@]} -gt 0 ] || jobs=("${all_jobs[@]}")
  wrapper "$engine" "$work/db_bench"
  mkdir -p "$db" "$wal"
  local report="$out/report.tsv" failed=0 job
  for job in "${jobs[@]}"; do
    local before after log
    before="$(rows "$report")"
    log="$out/$job.out"
    local extra=()
    if [ "$job" = universal_compaction ]; then extra=(COMPACTION_STYLE=universal); fi
    # The background writer of the *while* jobs is rate limited, as benchmark_compare.sh does.
    case "$job" in *while*) extra+=(MB_WRITE_PER_SEC=1) ;; esac
    if [ "$sync" = 0 ]; then extra+=(DB_BENCH_NO_SYNC=1); fi
    echo "== $job" >&2
    (cd "$work" && env -i PATH="$PATH" HOME="$HOME" "${extra[@]}" \
      DB_DIR="$db" WAL_DIR="$wal" OUTPUT_DIR="$out" NUM_KEYS="$num_keys" \
      NUM_THREADS="$threads" DURATION="$duration" \
      bash ./benchmark.sh "$job") > "$log" 2>&1 || true
    after="$(rows "$report")"
    local want
    want="$(no_row_lines "$job")"
    if [ -n "$want" ]; then
      local line ok=1
      while IFS= read -r line; do
        grep -Eq "$line" "$log" || { echo "   FAILED: no line matching '$line' in $log" >&2; ok=0; }
      done < <(echo "$want" | tr '|' '\n')
      local err
      err="$(grep -v "^strata-bench: note: " "$log" | grep -m1 "^strata-bench: \|CompactFiles failed" || true)"
      if [ -n "$err" ]; then
        echo "   FAILED: an error in $log: $err" >&2; ok=0
      fi
      if [ "$ok" = 1 ]; then
        echo "   ok: $(grep -E "compact0 found|finished with status|^randomtransaction|Verify" "$log" | sort -u | tr '\n' ' ')" >&2
      else
        failed=1
      fi
      continue
    fi
    local ops
    ops="$(tail -1 "$report" 2> /dev/null | cut -f1)"
    if [ "$after" -gt "$before" ] && awk -v v="$ops" 'BEGIN { exit !(v + 0 > 0) }'; then
      echo "   row: $(tail -1 "$report" | cut -f1,12,24 | tr '\t' ' ')  (ops_sec usec_op test)" >&2
    else
      echo "   FAILED: no report.tsv row with ops_sec > 0; last lines of $log:" >&2
      tail -5 "$log" | sed 's/^/     /' >&2; failed=1
    fi
  done
  echo "report: $report" >&2
  return "$failed"
}

run_compare() {
  local e
  for e in "${engines[@]}"; do wrapper "$e" "$work/db_bench.$e"; done
  mkdir -p "$db"
  local cmp="$out/compare"
  [ ! -e "$cmp" ] || die "$cmp exists (benchmark_compare.sh refuses to overwrite)"
  (cd "$work" && env NUM_KEYS="$num_keys" NUM_THREADS="$threads" DURATION_RW="$duration" \
    DURATION_RO="$duration" CI_TESTS_ONLY="${CI_TESTS_ONLY:-false}" \
    bash ./benchmark_compare.sh "$db" "$cmp" "${engines[@]}") > "$out/compare.out" 2>&1 \
    || { tail -20 "$out/compare.out" >&2; die "benchmark_compare.sh failed; see $out/compare.out"; }
  for e in "${engines[@]}"; do
    local n
    n="$(rows "$cmp/$e/report.tsv")"
    [ "$n" -gt 0 ] || die "no report rows for $e; see $out/compare.out"
    echo "$e: $n report rows in $cmp/$e/report.tsv" >&2
  done
  # Side by side, one row per test: each engine's ops/sec, p99 and pmax (usec) and W-Amp,
  # and the first engine's ops/sec over each other's.
  awk -F'\t' -v engines="${engines[*]}" '
    FNR == 1 { file++ }
    /^#/ { next }
    /^ops_sec\t/ { for (i = 1; i <= NF; i++) col[file, $i] = i; next }
    {
      t = $col[file, "test"]; sub(/\.t[0-9]+(\.s[0-9]+)?$/, "", t)
      if (!(t in seen)) { seen[t] = 1; order[++n] = t }
      ops[t, file] = $col[file, "ops_sec"]; p99[t, file] = $col[file, "p99"]
      pmax[t, file] = $col[file, "pmax"]; wamp[t, file] = $col[file, "w_amp"]
    }
    END {
      k = split(engines, e, " ")
      printf "| test |"; for (f = 1; f <= k; f++) printf " %s ops/s | p99 | pmax | W-Amp |", e[f]
      for (f = 2; f <= k; f++) printf " %s/%s |", e[1], e[f]; printf "\n|---|"
      for (f = 1; f <= k; f++) printf "---:|---:|---:|---:|"; for (f = 2; f <= k; f++) printf "---:|"; printf "\n"
      for (i = 1; i <= n; i++) {
        t = order[i]; printf "| %s |", t
        for (f = 1; f <= k; f++) {
          if ((t, f) in ops) printf " %s | %s | %s | %s |", ops[t, f], p99[t, f], pmax[t, f], wamp[t, f]
          else printf " - | - | - | - |"
        }
        for (f = 2; f <= k; f++) {
          if ((t, 1) in ops && (t, f) in ops && ops[t, f] + 0 > 0) printf " %.2f |", ops[t, 1] / ops[t, f]
          else printf " - |"
        }
        printf "\n"
      }
    }' $(for e in "${engines[@]}"; do echo "$cmp/$e/report.tsv"; done) | tee "$out/compare.md"
}

run_regression() {
  local tool
  for tool in pidof make; do
    command -v "$tool" > /dev/null \
      || die "'$tool' is missing; regression_test.sh needs it (Debian: apt-get install -y sysvinit-utils make)"
  done
  if [ -n "$options_file" ]; then
    [ -f "$options_file" ] || die "--options-file $options_file: no such file"
    options_file="$(cd "$(dirname "$options_file")" && pwd)/$(basename "$options_file")"
  fi
  local dir="$out/regression"
  mkdir -p "$dir/run"
  ln -sf "$tools/regression_test.sh" "$dir/run/regression_test.sh"
  wrapper "$engine" "$dir/run/db_bench"
  # The script runs `make clean` and `make db_bench ldb` in its directory: nothing to build.
  printf '.PHONY: clean db_bench ldb\nclean:\n\t@true\ndb_bench ldb:\n\t@true\n' > "$dir/run/Makefile"
  # ldb as the script calls it: `checkpoint --checkpoint_dir=DIR --db=DB [--try_load_options]`.
  local strata_tool="${CARGO_TARGET_DIR:-$repo/target}/release/strata"
  if [ "$engine" = strata ]; then
    (cd "$repo" && cargo build --release -p strata-tools) >&2
  fi
  cat > "$dir/run/ldb" << LDB
#!/usr/bin/env bash
set -euo pipefail
cmd="" to="" from=""
for a in "\$@"; do
  case "\$a" in
    checkpoint) cmd=checkpoint ;;
    --checkpoint_dir=*) to="\${a#--checkpoint_dir=}" ;;
    --db=*) from="\${a#--db=}" ;;
    --try_load_options) ;;
    *) echo "ldb (bench/rocksdb-tools.sh): '\$a' is not served; only checkpoint" >&2; exit 2 ;;
  esac
done
[ "\$cmd" = checkpoint ] && [ -n "\$to" ] && [ -n "\$from" ] \
  || { echo "ldb (bench/rocksdb-tools.sh): want checkpoint --checkpoint_dir=DIR --db=DB" >&2; exit 2; }
if [ "$engine" = strata ]; then
  exec "$strata_tool" --db "\$from" checkpoint "\$to"
fi
# RocksDB: no ldb is built here; the DB is closed, so a copy of its files is a checkpoint.
[ ! -e "\$to" ] || { echo "ldb: \$to exists" >&2; exit 1; }
cp -a "\$from" "\$to"
echo "checkpoint of \$from in \$to (a copy of the closed DB)"
LDB
  chmod +x "$dir/run/ldb"
  # The script ends each `pidof` check with `pidof --version` for a zero status, which
  # procps-ng's pidof gives and sysvinit's (Debian's) does not: a pidof first on its PATH
  # that answers --version and hands everything else to the system's.
  local real_pidof
  real_pidof="$(command -v pidof)"
  mkdir -p "$dir/path"
  printf '#!/bin/sh\ncase "$1" in --version) echo "pidof (bench/rocksdb-tools.sh)"; exit 0 ;; esac\nexec %s "$@"\n' \
    "$real_pidof" > "$dir/path/pidof"
  chmod +x "$dir/path/pidof"
  local log="$out/regression.out"
  echo "== regression_test.sh ($engine; output in $log)" >&2
  (cd "$dir/run" && env -i PATH="$dir/path:$PATH" HOME="$HOME" TEST_PATH="$dir/test" \
    RESULT_PATH="$dir/results" NUM_KEYS="$num_keys" NUM_THREADS="$threads" \
    ${options_file:+OPTIONS_FILE="$options_file"} bash ./regression_test.sh) > "$log" 2>&1 \
    || { tail -20 "$log" >&2; die "regression_test.sh failed; see $log"; }
  local summary="$dir/results/SUMMARY.csv" failed=0 b
  for b in seekrandom_asyncio multireadrandom_asyncio readrandom readwhilewriting deleterandom \
    seekrandom seekrandomwhilewriting multireadrandom; do
    local ops
    # ops-per-s is the 14th column, but run locally the empty user@host (unquoted in the
    # script's printf) is no argument at all: the columns after it come one early, num-dbs
    # (a number) third.
    ops="$(awk -F, -v b="$b" '
      { t = $2; gsub(/ /, "", t); u = $3; gsub(/ /, "", u) }
      t == b { o = (u ~ /^[0-9]+$/) ? $13 : $14; gsub(/ /, "", o) }
      END { print o }' "$summary")"
    if awk -v v="$ops" 'BEGIN { exit !(v + 0 > 0) }'; then
      echo "   $b: $ops ops/s" >&2
    else
      echo "   FAILED: no SUMMARY.csv row for $b with ops-per-s > 0" >&2; failed=1
    fi
  done
  echo "summary: $summary" >&2
  return "$failed"
}

case "$mode" in
  jobs) run_jobs ;;
  compare) run_compare ;;
  regression) run_regression ;;
esac
