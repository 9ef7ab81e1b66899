#!/bin/bash
# Structured output through the CLI: `lorafleet client` (the C++ client over ZeroMQ + msgpack)
# with --json-object, --json-schema, --regex, --choice and --grammar against `lorafleet serve` on
# the default model and one of its adapters, greedy and sampled; every answer must parse and match
# its constraint. Bad constraints and two constraint flags at once are refused with a clear error
# and the server goes on serving. Usage: cli_structured.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
tmp=$(mktemp -d); pid=
trap '[ -n "$pid" ] && kill $pid 2>/dev/null; rm -rf "$tmp"' EXIT
port=$((20000 + RANDOM % 20000))
ep="tcp://127.0.0.1:$port"
"$bin" serve --model "$src/models/default" --adapters "$src/models/adapters" --workers 1 --threads 1 \
  --kv-cache-mb 32 --listen "$ep" --ready-file "$tmp/ready" > "$tmp/serve.log" 2>&1 &
pid=$!
for _ in $(seq 1 120); do [ -s "$tmp/ready" ] && break; sleep 0.5; done
[ -s "$tmp/ready" ] || { cat "$tmp/serve.log"; echo "server did not start"; exit 1; }

ask() {  # ask OUTFILE FLAGS...: one request; its text in OUTFILE, its finish reason in OUTFILE.why
  local out=$1; shift
  "$bin" client --endpoint "$ep" --timeout 60 --max-tokens 200 "$@" > "$out" 2> "$out.err" || {
    echo "client failed: $*"; cat "$out.err"; return 1; }
  sed -n 's/^\[\([a-z_]*\);.*/\1/p' "$out.err" > "$out.why"
  grep -qxE 'eos|stop|length' "$out.why" || { echo "no finish reason for: $*"; cat "$out.err"; return 1; }
}
stopped() {  # stopped OUTFILE: the answer ended because its constraint was complete
  grep -qxE 'eos|stop' "$1.why" || fail "finished by $(cat "$1.why"), not its constraint: $(head -c 300 "$1")"
}
fail() { echo "FAIL: $*"; exit 1; }

schema='{"type":"object","properties":{"name":{"type":"string","maxLength":12},
 "mood":{"enum":["happy","sad","angry"]},"age":{"type":"integer"},
 "tags":{"type":"array","items":{"type":"string","maxLength":8},"maxItems":3}},
 "required":["name","mood","age","tags"],"additionalProperties":false}'
n=0; stops=0
for adapter in "" shakespeare; do
  for sampling in "--temperature 0" "--temperature 0.9 --seed 7"; do
    a=(${adapter:+--adapter "$adapter"})
    # shellcheck disable=SC2086
    ask "$tmp/obj" --prompt "A JSON object about a knight:" --json-object $sampling "${a[@]}"
    # Any JSON value; its strings are unbounded, so it may reach max_tokens (finish_reason length,
    # incomplete text, as OpenAI's). When it stops, it parses.
    if grep -qxE 'eos|stop' "$tmp/obj.why"; then
      /usr/bin/python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$tmp/obj" \
        || fail "--json-object $sampling ${adapter}: $(cat "$tmp/obj")"
      stops=$((stops + 1))
    fi
    # shellcheck disable=SC2086
    ask "$tmp/sch" --prompt "ROMEO:" --json-schema "$schema" $sampling "${a[@]}"
    stopped "$tmp/sch"  # every string, array and number of the schema is bounded
    /usr/bin/python3 - "$tmp/sch" <<'EOF' || fail "--json-schema $sampling $adapter: $(cat "$tmp/sch")"
import json, sys
v = json.load(open(sys.argv[1]))
assert set(v) == {"name", "mood", "age", "tags"}, v
assert isinstance(v["name"], str) and len(v["name"]) <= 12, v
assert v["mood"] in ("happy", "sad", "angry"), v
assert isinstance(v["age"], int) and not isinstance(v["age"], bool), v
assert isinstance(v["tags"], list) and len(v["tags"]) <= 3 and all(isinstance(t, str) and len(t) <= 8 for t in v["tags"]), v
EOF
    # shellcheck disable=SC2086
    ask "$tmp/re" --prompt "Call me at" --regex '\([0-9]{3}\) [0-9]{3}-[0-9]{4}' $sampling "${a[@]}"
    stopped "$tmp/re"
    grep -qxE '\([0-9]{3}\) [0-9]{3}-[0-9]{4}' "$tmp/re" || fail "--regex $sampling $adapter: $(cat "$tmp/re")"
    # shellcheck disable=SC2086
    ask "$tmp/ch" --prompt "Is the sky green? Answer:" --choice '["yes","no","perhaps"]' $sampling "${a[@]}"
    stopped "$tmp/ch"
    grep -qxE 'yes|no|perhaps' "$tmp/ch" || fail "--choice $sampling $adapter: $(cat "$tmp/ch")"
    # shellcheck disable=SC2086
    ask "$tmp/gr" --prompt "Some arithmetic:" --grammar 'root ::= num (" + " num){0,3} " = ?"
num ::= [1-9] [0-9]?' $sampling "${a[@]}"
    stopped "$tmp/gr"
    grep -qxE '[1-9][0-9]?( \+ [1-9][0-9]?){0,3} = \?' "$tmp/gr" || fail "--grammar $sampling $adapter: $(cat "$tmp/gr")"
    n=$((n + 4))
  done
done
echo "$n bounded constrained answers stopped, parsed and matched; $stops of 4 json_object answers stopped and parsed"

refused() {  # refused PATTERN FLAGS...: the client exits non-zero and says PATTERN
  local want=$1; shift
  if "$bin" client --endpoint "$ep" --timeout 30 --prompt "x" "$@" > "$tmp/bad" 2>&1; then
    fail "accepted: $*"
  fi
  grep -qi -- "$want" "$tmp/bad" || { cat "$tmp/bad"; fail "no '$want' in the error for: $*"; }
  echo "refused as expected: $(grep -m1 -i error "$tmp/bad")"
}
refused "schema" --json-schema '{"type":"object","properties":{"a":{"type":"strnig"}}}'
refused "json" --json-schema '{"type":'
refused "regex" --regex '(ab'
refused "choice" --choice '[]'
refused "undefined rule" --grammar 'root ::= missing'
refused "at most one" --regex 'a' --choice '["a"]'
# The server still serves after the refusals.
ask "$tmp/after" --prompt "Still there?" --choice '["yes","no"]' --temperature 0
grep -qxE 'yes|no' "$tmp/after" || fail "after the refusals: $(cat "$tmp/after")"
kill -TERM $pid
wait $pid
pid=
echo "cli structured output: ok"
