#!/usr/bin/env bash
# The Pegasus table (seed 004) for strata-server's cluster mode: YCSB against a cluster of
# --nodes nodes x --partitions partitions x --replicas replicas on loopback and, in the same
# run, against one standalone strata-server, through two cluster clients.
#
#   bash bench/ycsb-cluster.sh [--records N] [--ops N] [--threads T|seed] [--reps R]
#                              [--durability always|everysec] [--clients jedis,goycsb]
#                              [--nodes 5] [--partitions 64] [--replicas 3]
#                              [--workloads rw-0-1,rw-1-0,...] [--engines cluster,single]
#                              [--timeout S] [--base-port PORT] [--server-bin PATH] [--out DIR]
#                              [--move-during WORKLOAD] [--reslot-during WORKLOAD]
#                              [--node-timeout MS] [--io-threads T]
#
# Defaults: 100000 records and operations, 16 threads, 3 repetitions, durability always,
# both clients, 5 x 64 x 3, the Pegasus cases (write only 0:1, read only 1:0, read & write
# 1:1, 1:3, 1:30, 3:1, 30:1; bench/ycsb/workloads/rw-R-W: 1 KB records of 10 x 100-byte
# fields, zipfian, reads and updates), 1200 s per YCSB process.
# --threads seed: each case with the seed's client threads, its `a * b` (a YCSB instances of b
# threads: 45 for 0:1, 1:3 and 1:30, 90 for 1:1 and 3:1, 150 for 1:0 and 30:1; the
# `seed-threads` line of each workload file) in one YCSB process; the load with the write
# case's 45.
#
# Each repetition, for each client, runs both engines in turn (the order reversed on even
# repetitions): a fresh cluster (bench/cluster.sh up) or a fresh server (bench/servers.sh)
# with its own data directory, YCSB's load (--records inserts, measured: the `load` row),
# then each workload (--ops operations), then the engine is stopped and its data removed.
#
# Clients: `jedis` = the project's binding (bench/ycsb/, org.strata.ycsb.RedisClient) on YCSB
# 0.17.0, with `redis.cluster=true` (Jedis 2.9.0's JedisCluster, seeded with every node)
# against the cluster, a plain Jedis connection per thread against the single server; no
# scan index (`redis.scanindex=false`: the Pegasus cases do not scan). `goycsb` =
# github.com/pingcap/go-ycsb v1.0.3, unchanged, built here with Go into
# ~/.cache/strata-bench/go-ycsb (or $STRATA_BENCH_CACHE/go-ycsb), its `redis` db with
# `redis.mode=cluster` (go-redis's ClusterClient) or `single`, `redis.datatype=string` (one
# SET/GET of the record as JSON: go-ycsb's `hash` type drops read errors, so they would go
# uncounted).
#
# Durability (docs/replication.md), `--appendfsync` passed to both: `always` (the default
# here) acknowledges a cluster write once its Raft entry is fdatasynced on a quorum (2 of 3
# replicas) and applied on the leader, a standalone write once its WAL is fdatasynced;
# `everysec` acknowledges a cluster write once its entry is written (not synced) on a quorum
# and a standalone write once written, both syncing their WAL once a second. Equal either
# way: with `always` an acknowledged write survives power loss on both; with `everysec` both
# may lose about a second of acknowledged writes to a power loss (Apache Pegasus's own
# default, `log_shared_force_flush = false`, syncs its log on no schedule at all).
#
# --move-during W: while the cluster runs workload W, the membership changes under the
# clients: 3 s in, one more node joins (bench/cluster.sh add: strata-cluster add-node
# --rebalance --wait) and then leaves again (bench/cluster.sh remove: remove-node --wait),
# replicas and leaderships moving both times; the run must still end with no error, and a
# move that fails fails the run (its output in logs/*.move). W must run long enough to cover
# it (about 10 s; more --ops).
#
# --reslot-during W: while the cluster runs workload W, slots move under the clients: 3 s in,
# the first 64 slots of partition 0 move to partition 1 (bench/cluster.sh move-slots:
# strata-cluster move-slots, one slot at a time, each copied live, its writes held only from
# its freeze to its adopt), then back; the run must still end with no error, and a move that
# fails fails the run (its output in logs/*.reslot: per slot, the records and changes copied
# and how long its writes were held).
#
# --node-timeout MS: the cluster nodes' --cluster-node-timeout (default 1500 here: elections
# after 750-1500 ms without a leader's word, heartbeats every 250 ms; the server's own
# default, 300, sends 64 groups' heartbeats every 50 ms; docs/replication.md, "Timing").
# --io-threads T: each cluster node's async workers (default: bench/cluster.sh's, the machine's
# cores shared out among the nodes, at least one each).
# --pass P: the nodes and the single server require the password P (`requirepass`), and both
# clients send it (`redis.password`).
#
# Writes DIR (default bench/out/ycsb-cluster-<timestamp>): runs.tsv, logs/ (YCSB output per
# run, go-ycsb's raw output as *.raw, cluster and server logs), environment.txt, and from
# strata-bench-ycsb-report: results.tsv (per run), ycsb_qps.png (median total QPS per case,
# cluster and single); from bench/ycsb-cluster-table.py: table.md (median [min-max] over the
# repetitions, a cluster/single row per case). The durability column of runs.tsv and
# results.tsv is `<durability>.<client>`.
# Exits non-zero when any YCSB process failed, timed out or any operation returned an
# error (each run's errors are printed as it ends and listed under the table), or a node
# died. The cluster and the server are stopped on exit, interrupt or termination; the
# cluster's nodes also stop by themselves after their --ttl (the run's time bound).
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/servers.sh

