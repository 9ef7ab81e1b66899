#include "constrain/json_value.hpp"

#include "core/json_quote.hpp"
#include "core/utf8.hpp"

#include <stdexcept>

namespace lf::constrain {

const json_value* json_value::find(std::string_view key) const noexcept {
  for (const auto& m : members)
    if (m.first == key)
      return &m.second;
  return nullptr;
}

namespace {

struct parser {
  std::string_view s;
  std::size_t i = 0;
  std::size_t max_depth;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument("invalid JSON at byte " + std::to_string(i) + ": " + what);
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
      ++i;
  }
  bool eat(char c) {
    if (i < s.size() && s[i] == c) {
      ++i;
      return true;
    }
    return false;
  }
  void expect_word(std::string_view w) {
    if (s.substr(i, w.size()) != w)
      fail("unexpected character");
    i += w.size();
  }
  unsigned hex4() {
    if (i + 4 > s.size())
      fail("short \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      const char c = s[i++];
      v <<= 4;
      if (c >= '0' && c <= '9') v |= static_cast<unsigned>(c - '0');
      else if (c >= 'a' && c <= 'f') v |= static_cast<unsigned>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') v |= static_cast<unsigned>(c - 'A' + 10);
      else fail("bad hex digit in \\u escape");
    }
    return v;
  }
  std::string string_body() {
    std::string out;
    for (;;) {
      if (i >= s.size())
        fail("unterminated string");
      const auto c = static_cast<unsigned char>(s[i++]);
      if (c == '"')
        return out;
      if (c < 0x20)
        fail("control character in string");
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (i >= s.size())
        fail("unterminated escape");
      const char e = s[i++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          unsigned cp = hex4();
          if (cp >= 0xD800 && cp < 0xDC00 && s.substr(i, 2) == "\\u") {
            i += 2;
            const unsigned lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF)
              fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xD800 && cp <= 0xDFFF) {
            fail("unpaired surrogate");
          }
          append_utf8(out, static_cast<char32_t>(cp));
          break;
        }
        default: fail("bad escape");
      }
    }
  }
  void number(json_value& v) {
    const auto start = i;
    eat('-');
    auto digits = [&] {
      const auto b = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9')
        ++i;
      if (i == b)
        fail("bad number");
    };
    if (eat('0')) {
    } else {
      digits();
    }
    if (eat('.'))
      digits();
    if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
      ++i;
      if (!eat('+'))
        eat('-');
      digits();
    }
    v.k = json_value::kind::number;
    v.text = std::string(s.substr(start, i - start));
  }
  json_value value(std::size_t depth) {
    if (depth > max_depth)
      fail("nested deeper than " + std::to_string(max_depth));
    ws();
    json_value v;
    if (i >= s.size())
      fail("unexpected end");
    const char c = s[i];
    if (c == '{') {
      ++i;
      v.k = json_value::kind::object;
      ws();
      if (eat('}'))
        return v;
      for (;;) {
        ws();
        if (!eat('"'))
          fail("expected a member name");
        auto key = string_body();
        if (v.find(key))
          fail("duplicate member \"" + key + "\"");
        ws();
        if (!eat(':'))
          fail("expected ':'");
        v.members.emplace_back(std::move(key), value(depth + 1));
        ws();
        if (eat('}'))
          return v;
        if (!eat(','))
          fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++i;
      v.k = json_value::kind::array;
      ws();
      if (eat(']'))
        return v;
      for (;;) {
        v.items.push_back(value(depth + 1));
        ws();
        if (eat(']'))
          return v;
        if (!eat(','))
          fail("expected ',' or ']'");
      }
    }
    if (c == '"') {
      ++i;
      v.k = json_value::kind::string;
      v.text = string_body();
      return v;
    }
    if (c == 't') { expect_word("true"); v.k = json_value::kind::boolean; v.b = true; return v; }
    if (c == 'f') { expect_word("false"); v.k = json_value::kind::boolean; return v; }
    if (c == 'n') { expect_word("null"); return v; }
    if (c == '-' || (c >= '0' && c <= '9')) {
      number(v);
      return v;
    }
    fail("unexpected character");
  }
};

} // namespace

json_value parse_json(std::string_view text, std::size_t max_depth) {
  parser p{text, 0, max_depth};
  auto v = p.value(0);
  p.ws();
  if (p.i != text.size())
    p.fail("trailing characters");
  return v;
}

std::string quote_json(std::string_view s) { return json_quoted(s); }

std::string dump_json(const json_value& v) {
  switch (v.k) {
    case json_value::kind::null: return "null";
    case json_value::kind::boolean: return v.b ? "true" : "false";
    case json_value::kind::number: return v.text;
    case json_value::kind::string: return quote_json(v.text);
    case json_value::kind::array: {
      std::string out = "[";
      for (std::size_t j = 0; j < v.items.size(); ++j)
        out += (j ? "," : "") + dump_json(v.items[j]);
      return out + "]";
    }
    case json_value::kind::object: {
      std::string out = "{";
      for (std::size_t j = 0; j < v.members.size(); ++j)
        out += (j ? "," : "") + quote_json(v.members[j].first) + ":" + dump_json(v.members[j].second);
      return out + "}";
    }
  }
  return "null";
}

} // namespace lf::constrain
