#!/usr/bin/env bash
# Redis's own test suite (its TCL tests, in external mode) against strata-server, and
# against redis-server in the same run when one is installed: per unit, the tests passed,
# failed and errored on each, and the names of the tests strata-server fails.
#
#   bash bench/redis-tests.sh --redis-src DIR [--units "unit/multi unit/type/incr ..."]
#                             [--server-bin PATH] [--out DIR] [--no-redis] [--port N]
#                             [--singledb] [--acl] [--debug] [--integration]
#
# DIR is a Redis 7.0 source tree (its tests/ and the test helper; nothing is fetched here):
#   git clone --depth 1 --branch 7.0.15 https://github.com/redis/redis /tmp/redis-7.0.15
# Tests that need what an external server cannot give the helper (DEBUG, replication,
# SAVE/BGSAVE) are left out by their tags, as the helper's external mode does for those
# tagged external:skip (those tagged needs:config-maxmemory run); one client at a time.
# The helper selects its databases (9 and 10) as against any Redis; --singledb runs it in
# database 0 only, as the helper's own flag does (its tests tagged singledb:skip are then
# left out).
# --acl adds the first server block of unit/acl (ACL users, LOG, DRYRUN, ...) and of
# unit/acl-v2 (selectors, per-key read and write permissions): Redis tags both units
# external:skip, though those blocks need nothing an external server lacks, so the script
# writes each, without that tag, to DIR/tests/unit/strata-acl-external.tcl and
# strata-acl-v2-external.tcl (files of the user's Redis tree; nothing of them enters this
# repository) and runs them as two more units. --debug starts both servers with
# `enable-debug-command yes` and runs the tests tagged needs:debug too (DEBUG RELOAD, DIGEST,
# PROTOCOL, OBJECT, ...), which are otherwise left out. Needs tclsh (apt-get install -y tcl); without it, or without DIR's test helper, the script
# says so and exits 0 ("skipped").
# --integration runs the suite's replication units instead (integration/replication*,
# psync2*, failover, block-repl; --units picks others), which start their own servers from
# the tree's src/redis-server: the script copies DIR's tests/ to a scratch tree whose
# src/redis-server runs strata-server (its log on stdout, with the " PID: " line the helper
# waits for) or the installed redis-server, and src/redis-cli and src/redis-benchmark the
# installed ones. Each unit gets at most 300 s on each server. Output in
# --out (default bench/out/redis-tests-<time>): <server>-<unit>.log and summary.txt. The
# servers listen on --port (default 7411), one after the other.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

src=""
units="unit/multi unit/keyspace unit/expire unit/type/string unit/type/incr unit/type/list \
unit/type/hash unit/type/set unit/type/zset unit/type/stream unit/type/stream-cgroups unit/scripting \
unit/functions unit/scan unit/protocol unit/quit unit/info-command unit/slowlog unit/geo \
unit/hyperloglog"
server_bin=""
out=""
with_redis=1
port=7411
singledb=""
acl=0
debug=0
integration=0
units_set=0
while [ $# -gt 0 ]; do
  case "$1" in
    --redis-src) src=$2; shift 2 ;;
    --units) units=$2; units_set=1; shift 2 ;;
    --server-bin) server_bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-redis) with_redis=0; shift ;;
    --port) port=$2; shift 2 ;;
    --singledb) singledb=--singledb; shift ;;
    --acl) acl=1; shift ;;
    --debug) debug=1; shift ;;
    --integration) integration=1; shift ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "redis-tests.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$src" ] || { echo "redis-tests.sh: --redis-src DIR is required (see --help)" >&2; exit 2; }
if ! command -v tclsh >/dev/null; then
  echo "redis-tests.sh: skipped: no tclsh (apt-get install -y tcl)"; exit 0
fi
if [ ! -f "$src/tests/test_helper.tcl" ]; then
  echo "redis-tests.sh: skipped: $src has no tests/test_helper.tcl (a Redis source tree?)"; exit 0
