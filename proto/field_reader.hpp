#pragma once
/// Internal to the codec (not for users of proto/protocol.hpp): reads the fields of one msgpack
/// map with type and range checks. Problems are values, not exceptions: the reader remembers the
/// first one and every later read returns std::nullopt, so a message decoder reads its fields in a
/// straight line and looks at ok() once.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

namespace lf::proto::detail {

/// Most fields in one map (a submit has 16). Larger maps are rejected before they are indexed,
/// which keeps the duplicate-key check quadratic in a small number.
inline constexpr std::size_t max_fields = 32;

/// "nil", "bool", "int", "float", "str", "bin", "array", "map" or "ext".
std::string_view type_name(const msgpack::object& o) noexcept;

/// `s` made safe to put in an error message: printable ASCII kept, any other byte as \xNN,
/// cut after 64 bytes ("..."). Error messages go back to clients and must be valid UTF-8.
std::string quote(std::string_view s);

/// A double as the shortest text that reads back the same ("0.1", "nan", "-inf", "1e+300").
std::string show(double v);

/// Whether a field must be present. An optional field may also be nil, meaning absent.
enum class presence { required, optional };

/// The fields of one map, looked up by name.
class field_reader {
public:
  /// `map` should be a MAP object (anything else fails at once). `path` prefixes field names in
  /// messages ("" at the top level, "usage." inside done's usage); `name` names the map itself
  /// ("submit message", "messages[2]").
  field_reader(const msgpack::object& map, std::string path, std::string name);

  /// False once any check has failed.
  bool ok() const noexcept { return error_.empty(); }

  /// The first failure, or "" when ok().
  const std::string& error() const noexcept { return error_; }

  /// Renames the map in later messages (the frame map becomes "submit message" once its type is
  /// known).
  void set_name(std::string name) { name_ = std::move(name); }

  /// Records a failure; only the first one is kept.
  void fail(std::string message);

  /// The value of `key` without marking it read (or checking anything); nullptr when absent.
  const msgpack::object* peek(std::string_view key) const noexcept;

  /// The value of `key`, marked read; nullptr when absent or, for an optional field, nil. A
  /// required field that is absent fails.
  const msgpack::object* get(std::string_view key, presence p);

  /// An integer in [0, max].
  std::optional<std::uint64_t> get_uint(std::string_view key, presence p, std::uint64_t max);

  /// An integer in [min, max].
  std::optional<std::int64_t> get_int(std::string_view key, presence p, std::int64_t min,
                                      std::int64_t max);

  /// A float or an integer, as a double; NaN and infinities pass (callers check ranges).
  std::optional<double> get_number(std::string_view key, presence p);

  /// get_number narrowed to float; finite values beyond float's range fail, NaN and infinities
  /// pass (the engine's validate() rejects them with its own message).
  std::optional<float> get_float(std::string_view key, presence p);

  /// A string of valid UTF-8, at most `max_bytes` long.
  std::optional<std::string> get_str(std::string_view key, presence p, std::size_t max_bytes);

  /// A boolean.
  std::optional<bool> get_bool(std::string_view key, presence p);

  /// An array of at most `max_size` elements (whose types are the caller's business).
  const msgpack::object_array* get_array(std::string_view key, presence p, std::size_t max_size);

  /// A map (whose contents are the caller's business).
  const msgpack::object* get_map(std::string_view key, presence p);

  /// Fails on the first field nobody read: the protocol has no extension fields, so an unknown
  /// one is a client bug (often a misspelt option) worth reporting rather than ignoring.
  void finish();

  /// `key` with this map's path prefix, as error messages name it.
  std::string field_name(std::string_view key) const;

private:
  struct entry {
    std::string_view key;
    const msgpack::object* value;
    bool read;
  };

  void fail_type(std::string_view key, const char* expected, const msgpack::object& got);

  std::vector<entry> entries_;
  std::string path_;
  std::string name_;
  std::string error_;
};

/// Reads a string value that is not a named field (an array element): type, size and UTF-8
/// checks, failing `r` with `what` as the name.
std::optional<std::string> read_str(field_reader& r, const msgpack::object& o,
                                    const std::string& what, std::size_t max_bytes);

} // namespace lf::proto::detail
