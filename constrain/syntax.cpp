#include "constrain/syntax.hpp"

#include "core/utf8.hpp"

#include <cctype>
#include <stdexcept>

namespace lf::constrain {

namespace {

using ranges_t = std::vector<std::pair<std::uint32_t, std::uint32_t>>;

std::string utf8(std::uint32_t cp) {
  std::string out;
  append_utf8(out, static_cast<char32_t>(cp));
  return out;
}

const ranges_t digit{{'0', '9'}};
const ranges_t word{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const ranges_t space{{'\t', '\r'}, {' ', ' '}};

/// Shared scanner: code points, escapes, classes.
struct scanner {
  std::string_view s;
  std::size_t i = 0;
  const char* what;

  [[noreturn]] void fail(const std::string& m) const {
    throw std::invalid_argument(std::string(what) + " at byte " + std::to_string(i) + ": " + m);
  }
  bool done() const { return i >= s.size(); }
  char peek() const { return done() ? '\0' : s[i]; }
  bool eat(char c) {
    if (peek() == c && !done()) {
      ++i;
      return true;
    }
    return false;
  }
  std::uint32_t code_point() {
    const auto c = static_cast<unsigned char>(s[i]);
    int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size())
      fail("invalid UTF-8");
    std::uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
    for (int k = 1; k < n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d >> 6) != 2)
        fail("invalid UTF-8");
      cp = (cp << 6) | (d & 0x3F);
    }
    i += n;
    return cp;
  }
  std::uint32_t hex(int min_digits, int max_digits) {
    std::uint32_t v = 0;
    int n = 0;
    while (n < max_digits && !done() && std::isxdigit(static_cast<unsigned char>(peek()))) {
      const char c = s[i++];
      v = v * 16 + static_cast<std::uint32_t>(std::isdigit(static_cast<unsigned char>(c)) ? c - '0' : (c | 32) - 'a' + 10);
      ++n;
    }
    if (n < min_digits)
      fail("bad hex escape");
    if (v > max_code_point)
      fail("code point out of range");
    return v;
  }
  /// After a backslash: one character's escape, or a class shorthand into `cls` (then returns
  /// false). `raw` tells whether a \xHH means a raw byte (GBNF) rather than a code point.
  bool escape(std::uint32_t& cp, ranges_t& cls, bool regex) {
    if (done())
      fail("trailing backslash");
    const char c = s[i++];
    switch (c) {
      case 'n': cp = '\n'; return true;
      case 'r': cp = '\r'; return true;
      case 't': cp = '\t'; return true;
      case 'f': cp = '\f'; return true;
      case 'v': cp = '\v'; return true;
      case '0': cp = 0; return true;
      case 'x': cp = hex(2, 2); return true;
      case 'u':
        if (regex && eat('{')) {
          cp = hex(1, 6);
          if (!eat('}'))
            fail("expected '}' after \\u{");
          return true;
        }
        cp = hex(4, 4);
        return true;
      case 'U':
        if (!regex) {
          cp = hex(8, 8);
          return true;
        }
        break;
      default: break;
    }
    if (regex) {
      switch (c) {
        case 'd': cls = digit; return false;
        case 'D': cls = complement(digit); return false;
        case 'w': cls = word; return false;
        case 'W': cls = complement(word); return false;
        case 's': cls = space; return false;
        case 'S': cls = complement(space); return false;
        case 'b': case 'B': fail("word boundaries (\\b, \\B) are not supported");
        default: break;
      }
      if (c >= '1' && c <= '9')
        fail("backreferences are not supported");
      if (std::isalnum(static_cast<unsigned char>(c)))
        fail(std::string("unknown escape \\") + c);
    }
    --i;
    cp = code_point();
    return true;
  }
  /// After '[': a class up to ']'.
  ranges_t klass(bool regex) {
    const bool negate = eat('^');
    ranges_t r;
    bool first = true;
    for (;;) {
      if (done())
        fail("unterminated character class");
      if (peek() == ']' && !first) {
        ++i;
        break;
      }
      first = false;
      std::uint32_t lo;
      ranges_t sh;
      if (eat('\\')) {
        if (!escape(lo, sh, regex)) {
          r.insert(r.end(), sh.begin(), sh.end());
          continue;
        }
      } else {
        lo = code_point();
      }
      std::uint32_t hi = lo;
      if (peek() == '-' && i + 1 < s.size() && s[i + 1] != ']') {
        ++i;
        if (eat('\\')) {
          if (!escape(hi, sh, regex))
            fail("a class shorthand cannot end a range");
        } else {
          hi = code_point();
        }
        if (hi < lo)
          fail("range out of order in a character class");
      }
      r.emplace_back(lo, hi);
    }
    r = normalise(std::move(r));
    return negate ? complement(std::move(r)) : r;
  }
  /// A quantifier after an atom, or false.
  bool quantifier(std::uint32_t& lo, std::uint32_t& hi) {
    if (eat('*')) { lo = 0; hi = unbounded; }
    else if (eat('+')) { lo = 1; hi = unbounded; }
    else if (eat('?')) { lo = 0; hi = 1; }
    else if (peek() == '{' && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))) {
      ++i;
      lo = number();
      hi = lo;
      if (eat(',')) {
        hi = std::isdigit(static_cast<unsigned char>(peek())) ? number() : unbounded;
      }
      if (!eat('}'))
        fail("expected '}' in a repetition");
      if (hi < lo)
        fail("repetition {m,n} with n < m");
    } else {
      return false;
    }
    return true;
  }
  std::uint32_t number() {
    std::uint64_t v = 0;
    while (std::isdigit(static_cast<unsigned char>(peek()))) {
      v = v * 10 + static_cast<std::uint64_t>(s[i++] - '0');
      if (v > 100000)
        fail("repetition count too large");
    }
    return static_cast<std::uint32_t>(v);
  }
};

