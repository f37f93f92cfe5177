#!/usr/bin/env bash
# redis-benchmark's default suite (PING, SET, GET, INCR, LPUSH, RPUSH, LPOP, RPOP, SADD, HSET,
# SPOP, ZADD, ZPOPMIN, LRANGE_*, MSET, XADD, ...) against strata-server and redis-server.
#
#   bash bench/redis-benchmark.sh [--requests N] [--clients C] [--pipeline P] [--keyspace K]
#                                 [--tests set,get,...] [--reps R] [--durability everysec]
#                                 [--engines strata,redis] [--server-bin PATH] [--out DIR]
#                                 [--timeout S]
#
# Each repetition runs every engine in turn (the order reversed on even repetitions) on a
# fresh server (free loopback port, own temporary directory, stopped after), as
# `redis-benchmark -n N -c C -P P -r K --csv` (random keys over K; --tests passes -t).
# Durability as in bench/ycsb.sh: redis `appendonly yes` + `appendfsync D` vs strata-server
# `--appendfsync D` (default everysec; a comma list runs each).
#
# Writes DIR (default bench/out/redis-benchmark-<timestamp>): results.tsv (rep, durability,
# engine, test, requests/s, p50 and p99 ms), table.md and table.tsv (per test: each engine's
# requests/s median [min–max] over the repetitions, strata/redis of the medians and the
# ratios within each repetition, median [min–max]),
# errors.txt (every error line redis-benchmark printed, with the run it came from) and logs/.
# Exits 1 when strata-server gave any error (or redis-benchmark failed against it); errors
# from redis-server are reported but do not fail the run.
set -euo pipefail
cd "$(dirname "$0")/.."
. bench/servers.sh

requests=100000
clients=50
pipeline=1
keyspace=100000
tests=""
reps=3
durability="everysec"
engines="strata,redis"
server_bin=""
out=""
timeout_s=600
usage() { sed -n '2,22p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --requests|-n) requests="$2"; shift 2 ;;
    --clients|-c) clients="$2"; shift 2 ;;
    --pipeline|-P) pipeline="$2"; shift 2 ;;
    --keyspace|-r) keyspace="$2"; shift 2 ;;
    --tests|-t) tests="$2"; shift 2 ;;
    --reps) reps="$2"; shift 2 ;;
    --durability) durability="$2"; shift 2 ;;
    --engines) engines="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --timeout) timeout_s="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "redis-benchmark.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
for n in requests clients pipeline keyspace reps timeout_s; do
  if ! [[ "${!n}" =~ ^[1-9][0-9]*$ ]]; then
    echo "redis-benchmark.sh: --${n%_s} '${!n}': expected a positive integer" >&2
    exit 2
  fi
done
IFS=, read -r -a dur_list <<<"$durability"
IFS=, read -r -a eng_list <<<"$engines"
for d in "${dur_list[@]}"; do
  case "$d" in always|everysec|no) ;; *) echo "redis-benchmark.sh: --durability '$d': expected always, everysec or no" >&2; exit 2 ;; esac
done
for e in "${eng_list[@]}"; do
  case "$e" in strata|redis) ;; *) echo "redis-benchmark.sh: --engines '$e': expected strata or redis" >&2; exit 2 ;; esac
done
for tool in redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || { echo "redis-benchmark.sh: $tool is missing; run: bash bench/setup-ycsb.sh" >&2; exit 1; }
done
if [[ ",$engines," == *,redis,* ]] && ! command -v redis-server >/dev/null; then
  echo "redis-benchmark.sh: redis-server is missing; run: bash bench/setup-ycsb.sh" >&2
  exit 1
fi
if [[ ",$engines," == *,strata,* ]]; then
  resolve_strata_server "$server_bin"
fi

out="${out:-bench/out/redis-benchmark-$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$out/logs"
results="$out/results.tsv"
errors="$out/errors.txt"
printf 'rep\tdurability\tengine\ttest\trps\tp50_ms\tp99_ms\texit\n' >"$results"
: >"$errors"
{
  echo "# bench/redis-benchmark.sh $(date -u +%FT%TZ) on $(hostname), $(nproc) cores"
  echo "requests=$requests clients=$clients pipeline=$pipeline keyspace=$keyspace tests=${tests:-default} reps=$reps durability=$durability engines=$engines"
  echo "$(redis-benchmark --version 2>/dev/null || echo 'redis-benchmark ?'); redis: $(redis-server --version 2>/dev/null || echo absent)"
  [ -n "$STRATA_SERVER" ] && echo "strata-server: $STRATA_SERVER, sha256 $(sha256sum "$STRATA_SERVER" | cut -c1-16), built $(date -u -r "$STRATA_SERVER" +%FT%TZ)"
  echo "bench scripts at $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
} >"$out/environment.txt"

data_root=$(mktemp -d "${TMPDIR:-/tmp}/strata-redis-benchmark.XXXXXX")
trap 'server_stop; rm -rf "$data_root"' EXIT

