#!/bin/bash
# The fault soak (`lorafleet soak`) on cluster-configs/three-nodes.toml with the tiny test model
# and three random adapters of its shape: 2,000 requests from 128 clients while w1 is SIGKILLed
# (launch restarts it), w2 is SIGSTOPped past the heartbeat timeout, and w1 is drained. Passes
# when the soak reports no violation (exit 0) and its summary shows the faults did something.
# Usage: soak.sh LORAFLEET_BINARY SOURCE_DIR [more soak flags]
set -euo pipefail
bin=$1
src=$2
shift 2
tmp=$(mktemp -d)
trap '[ -n "${LF_SOAK_KEEP:-}" ] || rm -rf "$tmp"' EXIT
py=/usr/bin/python3; [ -x "$py" ] || py=python3

"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
seed=1
for a in shakespeare bible fortunes; do
  "$bin" make-adapter --base "$tmp/model" --out "$tmp/adapters/$a" --rank 4 --seed $seed --init-std 0.2 > /dev/null
  seed=$((seed + 1))
done
# The config (three-nodes.toml, or LF_SOAK_CONFIG from cluster-configs/) with the tiny model, its
# adapters, and a free port for every endpoint and node.
"$py" - "$src/cluster-configs/${LF_SOAK_CONFIG:-three-nodes.toml}" "$tmp" > "$tmp/cluster.toml" <<'PY'
import re, socket, sys
def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p
text = open(sys.argv[1]).read()
tmp = sys.argv[2]
text = text.replace('"../models/default"', '"%s/model"' % tmp).replace('"../models/adapters"', '"%s/adapters"' % tmp)
text = re.sub(r'127\.0\.0\.1:[0-9]+"', lambda m: '127.0.0.1:%d"' % free_port(), text)
text = re.sub(r"port = [0-9]+", lambda m: "port = %d" % free_port(), text)
sys.stdout.write(text)
PY

# LF_SOAK_SECURE=1: the same soak with the doors locked: an API key file ([auth] key_file, mode
# 600) and HTTPS on the HTTP gateway ([http] tls_cert / tls_key, a self-signed certificate).
# The soak's ZeroMQ clients and its drain come over loopback, which keys without CURVE lines do
# not lock (docs/http.md): the point is that a locked cluster survives the same faults.
if [ "${LF_SOAK_SECURE:-0}" = 1 ]; then
  http_port=$("$py" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf 'soaker user sk-soak-user-0123456789abcdef\nops admin sk-soak-admin-0123456789abcdef\n' > "$tmp/keys.txt"
  chmod 600 "$tmp/keys.txt"
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$tmp/key.pem" \
    -out "$tmp/cert.pem" -days 2 -subj "/CN=localhost" -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2> /dev/null
  printf '\n[auth]\nkey_file = "%s/keys.txt"\n\n[http]\nlisten = "127.0.0.1:%s"\ntls_cert = "%s/cert.pem"\ntls_key = "%s/key.pem"\n' \
    "$tmp" "$http_port" "$tmp" "$tmp" >> "$tmp/cluster.toml"
fi

# On a split front, HTTP streams run beside the soak's ZeroMQ clients, through the second gateway
# node (the one no fault touches), until the soak's requests have ended: every one must end with its
# finish_reason, none with an error, through the worker and router faults.
http_load=
if grep -q '^gateway_nodes' "$tmp/cluster.toml"; then
  http_port=$(sed -n 's/^http_listen = "127.0.0.1:\([0-9]*\)"/\1/p' "$tmp/cluster.toml" | tail -n 1)
  (
    for _ in $(seq 1 1200); do curl -s -o /dev/null "http://127.0.0.1:$http_port/health" && break; sleep 0.1; done
    exec "$py" "$src/tests/integration/ha_load.py" - "http://127.0.0.1:$http_port" "$tmp/http.json" "$tmp/http.stop" \
      "$tmp/no-marks" --streams 32 --http-only --model model
  ) > "$tmp/http.log" 2>&1 &
  http_load=$!
  # They stop when the soak's own requests have ended (before it replays and stops the cluster).
  ( until grep -q "requests ended after" "$tmp/out.txt" 2>/dev/null; do sleep 0.2; done; touch "$tmp/http.stop" ) &
fi

status=0
size=(--requests 2000 --clients 128)  # --long: the soak's own long size (20,000 requests, 256 clients)
for a in "$@"; do [ "$a" = --long ] && size=(); done
"$bin" soak "$tmp/cluster.toml" --work-dir "$tmp/soak" "${size[@]}" "$@" | tee "$tmp/out.txt" || status=$?
if [ -n "$http_load" ]; then
  touch "$tmp/http.stop"
  wait "$http_load" || { cat "$tmp/http.log"; echo "soak.sh: HTTP streams failed beside the soak"; exit 1; }
  echo "HTTP beside the soak: $(head -n 1 "$tmp/http.log")"
fi
if [ $status -ne 0 ]; then
  echo "---- last 80 lines of the cluster's log ----"
  tail -n 80 "$tmp/soak/launch.log" || true
  echo "soak.sh: lorafleet soak exited with status $status"
  exit 1
fi
# The faults must have found requests in flight and moved some: otherwise nothing was checked.
grep -q "soak: PASS" "$tmp/out.txt"
resumed=$(sed -n 's/.*router: resumed \([0-9]*\).*/\1/p' "$tmp/out.txt")
if [ -z "$resumed" ] || [ "$resumed" -lt 1 ]; then
  echo "soak.sh: no request was resumed; the faults found nothing in flight"
  exit 1
fi
if grep -q " 0 in flight)" "$tmp/out.txt"; then
  echo "soak.sh: a fault fired with no request in flight"
  exit 1
fi
if [ "${LF_SOAK_SECURE:-0}" = 1 ]; then
  echo "soak.sh: passed with API keys and HTTPS on ($resumed resumed)"
else
  echo "soak.sh: passed ($resumed resumed)"
fi
