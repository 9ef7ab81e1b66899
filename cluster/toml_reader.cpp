#include "cluster/toml_reader.hpp"

#include <fstream>
#include <sstream>

namespace lf::cluster::detail {

namespace fs = std::filesystem;

const char* type_name(const toml::node& n) noexcept {
  switch (n.type()) {
    case toml::node_type::string: return "a string";
    case toml::node_type::integer: return "an integer";
    case toml::node_type::floating_point: return "a float";
    case toml::node_type::boolean: return "a boolean";
    case toml::node_type::table: return "a table";
    case toml::node_type::array: return "an array";
    case toml::node_type::date: return "a date";
    case toml::node_type::time: return "a time";
    case toml::node_type::date_time: return "a date-time";
    default: return "nothing";
  }
}

source_pos pos_of(const toml::node& n) noexcept {
  return {static_cast<std::uint32_t>(n.source().begin.line),
          static_cast<std::uint32_t>(n.source().begin.column)};
}

toml_reader::toml_reader(const toml::table& t, std::string path, parse_state& st)
    : table_(t), path_(std::move(path)), st_(st) {
  if (!path_.empty() && !st_.positions.count(path_))
    st_.positions[path_] = pos_of(t);
}

std::string toml_reader::key_path(std::string_view key) const {
  return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
}

const toml::node* toml_reader::get(std::string_view key) {
  known_.insert(std::string(key));
  const auto* n = table_.get(key);
  if (n)
    st_.positions[key_path(key)] = pos_of(*n);
  return n;
}

std::optional<std::string> toml_reader::str(std::string_view key) {
  const auto* n = get(key);
  if (!n)
    return std::nullopt;
  if (const auto* s = n->as_string())
    return s->get();
  st_.add(key_path(key), std::string("expected a string, got ") + type_name(*n));
  return std::nullopt;
}

std::optional<std::int64_t> toml_reader::integer(std::string_view key, std::int64_t lo,
                                                 std::int64_t hi) {
  const auto* n = get(key);
  if (!n)
    return std::nullopt;
  const auto* i = n->as_integer();
  if (!i) {
    st_.add(key_path(key), std::string("expected an integer, got ") + type_name(*n));
    return std::nullopt;
  }
  const auto v = i->get();
  if (v < lo || v > hi) {
    st_.add(key_path(key), std::to_string(v) + " is out of range [" + std::to_string(lo) + ", "
                             + std::to_string(hi) + "]");
    return std::nullopt;
  }
  return v;
}

std::optional<double> toml_reader::number(std::string_view key, double lo, double hi) {
  const auto* n = get(key);
  if (!n)
    return std::nullopt;
  std::optional<double> v;
  if (const auto* i = n->as_integer())
    v = static_cast<double>(i->get());
  else if (const auto* f = n->as_floating_point())
    v = f->get();
  if (!v) {
    st_.add(key_path(key), std::string("expected a number, got ") + type_name(*n));
    return std::nullopt;
  }
  if (!(*v >= lo && *v <= hi)) {
    std::ostringstream os;
    os << *v << " is out of range [" << lo << ", " << hi << "]";
    st_.add(key_path(key), os.str());
    return std::nullopt;
  }
  return v;
}

std::optional<bool> toml_reader::boolean(std::string_view key) {
  const auto* n = get(key);
  if (!n)
    return std::nullopt;
  if (const auto* b = n->as_boolean())
    return b->get();
  st_.add(key_path(key), std::string("expected a boolean (true or false), got ") + type_name(*n));
  return std::nullopt;
}

std::optional<std::vector<std::string>> toml_reader::strings(std::string_view key) {
  const auto* n = get(key);
  if (!n)
    return std::nullopt;
  const auto* a = n->as_array();
  if (!a) {
    st_.add(key_path(key), std::string("expected an array of strings, got ") + type_name(*n));
    return std::nullopt;
  }
  std::vector<std::string> out;
  for (std::size_t i = 0; i < a->size(); ++i) {
    const auto& e = *a->get(i);
    if (const auto* s = e.as_string()) {
      out.push_back(s->get());
    } else {
      st_.add_at(pos_of(e), key_path(key) + "[" + std::to_string(i) + "]",
                 std::string("expected a string, got ") + type_name(e));
      return std::nullopt;
    }
  }
  return out;
}

const toml::table* toml_reader::table(std::string_view key) {
  const auto* n = get(key);
  if (!n)
    return nullptr;
  if (const auto* t = n->as_table())
    return t;
  st_.add(key_path(key), std::string("expected a table, got ") + type_name(*n));
  return nullptr;
}

const toml::array* toml_reader::tables(std::string_view key) {
  const auto* n = get(key);
  if (!n)
    return nullptr;
  const auto* a = n->as_array();
  if (!a || !a->is_array_of_tables()) {
    st_.add(key_path(key), std::string("expected an array of tables ([[") + std::string(key)
                             + "]] sections), got " + type_name(*n));
    return nullptr;
  }
  return a;
}

void toml_reader::set(std::string_view key, std::string& out) {
  if (auto v = str(key))
    out = *v;
}

void toml_reader::set(std::string_view key, bool& out) {
  if (auto v = boolean(key))
    out = *v;
}

void toml_reader::set_path(std::string_view key, std::string& out) {
  auto v = str(key);
  if (!v)
    return;
  if (v->empty()) {
    st_.add(key_path(key), "must not be empty (leave the key out instead)");
    return;
  }
  out = resolve_path(st_.dir, *v);
}

void toml_reader::set_curve_key(std::string_view key, std::string& out) {
  const auto file_key = std::string(key) + "_file";
  auto inline_key = str(key);
  std::string file;
  set_path(file_key, file);
  if (inline_key && !file.empty()) {
    st_.add(key_path(file_key), "give either " + std::string(key) + " or " + file_key + ", not both");
    return;
  }
  if (inline_key) {
    if (!valid_z85_key(*inline_key)) {
      st_.add(key_path(key), "not a CURVE key: expected 40 Z85 characters (lorafleet keygen writes them)");
      return;
    }
    out = *inline_key;
    return;
  }
  if (file.empty())
    return;
  std::string why;
  auto k = read_curve_key_file(file, why);
  if (!why.empty()) {
    st_.add(key_path(file_key), why);
    return;
  }
  st_.key_files[key_path(key)] = file;
  out = k;
}

std::string read_curve_key_file(const std::string& file, std::string& why) {
  std::ifstream in(file);
  if (!in) {
    why = "cannot read key file " + file;
    return {};
  }
  std::string k;
  in >> k;
  if (!valid_z85_key(k)) {
    why = file + " does not hold a CURVE key (40 Z85 characters)";
    return {};
  }
  return k;
}

void toml_reader::finish() {
  std::string expected;
  for (const auto& k : known_)
    expected += (expected.empty() ? "" : ", ") + k;
  for (auto&& [k, v] : table_) {
    if (known_.count(k.str()))
      continue;
    st_.add_at({static_cast<std::uint32_t>(k.source().begin.line),
                static_cast<std::uint32_t>(k.source().begin.column)},
               key_path(k.str()), "unknown key (known here: " + expected + ")");
  }
}

} // namespace lf::cluster::detail
