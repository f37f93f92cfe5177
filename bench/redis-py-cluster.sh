#!/usr/bin/env bash
# redis-py's cluster client (RedisCluster, redis-py 8.1.0, unchanged) against a strata-server
# cluster, and against a Redis Cluster of redis-server processes in the same run when
# redis-server is installed: bench/redis_py_cluster.py's checks (routing by key and hash
# tag, commands sent to every primary, pipelines, a transaction, scripts and functions,
# pub/sub and sharded pub/sub, COMMAND's flags behind them) on each, one line per check.
#
#   bash bench/redis-py-cluster.sh [--server-bin PATH] [--nodes N] [--partitions P]
#                                  [--base-port PORT]
#
# The client goes into a virtual environment outside the repository,
# ~/.cache/strata-bench/redis-py/8.1.0 (or $STRATA_BENCH_CACHE/redis-py), with pip from
# PyPI; without python3's venv module or the package index the script says so and exits 0
# ("skipped"). Nodes listen on loopback only: strata-server on PORT.. (default 7801) and its
# Raft transport 1000 above, redis-server on PORT+100..; every process is stopped on exit
# and each stops by itself after 10 minutes. Exits 1 if a check fails on strata-server.
set -uo pipefail
cd "$(dirname "$0")/.."

server_bin=""; nodes=3; partitions=8; base=7801
while [ $# -gt 0 ]; do
  case "$1" in
    --server-bin) server_bin="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --base-port) base="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "redis-py-cluster.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
  esac
done

version=8.1.0
venv="${STRATA_BENCH_CACHE:-$HOME/.cache/strata-bench}/redis-py/$version"
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c "import redis" 2>/dev/null; then
  echo "redis-py-cluster.sh: installing redis-py $version into $venv" >&2
  if ! python3 -m venv "$venv" >/dev/null 2>&1 \
      || ! "$venv/bin/pip" install -q "redis==$version" >/dev/null 2>&1; then
    echo "redis-py-cluster.sh: skipped: cannot install redis-py $version (needs python3-venv and PyPI)" >&2
    exit 0
  fi
fi

work="$(mktemp -d /tmp/strata-redis-py.XXXXXX)"
redis_pids=()
cleanup() {
  bash bench/cluster.sh down --dir "$work/strata" >/dev/null 2>&1
  for p in "${redis_pids[@]}"; do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

status=0
run_checks() { # name host:port
  echo "== $1"
  timeout 300 "$venv/bin/python" bench/redis_py_cluster.py "$2"
}

if [ -n "$(command -v redis-server)" ] && [ -n "$(command -v redis-cli)" ]; then
  addrs=()
  for i in $(seq 1 "$nodes"); do
    port=$((base + 100 + i - 1)); d="$work/redis/$port"; mkdir -p "$d"
    # `timeout`: a node this script fails to stop ends by itself.
    (cd "$d" && exec timeout 600 redis-server --port "$port" --bind 127.0.0.1 \
      --cluster-enabled yes --cluster-config-file nodes.conf --save "" --appendonly no \
      > "$d/log" 2>&1) &
    redis_pids+=($!)
    addrs+=("127.0.0.1:$port")
  done
  sleep 1
  if echo yes | redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 > "$work/create.log" 2>&1; then
    for _ in $(seq 1 50); do
      redis-cli -p $((base + 100)) cluster info 2>/dev/null | grep -q "cluster_state:ok" && break
      sleep 0.2
    done
    run_checks "redis-server $(redis-server --version | awk '{print $3}'), $nodes nodes" \
      "127.0.0.1:$((base + 100))"
  else
    echo "redis-py-cluster.sh: the Redis Cluster did not form (see redis-cli --cluster create):" >&2
    cat "$work/create.log" >&2
  fi
else
  echo "redis-py-cluster.sh: no redis-server here: strata-server alone (apt-get install -y redis-server)" >&2
fi

args=(--nodes "$nodes" --partitions "$partitions" --replicas "$((nodes < 3 ? nodes : 3))"
      --dir "$work/strata" --base-port "$base" --ttl 600)
[ -n "$server_bin" ] && args+=(--server-bin "$server_bin")
# The first node's address: the first of the lines `up` prints (read whole, not cut short).
if ! up_out="$(bash bench/cluster.sh up "${args[@]}" 2> "$work/up.err")" || [ -z "$up_out" ]; then
  echo "redis-py-cluster.sh: the strata-server cluster did not start:" >&2
  cat "$work/up.err" >&2
  exit 1
fi
run_checks "strata-server, $nodes nodes x $partitions partitions" "${up_out%%$'\n'*}" || status=1
exit "$status"
