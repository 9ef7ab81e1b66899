#!/bin/bash
# Structured outputs through the official OpenAI Node SDK: serves a tiny random model and an
# adapter, then runs structured_test.mjs (response_format json_object / json_schema, the regex,
# choice and grammar extensions, 200 seeded random schemas and regexes over base and adapter,
# greedy and sampled, every output checked with JSON.parse + ajv or RegExp; refusals as 400s),
# and one constrained request over ZeroMQ with `lorafleet client --json-schema`.
# Usage: structured.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
here=$src/tests/http
command -v node > /dev/null || { echo "structured: node is not installed: run ./setup.sh test"; exit 1; }
for p in openai ajv; do
  if [ ! -f "$here/node_modules/$p/package.json" ]; then
    echo "structured: the $p npm package is missing: run ./setup.sh test (or: cd tests/http && npm ci)"
    exit 1
  fi
done
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2> /dev/null; rm -rf "$tmp"' EXIT
source "$(dirname "$0")/lib.sh"

serve_tiny 512 64 tiny:3

# ZeroMQ: the CLI's constraint flags reach the worker; a bad one is refused at the gateway.
out=$("$bin" client --endpoint "tcp://127.0.0.1:$zport" --prompt "Answer:" --temperature 0 --max-tokens 64 \
  --choice '["yes","no","maybe"]' --no-stream --quiet)
case "$out" in yes|no|maybe) echo "ok - zmq choice: $out" ;; *) echo "not ok - zmq choice gave '$out'"; exit 1 ;; esac
if "$bin" client --endpoint "tcp://127.0.0.1:$zport" --prompt "x" --regex 'a(' --quiet > "$tmp/bad.txt" 2>&1; then
  echo "not ok - zmq bad regex was accepted"; exit 1
fi
grep -q "invalid_request" "$tmp/bad.txt" || { echo "not ok - zmq bad regex: $(cat "$tmp/bad.txt")"; exit 1; }
echo "ok - zmq bad regex refused: $(head -1 "$tmp/bad.txt")"

status=0
(cd "$here" && LF_BASE_URL=http://127.0.0.1:$hport LF_MODEL=tiny-gpt2 LF_ADAPTER=tiny LF_CONTEXT=512 \
  node structured_test.mjs) || status=$?
if [ $status -ne 0 ]; then echo "--- server log (tail)"; tail -30 "$tmp/serve.log"; exit $status; fi
kill -TERM $pid
wait $pid
pid=
echo "server exited cleanly"
