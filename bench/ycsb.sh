#!/usr/bin/env bash
# YCSB over the Redis protocol: strata-server against redis-server on this machine, in the
# shape of the Pegasus benchmark page (seed 004): per workload, read and write QPS with
# average, P99 and P99.9 latency, 1 KB records (10 fields of 100 bytes).
#
#   bash bench/ycsb.sh [--records N] [--ops N] [--threads T] [--reps R]
#                      [--workloads a,b,...] [--durability always,everysec]
#                      [--engines strata,redis] [--server-bin PATH] [--out DIR]
#
# Each repetition, for each durability, runs every engine in turn (the order reversed on even
# repetitions): a fresh server on a free loopback port with its own temporary directory, the
# YCSB load phase (--records inserts), then each workload (--ops operations), then the server
# is stopped and its directory removed. Workloads are bench/ycsb/workloads/<name>: a-f are
# YCSB's standard six, rw-R-W the Pegasus read:write ratios (0:1, 1:0, 1:1, 1:3, 1:30, 3:1,
# 30:1, reads and updates, zipfian).
#
# Durability (equal on both sides): `always` = redis `appendonly yes` + `appendfsync always`
# vs strata-server `--appendfsync always` (an acknowledged write is on disk); `everysec` =
# `appendfsync everysec` on both (up to about a second of acknowledged writes may be lost).
#
# Needs bench/setup-ycsb.sh to have run (redis-server, redis-cli, Java, the YCSB client).
# Writes DIR (default bench/out/ycsb-<timestamp>): runs.tsv (one row per YCSB process),
# logs/, and from strata-bench-ycsb-report: results.tsv (per run), table.tsv and table.md
# (median [min-max] over repetitions; strata/redis of the medians and, per repetition, the
# ratio within it), ycsb_qps.png.
# Exits non-zero when any YCSB process failed or any operation returned an error.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/servers.sh

records=100000
ops=100000
threads=8
reps=3
workloads="load,a,b,c,f,rw-0-1,rw-1-0,rw-1-1,rw-1-3,rw-1-30,rw-3-1,rw-30-1,d,e"
durability="always,everysec"
engines="strata,redis"
server_bin=""
out=""
usage() { sed -n '2,26p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --durability) durability="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ycsb.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for n in records ops threads reps; do
  if ! [[ "${!n}" =~ ^[1-9][0-9]*$ ]]; then
    echo "ycsb.sh: --$n '${!n}': expected a positive integer" >&2
    exit 2
  fi
done
IFS=, read -r -a wl_list <<<"$workloads"
IFS=, read -r -a dur_list <<<"$durability"
IFS=, read -r -a eng_list <<<"$engines"
for w in "${wl_list[@]}"; do
  if [ "$w" != load ] && [ ! -f "bench/ycsb/workloads/$w" ]; then
    echo "ycsb.sh: --workloads: no workload '$w' in bench/ycsb/workloads ($(ls bench/ycsb/workloads | tr '\n' ' '))" >&2
    exit 2
  fi
done
for d in "${dur_list[@]}"; do
  case "$d" in always|everysec|no) ;; *) echo "ycsb.sh: --durability '$d': expected always, everysec or no" >&2; exit 2 ;; esac
done
for e in "${eng_list[@]}"; do
  case "$e" in strata|redis) ;; *) echo "ycsb.sh: --engines '$e': expected strata or redis" >&2; exit 2 ;; esac
done

cp_jars="bench/ycsb/target/classes:bench/ycsb/target/lib/*"
if ! command -v redis-cli >/dev/null || ! command -v java >/dev/null \
  || [ ! -f bench/ycsb/target/classes/org/strata/ycsb/RedisClient.class ]; then
  echo "ycsb.sh: the YCSB client or redis-tools are missing; run: bash bench/setup-ycsb.sh" >&2
  exit 1
fi
if [[ ",$engines," == *,redis,* ]] && ! command -v redis-server >/dev/null; then
  echo "ycsb.sh: redis-server is missing; run: bash bench/setup-ycsb.sh" >&2
  exit 1
fi
if [[ ",$engines," == *,strata,* ]]; then
  resolve_strata_server "$server_bin"
fi
echo "ycsb.sh: building strata-bench-ycsb-report" >&2
nice -n 10 cargo build --release -q -p strata-bench --bin strata-bench-ycsb-report
report_bin="${CARGO_TARGET_DIR:-target}/release/strata-bench-ycsb-report"

