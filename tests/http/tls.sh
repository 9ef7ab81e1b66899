#!/bin/bash
# HTTPS on the HTTP gateway (`serve --http ... --tls-cert FILE --tls-key FILE`), over real sockets,
# with a self-signed certificate this script makes (openssl CLI):
# - start-up refusals that name the file: one of the pair alone, a missing file, a file that is
#   not PEM, an encrypted key (never a passphrase prompt), a key that does not match the
#   certificate, TLS without --http;
# - curl --cacert: /health, a completion, a stream to `data: [DONE]`; curl without the CA refuses
#   the server's certificate (the port really serves that certificate);
# - plain http:// to the TLS port fails at once and the server goes on serving HTTPS;
# - a client that leaves mid-stream, and one that leaves while waiting for a whole body, are
#   cancelled within 1 s (lorafleet:requests_cancelled_total), as over plain HTTP;
# - the openai npm SDK with the certificate in NODE_EXTRA_CA_CERTS (tls_sdk_test.mjs);
# - SIGTERM: a clean exit.
# Usage: tls.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
here=$src/tests/http
source "$here/lib.sh"
for c in curl openssl node; do command -v $c > /dev/null || { echo "tls: $c is not installed (run ./setup.sh test)"; exit 1; }; done
[ -f "$here/node_modules/openai/package.json" ] || {
  echo "tls: the openai npm package is missing ($here/node_modules/openai): run ./setup.sh test"; exit 1; }

tmp=$(mktemp -d); pid=; cpid=
trap '[ -n "$cpid" ] && kill $cpid 2> /dev/null; [ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
fail() {
  echo "not ok $((passed + 1)) - $1"
  [ -f "$tmp/out" ] && { echo "--- output:"; head -c 2000 "$tmp/out"; echo; }
  [ -f "$tmp/serve.log" ] && { echo "--- server log (tail)"; tail -20 "$tmp/serve.log"; }
  exit 1
}

# A self-signed certificate for 127.0.0.1 / localhost, a second key that does not match it.
ec=(-newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes)
openssl req -x509 "${ec[@]}" -keyout "$tmp/key.pem" -out "$tmp/cert.pem" -days 2 -subj "/CN=localhost" \
  -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" 2> /dev/null
openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$tmp/other_key.pem" 2> /dev/null
openssl pkey -in "$tmp/key.pem" -aes256 -passout pass:secret -out "$tmp/encrypted_key.pem" 2> /dev/null
echo "not a certificate" > "$tmp/junk.pem"
chmod 600 "$tmp"/*.pem

# 1000 tokens take over a second on a 2-core machine (the disconnect checks need a long stream)
"$bin" make-model --out "$tmp/slow" --layers 4 --heads 8 --embd 512 --context 1024 --seed 2 --dtype f16 > /dev/null

# ---- start-up refusals -----------------------------------------------------------------------
refused() {  # refused "WORDS IN THE ERROR" serve-flags...: serve exits non-zero saying WORDS
  local want=$1; shift
  if timeout 60 "$bin" serve --model "$tmp/slow" --workers 1 --threads 1 --kv-cache-mb 16 \
      --listen "tcp://127.0.0.1:$(free_port)" "$@" > "$tmp/out" 2>&1; then
    fail "serve $* should refuse to start"
  fi
  grep -qF -- "$want" "$tmp/out" || fail "serve $* says '$want'"
  ok "refused: $* -> $(grep -F -- "$want" "$tmp/out" | head -1 | cut -c1-150)"
}
hp=$(free_port)
refused "--tls-key is missing" --http "127.0.0.1:$hp" --tls-cert "$tmp/cert.pem"
refused "--tls-cert is missing" --http "127.0.0.1:$hp" --tls-key "$tmp/key.pem"
refused "$tmp/nope.pem: No such file or directory" --http "127.0.0.1:$hp" --tls-cert "$tmp/nope.pem" --tls-key "$tmp/key.pem"
refused "not a regular file" --http "127.0.0.1:$hp" --tls-cert "$tmp/cert.pem" --tls-key "$tmp"
refused "$tmp/junk.pem is not a PEM certificate" --http "127.0.0.1:$hp" --tls-cert "$tmp/junk.pem" --tls-key "$tmp/key.pem"
refused "$tmp/junk.pem is not an unencrypted PEM private key" --http "127.0.0.1:$hp" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/junk.pem"
refused "$tmp/encrypted_key.pem is not an unencrypted PEM private key" --http "127.0.0.1:$hp" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/encrypted_key.pem" < /dev/null
refused "does not match the certificate" --http "127.0.0.1:$hp" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/other_key.pem"
refused "need --http" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem"

# ---- the server -------------------------------------------------------------------------------
hp=$(free_port); zp=$(free_port)
"$bin" serve --model "$tmp/slow" --workers 1 --threads 1 --kv-cache-mb 64 --listen "tcp://127.0.0.1:$zp" \
  --http "127.0.0.1:$hp" --tls-cert "$tmp/cert.pem" --tls-key "$tmp/key.pem" --ready-file "$tmp/ready" \
  > "$tmp/serve.log" 2>&1 &
pid=$!
U=https://127.0.0.1:$hp
sc=(curl -s --cacert "$tmp/cert.pem" --max-time 30)
for _ in $(seq 1 240); do
  [ -s "$tmp/ready" ] && [ "$("${sc[@]}" -o /dev/null -w '%{http_code}' "$U/ready" || true)" = 200 ] && break
  sleep 0.25
done
[ "$("${sc[@]}" -o /dev/null -w '%{http_code}' "$U/ready" || true)" = 200 ] || fail "the HTTPS server became ready"
grep -q "dashboard on https://127.0.0.1:$hp/" "$tmp/serve.log" || fail "serve announces its https:// URL"
ok "serve --tls-cert/--tls-key: ready over HTTPS, announced as $U/"

py_json() { "$py" -c 'import json, sys; j = json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$1" "$2"; }
metric_sum() {  # metric_sum NAME: the sum of all series of NAME
  "${sc[@]}" "$U/metrics" | awk -v n="$1" '{ k = $1; sub(/\{.*/, "", k) } k == n && $1 !~ /^#/ { s += $NF } END { printf "%d\n", s }'
}
[ "$("${sc[@]}" -o "$tmp/out" -w '%{http_code}' "$U/health")" = 200 ] && py_json "$tmp/out" 'j["status"] == "ok"' \
  || fail "curl --cacert GET /health -> 200"
ok "curl --cacert: GET /health -> 200 {status: ok}"
set +e; curl -s --max-time 10 -o /dev/null "$U/health"; rc=$?; set -e
[ $rc = 60 ] || fail "curl without the CA refuses the self-signed certificate (exit $rc, want 60)"
ok "curl without --cacert refuses the certificate (exit 60): the port serves the test's certificate"
[ "$("${sc[@]}" -o "$tmp/out" -w '%{http_code}' -H 'Content-Type: application/json' \
     -d '{"model":"slow","prompt":"The quick brown fox","max_tokens":12,"temperature":0}' "$U/v1/completions")" = 200 ] \
  && py_json "$tmp/out" 'j["usage"]["completion_tokens"] == 12 and len(j["choices"]) == 1' \
  || fail "curl --cacert POST /v1/completions -> 200 with 12 tokens"
ok "curl --cacert: a completion over HTTPS"
"${sc[@]}" -N -H 'Content-Type: application/json' \
  -d '{"model":"slow","prompt":"The quick brown fox","max_tokens":12,"temperature":0,"stream":true}' \
  "$U/v1/completions" > "$tmp/out" || fail "curl --cacert streamed completion"
[ "$(grep -c '^data: {' "$tmp/out")" -ge 2 ] && grep -q '^data: \[DONE\]' "$tmp/out" \
  || fail "the stream has its chunks and ends with data: [DONE]"