records=100000
ops=100000
threads=16
reps=3
durability=always
clients="jedis,goycsb"
nodes=5
partitions=64
replicas=3
workloads="rw-0-1,rw-1-0,rw-1-1,rw-1-3,rw-1-30,rw-3-1,rw-30-1"
engines="cluster,single"
ycsb_timeout=1200
base_port=""
server_bin=""
out=""
goycsb_version=v1.0.3
move_during=""
reslot_during=""
node_timeout=1500
io_threads=""
pass=""
usage() { sed -n '2,78p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records="$2"; shift 2 ;;
    --ops) ops="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --durability) durability="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --replicas) replicas="$2"; shift 2 ;;
    --workloads) workloads="$2"; shift 2 ;;
    --move-during) move_during="$2"; shift 2 ;;
    --reslot-during) reslot_during="$2"; shift 2 ;;
    --node-timeout) node_timeout="$2"; shift 2 ;;
    --io-threads) io_threads="$2"; shift 2 ;;
    --pass) pass="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --timeout) ycsb_timeout="$2"; shift 2 ;;
    --base-port) base_port="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "ycsb-cluster.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
numbers="records ops threads reps nodes partitions replicas ycsb_timeout node_timeout"
[ "$threads" = seed ] && numbers=${numbers/threads /}
for n in $numbers; do
  if ! [[ "${!n}" =~ ^[1-9][0-9]*$ ]]; then
    want="a positive integer"; [ "$n" = threads ] && want="$want or 'seed'"
    echo "ycsb-cluster.sh: --${n#ycsb_} '${!n}': expected $want" | tr _ - >&2
    exit 2
  fi
done
if [ -n "$io_threads" ] && ! [[ "$io_threads" =~ ^[1-9][0-9]*$ ]]; then
  echo "ycsb-cluster.sh: --io-threads '$io_threads': expected a positive integer" >&2
  exit 2
fi
[ "$replicas" -le "$nodes" ] || { echo "ycsb-cluster.sh: --replicas $replicas > --nodes $nodes" >&2; exit 2; }
case "$durability" in always|everysec) ;; *) echo "ycsb-cluster.sh: --durability '$durability': expected always or everysec" >&2; exit 2 ;; esac
# case_threads workload-file: the client threads of a run of that workload's case: --threads,
# or with `--threads seed` the product of the file's `seed-threads=A * B` line.
case_threads() {
  if [ "$threads" != seed ]; then echo "$threads"; return; fi
  local line
  line=$(sed -n 's/^# strata-ycsb: seed-threads=//p' "$1")
  if ! [[ "$line" =~ ^([1-9][0-9]*)\ \*\ ([1-9][0-9]*)$ ]]; then
    echo "ycsb-cluster.sh: $1: no 'seed-threads=A * B' line for --threads seed" >&2
    return 1
  fi
  echo $((BASH_REMATCH[1] * BASH_REMATCH[2]))
}

