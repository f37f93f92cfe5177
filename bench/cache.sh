#!/usr/bin/env bash
# Block caches compared (issue #15): LRU against clock, Strata against RocksDB, at 1, 2, 4 and 8
# threads, in one run, with ops/sec and CPU (user + system) microseconds per operation.
#
#   bash bench/cache.sh [--reps 3] [--threads "1 2 4 8"] [--engines strata,rocksdb]
#                       [--parts cache_bench,readrandom,fwdrange,readwhilewriting]
#                       [--cb-caches lru_cache,fixed_hyper_clock_cache,auto_hyper_clock_cache]
#                       [--cb-ops 20000000] [--cb-cache-mb 256] [--cb-args "..."]
#                       [--db-caches lru_cache,fixed_hyper_clock_cache,auto_hyper_clock_cache]
#                       [--num 1000000] [--duration 5] [--cache-mb 0] [--write-rate 2097152]
#                       [--out DIR] [--db-dir DIR] [--lock FILE] [--no-build] [--bin-dir DIR]
#
# Two parts, each repetition running every configuration at one thread count before the next
# count, the configurations in a fixed order on odd repetitions and reversed on even ones
# (bench/servers.sh's rep_order), so no engine or cache always goes first:
#
# 1. cache_bench (crates/strata-bench/src/cache_bench): the cache alone, Strata's and (with
#    -engine=rocksdb) RocksDB's through the same loop. Default workload: lookups only
#    (-lookup_percent=100, the other percentages 0) on a populated cache of --cb-cache-mb MiB,
#    8 KiB values, -lean (a hit does not hash the value), RocksDB's skew (5) and resident ratio
#    (0.25: a quarter of the keys fit), --cb-ops operations per thread (20,000,000: about a
#    second per thread on this machine; lookups take tens of nanoseconds). --cb-args adds or overrides cache_bench flags (e.g.
#    "-lookup_insert_percent=82 -insert_percent=2 -blind_insert_percent=5 -lookup_percent=10
#    -erase_percent=1" for RocksDB's default mix).
# 2. strata-bench (db_bench): readrandom, fwdrange (seekrandom, --seek_nexts=10) and
#    readwhilewriting (one writer held to --write-rate bytes/s) with --threads, each engine on
#    one DB built once per run (fillrandom --num keys, 16-byte keys, 100-byte values at
#    compression 0.5, snappy, then compact) and reopened with --use_existing_db=1 for every
#    step and cache type. In cache: the block cache is --cache-mb MiB (default: 256 bytes per
#    key, about twice the uncompressed data), and each process scans the DB once (readseq)
#    before the measured step, so the step reads from the block cache (CPU-bound). The ops/sec
#    and CPU per op are the measured step's own (its result line and the CPU figures of its
#    `I/O:` line: the process's user + system time between the step's start and end, over its
#    operations; readwhilewriting's include the writer and compactions over the readers' ops).
#
# Cache types: `lru_cache`; `fixed_hyper_clock_cache`, the clock cache with tables sized for
# an estimated entry charge (cache_bench: -value_bytes; strata-bench: --block_size);
# `auto_hyper_clock_cache`, the clock cache with growing tables. (The explicit names: RocksDB 11
# reads a bare `hyper_clock_cache` as the growing table, and so do both of ours.) RocksDB needs
# strata-bench built with the rocksdb feature (done here unless --no-build; --engines strata
# skips it). --lock runs each process under `flock FILE`; to keep other work off the machine for
# the whole run, run the script itself under flock with --no-build after building.
#
# Output in --out (default bench/out/cache-<UTC time>/): results.tsv (one row per
# configuration, thread count and repetition: rep, part, engine, cache, threads, ops_sec,
# cpu_us_per_op, hit_ratio (cache_bench), log), summary.txt (printed at the end: per part,
# engine, cache and thread count the median [min, max] of ops/sec and CPU/op; clock/LRU
# ops/sec ratios of cache_bench paired by repetition; and per db_bench step and thread count
# Strata's best cache over RocksDB's best cache, ops/sec and CPU/op, paired by repetition), logs/.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/servers.sh

