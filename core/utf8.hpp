#pragma once
/// UTF-8 helpers shared by the sampler's stop strings, the text stream, the protocol codec and the
/// tokenizer's command line. Standard library only.

#include <cstddef>
#include <string>
#include <string_view>

namespace lf {

/// Decodes `in` onto `out`, replacing each maximal invalid subpart with U+FFFD. Returns how many
/// bytes were consumed: everything, unless `in` ends inside a character that could still be
/// completed and `final` is false; the caller keeps that tail for the next call (incremental
/// decoding of token bytes, as text_stream does).
std::size_t decode_utf8(std::string_view in, std::string& out, bool final);

/// True when `s` is well-formed UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
bool is_valid_utf8(std::string_view s);

/// Decodes bytes as UTF-8, replacing each maximal invalid subpart with U+FFFD (the Unicode
/// recommended practice, same as Python's `bytes.decode("utf-8", errors="replace")`, which is what
/// Hugging Face's GPT-2 tokenizer uses). text_stream produces exactly this text, piece by piece.
std::string replace_invalid_utf8(std::string_view bytes);

/// Appends code point `cp` (at most U+10FFFF; the caller checks) to `out` as 1-4 bytes of UTF-8.
void append_utf8(std::string& out, char32_t cp);

} // namespace lf
