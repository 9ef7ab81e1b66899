#pragma once
/// A string as a JSON string literal: the one escaping of the project (structured logs,
/// constrained-decoding grammars). `"` and `\` escaped, \n \r \t \b \f by name, other control
/// bytes as \u00XX, everything else (UTF-8 included) as it is. Pure C++.

#include <string>
#include <string_view>

namespace lf {

/// Appends `s` quoted to `out`.
inline void append_json_string(std::string& out, std::string_view s) {
  static constexpr const char* hex = "0123456789abcdef";
  out += '"';
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          out += "\\u00";
          out += hex[c >> 4];
          out += hex[c & 15];
        } else {
          out += ch;
        }
    }
  }
  out += '"';
}

/// `s` quoted.
inline std::string json_quoted(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  append_json_string(out, s);
  return out;
}

} // namespace lf
