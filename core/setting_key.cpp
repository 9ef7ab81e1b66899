#include "core/setting_key.hpp"

#include <cmath>
#include <cstdio>
#include <sstream>

namespace lf::settings {

namespace {

/// `v` in decimal without trailing zeros ("0.9", "1000", "1e-06" for the tiny).
std::string plain(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15)
    return std::to_string(static_cast<long long>(v));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

/// The placeholder of `k`'s value in --help.
std::string meta_of(const key_info& k) {
  if (!k.meta.empty())
    return k.meta;
  switch (k.type) {
    case key_type::integer: return "N";
    case key_type::number: return "X";
    case key_type::boolean: return "on|off";
    case key_type::text: return "TEXT";
    case key_type::path: return "PATH";
    case key_type::paths: return "PATH,PATH";
    case key_type::choice: {
      std::string out;
      for (const auto& c : k.choices)
        out += (out.empty() ? "" : "|") + c;
      return out;
    }
  }
  return "VALUE";
}

/// `text` cut into lines of at most `width` characters (at spaces), each after `indent`.
std::string wrapped(const std::string& text, std::size_t indent, std::size_t width) {
  std::istringstream words(text);
  std::string out, line;
  for (std::string w; words >> w;) {
    if (!line.empty() && indent + line.size() + 1 + w.size() > width) {
      out += std::string(indent, ' ') + line + "\n";
      line.clear();
    }
    line += (line.empty() ? "" : " ") + w;
  }
  if (!line.empty())
    out += std::string(indent, ' ') + line + "\n";
  return out;
}

} // namespace

std::string key_info::flag_name() const { return flag.empty() ? flag_of(name) : flag; }

std::string flag_of(std::string_view key) {
  std::string out(key);
  for (auto& c : out)
    if (c == '_')
      c = '-';
  return out;
}

std::string quantity(double v) {
  if (v >= 65536 && v == std::floor(v) && v < 9e15) {
    const auto n = static_cast<unsigned long long>(v);
    if ((n & (n - 1)) == 0) {
      int e = 0;
      while ((1ULL << e) != n)
        ++e;
      return "2^" + std::to_string(e);
    }
  }
  if (v >= 1e6 && v == std::floor(v) && v < 1e16) {
    int e = 0;
    double p = 1;
    while (p < v) {
      p *= 10;
      ++e;
    }
    if (p == v)
      return "10^" + std::to_string(e);
  }
  return plain(v);
}

std::string range_text(const key_info& k) {
  if (k.type != key_type::integer && k.type != key_type::number)
    return {};
  return quantity(k.lo) + ".." + quantity(k.hi);
}

std::string choice_list(const std::vector<std::string>& choices, bool quoted) {
  std::string out;
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i > 0)
      out += i + 1 == choices.size() ? " or " : ", ";
    out += quoted ? "\"" + choices[i] + "\"" : choices[i];
  }
  return out;
}

std::string not_a_choice(const key_info& k, std::string_view got, bool quoted) {
  const std::string q = quoted ? "\"" : "'";
  return "must be " + choice_list(k.choices, quoted) + " (got " + q + std::string(got) + q + ")";
}

std::string doc_type(const key_info& k) {
  switch (k.type) {
    case key_type::integer: return "integer " + range_text(k);
    case key_type::number: return "number " + range_text(k);
    case key_type::boolean: return "bool";
    case key_type::text: return "string";
    case key_type::path: return "path";
    case key_type::paths: return "array of paths";
    case key_type::choice: {
      std::string out;
      for (std::size_t i = 0; i < k.choices.size(); ++i) {
        if (i > 0)
          out += i + 1 == k.choices.size() ? " or " : ", ";
        out += "`\"" + k.choices[i] + "\"`";
      }
      return out;
    }
  }
  return {};
}

std::string value_text(const value& v) {
  if (const auto* i = std::get_if<std::int64_t>(&v))
    return std::to_string(*i);
  if (const auto* d = std::get_if<double>(&v))
    return plain(*d);
  if (const auto* b = std::get_if<bool>(&v))
    return *b ? "true" : "false";
  if (const auto* s = std::get_if<std::string>(&v))
    return *s;
  std::string out;
  for (const auto& p : std::get<std::vector<std::string>>(v))
    out += (out.empty() ? "" : ",") + p;
  return out;
}

std::string help_lines(const key_info& k, const value& shown) {
  std::string head;
  std::string tail;
  if (k.type == key_type::boolean && k.bool_style == bool_flag::no_switch) {
    head = "--no-" + k.flag_name();
    tail = "turns this off: ";
  } else if (k.type == key_type::boolean && k.bool_style == bool_flag::yes_switch) {
    head = "--" + k.flag_name();
    tail = "turns this on: ";
  } else {
    head = "--" + k.flag_name() + " " + meta_of(k);
  }
  std::string facts = range_text(k);
  auto shown_text = value_text(shown);
  if (k.type == key_type::boolean)
    shown_text = std::get<bool>(shown) ? "on" : "off";
  if (!shown_text.empty())
    facts += (facts.empty() ? "default " : "; default ") + shown_text;
  const auto text = tail + k.doc + (facts.empty() ? "" : " (" + facts + ")");
  constexpr std::size_t flag_column = 14, doc_column = 44, width = 110;
  std::string out(flag_column, ' ');
  out += head;
  if (out.size() + 2 > doc_column)
    return out + "\n" + wrapped(text, doc_column, width);
  const auto rest = wrapped(text, doc_column, width);
  return out + std::string(doc_column - out.size(), ' ') + rest.substr(doc_column);
}

std::string file_key(std::string_view key) { return std::string(key); }

} // namespace lf::settings
