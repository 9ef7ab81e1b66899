#include "core/api_keys.hpp"

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "core/secret_file.hpp"

namespace lf::auth {

namespace {

/// The longest name or tenant (the wire's tenant limit).
constexpr std::size_t max_name_bytes = 64;

bool printable_word(std::string_view s) noexcept {
  for (unsigned char c : s)
    if (c <= 0x20 || c >= 0x7f)
      return false;
  return !s.empty();
}

/// Z85's alphabet (a CURVE public key is 40 of these).
bool z85_key(std::string_view s) noexcept {
  static constexpr std::string_view alphabet =
    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
  if (s.size() != 40)
    return false;
  for (char c : s)
    if (alphabet.find(c) == std::string_view::npos)
      return false;
  return true;
}

} // namespace

std::string_view to_string(role r) noexcept { return r == role::admin ? "admin" : "user"; }

std::optional<role> parse_role(std::string_view s) noexcept {
  if (s == "user")
    return role::user;
  if (s == "admin")
    return role::admin;
  return std::nullopt;
}

bool constant_time_equal(std::string_view a, std::string_view b) noexcept {
  // Every byte of `a` is visited whatever `b` holds; a length difference is folded in, not
  // returned early. (`volatile` keeps the compiler from turning the loop into memcmp.)
  volatile unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const unsigned char x = static_cast<unsigned char>(a[i]);
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : static_cast<unsigned char>(~x);
    diff = static_cast<unsigned char>(diff | (x ^ y));
  }
  return diff == 0;
}

key_table::key_table(std::vector<api_key> keys) : keys_(std::move(keys)) {
  std::set<std::string> secrets;
  std::map<std::string, std::size_t> first_of;  // name -> its first line's index
  for (std::size_t i = 0; i < keys_.size(); ++i) {
    auto& k = keys_[i];
    if (!printable_word(k.name) || k.name.size() > max_name_bytes)
      throw std::invalid_argument("key name must be 1 to 64 printable ASCII characters without spaces");
    if (k.tenant.empty())
      k.tenant = k.name;
    if (!printable_word(k.tenant) || k.tenant.size() > max_name_bytes)
      throw std::invalid_argument("key " + k.name + ": tenant must be 1 to 64 printable ASCII characters");
    if (k.curve ? !z85_key(k.key) : (!printable_word(k.key) || k.key.size() < min_key_bytes))
      throw std::invalid_argument("key " + k.name + ": "
                                  + (k.curve ? std::string("a curve: key must be a Z85 public key (40 characters)")
                                             : "the key must be at least " + std::to_string(min_key_bytes)
                                                 + " printable ASCII characters"));
    if (const auto [at, fresh] = first_of.emplace(k.name, i); !fresh) {
      // One caller may hold an HTTP secret and a CURVE key: two lines of one name, one of each
      // kind, that must agree on what the name gets (its rate limits are one set of buckets).
      const auto& first = keys_[at->second];
      if (first.curve == k.curve || std::count_if(keys_.begin(), keys_.begin() + static_cast<std::ptrdiff_t>(i),
                                                  [&](const api_key& o) { return o.name == k.name; }) > 1)
        throw std::invalid_argument("duplicate key name " + k.name + " (a name may have one HTTP key and one curve: key)");
      if (first.role != k.role || first.tenant != k.tenant
          || first.limits.requests_per_minute != k.limits.requests_per_minute
          || first.limits.tokens_per_minute != k.limits.tokens_per_minute)
        throw std::invalid_argument("key " + k.name + ": its HTTP and curve: lines must give the same role, tenant, "
                                    "rpm= and tpm= (one caller, two doors)");
    }
    if (!secrets.insert((k.curve ? "c:" : "s:") + k.key).second)
      throw std::invalid_argument("key " + k.name + ": the same key is given on an earlier line");
  }
}

const api_key* key_table::find_secret(std::string_view secret) const noexcept {
  const api_key* found = nullptr;
  for (const auto& k : keys_) {  // no early exit: every key is compared
    const bool eq = constant_time_equal(k.key, secret);
    if (eq && !k.curve)
      found = &k;
  }
  return found;
}

const api_key* key_table::find_curve(std::string_view z85) const noexcept {
  for (const auto& k : keys_)
    if (k.curve && k.key == z85)  // a public key: no need to hide the comparison's time
      return &k;
  return nullptr;
}

const api_key* key_table::find_name(std::string_view name) const noexcept {
  for (const auto& k : keys_)
    if (k.name == name)
      return &k;
  return nullptr;
}

bool key_table::has_secrets() const noexcept {
  for (const auto& k : keys_)
    if (!k.curve)
      return true;
  return false;
}

key_table parse_key_file(std::string_view text, const std::string& file) {
  std::vector<api_key> keys;
  std::size_t line_no = 0;
  std::size_t pos = 0;
  while (pos <= text.size()) {
    auto end = text.find('\n', pos);
    if (end == std::string_view::npos)
      end = text.size();
    std::string line(text.substr(pos, end - pos));
    pos = end + 1;
    ++line_no;
    const auto where = file + ":" + std::to_string(line_no) + ": ";
    for (char& c : line)
      if (c == '\t' || c == '\r')
        c = ' ';
    // A comment starts with a '#' that begins a word: Z85 keys may hold '#' inside.
    for (std::size_t i = 0; i < line.size(); ++i)
      if (line[i] == '#' && (i == 0 || line[i - 1] == ' ')) {
        line.resize(i);
        break;
      }
    std::istringstream in(line);
    std::vector<std::string> words;
    for (std::string w; in >> w;)
      words.push_back(w);
    if (words.empty())
      continue;
    api_key k;
    // Trailing name=value words are the key's options (rate limits).
    while (words.size() > 3 && words.back().find('=') != std::string::npos) {
      const auto w = words.back();
      words.pop_back();
      const auto eq = w.find('=');
      const auto name = w.substr(0, eq), value = w.substr(eq + 1);
      std::uint64_t n = 0;
      const bool number = !value.empty() && value.size() <= 12
                          && value.find_first_not_of("0123456789") == std::string::npos;
      if (number)
        n = std::stoull(value);
      if ((name != "rpm" && name != "tpm") || !number || n == 0 || (name == "rpm" && n > 1'000'000'000))
        throw std::invalid_argument(where + "\"" + w.substr(0, 32)
                                    + "\": expected rpm=N or tpm=N with N a positive whole number");
      if (name == "rpm")
        k.limits.requests_per_minute = static_cast<std::uint32_t>(n);
      else
        k.limits.tokens_per_minute = n;
    }
    if (words.size() < 3 || words.size() > 4)
      throw std::invalid_argument(where + "expected NAME ROLE KEY [TENANT] [rpm=N] [tpm=N], got "
                                  + std::to_string(words.size()) + " field" + (words.size() == 1 ? "" : "s"));
    k.name = words[0];
    const auto r = parse_role(words[1]);
    if (!r)
      throw std::invalid_argument(where + "unknown role \"" + words[1].substr(0, 32) + "\" (user or admin)");
    k.role = *r;
    k.key = words[2];
    if (k.key.rfind(curve_prefix, 0) == 0) {
      k.curve = true;
      k.key.erase(0, curve_prefix.size());
    }
    if (words.size() == 4)
      k.tenant = words[3];
    keys.push_back(std::move(k));
    try {
      key_table check(keys);  // names the first bad line, not just "the file"
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + e.what());
    }
    if (end == text.size())
      break;
  }
  return key_table(std::move(keys));
}

key_table load_key_file(const std::string& path) {
  return parse_key_file(secrets::read_secret_file(path, "the API key file"), path);
}

} // namespace lf::auth