strata_failed=0
for rep in $(seq 1 "$reps"); do
  mapfile -t order < <(rep_order "$rep" "${eng_list[@]}")
  for dur in "${dur_list[@]}"; do
    for engine in "${order[@]}"; do
      dir="$data_root/$engine.$dur.$rep"
      server_start "$engine" "$dur" "$dir"
      log="$out/logs/$rep.$dur.$engine.log"
      echo "redis-benchmark.sh: rep $rep, $dur: $engine on port $SERVER_PORT" >&2
      rc=0
      timeout "$timeout_s" redis-benchmark -h 127.0.0.1 -p "$SERVER_PORT" -n "$requests" \
        -c "$clients" -P "$pipeline" -r "$keyspace" --csv ${tests:+-t "$tests"} >"$log" 2>&1 || rc=$?
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "$rep $dur $engine: the server died during the run" >>"$errors"
        [ "$rc" != 0 ] || rc=1
      fi
      server_stop
      cp "$dir/server.log" "$out/logs/$rep.$dur.$engine.server.log" 2>/dev/null || true
      rm -rf "$dir"
      # Progress lines end in \r; keep what follows the last one. Anything that is neither the
      # CSV header nor a CSV row is an error or a warning: report it.
      tr '\r' '\n' <"$log" | grep -v -e '^"test"' -e '^"[^"]*","[0-9.]*",' -e '^[[:space:]]*$' \
        -e ': rps=' | sed "s/^/$rep $dur $engine: /" >>"$errors" || true
      [ "$rc" = 0 ] || echo "$rep $dur $engine: redis-benchmark exited with $rc" >>"$errors"
      tr '\r' '\n' <"$log" | grep '^"[^"]*","[0-9.]*",' | tr -d '"' |
        while IFS=, read -r test rps _avg _min p50 _p95 p99 _max; do
          printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$rep" "$dur" "$engine" "$test" "$rps" \
            "$p50" "$p99" "$rc" >>"$results"
        done || true  # no result rows (a failed run) is reported through errors.txt
      if [ "$engine" = strata ] && grep -q "^$rep $dur strata: " "$errors"; then
        strata_failed=1
      fi
    done
  done
done

# The table: per durability and test (in the order they ran), each engine's median [min–max]
# of requests/s over the repetitions, then strata/redis of the medians, and the ratios within
# each repetition (both servers ran back to back in it: the machine's drift between
# repetitions, which moves both alike, stays out of them), median [min–max].
awk -F'\t' -v reps="$reps" '
  function median(s,   a, n, i, j, t) {
    n = split(s, a, " ")
    for (i = 2; i <= n; i++) { t = a[i] + 0; for (j = i - 1; j >= 1 && a[j] + 0 > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    lo = a[1]; hi = a[n]
    return (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  }
  function cell(k,   m) {
    if (!(k in vals)) return "-"
    m = median(vals[k])
    med[k] = m
    return (lo == hi) ? sprintf("%.0f", m) : sprintf("%.0f [%.0f–%.0f]", m, lo, hi)
  }
  NR == 1 { next }
  {
    key = $2 "\t" $4
    if (!(key in seen)) { seen[key] = 1; order[++n] = key }
    if (!($3 in eng)) { eng[$3] = 1; engines[++ne] = $3 }
    vals[key "\t" $3] = vals[key "\t" $3] " " $5
    if (!($1 in repseen)) { repseen[$1] = 1; reps_ran[++nr] = $1 }
    per[key "\t" $1 "\t" $3] = $5
  }
  # The ratios within each repetition that ran both engines on k, median [min–max].
  function paired(k,   i, s, b, list, got, m) {
    list = ""; got = 0
    for (i = 1; i <= nr; i++) {
      s = k "\t" reps_ran[i] "\tstrata"; b = k "\t" reps_ran[i] "\tredis"
      if ((s in per) && (b in per) && per[b] > 0) { list = list " " per[s] / per[b]; got++ }
    }
    if (!got) return "-"
    m = median(list)
    return (got == 1) ? sprintf("%.2f", m) : sprintf("%.2f [%.2f–%.2f]", m, lo, hi)
  }
  END {
    # strata first, then the others in the order they ran.
    m = 0
    if ("strata" in eng) cols[++m] = "strata"
    for (i = 1; i <= ne; i++) if (engines[i] != "strata") cols[++m] = engines[i]
    hdr = "durability\ttest"
    for (i = 1; i <= m; i++) hdr = hdr "\t" cols[i] " (requests/s)"
    both = ("strata" in eng) && ("redis" in eng)
    if (both) hdr = hdr "\tstrata/redis\tstrata/redis per rep"
    print hdr
    for (r = 1; r <= n; r++) {
      line = order[r]
      for (i = 1; i <= m; i++) line = line "\t" cell(order[r] "\t" cols[i])
      if (both) {
        s = order[r] "\tstrata"; b = order[r] "\tredis"
        line = line "\t" ((s in med && b in med && med[b] > 0) ? sprintf("%.2f", med[s] / med[b]) : "-")
        line = line "\t" paired(order[r])
      }
      print line
    }
  }' "$results" >"$out/table.tsv"
{
  echo "redis-benchmark, $requests requests, $clients clients, pipeline $pipeline, keyspace $keyspace;"
  echo "requests/s median [min–max] over $reps repetition(s); strata/redis > 1 means strata-server is faster."
  echo
  head -n 1 "$out/table.tsv" | sed 's/\t/ | /g; s/^/| /; s/$/ |/'
  head -n 1 "$out/table.tsv" | awk -F'\t' '{ s = "|"; for (i = 1; i <= NF; i++) s = s " --- |"; print s }'
  tail -n +2 "$out/table.tsv" | sed 's/\t/ | /g; s/^/| /; s/$/ |/'
  echo
  if [ -s "$errors" ]; then
    echo "Errors and warnings ($(wc -l <"$errors") lines, all in errors.txt):"
    echo
    head -n 20 "$errors" | sed 's/^/    /'
  else
    echo "No errors."
  fi
} >"$out/table.md"
cat "$out/table.md"
if [ -s "$errors" ]; then
  echo "redis-benchmark.sh: error lines (see $errors):" >&2
  head -n 20 "$errors" >&2
fi
if [ "$strata_failed" = 1 ]; then
  echo "redis-benchmark.sh: strata-server gave errors" >&2
  exit 1
fi