const ranges_t any_but_newline = complement({{'\n', '\n'}});

struct regex_parser : scanner {
  expr alternation(int depth) {
    if (depth > 200)
      fail("groups nested too deeply");
    std::vector<expr> alts;
    alts.push_back(sequence(depth));
    while (eat('|'))
      alts.push_back(sequence(depth));
    return alts.size() == 1 ? std::move(alts[0]) : expr::alt(std::move(alts));
  }
  expr sequence(int depth) {
    std::vector<expr> parts;
    while (!done() && peek() != '|' && peek() != ')') {
      if (peek() == '^' && i == 0) {
        ++i;
        continue;
      }
      if (peek() == '$' && i + 1 == s.size()) {
        ++i;
        continue;
      }
      if (peek() == '^' || peek() == '$')
        fail("anchors are supported only at the start (^) and the end ($)");
      auto a = atom(depth);
      std::uint32_t lo, hi;
      while (quantifier(lo, hi)) {
        eat('?');  // lazy: the same set of strings
        if (peek() == '+')
          fail("possessive quantifiers are not supported");
        a = expr::repeat(std::move(a), lo, hi);
      }
      parts.push_back(std::move(a));
    }
    return expr::seq(std::move(parts));
  }
  expr atom(int depth) {
    const char c = peek();
    if (c == '(') {
      ++i;
      if (eat('?')) {
        if (eat(':')) {
        } else if (peek() == '<' || peek() == 'P') {
          if (peek() == 'P')
            ++i;
          if (!eat('<') || peek() == '=' || peek() == '!')
            fail("lookaround is not supported");
          while (!done() && peek() != '>')
            ++i;
          if (!eat('>'))
            fail("unterminated group name");
        } else if (peek() == '=' || peek() == '!') {
          fail("lookaround is not supported");
        } else {
          fail("inline flags and other (? groups are not supported");
        }
      }
      auto e = alternation(depth + 1);
      if (!eat(')'))
        fail("missing ')'");
      return e;
    }
    if (c == '*' || c == '+' || c == '?' || c == '{')
      if (c != '{' || (i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i + 1]))))
        fail("nothing to repeat");
    if (c == ')')
      fail("unbalanced ')'");
    if (eat('['))
      return expr::chars(klass(true));
    if (eat('.'))
      return expr::chars(any_but_newline);
    if (eat('\\')) {
      std::uint32_t cp;
      ranges_t cls;
      if (!escape(cp, cls, true))
        return expr::chars(std::move(cls));
      return expr::literal(utf8(cp));
    }
    return expr::literal(utf8(code_point()));
  }
};

