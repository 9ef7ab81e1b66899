#!/bin/bash
# The dashboard (GET / of `lorafleet serve --http`) rendered by headless Chromium.
# Usage: dashboard_chromium.sh LORAFLEET_BINARY [OUT_PNG]
#
# Serves a tiny model with 2 workers and 2 adapters over HTTP and runs ~8 concurrent streaming
# clients for DASHBOARD_LOAD_S seconds (default 12; a few of their requests time out, name an unknown
# adapter or disconnect early, so those counters move too). Under load: the page renders (body
# data-updates >= 2, 2 worker rows, status "ok"); with OUT_PNG, a 1280x900 screenshot is taken
# while the load still runs (the page is held open in real time, see below). When the load has
# stopped and the server is idle: every element with a data-metric attribute equals the Prometheus
# metric of that name on /metrics (all series summed; with data-worker, only the series with that
# worker_id), and each data-field="finished" cell equals lorafleet:request_success_total of its worker.
# Chromium (Debian's `chromium`) is required: without it this test fails (./setup.sh test installs it).
set -euo pipefail
bin=$1; out_png=${2:-}
load_s=${DASHBOARD_LOAD_S:-12}
chrome=$(command -v chromium || command -v chromium-browser || command -v google-chrome || true)
[ -n "$chrome" ] || { echo "dashboard_chromium: chromium is not installed: run ./setup.sh test (apt-get install chromium)"; exit 1; }
source "$(dirname "$0")/lib.sh"

tmp=$(mktemp -d)
pid=; loaders=(); holder=
cleanup() {
  for p in "${loaders[@]}" $holder $pid; do kill "$p" 2> /dev/null || true; done
  rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
  echo "not ok $((passed + 1)) - $1"
  echo "--- server log (tail)"; tail -20 "$tmp/serve.log" || true
  echo "--- chromium stderr (tail, without dbus noise)"; grep -v -e dbus -e 'unexpected operator' "$tmp/chrome.err" 2> /dev/null | tail -10 || true
  echo "$passed passed, 1 failed"
  exit 1
}
now_ms() { echo $(( $(date +%s%N) / 1000000 )); }
runs=0
chrome_run() {  # chrome_run ARGS... URL: headless Chromium with a fresh profile; stderr (dbus/GPU noise) to a file
  runs=$((runs + 1))
  timeout 90 "$chrome" --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --disable-extensions --user-data-dir="$tmp/profile$runs" --window-size=1280,900 "$@" 2>> "$tmp/chrome.err"
}

serve_tiny 512 32 pirate:3 poet:4
H=http://127.0.0.1:$hport
echo "# serving on $H; chromium: $("$chrome" --version 2> /dev/null | tail -1)"

