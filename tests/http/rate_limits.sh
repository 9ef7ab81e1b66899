#!/bin/bash
# Rate limits per key over HTTP, as OpenAI answers them: a key file line's rpm= / tpm= hold the key
# to that many requests / tokens (prompt + max_tokens) a minute. Every reply to a limited key
# carries x-ratelimit-limit-*, -remaining-* and -reset-*; past the limit: 429 (code rate_limited)
# with Retry-After, until the bucket has refilled (5 a minute: one every 12 s); a request larger
# than a minute's tokens: 400, no retry helps; other keys are not touched; streams carry the
# headers on their first response line. Over ZeroMQ a CURVE key is charged from the same buckets
# (one set per process): a name with both an HTTP key and a CURVE key spends one limit over both
# doors; /metrics and /api/stats count per key name.
# Usage: rate_limits.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1"); src=$2
here=$src/tests/http
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
source "$here/lib.sh"

k() { echo "sk-$1-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"; }
a_key=$(k a); b_key=$(k b); c_key=$(k c); d_key=$(k d)
for name in server zed dora; do "$bin" keygen --out "$tmp/k" --name $name > /dev/null; done
cat > "$tmp/keys" <<KEYS
# NAME ROLE KEY [TENANT] [rpm=N] [tpm=N]
alice user $a_key rpm=5
bob   user $b_key
carol user $c_key team-c tpm=100
zed   user curve:$(cat "$tmp/k/zed.public") rpm=3
dora  user $d_key rpm=4
dora  user curve:$(cat "$tmp/k/dora.public") rpm=4
KEYS
chmod 600 "$tmp/keys"
serve_extra=(--api-key-file "$tmp/keys" --curve-secret-key "$(cat "$tmp/k/server.secret")"
             --curve-public-key "$(cat "$tmp/k/server.public")")
serve_tiny 256 16
base=http://127.0.0.1:$hport
ask() {  # KEY MAX_TOKENS [stream]: the status; headers in $tmp/h, body in $tmp/body
  local stream=false; [ "${3:-}" = stream ] && stream=true
  curl -s -D "$tmp/h" -o "$tmp/body" -w '%{http_code}' -H "Authorization: Bearer $1" -H 'Content-Type: application/json' \
    -d "{\"model\":\"tiny-gpt2\",\"prompt\":\"Hello there\",\"max_tokens\":$2,\"stream\":$stream}" "$base/v1/completions"
}
header() { tr -d '\r' < "$tmp/h" | sed -n "s/^$1: //Ip" | head -n 1; }
fail() { echo "FAIL: $*"; echo "--- headers"; cat "$tmp/h"; echo "--- body"; cat "$tmp/body"; echo; exit 1; }

# alice: 5 a minute, a full bucket at start: 5 pass, the 6th is refused (the bucket refills one
# request every 12 s, far slower than these requests go even on a busy machine).
for i in $(seq 1 5); do
  [ "$(ask "$a_key" 1)" = 200 ] || fail "alice's request $i of her 5 was refused"
done
[ "$(header x-ratelimit-limit-requests)" = 5 ] || fail "no x-ratelimit-limit-requests: 5"
[ "$(header x-ratelimit-remaining-requests)" = 0 ] || fail "remaining requests not 0 after 5"
[ -n "$(header x-ratelimit-reset-requests)" ] || fail "no x-ratelimit-reset-requests"
ok "5 requests a minute: each reply carries OpenAI's x-ratelimit-* headers"
[ "$(ask "$a_key" 1)" = 429 ] || fail "alice's 6th request was not refused"
grep -q '"code":"rate_limited"' "$tmp/body" || fail "the 429 is not a rate_limited error object"
grep -q 'requests per minute (5)' "$tmp/body" || fail "the 429 does not name the limit"
retry=$(header retry-after)
[ -n "$retry" ] && [ "$retry" -ge 1 ] && [ "$retry" -le 12 ] || fail "Retry-After is not 1-12 s: '$retry'"
ok "the 6th: 429 rate_limited naming the limit, Retry-After $retry s"
[ "$(ask "$b_key" 4)" = 200 ] || fail "bob (no limits) was refused"
[ -z "$(header x-ratelimit-limit-requests)" ] || fail "a key without limits got rate-limit headers"
ok "another key is not touched, and gets no rate-limit headers"
sleep "$retry"
[ "$(ask "$a_key" 1)" = 200 ] || fail "alice was still refused $retry s later, when Retry-After said it would fit"
ok "after Retry-After ($retry s), one request has refilled"

