#!/usr/bin/env bash
# What one write costs the cluster against one server: CPU, context switches and system calls
# per write, under go-ycsb's load phase.
#
#   bash bench/cluster-cost.sh [--records 40000] [--threads 16] [--reps 1] [--replicas 3]
#                              [--appendfsync always|everysec] [--server-bin PATH] [--out DIR]
#
# Each repetition runs, in turn: one strata-server, then the Pegasus shape on loopback
# (bench/cluster.sh: 5 nodes x 64 partitions x 3 replicas, `--node-timeout 1500` as
# bench/ycsb-cluster.sh runs it; `--replicas 1,3` runs the shape once per replica count,
# named cluster-r1, cluster-r3, to separate a group's own cost from its followers'), all
# with --appendfsync's policy (default always), each loaded by go-ycsb (`load redis`,
# `redis.datatype=string`, 1 KB records; `redis.mode` single or cluster). Over the whole
# load it reads each server process's CPU (`utime + stime`) and context switches per thread
# name from /proc, and, where `perf` can count tracepoints, the fdatasync, sendto and futex
# calls (`perf stat -p`). One line per run and thread name goes to DIR/cost.tsv (default
# bench/out/cluster-cost) and stdout, per write: microseconds of CPU, voluntary and
# involuntary switches; then the run's writes per second and system calls per write. go-ycsb
# must be built (bench/ycsb-cluster.sh --clients goycsb builds it into
# ~/.cache/strata-bench); without it, or without redis-cli, the script says so and exits 0.
# Every process is bounded (`timeout`, `--ttl`) and stopped on exit; traffic stays on
# 127.0.0.1 (ports 7301, 7001-7005, 8001-8005).
set -euo pipefail
cd "$(dirname "$0")/.."

records=40000
appendfsync=always
threads=16
reps=1
replicas=3
server_bin=""
out=bench/out/cluster-cost
usage() { sed -n '2,22p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records="$2"; shift 2 ;;
    --appendfsync) appendfsync="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --replicas) replicas="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cluster-cost.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
for v in "$records" "$threads" "$reps"; do
  [[ "$v" =~ ^[1-9][0-9]*$ ]] || { echo "cluster-cost.sh: '$v': expected a positive number" >&2; exit 2; }
done
IFS=, read -r -a replica_counts <<< "$replicas"
[ "${#replica_counts[@]}" -gt 0 ] || { echo "cluster-cost.sh: --replicas '': expected counts such as 3 or 1,3" >&2; exit 2; }
for r in "${replica_counts[@]}"; do
  [[ "$r" =~ ^[1-5]$ ]] || { echo "cluster-cost.sh: --replicas '$replicas': '$r' is not a replica count of 1 to 5 (the shape has 5 nodes)" >&2; exit 2; }
done
case "$appendfsync" in always|everysec) ;; *) echo "cluster-cost.sh: --appendfsync '$appendfsync': expected always or everysec" >&2; exit 2 ;; esac
goycsb="${STRATA_BENCH_CACHE:-$HOME/.cache/strata-bench}/go-ycsb/v1.0.3/go-ycsb"
[ -x "$goycsb" ] || { echo "cluster-cost.sh: skipped: go-ycsb is not built ($goycsb; bash bench/ycsb-cluster.sh --clients goycsb builds it)"; exit 0; }
command -v redis-cli >/dev/null || { echo "cluster-cost.sh: skipped: redis-cli is not installed (apt-get install redis-tools)"; exit 0; }
if [ -z "$server_bin" ]; then
  cargo build --release -p strata-server >&2
  server_bin="$PWD/target/release/strata-server"
fi
server_bin=$(realpath "$server_bin")
perf_ok=""
if command -v perf >/dev/null && perf stat -e syscalls:sys_enter_fdatasync -- true >/dev/null 2>&1; then
  perf_ok=1
