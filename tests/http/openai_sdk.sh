#!/bin/bash
# The official OpenAI Node SDK against `lorafleet serve --http`: serves a tiny model and an adapter
# over ZeroMQ and HTTP, takes the ZeroMQ greedy text with `lorafleet client`, then runs
# openai_sdk_test.mjs (completions, chat, streaming, n (also streamed), logprobs, seed, logit_bias,
# echo, adapters, models, typed errors, and HTTP greedy text == ZeroMQ greedy text).
# Usage: openai_sdk.sh LORAFLEET_BINARY SOURCE_DIR
# Needs node (>= 18) and tests/http/node_modules/openai: `./setup.sh test` installs both.
set -euo pipefail
bin=$1; src=$2
here=$src/tests/http
command -v node > /dev/null || { echo "openai_sdk: node is not installed: run ./setup.sh test"; exit 1; }
if [ ! -f "$here/node_modules/openai/package.json" ]; then
  echo "openai_sdk: the openai npm package is missing ($here/node_modules/openai): run ./setup.sh test"
  echo "(or: cd tests/http && npm ci --no-audit --no-fund, or python3 tests/http/install_packages.py)"
  exit 1
fi
echo "# node $(node --version), openai $(node -p "require('$here/node_modules/openai/package.json').version")"

tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
source "$(dirname "$0")/lib.sh"

serve_tiny 256 32 tiny:3

export LF_BASE_URL=http://127.0.0.1:$hport LF_MODEL=tiny-gpt2 LF_ADAPTER=tiny LF_CONTEXT=256
export LF_BIN=$(realpath "$bin") LF_MODEL_DIR=$tmp/tiny-gpt2
export LF_ZMQ_PROMPT="The quick brown fox" LF_ZMQ_MAX_TOKENS=24
export LF_ZMQ_TEXT_FILE=$tmp/zmq.txt LF_ZMQ_ADAPTER_TEXT_FILE=$tmp/zmq_adapter.txt
"$bin" client --endpoint "tcp://127.0.0.1:$zport" --prompt "$LF_ZMQ_PROMPT" --temperature 0 \
  --max-tokens "$LF_ZMQ_MAX_TOKENS" --no-stream --quiet > "$LF_ZMQ_TEXT_FILE"
"$bin" client --endpoint "tcp://127.0.0.1:$zport" --prompt "$LF_ZMQ_PROMPT" --temperature 0 --adapter tiny \
  --max-tokens "$LF_ZMQ_MAX_TOKENS" --no-stream --quiet > "$LF_ZMQ_ADAPTER_TEXT_FILE"

status=0
(cd "$here" && node openai_sdk_test.mjs) || status=$?
if [ $status -ne 0 ]; then echo "--- server log (tail)"; tail -30 "$tmp/serve.log"; exit $status; fi
kill -TERM $pid
wait $pid
pid=
echo "server exited cleanly"
