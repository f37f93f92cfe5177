#!/usr/bin/env bash
# Key-value separation (issue #57): Strata with blob files against RocksDB with its integrated
# BlobDB on the same settings, engines interleaved step by step (which goes first alternates
# by repetition), for 1 KB, 4 KB and 100 KB values.
#
#   bash bench/blob.sh [--engines strata,rocksdb] [--sizes 1024,4096,102400] [--reps 3]
#                      [--mb 1024] [--duration 15] [--out DIR] [-- EXTRA strata-bench FLAGS ...]
#
# Per value size, per repetition, each engine on a fresh DB of its own (--mb MiB of values:
# num = mb MiB / value size): fillrandom, overwrite (num writes) followed by flush and waitforcompaction
# in the same process (outside its ops/s), readrandom and seekrandom (--duration seconds
# each); each step starts after a `sync`. After the overwrite: the W-Amp, from each engine's
# statistics (`--statistics=1`): the bytes flushes and compactions wrote, tables and blob
# files, over the bytes flushes wrote (`rocksdb.flush.write.bytes` and
# `rocksdb.compact.write.bytes`, the formula of the compaction stats' Sum row, to three
# decimals instead of its one), and the space amplification: the bytes of the tables and
# blob files over the live data (num x value size; what the last memtable holds counts for
# neither engine).
# Settings: blob files on for values of 512 bytes and more, 256 MiB blob files, no
# compression, garbage collection on (age cutoff 0.25), 64 MiB write buffers, 64 MiB block
# cache, no blob cache (db_bench's `--use_blob_cache` default; pass `-- --use_blob_cache=1`
# to keep values in the block cache), Bloom filters. `--engines strata-noblob` runs Strata
# without blob files (the W-Amp goal compares them at 4 KB).
#
# Output: <out>/results.tsv (size, engine, rep, step, ops/s, W-Amp, space amp),
# <out>/sizes.txt (each engine's table and blob file bytes after the overwrite) and a summary
# per size and step: each engine's median, and strata/rocksdb ratios (median, min-max over
# repetitions). Logs in <out>/logs. The script builds strata-bench, with the `rocksdb`
# feature set of bench/features.sh for the rocksdb engine (clang and libclang-dev, see the
# README).
set -euo pipefail

engines=strata,rocksdb
sizes=1024,4096,102400
reps=3
mb=1024
duration=15
out=""
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --engines) engines="$2"; shift 2 ;;
    --sizes) sizes="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --mb) mb="$2"; shift 2 ;;
    --duration) duration="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    *) echo "bench/blob.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

