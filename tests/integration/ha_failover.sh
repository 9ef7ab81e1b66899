#!/bin/bash
# No single point of failure, as processes: cluster-configs/ha-loopback.toml (two router replicas,
# two gateway nodes, two worker nodes) launched on free ports, 64 streams over ZeroMQ and HTTP
# through both gateways, while
#   router-a is killed with -9 (launch restarts it; it rejoins),
#   router-b is frozen past the heartbeat timeout, then thawed,
#   router-a gets SIGTERM (a rolling restart's stop),
#   gateway-a is killed with -9: the ZeroMQ clients, given both gateways, move its streams to
#   gateway-b (HTTP clients cannot: the HTTP load goes through gateway-b only, docs/cluster.md).
# Afterwards: every request ended once, none with an error; streams really moved (the gateways
# say how many continued); every text equals a calm replay; every K/V block is free again. It
# prints the pause clients saw (longest gap between two streamed pieces, p50 / p99 / max).
# Usage: ha_failover.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
source "$(dirname "$0")/node_lib.sh"
"$py" -c 'import msgpack, zmq' 2>/dev/null || { echo "skipped: python3-msgpack / python3-zmq missing"; exit 77; }

ha_config "$src"
"$bin" launch "$tmp/ha.toml" --ready-file "$tmp/ready" > "$tmp/launch.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 1200); do [ -f "$tmp/ready" ] && break; sleep 0.1; done
[ -f "$tmp/ready" ] || fail "the cluster was not ready within 120 s"
node_pid() { pgrep -f "$tmp/ha.toml --name $1" | head -n 1; }
ups() { grep -c "router $1 up" "$tmp/launch.log" || true; }

zmqs="tcp://127.0.0.1:$z1,tcp://127.0.0.1:$z2"
urls="http://127.0.0.1:$h2"
"$py" "$src/tests/integration/ha_load.py" "$zmqs" "$urls" "$tmp/out.json" "$tmp/stop" "$tmp/marks" --streams 64 \
  > "$tmp/load.log" 2>&1 &
load=$!
mark() { echo "$(date +%s.%N) $1" >> "$tmp/marks"; }
sleep 2
mark "no fault (the same load, for comparison)"
sleep 2

# 1. kill -9 router-a; launch starts it again and both gateways reconnect to it.
before=$(ups router-a)
mark "kill -9 router-a"; kill -9 "$(node_pid router-a)"
for _ in $(seq 1 300); do [ "$(ups router-a)" -ge $((before + 2)) ] && break; sleep 0.1; done
[ "$(ups router-a)" -ge $((before + 2)) ] || fail "router-a did not come back to both gateways"
sleep 3

# 2. router-b frozen past the heartbeat timeout (3 s), then thawed.
mark "SIGSTOP router-b"; kill -STOP "$(node_pid router-b)"
sleep 5
kill -CONT "$(node_pid router-b)"
sleep 4

# 3. router-a stops on SIGTERM.
mark "SIGTERM router-a"; kill -TERM "$(node_pid router-a)"
sleep 4

# 4. kill -9 gateway-a.
mark "kill -9 gateway-a"; kill -9 "$(node_pid gateway-a)"
sleep 5
touch "$tmp/stop"
wait "$load" || { cat "$tmp/load.log"; fail "requests failed under router faults"; }
cat "$tmp/load.log"
grep -q "pause at" "$tmp/load.log" || fail "no request was in flight at a fault"
moved=$(grep -o '[0-9]* stream(s) continue' "$tmp/launch.log" | awk '{s += $1} END {print s + 0}')
echo "streams continued on another router: $moved"
[ "$moved" -gt 0 ] || fail "no stream moved to another router"
grep -q "[1-9][0-9]* moved by clients to another gateway" "$tmp/load.log" || fail "no stream moved to another gateway"

"$py" "$src/tests/integration/ha_load.py" "tcp://127.0.0.1:$z2" "$urls" "$tmp/out.json" --replay || fail "a text differs from the calm replay"

# Every K/V block is free again on both workers (entries of workers lost from the frozen router's view
# are listed too, as state=lost).
free_all() {
  "$bin" status "tcp://127.0.0.1:$z2" > "$tmp/status" 2>&1 || true
  grep 'worker\..*state=serving' "$tmp/status" \
    | awk '{f = t = ""; for (i = 1; i <= NF; ++i) { if ($i ~ /^free_blocks=/) f = substr($i, 13); if ($i ~ /^total_blocks=/) t = substr($i, 14) }
            if (f == "" || f != t) bad = 1; n++ } END { exit (n == 2 && !bad) ? 0 : 1 }'
}
for _ in $(seq 1 100); do free_all && break; sleep 0.1; done
free_all || { cat "$tmp/status"; fail "K/V blocks still held after the load"; }
echo "PASS"
