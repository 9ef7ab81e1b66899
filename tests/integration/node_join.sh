#!/bin/bash
# Elastic membership as processes: worker nodes that `lorafleet node --join` a running cluster
# whose config names no worker, under a steady load of 64 streams.
#
#   a node started before the router exists keeps trying, then joins; a node without the join
#   token, or with a wrong one, is refused (never ready, not counted); a router address that does
#   not resolve is retried, not fatal; a second node joins under load and takes work; SIGTERM on a
#   node: its /ready turns 503 before it exits 0 and its requests move; a frozen node replaced by
#   one of the same name: the old entry goes at once; afterwards every request ended once, with
#   no error, and the same text as a calm replay; a node the config file does not name joins too.
# Usage: node_join.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
source "$(dirname "$0")/node_lib.sh"
workers() { "$bin" status "tcp://127.0.0.1:$zport" 2>/dev/null | sed -n 's/.*workers=\([0-9]*\).*/\1/p'; }
until_workers() {  # N SECONDS
  for _ in $(seq 1 $(($2 * 10))); do [ "$(workers)" = "$1" ] && return 0; sleep 0.1; done
  return 1
}

"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/token"
echo "not-the-cluster-token-0000" > "$tmp/wrong"
chmod 600 "$tmp/token" "$tmp/wrong"
cport=$(free_port); zport=$(free_port); hport=$(free_port)
cat > "$tmp/cluster.toml" <<TOML
[cluster]
name = "elastic"
router_node = "router"
model_dir = "model"
[gateway]
listen = "tcp://127.0.0.1:$zport"
[http]
listen = "127.0.0.1:$hport"
[heartbeat]
interval_ms = 500
timeout_ms = 3000
[security.nodes]
join_token_file = "token"
$(router_only_node "$cport")
TOML

join() {  # NAME PROBE_PORT [extra flags]: a worker node joining the router
  local name=$1 port=$2
  shift 2
  "$bin" node --join "127.0.0.1:$cport" --name "$name" --model "$tmp/model" --threads 1 --kv-cache-mb 16 \
    --max-seqs 16 --max-batched-tokens 128 --probe-listen "127.0.0.1:$port" --heartbeat-interval-ms 500 \
    --heartbeat-timeout-ms 3000 --reconnect-max-ms 500 --drain-timeout 10 "$@" >> "$tmp/$name.log" 2>&1 &
  pids+=($!)
}

