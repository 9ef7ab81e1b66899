#include "core/utf8.hpp"

namespace lf {

namespace {
constexpr std::string_view replacement_char = "\xEF\xBF\xBD"; // U+FFFD
} // namespace

std::size_t decode_utf8(std::string_view in, std::string& out, bool final) {
  const auto* b = reinterpret_cast<const unsigned char*>(in.data());
  const std::size_t n = in.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned c = b[i];
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
      ++i;
      continue;
    }
    // Continuation count and the allowed range of the first continuation byte: the narrowed
    // ranges after E0, ED, F0 and F4 exclude overlongs, surrogates and values above U+10FFFF.
    std::size_t need = 0;
    unsigned lo = 0x80;
    unsigned hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) {
      need = 1;
    } else if (c >= 0xE0 && c <= 0xEF) {
      need = 2;
      if (c == 0xE0)
        lo = 0xA0;
      else if (c == 0xED)
        hi = 0x9F;
    } else if (c >= 0xF0 && c <= 0xF4) {
      need = 3;
      if (c == 0xF0)
        lo = 0x90;
      else if (c == 0xF4)
        hi = 0x8F;
    } else {
      out.append(replacement_char);
      ++i;
      continue;
    }
    std::size_t j = i + 1;
    std::size_t got = 0;
    while (got < need && j < n && b[j] >= lo && b[j] <= hi) {
      lo = 0x80;
      hi = 0xBF;
      ++j;
      ++got;
    }
    if (got == need) {
      out.append(in.data() + i, j - i);
    } else if (j == n && !final) {
      return i; // a valid beginning; the next token may complete it
    } else {
      out.append(replacement_char); // one U+FFFD for the whole maximal subpart
    }
    i = j;
  }
  return n;
}

bool is_valid_utf8(std::string_view s) {
  std::string decoded;
  decoded.reserve(s.size());
  // Valid prefixes are copied verbatim, and the first replacement would put EF BF BD where the
  // input has bytes that did not decode, so the output equals the input exactly when it is valid.
  return decode_utf8(s, decoded, true) == s.size() && decoded == s;
}

std::string replace_invalid_utf8(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size());
  decode_utf8(bytes, out, true);
  return out;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

} // namespace lf