# carol: 100 tokens a minute; prompt (2) + max_tokens (40) = 42 a request; a stream carries the headers.
[ "$(ask "$c_key" 40 stream)" = 200 ] || fail "carol's first stream was refused"
[ "$(header x-ratelimit-limit-tokens)" = 100 ] || fail "the stream's first line has no x-ratelimit-limit-tokens"
[ "$(header x-ratelimit-remaining-tokens)" = 58 ] || fail "remaining tokens not 100 - 42"
[ "$(ask "$c_key" 40)" = 200 ] || fail "carol's second request was refused"
[ "$(ask "$c_key" 40)" = 429 ] || fail "carol's third request (126 tokens in a minute) was not refused"
grep -q 'tokens per minute (100' "$tmp/body" || fail "the 429 does not name the token limit"
[ "$(ask "$c_key" 200)" = 400 ] || fail "a request over a whole minute's tokens was not a 400"
grep -q 'lower max_tokens' "$tmp/body" || fail "the 400 does not say what to change"
ok "100 tokens a minute: a stream carries the headers, the third request gets 429, one over the minute's budget 400"

# zed, over ZeroMQ with its CURVE key: 3 a minute; the 4th gets the protocol's rate_limited error
# with a retry time; /metrics counts per key name.
zc=(--endpoint "tcp://127.0.0.1:$zport" --server-key "$tmp/k/server.public" --client-key "$tmp/k/zed")
for i in 1 2 3; do
  "$bin" client "${zc[@]}" --prompt Hi --max-tokens 2 --no-stream > "$tmp/body" 2>&1 || fail "zed's ZeroMQ request $i of 3 failed"
done
set +e
"$bin" client "${zc[@]}" --prompt Hi --max-tokens 2 --no-stream > "$tmp/body" 2>&1; rc=$?
set -e
[ $rc != 0 ] && grep -q "rate_limited" "$tmp/body" || fail "zed's 4th ZeroMQ request was not refused as rate_limited"
grep -q "requests per minute (3)" "$tmp/body" || fail "the ZeroMQ refusal does not name the limit"
ok "over ZeroMQ: a CURVE key's rpm=3, the 4th request gets error rate_limited naming the limit"
# dora: one caller over both doors (an HTTP key and a CURVE key under one name), rpm=4 in all: 2
# over HTTP, 2 over ZeroMQ (the Python client), then the 5th is refused over ZeroMQ (rate_limited
# with retry_after_ms) and the 6th over HTTP (429). The bucket refills one every 15 s.
for i in 1 2; do
  [ "$(ask "$d_key" 1)" = 200 ] || fail "dora's HTTP request $i of 2 was refused"
done
[ "$(header x-ratelimit-remaining-requests)" = 2 ] || fail "dora has not 2 of 4 left after 2 over HTTP"
"$py" "$here/rate_limits_zmq.py" "tcp://127.0.0.1:$zport" "$tmp/k/server" "$tmp/k/dora" 2 4 \
  || fail "dora over ZeroMQ: not 2 passed and the 5th refused as rate_limited (see above)"
[ "$(ask "$d_key" 1)" = 429 ] || fail "dora's 6th request (over HTTP, after 2 + 2 and a refusal) was not refused"
[ "$(header x-ratelimit-remaining-requests)" = 0 ] || fail "the 429 does not say 0 requests remain"
ok "one key over both doors: rpm=4 is 2 over HTTP + 2 over ZeroMQ, the next refused on each (rate_limited, 429)"

curl -s "$base/metrics" > "$tmp/metrics"
grep -q 'lorafleet:key_requests_admitted_total{key="zed"} 3' "$tmp/metrics" || { cat "$tmp/metrics" | grep key_; fail "no admitted count for zed"; }
grep -q 'lorafleet:key_requests_rate_limited_total{key="zed"} 1' "$tmp/metrics" || fail "no rate_limited count for zed"
grep -q 'lorafleet:key_requests_rate_limited_total{key="alice"} 1' "$tmp/metrics" || fail "no rate_limited count for alice"
grep -q 'lorafleet:key_tokens_charged_total{key="carol"} 84' "$tmp/metrics" || fail "carol's charged tokens are not 2 x 42"
grep -q 'lorafleet:key_requests_admitted_total{key="dora"} 4' "$tmp/metrics" || fail "dora's admitted count is not 2 + 2"
grep -q 'lorafleet:key_requests_rate_limited_total{key="dora"} 2' "$tmp/metrics" || fail "dora's refusals are not 1 + 1"
grep -q 'lorafleet:key_tokens_charged_total{key="dora"} 12' "$tmp/metrics" || fail "dora's charged tokens are not 4 x (2 + 1)"
grep -q 'key="bob"' "$tmp/metrics" && fail "bob (no limits) has per-key series"
grep -qF -e "$a_key" -e "$d_key" -e "$(cat "$tmp/k/dora.public")" "$tmp/metrics" && fail "/metrics quotes a key"
ok "/metrics counts per key name (both gateways, one set of buckets): admitted, refused, tokens"
curl -s "$base/api/stats" | "$py" -c '
import json, sys
k = json.load(sys.stdin)["keys"]
assert k["dora"] == {"admitted": 4, "rate_limited": 2, "tokens": 12}, k
assert k["zed"]["admitted"] == 3 and "bob" not in k, k' || fail "/api/stats has not the per-key counts"
ok "/api/stats carries the same per-key counts"
echo "rate limits: $passed passed"
