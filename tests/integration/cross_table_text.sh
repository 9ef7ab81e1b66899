#!/bin/bash
# One answer on every CPU: the same requests through every kernel table this CPU runs (LF_ISA)
# give the same text, token for token: greedy and seeded sampling, f32 / bf16 / int8 / int4 weights,
# bf16 and int8 K/V, with and without an adapter, 64 tokens each,
# ten prompts served together (continuous batching: rows of different lengths in one step).
# Usage: cross_table_text.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
tables=$( (LF_ISA=none-such "$bin" generate --prompt x --max-tokens 1 2>&1 || true) | sed -n 's/.*this CPU runs: \([a-z0-9_ ]*\) (.*/\1/p')
[ -n "$tables" ] || { echo "could not read the runnable tables from the LF_ISA refusal"; exit 1; }
echo "tables: $tables"
prompts=(--prompt "ROMEO:" --prompt "The meaning of life is" --prompt "Once upon a time there was"
         --prompt "To be or not to be, that is" --prompt "In the beginning" --prompt "The king said to his son"
         --prompt "It was a dark and stormy night; the rain fell in torrents" --prompt "Science is"
         --prompt "My favourite food is" --prompt "Tomorrow we will")
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
cases=0
run() {  # run NAME FLAGS...: every table, compared with the first
  local name=$1; shift
  local first=""
  for t in $tables; do
    LF_ISA=$t "$bin" generate --model "$src/models/default" "${prompts[@]}" --max-tokens 64 --threads 2 --quiet \
      "$@" 2>/dev/null > "$work/$t.txt"
    if [ -z "$first" ]; then
      first=$t
    elif ! cmp -s "$work/$first.txt" "$work/$t.txt"; then
      echo "FAIL $name: $t differs from $first"
      diff "$work/$first.txt" "$work/$t.txt" | head -8
      exit 1
    fi
  done
  [ -s "$work/$first.txt" ] || { echo "FAIL $name: no output"; exit 1; }
  cases=$((cases + 1))
}
for d in int8 int4 bf16 f32; do
  for kv in bf16 int8; do
    run "$d weights, $kv K/V, greedy" --dtype $d --kv-dtype $kv --temperature 0
    run "$d weights, $kv K/V, seeded" --dtype $d --kv-dtype $kv --temperature 0.9 --top-p 0.95 --seed 7
  done
  run "$d weights, shakespeare adapter, greedy" --dtype $d --temperature 0 --adapter "$src/models/adapters/shakespeare"
  run "$d weights, shakespeare adapter, seeded" --dtype $d --temperature 0.8 --seed 3 \
    --adapter "$src/models/adapters/shakespeare"
done
echo "ok: $cases cases, the same text in every table ($tables)"
