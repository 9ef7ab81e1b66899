#pragma once
/// GPT-2's pre-tokenization, written out by hand instead of using a regex library. GPT-2 splits
/// text with the pattern
///
///     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
///
/// and runs BPE on each piece separately. The functions here reproduce the leftmost-first,
/// backtracking semantics of that pattern exactly (as JavaScript's `u`-flag regex engine and
/// Python's `regex` module apply it), with the character classes from unicode_tables.hpp.
///
/// Input is UTF-8. Invalid UTF-8 never fails: each byte that does not start a well-formed
/// sequence (overlong forms, surrogates and codepoints above U+10FFFF included) becomes a unit of
/// its own with class `other`. The pieces always tile the input, so no byte is lost or reordered.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "text/unicode_tables.hpp"

namespace lf::text {

/// One unit of input: a decoded codepoint, or a single invalid byte.
struct utf8_unit {
  /// The codepoint; for an invalid byte, the byte value (only used for diagnostics).
  char32_t cp;
  /// Bytes the unit spans: 1..4, always 1 for an invalid byte.
  std::uint8_t size;
  /// The pre-tokenization class; `other` for an invalid byte.
  unicode::char_class cls;
};

/// Decodes the unit that starts at byte offset `pos` of `text` (requires `pos < text.size()`).
utf8_unit decode_utf8_unit(std::string_view text, std::size_t pos) noexcept;

/// Returns the byte offset one past the GPT-2 pre-token that starts at `pos` (requires
/// `pos < text.size()`). The result is always greater than `pos`.
std::size_t next_pretoken_end(std::string_view text, std::size_t pos) noexcept;

/// Splits `text` into its GPT-2 pre-tokens, in order; concatenated they give back `text`.
std::vector<std::string_view> pretokenize(std::string_view text);

} // namespace lf::text