fi
src=$(cd "$src" && pwd)
if [ "$acl" = 1 ]; then
  # The unit's first `start_server` block, up to the next one (which restarts servers
  # with ACL files of its own), with `external:skip` taken off its tags.
  for u in acl acl-v2; do
    awk 'NR == 1 { sub(/acl external:skip/, "acl") }
         NR > 1 && /^start_server / { exit }
         /^set server_path/ { exit }
         { print }' "$src/tests/unit/$u.tcl" > "$src/tests/unit/strata-$u-external.tcl"
    units="$units unit/strata-$u-external"
  done
fi
if [ "$integration" = 1 ] && [ "$units_set" = 0 ]; then
  units="integration/replication integration/replication-2 integration/replication-3 \
integration/replication-4 integration/replication-psync integration/replication-buffer \
integration/block-repl integration/psync2 integration/psync2-reg integration/psync2-pingoff \
integration/psync2-master-restart integration/failover"
fi
if [ -z "$server_bin" ]; then
  cargo build --release -p strata-server >&2
  server_bin="${CARGO_TARGET_DIR:-target}/release/strata-server"
fi
[ -x "$server_bin" ] || { echo "redis-tests.sh: no server binary at $server_bin" >&2; exit 1; }
server_bin=$(cd "$(dirname "$server_bin")" && pwd)/$(basename "$server_bin")
out=${out:-$repo/bench/out/redis-tests-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
work=$(mktemp -d)
pid=""
# stop_tree_servers: the servers the helper started from the scratch tree (--integration)
# and left running when its unit was cut short (their working directory is in the tree).
stop_tree_servers() {
  local p
  # strata-server keeps its command line; redis-server retitles itself.
  for p in $(pgrep -f 'tests/tmp/redis\.conf' || true) $(pgrep redis-server || true); do
    case "$(readlink "/proc/$p/cwd" 2>/dev/null)" in
      "$work/tree"*) kill -9 "$p" 2>/dev/null || true ;;
    esac
  done
}
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
  stop_tree_servers
  rm -rf "$work"
}
trap cleanup EXIT

answers() { (exec 3<>"/dev/tcp/127.0.0.1/$port" && printf 'PING\r\n' >&3 && read -r -t 2 l <&3 && [[ "$l" == +PONG* ]]) 2>/dev/null; }

debug_flag=()
tags="-needs:repl -needs:debug -needs:save"
if [ "$debug" = 1 ]; then
  debug_flag=(--enable-debug-command yes)
  tags="-needs:repl -needs:save"
fi

# start <name>: a fresh server of that kind on $port, stopped by the next start or on exit.
start() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true; pid=""; }
  rm -rf "$work/data" && mkdir -p "$work/data"
  case "$1" in
    strata) timeout -k 10 3600 "$server_bin" --port "$port" --dir "$work/data" "${debug_flag[@]}" > "$work/server.log" 2>&1 & ;;
    redis) timeout -k 10 3600 redis-server --port "$port" --dir "$work/data" --save "" "${debug_flag[@]}" > "$work/server.log" 2>&1 & ;;
  esac
  pid=$!
  for _ in $(seq 100); do answers && return 0; sleep 0.1; done
  echo "redis-tests.sh: $1 did not start:" >&2; tail -5 "$work/server.log" >&2; exit 1
}

# Tests skipped on both servers: each sends blocking commands on two connections without
# waiting for the first to block, and then waits forever on the first when a multi-threaded
# server ran the second first (a legitimate order: docs/redis-compat.md, "Order across
# connections"), ending the unit's run there.
skips=(--skiptest "BRPOPLPUSH with multiple blocked clients")
# Skipped on strata-server only (so they count as not passed there): tests of keys evicted
# at a tiny `maxmemory`, and this server evicts no key (its data are on disk:
# docs/redis-compat.md, "maxmemory"). pubsub's waits without end for the eviction's event,
# which would end the unit's run; tracking's fails at its assertion before it sets
# `maxmemory` back, and every later test of the unit is then refused with OOM.
strata_skips=(--skiptest "Keyspace notifications: evicted events"
  --skiptest "Tracking invalidation message of eviction keys should be before response")

