#pragma once
/// Hand-built frames for the protocol tests: a map of fields packed with msgpack-c directly, so a
/// test can write what encode() never would (wrong types, extra fields, out-of-range integers).

#include <catch2/catch.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <msgpack.hpp>

#include "proto/protocol.hpp"

namespace lf::test {

using packer = msgpack::packer<msgpack::sbuffer>;
/// Writes one msgpack value.
using value = std::function<void(packer&)>;

inline value str(std::string s) {
  return [s = std::move(s)](packer& p) {
    p.pack_str(static_cast<std::uint32_t>(s.size()));
    p.pack_str_body(s.data(), static_cast<std::uint32_t>(s.size()));
  };
}
inline value u64(std::uint64_t v) { return [v](packer& p) { p.pack_uint64(v); }; }
inline value i64(std::int64_t v) { return [v](packer& p) { p.pack_int64(v); }; }
/// Note: msgpack-c writes integral floats (3.0) as ints; use non-integral values to test types.
inline value f64(double v) { return [v](packer& p) { p.pack_double(v); }; }
inline value f32(float v) { return [v](packer& p) { p.pack_float(v); }; }
inline value boolean(bool v) { return [v](packer& p) { v ? p.pack_true() : p.pack_false(); }; }
inline value nil() { return [](packer& p) { p.pack_nil(); }; }
inline value bin(std::string s) {
  return [s = std::move(s)](packer& p) {
    p.pack_bin(static_cast<std::uint32_t>(s.size()));
    p.pack_bin_body(s.data(), static_cast<std::uint32_t>(s.size()));
  };
}
inline value array(std::vector<value> items) {
  return [items = std::move(items)](packer& p) {
    p.pack_array(static_cast<std::uint32_t>(items.size()));
    for (const auto& v : items)
      v(p);
  };
}
inline value strings(const std::vector<std::string>& items) {
  std::vector<value> vs;
  for (const auto& s : items)
    vs.push_back(str(s));
  return array(std::move(vs));
}

/// An ordered map of fields; set() replaces a field in place or appends it.
class fields {
public:
  fields() = default;
  fields(std::initializer_list<std::pair<std::string, value>> kv) : kv_(kv) {}

  fields& set(const std::string& key, value v) {
    for (auto& [k, old] : kv_)
      if (k == key) {
        old = std::move(v);
        return *this;
      }
    kv_.emplace_back(key, std::move(v));
    return *this;
  }

  /// Appends even when the key is already there (duplicate keys).
  fields& add(const std::string& key, value v) {
    kv_.emplace_back(key, std::move(v));
    return *this;
  }

  fields& erase(const std::string& key) {
    for (auto it = kv_.begin(); it != kv_.end(); ++it)
      if (it->first == key) {
        kv_.erase(it);
        break;
      }
    return *this;
  }

  /// As a msgpack value (a nested map).
  value as_value() const {
    return [kv = kv_](packer& p) {
      p.pack_map(static_cast<std::uint32_t>(kv.size()));
      for (const auto& [k, v] : kv) {
        str(k)(p);
        v(p);
      }
    };
  }

  /// The packed map: one frame.
  std::string bytes() const {
    msgpack::sbuffer buf;
    packer p(buf);
    as_value()(p);
    return std::string(buf.data(), buf.size());
  }

private:
  std::vector<std::pair<std::string, value>> kv_;
};

/// A valid plain submit with id 5.
inline fields submit_fields() {
  return fields{{"v", u64(1)}, {"type", str("submit")}, {"id", u64(5)}, {"prompt", str("Hello")}};
}

/// The decode_error `r` holds; fails the test when `r` holds a message.
template <class Result>
proto::decode_error expect_error(const Result& r) {
  const auto* e = std::get_if<proto::decode_error>(&r);
  REQUIRE(e != nullptr);
  CHECK(e->code == serve_errc::invalid_request);
  CHECK_FALSE(e->message.empty());
  return *e;
}

/// The message of type T that `r` holds; fails the test (showing the error) otherwise.
template <class T, class Result>
T expect_message(const Result& r) {
  if (const auto* e = std::get_if<proto::decode_error>(&r))
    FAIL("decode_error: " << e->message);
  const auto* m = std::get_if<T>(&r);
  REQUIRE(m != nullptr);
  return *m;
}

/// decode_client's error message for `f`'s bytes.
inline std::string client_error(const fields& f) {
  return expect_error(proto::decode_client(f.bytes())).message;
}

} // namespace lf::test