reps=3
threads="1 2 4 8"
engines="strata,rocksdb"
parts="cache_bench,readrandom,fwdrange,readwhilewriting"
cb_caches="lru_cache,fixed_hyper_clock_cache,auto_hyper_clock_cache"
cb_ops=20000000
cb_cache_mb=256
cb_args=""
db_caches="lru_cache,fixed_hyper_clock_cache,auto_hyper_clock_cache"
num=1000000
duration=5
cache_mb=0
write_rate=$((2 << 20))
out=""
db_dir=""
lock=""
build=1
bin_dir=""
die() { echo "bench/cache.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --threads) threads="${2//,/ }"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --parts) parts="$2"; shift 2 ;;
    --cb-caches) cb_caches="$2"; shift 2 ;;
    --cb-ops) cb_ops="$2"; shift 2 ;;
    --cb-cache-mb) cb_cache_mb="$2"; shift 2 ;;
    --cb-args) cb_args="$2"; shift 2 ;;
    --db-caches) db_caches="$2"; shift 2 ;;
    --num) num="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --cache-mb) cache_mb="$2"; shift 2 ;;
    --write-rate) write_rate="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --db-dir) db_dir="$2"; shift 2 ;;
    --lock) lock="$2"; shift 2 ;;
    --no-build) build=0; shift ;;
    --bin-dir) bin_dir="$2"; build=0; shift 2 ;;
    -h|--help) sed -n '2,49p' "$0"; exit 0 ;;
    *) die "unknown argument '$1' (see --help)" ;;
  esac
done
for v in reps cb_ops cb_cache_mb num duration cache_mb write_rate; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || die "--${v//_/-} must be a whole number, got '${!v}'"
done
[ "$reps" -ge 1 ] || die "--reps must be at least 1"
for t in $threads; do [[ "$t" =~ ^[1-9][0-9]*$ ]] || die "--threads: '$t' is not a thread count"; done
for e in ${engines//,/ }; do
  case "$e" in strata | rocksdb) ;; *) die "unknown engine '$e' (strata, rocksdb)" ;; esac
done
for p in ${parts//,/ }; do
  case "$p" in cache_bench | readrandom | fwdrange | readwhilewriting) ;;
    *) die "unknown part '$p' (cache_bench, readrandom, fwdrange, readwhilewriting)" ;; esac
done
for c in ${cb_caches//,/ } ${db_caches//,/ }; do
  case "$c" in lru_cache | fixed_hyper_clock_cache | auto_hyper_clock_cache | hyper_clock_cache) ;;
    *) die "unknown cache type '$c' (lru_cache, fixed_hyper_clock_cache, auto_hyper_clock_cache)" ;; esac
done

if [ "$build" = 1 ]; then
  source bench/features.sh
  strata_bench_features ${engines//,/ }
  nice -n 10 cargo build --release -p strata-bench --bin strata-bench --bin cache_bench "${feature_args[@]}"
fi
bin_dir="${bin_dir:-${CARGO_TARGET_DIR:-target}/release}"
sb="$bin_dir/strata-bench"
cb="$bin_dir/cache_bench"
[ -x "$sb" ] && [ -x "$cb" ] || die "no strata-bench and cache_bench in $bin_dir (build them, or pass --bin-dir)"
case ",$engines," in
  *,rocksdb,*)
    "$cb" -engine=rocksdb -threads=1 -ops_per_thread=1 \
      -cache_size=1048576 -nopopulate_cache > /dev/null 2>&1 ||
      die "$cb has no RocksDB caches: build with --features rocksdb (or pass --engines strata)" ;;
esac

out="${out:-bench/out/cache-$(date -u +%Y%m%d-%H%M%S)}"
db_dir="${db_dir:-$out/db}"
mkdir -p "$out/logs"
[ "$cache_mb" -gt 0 ] || cache_mb=$(((num * 256 + (1 << 20) - 1) >> 20))

# Runs a command under the lock when one was given.
run() { if [ -n "$lock" ]; then flock "$lock" "$@"; else "$@"; fi; }

common=(--num="$num" --key_size=16 --value_size=100 --compression_ratio=0.5
  --compression_type=snappy --bloom_bits=10 --block_size=4096
  --write_buffer_size=$((32 << 20)) --max_write_buffer_number=2 --max_background_jobs=2
  --cache_size=$((cache_mb << 20)) --seed=42)

