#!/bin/bash
# API keys and roles over real sockets: `lorafleet serve --api-key-file` refuses a key file others
# may read; the openai SDK with no key, a wrong key, a user and an admin key (auth_keys_test.mjs);
# curl with x-api-key, open probes, --metrics-need-key; a fuzz of the Authorization header (the
# server answers 401 and stays up); ZeroMQ CURVE client keys with user and admin roles (drain,
# adapters); the audit lines. Usage: auth_keys.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
here=$src/tests/http
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
source "$here/lib.sh"

user_key=sk-user-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
admin_key=sk-admin-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
"$bin" keygen --out "$tmp/k" --name server > /dev/null
"$bin" keygen --out "$tmp/k" --name zuser > /dev/null
"$bin" keygen --out "$tmp/k" --name zadmin > /dev/null
cat > "$tmp/keys" <<KEYS
# NAME ROLE KEY [TENANT]
alice  user   $user_key
ops    admin  $admin_key   platform
zuser  user   curve:$(cat "$tmp/k/zuser.public")
zadmin admin  curve:$(cat "$tmp/k/zadmin.public")
KEYS
chmod 644 "$tmp/keys"
model=$src/models/default
serve=(serve --model "$model" --adapter-roots "$src/models/adapters" --adapter-log "$tmp/adapters.log" --workers 2 --threads 1 --kv-cache-mb 32 --api-key-file "$tmp/keys"
       --curve-secret-key "$(cat "$tmp/k/server.secret")" --curve-public-key "$(cat "$tmp/k/server.public")")

set +e
out=$("$bin" "${serve[@]}" 2>&1); rc=$?
set -e
[ $rc = 2 ] && grep -q "$tmp/keys: the API key file has mode 0644" <<< "$out" || { echo "$out"; exit 1; }
ok "a key file others may read is refused at start (exit 2), naming the file and its mode"
chmod 600 "$tmp/keys"

zport=$(free_port); hport=$(free_port)
"$bin" "${serve[@]}" --listen "tcp://127.0.0.1:$zport" --http "127.0.0.1:$hport" --ready-file "$tmp/ready" \
  > "$tmp/serve.log" 2>&1 &
pid=$!
base=http://127.0.0.1:$hport
wait_http_ready "$tmp/ready" "$base" "$tmp/serve.log"

if command -v node > /dev/null && [ -f "$here/node_modules/openai/package.json" ]; then
  (cd "$here" && LF_BASE_URL=$base LF_MODEL=default LF_USER_KEY=$user_key LF_ADMIN_KEY=$admin_key \
     LF_ADAPTER_PATH=$src/models/adapters/bible node auth_keys_test.mjs) || { tail -30 "$tmp/serve.log"; exit 1; }
  ok "the openai SDK: 401 AuthenticationError, 403 PermissionDeniedError, user and admin successes"
else
  echo "# node or the openai package is missing: SDK part skipped (./setup.sh test installs them)"
fi

code() { curl -s -o "$tmp/body" -w '%{http_code}' "$@"; }
[ "$(code -H "x-api-key: $user_key" "$base/v1/models")" = 200 ] || exit 1
[ "$(code -H "x-api-key: nope-nope-nope-nope" "$base/v1/models")" = 401 ] || exit 1
grep -q '"type":"authentication_error"' "$tmp/body" || { cat "$tmp/body"; exit 1; }
[ "$(code -X DELETE -H "x-api-key: $user_key" "$base/v1/adapters/bible")" = 403 ] || exit 1
grep -q '"code":"forbidden"' "$tmp/body" || { cat "$tmp/body"; exit 1; }
ok "curl: x-api-key accepted, a wrong one 401, a user key on an admin operation 403 (OpenAI error objects)"
for p in /health /ready /metrics; do [ "$(code "$base$p")" = 200 ] || { echo "$p"; exit 1; }; done
ok "/health, /ready and /metrics stay open without a key"

# The key's tenant, not the body's user: a user key claiming another tenant is still alice.
curl -s -H "Authorization: Bearer $user_key" -H 'Content-Type: application/json' \
  -d '{"model":"default","prompt":"Hi","max_tokens":1,"user":"mallory"}' "$base/v1/completions" > /dev/null
