#!/usr/bin/env bash
# A strata-server cluster on loopback or in network namespaces, for benchmarks and fault runs.
#
#   bash bench/cluster.sh up --nodes N [--replicas R] [--partitions P] --dir D
#                            [--base-port PORT] [--server-bin PATH] [--appendfsync POLICY]
#                            [--ttl SECONDS] [--io-threads T] [--node-timeout MS] [--netns]
#                            [--pass P]
#   bash bench/cluster.sh status --dir D
#   bash bench/cluster.sh add --dir D [--no-rebalance]
#   bash bench/cluster.sh remove --dir D --id I
#   bash bench/cluster.sh move-slots --dir D --slots SLOTS --to P [--abort]
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
# remove: `strata-cluster remove-node I --wait` (its replicas move away, it is dropped from
# the map, and the meta group stops counting it), then stops node I.
# move-slots: `strata-cluster move-slots SLOTS --to P` (SLOTS as `5`, `100-199`, `1,7,9-12`):
# each slot moves to partition P while clients go on; with --abort, a move to P not yet
# handed off is undone instead.
# --io-threads T: each node's async workers (strata-server --io-threads; default the machine's
# cores shared out among the nodes `up` starts, at least one each: the nodes share its cores).
# --node-timeout MS: each node's --cluster-node-timeout (default the server's, 300 ms:
# elections after 150-300 ms without a leader's word, heartbeats every 50 ms).
# --netns (root and `ip netns` needed): node i runs in network namespace <prefix>-n<i> at
# 10.X.0.i (the first free 10.X.0.0/24 from X = 80), ports as above, the namespaces joined by
# a bridge that the host reaches at 10.X.0.254; `up` prints `10.X.0.i:PORT` lines, `add`
# gives the new node a namespace of its own, `down` (and the --ttl watchdog) removes them
# (bench/netns.sh). Traffic stays on 127.0.0.1 or those addresses. Each node's client
# address is in D/addrs.
# --pass P: every node requires the password P of its clients (`--requirepass P`); it is kept
# in D/pass (readable by its owner only), and the commands after `up` (status, add, remove,
# move-slots, the controller) authenticate with it. Exit status 1 when a step fails, with the
# reason on stderr.
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
io_threads=""
node_timeout=""
netns=0
pass=""
usage() { sed -n '2,40p' "$0"; }
rebalance=--rebalance
id=
slots=
to=
abort=()
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
    --slots) slots="$2"; shift 2 ;;
    --to) to="$2"; shift 2 ;;
    --abort) abort=(--abort); shift ;;
    --io-threads) io_threads="$2"; shift 2 ;;
    --node-timeout) node_timeout="$2"; shift 2 ;;
    --netns) netns=1; shift ;;
    --pass) pass="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cluster.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$dir" ] || { echo "cluster.sh: --dir is required" >&2; exit 2; }

# The cluster's password (D/pass, from `up --pass`), if it has one.
load_pass() { if [ -f "$dir/pass" ]; then pass=$(cat "$dir/pass"); fi; }