# The steps' logs, parsed: ops/sec of benchmark $2 in log $1, and the CPU per op of the last
# `I/O:` line (the measured step's: the warm-up readseq's comes first).
ops() { awk -v b="$2" '$1 == b { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec") v = $i } END { print (v == "" ? "-" : v) }' "$1"; }
io_cpu() { awk '/^I\/O: / { v = "-"; for (i = 1; i <= NF; i++) if ($i ~ /^us_per_op=/) v = substr($i, 11) } END { print (v == "" ? "-" : v) }' "$1"; }
cb_field() { awk -v k="$2" 'index($0, k) == 1 { s = substr($0, length(k) + 1); gsub(/^[ =:]+/, "", s); split(s, a, " "); v = a[1] } END { print (v == "" ? "-" : v) }' "$1"; }

db_parts=()
for p in ${parts//,/ }; do [ "$p" = cache_bench ] || db_parts+=("$p"); done

# One DB per engine for every db_bench step, built once.
if [ "${#db_parts[@]}" -gt 0 ]; then
  mkdir -p "$db_dir"
  for e in ${engines//,/ }; do
    echo "== building the $e DB ($num keys): fillrandom, compact" >&2
    rm -rf "${db_dir:?}/$e"
    run "$sb" --engine="$e" --db="$db_dir/$e" "${common[@]}" --disable_wal=1 \
      --benchmarks=fillrandom,compact,waitforcompaction > "$out/logs/$e.build.log" 2>&1 ||
      { tail -5 "$out/logs/$e.build.log" >&2; die "building the $e DB failed (see $out/logs/$e.build.log)"; }
  done
fi

cb_configs=()
db_configs=()
for e in ${engines//,/ }; do
  for c in ${cb_caches//,/ }; do cb_configs+=("$e:$c"); done
  for c in ${db_caches//,/ }; do db_configs+=("$e:$c"); done
done
read -r -a cb_extra <<< "$cb_args"

printf 'rep\tpart\tengine\tcache\tthreads\tops_sec\tcpu_us_per_op\thit_ratio\tlog\n' > "$out/results.tsv"
row() { printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$@" >> "$out/results.tsv"; }

for rep in $(seq 1 "$reps"); do
  for t in $threads; do
    for part in ${parts//,/ }; do
      if [ "$part" = cache_bench ]; then
        mapfile -t order < <(rep_order "$rep" "${cb_configs[@]}")
      else
        mapfile -t order < <(rep_order "$rep" "${db_configs[@]}")
      fi
      for cfg in "${order[@]}"; do
        e="${cfg%%:*}"
        c="${cfg#*:}"
        log="$out/logs/$part.$e.$c.t$t.r$rep.log"
        echo "== rep $rep: $part $e $c threads=$t" >&2
        if [ "$part" = cache_bench ]; then
          run "$cb" -engine="$e" -cache_type="$c" -threads="$t" -ops_per_thread="$cb_ops" \
            -cache_size=$((cb_cache_mb << 20)) -value_bytes=8192 -lookup_insert_percent=0 \
            -insert_percent=0 -blind_insert_percent=0 -lookup_percent=100 -erase_percent=0 -lean \
            ${cb_extra[@]+"${cb_extra[@]}"} > "$log" 2>&1 || { tail -3 "$log" >&2; die "cache_bench failed (see $log)"; }
          row "$rep" "$part" "$e" "$c" "$t" "$(awk -F'= ' '/Rough parallel ops\/sec/ { v = $2 } END { print (v == "" ? "-" : v) }' "$log")" \
            "$(cb_field "$log" "CPU (user+sys) per op:")" "$(cb_field "$log" "Lookup hit ratio:")" "$log"
        else
          case "$part" in
            readrandom) step=(--benchmarks=readseq,readrandom); name=readrandom ;;
            fwdrange) step=(--benchmarks=readseq,seekrandom --seek_nexts=10 --reverse_iterator=false); name=seekrandom ;;
            readwhilewriting) step=(--benchmarks=readseq,readwhilewriting --benchmark_write_rate_limit="$write_rate"); name=readwhilewriting ;;
          esac
          run "$sb" --engine="$e" --db="$db_dir/$e" "${common[@]}" --use_existing_db=1 \
            --cache_type="$c" --threads="$t" --duration="$duration" "${step[@]}" > "$log" 2>&1 ||
            { tail -3 "$log" >&2; die "strata-bench failed (see $log)"; }
          row "$rep" "$part" "$e" "$c" "$t" "$(ops "$log" "$name")" "$(io_cpu "$log")" "-" "$log"
        fi
      done
    done
  done
done

# The summary: medians and [min, max] over the repetitions, and ratios paired by repetition.
awk -F'\t' '
  function med(s,   n, a, i, j, x) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { x = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
    if (n == 0) return "-"
    lo = a[1]; hi = a[n]
    return (n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2)
  }
  function stat(s, fmt,   m) { if (s == "") return "-"; m = med(s); return sprintf(fmt " [" fmt ", " fmt "]", m, lo, hi) }
  function add(arr, k, v) { if (v == "-" || v == "") return; arr[k] = (k in arr) ? arr[k] " " v : v }
  NR == 1 { next }
  {
    rep = $1; part = $2; eng = $3; cache = $4; t = $5; ops = $6; cpu = $7
    key = part SUBSEP eng SUBSEP cache SUBSEP t
    if (!(key in seen)) { seen[key] = 1; keys[++nk] = key }
    add(O, key, ops); add(C, key, cpu)
    v[rep, key] = ops; u[rep, key] = cpu
    if (!(t in tseen)) { tseen[t] = 1; ts[++nt] = t }
    if (rep > nrep) nrep = rep
    if (part != "cache_bench" && ops != "-") {
      k = rep SUBSEP part SUBSEP eng SUBSEP t
      if (!(k in best) || ops + 0 > best[k] + 0) best[k] = ops
      if (cpu != "-" && (!(k in bcpu) || cpu + 0 < bcpu[k] + 0)) bcpu[k] = cpu
    }
  }
  END {
    print "== per configuration: ops/sec and CPU (user+sys) us/op, median [min, max] over " nrep " repetition(s)"
    printf "%-17s %-7s %-24s %7s  %-40s %s\n", "part", "engine", "cache", "threads", "ops/sec", "cpu us/op"
    for (i = 1; i <= nk; i++) {
      split(keys[i], f, SUBSEP)
      printf "%-17s %-7s %-24s %7s  %-40s %s\n", f[1], f[2], f[3], f[4], stat(O[keys[i]], "%.0f"), stat(C[keys[i]], "%.3f")
    }
    print ""
    print "== cache_bench: clock / LRU ops/sec (and LRU / clock CPU per op), same engine, paired by repetition"
    for (i = 1; i <= nk; i++) {
      split(keys[i], f, SUBSEP)
      if (f[1] != "cache_bench" || f[3] == "lru_cache") continue
      lru = "cache_bench" SUBSEP f[2] SUBSEP "lru_cache" SUBSEP f[4]
      r = ""; rc = ""
      for (rep = 1; rep <= nrep; rep++) {
        if (v[rep, keys[i]] != "" && v[rep, keys[i]] != "-" && v[rep, lru] + 0 > 0) r = r " " v[rep, keys[i]] / v[rep, lru]
        if (u[rep, keys[i]] + 0 > 0 && u[rep, lru] != "" && u[rep, lru] != "-") rc = rc " " u[rep, lru] / u[rep, keys[i]]
      }
      printf "%-7s %-24s threads %-3s ops/sec %-26s cpu %s\n", f[2], f[3] "/lru", f[4], stat(r, "%.2f"), stat(rc, "%.2f")
    }
    print ""
    print "== db_bench: Strata best cache / RocksDB best cache, ops/sec (and RocksDB / Strata CPU per op: > 1 means Strata uses less), paired by repetition"
    np = split("readrandom fwdrange readwhilewriting", P, " ")
    for (p = 1; p <= np; p++) for (j = 1; j <= nt; j++) {
      r = ""; rc = ""
      for (rep = 1; rep <= nrep; rep++) {
        a = rep SUBSEP P[p] SUBSEP "strata" SUBSEP ts[j]; b = rep SUBSEP P[p] SUBSEP "rocksdb" SUBSEP ts[j]
        if ((a in best) && (b in best) && best[b] + 0 > 0) r = r " " best[a] / best[b]
        if ((a in bcpu) && (b in bcpu) && bcpu[a] + 0 > 0) rc = rc " " bcpu[b] / bcpu[a]
      }
      if (r != "") printf "%-17s threads %-3s ops/sec %-26s cpu %s\n", P[p], ts[j], stat(r, "%.2f"), stat(rc, "%.2f")
    }
  }' "$out/results.tsv" | tee "$out/summary.txt"
echo "results: $out/results.tsv, summary: $out/summary.txt" >&2