# ---- load --------------------------------------------------------------------------------------
load_end=$(( $(now_ms) + load_s * 1000 ))
load_loop() {  # load_loop K: one client, streaming requests back to back until load_end
  local k=$1 i=0 models=(tiny-gpt2 pirate poet) m mt body extra
  local prompts=("Once upon a time" "The harbour at dawn was quiet, and the ships" "Write a short poem about the sea")
  # a shared prefix longer than two KV blocks: the prefix cache has something to hit
  local sys="You are the demo assistant of a small LoRA serving cluster. Answer briefly and politely, in plain English, without lists, tables or code, and keep every answer under one paragraph."
  sleep "0.$((k * 12))"   # the clients start one after another
  while [ "$(now_ms)" -lt "$load_end" ]; do
    i=$((i + 1))
    m=${models[$(( (k + i) % 3 ))]}
    mt=$(( 24 + (k * 37 + i * 53) % 200 ))
    extra=(--max-time 20)
    if [ $k = 0 ] && [ $((i % 6)) = 0 ]; then
      body="{\"model\":\"$m\",\"prompt\":\"Hi\",\"max_tokens\":300,\"ignore_eos\":true,\"deadline_ms\":1,\"stream\":true}"  # times out
    elif [ $k = 1 ] && [ $((i % 9)) = 0 ]; then
      body='{"model":"no-such-adapter","prompt":"Hi","max_tokens":8}'  # 404, counted as failed
    elif [ $k = 2 ] && [ $((i % 5)) = 0 ]; then
      body="{\"model\":\"$m\",\"prompt\":\"Hi\",\"max_tokens\":480,\"ignore_eos\":true,\"stream\":true}"
      extra=(--max-time 0.05)  # disconnects early: cancelled
    elif [ $((i % 2)) = 0 ]; then
      body="{\"model\":\"$m\",\"messages\":[{\"role\":\"system\",\"content\":\"$sys\"},{\"role\":\"user\",\"content\":\"${prompts[$((i % 3))]}\"}],\"max_tokens\":$mt,\"ignore_eos\":true,\"stream\":true,\"temperature\":0.8}"
      curl -sN "${extra[@]}" -H 'Content-Type: application/json' -d "$body" "$H/v1/chat/completions" -o /dev/null || true
      continue
    else
      body="{\"model\":\"$m\",\"prompt\":\"$sys ${prompts[$((i % 3))]}\",\"max_tokens\":$mt,\"ignore_eos\":true,\"stream\":true,\"temperature\":0.8}"
    fi
    curl -sN "${extra[@]}" -H 'Content-Type: application/json' -d "$body" "$H/v1/completions" -o /dev/null || true
  done
}
for k in $(seq 0 7); do load_loop "$k" & loaders+=($!); done

# ---- under load: the page renders and polls ------------------------------------------------------
sleep 2
chrome_run --virtual-time-budget=5000 --dump-dom "$H/" > "$tmp/dom_load.html" || fail "chromium --dump-dom ran"
# check_dom FILE 'python condition over: body (dict of <body> attributes), metric(name[, worker]) -> str,
#   rows (worker row ids), upd (class of #upd), fields {(data-field, worker): text}'
check_dom() {
  "$py" - "$1" "$2" << 'EOF'
import sys
from html.parser import HTMLParser
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.stack = []; self.metrics = {}; self.fields = {}; self.body = {}; self.rows = []; self.upd = None; self.cur = []
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body": self.body = a
        if tag in VOID: return
        if a.get("id") == "upd": self.upd = a.get("class")
        if "data-worker-row" in a: self.rows.append(a["data-worker-row"])
        key = None
        if "data-metric" in a: key = ("m", a["data-metric"], a.get("data-worker"))
        elif "data-field" in a: key = ("f", a["data-field"], a.get("data-worker"))
        self.stack.append(tag); self.cur.append([key, ""])
    def handle_endtag(self, tag):
        if tag in VOID or not self.stack: return
        self.stack.pop(); key, text = self.cur.pop()
        if self.cur: self.cur[-1][1] += text
        if key:
            (self.metrics if key[0] == "m" else self.fields)[(key[1], key[2])] = text.strip()
    def handle_data(self, d):
        if self.cur: self.cur[-1][1] += d
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
body, rows, upd, fields = p.body, p.rows, p.upd, p.fields
def metric(name, worker=None): return p.metrics.get((name, worker))
ok = eval(sys.argv[2])
if not ok:
    print("DOM check failed:", sys.argv[2]); print("body", body, "rows", rows, "upd", upd)
    for k, v in sorted(p.metrics.items(), key=str): print("  ", k, v)
sys.exit(0 if ok else 1)
EOF
}
check_dom "$tmp/dom_load.html" 'int(body.get("data-updates", 0)) >= 2' || fail "under load: body data-updates >= 2"
ok "under load: the page polled api/stats ($(grep -o 'data-updates="[0-9]*"' "$tmp/dom_load.html"))"
check_dom "$tmp/dom_load.html" 'upd == "ok" and sorted(rows) == ["1", "2"] and metric("lorafleet:workers") == "2" and fields.get(("model", None)) == "tiny-gpt2"' \
  || fail "under load: status ok, 2 worker rows, workers 2, the model name"
