#pragma once
/// The constraint engine's common form. Every constraint (a regular expression, a list of choices,
/// a JSON schema, `json_object`, a GBNF grammar) is first written as rules of expressions over
/// Unicode characters and bytes (expr, rule_set), then lowered once into a flat byte grammar:
/// rules of alternatives, each a sequence of byte classes and rule references. The matcher
/// (matcher.hpp) runs that grammar over bytes with a set of stacks, as llama.cpp's GBNF engine
/// does; the token automaton (token_automaton.hpp) turns its states into token masks.
///
/// Lowering refuses what the matcher could not run: an undefined rule, a left-recursive rule (it
/// would expand forever), a rule that can never end, a grammar over the size bound.

#include <bitset>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

namespace lf::constrain {

/// Unbounded repetition's upper count.
inline constexpr std::uint32_t unbounded = std::numeric_limits<std::uint32_t>::max();

/// An expression over characters. `chars` ranges are Unicode code points (lowered to UTF-8 byte
/// sequences), or raw bytes when `raw` (GBNF's \xNN, the matcher's own byte classes).
struct expr {
  enum class kind { empty, chars, literal, seq, alt, repeat, ref };
  kind k = kind::empty;
  std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges;  ///< chars: inclusive ranges
  bool raw = false;                                              ///< chars: ranges are bytes
  std::string text;           ///< literal: UTF-8 bytes; ref: the rule's name
  std::vector<expr> kids;     ///< seq, alt: the parts; repeat: the one repeated part
  std::uint32_t min = 0, max = 0;  ///< repeat: counts (max may be `unbounded`)

  static expr literal(std::string s) { expr e; e.k = kind::literal; e.text = std::move(s); return e; }
  static expr ref(std::string name) { expr e; e.k = kind::ref; e.text = std::move(name); return e; }
  static expr chars(std::vector<std::pair<std::uint32_t, std::uint32_t>> r, bool raw = false) {
    expr e; e.k = kind::chars; e.ranges = std::move(r); e.raw = raw; return e;
  }
  static expr seq(std::vector<expr> parts) { expr e; e.k = kind::seq; e.kids = std::move(parts); return e; }
  static expr alt(std::vector<expr> parts) { expr e; e.k = kind::alt; e.kids = std::move(parts); return e; }
  static expr repeat(expr x, std::uint32_t lo, std::uint32_t hi) {
    expr e; e.k = kind::repeat; e.kids.push_back(std::move(x)); e.min = lo; e.max = hi; return e;
  }
};

/// Named rules; `root` is where matching starts.
struct rule_set {
  std::vector<std::pair<std::string, expr>> rules;
  std::string root = "root";
};

/// One element of a flat rule alternative.
struct element {
  enum type_t : std::uint8_t { end, bytes, ref };
  type_t type = end;
  std::uint32_t arg = 0;  ///< bytes: index into grammar::classes; ref: rule index
};

/// A lowered grammar: immutable once built, shared by every matcher over it.
struct grammar {
  std::vector<element> elems;                  ///< all alternatives, each closed by an `end`
  std::vector<std::vector<std::uint32_t>> alts;  ///< per rule: the start index of each alternative
  std::vector<std::bitset<256>> classes;       ///< byte classes
  std::vector<std::string> names;              ///< per rule (for messages)
  std::vector<std::uint32_t> min_from;         ///< per element: fewest bytes to finish its alternative from it
  std::vector<std::uint32_t> rule_min;         ///< per rule: fewest bytes it matches
  std::uint32_t root = 0;
  /// Some rule reaches itself by tail calls alone before any byte (a repetition of something
  /// that can be empty): the matcher then cuts expansions that return to a stack it has seen.
  bool tail_cycles = false;
};

/// Lowering's bounds: a grammar over them is refused ("too large").
struct grammar_limits {
  std::size_t max_elements = 1u << 20;
  std::uint32_t max_repeat = 10000;  ///< a counted repetition's bound
};

/// Lowers `rs` into a byte grammar. Throws std::invalid_argument naming the problem (undefined
/// rule, left recursion, a rule that never ends, too large, a bad code point range).
grammar lower(const rule_set& rs, const grammar_limits& lim = {});

/// The UTF-8 encodings of the code points in [lo, hi] (surrogates left out) as sequences of
/// byte ranges: each inner vector is one sequence, each pair one byte's inclusive range.
std::vector<std::vector<std::pair<std::uint8_t, std::uint8_t>>> utf8_sequences(std::uint32_t lo,
                                                                               std::uint32_t hi);

/// The largest code point.
inline constexpr std::uint32_t max_code_point = 0x10FFFF;

/// Complements sorted, merged code point ranges within [0, max_code_point].
std::vector<std::pair<std::uint32_t, std::uint32_t>> complement(
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges, std::uint32_t top = max_code_point);

/// Sorts and merges overlapping or adjacent ranges.
std::vector<std::pair<std::uint32_t, std::uint32_t>> normalise(
    std::vector<std::pair<std::uint32_t, std::uint32_t>> ranges);

} // namespace lf::constrain
