#pragma once
/// The two text syntaxes a client writes constraints in, parsed into rule sets (grammar.hpp):
///
/// - regular expressions (ECMAScript / Python `re` style, matched against the whole output):
///   literals, `.` (any character but newline), classes `[a-z\d]` and `[^...]`, escapes
///   \d \D \w \W \s \S \n \r \t \f \v \0 \xHH \uHHHH \u{H...} and escaped punctuation, groups
///   `(...)`, `(?:...)`, `(?<name>...)`, `(?P<name>...)`, alternation `|`, quantifiers `* + ?`
///   `{n}` `{n,}` `{n,m}` (a lazy `?` after one is accepted: the set of outputs is the same), `^`
///   at the start and `$` at the end. Refused: backreferences, lookaround, word boundaries,
///   inline flags, anchors elsewhere.
/// - grammars in GBNF, llama.cpp's format: `name ::= alternatives` rules (a rule runs until the
///   next `name ::=`), string literals "..." with \n \r \t \\ \" \xHH \uHHHH \UHHHHHHHH escapes,
///   classes [...] (`[^...]` negated), `.` any character, rule names, groups `( )`, quantifiers
///   `* + ? {m} {m,} {m,n}`, comments from `#` to the end of the line; matching starts at `root`.
///
/// Both throw std::invalid_argument with the byte offset and the problem.

#include <string_view>

#include "constrain/grammar.hpp"

namespace lf::constrain {

/// A regular expression as a one-rule set (root).
rule_set parse_regex(std::string_view pattern);

/// A GBNF grammar.
rule_set parse_gbnf(std::string_view text);

} // namespace lf::constrain