IFS=, read -r -a wl_list <<<"$workloads"
IFS=, read -r -a cl_list <<<"$clients"
IFS=, read -r -a eng_list <<<"$engines"
for w in "${wl_list[@]}"; do
  if [ ! -f "bench/ycsb/workloads/$w" ]; then
    echo "ycsb-cluster.sh: --workloads: no workload '$w' in bench/ycsb/workloads" >&2
    exit 2
  fi
  case_threads "bench/ycsb/workloads/$w" >/dev/null || exit 2
done
case_threads bench/ycsb/workloads/rw-0-1 >/dev/null || exit 2
for c in "${cl_list[@]}"; do
  case "$c" in jedis|goycsb) ;; *) echo "ycsb-cluster.sh: --clients '$c': expected jedis or goycsb" >&2; exit 2 ;; esac
done
for e in "${eng_list[@]}"; do
  case "$e" in cluster|single) ;; *) echo "ycsb-cluster.sh: --engines '$e': expected cluster or single" >&2; exit 2 ;; esac
done

# --- the clients -------------------------------------------------------------------------
cp_jars="bench/ycsb/target/classes:bench/ycsb/target/lib/*"
if [[ ",$clients," == *,jedis,* ]]; then
  if ! command -v java >/dev/null || ! command -v redis-cli >/dev/null \
    || [ ! -f bench/ycsb/target/classes/org/strata/ycsb/RedisClient.class ] \
    || [ -n "$(find bench/ycsb/pom.xml bench/ycsb/src -newer bench/ycsb/target/classes/org/strata/ycsb/RedisClient.class -type f | head -n 1)" ]; then
    echo "ycsb-cluster.sh: the YCSB client is missing or older than its sources; run: bash bench/setup-ycsb.sh" >&2
    exit 1
  fi
fi
command -v redis-cli >/dev/null || { echo "ycsb-cluster.sh: redis-cli is missing; run: bash bench/setup-ycsb.sh" >&2; exit 1; }

# go-ycsb, unchanged, built from the Go module proxy into a cache outside the repository: a
# throwaway module requiring it (with the one replace directive of its own go.mod, which
# a dependency's go.mod cannot pass on, so `go install pkg@version` refuses it).
cache="${STRATA_BENCH_CACHE:-$HOME/.cache/strata-bench}/go-ycsb/$goycsb_version"
goycsb_bin="$cache/go-ycsb"
build_goycsb() {
  [ -x "$goycsb_bin" ] && return 0
  command -v go >/dev/null || { echo "ycsb-cluster.sh: Go is needed to build go-ycsb (--clients without goycsb skips it)" >&2; return 1; }
  echo "ycsb-cluster.sh: building github.com/pingcap/go-ycsb $goycsb_version into $cache (first time: a few minutes)" >&2
  local mod
  mod=$(mktemp -d "${TMPDIR:-/tmp}/go-ycsb-build.XXXXXX")
  cat >"$mod/go.mod" <<EOF
module strata.invalid/go-ycsb-build

go 1.21

require github.com/pingcap/go-ycsb $goycsb_version

replace github.com/apache/thrift => github.com/apache/thrift v0.0.0-20171203172758-327ebb6c2b6d
EOF
  cat >"$mod/tools.go" <<'EOF'
//go:build tools

package tools

import _ "github.com/pingcap/go-ycsb/cmd/go-ycsb"
EOF
  mkdir -p "$cache"
  # CGO off: the sqlite driver then builds its stub, and nothing here needs C.
  if ! (cd "$mod" && export GOFLAGS=-mod=mod CGO_ENABLED=0 \
        && timeout 1800 go mod tidy \
        && nice -n 10 timeout 1800 go build -o "$goycsb_bin.tmp" github.com/pingcap/go-ycsb/cmd/go-ycsb) >&2; then
    rm -rf "$mod"
    echo "ycsb-cluster.sh: building go-ycsb failed" >&2
    return 1
  fi
  cp "$mod/go.mod" "$mod/go.sum" "$cache/" 2>/dev/null || true
  mv "$goycsb_bin.tmp" "$goycsb_bin"
  rm -rf "$mod"
}
if [[ ",$clients," == *,goycsb,* ]]; then
  build_goycsb
