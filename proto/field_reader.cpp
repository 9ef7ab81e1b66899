#include "proto/field_reader.hpp"

#include <charconv>
#include <cmath>
#include <limits>

#include "core/utf8.hpp"

namespace lf::proto::detail {

std::string_view type_name(const msgpack::object& o) noexcept {
  switch (o.type) {
    case msgpack::type::NIL: return "nil";
    case msgpack::type::BOOLEAN: return "bool";
    case msgpack::type::POSITIVE_INTEGER:
    case msgpack::type::NEGATIVE_INTEGER: return "int";
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return "float";
    case msgpack::type::STR: return "str";
    case msgpack::type::BIN: return "bin";
    case msgpack::type::ARRAY: return "array";
    case msgpack::type::MAP: return "map";
    case msgpack::type::EXT: return "ext";
  }
  return "unknown";
}

std::string quote(std::string_view s) {
  constexpr std::size_t max_shown = 64;
  static constexpr char hex[] = "0123456789abcdef";
  std::string out = "'";
  for (std::size_t i = 0; i < s.size() && i < max_shown; ++i) {
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  out += s.size() > max_shown ? "'..." : "'";
  return out;
}

std::string show(double v) {
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, res.ptr);
}

field_reader::field_reader(const msgpack::object& map, std::string path, std::string name)
  : path_(std::move(path)), name_(std::move(name)) {
  if (map.type != msgpack::type::MAP) {
    fail(name_ + " must be a map (got " + std::string(type_name(map)) + ")");
    return;
  }
  const auto& m = map.via.map;
  if (m.size > max_fields) {
    fail(name_ + " has " + std::to_string(m.size) + " fields; at most "
         + std::to_string(max_fields) + " are allowed");
    return;
  }
  entries_.reserve(m.size);
  for (std::uint32_t i = 0; i < m.size; ++i) {
    const auto& kv = m.ptr[i];
    if (kv.key.type != msgpack::type::STR) {
      fail("field names in " + name_ + " must be strings (got " + std::string(type_name(kv.key))
           + ")");
      return;
    }
    const std::string_view key(kv.key.via.str.ptr, kv.key.via.str.size);
    if (peek(key) != nullptr) {
      fail("duplicate field " + quote(key) + " in " + name_);
      return;
    }
    entries_.push_back(entry{key, &kv.val, false});
  }
}

void field_reader::fail(std::string message) {
  if (error_.empty())
    error_ = std::move(message);
}

std::string field_reader::field_name(std::string_view key) const {
  return path_ + std::string(key);
}

const msgpack::object* field_reader::peek(std::string_view key) const noexcept {
  for (const auto& e : entries_)
    if (e.key == key)
      return e.value;
  return nullptr;
}

const msgpack::object* field_reader::get(std::string_view key, presence p) {
  if (!ok())
    return nullptr;
  for (auto& e : entries_) {
    if (e.key != key)
      continue;
    e.read = true;
    if (p == presence::optional && e.value->type == msgpack::type::NIL)
      return nullptr;
    return e.value;
  }
  if (p == presence::required)
    fail("missing required field '" + field_name(key) + "' in " + name_);
  return nullptr;
}

void field_reader::fail_type(std::string_view key, const char* expected,
                             const msgpack::object& got) {
  fail(field_name(key) + " must be " + expected + " (got " + std::string(type_name(got)) + ")");
}

std::optional<std::uint64_t> field_reader::get_uint(std::string_view key, presence p,
                                                    std::uint64_t max) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return std::nullopt;
  if (o->type == msgpack::type::NEGATIVE_INTEGER) {
    fail(field_name(key) + " must be >= 0 (got " + std::to_string(o->via.i64) + ")");
    return std::nullopt;
  }
  if (o->type != msgpack::type::POSITIVE_INTEGER) {
    fail_type(key, "an unsigned integer", *o);
    return std::nullopt;
  }
  if (o->via.u64 > max) {
    fail(field_name(key) + " must be at most " + std::to_string(max) + " (got "
         + std::to_string(o->via.u64) + ")");
    return std::nullopt;
  }
  return o->via.u64;
}

