# Shared by node_join.sh, node_join_tls.sh, cross_table_cluster.sh, ha_failover.sh and rate_limits_ha.sh (sourced): a temporary folder and the node
# processes started into `pids`, both gone at exit; free loopback ports; HTTP status polling;
# failing with every node's log.
py=/usr/bin/python3; [ -x "$py" ] || py=python3
tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; kill -9 "$p" 2>/dev/null || true; done
  # And every other background job (load generators): a failure must end the test, not wait on them.
  for p in $(jobs -p); do kill -9 "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
free_port() { "$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
fail() { echo "FAIL: $*"; for f in "$tmp"/*.log; do echo "--- $f"; tail -n 30 "$f"; done; exit 1; }
code() { curl -s -o /dev/null -w '%{http_code}' "$1" || true; }
until_code() {  # URL CODE SECONDS
  for _ in $(seq 1 $(($3 * 10))); do [ "$(code "$1")" = "$2" ] && return 0; sleep 0.1; done
  return 1
}
# router_only_node PORT: the [[nodes]] table of a router node on 127.0.0.1:PORT with no workers
# of its own (worker nodes join it), for a config written by the caller.
router_only_node() {
  printf '[[nodes]]\nname = "router"\nhost = "127.0.0.1"\nport = %s\n[nodes.workers]\ncount = 0\n' "$1"
}
# load_ended PID OUT WHY: stops join_load.py (PID, writing OUT) and fails unless every request
# ended once without error and at least one moved mid-stream (WHY: what no move means); sets
# `resumed` to how many moved.
load_ended() {
  touch "$tmp/stop"
  local rc=0
  wait "$1" || rc=$?
  cat "$tmp/load.log"
  [ "$rc" = 0 ] || fail "the load saw errors or lost requests"
  resumed=$("$py" -c 'import json,sys; print(sum(1 for r in json.load(open(sys.argv[1])) if r.get("resumed")))' "$2")
  [ "$resumed" -gt 0 ] || fail "no request moved: $3"
}
# ha_config SOURCE_DIR: cluster-configs/ha-loopback.toml as $tmp/ha.toml on free ports (routers
# $r1 $r2, ZeroMQ gateways $z1 $z2, HTTP gateways $h1 $h2) with the repository's models.
ha_config() {
  r1=$(free_port); r2=$(free_port); z1=$(free_port); z2=$(free_port); h1=$(free_port); h2=$(free_port)
  sed -e "s|\"../models/default\"|\"$1/models/default\"|; s|\"../models/adapters\"|\"$1/models/adapters\"|" \
      -e "s|port = 4300|port = $r1|; s|port = 4301|port = $r2|" \
      -e "s|127.0.0.1:5600|127.0.0.1:$z1|; s|127.0.0.1:5601|127.0.0.1:$z2|" \
      -e "s|127.0.0.1:8600|127.0.0.1:$h1|; s|127.0.0.1:8601|127.0.0.1:$h2|" \
      "$1/cluster-configs/ha-loopback.toml" > "$tmp/ha.toml"
  grep -q "port = $r2" "$tmp/ha.toml" && grep -q "$h2" "$tmp/ha.toml" || fail "ha-loopback.toml changed: its ports were not found"
}