fi

resolve_strata_server "$server_bin"
report_bin="${CARGO_TARGET_DIR:-target}/release/strata-bench-ycsb-report"
echo "ycsb-cluster.sh: building strata-bench-ycsb-report (a no-op when it is up to date)" >&2
nice -n 10 cargo build --release -q -p strata-bench --bin strata-bench-ycsb-report

# --- the cluster's ports ------------------------------------------------------------------
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
ports_free() { # BASE: every client and Raft port of the cluster unused
  local i
  for ((i = 0; i < nodes; i++)); do
    port_busy $(($1 + i)) && return 1
    port_busy $(($1 + 1000 + i)) && return 1
  done
  return 0
}
pick_base_port() {
  if [ -n "$base_port" ]; then
    ports_free "$base_port" || { echo "ycsb-cluster.sh: a port of --base-port $base_port (+$nodes, +1000) is in use" >&2; return 1; }
    echo "$base_port"; return 0
  fi
  local b
  for b in 17101 19101 21101 23101 25101 27101; do
    ports_free "$b" && { echo "$b"; return 0; }
  done
  echo "ycsb-cluster.sh: no free port range for the cluster; pass --base-port" >&2
  return 1
}

# --- output -------------------------------------------------------------------------------
out="${out:-bench/out/ycsb-cluster-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out/logs"
runs="$out/runs.tsv"
printf 'rep\tdurability\tengine\tworkload\tcase\tratio\tthreads\trecords\tops\texit\tlog\n' >"$runs"
if [ "$durability" = always ]; then
  dur_text="equal, \`always\`: the single server answers a write after an fdatasync of its WAL (\`--appendfsync always\`, group commit); the cluster answers once the write's Raft entry is fdatasynced on a quorum (2 of $replicas replicas) and applied on the leader (its nodes run with \`--appendfsync always\`: docs/replication.md). An acknowledged write survives power loss on both."
else
  dur_text="equal, \`everysec\`: the single server answers a write once it is in its WAL, the cluster once its Raft entry is written (not synced) on a quorum (2 of $replicas replicas) and applied on the leader; both sync their WAL once a second (\`--appendfsync everysec\`: docs/replication.md), so about a second of acknowledged writes can be lost on power loss on both (a process crash loses none)."
fi
threads_text="$threads client threads"
[ "$threads" = seed ] && threads_text="the seed's client threads per case (its a x b in one YCSB process; the load 45)"
{
  printf 'setup\t%s nodes x %s partitions x %s replicas (bench/cluster.sh, loopback, cluster-node-timeout %s ms) against one standalone strata-server, all on this machine (%s cores); %s records of 1 KB (10 x 100-byte fields), %s operations per workload, %s, clients: %s; %s\n' \
    "$nodes" "$partitions" "$replicas" "$node_timeout" "$(nproc)" "$records" "$ops" "$threads_text" \
    "$clients" \
    "jedis = YCSB 0.17.0 with the project's binding (JedisCluster 2.9.0 / Jedis), goycsb = go-ycsb $goycsb_version (go-redis ClusterClient / Client, redis.datatype=string)"
  printf 'durability\t%s\n' "$dur_text"
} >"$out/meta.tsv"
{
  echo "# bench/ycsb-cluster.sh $(date -u +%FT%TZ) on $(hostname), $(nproc) cores, $(free -g | awk '/Mem:/{print $2}') GB"
  echo "records=$records ops=$ops threads=$threads reps=$reps durability=$durability clients=$clients engines=$engines"
  echo "cluster: nodes=$nodes partitions=$partitions replicas=$replicas"
  echo "strata-server: $STRATA_SERVER, sha256 $(sha256sum "$STRATA_SERVER" | cut -c1-16), built $(date -u -r "$STRATA_SERVER" +%FT%TZ)"
  echo "bench scripts at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
  command -v java >/dev/null && java -version 2>&1 | head -n 1
  [ -x "$goycsb_bin" ] && echo "go-ycsb $goycsb_version: $goycsb_bin ($(go version 2>/dev/null || echo 'go ?'))"
  echo "durability: $dur_text"
} >"$out/environment.txt"