ok "under load: status ok, model tiny-gpt2, 2 workers, 2 worker rows"
check_dom "$tmp/dom_load.html" 'int(metric("lorafleet:requests_accepted_total")) > 0 and int(metric("lorafleet:generation_tokens_total")) > 0' \
  || fail "under load: accepted and generated token counters are positive"
ok "under load: accepted $(grep -o 'lorafleet:requests_accepted_total">[0-9]*' "$tmp/dom_load.html" | cut -d'>' -f2), counters moving"

# ---- the screenshot, under load -----------------------------------------------------------------
# --virtual-time-budget fast-forwards the page's timers, so its charts would get all their samples
# within a fraction of a second. For the screenshot the page runs in real time instead: it sits in
# an iframe of a local wrapper page whose load event is held back by an image from a socket that
# never answers; --timeout stops the load after T ms and the screenshot is taken then.
if [ -n "$out_png" ]; then
  hold_port=$(free_port)
  "$py" -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(64)
time.sleep(300)' "$hold_port" &
  holder=$!
  cat > "$tmp/wrap.html" << EOF
<!DOCTYPE html><html><head><meta charset="utf-8"><style>
html, body { margin: 0; height: 100%; overflow: hidden; background: #0e1217; }
iframe { position: fixed; inset: 0; width: 100%; height: 100%; border: 0; }
</style></head><body><iframe src="$H/"></iframe>
<img src="http://127.0.0.1:$hold_port/hold.png" width="1" height="1" style="position: fixed; left: -10px;" alt=""></body></html>
EOF
  hold_ms=$(( load_end - $(now_ms) - 1500 ))
  [ $hold_ms -ge 3000 ] || hold_ms=3000
  rm -f "$out_png"
  chrome_run --timeout=$hold_ms --screenshot="$out_png" "file://$tmp/wrap.html" > /dev/null || fail "chromium --screenshot ran"
  kill $holder 2> /dev/null || true; holder=
  "$py" - "$out_png" << 'EOF' || fail "the screenshot is a 1280x900 PNG"
import struct, sys
d = open(sys.argv[1], "rb").read(32)
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
w, h = struct.unpack(">II", d[16:24])
assert (w, h) == (1280, 900), (w, h)
EOF
  [ "$(now_ms)" -lt "$load_end" ] || echo "# note: the load ended before the screenshot was taken"
  ok "screenshot under load: $out_png (1280x900, $(( hold_ms / 1000 )) s of page time)"
fi

# ---- idle: the page's numbers equal /metrics -------------------------------------------------------
for p in "${loaders[@]}"; do wait "$p" || true; done
loaders=()
idle=0
for _ in $(seq 1 100); do
  curl -s "$H/metrics" > "$tmp/m_idle" || fail "GET /metrics after the load (curl exit $?)"
  if awk '/^lorafleet:(num_requests_inflight|num_requests_queued|num_requests_running|num_requests_waiting|http_requests_live)[ {]/ { s += $NF } END { exit s == 0 ? 0 : 1 }' "$tmp/m_idle"; then
    idle=1; break
  fi
  sleep 0.1
done
[ $idle = 1 ] || fail "the server went idle after the load"
ok "load stopped; the server is idle"

compare() {  # compare DOM METRICS_BEFORE METRICS_AFTER
  "$py" - "$@" << 'EOF'
import re, sys, collections
from html.parser import HTMLParser
VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
class P(HTMLParser):
    def __init__(self):
        super().__init__(); self.cur = []; self.items = []; self.body = {}
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "body": self.body = a
        if tag in VOID: return
        k = None
        if "data-metric" in a: k = ("metric", a["data-metric"], a.get("data-worker"))
        elif a.get("data-field") == "finished": k = ("finished", "lorafleet:request_success_total", a.get("data-worker"))
        self.cur.append([k, ""])
    def handle_endtag(self, tag):
        if tag in VOID or not self.cur: return
        k, t = self.cur.pop()
        if self.cur: self.cur[-1][1] += t
        if k: self.items.append((k, t.strip()))
    def handle_data(self, d):
        if self.cur: self.cur[-1][1] += d
p = P(); p.feed(open(sys.argv[1], encoding="utf-8").read())
def parse(path):
    tot, byw, types = collections.defaultdict(float), collections.defaultdict(float), set()
    for line in open(path):
        if line.startswith("# TYPE "): types.add(line.split()[2]); continue
        if not line.strip() or line.startswith("#"): continue
        m = re.match(r'^([^{ ]+)(\{[^}]*\})? (\S+)$', line.strip())
        name, labels, v = m.group(1), m.group(2) or "", float(m.group(3))
        tot[name] += v
        w = re.search(r'worker_id="([^"]*)"', labels)
        if w: byw[(name, w.group(1))] += v
    return tot, byw, types
before, after = parse(sys.argv[2]), parse(sys.argv[3])
names = {k[1] for k, _ in p.items}
changed = [n for n in names if before[0].get(n) != after[0].get(n)]
if changed:
    print("metrics moved while the page was read:", changed); sys.exit(3)
tot, byw, types = after
bad, n = [], 0
assert int(p.body.get("data-updates", 0)) >= 2, "data-updates %r" % p.body.get("data-updates")
for (kind, name, worker), text in p.items:
    n += 1
    if name not in types: bad.append("%s: no such metric on /metrics" % name); continue
    want = tot.get(name) if worker is None else byw.get((name, worker))
    if want is None: bad.append("%s worker %s: no series on /metrics" % (name, worker)); continue
    if not re.fullmatch(r"-?[0-9]+", text): bad.append("%s%s: page shows %r, not an integer" % (name, "" if worker is None else "{worker_id=%s}" % worker, text)); continue
    if int(text) != round(want):
        bad.append("%s%s (%s): page %s, /metrics %s" % (name, "" if worker is None else "{worker_id=%s}" % worker, kind, text, want))
workers = sorted({w for (_, _, w), _ in p.items if w is not None})
assert workers == ["1", "2"], "workers on the page: %r" % workers
assert n >= 12 + 7 * 2, "only %d data-metric elements" % n
for b in bad: print("  MISMATCH", b)
print("# compared %d values (%d names, workers %s)" % (n, len(names), ",".join(workers)))
sys.exit(1 if bad else 0)
EOF
}
cmp_ok=0
for attempt in 1 2 3; do
  curl -s "$H/metrics" > "$tmp/m_before" || fail "GET /metrics (curl exit $?)"
  chrome_run --virtual-time-budget=3000 --dump-dom "$H/" > "$tmp/dom_idle.html" || fail "chromium --dump-dom ran (idle)"
  curl -s "$H/metrics" > "$tmp/m_after" || fail "GET /metrics (curl exit $?)"
  rc=0; compare "$tmp/dom_idle.html" "$tmp/m_before" "$tmp/m_after" > "$tmp/compare.out" || rc=$?
  [ $rc = 3 ] && { cat "$tmp/compare.out"; continue; }   # not idle after all: read again
  cmp_ok=$([ $rc = 0 ] && echo 1 || echo 0); break
done
cat "$tmp/compare.out"
[ $cmp_ok = 1 ] || fail "idle: every data-metric value on the page equals /metrics"
ok "idle: every data-metric value (totals, header gauges, per-worker cells) and finished cell equals /metrics"
grep -q 'lorafleet:requests_cancelled_total">[1-9]' "$tmp/dom_idle.html" && echo "# (the load's early disconnects show as cancelled)" || true
kill -TERM $pid
wait $pid || fail "the server exited cleanly"
pid=
ok "the server exited cleanly"
echo "$passed passed, 0 failed"
