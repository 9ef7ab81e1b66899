#!/bin/bash
# Honest health over the real sockets (`lorafleet serve --http`, one worker, 1 request in flight):
# GET /v1/models/{id} for the model and an adapter (404 error object otherwise); `lorafleet
# drain` of the only worker while a request streams and another waits in the router's queue:
# /ready 503, `status`, /metrics and /api/stats say drained, a new request is refused within a
# second (HTTP 503 no_workers with Retry-After; ZeroMQ `client` error no_workers), the running
# and the queued ones end with no_workers within --max-queue-wait-ms; `lorafleet undrain`: /ready
# 200 and requests are served again.
# Usage: no_workers.sh LORAFLEET_BINARY. Prints one line per check; exits non-zero at the first failure.
set -euo pipefail
bin=$1
source "$(dirname "$0")/lib.sh"
command -v curl > /dev/null || { echo "no_workers: curl is not installed (run ./setup.sh test)"; exit 1; }

tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2> /dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "not ok $((passed + 1)) - $1"
  [ -s "$tmp/body" ] && { echo "--- last response body:"; head -c 2000 "$tmp/body"; echo; }
  echo "--- server log (tail)"; tail -30 "$tmp/serve.log" || true
  echo "$passed passed, 1 failed"
  exit 1
}
py_json() { "$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
# http METHOD URL [JSON_BODY] -> prints the status; body in $tmp/body, headers in $tmp/headers
http() {
  local m=$1 url=$2; shift 2
  local args=(-s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" --max-time 30)
  if [ $# -gt 0 ]; then printf '%s' "$1" | curl "${args[@]}" -H 'Content-Type: application/json' --data-binary @- "$url"
  else curl "${args[@]}" "$url"; fi
}
header() { grep -i "^$1:" "$tmp/headers" | head -1 | cut -d: -f2- | tr -d '\r' | sed 's/^ *//'; }
now_ms() { "$py" -c 'import time; print(int(time.monotonic() * 1000))'; }

wait_ms=1500
# slow enough that 1000 tokens take over a second on a 2-core machine
"$bin" make-model --out "$tmp/slow" --layers 4 --heads 8 --embd 512 --context 1024 --seed 2 --dtype f16 > /dev/null
mkdir "$tmp/adapters"
"$bin" make-adapter --base "$tmp/slow" --out "$tmp/adapters/ad" --rank 4 --seed 3 > /dev/null
hp=$(free_port); zp=$(free_port)
Z="tcp://127.0.0.1:$zp"; U="http://127.0.0.1:$hp"
"$bin" serve --model "$tmp/slow" --model-name base --adapters "$tmp/adapters" --workers 1 --threads 1 \
  --kv-cache-mb 64 --max-inflight-per-worker 1 --max-queue-wait-ms $wait_ms \
  --listen "$Z" --http "127.0.0.1:$hp" --ready-file "$tmp/ready" > "$tmp/serve.log" 2>&1 &
pid=$!
wait_http_ready "$tmp/ready" "$U" "$tmp/serve.log"

# ---- GET /v1/models/{id} --------------------------------------------------------------------
[ "$(http GET "$U/v1/models/base")" = 200 ] \
  && py_json "$tmp/body" 'j["id"] == "base" and j["object"] == "model" and j["owned_by"] == "lorafleet" and "parent" not in j' \
  || fail "GET /v1/models/base -> the served model's object"
[ "$(http GET "$U/v1/models/ad")" = 200 ] && py_json "$tmp/body" 'j["id"] == "ad" and j["parent"] == "base"' \
  || fail "GET /v1/models/ad -> the adapter's object, parent base"
[ "$(http GET "$U/v1/models/nope")" = 404 ] \
  && py_json "$tmp/body" 'j["error"]["code"] == "model_not_found" and j["error"]["param"] == "model" and "nope" in j["error"]["message"]' \
  || fail "GET /v1/models/nope -> 404 OpenAI error object"
[ "$(http POST "$U/v1/models/base" '{}')" = 405 ] || fail "POST /v1/models/base -> 405"
ok "GET /v1/models/{id}: the model, an adapter (parent), 404 model_not_found, 405"
"$bin" status "$Z" > "$tmp/status" && grep -q "state=serving" "$tmp/status" || { cat "$tmp/status"; fail "status shows state=serving"; }
ok "lorafleet status shows the worker serving"

# ---- all drained: a streaming request, a queued one, a new one -------------------------------
long='{"model":"base","prompt":"Hi","max_tokens":1000,"ignore_eos":true}'
curl -s --max-time 60 -o "$tmp/running" -w '%{http_code}' -H 'Content-Type: application/json' -d "$long" "$U/v1/completions" > "$tmp/running.code" &
running=$!
for _ in $(seq 1 100); do
  [ "$(curl -s "$U/metrics" | awk '$1 == "lorafleet:num_requests_inflight" { print $2 }')" = 1 ] && break; sleep 0.1
done
curl -s --max-time 60 -o "$tmp/queued" -w '%{http_code}' -H 'Content-Type: application/json' \
  -d '{"model":"base","prompt":"Hello","max_tokens":4}' "$U/v1/completions" > "$tmp/queued.code" &
queued=$!
for _ in $(seq 1 100); do
  [ "$(curl -s "$U/metrics" | awk '$1 == "lorafleet:num_requests_queued" { print $2 }')" = 1 ] && break; sleep 0.1
done
[ "$(curl -s "$U/metrics" | awk '$1 == "lorafleet:num_requests_queued" { print $2 }')" = 1 ] || fail "a second request waits in the router's queue"
t0=$(now_ms)
"$bin" drain worker-1 --endpoint "$Z" > "$tmp/drain.out" || { cat "$tmp/drain.out"; fail "lorafleet drain worker-1"; }
ok "drain worker-1 with one request running and one queued"

[ "$(http GET "$U/ready")" = 503 ] && py_json "$tmp/body" 'j["ready"] is False and j["workers"] == 1 and j["accepting"] == 0' \
  || fail "/ready -> 503, ready false, 0 accepting"
ok "/ready -> 503 while the only worker is drained"

t1=$(now_ms)
code=$(http POST "$U/v1/completions" '{"model":"base","prompt":"Hi","max_tokens":4}')
t2=$(now_ms)
[ "$code" = 503 ] && py_json "$tmp/body" 'j["error"]["code"] == "no_workers" and j["error"]["type"] == "service_unavailable_error"' \
  || fail "a new HTTP request -> 503 no_workers (got $code)"
[ -n "$(header retry-after)" ] && [ "$(header retry-after)" -ge 1 ] || fail "the 503 carries Retry-After (got '$(header retry-after)')"
[ $((t2 - t1)) -lt 1000 ] || fail "refused within a second (took $((t2 - t1)) ms)"
ok "a new HTTP request: 503 no_workers with Retry-After in $((t2 - t1)) ms"

t1=$(now_ms)
if "$bin" client --endpoint "$Z" --prompt "Hi" --max-tokens 4 --timeout 30 > "$tmp/client.out" 2>&1; then
  cat "$tmp/client.out"; fail "a new ZeroMQ request fails"
fi
t2=$(now_ms)
grep -q "no_workers" "$tmp/client.out" || { cat "$tmp/client.out"; fail "the ZeroMQ error names no_workers"; }
[ $((t2 - t1)) -lt 1000 ] || fail "ZeroMQ refusal within a second (took $((t2 - t1)) ms)"
ok "a new ZeroMQ request: error no_workers in $((t2 - t1)) ms"

wait "$queued" || true
wait "$running" || true
t3=$(now_ms)
[ "$(cat "$tmp/queued.code")" = 503 ] && py_json "$tmp/queued" 'j["error"]["code"] == "no_workers"' \
  || { cat "$tmp/queued"; fail "the queued request ends with 503 no_workers"; }
[ "$(cat "$tmp/running.code")" = 503 ] && py_json "$tmp/running" 'j["error"]["code"] == "no_workers"' \
  || { cat "$tmp/running"; fail "the request moved off the drained worker ends with 503 no_workers"; }
[ $((t3 - t0)) -lt $((wait_ms + 1500)) ] || fail "both ended within max_queue_wait_ms (+ slack): $((t3 - t0)) ms"
ok "the queued and the moved request end with no_workers $((t3 - t0)) ms after the drain (max_queue_wait_ms $wait_ms)"

"$bin" status "$Z" > "$tmp/status" && grep -q "state=drained" "$tmp/status" && grep -q "accepting=0" "$tmp/status" \
  || { cat "$tmp/status"; fail "status shows state=drained, accepting=0"; }
curl -s "$U/metrics" > "$tmp/metrics"
grep -q '^lorafleet:worker_state{worker="worker-1",worker_id="1",state="drained"} 1' "$tmp/metrics" \
  && grep -q '^lorafleet:worker_state{worker="worker-1",worker_id="1",state="serving"} 0' "$tmp/metrics" \
  && grep -q '^lorafleet:workers_accepting 0' "$tmp/metrics" || { grep worker "$tmp/metrics"; fail "/metrics: worker_state drained, workers_accepting 0"; }
[ "$(http GET "$U/api/stats")" = 200 ] && py_json "$tmp/body" 'j["workers"][0]["placement"] == "drained" and j["router"]["accepting"] == 0' \
  || fail "/api/stats: the worker's placement is drained"
ok "status, /metrics and /api/stats show the worker drained"

# ---- undrain --------------------------------------------------------------------------------
"$bin" undrain worker-1 --endpoint "$Z" > "$tmp/undrain.out" && grep -q "undrained 1 worker" "$tmp/undrain.out" \
  || { cat "$tmp/undrain.out"; fail "lorafleet undrain worker-1"; }
if "$bin" undrain worker-1 --endpoint "$Z" > /dev/null 2>&1; then fail "a second undrain finds nothing drained (exit 1)"; fi
[ "$(http GET "$U/ready")" = 200 ] && py_json "$tmp/body" 'j["ready"] is True and j["accepting"] == 1' || fail "/ready -> 200 after the undrain"
[ "$(http POST "$U/v1/completions" '{"model":"base","prompt":"Hi","max_tokens":4}')" = 200 ] \
  && py_json "$tmp/body" 'j["usage"]["completion_tokens"] == 4' || fail "a completion after the undrain -> 200"
"$bin" status "$Z" > "$tmp/status" && grep -q "state=serving" "$tmp/status" || { cat "$tmp/status"; fail "status shows serving again"; }
ok "undrain: /ready 200, requests served, status serving"

kill -TERM "$pid"; wait "$pid" || true; pid=
echo "$passed passed"
