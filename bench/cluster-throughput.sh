#!/usr/bin/env bash
# A 3-replica Raft group of strata-server against one strata-server, under redis-benchmark.
#
#   bash bench/cluster-throughput.sh [--reps 3] [--requests 40000] [--clients 16]
#                                    [--server-bin PATH] [--out FILE]
#
# Each repetition runs, in turn: a standalone server with --appendfsync always, then a
# 3-node cluster (bench/cluster.sh, on loopback) with one partition of 3 replicas and
# --appendfsync always, so every write is committed on a quorum of fdatasynced logs. On
# each: `redis-benchmark -t set`, then `-t get`, with --clients connections, 100,000 random
# keys and 100-byte values (the GETs read the SETs' keys). One line per run goes to --out
# (default bench/out/cluster-throughput.txt) and stdout: repetition, server, command,
# requests per second, then redis-benchmark's latency summary in ms (avg min p50 p95 p99
# max). The release binary is built unless --server-bin names one. Without redis-benchmark
# or redis-cli it prints why and exits 0 (skipped). Ports 7301 and 7101-7103 (clients),
# 8101-8103 (Raft) on 127.0.0.1 must be free.
set -euo pipefail
cd "$(dirname "$0")/.."

reps=3
requests=40000
clients=16
server_bin=""
out=bench/out/cluster-throughput.txt
usage() { sed -n '2,17p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --requests) requests="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cluster-throughput.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
for tool in redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "cluster-throughput.sh: skipped: $tool is not installed (apt-get install redis-tools)"; exit 0; }
done
if [ -z "$server_bin" ]; then
  cargo build --release -p strata-server >&2
  server_bin="${CARGO_TARGET_DIR:-target}/release/strata-server"
fi
[ -x "$server_bin" ] || { echo "cluster-throughput.sh: no server binary at $server_bin" >&2; exit 1; }
mkdir -p "$(dirname "$out")"
: > "$out"
work=$(mktemp -d)
single_pid=""
cleanup() {
  [ -n "$single_pid" ] && kill "$single_pid" 2>/dev/null || true
  [ -f "$work/cluster/ports" ] && bash bench/cluster.sh down --dir "$work/cluster" >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

# Requests per second and the latency summary of one redis-benchmark run on port $1.
bench() {
  redis-benchmark -p "$1" -t "$2" -n "$requests" -c "$clients" -r 100000 -d 100 2>&1 | tr '\r' '\n' \
    | awk '/throughput summary/{t=$3} /latency summary/{getline; getline; print t, $0}'
}
answers() { redis-cli -p "$1" ping >/dev/null 2>&1; }

for rep in $(seq 1 "$reps"); do
  rm -rf "$work/single" && mkdir -p "$work/single"
  # Under `timeout`, so it stops by itself should this script be killed (timeout passes the
  # script's SIGTERM on to it).
  timeout 1800 "$server_bin" --port 7301 --dir "$work/single" --appendfsync always > "$work/single.log" 2>&1 &
  single_pid=$!
  for _ in $(seq 100); do answers 7301 && break; sleep 0.1; done
  answers 7301 || { echo "cluster-throughput.sh: the single server did not start:" >&2; tail -5 "$work/single.log" >&2; exit 1; }
  for t in set get; do echo "rep$rep single $t $(bench 7301 $t)" | tee -a "$out"; done
  kill "$single_pid"; wait "$single_pid" 2>/dev/null || true; single_pid=""
  rm -rf "$work/cluster"
  bash bench/cluster.sh up --nodes 3 --partitions 1 --replicas 3 --dir "$work/cluster" \
    --server-bin "$server_bin" --base-port 7101 --appendfsync always --ttl 1800 >/dev/null
  for t in set get; do echo "rep$rep cluster $t $(bench 7101 $t)" | tee -a "$out"; done
  bash bench/cluster.sh down --dir "$work/cluster"
done
