#!/bin/bash
# One answer on every CPU, in a cluster: worker nodes forced to different kernel tables (LF_ISA)
# hand running requests to each other and every text is still the undisturbed one.
#
#   node a (the CPU's best table) serves a steady load; node b (its first table, portable: the
#   farthest from the best) joins, and a is drained by SIGTERM, so a's streams, K/V included,
#   continue on b; node c (the best table again) joins and b is drained, so b's streams come back;
#   then every request, sent again on a calm cluster (c alone), gives the same text, moved or not,
#   greedy or seeded.
# Usage: cross_table_cluster.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
source "$(dirname "$0")/node_lib.sh"
tables=$( (LF_ISA=none-such "$bin" generate --prompt x --max-tokens 1 2>&1 || true) | sed -n 's/.*this CPU runs: \([a-z0-9_ ]*\) (.*/\1/p')
read -r -a runnable <<< "$tables"
[ "${#runnable[@]}" -ge 2 ] || { echo "SKIP: this CPU runs one kernel table (${tables:-none read}): nothing to compare"; exit 77; }
first=${runnable[-1]}  # the best
other=${runnable[0]}
echo "tables: node a and c on $first, node b on $other"
workers() { "$bin" status "tcp://127.0.0.1:$zport" 2>/dev/null | sed -n 's/.*workers=\([0-9]*\).*/\1/p'; }
until_workers() {  # N SECONDS
  for _ in $(seq 1 $(($2 * 10))); do [ "$(workers)" = "$1" ] && return 0; sleep 0.1; done
  return 1
}

cport=$(free_port); zport=$(free_port)
cat > "$tmp/cluster.toml" <<TOML
[cluster]
name = "tables"
router_node = "router"
model_dir = "$src/models/default"
[gateway]
listen = "tcp://127.0.0.1:$zport"
[heartbeat]
interval_ms = 500
timeout_ms = 3000
$(router_only_node "$cport")
TOML

join() {  # NAME TABLE: a worker node on kernel table TABLE joining the router
  local port
  port=$(free_port)
  LF_ISA=$2 "$bin" node --join "127.0.0.1:$cport" --name "$1" --model "$src/models/default" --threads 1 \
    --kv-cache-mb 32 --max-seqs 16 --max-batched-tokens 128 --probe-listen "127.0.0.1:$port" \
    --heartbeat-interval-ms 500 --heartbeat-timeout-ms 3000 --reconnect-max-ms 500 --drain-timeout 20 \
    >> "$tmp/$1.log" 2>&1 &
  pids+=($!)
  until_code "http://127.0.0.1:$port/ready" 200 60 || fail "node $1 ($2) did not join"
}
drain() {  # PID NAME: SIGTERM, then its drained exit
  kill -TERM "$1"
  local rc=0
  wait "$1" || rc=$?
  [ "$rc" = 0 ] || fail "node $2 exited with $rc after SIGTERM"
  grep -q "drained: 1 worker(s)" "$tmp/$2.log" || fail "node $2 did not drain"
}

"$bin" node "$tmp/cluster.toml" --name router > "$tmp/router.log" 2>&1 &
pids+=($!)
join a "$first"
pid_a=${pids[-1]}
until_workers 1 30 || fail "the router does not count node a"
grep -q "$first" "$tmp/a.log" || fail "node a does not name its table $first: $(grep -m1 engine "$tmp/a.log")"

rm -f "$tmp/stop"
"$py" "$src/tests/integration/join_load.py" "tcp://127.0.0.1:$zport" "$tmp/load.json" "$tmp/stop" --streams 24 \
  > "$tmp/load.log" 2>&1 &
pid_load=$!
sleep 3
join b "$other"
pid_b=${pids[-1]}
grep -q "$other" "$tmp/b.log" || fail "node b does not name its table $other: $(grep -m1 engine "$tmp/b.log")"
sleep 1
drain "$pid_a" a
echo "ok 1 - node a ($first) drained under load: its streams continue on node b ($other)"
sleep 3
join c "$first"
pid_c=${pids[-1]}
sleep 1
drain "$pid_b" b
echo "ok 2 - node b ($other) drained under load: its streams continue on node c ($first)"
sleep 2
load_ended "$pid_load" "$tmp/load.json" "the drains were not under load"
echo "ok 3 - every request ended once without error; $resumed moved mid-stream between tables"

"$py" "$src/tests/integration/join_load.py" "tcp://127.0.0.1:$zport" "$tmp/load.json" --replay \
  || fail "texts differ from a calm replay on $first"
echo "ok 4 - every text equals a calm replay on $first, whichever tables served it"
