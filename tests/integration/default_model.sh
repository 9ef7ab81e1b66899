#!/bin/bash
# The committed default model: it loads, its greedy continuation of a fixed prompt is stable
# (golden text, recorded when the model was committed), and each committed style adapter changes
# the output. Usage: default_model.sh LORAFLEET_BINARY SOURCE_DIR
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
for a in shakespeare bible fortunes; do
  out=$(gen --adapter "$src/models/adapters/$a")
  [ "$out" != "$base" ] || { echo "adapter $a does not change the output"; exit 1; }
  printf '%s: %q\n' "$a" "$out"
done
echo "default model and adapters: ok"
