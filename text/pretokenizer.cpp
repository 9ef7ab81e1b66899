#include "text/pretokenizer.hpp"

namespace lf::text {

namespace {

using unicode::char_class;

constexpr bool is_continuation(unsigned char b) noexcept {
  return (b & 0xC0) == 0x80;
}

/// The byte at `pos` as an invalid unit of its own.
constexpr utf8_unit invalid_unit(unsigned char b) noexcept {
  return {static_cast<char32_t>(b), 1, char_class::other};
}

/// Offset one past the run of units of class `cls` that starts at `pos`.
std::size_t run_end(std::string_view text, std::size_t pos, char_class cls) noexcept {
  while (pos < text.size()) {
    auto u = decode_utf8_unit(text, pos);
    if (u.cls != cls)
      break;
    pos += u.size;
  }
  return pos;
}

/// Length of the contraction (`'s 't 're 've 'm 'll 'd`, lowercase only, as in GPT-2's pattern)
/// at `pos`, or 0. `text[pos]` is an apostrophe.
std::size_t contraction_size(std::string_view text, std::size_t pos) noexcept {
  auto rest = text.substr(pos + 1);
  if (rest.empty())
    return 0;
  switch (rest[0]) {
    case 's':
    case 't':
    case 'm':
    case 'd':
      return 2;
    default:
      break;
  }
  if (rest.size() >= 2
      && (rest.compare(0, 2, "re") == 0 || rest.compare(0, 2, "ve") == 0
          || rest.compare(0, 2, "ll") == 0))
    return 3;
  return 0;
}

} // namespace

utf8_unit decode_utf8_unit(std::string_view text, std::size_t pos) noexcept {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data()) + pos;
  const std::size_t avail = text.size() - pos;
  const unsigned char b0 = s[0];
  if (b0 < 0x80)
    return {b0, 1, unicode::classify(b0)};
  // Lead byte -> sequence length and the allowed range of the second byte; the narrowed second
  // byte ranges are what rule out overlong forms, surrogates and codepoints above U+10FFFF.
  std::size_t len = 0;
  unsigned char lo = 0x80;
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    if (b0 == 0xE0)
      lo = 0xA0;
    else if (b0 == 0xED)
      hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    if (b0 == 0xF0)
      lo = 0x90;
    else if (b0 == 0xF4)
      hi = 0x8F;
  } else {
    return invalid_unit(b0);
  }
  if (avail < len || s[1] < lo || s[1] > hi)
    return invalid_unit(b0);
  for (std::size_t i = 2; i < len; ++i)
    if (!is_continuation(s[i]))
      return invalid_unit(b0);
  char32_t cp = b0 & (0xFF >> (len + 1));
  for (std::size_t i = 1; i < len; ++i)
    cp = (cp << 6) | (s[i] & 0x3F);
  return {cp, static_cast<std::uint8_t>(len), unicode::classify(cp)};
}

std::size_t next_pretoken_end(std::string_view text, std::size_t pos) noexcept {
  const std::size_t n = text.size();
  const auto first = decode_utf8_unit(text, pos);
  // 's|'t|'re|'ve|'m|'ll|'d: tried first, so they win over ` ?[^\s\p{L}\p{N}]+`.
  if (first.cp == '\'') {
    if (auto len = contraction_size(text, pos); len > 0)
      return pos + len;
  }
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the optional leading space is a plain U+0020
  // only, and it is taken whenever a non-space follows it.
  if (first.cp == ' ' && pos + 1 < n) {
    const auto next = decode_utf8_unit(text, pos + 1);
    if (next.cls != char_class::whitespace)
      return run_end(text, pos + 1 + next.size, next.cls);
  }
  if (first.cls != char_class::whitespace)
    return run_end(text, pos + first.size, first.cls);
  // Whitespace: `\s+(?!\S)` greedily takes the whole run, then backtracks one character at a time
  // until the lookahead holds. At the end of the text it holds at once; before a non-space it
  // holds after giving back exactly the last whitespace character, which then starts the next
  // piece (as the leading space of a word if it is ' ', else alone through `\s+`). A single
  // whitespace character before a non-space cannot satisfy `\s+(?!\S)` and falls to `\s+`.
  std::size_t last_start = pos;
  std::size_t end = pos + first.size;
  while (end < n) {
    const auto u = decode_utf8_unit(text, end);
    if (u.cls != char_class::whitespace)
      break;
    last_start = end;
    end += u.size;
  }
  if (end == n || last_start == pos)
    return end;
  return last_start;
}

std::vector<std::string_view> pretokenize(std::string_view text) {
  std::vector<std::string_view> pieces;
  std::size_t pos = 0;
  while (pos < text.size()) {
    const std::size_t end = next_pretoken_end(text, pos);
    pieces.push_back(text.substr(pos, end - pos));
    pos = end;
  }
  return pieces;
}

} // namespace lf::text