# --- engines, cleanup ---------------------------------------------------------------------
data_root=$(mktemp -d "${TMPDIR:-/tmp}/strata-ycsb-cluster.XXXXXX")
cluster_dir=""
cluster_addrs=""
child=""
mover=""
reslotter=""
# Waits for a change made under the clients (pid $1, its log $2): what it did ($3) and when
# goes into the run's summary, or its failure ($4 failed) fails the run.
background_done() {
  if wait "$1"; then
    summary="$summary; $3 during it ($(head -1 "$2" | cut -d' ' -f1) to $(tail -1 "$2" | cut -d' ' -f1))"
  else
    failed=1; summary="$summary; $4 failed (see $2)"
  fi
}

cluster_stop() {
  [ -n "$cluster_dir" ] || return 0
  bash bench/cluster.sh down --dir "$cluster_dir" >&2 || true
  cluster_dir=""
}
cleanup() {
  trap - EXIT INT TERM
  if [ -n "$child" ] && kill -0 "$child" 2>/dev/null; then
    kill "$child" 2>/dev/null || true
    wait "$child" 2>/dev/null || true
  fi
  # A membership change under way (--move-during) ends before the cluster is stopped, so
  # no node it starts outlives `down` (which stops every node with a pid file).
  if [ -n "$mover" ] && kill -0 "$mover" 2>/dev/null; then
    pkill -P "$mover" 2>/dev/null || true
    kill "$mover" 2>/dev/null || true
    wait "$mover" 2>/dev/null || true
  fi
  if [ -n "${reslotter:-}" ] && kill -0 "$reslotter" 2>/dev/null; then
    pkill -P "$reslotter" 2>/dev/null || true
    kill "$reslotter" 2>/dev/null || true
    wait "$reslotter" 2>/dev/null || true
  fi
  cluster_stop
  server_stop
  rm -rf "$data_root"
}
trap cleanup EXIT
trap 'echo "ycsb-cluster.sh: interrupted; stopping the engines" >&2; exit 130' INT
trap 'echo "ycsb-cluster.sh: terminated; stopping the engines" >&2; exit 143' TERM

