# Network namespaces for the cluster scripts (sourced by bench/cluster.sh and
# bench/cluster-faults.sh; not run on its own).
#
# A run's network: one bridge namespace "<prefix>-br" holding bridge br0, and a namespace
# per member ("<prefix>-n<i>", "<prefix>-cl", ...) joined to the bridge by a veth pair whose
# inside end is veth0 with the member's address on a /24. With a host link, the root
# namespace gets one more veth ("<prefix>h") on the bridge with an address of the same /24,
# so processes outside the namespaces (redis-cli, YCSB, the controller) reach the members.
# Every name starts with the run's prefix, so runs do not collide and removing a run's
# namespaces touches nothing else. Interface names stay within 15 characters.

# Why network namespaces cannot be used here, or nothing when they can.
netns_unusable() {
  [ "$(id -u)" -eq 0 ] || { echo "needs root (network namespaces)"; return; }
  command -v ip >/dev/null || { echo "no 'ip' command (iproute2)"; return; }
  local probe="stnprobe$$"
  ip netns add "$probe" 2>/dev/null || { echo "'ip netns add' does not work here"; return; }
  ip netns del "$probe"
}

# netns_bridge PREFIX: the run's bridge namespace.
netns_bridge() {
  ip netns add "$1-br"
  ip -n "$1-br" link set lo up
  ip -n "$1-br" link add br0 type bridge
  ip -n "$1-br" link set br0 up
}

# netns_attach PREFIX NAMESPACE BRIDGE_SIDE_NAME ADDRESS: a member's namespace on the bridge.
netns_attach() {
  ip netns add "$2"
  ip -n "$2" link set lo up
  ip -n "$1-br" link add "$3" type veth peer name veth0 netns "$2"
  ip -n "$1-br" link set "$3" master br0 up
  ip -n "$2" addr add "$4/24" dev veth0
  ip -n "$2" link set veth0 up
}

# netns_host_link PREFIX ADDRESS: the root namespace on the bridge, at ADDRESS/24.
netns_host_link() {
  ip link add "$1h" type veth peer name "$1hb" netns "$1-br"
  ip -n "$1-br" link set "$1hb" master br0 up
  ip addr add "$2/24" dev "$1h"
  ip link set "$1h" up
}

# netns_free_subnet FIRST: the first 10.X.0.0/24 (X from FIRST to 250) that no interface or
# route of the root namespace uses; nothing when every one is taken.
netns_free_subnet() {
  local x used
  used=$(ip -4 route show 2>/dev/null; ip -4 addr show 2>/dev/null)
  for x in $(seq "$1" 250); do
    grep -q "10\.$x\.0\." <<< "$used" || { echo "10.$x.0"; return; }
  done
}

# netns_remove PREFIX: kills whatever runs in the run's namespaces and removes them (the
# host link goes with the bridge namespace). Safe under `set -e`, also with nothing to remove.
netns_remove() {
  local ns
  for ns in $(ip netns list 2>/dev/null | awk '{print $1}' | grep "^$1-"); do
    ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
    ip netns del "$ns" 2>/dev/null || true
  done
  ip link del "$1h" 2>/dev/null || true
}

# netns_watchdog PREFIX SECONDS: a process outside the caller that removes the run's
# namespaces after SECONDS, should the caller be killed before it cleans up (SIGKILL runs
# no trap). Prints its pid.
netns_watchdog() {
  nohup bash -c "sleep $2
    for ns in \$(ip netns list 2>/dev/null | awk '{print \$1}' | grep '^$1-'); do
      ip netns pids \$ns 2>/dev/null | xargs -r kill -KILL 2>/dev/null
      ip netns del \$ns 2>/dev/null
    done
    ip link del $1h 2>/dev/null" > /dev/null 2>&1 &
  echo $!
}