out="${out:-bench/out/ycsb-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out/logs"
runs="$out/runs.tsv"
printf 'rep\tdurability\tengine\tworkload\tcase\tratio\tthreads\trecords\tops\texit\tlog\n' >"$runs"
{
  echo "# bench/ycsb.sh $(date -u +%FT%TZ) on $(hostname), $(nproc) cores"
  echo "records=$records ops=$ops threads=$threads reps=$reps workloads=$workloads durability=$durability engines=$engines"
  echo "redis: $(redis-server --version)"
  [ -n "$STRATA_SERVER" ] && echo "strata-server: $STRATA_SERVER, sha256 $(sha256sum "$STRATA_SERVER" | cut -c1-16), built $(date -u -r "$STRATA_SERVER" +%FT%TZ)"
  echo "bench scripts at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  java -version 2>&1 | head -n 1
} >"$out/environment.txt"

data_root=$(mktemp -d "${TMPDIR:-/tmp}/strata-ycsb.XXXXXX")
cleanup() {
  server_stop
  rm -rf "$data_root"
}
trap cleanup EXIT

failed=0
ycsb() { # phase(-load|-t) workload-file log port
  java -cp "$cp_jars" site.ycsb.Client "$1" -db org.strata.ycsb.RedisClient -P "$2" \
    -p recordcount="$records" -p operationcount="$ops" -p threadcount="$threads" \
    -p redis.host=127.0.0.1 -p redis.port="$4" \
    -p measurementtype=hdrhistogram -p hdrhistogram.percentiles=50,99,99.9 \
    >"$3" 2>"$3.err"
}

for rep in $(seq 1 "$reps"); do
  mapfile -t order < <(rep_order "$rep" "${eng_list[@]}")
  for dur in "${dur_list[@]}"; do
    for engine in "${order[@]}"; do
      dir="$data_root/$engine.$dur.$rep"
      server_start "$engine" "$dur" "$dir"
      echo "ycsb.sh: rep $rep, $dur: $engine on port $SERVER_PORT" >&2
      loaded=0
      for w in "${wl_list[@]}"; do
        log="$out/logs/$rep.$dur.$engine.$w.log"
        if [ "$w" = load ]; then
          phase=-load
          file=bench/ycsb/workloads/a
        else
          phase=-t
          file="bench/ycsb/workloads/$w"
          if [ "$loaded" = 0 ]; then
            # A workload needs the records: load them unmeasured when the list has no 'load'.
            ycsb -load "$file" "$out/logs/$rep.$dur.$engine.load-unlisted.log" "$SERVER_PORT" || true
            loaded=1
          fi
        fi
        [ "$w" = load ] && loaded=1
        rc=0
        ycsb "$phase" "$file" "$log" "$SERVER_PORT" || rc=$?
        if [ "$rc" != 0 ]; then
          failed=1
          echo "ycsb.sh: YCSB $w on $engine ($dur, rep $rep) exited with $rc; see $log.err" >&2
        fi
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
          failed=1
          echo "ycsb.sh: $engine died during $w ($dur, rep $rep); last log lines:" >&2
          tail -n 5 "$dir/server.log" >&2
        fi
        if [ "$w" = load ]; then
          case_name="Load"; ratio="0:1 insert"
        else
          case_name=$(sed -n 's/^# strata-ycsb: case=//p' "$file")
          ratio=$(sed -n 's/^# strata-ycsb: ratio=//p' "$file")
        fi
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$dur" "$engine" "$w" \
          "${case_name:-$w}" "${ratio:-?}" "$threads" \
          "$records" "$ops" "$rc" "logs/$(basename "$log")" >>"$runs"
        echo "ycsb.sh:   $w: $(grep -m1 'Throughput' "$log" | cut -d, -f3 | cut -d. -f1) ops/s" >&2
      done
      server_stop
      cp "$dir/server.log" "$out/logs/$rep.$dur.$engine.server.log" 2>/dev/null || true
      rm -rf "$dir"
    done
  done
done

rc=0
"$report_bin" "$out" || rc=$?
[ "$rc" = 0 ] || failed=1
echo "ycsb.sh: $out/table.md" >&2
exit "$failed"
