#!/bin/bash
# Rate limits on a split front (cluster-configs/ha-loopback.toml with an API key file): each of the
# two gateway nodes enforces half of a key's limits, so the cluster never admits more than the
# limit: rpm=4 lets 2 requests through gateway-a and 2 through gateway-b in the same minute, the
# next on either gets 429; the headers say what each gateway enforces; /metrics counts per key.
# Usage: rate_limits_ha.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1
src=$2
source "$src/tests/integration/node_lib.sh"
key=sk-ha-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf 'alice user %s rpm=4\n' "$key" > "$tmp/keys"
chmod 600 "$tmp/keys"
ha_config "$src"
printf '\n[auth]\nkey_file = "%s/keys"\n' "$tmp" >> "$tmp/ha.toml"
"$bin" launch "$tmp/ha.toml" --ready-file "$tmp/ready" > "$tmp/launch.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 1200); do [ -f "$tmp/ready" ] && break; sleep 0.1; done
[ -f "$tmp/ready" ] || fail "the cluster was not ready within 120 s"
ask() {  # PORT: the status; headers in $tmp/h
  curl -s -D "$tmp/h" -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $key" -H 'Content-Type: application/json' \
    -d '{"model":"default","prompt":"Hello","max_tokens":2}' "http://127.0.0.1:$1/v1/completions"
}
limit() { tr -d '\r' < "$tmp/h" | sed -n 's/^x-ratelimit-limit-requests: //Ip' | head -n 1; }
for port in "$h1" "$h2"; do
  for i in 1 2; do
    [ "$(ask "$port")" = 200 ] || fail "request $i through the gateway on $port was refused: $(cat "$tmp/body")"
  done
  [ "$(limit)" = 2 ] || fail "the gateway on $port does not say it enforces 2 of the key's 4 a minute"
  [ "$(ask "$port")" = 429 ] || fail "the 3rd request through the gateway on $port was not refused"
done
echo "ok: rpm=4 over two gateways: 2 + 2 admitted, the 3rd on each refused (429); the cluster never admits more than 4"
# Into a file first: under pipefail, `curl | grep -q` fails when grep's early exit cuts curl off.
curl -s "http://127.0.0.1:$h1/metrics" > "$tmp/a.metrics"
grep -q 'lorafleet:key_requests_rate_limited_total{key="alice"} 1' "$tmp/a.metrics" \
  || fail "gateway-a's /metrics does not count alice's refusal"
echo "ok: /metrics counts per key on each gateway"
echo PASS
