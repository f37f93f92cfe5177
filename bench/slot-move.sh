#!/usr/bin/env bash
# A slot of a strata-server cluster moved back and forth between partitions while clients
# write to it: how long its writes are held, and what the writers see.
#
#   bash bench/slot-move.sh [--records 100000] [--value-size 1000] [--writers 4] [--moves 3]
#                           [--base-port 18300] [--server-bin PATH] [--out FILE]
#
# Starts a 3-node cluster of 4 partitions on loopback (bench/cluster.sh), loads --records
# keys of --value-size bytes into one slot (the hash tag `{m}`, slot 15627, partition 3), then
# --moves times: starts --writers connections writing new keys of that slot one at a time
# (bench/slot_move_client.py: following MOVED and ASK, retrying TRYAGAIN), moves the slot to
# the next partition with `strata-cluster move-slots` 3 s later, and stops the writers 5 s
# after the move. Each move prints the controller's line (records and outbox changes
# copied, how long the slot's writes were held: from its freeze to its adopt), how long the
# move took, and the writers' count, errors, and latency median, p99 and maximum. Output
# to --out too (default bench/out/slot-move.txt). Needs python3; the release binaries are
# built unless --server-bin names the server (strata-cluster is taken from beside it). The
# cluster is stopped on exit.
set -euo pipefail
cd "$(dirname "$0")/.."

records=100000 value_size=1000 writers=4 moves=3 base_port=18300 server_bin="" out=bench/out/slot-move.txt
while [ $# -gt 0 ]; do
  case "$1" in
    --records) records=$2; shift 2 ;;
    --value-size) value_size=$2; shift 2 ;;
    --writers) writers=$2; shift 2 ;;
    --moves) moves=$2; shift 2 ;;
    --base-port) base_port=$2; shift 2 ;;
    --server-bin) server_bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "slot-move.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done
command -v python3 > /dev/null || { echo "slot-move.sh: skipped: python3 is not installed"; exit 0; }
if [ -z "$server_bin" ]; then
  cargo build --release -q -p strata-server --bins
  server_bin=target/release/strata-server
fi
ctl="$(dirname "$server_bin")/strata-cluster"
[ -x "$ctl" ] || { echo "slot-move.sh: no strata-cluster beside $server_bin" >&2; exit 1; }
client=bench/slot_move_client.py
dir=$(mktemp -d /tmp/strata-slot-move.XXXXXX)
trap 'bash bench/cluster.sh down --dir "$dir" > /dev/null 2>&1 || true; rm -rf "$dir"' EXIT
mkdir -p "$(dirname "$out")"
: > "$out"
say() { echo "$*" | tee -a "$out"; }

bash bench/cluster.sh up --nodes 3 --partitions 4 --dir "$dir" --base-port "$base_port" \
  --ttl 1800 --server-bin "$server_bin" > /dev/null
say "slot-move.sh $(date -u +%Y-%m-%dT%H:%MZ) $(git rev-parse --short HEAD 2>/dev/null || echo '?'): $records records of $value_size bytes, $writers writers"
say "$(python3 "$client" load "$base_port" m "$records" "$value_size")"
slot=15627 # {m}
partition=3
for i in $(seq "$moves"); do
  to=$(( (partition + 1) % 4 ))
  rm -f "$dir/stop"
  python3 "$client" write "$base_port" m "$dir/stop" "$writers" > "$dir/writers.$i" &
  writer=$!
  sleep 3
  start=$(date +%s%N)
  line=$("$ctl" --node "127.0.0.1:$base_port" --timeout 120 move-slots "$slot" --to "$to")
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  sleep 5
  touch "$dir/stop"
  wait "$writer"
  say "move $i: $line; the move took $took ms; $(cat "$dir/writers.$i")"
  partition=$to
done
