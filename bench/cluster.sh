#!/usr/bin/env bash
# A strata-server cluster on loopback, for benchmarks and fault runs.
#
#   bash bench/cluster.sh up --nodes N [--replicas R] [--partitions P] --dir D
#                            [--base-port PORT] [--server-bin PATH] [--appendfsync POLICY]
#                            [--ttl SECONDS]
#   bash bench/cluster.sh status --dir D
#   bash bench/cluster.sh add --dir D [--no-rebalance]
#   bash bench/cluster.sh remove --dir D --id I
#   bash bench/cluster.sh down --dir D
#
# up: starts N strata-server processes in cluster mode (node i: clients on 127.0.0.1 at
# PORT+i-1, its Raft transport at PORT+1000+i-1; data, log and pid in D/node<i>), P
# partitions (default 16) of R replicas each (default 3, at most N), waits until every
# partition has a leader (60 s at most), and prints one `127.0.0.1:PORT` line per node.
# The release binary is built unless --server-bin names one. The nodes stop by themselves
# after --ttl seconds (default 7200) if `down` has not stopped them. down: SIGTERM to every node,
# then SIGKILL to any still running after 15 s. status: each partition's slots, leader and
# replicas, from INFO cluster of every node that answers.
# add: starts one more node (the next id, its ports after the others'), which names only
# itself and joins through the cluster map: `strata-cluster add-node --rebalance --wait` (the
# controller built beside the server) adds it and waits until the replicas have moved.
# remove: `strata-cluster remove-node I --wait` (its replicas move away, then it is dropped
# from the map), then stops node I.
# Traffic stays on 127.0.0.1. Exit status 1 when a step fails, with the reason on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."

cmd="${1:-}"
[ $# -gt 0 ] && shift
nodes=""
replicas=3
partitions=16
dir=""
base_port=7001
server_bin=""
appendfsync=everysec
ttl=7200
after=0
usage() { sed -n '2,26p' "$0"; }
rebalance=--rebalance
id=
while [ $# -gt 0 ]; do
  case "$1" in
    --nodes) nodes="$2"; shift 2 ;;
    --replicas) replicas="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --dir) dir="$2"; shift 2 ;;
    --base-port) base_port="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --appendfsync) appendfsync="$2"; shift 2 ;;
    --ttl) ttl="$2"; shift 2 ;;
    --after) after="$2"; shift 2 ;;
    --id) id="$2"; shift 2 ;;
    --no-rebalance) rebalance=""; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cluster.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] || { echo "cluster.sh: --dir is required" >&2; exit 2; }

