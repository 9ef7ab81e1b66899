#!/bin/bash
# A short real load test against an in-process cluster on a tiny model: it must finish, account
# for every request (exit code 0 means none lost), and write valid JSON, CSV and SVG.
# Usage: loadtest_selfhost.sh LORAFLEET_BINARY
set -euo pipefail
bin=$1
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$bin" make-model --out "$tmp/model" --layers 2 --heads 4 --embd 64 --context 256 --seed 1 > /dev/null
"$bin" loadtest --self-host --model "$tmp/model" --workers 2 --threads 1 --kv-cache-mb 32 \
  --requests 24 --sweep-concurrency 1,4,8 --input 16-48 --output 8-24 --quiet --out "$tmp/sweep"
"$bin" loadtest --self-host --model "$tmp/model" --workers 1 --threads 1 --kv-cache-mb 32 \
  --requests 30 --arrival poisson --rate 30 --input 32 --output 16 --goodput-ttft-ms 5000 \
  --quiet --out "$tmp/one"
# An adapter mix against a self-hosted cluster: --adapters is the mix, --adapter-dir the server's.
for a in a b; do
  "$bin" make-adapter --base "$tmp/model" --out "$tmp/adapters/$a" --rank 4 --seed 3 > /dev/null
done
"$bin" loadtest --self-host --model "$tmp/model" --adapter-dir "$tmp/adapters" --workers 1 --threads 1 \
  --kv-cache-mb 32 --requests 8 --concurrency 4 --input 16 --output 8 --adapters a,b --quiet --out "$tmp/mix"
# The multi-turn chat workload (each turn resends the history), over ZeroMQ and over the OpenAI
# HTTP gateway (/v1/chat/completions), cache-aware placement: follow-ups are served from the cache.
for via in zmq http; do
  "$bin" loadtest --self-host --via $via --model "$tmp/model" --workers 2 --threads 1 --kv-cache-mb 32 \
    --policy cache_aware --workload chat --conversations 6 --turns 3 --group-size 3 --system 32 --user 8 \
    --output 8 --rate 20 --think-s 0.05 --goodput-ttft-ms 5000 --quiet --out "$tmp/chat-$via"
done
/usr/bin/python3 - "$tmp" <<'PY'
import csv, json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
sweep = json.load(open(f"{d}/sweep.json"))
assert [p["x"] for p in sweep["points"]] == [1, 4, 8], sweep
assert "--sweep-concurrency 1,4,8" in sweep["command"] and sweep["started_utc"].endswith("Z"), sweep
for p in sweep["points"]:
    assert p["sent"] == 24 and p["completed"] == 24 and p["lost"] == 0, p
    # synthetic prompts are unique, also across sweep points: nothing comes from the prefix cache
    assert p["cached_input_tokens"] == 0 and p["input_tokens"] >= 24 * 16, p
    assert p["output_tokens_per_s"] > 0 and p["tpot_ms"]["p99"] >= p["tpot_ms"]["p50"] > 0, p
mix = json.load(open(f"{d}/mix.json"))
assert mix["adapters"] == ["a", "b"] and mix["points"][0]["completed"] == 8, mix
one = json.load(open(f"{d}/one.json"))["points"][0]
assert one["completed"] == 30 and one["lost"] == 0 and one["good"] == 30, one
rows = list(csv.DictReader(open(f"{d}/one.csv")))
assert len(rows) == 30 and all(r["status"] == "done" and int(r["tokens_out"]) == 16 for r in rows), rows[:2]
for f in ("sweep.svg", "one.svg"):
    root = ET.parse(f"{d}/{f}").getroot()
    assert root.tag.endswith("svg"), root.tag
for via in ("zmq", "http"):
    c = json.load(open(f"{d}/chat-{via}.json"))
    assert c["workload"] == "chat" and c["endpoint"].startswith("http://" if via == "http" else "tcp://"), c
    assert c["sent"] == 18 and c["completed"] == 18 and c["lost"] == 0 and c["refused"] == 0, c
    assert c["conversations_finished"] == 6 and c["conversations_cut"] == 0, c
    # turns 2 and 3 resend their history: some of it comes from the prefix cache
    assert c["cached_input_tokens"] > 0 and c["computed_tokens"] > 0, c
    assert c["cached_input_tokens"] + c["computed_tokens"] == c["input_tokens"], c
print("loadtest outputs: ok")
PY
