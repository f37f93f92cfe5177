#!/usr/bin/env bash
# A fault run: a strata-server cluster in network namespaces, clients checking
# linearizability while nodes are killed, paused, cut off and given lossy links.
#
#   bash bench/cluster-faults.sh --duration SECONDS [--nodes 3] [--partitions 8]
#                                [--clients 12] [--keys 48] [--spares 0] [--server-bin PATH]
#                                [--out DIR] [--seed N] [--appendfsync always|everysec]
#                                [--pass P]
#
# Every node runs in a network namespace of its own (10.77.0.I/24, clients on port 6379,
# Raft on 16379), the client (bench/faults, built with go) in another (10.77.0.100), all
# joined by a bridge in a namespace of its own: nothing touches the host's interfaces and
# traffic goes only to those addresses. Nodes use --appendfsync always (or as --appendfsync
# says: under everysec a Raft append counts once written, and no fault here loses the OS's
# page cache), 3 replicas per partition. During --duration seconds, one fault at a time, at
# seeded random moments:
# kill -9 then restart (same flags, same data), kill -9 with the node's data directory
# deleted then a restart on an empty one (a lost disk: the node catches up before it votes),
# SIGSTOP then SIGCONT, the node's link down then up, a lossy link (tc netem loss 30% delay
# 50ms; where the kernel has no netem, nftables dropping 30% each way, without delay). Each
# is healed before the next, so a quorum always stands once a wiped node has caught up.
# With --spares K, K more namespaces hold nodes outside the cluster, and one more fault kind
# changes the membership: `join` starts a spare on an empty directory and adds it with the
# controller (`strata-cluster add-node --rebalance --wait`: replicas move to it while the
# clients go on), `leave` removes a member (`strata-cluster remove-node --wait`: its replicas
# move away, then it is dropped from the map) and stops it, making it a spare again; joins
# and leaves alternate, and the cluster keeps at least --nodes members. The other faults hit
# members only. One more kind, `reslot`, moves the slot of one of the client's keys to a
# partition drawn at random, with the controller (`strata-cluster move-slots --key`), while
# the clients go on (the move may meet the other faults' aftermath: it resumes or fails,
# and a failure is counted); half of the moves are left after a random step
# (`move-slots --stop-after`, as a controller that died there) and then undone
# (`move-slots --abort`), or finished if past their handoff. Then the faults stop, the
# client reads every key back, the checker runs, and a summary is printed: operations,
# faults by kind, leader changes, violations.
# Output in --out (default bench/out/faults-<time>): faults.log, leaders.log, client.log,
# history.jsonl, summary.txt, node<I>/log, and when a violation is found witnesses.txt
# and violation-<key>.{txt,html}.
# With --pass P every node requires the password P (`--requirepass`), and the client, the
# controller and the script's own probes authenticate with it.
# Needs root, `ip netns` and go; otherwise it prints why and exits 0 ("skipped").
# Exit status 0 when no violation was found and every node stayed up (but for the faults).
# The release binary is built unless --server-bin names one. Everything it started is
# stopped and every namespace removed on exit; it ends by itself within about
# duration + 10 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD

duration=""
nodes=3
partitions=8
clients=12
keys=48
server_bin=""
out=""
seed=1
spares=0
appendfsync=always
pass=""
usage() { sed -n '2,42p' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --duration) duration="$2"; shift 2 ;;
    --nodes) nodes="$2"; shift 2 ;;
    --partitions) partitions="$2"; shift 2 ;;
    --clients) clients="$2"; shift 2 ;;
    --keys) keys="$2"; shift 2 ;;
    --server-bin) server_bin="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --seed) seed="$2"; shift 2 ;;
    --spares) spares="$2"; shift 2 ;;
    --appendfsync) appendfsync="$2"; shift 2 ;;
    --pass) pass="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "cluster-faults.sh: unknown argument $1" >&2; usage >&2; exit 2 ;;
  esac
done
for v in duration nodes partitions clients keys seed spares; do
  [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "cluster-faults.sh: --$v must be a number (got '${!v}')" >&2; usage >&2; exit 2; }