struct gbnf_parser : scanner {
  void skip() {
    for (;;) {
      while (!done() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r'))
        ++i;
      if (peek() == '#' && !done()) {
        while (!done() && peek() != '\n')
          ++i;
        continue;
      }
      return;
    }
  }
  static bool name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  }
  std::string name() {
    const auto b = i;
    while (!done() && name_char(peek()))
      ++i;
    if (b == i)
      fail("expected a rule name");
    return std::string(s.substr(b, i - b));
  }
  /// The next token is `name ::=` (a new rule starts).
  bool at_rule_start() {
    const auto save = i;
    std::size_t j = i;
    while (j < s.size() && name_char(s[j]))
      ++j;
    if (j == i)
      return false;
    i = j;
    skip();
    const bool yes = s.substr(i, 3) == "::=";
    i = save;
    return yes;
  }
  expr alternation(int depth, bool nested) {
    if (depth > 200)
      fail("groups nested too deeply");
    std::vector<expr> alts;
    alts.push_back(sequence(depth, nested));
    while (eat('|'))
      alts.push_back(sequence(depth, nested));
    return alts.size() == 1 ? std::move(alts[0]) : expr::alt(std::move(alts));
  }
  expr sequence(int depth, bool nested) {
    std::vector<expr> parts;
    for (;;) {
      skip();
      if (done() || peek() == '|' || peek() == ')')
        break;
      if (!nested && at_rule_start())
        break;
      auto a = atom(depth);
      std::uint32_t lo, hi;
      while (quantifier(lo, hi))
        a = expr::repeat(std::move(a), lo, hi);
      parts.push_back(std::move(a));
    }
    return expr::seq(std::move(parts));
  }
  expr atom(int depth) {
    if (eat('(')) {
      auto e = alternation(depth + 1, true);
      skip();
      if (!eat(')'))
        fail("missing ')'");
      return e;
    }
    if (eat('"')) {
      std::string lit;
      while (!eat('"')) {
        if (done())
          fail("unterminated string literal");
        if (eat('\\')) {
          std::uint32_t cp;
          ranges_t cls;
          const bool byte = peek() == 'x';
          escape(cp, cls, false);
          lit += byte ? std::string(1, static_cast<char>(cp)) : utf8(cp);
        } else {
          lit += utf8(code_point());
        }
      }
      return expr::literal(std::move(lit));
    }
    if (eat('['))
      return expr::chars(klass(false));
    if (eat('.'))
      return expr::chars({{0, max_code_point}});
    if (name_char(peek()))
      return expr::ref(name());
    fail(std::string("unexpected character '") + peek() + "'");
  }
};

} // namespace

rule_set parse_regex(std::string_view pattern) {
  regex_parser p{{pattern, 0, "regex"}};
  rule_set rs;
  rs.rules.emplace_back("root", p.alternation(0));
  if (!p.done())
    p.fail(p.peek() == ')' ? "unbalanced ')'" : "unexpected character");
  return rs;
}

rule_set parse_gbnf(std::string_view text) {
  gbnf_parser p{{text, 0, "grammar"}};
  rule_set rs;
  p.skip();
  if (p.done())
    p.fail("empty grammar");
  while (!p.done()) {
    auto n = p.name();
    p.skip();
    if (p.s.substr(p.i, 3) != "::=")
      p.fail("expected '::=' after rule name `" + n + "`");
    p.i += 3;
    rs.rules.emplace_back(std::move(n), p.alternation(0, false));
    p.skip();
    if (!p.done() && p.peek() == ')')
      p.fail("unbalanced ')'");
  }
  return rs;
}

} // namespace lf::constrain
