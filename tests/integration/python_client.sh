#!/bin/bash
# Serves a tiny model with `lorafleet serve`, runs the Python client checks and the pirate demo
# against it, then stops the server with SIGTERM and expects a clean exit.
# Usage: python_client.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
tmp=$(mktemp -d); trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
"$bin" make-adapter --base "$tmp/model" --out "$tmp/adapters/tone" --rank 4 --seed 2 > /dev/null
port=$((20000 + RANDOM % 20000))
"$bin" serve --model "$tmp/model" --workers 2 --threads 1 --kv-cache-mb 32 \
  --adapter-roots "$tmp/adapters" --listen "tcp://127.0.0.1:$port" --ready-file "$tmp/ready" > "$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do [ -s "$tmp/ready" ] && break; sleep 0.5; done
[ -s "$tmp/ready" ] || { cat "$tmp/serve.log"; echo "server did not start"; exit 1; }
/usr/bin/python3 "$src/tests/integration/python_client_check.py" "tcp://127.0.0.1:$port" "$tmp/adapters/tone"
/usr/bin/python3 "$src/client/python/examples/pirate_chat.py" --endpoint "tcp://127.0.0.1:$port" | tail -1
kill -TERM $pid
wait $pid
echo "server exited cleanly"
grep -q "stopped" "$tmp/serve.log"
