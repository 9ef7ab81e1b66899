#!/bin/bash
# Joining under the cluster's mutual TLS (as the Kubernetes manifests set it): a node with a
# certificate from the cluster CA joins with `node --join ... --tls-*`; a node with another CA's
# certificate, and one without TLS, are refused (never ready) while the member keeps serving.
# Usage: node_join_tls.sh LORAFLEET_BINARY
set -euo pipefail
bin=$1
command -v openssl > /dev/null || { echo "SKIP: no openssl command to make the cluster CA"; exit 77; }
source "$(dirname "$0")/node_lib.sh"
ca() {  # NAME: a CA
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 -subj "/CN=$1" \
    -keyout "$tmp/$1.key" -out "$tmp/$1.crt" 2> /dev/null
}
cert() {  # CA NAME: a node certificate signed by CA
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -subj "/CN=$2" -keyout "$tmp/$2.key" \
    -out "$tmp/$2.csr" 2> /dev/null
  openssl x509 -req -in "$tmp/$2.csr" -CA "$tmp/$1.crt" -CAkey "$tmp/$1.key" -CAcreateserial -days 2 \
    -out "$tmp/$2.crt" 2> /dev/null
  chmod 600 "$tmp/$2.key"
}
ca cluster-ca; ca other-ca
cert cluster-ca router; cert cluster-ca member; cert other-ca stranger

"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
cport=$(free_port); zport=$(free_port)
cat > "$tmp/cluster.toml" <<TOML
[cluster]
router_node = "router"
model_dir = "model"
[gateway]
listen = "tcp://127.0.0.1:$zport"
[security.nodes]
ca_file = "cluster-ca.crt"
certificate = "router.crt"
key = "router.key"
$(router_only_node "$cport")
TOML
"$bin" node "$tmp/cluster.toml" --name router > "$tmp/router.log" 2>&1 &
pids+=($!)

join() {  # NAME PROBE_PORT [flags]
  local name=$1 port=$2
  shift 2
  "$bin" node --join "127.0.0.1:$cport" --name "$name" --model "$tmp/model" --threads 1 --kv-cache-mb 16 \
    --probe-listen "127.0.0.1:$port" --reconnect-max-ms 500 "$@" > "$tmp/$name.log" 2>&1 &
  pids+=($!)
}
pm=$(free_port); ps=$(free_port); pp=$(free_port)
join member "$pm" --tls-ca "$tmp/cluster-ca.crt" --tls-cert "$tmp/member.crt" --tls-key "$tmp/member.key"
join stranger "$ps" --tls-ca "$tmp/cluster-ca.crt" --tls-cert "$tmp/stranger.crt" --tls-key "$tmp/stranger.key"
join plain "$pp"
until_code "http://127.0.0.1:$pm/ready" 200 60 || fail "the member with the cluster CA's certificate did not join"
grep -q "(mutual TLS)" "$tmp/member.log" || fail "the member did not say it joined over TLS"
echo "ok 1 - a node with a certificate from the cluster CA joins over mutual TLS"
sleep 3
for n in stranger plain; do
  port=$ps; [ "$n" = plain ] && port=$pp
  [ "$(code "http://127.0.0.1:$port/ready")" = 503 ] || fail "node $n is ready"
  grep -q "cannot reach the router" "$tmp/$n.log" || fail "node $n does not say it is refused"
done
workers=$("$bin" status "tcp://127.0.0.1:$zport" | sed -n 's/.*workers=\([0-9]*\).*/\1/p')
[ "$workers" = 1 ] || fail "the router counts $workers workers, not 1"
out=$("$bin" client --endpoint "tcp://127.0.0.1:$zport" --prompt "Hello" --max-tokens 8 --temperature 0)
[ -n "$out" ] || fail "the member does not serve"
echo "ok 2 - another CA's certificate and no TLS at all are refused (never ready); the member serves"
