#!/bin/bash
# curl-only smoke test of every endpoint of the HTTP gateway (`lorafleet serve --http`).
# Usage: curl_smoke.sh LORAFLEET_BINARY
#
# Server A (tiny model, 2 workers, one adapter): /health, /ready, /v1/models, completions and chat
# (plain and streamed, ending with `data: [DONE]`), /metrics (Prometheus text), /api/stats (JSON),
# the dashboard at /, and the error answers: 404 unknown path, 405 wrong method, 400 / 404 / 413 /
# 504 OpenAI error objects.
# Server B (a slower model, 1 worker, 1 request in flight, no queue): 429 with Retry-After while busy,
# a client disconnect cancels its request (lorafleet:requests_cancelled_total >= 1 within 1 s), then
# SIGTERM: 503 for new requests and /ready 503 while the last stream drains, and a clean exit.
# Prints one line per check; exits non-zero at the first failure.
set -euo pipefail
bin=$1
source "$(dirname "$0")/lib.sh"
command -v curl > /dev/null || { echo "curl_smoke: curl is not installed (run ./setup.sh test)"; exit 1; }

tmp=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2> /dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT

fail() {
  echo "not ok $((passed + 1)) - $1"
  [ -s "$tmp/body" ] && { echo "--- last response body:"; head -c 2000 "$tmp/body"; echo; }
  for f in "$tmp"/serve_*.log; do [ -f "$f" ] && { echo "--- $f (tail)"; tail -20 "$f"; }; done
  echo "$passed passed, 1 failed"
  exit 1
}
# py_check FILE 'python expression over j (parsed JSON) or t (text)' DESCRIPTION
py_json() { "$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
py_text() { "$py" -c 'import sys; t = open(sys.argv[1], encoding="utf-8").read(); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
# http METHOD URL [JSON_BODY | @FILE] -> prints the status; body in $tmp/body, headers in $tmp/headers
http() {
  local m=$1 url=$2; shift 2
  local args=(-s -o "$tmp/body" -D "$tmp/headers" -w '%{http_code}' -X "$m" --max-time 30)
  if [ $# -gt 0 ]; then
    if [[ $1 == @* ]]; then args+=(-H 'Content-Type: application/json' --data-binary "$1")
    else args+=(-H 'Content-Type: application/json' --data-binary @-); fi
    if [[ $1 == @* ]]; then curl "${args[@]}" "$url"; else printf '%s' "$1" | curl "${args[@]}" "$url"; fi
  else
    curl "${args[@]}" "$url"
  fi
}
header() { grep -i "^$1:" "$tmp/headers" | head -1 | cut -d: -f2- | tr -d '\r' | sed 's/^ *//'; }
metric_sum() {  # metric_sum URL NAME: the sum of all series of NAME
  curl -s --max-time 5 "$1/metrics" | awk -v n="$2" '{ k = $1; sub(/\{.*/, "", k) } k == n && $1 !~ /^#/ { s += $NF } END { printf "%d\n", s }'
}
start_server() {  # start_server NAME serve-flags...: sets $url to its HTTP base URL
  local name=$1; shift
  local hp zp
  hp=$(free_port); zp=$(free_port)
  "$bin" serve "$@" --threads 1 --listen "tcp://127.0.0.1:$zp" --http "127.0.0.1:$hp" \
    --ready-file "$tmp/ready_$name" > "$tmp/serve_$name.log" 2>&1 &
  pids+=($!)
  eval "pid_$name=$!"
  eval "url_$name=http://127.0.0.1:$hp"
}
wait_ready() {  # wait_ready NAME
  local u; eval "u=\$url_$1"
  wait_http_ready "$tmp/ready_$1" "$u" "$tmp/serve_$1.log"
}

"$bin" make-model --out "$tmp/m" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
mkdir "$tmp/adapters"
"$bin" make-adapter --base "$tmp/m" --out "$tmp/adapters/tiny" --rank 8 --seed 3 --init-std 0.5 > /dev/null
# slow enough that 1000 tokens take over a second on a 2-core machine
"$bin" make-model --out "$tmp/slow" --layers 4 --heads 8 --embd 512 --context 1024 --seed 2 --dtype f16 > /dev/null
start_server a --model "$tmp/m" --model-name tiny-base --adapters "$tmp/adapters" --workers 2 --kv-cache-mb 32
start_server b --model "$tmp/slow" --workers 1 --kv-cache-mb 64 --max-inflight-per-worker 1 --queue-limit 0 --drain-timeout 30
wait_ready a
wait_ready b
A=$url_a; B=$url_b
echo "# server a: $A, server b: $B"

# ---- health, readiness, models -------------------------------------------------------------
[ "$(http GET "$A/health")" = 200 ] && py_json "$tmp/body" 'j["status"] == "ok"' || fail "GET /health -> 200 {status: ok}"
ok "GET /health -> 200"
[ "$(http GET "$A/ready")" = 200 ] && py_json "$tmp/body" 'j["ready"] is True and j["workers"] == 2' || fail "GET /ready -> 200, ready, 2 workers"
ok "GET /ready -> 200, ready with 2 workers"
[ "$(http GET "$A/v1/models")" = 200 ] && py_json "$tmp/body" \
  'j["object"] == "list" and sorted(m["id"] for m in j["data"]) == ["tiny", "tiny-base"] and all(m["object"] == "model" for m in j["data"])' \
  || fail "GET /v1/models lists tiny-base (--model-name) and the adapter tiny"
ok "GET /v1/models lists the base model (--model-name) and the adapter"

# ---- completions ---------------------------------------------------------------------------
[ "$(http POST "$A/v1/completions" '{"model":"tiny-base","prompt":"Hello world","max_tokens":8,"temperature":0}')" = 200 ] \
  && py_json "$tmp/body" 'j["object"] == "text_completion" and j["model"] == "tiny-base" and len(j["choices"][0]["text"]) > 0 and j["choices"][0]["finish_reason"] == "length" and j["usage"]["completion_tokens"] == 8 and j["usage"]["total_tokens"] == j["usage"]["prompt_tokens"] + 8' \
  || fail "POST /v1/completions -> 200 with text and usage"
ok "POST /v1/completions -> 200, text, finish_reason length, usage"
[ "$(header content-type)" = "application/json" ] || fail "completion Content-Type is application/json (got '$(header content-type)')"
ok "completion Content-Type application/json"

[ "$(http POST "$A/v1/chat/completions" '{"model":"tiny","messages":[{"role":"user","content":"Hi"}],"max_tokens":6}')" = 200 ] \
  && py_json "$tmp/body" 'j["object"] == "chat.completion" and j["model"] == "tiny" and j["choices"][0]["message"]["role"] == "assistant" and len(j["choices"][0]["message"]["content"]) > 0' \
  || fail "POST /v1/chat/completions with the adapter -> 200"
ok "POST /v1/chat/completions (adapter as model) -> 200"

code=$(http POST "$A/v1/chat/completions" '{"model":"tiny-base","messages":[{"role":"user","content":"Hi"}],"max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}')
[ "$code" = 200 ] || fail "streamed chat -> 200 (got $code)"
[[ "$(header content-type)" == text/event-stream* ]] || fail "streamed chat Content-Type text/event-stream (got '$(header content-type)')"
py_text "$tmp/body" '
[l for l in t.split("\n") if l.strip()][-1] == "data: [DONE]" and t.endswith("\n\n")' || fail "streamed chat ends with data: [DONE]"
py_text "$tmp/body" '
(lambda ev: ev[0]["choices"][0]["delta"].get("role") == "assistant" and ev[-1]["usage"]["completion_tokens"] == 8
   and ev[-1]["choices"] == [] and any(c.get("finish_reason") == "length" for e in ev for c in e["choices"]))(
 [__import__("json").loads(l[6:]) for l in t.split("\n") if l.startswith("data: ") and l != "data: [DONE]"])' \
  || fail "streamed chat: role in the first delta, a finish_reason, a usage chunk last"
ok "streamed chat: text/event-stream, role first, usage chunk, ends with data: [DONE]"

code=$(http POST "$A/v1/completions" '{"model":"tiny","prompt":"Hi","max_tokens":5,"stream":true}')
[ "$code" = 200 ] && py_text "$tmp/body" '[l for l in t.split("\n") if l.strip()][-1] == "data: [DONE]"' \
  || fail "streamed completion with the adapter ends with data: [DONE]"
ok "streamed completion (adapter) ends with data: [DONE]"
[ -z "$(header connection)" ] || fail "a stream keeps its connection for reuse (got Connection: $(header connection))"
# the openai SDK v4 on Node.js 18 (node-fetch 2 over keep-alive: "Premature close") gets
# Connection: close at the end of a stream (gateway/openai/stream_close.hpp); on Node.js 20 it does not
sdk_stream() {  # sdk_stream NODE_VERSION: a streamed completion with the SDK's runtime headers
  curl -s -o "$tmp/body" -D "$tmp/headers" --max-time 30 -H 'Content-Type: application/json' \
    -H 'X-Stainless-Runtime: node' -H "X-Stainless-Runtime-Version: $1" \
    -d '{"model":"tiny","prompt":"Hi","max_tokens":3,"stream":true}' "$A/v1/completions"
}
sdk_stream v18.20.4
[ "$(header connection)" = close ] || fail "a stream to the SDK on Node.js 18 ends with Connection: close (got '$(header connection)')"
grep -q 'data: \[DONE\]' "$tmp/body" || fail "the stream to the SDK on Node.js 18 ends with data: [DONE]"
sdk_stream v20.20.2
[ -z "$(header connection)" ] || fail "a stream to the SDK on Node.js 20 keeps its connection (got Connection: $(header connection))"
ok "streams close their connection only for node-fetch on Node.js < 20 (its Premature close)"

# ---- the adapter registry ------------------------------------------------------------------
[ "$(http POST "$A/v1/adapters" "{\"name\":\"reg\",\"path\":\"$tmp/adapters/tiny\"}")" = 200 ] \
  && py_json "$tmp/body" 'j["data"][0]["id"] == "reg" and j["data"][0]["version"] == 1 and j["data"][0]["rank"] == 8 and j["seq"] == 1' \
  || fail "POST /v1/adapters adds reg@1 after a worker checked it"
ok "POST /v1/adapters adds an adapter (version 1)"
[ "$(http POST "$A/v1/completions" '{"model":"reg","prompt":"Hi","max_tokens":4}')" = 200 ] \
  && py_json "$tmp/body" 'j["model"] == "reg" and j["usage"]["completion_tokens"] == 4' \
  || fail "a completion on the registered adapter runs"
[ "$(http PUT "$A/v1/adapters/reg" "{\"path\":\"$tmp/adapters/tiny\"}")" = 200 ] \
  && py_json "$tmp/body" 'j["data"][0]["version"] == 2' || fail "PUT /v1/adapters/reg makes version 2"
[ "$(http GET "$A/v1/adapters")" = 200 ] && py_json "$tmp/body" '[a["id"] for a in j["data"]] == ["reg"] and j["seq"] == 2' \
  || fail "GET /v1/adapters lists reg"
ok "PUT /v1/adapters/NAME updates (version 2), GET lists"
[ "$(http DELETE "$A/v1/adapters/reg")" = 200 ] && py_json "$tmp/body" 'j["data"][0]["removed"] is True' \
  || fail "DELETE /v1/adapters/reg removes it"
[ "$(http POST "$A/v1/completions" '{"model":"reg","prompt":"Hi","max_tokens":4}')" = 404 ] \
  && py_json "$tmp/body" 'j["error"]["code"] == "unknown_adapter"' || fail "a removed adapter -> 404 unknown_adapter"
[ "$(http POST "$A/v1/adapters" '{"name":"x","path":"/etc"}')" = 400 ] \
  && py_json "$tmp/body" '"outside the allowed roots" in j["error"]["message"]' || fail "an adapter outside the roots -> 400"
[ "$(http POST "$A/v1/adapters" '{"path":"/etc"}')" = 400 ] || fail "an add without a name -> 400"
[ "$(http GET "$A/v1/adapters/reg")" = 405 ] || fail "GET /v1/adapters/NAME -> 405"
ok "DELETE removes (then 404 unknown_adapter), refusals: outside the roots, no name, wrong method"

# ---- metrics and stats ---------------------------------------------------------------------
[ "$(http GET "$A/metrics")" = 200 ] || fail "GET /metrics -> 200"
[[ "$(header content-type)" == text/plain* ]] || fail "/metrics Content-Type text/plain (got '$(header content-type)')"
grep -q '^lorafleet:request_success_total' "$tmp/body" || fail "/metrics has lorafleet:request_success_total"
grep -q '^# TYPE lorafleet:' "$tmp/body" || fail "/metrics has # TYPE lines"
grep -q '^# HELP lorafleet:' "$tmp/body" || fail "/metrics has # HELP lines"
grep -Eq '^lorafleet:[a-z_]+_bucket\{.*le="\+Inf"\} [0-9]+' "$tmp/body" || fail '/metrics has histogram _bucket{...le="+Inf"} lines'
ok '/metrics: text/plain, # TYPE / # HELP, request_success_total, _bucket{le="+Inf"} lines'
# every sample line parses; each histogram series: buckets non-decreasing, +Inf bucket == _count
"$py" - "$tmp/body" << 'EOF' || fail "/metrics is well-formed Prometheus text (histograms consistent, TYPE before samples)"
import re, sys, collections
typ, buckets, counts = {}, collections.defaultdict(list), {}
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (-?[0-9.e+-]+|NaN|\+Inf|-Inf)$')
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if not line: continue
    if line.startswith("# TYPE "):
        _, _, n, t = line.split(" ", 3); typ[n] = t; continue
    if line.startswith("#"): continue
    m = line_re.match(line)
    assert m, "bad sample line: " + line
    name, labels, v = m.group(1), m.group(2) or "", float(m.group(3))
    base = re.sub(r"_(bucket|sum|count)$", "", name)
    assert name in typ or base in typ, "sample before its # TYPE: " + line
    if name.endswith("_bucket"):
        le = re.search(r'le="([^"]+)"', labels).group(1)
        key = (base, re.sub(r',?le="[^"]+"', "", labels))
        buckets[key].append((float(le), v))
    elif name.endswith("_count") and typ.get(base) == "histogram":
        counts[(base, labels)] = v
assert buckets, "no histogram buckets"
for key, bs in buckets.items():
    vals = [v for _, v in bs]
    assert vals == sorted(vals), "buckets decrease: %r" % (key,)
    assert bs[-1][0] == float("inf"), "last bucket is not +Inf: %r" % (key,)
    assert counts.get(key) == bs[-1][1], "+Inf bucket != _count for %r" % (key,)
EOF
ok "/metrics parses; every histogram's +Inf bucket equals its _count"

[ "$(http GET "$A/api/stats")" = 200 ] || fail "GET /api/stats -> 200"
"$py" -c 'import json, sys; json.load(open(sys.argv[1]))' "$tmp/body" || fail "/api/stats is JSON"
py_json "$tmp/body" 'j["model"] == "tiny-base" and j["router"]["workers"] == 2 and len(j["workers"]) == 2 and j["router"]["completed"] >= 4' \
  || fail "/api/stats: model, router counters, 2 workers"
ok "GET /api/stats -> JSON with the model, router counters and 2 workers"

[ "$(http GET "$A/")" = 200 ] || fail "GET / -> 200"
[[ "$(header content-type)" == text/html* ]] || fail "GET / Content-Type text/html (got '$(header content-type)')"
grep -qi '<html' "$tmp/body" && grep -q lorafleet "$tmp/body" || fail "GET / is an HTML page mentioning lorafleet"
ok "GET / -> the dashboard page (text/html, mentions lorafleet)"

# ---- errors ---------------------------------------------------------------------------------
is_error() {  # is_error TYPE_OR_EMPTY: the body is an OpenAI error object
  py_json "$tmp/body" 'isinstance(j["error"]["message"], str) and j["error"]["message"] and "type" in j["error"] and "param" in j["error"] and "code" in j["error"]' || return 1
  [ -z "${1:-}" ] || py_json "$tmp/body" "j['error']['type'] == '$1'"
}
[ "$(http GET "$A/no/such/path")" = 404 ] && is_error || fail "GET /no/such/path -> 404 JSON error"
ok "unknown path -> 404 with an error object"
[ "$(http GET "$A/v1/completions")" = 405 ] && is_error && [ -n "$(header allow)" ] || fail "GET /v1/completions -> 405 JSON error with Allow"
ok "GET /v1/completions -> 405 with Allow: $(header allow)"
[ "$(http GET "$A/v1/chat/completions")" = 405 ] || fail "GET /v1/chat/completions -> 405"
ok "GET /v1/chat/completions -> 405"
for spec in 'echo|"echo":true,"logprobs":1' 'foo|"foo":1' 'frequency_penalty|"frequency_penalty":0.5' 'n|"n":0' 'logprobs|"logprobs":50' 'stop|"stop":5'; do
  p=${spec%%|*}; kv=${spec#*|}
  [ "$(http POST "$A/v1/completions" "{\"model\":\"tiny-base\",\"prompt\":\"Hi\",\"max_tokens\":4,$kv}")" = 400 ] \
    && is_error invalid_request_error && py_json "$tmp/body" "j['error']['param'] == '$p'" \
    || fail "{$kv} -> 400 naming param $p"
  ok "{$kv} -> 400, param $p"
done
[ "$(http POST "$A/v1/chat/completions" '{"model":"tiny-base","messages":[{"role":"user","content":"Hi"}],"bar":true}')" = 400 ] \
  && is_error invalid_request_error && py_json "$tmp/body" 'j["error"]["param"] == "bar"' || fail "chat: unknown parameter bar -> 400"
ok "chat: unknown parameter -> 400, param bar"
[ "$(http POST "$A/v1/completions" '{"model":"tiny-base","prompt":"Hi",')" = 400 ] && is_error || fail "malformed JSON -> 400"
ok "malformed JSON -> 400 with an error object"
[ "$(http POST "$A/v1/completions" '{"model":"nope","prompt":"Hi","max_tokens":4}')" = 404 ] \
  && is_error not_found_error && py_json "$tmp/body" 'j["error"]["code"] == "unknown_adapter"' || fail "unknown model -> 404 unknown_adapter"
ok "unknown model -> 404, code unknown_adapter"
[ "$(http POST "$A/v1/completions" '{"model":"tiny-base","prompt":"Hi","max_tokens":300}')" = 400 ] && is_error invalid_request_error \
  || fail "max_tokens beyond the context window -> 400"
ok "max_tokens beyond the context window -> 400"
"$py" -c 'import json, sys; json.dump({"model": "tiny-base", "prompt": "hello " * 200000, "max_tokens": 4}, open(sys.argv[1], "w"))' "$tmp/big.json"
[ "$(http POST "$A/v1/completions" "@$tmp/big.json")" = 413 ] && is_error || fail "a 1.2 MB body -> 413 JSON error"
ok "body over 1 MiB -> 413 with an error object"
[ "$(http POST "$A/v1/completions" '{"model":"tiny-base","prompt":"Hi","max_tokens":200,"ignore_eos":true,"deadline_ms":1}')" = 504 ] \
  && is_error && py_json "$tmp/body" 'j["error"]["code"] == "timeout"' || fail "deadline_ms 1 -> 504 timeout"
ok "deadline_ms 1 on a 200-token generation -> 504, code timeout"
[ "$(http GET "$A/health")" = 200 ] || fail "still healthy after the errors"
ok "still healthy after the errors"

# ---- server b: overload, disconnect, drain ---------------------------------------------------
long='{"model":"slow","prompt":"Hi","max_tokens":1000,"ignore_eos":true,"stream":true}'
wait_data() {  # wait_data FILE: until the stream has a data line (the request is placed)
  for _ in $(seq 1 100); do grep -q '^data: ' "$1" 2> /dev/null && return 0; sleep 0.02; done
  return 1
}
[ "$(metric_sum "$B" lorafleet:requests_cancelled_total)" = 0 ] || fail "server b starts with no cancelled request"
t0=$(date +%s%N)
curl -sN --max-time 60 -H 'Content-Type: application/json' -d "$long" "$B/v1/completions" -o "$tmp/stream1" &
cpid=$!; pids+=($cpid)
wait_data "$tmp/stream1" || fail "the long stream started"
[ "$(http POST "$B/v1/completions" '{"model":"slow","prompt":"Hi","max_tokens":4}')" = 429 ] && is_error rate_limit_error \
  || fail "a second request while the only slot is busy -> 429"
ra=$(header retry-after)
[[ "$ra" =~ ^[0-9]+$ ]] && [ "$ra" -ge 1 ] || fail "429 carries Retry-After (got '$ra')"
ok "busy server -> 429 rate_limit_error with Retry-After: $ra"
# disconnect: kill the client about 0.2 s after it started
while [ $(( ($(date +%s%N) - t0) / 1000000 )) -lt 200 ]; do sleep 0.02; done
kill "$cpid"; wait "$cpid" 2> /dev/null || true
tk=$(date +%s%N)
grep -q 'data: \[DONE\]' "$tmp/stream1" && fail "the long stream was still running when its client was killed"
c=0
while [ $(( ($(date +%s%N) - tk) / 1000000 )) -lt 1000 ]; do
  c=$(metric_sum "$B" lorafleet:requests_cancelled_total); [ "$c" -ge 1 ] && break; sleep 0.05
done
[ "$c" -ge 1 ] || fail "lorafleet:requests_cancelled_total >= 1 within 1 s of the disconnect (got $c)"
ok "client disconnect -> lorafleet:requests_cancelled_total $c after $(( ($(date +%s%N) - tk) / 1000000 )) ms"
for _ in $(seq 1 50); do [ "$(metric_sum "$B" lorafleet:num_requests_inflight)" = 0 ] && break; sleep 0.05; done
[ "$(metric_sum "$B" lorafleet:num_requests_inflight)" = 0 ] || fail "the cancelled request left the worker"
[ "$(metric_sum "$B" lorafleet:request_success_total)" = 0 ] || fail "the cancelled request did not count as a success"
ok "the cancelled request freed its slot (inflight 0, no success counted)"
# the same for a non-streaming request: its client leaves while it waits for the whole body
c0=$(metric_sum "$B" lorafleet:requests_cancelled_total)
curl -s --max-time 0.3 -H 'Content-Type: application/json' -d "${long/\"stream\":true/\"stream\":false}" "$B/v1/completions" > /dev/null 2>&1 || true
tk=$(date +%s%N); c=$c0
while [ $(( ($(date +%s%N) - tk) / 1000000 )) -lt 1000 ]; do
  c=$(metric_sum "$B" lorafleet:requests_cancelled_total); [ "$c" -gt "$c0" ] && break; sleep 0.05
done
[ "$c" -gt "$c0" ] || fail "a non-streaming request whose client left is cancelled within 1 s (cancelled $c0 -> $c)"
[ "$(metric_sum "$B" lorafleet:request_success_total)" = 0 ] || fail "the abandoned non-streaming request did not run to the end"
ok "client of a non-streaming request leaves -> cancelled after $(( ($(date +%s%N) - tk) / 1000000 )) ms"

# drain: SIGTERM while a stream runs; new requests get 503, /ready 503, the stream finishes
curl -sN --max-time 60 -H 'Content-Type: application/json' -d "$long" "$B/v1/completions" -o "$tmp/stream2" &
cpid=$!; pids+=($cpid)
wait_data "$tmp/stream2" || fail "the second long stream started"
kill -TERM "$pid_b"
sleep 0.1
[ "$(http POST "$B/v1/completions" '{"model":"slow","prompt":"Hi","max_tokens":4}')" = 503 ] && is_error service_unavailable_error \
  || fail "a new request while draining -> 503"
ok "SIGTERM: a new request -> 503 service_unavailable_error"
[ "$(http GET "$B/ready")" = 503 ] || fail "/ready -> 503 while draining"
ok "SIGTERM: /ready -> 503 while draining"
wait "$cpid" || fail "the draining stream's client exited cleanly"
[ "$(grep -v '^$' "$tmp/stream2" | tail -1)" = "data: [DONE]" ] || fail "the in-flight stream finished during the drain"
ok "the in-flight stream finished during the drain (data: [DONE])"
wait "$pid_b" || fail "server b exited with status 0 after SIGTERM"
ok "server b exited cleanly"

echo "$passed passed, 0 failed"
