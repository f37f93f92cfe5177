#!/usr/bin/env bash
# Durable writes against the number of writers: fillsync and overwrite with --sync=1 at each
# thread count, the engines interleaved (for each count and repetition: one engine, then the
# next), plus the device's own fdatasync rate from fio as the physical limit of one writer.
#
#   bash bench/sync-writers.sh [--engines "strata rocksdb"] [--threads "1 2 4 8 16 32"]
#                              [--reps 3] [--duration 8] [--num 1000000] [--out DIR]
#                              [--bin PATH] [-- EXTRA strata-bench FLAGS ...]
#
# fillsync writes random keys from --num/1000 into a new DB; overwrite writes random keys of a
# DB first filled with --num keys (unsynced, once per engine). Both run --duration seconds.
# Output: <out>/results.tsv (one row per run: bench, threads, rep, engine, ops/s, p99 usec),
# <out>/table.md (per bench and thread count: each engine's median ops/s with its range and
# median p99, and the median of the per-repetition ratios of the first engine over the
# second), <out>/fio.txt and <out>/fio-append.txt (one writer overwriting a laid-out file, and
# appending to a new one, each 4 KiB write followed by fdatasync), and <out>/logs/. Needs fio
# for the device lines (skipped, with a message, when it is missing: apt-get install -y fio).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"

engines="strata rocksdb" threads="1 2 4 8 16 32" reps=3 duration=8 num=1000000 out="" bin=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --engines) engines="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --num) num="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --bin) bin="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/p}' "$0"; exit 0 ;;
    *) echo "sync-writers.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

if [ -z "$bin" ]; then
  source "$repo/bench/features.sh"
  strata_bench_features $engines
  (cd "$repo" && cargo build --release -p strata-bench "${feature_args[@]}") >&2
  bin="${CARGO_TARGET_DIR:-$repo/target}/release/strata-bench"
fi
[ -x "$bin" ] || { echo "sync-writers.sh: --bin $bin is not an executable" >&2; exit 2; }
out="${out:-$repo/bench/out/sync-writers-$(date +%Y%m%dT%H%M%S)}"
mkdir -p "$out/logs" "$out/db"
results="$out/results.tsv"
printf 'bench\tthreads\trep\tengine\tops_sec\tp99_usec\n' > "$results"

if command -v fio > /dev/null; then
  # One writer appending small records and fdatasync-ing each, on the DBs' file system.
  # Overwriting a laid-out file (a sync writes data only: the device's limit, which a reused
  # WAL meets) and appending to a new one (each sync also commits the file's new size, as
  # for a new WAL).
  fio --name=fdatasync --directory="$out/db" --rw=write --bs=4k --size=64m --ioengine=sync \
    --fdatasync=1 --runtime=10 --time_based > "$out/fio.txt" 2>&1 || true
  rm -f "$out/db"/fdatasync.*
  fio --name=append --directory="$out/db" --rw=write --bs=4k --size=64m --ioengine=sync \
    --fdatasync=1 --runtime=10 --time_based --file_append=1 --fallocate=keep \
    > "$out/fio-append.txt" 2>&1 || true
  rm -f "$out/db"/append.*
  echo "fio: overwrite $(grep -m1 -o 'IOPS=[^,]*' "$out/fio.txt" || echo '?'), append $(grep -m1 -o 'IOPS=[^,]*' "$out/fio-append.txt" || echo '?')" >&2
else
  echo "sync-writers.sh: fio is missing (apt-get install -y fio): no device line" >&2
fi

common=(--key_size=16 --value_size=100 --compression_type=none --histogram=1 --seed=7
  --stats_interval_seconds=0 "${extra[@]}")