std::optional<std::int64_t> field_reader::get_int(std::string_view key, presence p,
                                                  std::int64_t min, std::int64_t max) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return std::nullopt;
  const auto out_of_range = [&](const std::string& got) {
    fail(field_name(key) + " must be an integer in [" + std::to_string(min) + ", "
         + std::to_string(max) + "] (got " + got + ")");
    return std::nullopt;
  };
  if (o->type == msgpack::type::POSITIVE_INTEGER) {
    if (max < 0 || o->via.u64 > static_cast<std::uint64_t>(max))
      return out_of_range(std::to_string(o->via.u64));
    return static_cast<std::int64_t>(o->via.u64);
  }
  if (o->type == msgpack::type::NEGATIVE_INTEGER) {
    if (o->via.i64 < min || o->via.i64 > max)
      return out_of_range(std::to_string(o->via.i64));
    return o->via.i64;
  }
  fail_type(key, "an integer", *o);
  return std::nullopt;
}

std::optional<double> field_reader::get_number(std::string_view key, presence p) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return std::nullopt;
  switch (o->type) {
    case msgpack::type::POSITIVE_INTEGER: return static_cast<double>(o->via.u64);
    case msgpack::type::NEGATIVE_INTEGER: return static_cast<double>(o->via.i64);
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return o->via.f64;
    default: fail_type(key, "a number", *o); return std::nullopt;
  }
}

std::optional<float> field_reader::get_float(std::string_view key, presence p) {
  const auto v = get_number(key, p);
  if (!v)
    return std::nullopt;
  // Converting a finite double beyond float's range is undefined behaviour, so refuse it here.
  if (std::isfinite(*v) && std::fabs(*v) > static_cast<double>(std::numeric_limits<float>::max())) {
    fail(field_name(key) + " is out of range for a 32-bit float (got " + show(*v) + ")");
    return std::nullopt;
  }
  return static_cast<float>(*v);
}

std::optional<std::string> field_reader::get_str(std::string_view key, presence p,
                                                 std::size_t max_bytes) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return std::nullopt;
  return read_str(*this, *o, field_name(key), max_bytes);
}

std::optional<bool> field_reader::get_bool(std::string_view key, presence p) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return std::nullopt;
  if (o->type != msgpack::type::BOOLEAN) {
    fail_type(key, "a boolean", *o);
    return std::nullopt;
  }
  return o->via.boolean;
}

const msgpack::object_array* field_reader::get_array(std::string_view key, presence p,
                                                     std::size_t max_size) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return nullptr;
  if (o->type != msgpack::type::ARRAY) {
    fail_type(key, "an array", *o);
    return nullptr;
  }
  if (o->via.array.size > max_size) {
    fail(field_name(key) + " must have at most " + std::to_string(max_size) + " entries (got "
         + std::to_string(o->via.array.size) + ")");
    return nullptr;
  }
  return &o->via.array;
}

const msgpack::object* field_reader::get_map(std::string_view key, presence p) {
  const auto* o = get(key, p);
  if (o == nullptr)
    return nullptr;
  if (o->type != msgpack::type::MAP) {
    fail_type(key, "a map", *o);
    return nullptr;
  }
  return o;
}

void field_reader::finish() {
  if (!ok())
    return;
  for (const auto& e : entries_) {
    if (!e.read) {
      fail("unknown field " + quote(path_ + std::string(e.key)) + " in " + name_);
      return;
    }
  }
}

std::optional<std::string> read_str(field_reader& r, const msgpack::object& o,
                                    const std::string& what, std::size_t max_bytes) {
  if (!r.ok())
    return std::nullopt;
  if (o.type != msgpack::type::STR) {
    r.fail(what + " must be a string (got " + std::string(type_name(o)) + ")");
    return std::nullopt;
  }
  const std::string_view s(o.via.str.ptr, o.via.str.size);
  if (s.size() > max_bytes) {
    r.fail(what + " is " + std::to_string(s.size()) + " bytes; the limit is "
           + std::to_string(max_bytes));
    return std::nullopt;
  }
  if (!lf::is_valid_utf8(s)) {
    r.fail(what + " must be valid UTF-8");
    return std::nullopt;
  }
  return std::string(s);
}

} // namespace lf::proto::detail
