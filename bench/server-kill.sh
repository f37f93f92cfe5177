#!/usr/bin/env bash
# Durability over the network: acknowledged writes survive kill -9 of strata-server.
#
#   bash bench/server-kill.sh [--cycles N] [--threads T] [--kill-after K] [--engine strata|redis]
#                             [--fsync always] [--server-bin PATH] [--out DIR]
#
# Starts the server with `--appendfsync always` (redis-server: appendonly yes + appendfsync
# always) on a free loopback port and a directory of its own, then, each cycle:
#   1. a YCSB load (the project's binding, T threads, 1 KB records, keys new to this cycle)
#      appends every insert the server acknowledged to an oracle log (redis.acklog: the key
#      and a CRC-32 of its fields, written only after both HMSET and ZADD replied OK);
#   2. once K more writes are acknowledged (plus a random 0-300 ms), kill -9 the server
#      mid-load, then stop the client;
#   3. restart the server on the same directory and check every key of the oracle log, from
#      all cycles so far: the hash is there with the acknowledged fields and the key is in the
#      scan index (org.strata.ycsb.AckCheck).
# Exits 1 when an acknowledged write is lost or differs. With `--fsync everysec` the check is
# expected to fail (up to a second of acknowledged writes may be lost): use it to see that the
# check can fail.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/servers.sh

cycles=3
threads=8
kill_after=2000
engine=strata
fsync=always
server_bin=""
out=""
usage() { sed -n '2,20p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --cycles) cycles="$2"; shift 2 ;;
    --threads) threads="$2"; shift 2 ;;
    --kill-after) kill_after="$2"; shift 2 ;;
    --engine) engine="$2"; shift 2 ;;
    --fsync) fsync="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "server-kill.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for n in cycles threads kill_after; do
  if ! [[ "${!n}" =~ ^[1-9][0-9]*$ ]]; then
    echo "server-kill.sh: --${n//_/-} '${!n}': expected a positive integer" >&2
    exit 2
  fi
done
case "$engine" in strata|redis) ;; *) echo "server-kill.sh: --engine '$engine': expected strata or redis" >&2; exit 2 ;; esac
case "$fsync" in always|everysec|no) ;; *) echo "server-kill.sh: --fsync '$fsync': expected always, everysec or no" >&2; exit 2 ;; esac
if ! command -v redis-cli >/dev/null || ! command -v java >/dev/null \
  || [ ! -f bench/ycsb/target/classes/org/strata/ycsb/AckCheck.class ]; then
  echo "server-kill.sh: the YCSB client or redis-tools are missing; run: bash bench/setup-ycsb.sh" >&2
  exit 1
fi
if [ "$engine" = strata ]; then
  resolve_strata_server "$server_bin"
elif ! command -v redis-server >/dev/null; then
  echo "server-kill.sh: redis-server is missing; run: bash bench/setup-ycsb.sh" >&2
  exit 1
fi

out="${out:-bench/out/server-kill-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out"
ack="$out/acknowledged.tsv"
: >"$ack"
dir=$(mktemp -d "${TMPDIR:-/tmp}/strata-server-kill.XXXXXX")
ycsb_pid=""
cleanup() {
  if [ -n "$ycsb_pid" ]; then kill "$ycsb_pid" 2>/dev/null || true; wait "$ycsb_pid" 2>/dev/null || true; fi
  server_stop
  rm -rf "$dir"
}
trap cleanup EXIT
cp_jars="bench/ycsb/target/classes:bench/ycsb/target/lib/*"

# Enough records that the load is still running when the kill comes.
per_cycle=$((kill_after * 50))
failed=0
for cycle in $(seq 1 "$cycles"); do
  server_start "$engine" "$fsync" "$dir/data"
  port=$SERVER_PORT
  if [ "$cycle" -gt 1 ]; then
    echo "server-kill.sh: cycle $cycle: restarted $engine on port $port; checking $(wc -l <"$ack") acknowledged inserts" >&2
    if ! java -cp "$cp_jars" org.strata.ycsb.AckCheck 127.0.0.1 "$port" "$ack" | tee -a "$out/check.log"; then
      failed=1
      break
    fi
  fi
  before=$(wc -l <"$ack")
  java -cp "$cp_jars" site.ycsb.Client -load -db org.strata.ycsb.RedisClient \
    -P bench/ycsb/workloads/a -p recordcount=$((cycle * per_cycle)) -p insertstart=$(((cycle - 1) * per_cycle)) \
    -p insertcount="$per_cycle" -p threadcount="$threads" -p redis.host=127.0.0.1 -p redis.port="$port" \
    -p redis.acklog="$ack" >"$out/load.$cycle.log" 2>&1 &
  ycsb_pid=$!
  target=$((before + kill_after))
  while [ "$(wc -l <"$ack")" -lt "$target" ]; do
    if ! kill -0 "$ycsb_pid" 2>/dev/null; then
      echo "server-kill.sh: the YCSB load ended before $kill_after acknowledged writes; see $out/load.$cycle.log" >&2
      tail -n 5 "$out/load.$cycle.log" >&2
      exit 1
    fi
    sleep 0.05
  done
  sleep "0.$(printf '%03d' $((RANDOM % 300)))"
  server_kill9
  acked=$(($(wc -l <"$ack") - before))
  echo "server-kill.sh: cycle $cycle: kill -9 $engine after $acked acknowledged inserts this cycle" >&2
  sleep 0.3
  kill "$ycsb_pid" 2>/dev/null || true
  wait "$ycsb_pid" 2>/dev/null || true
  ycsb_pid=""
done
if [ "$failed" = 0 ]; then
  server_start "$engine" "$fsync" "$dir/data"
  echo "server-kill.sh: final restart on port $SERVER_PORT; checking $(wc -l <"$ack") acknowledged inserts" >&2
  java -cp "$cp_jars" org.strata.ycsb.AckCheck 127.0.0.1 "$SERVER_PORT" "$ack" | tee -a "$out/check.log" || failed=1
  server_stop
fi
cp "$dir/data/server.log" "$out/server.log" 2>/dev/null || true
if [ "$failed" = 1 ]; then
  echo "server-kill.sh: FAILED: $engine lost or changed acknowledged writes after kill -9 (appendfsync $fsync); see $out/check.log" >&2
  exit 1
fi
echo "server-kill.sh: ok: every acknowledged write of $cycles kill -9 cycles survived ($engine, appendfsync $fsync)" >&2