repo="$(cd "$(dirname "$0")/.." && pwd)"
source "$repo/bench/features.sh"
strata_bench_features ${engines//,/ }
(cd "$repo" && cargo build --release -p strata-bench --bin strata-bench "${feature_args[@]}") >&2
bin="${CARGO_TARGET_DIR:-$repo/target}/release/strata-bench"
out="${out:-$repo/bench/out/blob-$(date -u +%Y%m%d-%H%M%S)}"
mkdir -p "$out/logs"
results="$out/results.tsv"
[ -f "$results" ] || printf 'size\tengine\trep\tstep\tops_sec\tw_amp\tspace_amp\n' > "$results"

common=(--key_size=16 --cache_size=$((64 << 20)) --bloom_bits=10 --compression_type=none
  --write_buffer_size=$((64 << 20)) --max_write_buffer_number=2 --max_background_jobs=2
  --target_file_size_base=$((64 << 20)) --max_bytes_for_level_base=$((256 << 20))
  --level_compaction_dynamic_level_bytes=true --histogram=1)
blob=(--enable_blob_files=true --min_blob_size=512 --blob_file_size=$((256 << 20))
  --blob_compression_type=none --enable_blob_garbage_collection=true
  --blob_garbage_collection_age_cutoff=0.25)

# ops/sec of benchmark $2 in log $1.
ops() { awk -v b="$2" '$1 == b { for (i = 1; i < NF; i++) if ($(i + 1) == "ops/sec") v = $i } END { print v }' "$1"; }

# W-Amp from the statistics in log $1: (flush + compaction bytes written) / flush bytes.
wamp() {
  awk '$1 == "rocksdb.flush.write.bytes" { f = $4 } $1 == "rocksdb.compact.write.bytes" { c = $4 }
       END { if (f > 0) printf "%.3f", (f + c) / f }' "$1"
}

run() { # engine size rep step benchmarks flags...
  local engine="$1" size="$2" rep="$3" step="$4" benches="$5"; shift 5
  local kind="$engine" flags=("${blob[@]}")
  if [ "$engine" = strata-noblob ]; then kind=strata; flags=(); fi
  local db="$out/db/$engine" log="$out/logs/$size-$engine-$rep-$step.log"
  local num=$(( (mb << 20) / size ))
  # The step before wrote up to gigabytes through the page cache: written out first, so that
  # this step's syncs do not queue behind that engine's writeback.
  sync
  "$bin" --engine="$kind" --db="$db" --num="$num" --value_size="$size" "${common[@]}" \
    "${flags[@]}" --benchmarks="$benches" --seed=$((rep * 1000 + size)) "$@" "${extra[@]}" \
    > "$log" 2>&1 || { echo "bench/blob.sh: $engine $step failed, see $log" >&2; tail -5 "$log" >&2; exit 1; }
  local o w="" s=""
  o="$(ops "$log" "${benches%%,*}")"
  if [ "$step" = overwrite ]; then
    w="$(wamp "$log")"
    local tables blobs bytes
    tables="$(find "$db" -maxdepth 1 -name '*.sst' -printf '%s\n' | awk '{ t += $1 } END { printf "%.0f\n", t }')"
    blobs="$(find "$db" -maxdepth 1 -name '*.blob' -printf '%s\n' | awk '{ t += $1 } END { printf "%.0f\n", t }')"
    bytes=$((tables + blobs))
    echo "$size $engine rep $rep: tables $tables bytes, blob files $blobs bytes" >> "$out/sizes.txt"
    s="$(awk -v b="$bytes" -v n="$num" -v v="$size" 'BEGIN { printf "%.3f", b / (n * v) }')"
  fi
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$size" "$engine" "$rep" "$step" "$o" "$w" "$s" >> "$results"
  echo "$size $engine rep $rep $step: ${o} ops/s${w:+, W-Amp $w}${s:+, space amp $s}" >&2
}

IFS=, read -r -a engine_list <<< "$engines"
IFS=, read -r -a size_list <<< "$sizes"
for rep in $(seq 1 "$reps"); do
  order=("${engine_list[@]}")
  if [ $((rep % 2)) -eq 0 ]; then
    order=(); for ((i = ${#engine_list[@]} - 1; i >= 0; i--)); do order+=("${engine_list[$i]}"); done
  fi
  for size in "${size_list[@]}"; do
    for e in "${order[@]}"; do rm -rf "$out/db/$e"; run "$e" "$size" "$rep" fillrandom fillrandom,stats; done
    for e in "${order[@]}"; do run "$e" "$size" "$rep" overwrite overwrite,flush,waitforcompaction,stats --use_existing_db=1 --statistics=1; done
    for e in "${order[@]}"; do run "$e" "$size" "$rep" readrandom readrandom --use_existing_db=1 --duration="$duration"; done
    for e in "${order[@]}"; do run "$e" "$size" "$rep" seekrandom seekrandom --use_existing_db=1 --duration="$duration" --seek_nexts=10; done
  done
done
rm -rf "$out/db"

python3 - "$results" "${engine_list[0]}" <<'PY'
import csv, statistics, sys
from collections import defaultdict
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
base = "rocksdb"
vals = defaultdict(dict)
for r in rows:
    for col in ("ops_sec", "w_amp", "space_amp"):
        if r[col]:
            vals[(r["size"], r["step"], col)].setdefault(r["engine"], {})[r["rep"]] = float(r[col])
print("| size | step | metric | " + " | ".join(sorted({e for v in vals.values() for e in v})) + " | ratios to rocksdb: median (min-max) |")
print("|---|---|---|" + "---|" * (len({e for v in vals.values() for e in v}) + 1))
for (size, step, col), per in sorted(vals.items(), key=lambda x: (int(x[0][0]), x[0][1], x[0][2])):
    engines = sorted({e for v in vals.values() for e in v})
    meds = [f"{statistics.median(per[e].values()):.3g}" if e in per else "" for e in engines]
    ratios = []
    if base in per:
        for e in engines:
            if e == base or e not in per:
                continue
            rs = [per[e][k] / per[base][k] for k in per[e] if k in per[base] and per[base][k]]
            if rs:
                ratios.append(f"{e} {statistics.median(rs):.2f} ({min(rs):.2f}-{max(rs):.2f})")
    print(f"| {size} | {step} | {col} | " + " | ".join(meds) + " | " + "; ".join(ratios) + " |")
PY