# 1. A node that starts before its router: it waits, not ready, then joins.
pa=$(free_port)
join a "$pa" --join-token-file "$tmp/token"
pid_a=${pids[-1]}
until_code "http://127.0.0.1:$pa/health" 200 30 || fail "node a's probe port did not answer"
for _ in $(seq 1 300); do grep -q "cannot reach the router" "$tmp/a.log" && break; sleep 0.1; done
grep -q "cannot reach the router" "$tmp/a.log" || fail "node a did not say it was waiting for the router"
[ "$(code "http://127.0.0.1:$pa/ready")" = 503 ] || fail "node a is ready without a router"
"$bin" node "$tmp/cluster.toml" --name router > "$tmp/router.log" 2>&1 &
pids+=($!)
until_code "http://127.0.0.1:$pa/ready" 200 60 || fail "node a did not join once the router came up"
until_workers 1 30 || fail "the router does not count node a"
echo "ok 1 - a node started before the router joins it once it is up"

# 2. Without the token, or with a wrong one: refused, never ready, not counted.
px=$(free_port); py2=$(free_port)
join x "$px"
join y "$py2" --join-token-file "$tmp/wrong"
for n in x y; do
  for _ in $(seq 1 100); do grep -q "unauthenticated" "$tmp/$n.log" && break; sleep 0.1; done
  grep -q "unauthenticated" "$tmp/$n.log" || fail "node $n was not refused"
done
[ "$(code "http://127.0.0.1:$px/ready")" = 503 ] || fail "a refused node says it is ready"
[ "$(workers)" = 1 ] || fail "the router counts a refused node"
grep -q "worker refused" "$tmp/router.log" || fail "the router did not log the refusal"
kill "${pids[-1]}" "${pids[-2]}"
echo "ok 2 - nodes without the join token, or with a wrong one, are refused"

# 3. A router address that does not resolve (a Service not there yet) is retried.
pd=$(free_port)
"$bin" node --join "lorafleet-router.invalid:$cport" --name d --model "$tmp/model" --threads 1 --kv-cache-mb 16 \
  --probe-listen "127.0.0.1:$pd" --reconnect-max-ms 300 > "$tmp/d.log" 2>&1 &
pids+=($!)
sleep 2
kill -0 "${pids[-1]}" || fail "a node with an unresolvable router address exited"
grep -q "cannot reach the router at lorafleet-router.invalid" "$tmp/d.log" || fail "node d does not say it retries"
kill "${pids[-1]}"
echo "ok 3 - an unresolvable router name is retried with backoff"

# 4. Under load: b joins, a leaves (SIGTERM), b freezes and comes back under its name, c joins.
rm -f "$tmp/stop"
"$py" "$src/tests/integration/join_load.py" "tcp://127.0.0.1:$zport" "$tmp/load.json" "$tmp/stop" --streams 64 \
  > "$tmp/load.log" 2>&1 &
pid_load=$!
sleep 2
pb=$(free_port)
join b "$pb" --join-token-file "$tmp/token"
pid_b=${pids[-1]}
until_code "http://127.0.0.1:$pb/ready" 200 60 || fail "node b did not join under load"
until_workers 2 30 || fail "the router does not count b"
sleep 2
curl -s "http://127.0.0.1:$pb/metrics" > "$tmp/b.metrics"
grep -q '^vllm:num_requests_running{model_name="model"} [1-9]' "$tmp/b.metrics" \
  || fail "b runs nothing: $(grep vllm "$tmp/b.metrics")"
echo "ok 4 - node b joins under load and takes work (vllm:num_requests_running > 0 on its probe port)"

kill -TERM "$pid_a"
saw_503=0
for _ in $(seq 1 300); do
  [ "$(code "http://127.0.0.1:$pa/ready")" = 503 ] && saw_503=1
  kill -0 "$pid_a" 2>/dev/null || break
  sleep 0.05
done
# A drain that ships every request's K/V can end within milliseconds (36 requests moved in 17 ms
# seen here), before a poll sees the 503: then the node's own line, written when /ready turned
# 503 and before it drained, is the evidence.
if [ "$saw_503" != 1 ]; then
  grep -q "SIGTERM: not ready; draining" "$tmp/a.log" \
    && [ "$(grep -n 'SIGTERM: not ready' "$tmp/a.log" | cut -d: -f1)" -lt "$(grep -n 'drained: 1 worker' "$tmp/a.log" | cut -d: -f1)" ] \
    || fail "node a's /ready never said 503 while it drained"
fi
rc=0; wait "$pid_a" || rc=$?
[ "$rc" = 0 ] || fail "node a exited with $rc after SIGTERM"
grep -q "drained: 1 worker(s)" "$tmp/a.log" || fail "node a did not drain"
until_workers 1 10 || fail "the router still counts node a"
echo "ok 5 - SIGTERM: node a's /ready went 503, it drained and exited 0; the router forgot it"

kill -STOP "$pid_b"
pb2=$(free_port)
join b "$pb2" --join-token-file "$tmp/token"
until_code "http://127.0.0.1:$pb2/ready" 200 60 || fail "b's replacement did not join"
grep -q "worker replaced" "$tmp/router.log" || fail "the router did not replace b's old entry"
[ "$(workers)" = 1 ] || fail "the router counts two entries named b/1"
kill -9 "$pid_b"
echo "ok 6 - a frozen node's replacement under the same name takes its entry at once"

pc=$(free_port)
join c "$pc" --join-token-file "$tmp/token"
until_code "http://127.0.0.1:$pc/ready" 200 60 || fail "node c did not join"
until_workers 2 30 || fail "the router does not count c"
sleep 2
load_ended "$pid_load" "$tmp/load.json" "the drain and the replacement were not under load"
"$bin" status "tcp://127.0.0.1:$zport" > "$tmp/status.txt"
grep -q "b/1" "$tmp/status.txt" && grep -q "c/1" "$tmp/status.txt" || fail "status does not list b/1 and c/1: $(cat "$tmp/status.txt")"
curl -s "http://127.0.0.1:$hport/metrics" > "$tmp/router.metrics"
grep -q 'lorafleet:worker_state{worker="c/1"' "$tmp/router.metrics" || fail "/metrics does not list c/1"
echo "ok 7 - every request ended once without error ($resumed moved mid-stream); status and /metrics list the joined nodes"

"$py" "$src/tests/integration/join_load.py" "tcp://127.0.0.1:$zport" "$tmp/load.json" --replay \
  || fail "texts differ from a calm replay"
echo "ok 8 - every text equals a calm replay of the same request"

# A node the config file does not name joins with the file's [workers] settings and its token.
pe=$(free_port)
"$bin" node "$tmp/cluster.toml" --name extra-1 --probe-listen "127.0.0.1:$pe" > "$tmp/extra-1.log" 2>&1 &
pids+=($!)
pid_e=${pids[-1]}
until_code "http://127.0.0.1:$pe/ready" 200 60 || fail "a node the file does not name did not join"
until_workers 3 30 || fail "the router does not count extra-1"
kill -TERM "$pid_e"
rc=0; wait "$pid_e" || rc=$?
[ "$rc" = 0 ] || fail "extra-1 exited with $rc after SIGTERM"
echo "ok 9 - a node the config file does not name joins with its [workers] settings, and leaves on SIGTERM"