# INFO cluster of the node on $1 (empty when it does not answer within 2 s).
info_cluster() {
  local port=$1 len
  {
    exec 3<>"/dev/tcp/127.0.0.1/$port" || return 0
    printf '*2\r\n$4\r\nINFO\r\n$7\r\ncluster\r\n' >&3
    IFS= read -r -t 2 len <&3 || { exec 3>&-; return 0; }
    len=${len#\$}; len=${len%$'\r'}
    timeout 2 head -c "$len" <&3 || true
    exec 3>&-
  } 2>/dev/null
}

ports_of() { cat "$dir/ports"; }

# The controller beside the server binary the cluster runs.
controller() {
  local bin
  bin="$(dirname "$(cat "$dir/server-bin")")/strata-cluster"
  [ -x "$bin" ] || { echo "cluster.sh: no strata-cluster beside the server, at $bin" >&2; exit 1; }
  timeout -k 5 600 "$bin" --node "127.0.0.1:${entry:-$(head -1 "$dir/ports")}" --timeout 540 "$@"
}

case "$cmd" in
  up)
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh up: --nodes N is required (N >= 1)" >&2; exit 2; }
    if [ -z "$server_bin" ]; then
      cargo build --release -p strata-server >&2
      server_bin="${CARGO_TARGET_DIR:-target}/release/strata-server"
    fi
    [ -x "$server_bin" ] || { echo "cluster.sh: no server binary at $server_bin" >&2; exit 1; }
    mkdir -p "$dir"
    echo "$server_bin" > "$dir/server-bin"
    echo "$base_port $partitions $replicas $appendfsync" > "$dir/settings"
    list=""
    : > "$dir/ports"
    for i in $(seq 1 "$nodes"); do
      port=$((base_port + i - 1)); raft=$((base_port + 1000 + i - 1))
      list="${list:+$list,}$i=127.0.0.1:$port:$raft"
      echo "$port" >> "$dir/ports"
    done
    for i in $(seq 1 "$nodes"); do
      port=$((base_port + i - 1))
      mkdir -p "$dir/node$i"
      # A node's first start is the new cluster's: its empty directory creates the groups.
      # Later starts on the directory leave it out (a node that lost its data catches up).
      bootstrap=no; [ -d "$dir/node$i/data" ] || bootstrap=yes
      nohup "$server_bin" --port "$port" --dir "$dir/node$i/data" --appendfsync "$appendfsync" \
        --cluster-enabled yes --cluster-node-id "$i" --cluster-nodes "$list" \
        --cluster-partitions "$partitions" --cluster-replicas "$replicas" \
        --cluster-bootstrap "$bootstrap" > "$dir/node$i/log" 2>&1 &
      echo $! > "$dir/node$i/pid"
    done
    [[ "$ttl" =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh up: --ttl must be a positive number of seconds" >&2; exit 2; }
    # The watchdog: the same stop as `down`, once the time is up.
    nohup bash "$0" down --dir "$dir" --after "$ttl" > "$dir/watchdog.log" 2>&1 &
    echo $! > "$dir/watchdog.pid"
    deadline=$((SECONDS + 60))
    while :; do
      led=$(for p in $(ports_of); do info_cluster "$p"; done | tr -d '\r' \
              | { grep -o '^partition[0-9]*:.*role=leader' || true; } | cut -d: -f1 | sort -u | wc -l)
      [ "$led" -eq "$partitions" ] && break
      if [ $SECONDS -ge $deadline ]; then
        echo "cluster.sh up: $led of $partitions partitions have a leader after 60 s (logs in $dir/node*/log)" >&2
        exit 1
      fi
      for i in $(seq 1 "$nodes"); do
        kill -0 "$(cat "$dir/node$i/pid")" 2>/dev/null || {
          echo "cluster.sh up: node $i exited:" >&2; tail -5 "$dir/node$i/log" >&2; exit 1; }
      done
      sleep 0.2
    done
    for p in $(ports_of); do echo "127.0.0.1:$p"; done
    ;;
  add)
    [ -f "$dir/settings" ] || { echo "cluster.sh add: no cluster in $dir" >&2; exit 1; }
    read -r base_port partitions replicas appendfsync < "$dir/settings"
    server_bin=$(cat "$dir/server-bin")
    i=1
    while [ -d "$dir/node$i" ]; do i=$((i + 1)); done
    port=$((base_port + i - 1)); raft=$((base_port + 1000 + i - 1))
    mkdir -p "$dir/node$i"
    nohup "$server_bin" --port "$port" --dir "$dir/node$i/data" --appendfsync "$appendfsync" \
      --cluster-enabled yes --cluster-node-id "$i" --cluster-nodes "$i=127.0.0.1:$port:$raft" \
      --cluster-partitions "$partitions" --cluster-replicas "$replicas" \
      --cluster-bootstrap no > "$dir/node$i/log" 2>&1 &
    echo $! > "$dir/node$i/pid"
    deadline=$((SECONDS + 30))
    until (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; do
      [ $SECONDS -lt $deadline ] || { echo "cluster.sh add: node $i does not answer (log: $dir/node$i/log)" >&2; exit 1; }
      sleep 0.1
    done
    controller add-node "$i" "127.0.0.1:$port:$raft" $rebalance --wait >&2
    echo "$port" >> "$dir/ports"
    echo "127.0.0.1:$port"
    ;;
  remove)
    [[ "$id" =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh remove: --id I is required" >&2; exit 2; }
    [ -f "$dir/node$id/pid" ] || { echo "cluster.sh remove: node $id is not running in $dir" >&2; exit 1; }
    read -r base_port _ < "$dir/settings"
    port=$((base_port + id - 1))
    # Ask another node, so the controller does not lose its entry point.
    entry=$(grep -vx "$port" "$dir/ports" | head -1)
    [ -n "$entry" ] || { echo "cluster.sh remove: node $id is the last node" >&2; exit 1; }
    controller remove-node "$id" --wait >&2
    grep -vx "$port" "$dir/ports" > "$dir/ports.new"; mv "$dir/ports.new" "$dir/ports"
    pid=$(cat "$dir/node$id/pid"); rm -f "$dir/node$id/pid"
    kill -TERM "$pid" 2>/dev/null || true
    ;;
  status)
    [ -f "$dir/ports" ] || { echo "cluster.sh status: no cluster in $dir" >&2; exit 1; }
    printf '%-10s %-12s %-7s %-9s %s\n' partition slots leader term replicas
    for p in $(ports_of); do info_cluster "$p"; done | tr -d '\r' \
      | { grep '^partition[0-9]*:.*role=leader' || true; } \
      | sed -E 's/^partition([0-9]+):slots=([0-9-]+),role=leader,term=([0-9]+),leader=([0-9?]+),voters=([0-9|]+),.*/\1 \2 \4 \3 \5/' \
      | sort -n | while read -r part slots leader term voters; do
          printf '%-10s %-12s %-7s %-9s %s\n' "$part" "$slots" "$leader" "$term" "${voters//|/,}"
        done
    ;;
  down)
    [ -d "$dir" ] || { echo "cluster.sh down: no cluster in $dir" >&2; exit 1; }
    if [ "$after" -gt 0 ]; then
      sleep "$after"
    elif [ -f "$dir/watchdog.pid" ]; then
      wd=$(cat "$dir/watchdog.pid")
      pkill -P "$wd" 2>/dev/null || true   # its sleep
      kill "$wd" 2>/dev/null || true
    fi
    rm -f "$dir/watchdog.pid"
    pids=""
    for f in "$dir"/node*/pid; do
      [ -f "$f" ] || continue
      pid=$(cat "$f"); kill -TERM "$pid" 2>/dev/null && pids="$pids $pid"
      rm -f "$f"
    done
    deadline=$((SECONDS + 15))
    for pid in $pids; do
      while kill -0 "$pid" 2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then kill -KILL "$pid" 2>/dev/null || true; break; fi
        sleep 0.1
      done
    done
    ;;
  *) usage >&2; exit 2 ;;
esac
