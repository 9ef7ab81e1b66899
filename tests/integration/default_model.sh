#!/bin/bash
# The committed default model: it loads, its greedy continuation of a fixed prompt is stable
# (golden text, recorded when the model was committed), and each committed style adapter changes
# the output; int8 weights keep the golden text. Usage: default_model.sh LORAFLEET_BINARY SOURCE_DIR
set -euo pipefail
bin=$1; src=$2
gen() { "$bin" generate --model "$src/models/default" --prompt "ROMEO:" --temperature 0 \
          --max-tokens 16 --threads 1 "$@" 2>/dev/null; }
base=$(gen)
golden=$'ROMEO:\nAnd thou shalt thou shalt be a sweet savour, and thyself,'
if [ "$base" != "$golden" ]; then
  printf 'default model: greedy output changed\n  got:      %q\n  expected: %q\n' "$base" "$golden"
  exit 1
fi
# int8 weights (per-column scales) keep this greedy text: measured identical when added.
int8=$(gen --dtype int8)
if [ "$int8" != "$golden" ]; then
  printf 'default model in int8: greedy output differs from f32\n  got:      %q\n  expected: %q\n' "$int8" "$golden"
  exit 1
fi
for a in shakespeare bible fortunes; do
  out=$(gen --adapter "$src/models/adapters/$a")
  [ "$out" != "$base" ] || { echo "adapter $a does not change the output"; exit 1; }
  printf '%s: %q\n' "$a" "$out"
done
echo "default model and adapters: ok"
