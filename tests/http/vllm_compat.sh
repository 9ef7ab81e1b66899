#!/bin/bash
# Drop-in where vLLM is expected: serves a tiny random model and an adapter with an API key file,
# then runs vllm_compat_test.mjs (the official openai npm SDK sending vLLM's guided_* and
# structured_outputs fields, every output checked against its constraint with RegExp, JSON.parse
# and ajv; conflicts and bad values refused; POST /tokenize and /detokenize round trips equal to
# `lorafleet tokenize`, counts equal to the completions' prompt_tokens), and checks with curl
# that /tokenize and /detokenize sit behind the same door and limits as /v1/completions.
# Usage: vllm_compat.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$(realpath "$1"); src=$2
here=$src/tests/http
command -v node > /dev/null || { echo "vllm_compat: node is not installed: run ./setup.sh test"; exit 1; }
for p in openai ajv; do
  if [ ! -f "$here/node_modules/$p/package.json" ]; then
    echo "vllm_compat: the $p npm package is missing: run ./setup.sh test (or: python3 tests/http/install_packages.py)"
    exit 1
  fi
done
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
source "$here/lib.sh"

user_key=sk-user-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')
printf '# NAME ROLE KEY\nalice user %s\n' "$user_key" > "$tmp/keys"
chmod 600 "$tmp/keys"
serve_extra=(--api-key-file "$tmp/keys")
serve_tiny 512 64 tiny:3
base=http://127.0.0.1:$hport

status=0
(cd "$here" && LF_BASE_URL=$base LF_KEY=$user_key LF_MODEL=tiny-gpt2 LF_ADAPTER=tiny LF_CONTEXT=512 \
  LF_BIN=$bin LF_MODEL_DIR=$tmp/tiny-gpt2 node vllm_compat_test.mjs) || status=$?
if [ $status -ne 0 ]; then echo "--- server log (tail)"; tail -30 "$tmp/serve.log"; exit $status; fi

# The door and the limits: the same as /v1/completions'.
code() { curl -s -o "$tmp/body" -w '%{http_code}' "$@"; }
json=(-H 'Content-Type: application/json')
for p in tokenize detokenize; do
  [ "$(code "${json[@]}" -d '{"prompt":"x","tokens":[1]}' "$base/$p")" = 401 ] || { cat "$tmp/body"; exit 1; }
  grep -q '"code":"unauthenticated"' "$tmp/body" || { cat "$tmp/body"; exit 1; }
  [ "$(code -H "Authorization: Bearer $user_key" "$base/$p")" = 405 ] || { cat "$tmp/body"; exit 1; }
done
ok "/tokenize and /detokenize: 401 without a key, 405 for GET"
[ "$(code -H "x-api-key: $user_key" "${json[@]}" -d '{"prompt":"Hello world"}' "$base/tokenize")" = 200 ] \
  || { cat "$tmp/body"; exit 1; }
grep -q '"tokens":\[15496,995\]' "$tmp/body" || { cat "$tmp/body"; exit 1; }
[ "$(code -H "x-api-key: $user_key" "${json[@]}" -d '{"tokens":[15496,995]}' "$base/detokenize")" = 200 ] \
  || { cat "$tmp/body"; exit 1; }
[ "$(cat "$tmp/body")" = '{"prompt":"Hello world"}' ] || { cat "$tmp/body"; exit 1; }
ok "curl with a user key: /tokenize and /detokenize answer"
"$py" -c 'import json; print(json.dumps({"prompt": "x" * (1 << 20)}))' > "$tmp/big.json"
[ "$(code -H "x-api-key: $user_key" "${json[@]}" --data-binary @"$tmp/big.json" "$base/tokenize")" = 413 ] \
  || { cat "$tmp/body"; exit 1; }
ok "a body over 1 MiB: 413"

kill -TERM $pid
wait $pid
pid=
echo "server exited cleanly"
