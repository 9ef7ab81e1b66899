#!/bin/bash
# 512 concurrent streaming HTTP requests (and 1024 in all) against `lorafleet serve --http`,
# driven by `lorafleet loadtest http://...`: every request completes, none is lost or refused,
# and the gateway ends with nothing in flight.
# Usage: many_streams.sh LORAFLEET_BINARY
set -euo pipefail
bin=$1
source "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d); trap 'kill $pid 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
zport=$(free_port); hport=$(free_port)
"$bin" serve --model "$tmp/model" --workers 1 --kv-cache-mb 64 --queue-limit 2048 --log-level warn \
  --listen "tcp://127.0.0.1:$zport" --http "127.0.0.1:$hport" --ready-file "$tmp/ready" > "$tmp/serve.log" 2>&1 &
pid=$!
wait_http_ready "$tmp/ready" "http://127.0.0.1:$hport" "$tmp/serve.log"
ulimit -n 4096 2>/dev/null || true
"$bin" loadtest "http://127.0.0.1:$hport" --concurrency 512 --requests 1024 --input 16 --output 32 \
  --quiet --out "$tmp/run" | tee "$tmp/report.txt"
python3 - "$tmp/run.json" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))["points"][0]
assert p["completed"] == 1024 and p["failed"] == 0 and p["lost"] == 0, p
print("1024 requests, 512 at a time: all completed")
PY
live=$(curl -s "http://127.0.0.1:$hport/metrics" | awk '/^lorafleet:http_requests_live /{print $2}')
[ "$live" = "0" ] || { echo "HTTP requests still live after the run: $live"; exit 1; }
kill -TERM $pid; wait $pid
echo "server exited cleanly"