curl -s -H "Authorization: Bearer $admin_key" -H 'Content-Type: application/json' \
  -d '{"model":"default","prompt":"Hi","max_tokens":1}' "$base/v1/completions" > /dev/null
grep -q 'request done.* tenant=mallory' "$tmp/serve.log" && { echo "the body's user became the tenant"; exit 1; }
grep -q 'request done.* tenant=alice' "$tmp/serve.log" && grep -q 'request done.* tenant=platform' "$tmp/serve.log" \
  || { grep "request done" "$tmp/serve.log"; exit 1; }
ok "a keyed request's tenant is its key's name or the line's tenant, never the body's user"

# Fuzz: random bytes, huge values and odd spacing in Authorization; every answer a 401.
"$py" - "$base" <<'PY' || { tail -20 "$tmp/serve.log"; exit 1; }
import http.client, random, sys, urllib.parse
u = urllib.parse.urlparse(sys.argv[1]); rnd = random.Random(29)
shapes = [lambda: "Bearer", lambda: "Bearer ", lambda: "bearer\t\t x", lambda: "Bearer " + "A" * 60000,
          lambda: " " * 1000 + "Bearer" + " " * 1000, lambda: "Basic " + "=" * 50, lambda: "Bearer a b c",
          lambda: "Bearer " + "".join(chr(rnd.randrange(33, 127)) for _ in range(rnd.randrange(1, 200)))]
for i in range(300):
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    if i % 3 == 0:
        raw = bytes(rnd.randrange(0x20, 0x7f) if rnd.random() < .7 else rnd.choice(b"\t\x80\xff") for _ in range(rnd.randrange(0, 400)))
        c.putrequest("GET", "/v1/models"); c.putheader("Authorization", raw); c.putheader("x-api-key", raw[:50]); c.endheaders()
    else:
        c.request("GET", "/v1/models", headers={"Authorization": shapes[i % len(shapes)]()})
    r = c.getresponse(); r.read()
    if r.status not in (400, 401, 431): sys.exit(f"case {i}: status {r.status}")
    c.close()
PY
[ "$(code "$base/health")" = 200 ] && kill -0 $pid || exit 1
ok "300 malformed Authorization headers: no crash, each refused"

# ZeroMQ: CURVE client keys with roles.
zc=(--endpoint "tcp://127.0.0.1:$zport" --server-key "$tmp/k/server.public")
set +e
out=$("$bin" drain nosuchnode "${zc[@]}" --client-key "$tmp/k/zuser" 2>&1); rc=$?
set -e
[ $rc = 1 ] && grep -q "forbidden: key zuser has role user" <<< "$out" || { echo "$out"; exit 1; }
out=$("$bin" adapters remove bible "${zc[@]}" --client-key "$tmp/k/zuser" 2>&1 || true)
grep -q "forbidden" <<< "$out" || { echo "$out"; exit 1; }
"$bin" client "${zc[@]}" --client-key "$tmp/k/zuser" --prompt Hi --max-tokens 2 --no-stream --quiet > /dev/null
ok "ZeroMQ: a user CURVE key may submit; its drain and adapter remove are refused with forbidden"
set +e
out=$("$bin" drain nosuchnode "${zc[@]}" --client-key "$tmp/k/zadmin" 2>&1); rc=$?
set -e
grep -q "no live worker is named nosuchnode" <<< "$out" || { echo "$out"; exit 1; }
ok "ZeroMQ: an admin CURVE key's drain reaches the router"

grep -q 'audit refused key=alice role=user remote=127.0.0.1:[0-9]* door=http op="DELETE /v1/adapters/bible" result=forbidden' "$tmp/serve.log" \
  && grep -q 'audit admin operation key=zadmin role=admin .*door=zmq op="drain nosuchnode" result=ok' "$tmp/serve.log" \
  && grep -q 'audit refused key=zuser role=user .*door=zmq op="drain nosuchnode" result=forbidden' "$tmp/serve.log" \
  || { grep audit "$tmp/serve.log" | tail; exit 1; }
ok "audit lines name the key, the remote address, the operation and the result"

kill -TERM $pid; wait $pid; pid=
echo "$passed passed"