# INFO cluster of the node at host:port $1 (empty when it does not answer within 2 s, or
# refuses the cluster's password).
info_cluster() {
  local host=${1%:*} port=${1##*:} len ok
  {
    exec 3<>"/dev/tcp/$host/$port" || return 0
    if [ -n "$pass" ]; then
      printf '*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n' "$(printf '%s' "$pass" | wc -c)" "$pass" >&3
      IFS= read -r -t 2 ok <&3 || { exec 3>&-; return 0; }
      [ "${ok%$'\r'}" = "+OK" ] || { exec 3>&-; return 0; }
    fi
    printf '*2\r\n$4\r\nINFO\r\n$7\r\ncluster\r\n' >&3
    IFS= read -r -t 2 len <&3 || { exec 3>&-; return 0; }
    len=${len#\$}; len=${len%$'\r'}
    timeout 2 head -c "$len" <&3 || true
    exec 3>&-
  } 2>/dev/null
}

addrs_of() { cat "$dir/addrs"; }

# The cluster's network, when it runs in namespaces: its prefix and its /24 (D/netns).
netns_prefix=""; netns_subnet=""
load_netns() {
  if [ -f "$dir/netns" ]; then
    read -r netns_prefix netns_subnet < "$dir/netns"
    source bench/netns.sh
  fi
}
# Node $1's host: its namespace's address, or loopback.
host_of() { if [ -n "$netns_prefix" ]; then echo "$netns_subnet.$1"; else echo 127.0.0.1; fi; }
# Runs node $1's server (the rest of the arguments) in the background, in its namespace if
# the cluster has them, its pid in D/node<i>/pid.
start_server() {
  local i=$1; shift
  local extra=()
  [ -z "$io_threads" ] || extra=(--io-threads "$io_threads")
  [ -z "$node_timeout" ] || extra+=(--cluster-node-timeout "$node_timeout")
  [ -z "$pass" ] || extra+=(--requirepass "$pass")
  if [ -n "$netns_prefix" ]; then
    ip netns list | grep -q "^$netns_prefix-n$i\b" \
      || netns_attach "$netns_prefix" "$netns_prefix-n$i" "vn$i" "$(host_of "$i")"
    nohup ip netns exec "$netns_prefix-n$i" "$server_bin" --bind "$(host_of "$i")" "${extra[@]}" \
      "$@" > "$dir/node$i/log" 2>&1 &
  else
    nohup "$server_bin" "${extra[@]}" "$@" > "$dir/node$i/log" 2>&1 &
  fi
  echo $! > "$dir/node$i/pid"
}

# The controller beside the server binary the cluster runs.
controller() {
  local bin
  bin="$(dirname "$(cat "$dir/server-bin")")/strata-cluster"
  [ -x "$bin" ] || { echo "cluster.sh: no strata-cluster beside the server, at $bin" >&2; exit 1; }
  local auth=()
  [ -z "$pass" ] || auth=(--pass "$pass")
  timeout -k 5 600 "$bin" --node "${entry:-$(head -1 "$dir/addrs")}" --timeout 540 "${auth[@]}" "$@"
}

case "$cmd" in
  up)
    [[ "$nodes" =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh up: --nodes N is required (N >= 1)" >&2; exit 2; }
    if [ -z "$server_bin" ]; then
      cargo build --release -p strata-server >&2
      server_bin="${CARGO_TARGET_DIR:-target}/release/strata-server"
    fi
    [ -x "$server_bin" ] || { echo "cluster.sh: no server binary at $server_bin" >&2; exit 1; }
    [[ "$ttl" =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh up: --ttl must be a positive number of seconds" >&2; exit 2; }
    [ -z "$io_threads" ] || [[ "$io_threads" =~ ^[1-9][0-9]*$ ]] \
      || { echo "cluster.sh up: --io-threads must be a positive number" >&2; exit 2; }
    [ -n "$io_threads" ] || io_threads=$(( $(nproc) / nodes > 1 ? $(nproc) / nodes : 1 ))
    [ -z "$node_timeout" ] || [[ "$node_timeout" =~ ^[1-9][0-9]*$ ]] \
      || { echo "cluster.sh up: --node-timeout must be a positive number of ms" >&2; exit 2; }
    if ls "$dir"/node*/pid >/dev/null 2>&1; then
      echo "cluster.sh up: $dir has running nodes (cluster.sh down --dir $dir first)" >&2; exit 1
    fi
    mkdir -p "$dir"
    dir=$(realpath "$dir")
    if [ "$netns" -eq 1 ]; then
      source bench/netns.sh
      why=$(netns_unusable); [ -z "$why" ] || { echo "cluster.sh up --netns: $why" >&2; exit 1; }
      netns_subnet=$(netns_free_subnet 80)
      [ -n "$netns_subnet" ] || { echo "cluster.sh up --netns: no free 10.X.0.0/24" >&2; exit 1; }
      netns_prefix="stc$(printf '%s' "$dir" | cksum | cut -c1-6)"
      netns_remove "$netns_prefix"
      netns_bridge "$netns_prefix"
      netns_host_link "$netns_prefix" "$netns_subnet.254"
      echo "$netns_prefix $netns_subnet" > "$dir/netns"
    else
      rm -f "$dir/netns"
    fi
    echo "$server_bin" > "$dir/server-bin"
    rm -f "$dir/pass"
    if [ -n "$pass" ]; then
      (umask 077; printf '%s' "$pass" > "$dir/pass")
    fi
    echo "$base_port $partitions $replicas $appendfsync ${io_threads:-0} ${node_timeout:-0}" \
      > "$dir/settings"
    list=""
    : > "$dir/ports"; : > "$dir/addrs"
    for i in $(seq 1 "$nodes"); do
      port=$((base_port + i - 1)); raft=$((base_port + 1000 + i - 1))
      list="${list:+$list,}$i=$(host_of "$i"):$port:$raft"
      echo "$port" >> "$dir/ports"
      echo "$(host_of "$i"):$port" >> "$dir/addrs"
    done
    for i in $(seq 1 "$nodes"); do
      port=$((base_port + i - 1))
      mkdir -p "$dir/node$i"
      # A node's first start is the new cluster's: its empty directory creates the groups.
      # Later starts on the directory leave it out (a node that lost its data catches up).
      bootstrap=no; [ -d "$dir/node$i/data" ] || bootstrap=yes
      start_server "$i" --port "$port" --dir "$dir/node$i/data" --appendfsync "$appendfsync" \
        --cluster-enabled yes --cluster-node-id "$i" --cluster-nodes "$list" \
        --cluster-partitions "$partitions" --cluster-replicas "$replicas" \
        --cluster-bootstrap "$bootstrap"
    done
    # The watchdog: the same stop as `down`, once the time is up.
    nohup bash "$0" down --dir "$dir" --after "$ttl" > "$dir/watchdog.log" 2>&1 &
    echo $! > "$dir/watchdog.pid"
    deadline=$((SECONDS + 60))
    while :; do
      led=$(for a in $(addrs_of); do info_cluster "$a"; done | tr -d '\r' \
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
    addrs_of
    ;;
  add)
    [ -f "$dir/settings" ] || { echo "cluster.sh add: no cluster in $dir" >&2; exit 1; }
    read -r base_port partitions replicas appendfsync io_threads node_timeout < "$dir/settings"
    [ "${io_threads:-0}" != 0 ] || io_threads=""
    [ "${node_timeout:-0}" != 0 ] || node_timeout=""
    load_netns
    load_pass
    server_bin=$(cat "$dir/server-bin")
    i=1
    while [ -d "$dir/node$i" ]; do i=$((i + 1)); done
    port=$((base_port + i - 1)); raft=$((base_port + 1000 + i - 1)); host=$(host_of "$i")
    mkdir -p "$dir/node$i"
    start_server "$i" --port "$port" --dir "$dir/node$i/data" --appendfsync "$appendfsync" \
      --cluster-enabled yes --cluster-node-id "$i" --cluster-nodes "$i=$host:$port:$raft" \
      --cluster-partitions "$partitions" --cluster-replicas "$replicas" \
      --cluster-bootstrap no
    deadline=$((SECONDS + 30))
    until (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; do
      [ $SECONDS -lt $deadline ] || { echo "cluster.sh add: node $i does not answer (log: $dir/node$i/log)" >&2; exit 1; }
      sleep 0.1
    done
    controller add-node "$i" "$host:$port:$raft" $rebalance --wait >&2
    echo "$port" >> "$dir/ports"
    echo "$host:$port" >> "$dir/addrs"
    echo "$host:$port"
    ;;
  remove)
    [[ "$id" =~ ^[1-9][0-9]*$ ]] || { echo "cluster.sh remove: --id I is required" >&2; exit 2; }
    [ -f "$dir/node$id/pid" ] || { echo "cluster.sh remove: node $id is not running in $dir" >&2; exit 1; }
    read -r base_port _ < "$dir/settings"
    load_netns
    load_pass
    port=$((base_port + id - 1)); addr="$(host_of "$id"):$port"
    # Ask another node, so the controller does not lose its entry point.
    entry=$(grep -vx "$addr" "$dir/addrs" | head -1)
    [ -n "$entry" ] || { echo "cluster.sh remove: node $id is the last node" >&2; exit 1; }
    controller remove-node "$id" --wait >&2
    grep -vx "$port" "$dir/ports" > "$dir/ports.new"; mv "$dir/ports.new" "$dir/ports"
    grep -vx "$addr" "$dir/addrs" > "$dir/addrs.new"; mv "$dir/addrs.new" "$dir/addrs"
    pid=$(cat "$dir/node$id/pid"); rm -f "$dir/node$id/pid"
    kill -TERM "$pid" 2>/dev/null || true
    ;;
  move-slots)
    [ -n "$slots" ] && [[ "$to" =~ ^[0-9]+$ ]] || { echo "cluster.sh move-slots: --slots S and --to P are required" >&2; exit 2; }
    [ -f "$dir/addrs" ] || { echo "cluster.sh move-slots: no cluster in $dir" >&2; exit 1; }
    load_netns
    load_pass
    controller move-slots "$slots" --to "$to" "${abort[@]}" >&2
    ;;
  status)
    [ -f "$dir/addrs" ] || { echo "cluster.sh status: no cluster in $dir" >&2; exit 1; }
    load_pass
    printf '%-10s %-12s %-7s %-9s %s\n' partition slots leader term replicas
    for a in $(addrs_of); do info_cluster "$a"; done | tr -d '\r' \
      | { grep '^partition[0-9]*:.*role=leader' || true; } \
      | sed -E 's/^partition([0-9]+):slots=([0-9|-]+|none),role=leader,term=([0-9]+),leader=([0-9?]+),voters=([0-9|]+),.*/\1 \2 \4 \3 \5/' \
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
    load_netns
    [ -z "$netns_prefix" ] || { netns_remove "$netns_prefix"; rm -f "$dir/netns"; }
    ;;
  *) usage >&2; exit 2 ;;
esac