done
case "$appendfsync" in
  always|everysec) ;;
  *) echo "cluster-faults.sh: --appendfsync must be always or everysec (got '$appendfsync')" >&2; exit 2 ;;
esac
[ "$duration" -ge 10 ] || { echo "cluster-faults.sh: --duration must be at least 10 seconds" >&2; exit 2; }
[ "$nodes" -ge 3 ] && [ $((nodes + spares)) -le 9 ] || { echo "cluster-faults.sh: --nodes must be 3..9, with the spares" >&2; exit 2; }
total=$((nodes + spares))

skip() { echo "cluster-faults.sh: skipped: $*"; exit 0; }
source bench/netns.sh
why=$(netns_unusable); [ -z "$why" ] || skip "$why"
command -v go >/dev/null || skip "no go toolchain (the client is bench/faults, in Go)"
# The lossy-link fault's fallback where the kernel has no netem: nftables, from Debian's
# package (root is already needed). Without either, that fault is left out, and said so.
if ! command -v nft >/dev/null && command -v apt-get >/dev/null; then
  echo "installing nftables (apt-get install -y nftables) for the lossy-link fault" >&2
  apt-get install -y nftables >/dev/null 2>&1 \
    || { apt-get update >/dev/null 2>&1 && apt-get install -y nftables >/dev/null 2>&1; } \
    || echo "cluster-faults.sh: could not install nftables; lossy links only with netem" >&2
fi

if [ -z "$server_bin" ]; then
  cargo build --release -p strata-server >&2
  server_bin="${CARGO_TARGET_DIR:-target}/release/strata-server"
fi
[ -x "$server_bin" ] || { echo "cluster-faults.sh: no server binary at $server_bin" >&2; exit 1; }
server_bin=$(realpath "$server_bin")
controller_bin="$(dirname "$server_bin")/strata-cluster"
if [ ! -x "$controller_bin" ]; then
  echo "cluster-faults.sh: the controller (membership changes, slot moves) must be beside the server, at $controller_bin" >&2; exit 1