fi
mkdir -p "$out"
work=$(mktemp -d "${TMPDIR:-/tmp}/cluster-cost.XXXXXX")
single_pid=""
stat_pid=""
cleanup() {
  [ -z "$single_pid" ] || kill "$single_pid" 2>/dev/null || true
  [ -z "$stat_pid" ] || pkill -P "$stat_pid" sleep 2>/dev/null || true
  bash bench/cluster.sh down --dir "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Per thread name of the processes in $@: "name cpu_ticks voluntary involuntary".
threads_of() {
  for p in "$@"; do
    for t in /proc/"$p"/task/*; do
      [ -r "$t/stat" ] || continue
      printf '%s %s %s\n' "$(tr ' ' '_' < "$t/comm")" \
        "$(awk '{print $14 + $15}' "$t/stat")" \
        "$(awk '/^voluntary_ctxt/ {v = $2} /^nonvoluntary_ctxt/ {n = $2} END {print v, n}' "$t/status")"
    done
  done | awk '{c[$1] += $2; v[$1] += $3; n[$1] += $4} END {for (k in c) print k, c[k], v[k], n[k]}' | sort
}

# measure ENGINE REP ADDR PIDS...: loads, prints and records the per-write costs.
measure() {
  local engine=$1 rep=$2 addr=$3; shift 3
  local mode=single; [ "$engine" = single ] || mode=cluster
  threads_of "$@" > "$work/before"
  stat_pid=""
  if [ -n "$perf_ok" ]; then
    # Counts until the load ends (its `sleep` is ended then), at most as long as the load.
    perf stat -x, -e syscalls:sys_enter_fdatasync,syscalls:sys_enter_sendto,syscalls:sys_enter_futex \
      -p "$(IFS=,; echo "$*")" -o "$work/perf" -- sleep 900 >/dev/null 2>&1 &
    stat_pid=$!
  fi
  local t0 t1
  t0=$(date +%s.%N)
  timeout 900 "$goycsb" load redis -P bench/ycsb/workloads/rw-0-1 -p workload=core \
    -p recordcount="$records" -p operationcount="$records" -p threadcount="$threads" \
    -p redis.mode="$mode" -p redis.addr="$addr" -p redis.datatype=string \
    > "$out/$engine-$rep.raw" 2>&1 || { echo "cluster-cost.sh: go-ycsb failed on $engine ($out/$engine-$rep.raw)" >&2; return 1; }
  t1=$(date +%s.%N)
  threads_of "$@" > "$work/after"
  local calls="-"
  if [ -n "$stat_pid" ]; then
    # perf stat ends with its command (a background job ignores SIGINT).
    pkill -P "$stat_pid" sleep 2>/dev/null || true
    wait "$stat_pid" 2>/dev/null || true
    stat_pid=""
    calls=$(awk -F, -v n="$records" '/sys_enter/ {sub(/.*sys_enter_/, "", $3); printf "%s%s=%.2f", sep, $3, $1 / n; sep = " "}' "$work/perf")
  fi
  local hz; hz=$(getconf CLK_TCK)
  local qps; qps=$(awk -v a="$t0" -v b="$t1" -v n="$records" 'BEGIN {printf "%.0f", n / (b - a)}')
  join -a 2 -e 0 -o 0,1.2,1.3,1.4,2.2,2.3,2.4 "$work/before" "$work/after" |
    awk -v e="$engine" -v r="$rep" -v n="$records" -v hz="$hz" -v q="$qps" -v c="$calls" '
      {cpu = ($5 - $2) * 1e6 / hz / n; vol = ($6 - $3) / n; inv = ($7 - $4) / n
       if (cpu < 0.05 && vol < 0.005 && inv < 0.005) next
       t_cpu += cpu; t_vol += vol; t_inv += inv
       printf "%s\t%s\t%s\t%.1f\t%.2f\t%.2f\t%s\t%s\n", e, r, $1, cpu, vol, inv, q, c}
      END {printf "%s\t%s\t%s\t%.1f\t%.2f\t%.2f\t%s\t%s\n", e, r, "all", t_cpu, t_vol, t_inv, q, c}' |
    tee -a "$out/cost.tsv"
}

printf 'engine\trep\tthread\tcpu_us_per_write\tvoluntary_per_write\tinvoluntary_per_write\twrites_per_s\tcalls_per_write\n' > "$out/cost.tsv"
for rep in $(seq 1 "$reps"); do
  rm -rf "$work/single"; mkdir -p "$work/single"
  timeout 900 "$server_bin" --port 7301 --dir "$work/single" --appendfsync "$appendfsync" \
    > "$work/single.log" 2>&1 &
  single_pid=$!
  for _ in $(seq 1 100); do redis-cli -p 7301 ping >/dev/null 2>&1 && break; sleep 0.1; done
  # The server is timeout's child: its threads are the ones measured.
  server_pid=$(pgrep -P "$single_pid") || { echo "cluster-cost.sh: the server did not start ($work/single.log)" >&2; exit 1; }
  measure single "$rep" 127.0.0.1:7301 "$server_pid"
  kill "$single_pid"; wait "$single_pid" 2>/dev/null || true; single_pid=""

  for r in "${replica_counts[@]}"; do
    name=cluster; [ "${#replica_counts[@]}" -eq 1 ] || name="cluster-r$r"
    bash bench/cluster.sh down --dir "$work/cluster" >/dev/null 2>&1 || true
    rm -rf "$work/cluster"
    bash bench/cluster.sh up --nodes 5 --partitions 64 --replicas "$r" --dir "$work/cluster" \
      --appendfsync "$appendfsync" --node-timeout 1500 --ttl 900 --server-bin "$server_bin" \
      > "$work/addrs" 2> "$work/up.err" || { cat "$work/up.err" >&2; exit 1; }
    mapfile -t pids < <(cat "$work"/cluster/node*/pid)
    measure "$name" "$rep" "$(paste -sd';' "$work/addrs")" "${pids[@]}"
    bash bench/cluster.sh down --dir "$work/cluster" >/dev/null 2>&1 || true
  done
done
echo "cluster-cost.sh: $out/cost.tsv" >&2