# tree <name>: the scratch tree whose src/redis-server is that server (--integration).
tree() {
  local t=$work/tree
  if [ ! -d "$t/tests" ]; then
    mkdir -p "$t/src" && cp -r "$src/tests" "$t/" && rm -rf "$t/tests/tmp" && mkdir "$t/tests/tmp"
    ln -sf "$(command -v redis-cli)" "$t/src/redis-cli"
    ln -sf "$(command -v redis-benchmark)" "$t/src/redis-benchmark"
  fi
  case "$1" in
    strata) printf '#!/bin/sh\necho "strata-server under the test helper, PID: $$"\nexec "%s" "$@" 2>&1\n' \
              "$server_bin" > "$t/src/redis-server" ;;
    redis) printf '#!/bin/sh\nexec "%s" "$@"\n' "$(command -v redis-server)" > "$t/src/redis-server" ;;
  esac
  chmod +x "$t/src/redis-server"
}

# run <name> <unit>: the unit against the running server (--integration: against the
# servers it starts); prints "ok err exception ignored".
run() {
  local log="$out/$1-${2//\//_}.log"
  local extra=()
  if [ "$1" = strata ]; then extra=("${strata_skips[@]}"); fi
  if [ "$integration" = 1 ]; then
    tree "$1"
    (cd "$work/tree" && timeout -k 10 300 tclsh tests/test_helper.tcl --single "$2" --durable \
       --clients 1 --timeout 120 > "$log" 2>&1) || true
    stop_tree_servers
  else
    (cd "$src" && timeout 300 tclsh tests/test_helper.tcl --host 127.0.0.1 --port "$port" \
       --single "$2" --durable $singledb --clients 1 "${skips[@]}" \
       "${extra[@]}" \
       --tags "$tags" \
       > "$log" 2>&1) || true
  fi
  sed -i 's/\x1b\[[0-9;]*m//g' "$log"
  local ok err exc ign
  ok=$(grep -c '^\[ok\]' "$log" || true)
  err=$(grep -c '^\[err\]' "$log" || true)
  exc=$(grep -c '^\[exception\]' "$log" || true)
  ign=$(grep -c '^\[ignore\]\|^\[skip\]' "$log" || true)
  echo "$ok $err $exc $ign"
}

servers="strata"
if [ "$with_redis" = 1 ] && command -v redis-server >/dev/null; then servers="strata redis"; fi
summary=$out/summary.txt
{
  mode="external mode"; [ "$integration" = 1 ] && mode="integration units, servers the helper starts"
  echo "Redis test suite ($(cd "$src" && git describe --tags 2>/dev/null || echo "$src")), $mode"
  printf '%-22s' unit; for s in $servers; do printf ' | %-22s' "$s ok/err/exc (ign)"; done; echo
} > "$summary"
declare -A total=()
for u in $units; do
  if [ ! -f "$src/tests/$u.tcl" ]; then echo "redis-tests.sh: no $u in $src/tests" >&2; continue; fi
  line=$(printf '%-22s' "$u")
  for s in $servers; do
    [ "$integration" = 1 ] || start "$s"
    read -r ok err exc ign < <(run "$s" "$u")
    line="$line | $(printf '%-22s' "$ok/$err/$exc ($ign)")"
    total[$s]=$(( ${total[$s]:-0} + ok ))
  done
  echo "$line" | tee -a "$summary"
done
{
  printf '%-22s' "passed in all"; for s in $servers; do printf ' | %-22s' "${total[$s]:-0}"; done; echo
  echo
  echo "strata-server's failures:"
  grep -h '^\[err\]\|^\[exception\]' "$out"/strata-*.log | cut -c1-160 || true
} | tee -a "$summary"
echo "logs in $out"