fi
out=${out:-bench/out/faults-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$out"
out=$(realpath "$out")

echo "building the client" >&2
(cd "$repo/bench/faults" && go build -o "$out/faults-client" .)

# Names: a prefix of this run's pid, so that runs do not collide and cleanup removes only
# its own. Interface names stay short (15 characters at most).
prefix="stf$$"
ns_cl="$prefix-cl"
ns_of() { echo "$prefix-n$1"; }
addr_of() { echo "10.77.0.$1"; }
port=6379
raft_port=16379
client_addr=10.77.0.100

pids=()       # node i's server pid in pids[i], empty while it is down on purpose
sampler_pid=""
client_pid=""
lossy_mode=""
t0=$(date +%s.%N)
since() { awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }
log() { echo "$(date +%H:%M:%S.%3N) +$(since)s $*" | tee -a "$out/faults.log" >&2; }

cleanup() {
  set +e
  touch "$out/.stop"
  [ -n "$client_pid" ] && kill -TERM "$client_pid" 2>/dev/null
  [ -n "$sampler_pid" ] && kill -TERM "$sampler_pid" 2>/dev/null
  for i in $(seq 1 "$total"); do
    local p=${pids[$i]:-}
    [ -n "$p" ] || continue
    kill -CONT "$p" 2>/dev/null; kill -TERM "$p" 2>/dev/null
  done
  local deadline=$((SECONDS + 10))
  for i in $(seq 1 "$total"); do
    local p=${pids[$i]:-}
    [ -n "$p" ] || continue
    while kill -0 "$p" 2>/dev/null; do
      if [ $SECONDS -ge $deadline ]; then kill -KILL "$p" 2>/dev/null; break; fi
      sleep 0.1
    done
  done
  [ -n "$client_pid" ] && kill -KILL "$client_pid" 2>/dev/null
  netns_remove "$prefix"
  rm -f "$out/.stop" "$out/healed"
  if [ -n "${watchdog_pid:-}" ]; then
    pkill -P "$watchdog_pid" 2>/dev/null; kill "$watchdog_pid" 2>/dev/null
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# Should the script itself be killed, the namespaces go once the run's longest possible
# time is past.
watchdog_pid=$(netns_watchdog "$prefix" $((duration * 3 / 2 + 900)))

# --- the network: a bridge namespace, a namespace per node and one for the client.
netns_bridge "$prefix"
for i in $(seq 1 "$total"); do netns_attach "$prefix" "$(ns_of "$i")" "vn$i" "$(addr_of "$i")"; done
netns_attach "$prefix" "$ns_cl" vcl "$client_addr"

# The lossy-link fault: netem where the kernel has it, else nftables' random drops.
probe_ns=$(ns_of 1)
if ip netns exec "$probe_ns" tc qdisc add dev veth0 root netem loss 1% 2>/dev/null; then
  ip netns exec "$probe_ns" tc qdisc del dev veth0 root
  lossy_mode=netem
elif command -v nft >/dev/null && ip netns exec "$probe_ns" nft add table netdev stf_probe 2>/dev/null; then
  ip netns exec "$probe_ns" nft delete table netdev stf_probe
  lossy_mode=nft
fi

list=""
for i in $(seq 1 "$nodes"); do list="${list:+$list,}$i=$(addr_of "$i"):$port:$raft_port"; done
# Each node's --cluster-nodes: the first nodes name the new cluster; a spare names itself
# only (it joins through the cluster map).
declare -a lists member
for i in $(seq 1 "$total"); do
  if [ "$i" -le "$nodes" ]; then lists[i]=$list; member[i]=1
  else lists[i]="$i=$(addr_of "$i"):$port:$raft_port"; member[i]=0; fi
done
members() { local i; for i in $(seq 1 "$total"); do if [ "${member[$i]}" -eq 1 ]; then echo "$i"; fi; done; }
# start_node I [yes]: yes at the cluster's first start only (a new cluster's empty
# directories); a restart on a deleted directory is a lost disk, not a new cluster.
start_node() {
  local i=$1 bootstrap=${2:-no}
  mkdir -p "$out/node$i"
  echo "=== start $(date +%H:%M:%S.%3N)" >> "$out/node$i/log"
  ip netns exec "$(ns_of "$i")" "$server_bin" --port "$port" --bind "$(addr_of "$i")" \
    --dir "$out/node$i/data" --appendfsync "$appendfsync" \
    --cluster-enabled yes --cluster-node-id "$i" --cluster-nodes "${lists[$i]}" \
    --cluster-partitions "$partitions" --cluster-replicas 3 --cluster-bootstrap "$bootstrap" \
    ${pass:+--requirepass "$pass"} >> "$out/node$i/log" 2>&1 &
  pids[i]=$!
  disown "${pids[$i]}"
}

# Runs in the client's namespace: one RESP request, one reply line (or the body of a bulk
# reply), within 2 s; nothing when the node does not answer (or refuses $STRATA_PASS, the
# password it authenticates with first when set).
resp() {
  local host=$1 req=$2 line len
  exec 3<>"/dev/tcp/$host/6379" || return 0
  if [ -n "${STRATA_PASS:-}" ]; then
    printf '*2\r\n$4\r\nAUTH\r\n$%d\r\n%s\r\n' "$(printf '%s' "$STRATA_PASS" | wc -c)" \
      "$STRATA_PASS" >&3
    IFS= read -r -t 2 line <&3 || { exec 3>&-; return 0; }
    [ "${line%$'\r'}" = "+OK" ] || { exec 3>&-; return 0; }
  fi
  printf '%b' "$req" >&3
  IFS= read -r -t 2 line <&3 || { exec 3>&-; return 0; }
  if [[ "$line" == \$* ]]; then
    len=${line#\$}; len=${len%$'\r'}
    timeout 2 head -c "$len" <&3 || true
  else
    printf '%s\n' "$line"
  fi
  exec 3>&-
}
ask() { # node, request
  STRATA_PASS="$pass" timeout 4 ip netns exec "$ns_cl" bash -c "$(declare -f resp); resp $(addr_of "$1") '$2'" 2>/dev/null || true
}
info_cluster() { ask "$1" '*2\r\n$4\r\nINFO\r\n$7\r\ncluster\r\n' | tr -d '\r'; }
answers() { ask "$1" '*1\r\n$4\r\nPING\r\n' | grep -q PONG; }

# Each partition's leader and term, by the highest term any node claims leadership in:
# lines "partition leader term".
leaders_now() {
  local tmp i
  tmp=$(mktemp -d)
  for i in $(members); do info_cluster "$i" > "$tmp/$i" & done
  wait
  cat "$tmp"/* | sed -nE 's/^partition([0-9]+):.*role=leader,term=([0-9]+),leader=([0-9]+).*/\1 \3 \2/p' \
    | sort -k1,1n -k3,3nr | awk '!seen[$1]++'
  rm -rf "$tmp"
}

for i in $(members); do start_node "$i" yes; done
deadline=$((SECONDS + 60))
while :; do
  led=$(leaders_now | wc -l)
  [ "$led" -eq "$partitions" ] && break
  if [ $SECONDS -ge $deadline ]; then
    echo "cluster-faults.sh: $led of $partitions partitions have a leader after 60 s (logs in $out/node*/log)" >&2
    exit 1
  fi
  for i in $(seq 1 "$nodes"); do
    kill -0 "${pids[$i]}" 2>/dev/null || { echo "cluster-faults.sh: node $i exited:" >&2; tail -5 "$out/node$i/log" >&2; exit 1; }
  done
  sleep 0.5
done
log "cluster up: $nodes nodes, $partitions partitions, every partition has a leader; lossy faults: ${lossy_mode:-none (neither netem nor nft)}"

# --- leader sampler: every second, each partition's leader and term (leaders.log:
# "seconds partition leader term").
(
  while [ ! -e "$out/.stop" ]; do
    s=$(since)
    leaders_now | sed "s/^/$s /" >> "$out/leaders.log"
    sleep 1
  done
) &
sampler_pid=$!

# --- the client, bounded: workload, then waiting for `healed`, final reads, the check.
addrs=""
for i in $(seq 1 "$nodes"); do addrs="${addrs:+$addrs,}$(addr_of "$i"):$port"; done
check_timeout=$((120 + duration / 2))
client_limit=$((duration + 90 + check_timeout + 120))
timeout --kill-after=10 "$client_limit" ip netns exec "$ns_cl" "$out/faults-client" \
  -addrs "$addrs" -duration "${duration}s" -clients "$clients" -keys "$keys" -seed "$seed" \
  -out "$out" -ready-file "$out/healed" -final-timeout 90s -check-timeout "${check_timeout}s" \
  ${pass:+-pass "$pass"} > "$out/client.log" 2>&1 &
client_pid=$!
log "client started: $clients clients, $keys keys, ${duration}s, seed $seed"

# --- faults. One at a time; each healed before the next.
RANDOM=$seed
kinds=(kill wipe stop linkdown)
[ -n "$lossy_mode" ] && kinds+=(lossy)
[ "$spares" -gt 0 ] && kinds+=(move)
kinds+=(reslot reslot) # twice: slot moves are a quarter or so of the faults
reslot_failures=0
declare -A fault_count=()
unexpected=0
restart_failures=0
unrecovered=0

# Restarts any node that died without being killed here, and says so.
check_nodes() {
  local i
  for i in $(seq 1 "$total"); do
    if [ -n "${pids[$i]:-}" ] && ! kill -0 "${pids[$i]}" 2>/dev/null; then
      unexpected=$((unexpected + 1))
      log "UNEXPECTED: node $i (pid ${pids[$i]}) exited; its log ends:"
      tail -20 "$out/node$i/log" | sed 's/^/    /' | tee -a "$out/faults.log" >&2
      start_node "$i"
      log "node $i restarted (pid ${pids[$i]})"
    fi
  done
}

# Starts node $1 again after a kill and waits until it answers: up to 10 starts (a start
# that exits is a server failure, counted and logged, and the node is started again), 30 s
# each.
restart_node() {
  local i=$1 try t
  for try in $(seq 1 10); do
    start_node "$i"
    t=$SECONDS
    while ! answers "$i"; do
      if ! kill -0 "${pids[$i]}" 2>/dev/null; then
        restart_failures=$((restart_failures + 1))
        log "RESTART FAILED: node $i exited while starting (start $try); its log ends:"
        tail -2 "$out/node$i/log" | sed 's/^/    /' | tee -a "$out/faults.log" >&2
        sleep 1
        continue 2
      fi
      if [ $((SECONDS - t)) -ge 30 ]; then
        break 2
      fi
      sleep 0.2
    done
    log "node $i answers again after its restart ($((SECONDS - t)) s)"
    return 0
  done
  unrecovered=$((unrecovered + 1))
  log "UNRECOVERED: node $i does not answer after its restart; its log ends:"
  tail -20 "$out/node$i/log" | sed 's/^/    /' | tee -a "$out/faults.log" >&2
  # Not counted again as an unexpected exit if it dies.
  kill -0 "${pids[$i]}" 2>/dev/null || pids[i]=""
}

inject() { # kind, node
  local ns; ns=$(ns_of "$2")
  case "$1" in
    kill) kill -KILL "${pids[$2]}"; pids[$2]="" ;;
    wipe)
      kill -KILL "${pids[$2]}"
      # Gone before its directory is (up to 5 s: a zombie not yet reaped still answers).
      for _ in $(seq 1 100); do kill -0 "${pids[$2]}" 2>/dev/null || break; sleep 0.05; done
      pids[$2]=""
      rm -rf "$out/node$2/data" ;;
    stop) kill -STOP "${pids[$2]}" ;;
    linkdown) ip -n "$ns" link set veth0 down ;;
    lossy)
      if [ "$lossy_mode" = netem ]; then
        ip netns exec "$ns" tc qdisc add dev veth0 root netem loss 30% delay 50ms
      else
        ip netns exec "$ns" nft -f - <<'EOF'
