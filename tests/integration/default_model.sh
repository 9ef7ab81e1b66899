#!/bin/bash
# The committed default model: it loads, its greedy continuation of a fixed prompt is stable
# (golden text, recorded when the model was committed, in f32), every weight and K/V type of the
# serving engine keeps it, so does the recompute baseline (no KV cache), and each committed style adapter
# changes the output. Usage: default_model.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
gen() { "$bin" generate --model "$src/models/default" --prompt "ROMEO:" --temperature 0 \
          --max-tokens 16 --threads 1 "$@" 2>/dev/null; }
golden=$'ROMEO:\nAnd thou shalt thou shalt be a sweet savour, and thyself,'
check() {  # check DESCRIPTION FLAGS...
  local what=$1; shift
  local out; out=$(gen "$@")
  if [ "$out" != "$golden" ]; then
    printf 'default model, %s: greedy output differs from the golden text\n  got:      %q\n  expected: %q\n' \
      "$what" "$out" "$golden"
    exit 1
  fi
}
for d in f32 bf16 int8; do
  for kv in f32 bf16 int8; do
    check "$d weights, $kv K/V" --dtype $d --kv-dtype $kv
  done
done
for d in f32 int8; do
  check "$d weights without a KV cache" --dtype $d --no-kv-cache
done
base=$(gen)
for a in shakespeare bible fortunes; do
  out=$(gen --adapter "$src/models/adapters/$a")
  [ "$out" != "$base" ] || { echo "adapter $a does not change the output"; exit 1; }
  printf '%s: %q\n' "$a" "$out"
done
echo "default model and adapters: ok"
