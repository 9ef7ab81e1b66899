#!/bin/bash
# A network partition between two real network namespaces (no root needed: a user namespace).
#
#   namespace A (this script after unshare): router node on 10.77.0.1, gateway on 127.0.0.1,
#                                            worker node w2
#   namespace B (a child netns, veth pair):  worker node w1 on 10.77.0.2
#
# The veth link is taken down (packets vanish, no RST): the router must drop w1 within the
# heartbeat timeout while w2 keeps serving; the link comes back: w1 must register again.
# Exits 77 (ctest: skipped) with a message when namespaces or veth pairs cannot be made here.
# Usage: cluster_netns.sh LORAFLEET_BINARY
set -euo pipefail
bin=$1

if [ "${LF_NETNS_INNER:-}" != 1 ]; then
  if ! unshare -rn --fork true 2>/dev/null; then
    echo "SKIP: cannot create a user + network namespace here (unshare -rn failed:" \
         "unprivileged user namespaces disabled?)"
    exit 77
  fi
  if ! unshare -rn --fork sh -c 'ip link add lfv0 type veth peer name lfv1' 2>/dev/null; then
    echo "SKIP: cannot create a veth pair inside a user namespace (no veth module or ip command)"
    exit 77
  fi
  exec env LF_NETNS_INNER=1 unshare -rn --fork "$0" "$@"
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

ip link set lo up
# Namespace B: a sleeper holds it; the veth's far end goes there.
unshare -n sleep 3600 &
holder=$!
pids+=("$holder")
sleep 0.2
ip link add lfa type veth peer name lfb netns "$holder"
ip addr add 10.77.0.1/24 dev lfa
ip link set lfa up
nsenter -t "$holder" -n ip link set lo up
nsenter -t "$holder" -n ip addr add 10.77.0.2/24 dev lfb
nsenter -t "$holder" -n ip link set lfb up

"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
# The router's CAF port is on a non-loopback address: a join token is required there.
head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$tmp/join.token"
chmod 600 "$tmp/join.token"
cat > "$tmp/cluster.toml" <<EOF
[cluster]
name = "netns"
router_node = "head"
model_dir = "model"
[security.nodes]
join_token_file = "join.token"
[gateway]
listen = "tcp://127.0.0.1:5555"
[heartbeat]
interval_ms = 500
timeout_ms = 3000
[reconnect]
initial_ms = 200
max_ms = 1000
[workers]
threads = 1
kv_cache_mb = 16
max_seqs = 8
max_batched_tokens = 64
[[nodes]]
name = "head"
host = "10.77.0.1"
port = 4200
[nodes.workers]
count = 0
[[nodes]]
name = "w1"
host = "10.77.0.2"
[[nodes]]
name = "w2"
host = "10.77.0.1"
EOF

"$bin" node "$tmp/cluster.toml" --name head > "$tmp/head.log" 2>&1 & pids+=($!)
nsenter -t "$holder" -n "$bin" node "$tmp/cluster.toml" --name w1 > "$tmp/w1.log" 2>&1 & pids+=($!)
"$bin" node "$tmp/cluster.toml" --name w2 > "$tmp/w2.log" 2>&1 & pids+=($!)

workers() { "$bin" status tcp://127.0.0.1:5555 2>/dev/null | sed -n 's/.*workers=\([0-9]*\).*/\1/p'; }
wait_workers() {  # N SECONDS: prints the milliseconds it took
  local start=$(date +%s%3N)
  while true; do
    [ "$(workers)" = "$1" ] && { echo $(( $(date +%s%3N) - start )); return 0; }
    (( $(date +%s%3N) - start > $2 * 1000 )) && return 1
    sleep 0.1
  done
}
fail() { echo "FAIL: $*"; for f in head w1 w2; do echo "--- $f"; cat "$tmp/$f.log"; done; exit 1; }

wait_workers 2 60 > /dev/null || fail "the two worker nodes did not register"
echo "both worker nodes registered (w1 across the veth link)"

ip link set lfa down
took=$(wait_workers 1 15) || fail "the partitioned node was not dropped within 15 s"
echo "partition: w1 dropped after ${took} ms (heartbeat timeout 3000 ms)"
(( took <= 5500 )) || fail "dropped after ${took} ms, expected within 3 s + one interval + polling"
"$bin" client --endpoint tcp://127.0.0.1:5555 --prompt "still serving" --max-tokens 4 --timeout 30 > /dev/null 2>&1 \
  || fail "no answer during the partition"
echo "during the partition a request is served by w2"

ip link set lfa up
took=$(wait_workers 2 30) || fail "w1 did not register again after the link came back"
echo "healed: w1 registered again after ${took} ms"
grep -q "lost the router" "$tmp/w1.log" || fail "w1 did not notice the partition"
echo "ok"