run() { # engine bench threads rep -> appends a results row
  local e="$1" b="$2" t="$3" r="$4" log="$out/logs/$2.t$3.r$4.$1.log" db="$out/db/$1"
  if [ "$b" = fillsync ]; then
    rm -rf "$db.fillsync"
    "$bin" --engine="$e" --db="$db.fillsync" --benchmarks=fillsync --num="$num" \
      --threads="$t" --duration="$duration" "${common[@]}" > "$log" 2>&1
    rm -rf "$db.fillsync"
  else
    "$bin" --engine="$e" --db="$db.overwrite" --use_existing_db=1 --benchmarks=overwrite \
      --sync=1 --num="$num" --threads="$t" --duration="$duration" "${common[@]}" > "$log" 2>&1
  fi
  local ops p99
  ops="$(awk -v b="$b" '$1 == b && $2 == ":" { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec" || $(i + 1) == "ops/sec;") print $i }' "$log" | tail -1)"
  p99="$(grep -m1 -o 'P99: [0-9.]*' "$log" | awk '{ print $2 }')"
  [ -n "$ops" ] || { echo "sync-writers.sh: no ops/sec line in $log" >&2; tail -5 "$log" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$b" "$t" "$r" "$e" "$ops" "${p99:-}" >> "$results"
  echo "$b threads=$t rep=$r $e: $ops ops/s, p99 ${p99:-?} us" >&2
}

for e in $engines; do
  echo "prefill $e: $num keys" >&2
  rm -rf "$out/db/$e.overwrite"
  "$bin" --engine="$e" --db="$out/db/$e.overwrite" --benchmarks=fillrandom --num="$num" \
    --disable_wal=1 "${common[@]}" > "$out/logs/prefill.$e.log" 2>&1
done
for b in fillsync overwrite; do
  for t in $threads; do
    for r in $(seq 1 "$reps"); do
      for e in $engines; do run "$e" "$b" "$t" "$r"; done
    done
  done
done

# Medians and ranges per (bench, threads, engine); ratios pair repetitions of the first two
# engines.
awk -F'\t' -v engines="$engines" '
  function median(list,   n, a, i, j, t) {
    n = split(list, a, " ")
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > t + 0; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function lo(list,   n, a, i, m) { n = split(list, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 < m + 0) m = a[i]; return m }
  function hi(list,   n, a, i, m) { n = split(list, a, " "); m = a[1]; for (i = 2; i <= n; i++) if (a[i] + 0 > m + 0) m = a[i]; return m }
  NR == 1 { next }
  {
    k = $1 SUBSEP $2
    if (!(k in seen)) { seen[k] = 1; order[++n] = k }
    ops[k, $4] = ops[k, $4] " " $5; p99[k, $4] = p99[k, $4] " " $6; run[k, $3, $4] = $5
    reps[k] = ($3 > reps[k]) ? $3 : reps[k]
  }
  END {
    ne = split(engines, e, " ")
    printf "| bench | threads |"; for (i = 1; i <= ne; i++) printf " %s ops/s [min-max] | %s p99 us |", e[i], e[i]
    if (ne >= 2) printf " %s/%s [min-max] |", e[1], e[2]; printf "\n|---|---:|"
    for (i = 1; i <= ne; i++) printf "---:|---:|"; if (ne >= 2) printf "---:|"; printf "\n"
    for (j = 1; j <= n; j++) {
      k = order[j]; split(k, kk, SUBSEP); printf "| %s | %s |", kk[1], kk[2]
      for (i = 1; i <= ne; i++) printf " %.0f [%.0f-%.0f] | %.0f |", median(ops[k, e[i]]), lo(ops[k, e[i]]), hi(ops[k, e[i]]), median(p99[k, e[i]])
      if (ne >= 2) {
        r = ""; for (x = 1; x <= reps[k]; x++) if (run[k, x, e[2]] + 0 > 0) r = r " " run[k, x, e[1]] / run[k, x, e[2]]
        printf " %.2f [%.2f-%.2f] |", median(r), lo(r), hi(r)
      }
      printf "\n"
    }
  }' "$results" | tee "$out/table.md"
if [ -f "$out/fio.txt" ]; then
  echo "" | tee -a "$out/table.md"
  echo "fio, one writer, 4 KiB writes each followed by fdatasync: overwriting a laid-out file $(grep -m1 -o 'IOPS=[^,]*' "$out/fio.txt"), appending $(grep -m1 -o 'IOPS=[^,]*' "$out/fio-append.txt")" | tee -a "$out/table.md"
fi
echo "results: $out" >&2
