#!/bin/bash
# One answer on every CPU, for what runs only in a server: speculative decoding (the worker's
# policy on, n-gram proposals, 4 tokens) and structured output (a JSON schema, a regex, a choice),
# greedy and seeded, base model and adapter. Each kernel table this CPU runs (LF_ISA) serves the
# same requests; every answer must be the same text, and speculation must have verified proposals.
# Usage: cross_table_serve.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
tables=$( (LF_ISA=none-such "$bin" generate --prompt x --max-tokens 1 2>&1 || true) | sed -n 's/.*this CPU runs: \([a-z0-9_ ]*\) (.*/\1/p')
[ -n "$tables" ] || { echo "could not read the runnable tables from the LF_ISA refusal"; exit 1; }
echo "tables: $tables"
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
metric() {  # metric NAME FILE: the value of lorafleet:spec_decode_num_NAME_total in a /metrics dump
  sed -n "s/^lorafleet:spec_decode_num_$1_total{[^}]*} \([0-9]*\).*/\1/p" "$2"
}
fail() { echo "FAIL: $*"; [ -f "$tmp/serve.log" ] && tail -20 "$tmp/serve.log"; exit 1; }
schema='{"type":"object","properties":{"name":{"type":"string","maxLength":12},"age":{"type":"integer"}},"required":["name","age"],"additionalProperties":false}'
loop="one two three four, one two three four, one two three four, one two"
requests=(
  "--prompt|$loop|--temperature|0"
  "--prompt|$loop|--temperature|0.8|--seed|11"
  "--prompt|ROMEO:|--temperature|0|--adapter|shakespeare"
  "--prompt|The meaning of life is|--temperature|0.9|--top-p|0.95|--seed|5|--adapter|shakespeare"
  "--prompt|A person as JSON:|--temperature|0|--json-schema|$schema"
  "--prompt|The year was|--temperature|0.7|--seed|3|--regex|[0-9]{4}, in [A-Z][a-z]+"
  "--user|Pick a colour|--temperature|0|--choice|[\"red\",\"green\",\"blue\"]"
)
first=""
for t in $tables; do
  ep="tcp://127.0.0.1:$(free_port)"; hport=$(free_port)
  rm -f "$tmp/ready"
  LF_ISA=$t "$bin" serve --model "$src/models/default" --adapters "$src/models/adapters" --workers 1 --threads 1 \
    --kv-cache-mb 32 --speculation on --speculative-tokens 4 --listen "$ep" --http "127.0.0.1:$hport" \
    --ready-file "$tmp/ready" \
    > "$tmp/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 1 120); do [ -s "$tmp/ready" ] && break; sleep 0.5; done
  [ -s "$tmp/ready" ] || fail "serve on $t did not start"
  : > "$tmp/$t.txt"
  for r in "${requests[@]}"; do
    IFS='|' read -r -a flags <<< "$r"
    "$bin" client --endpoint "$ep" --timeout 120 --max-tokens 48 "${flags[@]}" >> "$tmp/$t.txt" 2> "$tmp/client.err" \
      || { cat "$tmp/client.err"; fail "a request on $t failed: $r"; }
    printf '\n--\n' >> "$tmp/$t.txt"
  done
  # The worker's counters reach /metrics with its next load report.
  verified=0
  for _ in $(seq 1 50); do
    curl -s "http://127.0.0.1:$hport/metrics" > "$tmp/$t.metrics" || fail "no /metrics on $t"
    verified=$(metric verifications "$tmp/$t.metrics"); accepted=$(metric accepted_tokens "$tmp/$t.metrics")
    [ "${verified:-0}" -gt 0 ] && break
    sleep 0.1
  done
  [ "${verified:-0}" -gt 0 ] || fail "no speculative verification on $t"
  echo "$t: $verified verifications, $accepted proposed tokens accepted"
  kill "$pid"; wait "$pid" 2>/dev/null || true; pid=
  if [ -z "$first" ]; then
    first=$t
  elif ! cmp -s "$tmp/$first.txt" "$tmp/$t.txt"; then
    echo "FAIL: $t differs from $first"; diff "$tmp/$first.txt" "$tmp/$t.txt" | head -12; exit 1
  fi
done
grep -q '"' "$tmp/$first.txt" || fail "the JSON answer is missing: $(head -c 400 "$tmp/$first.txt")"
echo "ok: ${#requests[@]} requests (speculative, constrained, adapter, greedy and seeded), the same text in every table ($tables)"
