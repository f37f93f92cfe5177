#!/usr/bin/env bash
# A master with one replica: strata-server against redis-server as the master, each with a
# redis-server 7.0 replica following it, measured with redis-benchmark against the master
# (SET and LPUSH, random keys); then whether the replica ended where its master did.
#
#   bash bench/replica.sh [--reps R] [--requests N] [--clients C] [--fsync everysec|always]
#                         [--server-bin PATH]
#
# Each repetition runs strata-server with a replica, redis-server with a replica, and
# strata-server alone (the replica's cost), in that order: a fresh master on a free loopback
# port (`bench/servers.sh`, equal durability on both sides), a replica started with
# `--replicaof` and waited for until its link is up, the benchmark, then a second for the
# replica to catch up. Prints one line per run: requests per second, the master's and the
# replica's offsets (equal when the replica holds the whole stream) and both key counts.
# Needs redis-server, redis-cli and redis-benchmark (skips with a message without them).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/servers.sh

reps=3 requests=200000 clients=50 fsync=everysec bin=""
while [ $# -gt 0 ]; do
  case "$1" in
    --reps) reps=$2; shift 2 ;;
    --requests) requests=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --fsync) fsync=$2; shift 2 ;;
    --server-bin) bin=$2; shift 2 ;;
    *) echo "replica.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
for tool in redis-server redis-cli redis-benchmark; do
  if ! command -v "$tool" > /dev/null; then
    echo "replica.sh: skipped: $tool is not installed (bench/setup-ycsb.sh installs it)"
    exit 0
  fi
done
resolve_strata_server "$bin"

work=$(mktemp -d)
replica_pid=""
cleanup() {
  [ -n "$replica_pid" ] && kill "$replica_pid" 2> /dev/null || true
  server_stop 2> /dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

field() { redis-cli -p "$1" info replication | tr -d '\r' | sed -n "s/^$2://p"; }

# start_replica -> replica_pid, rport: a redis-server following the master, its link up.
# A port lost to a race (another process bound it first: the replica exits at once) is
# tried again with another; a replica whose link does not come up ends the script.
start_replica() {
  local attempt
  for attempt in 1 2 3; do
    rport=$(free_port)
    (cd "$work/r" && exec timeout 3600 redis-server --port "$rport" --bind 127.0.0.1 --save "" \
      --appendonly no --replicaof 127.0.0.1 "$SERVER_PORT" > "$work/r/log" 2>&1) &
    replica_pid=$!
    for _ in $(seq 300); do
      [ "$(field "$rport" master_link_status 2> /dev/null)" = up ] && return 0
      kill -0 "$replica_pid" 2> /dev/null || break
      sleep 0.1
    done
    if kill -0 "$replica_pid" 2> /dev/null; then
      echo "replica.sh: the replica on port $rport did not link to the master in 30 s:" >&2
      tail -5 "$work/r/log" >&2
      exit 1
    fi
    wait "$replica_pid" 2> /dev/null || true
    echo "replica.sh: the replica exited at start (attempt $attempt):" >&2
    tail -2 "$work/r/log" >&2
  done
  echo "replica.sh: no replica started in 3 attempts" >&2
  exit 1
}

# run ENGINE WITH_REPLICA
run() {
  rm -rf "$work/m" "$work/r" && mkdir -p "$work/r"
  server_start "$1" "$fsync" "$work/m"
  local rport=""
  if [ "$2" = 1 ]; then
    start_replica
  fi
  local rates
  rates=$(redis-benchmark -p "$SERVER_PORT" -t set,lpush -n "$requests" -c "$clients" \
    -r 100000 -q 2> /dev/null | tr '\r' '\n' | awk '/requests per second/ {printf "%s %s ", $1, $2}')
  local tail=""
  if [ "$2" = 1 ]; then
    sleep 1
    if ! kill -0 "$replica_pid" 2> /dev/null; then
      echo "replica.sh: the replica on port $rport exited during the run:" >&2
      tail -5 "$work/r/log" >&2
      exit 1
    fi
    tail="master_offset $(field "$SERVER_PORT" master_repl_offset) replica_offset \
$(field "$rport" slave_repl_offset) keys $(redis-cli -p "$SERVER_PORT" dbsize) \
$(redis-cli -p "$rport" dbsize)"
    kill "$replica_pid" 2> /dev/null || true
    wait "$replica_pid" 2> /dev/null || true
    replica_pid=""
  fi
  echo "$1 replica=$2 $rates$tail"
  server_stop
}

for _ in $(seq "$reps"); do
  run strata 1
  run redis 1
  run strata 0
done
