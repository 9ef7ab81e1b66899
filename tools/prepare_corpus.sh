#!/usr/bin/env bash
# Regenerates the training corpora of the default model (docs/training.md) into build/corpus/:
#
#   shakespeare.txt  Tiny Shakespeare (karpathy/char-rnn's input.txt), public domain
#   bible.txt        King James Version from Debian's bible-kjv: one verse per line, a blank line
#                    between chapters, verse references stripped
#   fortunes.txt     Debian's fortunes (the non-offensive set), one fortune per document,
#                    documents separated by GPT-2's <|endoftext|>; ascii-art is left out
#
# usage: tools/prepare_corpus.sh [OUT_DIR] [SHAKESPEARE_TXT]
#   OUT_DIR          default build/corpus
#   SHAKESPEARE_TXT  default $LF_SHAKESPEARE, else /work/shared/data/corpora/tinyshakespeare.txt
# Needs: apt-get install -y fortunes bible-kjv
set -euo pipefail

out=${1:-build/corpus}
shakespeare=${2:-${LF_SHAKESPEARE:-/work/shared/data/corpora/tinyshakespeare.txt}}
fortune_dir=/usr/share/games/fortunes

mkdir -p "$out"

if [[ ! -f $shakespeare ]]; then
  echo "prepare_corpus: $shakespeare not found (Tiny Shakespeare: data/tinyshakespeare/input.txt" \
       "of github.com/karpathy/char-rnn); pass its path as the second argument" >&2
  exit 1
fi
cp "$shakespeare" "$out/shakespeare.txt"

if ! command -v bible >/dev/null; then
  echo "prepare_corpus: the 'bible' program is missing: apt-get install -y bible-kjv" >&2
  exit 1
fi
# `bible -f` turns pretty-printing off: one "Ge1:1 text" line per verse. Strip the reference and
# start a new paragraph at every chapter.
bible -f Gen1:1-Rev22:21 </dev/null | awk '
  {
    ref = $1; sub(/^[^ ]+ /, "");
    split(ref, parts, ":"); chapter = parts[1];
    if (NR > 1 && chapter != last) print "";
    last = chapter; print
  }' > "$out/bible.txt"

if [[ ! -d $fortune_dir ]]; then
  echo "prepare_corpus: $fortune_dir is missing: apt-get install -y fortunes" >&2
  exit 1
fi
# Fortune files separate entries with a line holding only "%". Sorted file order keeps the
# output reproducible.
for f in $(ls "$fortune_dir" | grep -v -E '\.(dat|u8)$' | grep -v -x 'ascii-art' | sort); do
  awk '
    /^%$/ { if (n > 0) { printf "%s<|endoftext|>", body } body = ""; n = 0; next }
    { body = body $0 "\n"; n++ }
    END { if (n > 0) printf "%s<|endoftext|>", body }' "$fortune_dir/$f"
done | sed -e 's/_*\x08\+//g' > "$out/fortunes.txt"   # drop typewriter underlining (___ BS)

for f in shakespeare bible fortunes; do
  printf '%-12s %9d bytes\n' "$f" "$(wc -c < "$out/$f.txt")"
done