table netdev stf_loss {
  chain in { type filter hook ingress device "veth0" priority 0; policy accept; numgen random mod 100 < 30 drop; }
  chain out { type filter hook egress device "veth0" priority 0; policy accept; numgen random mod 100 < 30 drop; }
}
EOF
      fi ;;
  esac
}

heal() { # kind, node
  local ns i=$2; ns=$(ns_of "$2")
  case "$1" in
    kill | wipe) restart_node "$i" ;;
    stop) kill -CONT "${pids[$i]}" ;;
    linkdown) ip -n "$ns" link set veth0 up ;;
    lossy)
      if [ "$lossy_mode" = netem ]; then
        ip netns exec "$ns" tc qdisc del dev veth0 root
      else
        ip netns exec "$ns" nft delete table netdev stf_loss
      fi ;;
  esac
}

# The controller, run in the client's namespace against a member: bounded, output logged.
controller() {
  local via; via=$(members | head -1)
  timeout -k 5 300 ip netns exec "$ns_cl" "$controller_bin" --node "$(addr_of "$via"):$port" \
    --timeout 240 ${pass:+--pass "$pass"} "$@" >> "$out/controller.log" 2>&1
}
membership_failures=0

# A membership change: a spare joins while the cluster has its first size, else a member
# (other than the first, through which the controller speaks) leaves. Echoes what it did.
move() {
  local i n
  n=$(members | wc -l)
  if [ "$n" -le "$nodes" ]; then
    for i in $(seq 1 "$total"); do [ "${member[$i]}" -eq 0 ] && break; done
    rm -rf "$out/node$i/data"
    start_node "$i"
    for _ in $(seq 1 150); do answers "$i" && break; sleep 0.2; done
    member[i]=1
    echo "=== add-node $i $(date +%H:%M:%S.%3N)" >> "$out/controller.log"
    controller add-node "$i" "$(addr_of "$i"):$port:$raft_port" --rebalance --wait \
      || { membership_failures=$((membership_failures + 1)); log "MEMBERSHIP: adding node $i failed (controller.log)"; }
    fault_node=$i; fault_what="join"
  else
    local cand=()
    for i in $(members | tail -n +2); do cand+=("$i"); done
    i=${cand[$((RANDOM % ${#cand[@]}))]}
    echo "=== remove-node $i $(date +%H:%M:%S.%3N)" >> "$out/controller.log"
    if controller remove-node "$i" --wait; then
      member[i]=0
      kill -TERM "${pids[$i]}" 2>/dev/null
      for _ in $(seq 1 150); do kill -0 "${pids[$i]}" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "${pids[$i]}" 2>/dev/null || true
      pids[i]=""
    else
      membership_failures=$((membership_failures + 1)); log "MEMBERSHIP: removing node $i failed (controller.log)"
    fi
    fault_node=$i; fault_what="leave"
  fi
}

run_end=$(awk -v a="$(since)" -v d="$duration" 'BEGIN { printf "%d", a + d }')
while :; do
  gap=$((2 + RANDOM % 4))
  kind=${kinds[$((RANDOM % ${#kinds[@]}))]}
  mapfile -t live < <(members)
  node=${live[$((RANDOM % ${#live[@]}))]}
  hold=$((2 + RANDOM % 5))
  now=$(since); now=${now%.*}
  # Room for the gap, the fault and its heal before the workload ends.
  [ $((now + gap + hold + 2)) -le "$run_end" ] || break
  sleep "$gap"
  check_nodes
  if [ "$kind" = reslot ]; then
    key="k$((RANDOM % keys))"; to=$((RANDOM % partitions))
    if [ $((RANDOM % 2)) -eq 0 ]; then
      # A move left half done (`--stop-after` a random step: as a controller that died
      # there), then undone (`--abort`), or finished when it was past its handoff.
      steps=(import copy freeze); step=${steps[$((RANDOM % 3))]}
      log "slot move begins, to stop after its $step: the slot of $key to partition $to"
      echo "=== move-slots --key $key --to $to --stop-after $step $(date +%H:%M:%S.%3N)" >> "$out/controller.log"
      controller move-slots --key "$key" --to "$to" --stop-after "$step" || true
      echo "=== move-slots --key $key --to $to --abort $(date +%H:%M:%S.%3N)" >> "$out/controller.log"
      if controller move-slots --key "$key" --to "$to" --abort; then
        log "slot move undone: $(tail -1 "$out/controller.log")"
      elif controller move-slots --key "$key" --to "$to"; then
        log "slot move not undone (none, or past its handoff), finished: $(tail -1 "$out/controller.log")"
      else
        reslot_failures=$((reslot_failures + 1)); log "SLOT MOVE: undoing or finishing the move of $key's slot failed (controller.log)"
      fi
    else
      log "slot move begins: the slot of $key to partition $to"
      echo "=== move-slots --key $key --to $to $(date +%H:%M:%S.%3N)" >> "$out/controller.log"
      if controller move-slots --key "$key" --to "$to"; then
        log "slot move done: $(tail -1 "$out/controller.log")"
      else
        reslot_failures=$((reslot_failures + 1)); log "SLOT MOVE: moving the slot of $key failed (controller.log)"
      fi
    fi
    fault_count[reslot]=$(( ${fault_count[reslot]:-0} + 1 ))
    kill -0 "$client_pid" 2>/dev/null || { log "the client exited early"; break; }
    continue
  fi
  if [ "$kind" = move ]; then
    log "membership change begins"
    move
    log "membership change done: $fault_what node $fault_node; members now $(members | tr '\n' ' ')"
    fault_count[$fault_what]=$(( ${fault_count[$fault_what]:-0} + 1 ))
    kill -0 "$client_pid" 2>/dev/null || { log "the client exited early"; break; }
    continue
  fi
  log "fault $kind node $node for ${hold}s"
  inject "$kind" "$node"
  fault_count[$kind]=$(( ${fault_count[$kind]:-0} + 1 ))
  sleep "$hold"
  heal "$kind" "$node"
  log "healed $kind node $node"
  kill -0 "$client_pid" 2>/dev/null || { log "the client exited early"; break; }
done
check_nodes
# The members' addresses: the nodes whose replicas the client's final phase compares.
final=""
for i in $(members); do final="${final:+$final,}$(addr_of "$i"):$port"; done
echo "$final" > "$out/healed.tmp"; mv "$out/healed.tmp" "$out/healed"
log "faults over; waiting for the client's final reads and check"

client_rc=0
wait "$client_pid" || client_rc=$?
client_pid=""
log "client exited with status $client_rc"
touch "$out/.stop"
wait "$sampler_pid" 2>/dev/null || true
sampler_pid=""
check_nodes

# --- summary
panics=$({ grep -il 'panic' "$out"/node*/log 2>/dev/null || true; } | wc -l)
leader_changes=$(awk '{ if ($2 in leader && (leader[$2] != $3)) n++; leader[$2] = $3 } END { print n + 0 }' "$out/leaders.log" 2>/dev/null || echo 0)
term_changes=$(awk '{ if ($2 in term && term[$2] != $4) n++; term[$2] = $4 } END { print n + 0 }' "$out/leaders.log" 2>/dev/null || echo 0)
summary=$out/summary.txt
val() { sed -n "s/^$1=//p" "$summary" 2>/dev/null | head -1; }
faults_total=0
faults_desc=""
for k in kill wipe stop linkdown lossy join leave reslot; do
  c=${fault_count[$k]:-0}
  faults_total=$((faults_total + c))
  faults_desc="$faults_desc $k=$c"
done
{
  echo
  echo "== fault run: $out"
  echo "duration ${duration}s, $nodes nodes (+$spares spares), $partitions partitions, $clients clients, $keys keys, seed $seed"
  if [ -f "$summary" ]; then
    echo "operations: $(val ops_total) (ok $(val ops_ok), failed $(val ops_failed), unknown $(val ops_unknown));" \
      "get $(val get_ok)/$(val get_failed), set $(val set_ok)/$(val set_failed)/$(val set_unknown)," \
      "del $(val del_ok)/$(val del_failed)/$(val del_unknown) (ok/failed/unknown)"
  else
    echo "operations: no summary from the client (see $out/client.log)"
  fi
  echo "faults: $faults_total ($faults_desc ); lossy links by ${lossy_mode:-(none)}"
  echo "leader changes: $leader_changes (term changes seen: $term_changes; leaders.log)"
  echo "membership changes that failed: $membership_failures; slot moves that failed: $reslot_failures; members at the end: $(members | tr '\n' ' ')"
  echo "unexpected node exits: $unexpected; starts after a kill that exited: $restart_failures; nodes never answering after a restart: $unrecovered; node logs mentioning a panic: $panics"
  if [ -f "$summary" ]; then
    illegal_keys=$(val illegal_keys)
    timed_out=$(val timed_out_keys)
    echo "linearizability: $(val verdict)${illegal_keys:+ (porcupine: illegal keys $illegal_keys)}; witnesses of violations: $(val witnesses)${timed_out:+; search cut short on keys $timed_out}"
    echo "acknowledged writes lost: $(val lost_writes); final values never written: $(val phantom_values);" \
      "replicas not agreeing: $(val replicas_diverged); keys without a final read: $(val keys_without_final_read)"
  fi
  echo "client exit status: $client_rc (0 ok, 1 violation, 2 checker timeout, 3 setup, 4 no final read, 124/137 killed by the time limit)"
} | tee -a "$out/faults.log"

[ "$client_rc" -eq 0 ] && [ "$membership_failures" -eq 0 ] && [ "$reslot_failures" -eq 0 ] && [ "$unexpected" -eq 0 ] && [ "$restart_failures" -eq 0 ] && [ "$unrecovered" -eq 0 ] \
  && [ "$panics" -eq 0 ] || exit 1
