# Sourced by bench/ycsb.sh, bench/redis-benchmark.sh and bench/server-kill.sh: start and stop a
# Redis-protocol server (strata-server or redis-server) on a free loopback port with its data in
# a directory of its own, at a stated durability.
#
#   resolve_strata_server PATH   -> STRATA_SERVER (builds crates/strata-server when PATH is empty
#                                   and the crate exists; returns 1 with a message otherwise)
#   server_start ENGINE FSYNC DIR -> SERVER_PID, SERVER_PORT (ENGINE: strata|redis;
#                                   FSYNC: always|everysec|no; DIR: created, holds data + server.log)
#   server_stop                  -> SIGTERM, then SIGKILL after 20 s
#   server_kill9                 -> SIGKILL, no shutdown
#   SERVER_PASS (environment)    -> servers start with requirepass SERVER_PASS (the clients of
#                                   the scripts do not send it: a way to see errors reported)
#
# Durability, equal on both sides: redis-server runs with `appendonly yes` and
# `appendfsync FSYNC` (RDB snapshots off); strata-server with `--appendfsync FSYNC`.

SERVER_PID=""
SERVER_PORT=""
STRATA_SERVER="${STRATA_SERVER:-}"

# A loopback port nobody listens on (the server may still lose a race for it: server_start
# retries with another port).
free_port() {
  local p
  for _ in $(seq 1 200); do
    p=$((20000 + RANDOM % 40000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      echo "$p"
      return 0
    fi
  done
  echo "servers.sh: no free loopback port found" >&2
  return 1
}

resolve_strata_server() {
  local want="${1:-}"
  if [ -n "$want" ]; then
    if [ ! -x "$want" ]; then
      echo "servers.sh: --server-bin '$want' is not an executable file" >&2
      return 1
    fi
    STRATA_SERVER="$want"
    return 0
  fi
  local target="${CARGO_TARGET_DIR:-target}"
  if [ -f crates/strata-server/Cargo.toml ]; then
    echo "servers.sh: building strata-server (cargo build --release -p strata-server)" >&2
    nice -n 10 cargo build --release -q -p strata-server >&2 || return 1
  fi
  if [ -x "$target/release/strata-server" ]; then
    STRATA_SERVER="$target/release/strata-server"
    return 0
  fi
  echo "servers.sh: no strata-server binary (no crates/strata-server here and no $target/release/strata-server); pass --server-bin PATH or --engines redis" >&2
  return 1
}

# ping PORT: true when the server answers PONG.
server_ping() {
  [ "$(redis-cli -h 127.0.0.1 -p "$1" ${SERVER_PASS:+--no-auth-warning -a "$SERVER_PASS"} ping 2>/dev/null)" = PONG ]
}

server_start() {
  local engine="$1" fsync="$2" dir="$3" attempt port
  mkdir -p "$dir"
  for attempt in 1 2 3; do
    port=$(free_port) || return 1
    case "$engine" in
      redis)
        redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --appendonly yes \
          --appendfsync "$fsync" --save "" --daemonize no --protected-mode no \
          ${SERVER_PASS:+--requirepass "$SERVER_PASS"} >>"$dir/server.log" 2>&1 &
        ;;
      strata)
        if [ -z "$STRATA_SERVER" ]; then
          echo "servers.sh: strata-server not resolved (call resolve_strata_server first)" >&2
          return 1
        fi
        "$STRATA_SERVER" --port "$port" --bind 127.0.0.1 --dir "$dir" --appendfsync "$fsync" \
          ${SERVER_PASS:+--requirepass "$SERVER_PASS"} >>"$dir/server.log" 2>&1 &
        ;;
      *)
        echo "servers.sh: unknown engine '$engine' (expected strata or redis)" >&2
        return 1
        ;;
    esac
    SERVER_PID=$!
    SERVER_PORT=$port
    for _ in $(seq 1 300); do
      if server_ping "$port"; then
        return 0
      fi
      if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        break
      fi
      sleep 0.1
    done
    if kill -0 "$SERVER_PID" 2>/dev/null; then
      kill -9 "$SERVER_PID" 2>/dev/null || true
      wait "$SERVER_PID" 2>/dev/null || true
      echo "servers.sh: $engine did not answer PING on port $port within 30 s (log: $dir/server.log)" >&2
      return 1
    fi
    wait "$SERVER_PID" 2>/dev/null || true
    echo "servers.sh: $engine exited at start on port $port (attempt $attempt); last log lines:" >&2
    tail -n 5 "$dir/server.log" >&2
  done
  return 1
}

# rep_order REP ENGINE...: the engines in the order repetition REP runs them, one a line: as
# given on odd repetitions, reversed on even ones, so that no engine always goes first.
rep_order() {
  local rep=$1 i
  shift
  if [ $((rep % 2)) = 0 ]; then
    for ((i = $#; i >= 1; i--)); do printf '%s\n' "${!i}"; done
  else
    printf '%s\n' "$@"
  fi
}

server_stop() {
  [ -n "$SERVER_PID" ] || return 0
  kill "$SERVER_PID" 2>/dev/null || true
  for _ in $(seq 1 200); do
    kill -0 "$SERVER_PID" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "servers.sh: server $SERVER_PID did not stop within 20 s; SIGKILL" >&2
    kill -9 "$SERVER_PID" 2>/dev/null || true
  fi
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

server_kill9() {
  [ -n "$SERVER_PID" ] || return 0
  kill -9 "$SERVER_PID" 2>/dev/null || true
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}
