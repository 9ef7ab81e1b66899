#!/usr/bin/env node
// Generates tests/data/tokenizer_golden.json: strings and their GPT-2 token ids according to an
// independent implementation (js-tiktoken's "gpt2" encoding), for the C++ tokenizer's parity test.
//
//   cd tools/tokenizer_golden && npm install && node generate.js [OUTPUT]
//
// Deterministic: the random cases come from a fixed-seed PRNG, so re-running it with the same
// js-tiktoken version reproduces the file byte for byte. Only characters assigned in Unicode 15.1
// or earlier are used, because the C++ tables come from Python's unicodedata (see
// tools/gen_unicode_tables.py) while Node's regex engine may know newer characters.
"use strict";

const fs = require("fs");
const path = require("path");
const { getEncoding } = require("js-tiktoken");
const { fixed_cases, whitespace_cases } = require("./cases.js");

// The package does not export its package.json, so read it from node_modules directly.
const reference_version = JSON.parse(fs.readFileSync(
  path.join(__dirname, "node_modules", "js-tiktoken", "package.json"), "utf8")).version;
const enc = getEncoding("gpt2");
const end_of_text = "<|endoftext|>";

// mulberry32: tiny, well-known, and identical on every platform.
function make_rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

// Character pools for the random cases: [first, last] codepoint ranges or literal fragments.
const pools = [
  { weight: 8, ranges: [[0x61, 0x7a], [0x41, 0x5a]] }, // ASCII letters
  { weight: 3, ranges: [[0x30, 0x39]] }, // ASCII digits
  { weight: 4, ranges: [[0x21, 0x2f], [0x3a, 0x40], [0x5b, 0x60], [0x7b, 0x7e]] }, // punctuation
  { weight: 6, frags: [" ", " ", " ", "  ", "\t", "\n", "\r\n", "\n\n", " \n", "\u00a0",
                       "\u3000", "\u2028", "\u0085", "\u000b", "\u000c", "\ufeff", "\u2003"] },
  { weight: 3, ranges: [[0xc0, 0xff], [0x100, 0x17f]] }, // Latin-1 and Latin Extended-A
  { weight: 2, ranges: [[0x391, 0x3a9], [0x3b1, 0x3c9], [0x410, 0x44f]] }, // Greek, Cyrillic
  { weight: 2, ranges: [[0x621, 0x64a], [0x660, 0x669], [0x5d0, 0x5ea]] }, // Arabic, Hebrew
  { weight: 2, ranges: [[0x905, 0x939], [0x93e, 0x94d], [0x966, 0x96f]] }, // Devanagari
  { weight: 2, ranges: [[0xe01, 0xe2e], [0xe31, 0xe3a], [0xe50, 0xe59]] }, // Thai
  { weight: 3, ranges: [[0x4e00, 0x9fa5], [0x3041, 0x3096], [0x30a1, 0x30fa], [0xac00, 0xd7a3]] },
  { weight: 3, ranges: [[0x1f600, 0x1f64f], [0x1f300, 0x1f5ff]],
    frags: ["\u200d", "\ufe0f", "\u{1f3fb}", "\u{1f3fd}", "\u{1f1fa}\u{1f1f8}", "\u{1f1ef}"] },
  { weight: 2, ranges: [[0x2160, 0x2188], [0x2460, 0x2473], [0xff10, 0xff19]],
    frags: ["\u00b2", "\u00b3", "\u00b9", "\u00bd", "\u2070", "\u2074"] }, // Unicode numbers
  { weight: 1, ranges: [[0x1d400, 0x1d44f], [0x10400, 0x1044f]] }, // astral letters
  { weight: 3, frags: ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "\u2019s", "'", "''"] },
  { weight: 1, frags: [end_of_text, "<|", "|>", "endoftext"] },
];

function random_string(rng, length) {
  const total = pools.reduce((s, p) => s + p.weight, 0);
  let out = "";
  for (let i = 0; i < length; ++i) {
    let pick = rng() * total;
    const pool = pools.find((p) => (pick -= p.weight) < 0) || pools[0];
    const nranges = pool.ranges ? pool.ranges.length : 0;
    const nfrags = pool.frags ? pool.frags.length : 0;
    const k = Math.floor(rng() * (nranges + nfrags));
    if (k < nranges) {
      const [lo, hi] = pool.ranges[k];
      out += String.fromCodePoint(lo + Math.floor(rng() * (hi - lo + 1)));
    } else {
      out += pool.frags[k - nranges];
    }
  }
  return out;
}

function make_case(label, text, allow_special) {
  // js-tiktoken throws on a special token unless told what to do with it: "all" allowed maps it
  // to 50256 (our allow_special=true), an empty disallowed list encodes it as ordinary text.
  const ids = allow_special ? enc.encode(text, "all") : enc.encode(text, [], []);
  // js-tiktoken's TextDecoder drops a leading byte order mark, so compare without it.
  if (enc.decode(ids) !== text.replace(/^\ufeff/, ""))
    throw new Error(`reference does not round-trip case ${label}: ${JSON.stringify(text)}`);
  return { label, allow_special, text, ids };
}

function build_cases() {
  const cases = [];
  for (const [group, texts] of Object.entries(fixed_cases)) {
    texts.forEach((text, i) => {
      cases.push(make_case(`${group}/${i}`, text, false));
      if (text.includes(end_of_text))
        cases.push(make_case(`${group}/${i}/special`, text, true));
    });
  }
  whitespace_cases().forEach((text, i) =>
    cases.push(make_case(`whitespace-grid/${i}`, text, false)));
  const rng = make_rng(20240611);
  for (let i = 0; i < 40; ++i) {
    const text = random_string(rng, 1 + Math.floor(rng() * 60));
    cases.push(make_case(`random/${i}`, text, text.includes(end_of_text)));
  }
  return cases;
}

function main() {
  const out = process.argv[2]
    || path.join(__dirname, "..", "..", "tests", "data", "tokenizer_golden.json");
  const cases = build_cases();
  // One case per line keeps diffs readable; JSON.stringify escapes controls and quotes only.
  const body = cases.map((c) => "    " + JSON.stringify(c)).join(",\n");
  const header = {
    generator: "tools/tokenizer_golden/generate.js",
    reference: `js-tiktoken@${reference_version} getEncoding("gpt2")`,
    note: "allow_special=true cases were encoded with allowedSpecial \"all\" (<|endoftext|> -> "
      + "50256); the others with no special tokens, so <|endoftext|> is ordinary text.",
  };
  const head = JSON.stringify(header, null, 2).replace(/\n}$/, ",");
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, `${head}\n  "cases": [\n${body}\n  ]\n}\n`);

  // Read the file back: every string must survive JSON exactly, byte for byte in UTF-8.
  const back = JSON.parse(fs.readFileSync(out, "utf8")).cases;
  if (back.length !== cases.length)
    throw new Error("case count changed on re-read");
  back.forEach((c, i) => {
    const want = Buffer.from(cases[i].text, "utf8");
    if (!Buffer.from(c.text, "utf8").equals(want) || c.text !== cases[i].text)
      throw new Error(`case ${cases[i].label} not stored exactly`);
    if (JSON.stringify(c.ids) !== JSON.stringify(cases[i].ids))
      throw new Error(`case ${cases[i].label}: ids not stored exactly`);
  });
  console.log(`wrote ${out}: ${cases.length} cases (js-tiktoken ${reference_version})`);
}

main();