# The nodes' own stop (bench/cluster.sh --ttl): a bound on one engine's whole use.
cluster_ttl=$(( (${#wl_list[@]} + 1) * (ycsb_timeout + 30) + 300 ))

engine_start() { # engine dir
  if [ "$1" = cluster ]; then
    local base extra=()
    base=$(pick_base_port) || return 1
    cluster_dir="$2"
    extra+=(--node-timeout "$node_timeout")
    [ -z "$io_threads" ] || extra+=(--io-threads "$io_threads")
    [ -z "$pass" ] || extra+=(--pass "$pass")
    if ! timeout 120 bash bench/cluster.sh up --nodes "$nodes" --replicas "$replicas" \
        --partitions "$partitions" --dir "$2" --base-port "$base" --server-bin "$STRATA_SERVER" \
        --appendfsync "$durability" --ttl "$cluster_ttl" "${extra[@]}" >"$2.up" 2>&1; then
      echo "ycsb-cluster.sh: the cluster did not start:" >&2
      tail -n 5 "$2.up" >&2
      return 1
    fi
    cluster_addrs=$(paste -sd, "$2.up")
    ENGINE_PORT=$base
  else
    SERVER_PASS="$pass" server_start strata "$durability" "$2" || return 1
    ENGINE_PORT=$SERVER_PORT
  fi
}
engine_alive() { # engine
  if [ "$1" = cluster ]; then
    local f ok=0
    for f in "$cluster_dir"/node*/pid; do
      kill -0 "$(cat "$f")" 2>/dev/null || { echo "ycsb-cluster.sh: node $(basename "$(dirname "$f")") died; last log lines:" >&2; tail -n 5 "$(dirname "$f")/log" >&2; ok=1; }
    done
    return $ok
  fi
  kill -0 "$SERVER_PID" 2>/dev/null || { echo "ycsb-cluster.sh: the server died" >&2; return 1; }
}
engine_stop() { # engine dir logprefix
  if [ "$1" = cluster ]; then
    bash bench/cluster.sh status --dir "$2" >"$3.cluster-status" 2>&1 || true
    cluster_stop
    local f
    for f in "$2"/node*/log; do cp "$f" "$3.$(basename "$(dirname "$f")").log" 2>/dev/null || true; done
  else
    server_stop
    cp "$2/server.log" "$3.server.log" 2>/dev/null || true
  fi
  rm -rf "$2"
}

# run_ycsb client engine phase(load|run) workload-file log: one YCSB process, bounded by
# --timeout, in the background so that a signal reaches the trap at once.
run_ycsb() {
  local client=$1 engine=$2 phase=$3 file=$4 log=$5 rc=0
  if [ "$client" = jedis ]; then
    local target=(-p redis.host=127.0.0.1 -p redis.port="$ENGINE_PORT")
    [ "$engine" = cluster ] && target+=(-p redis.cluster=true -p redis.nodes="$cluster_addrs")
    [ -z "$pass" ] || target+=(-p redis.password="$pass")
    local flag=-t; [ "$phase" = load ] && flag=-load
    timeout -k 10 "$ycsb_timeout" java -cp "$cp_jars" site.ycsb.Client "$flag" \
      -db org.strata.ycsb.RedisClient -P "$file" \
      -p recordcount="$records" -p operationcount="$ops" -p threadcount="$nthreads" \
      -p redis.scanindex=false -p redis.timeout=10000 "${target[@]}" \
      -p measurementtype=hdrhistogram -p hdrhistogram.percentiles=50,99,99.9 \
      >"$log" 2>"$log.err" &
    child=$!
    wait "$child" || rc=$?
    child=""
  else
    local mode=single addr="127.0.0.1:$ENGINE_PORT" n=$records
    if [ "$engine" = cluster ]; then mode=cluster; addr=${cluster_addrs//,/;}; fi
    # go-ycsb's zipfian key chooser draws from 0..recordcount inclusive and, unlike YCSB's
    # (which draws again past the last inserted key), reads key number recordcount too: its
    # load inserts that one record more, so that every key a run reads exists.
    [ "$phase" = load ] && n=$((records + 1))
    local auth=()
    [ -z "$pass" ] || auth=(-p redis.password="$pass")
    timeout -k 10 "$ycsb_timeout" "$goycsb_bin" "$phase" redis -P "$file" -p workload=core \
      -p recordcount="$n" -p operationcount="$ops" -p threadcount="$nthreads" \
      -p redis.mode="$mode" -p redis.addr="$addr" -p redis.datatype=string \
      -p redis.read_timeout=10000000000 -p redis.write_timeout=10000000000 "${auth[@]}" \
      >"$log.raw" 2>"$log.err" &
    child=$!
    wait "$child" || rc=$?
    child=""
    python3 bench/ycsb-cluster-table.py goycsb-log "$log.raw" "$log" || { [ "$rc" != 0 ] || rc=1; }
  fi
  return "$rc"
}

failed=0
for rep in $(seq 1 "$reps"); do
  mapfile -t order < <(rep_order "$rep" "${eng_list[@]}")
  for client in "${cl_list[@]}"; do
    for engine in "${order[@]}"; do
      dir="$data_root/$engine.$client.$rep"
      prefix="$out/logs/$rep.$durability.$client.$engine"
      if ! engine_start "$engine" "$dir"; then
        failed=1
        cluster_stop; server_stop
        continue
      fi
      echo "ycsb-cluster.sh: rep $rep, $client, $engine (port $ENGINE_PORT, $durability)" >&2
      for w in load "${wl_list[@]}"; do
        log="$prefix.$w.log"
        if [ "$w" = load ]; then
          phase=load; file="bench/ycsb/workloads/${wl_list[0]}"
          case_name="Load"; ratio="0:1 insert"
          nthreads=$(case_threads bench/ycsb/workloads/rw-0-1)
        else
          phase=run; file="bench/ycsb/workloads/$w"
          case_name=$(sed -n 's/^# strata-ycsb: case=//p' "$file")
          ratio=$(sed -n 's/^# strata-ycsb: ratio=//p' "$file")
          nthreads=$(case_threads "$file")
        fi
        rc=0
        mover=""
        if [ "$engine" = cluster ] && [ "$w" = "$move_during" ]; then
          (
            set -e
            sleep 3
            echo "$(date +%T.%3N) add" 
            bash bench/cluster.sh add --dir "$dir"
            id=$(ls -d "$dir"/node* | sed 's/.*node//' | sort -n | tail -1)
            echo "$(date +%T.%3N) remove node $id"
            bash bench/cluster.sh remove --dir "$dir" --id "$id"
            echo "$(date +%T.%3N) done"
          ) >"$log.move" 2>&1 &
          mover=$!
        fi
        reslotter=""
        if [ "$engine" = cluster ] && [ "$w" = "$reslot_during" ]; then
          (
            set -e
            sleep 3
            echo "$(date +%T.%3N) slots 0-63 to partition 1"
            bash bench/cluster.sh move-slots --dir "$dir" --slots 0-63 --to 1
            echo "$(date +%T.%3N) slots 0-63 back to partition 0"
            bash bench/cluster.sh move-slots --dir "$dir" --slots 0-63 --to 0
            echo "$(date +%T.%3N) done"
          ) >"$log.reslot" 2>&1 &
          reslotter=$!
        fi
        run_ycsb "$client" "$engine" "$phase" "$file" "$log" || rc=$?
        summary=$(python3 bench/ycsb-cluster-table.py errors "$log" 2>&1) || failed=1
        if [ -n "$mover" ]; then
          background_done "$mover" "$log.move" "a node joined and left" "the membership change"
          mover=""
        fi
        if [ -n "$reslotter" ]; then
          background_done "$reslotter" "$log.reslot" "64 slots moved away and back" "the slot moves"
          reslotter=""
        fi
        if [ "$rc" != 0 ]; then
          failed=1
          [ "$rc" = 124 ] && summary="$summary; timed out after ${ycsb_timeout}s"
          summary="$summary; exit $rc (see $log.err)"
        fi
        echo "ycsb-cluster.sh:   $w: $summary" >&2
        engine_alive "$engine" || failed=1
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$durability.$client" \
          "$engine" "$w" "${case_name:-$w}" "${ratio:-?}" "$nthreads" "$records" "$ops" "$rc" \
          "logs/$(basename "$log")" >>"$runs"
      done
      engine_stop "$engine" "$dir" "$prefix"
    done
  done
done

rc=0
"$report_bin" "$out" >/dev/null || rc=$?
# The report's own table.md has no cluster/single rows: kept as by-engine.md.
[ -f "$out/table.md" ] && mv "$out/table.md" "$out/by-engine.md"
[ -f "$out/table.tsv" ] && mv "$out/table.tsv" "$out/by-engine.tsv"
[ "$rc" = 0 ] || failed=1
python3 bench/ycsb-cluster-table.py table "$out" || failed=1
echo "ycsb-cluster.sh: $out/table.md, $out/ycsb_qps.png" >&2
[ "$failed" = 0 ] || echo "ycsb-cluster.sh: FAILED: errors or failed runs (see above and $out/table.md)" >&2
exit "$failed"
