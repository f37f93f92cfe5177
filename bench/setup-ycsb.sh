#!/usr/bin/env bash
# Installs what bench/ycsb.sh, bench/redis-benchmark.sh and bench/server-kill.sh need, from
# the project's own files only:
#   - Debian packages redis-server and redis-tools (redis-server as the baseline, redis-cli and
#     redis-benchmark as clients): apt-get install when missing and running as root;
#   - from Maven Central, through bench/ycsb/pom.xml: site.ycsb:core:0.17.0 and
#     redis.clients:jedis:2.9.0 with their dependencies, and the project's YCSB binding
#     (bench/ycsb/src/main/java), built into bench/ycsb/target/{classes,lib}.
# Needs Java 17+ and Maven (`mvn`). Safe to run again: it only does what is missing
# (the binding is rebuilt when its sources are newer; --rebuild rebuilds it anyway).
#
#   bash bench/setup-ycsb.sh [--rebuild] [--no-apt]
set -euo pipefail
cd "$(dirname "$0")/.."

rebuild=0
apt=1
while [ $# -gt 0 ]; do
  case "$1" in
    --rebuild) rebuild=1; shift ;;
    --no-apt) apt=0; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "setup-ycsb.sh: unknown argument '$1' (expected --rebuild or --no-apt)" >&2; exit 2 ;;
  esac
done

missing=()
for tool in redis-server redis-cli redis-benchmark; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$apt" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "setup-ycsb.sh: installing redis-server redis-tools (missing: ${missing[*]})"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server redis-tools >/dev/null
    # The package starts a system redis-server on port 6379; the benchmarks start their own
    # servers on free ports, so the system one is left as the package set it up.
  else
    echo "setup-ycsb.sh: missing ${missing[*]}; install them with:" >&2
    echo "  sudo apt-get install -y redis-server redis-tools" >&2
    exit 1
  fi
fi

for tool in java mvn; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "setup-ycsb.sh: '$tool' not found; YCSB needs Java 17+ and Maven (Debian: apt-get install -y openjdk-17-jdk-headless maven)" >&2
    exit 1
  fi
done

jar_dir=bench/ycsb/target/lib
stamp=bench/ycsb/target/classes/org/strata/ycsb/RedisClient.class
if [ "$rebuild" = 1 ] || [ ! -f "$stamp" ] \
  || [ -n "$(find bench/ycsb/pom.xml bench/ycsb/src -newer "$stamp" -type f | head -n 1)" ] \
  || ! ls "$jar_dir"/core-0.17.0.jar "$jar_dir"/jedis-2.9.0.jar >/dev/null 2>&1; then
  echo "setup-ycsb.sh: building the YCSB client (Maven Central: site.ycsb:core:0.17.0, redis.clients:jedis:2.9.0)"
  mvn -q -B -f bench/ycsb/pom.xml package -DskipTests
fi
echo "setup-ycsb.sh: ready: $(redis-server --version | cut -d' ' -f1-3); YCSB classpath bench/ycsb/target/classes:$jar_dir/*"