ok "curl --cacert: a stream over HTTPS, $(grep -c '^data: {' "$tmp/out") chunks and data: [DONE]"

# ---- plain HTTP to the TLS port ----------------------------------------------------------------
t0=$(date +%s%N)
set +e; curl -s --max-time 10 -o "$tmp/out" "http://127.0.0.1:$hp/health"; rc=$?; set -e
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
[ $rc != 0 ] || fail "plain http:// to the TLS port fails"
[ $ms -lt 5000 ] || fail "plain http:// to the TLS port fails at once (took $ms ms)"
# a client that sends garbage and keeps its socket open is dropped too
"$py" -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=5)
s.sendall(b"POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello")
try:
    data = s.recv(4096)
except socket.timeout:
    sys.exit("the server kept a plaintext client open")
sys.exit(0 if not data.startswith(b"HTTP/") else "the server answered plaintext")' "$hp" || fail "a plaintext client is closed without a plaintext answer"
[ "$("${sc[@]}" -o /dev/null -w '%{http_code}' "$U/health")" = 200 ] || fail "HTTPS still served after plaintext clients"
ok "plain http:// to the TLS port fails (curl exit $rc after $ms ms); HTTPS goes on"

# ---- disconnects over TLS ----------------------------------------------------------------------
long='{"model":"slow","prompt":"Hi","max_tokens":1000,"ignore_eos":true,"stream":true}'
c0=$(metric_sum lorafleet:requests_cancelled_total)
"${sc[@]}" -N --max-time 60 -H 'Content-Type: application/json' -d "$long" "$U/v1/completions" -o "$tmp/stream" &
cpid=$!
for _ in $(seq 1 200); do grep -q '^data: ' "$tmp/stream" 2> /dev/null && break; sleep 0.02; done
grep -q '^data: ' "$tmp/stream" || fail "the long HTTPS stream started"
kill "$cpid"; wait "$cpid" 2> /dev/null || true; cpid=
tk=$(date +%s%N)
grep -q 'data: \[DONE\]' "$tmp/stream" && fail "the long stream was still running when its client was killed"
c=$c0
while [ $(( ($(date +%s%N) - tk) / 1000000 )) -lt 1000 ]; do
  c=$(metric_sum lorafleet:requests_cancelled_total); [ "$c" -gt "$c0" ] && break; sleep 0.05
done
[ "$c" -gt "$c0" ] || fail "a client that leaves an HTTPS stream is cancelled within 1 s (cancelled $c0 -> $c)"
ok "client leaves an HTTPS stream -> cancelled after $(( ($(date +%s%N) - tk) / 1000000 )) ms"
c0=$c
"${sc[@]}" --max-time 0.3 -H 'Content-Type: application/json' -d "${long/\"stream\":true/\"stream\":false}" \
  "$U/v1/completions" > /dev/null 2>&1 || true
tk=$(date +%s%N)
while [ $(( ($(date +%s%N) - tk) / 1000000 )) -lt 1000 ]; do
  c=$(metric_sum lorafleet:requests_cancelled_total); [ "$c" -gt "$c0" ] && break; sleep 0.05
done
[ "$c" -gt "$c0" ] || fail "a client that leaves while waiting for an HTTPS body is cancelled within 1 s ($c0 -> $c)"
ok "client of a non-streaming HTTPS request leaves -> cancelled after $(( ($(date +%s%N) - tk) / 1000000 )) ms"

# ---- the openai SDK ----------------------------------------------------------------------------
(cd "$here" && NODE_EXTRA_CA_CERTS="$tmp/cert.pem" LF_BASE_URL="$U" LF_MODEL=slow node tls_sdk_test.mjs) \
  || fail "the openai SDK over HTTPS (tls_sdk_test.mjs)"
ok "the openai SDK over HTTPS with NODE_EXTRA_CA_CERTS"

kill -TERM $pid
wait $pid || fail "serve exits cleanly on SIGTERM"
pid=
ok "SIGTERM: a clean exit"
echo "$passed passed, 0 failed"
