#pragma once
/// Internal to the config loader: reads one TOML table key by key, recording every key it is
/// asked about, so that finish() can name the keys nobody asked about (a misspelt option never
/// passes silently). Wrong types and values out of range become issues naming the key path.

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <toml++/toml.h>

#include "cluster/config_detail.hpp"

namespace lf::cluster::detail {

/// "a string", "an integer", ... for messages.
const char* type_name(const toml::node& n) noexcept;

/// Where `n` is in the file.
source_pos pos_of(const toml::node& n) noexcept;

/// The Z85 key in a key file (first word); on failure sets `why` and returns "".
std::string read_curve_key_file(const std::string& file, std::string& why);

/// Reads the keys of one table; see the file comment.
class toml_reader {
public:
  /// `path`: the table's key path ("" for the root, "nodes[2]", "security.clients").
  toml_reader(const toml::table& t, std::string path, parse_state& st);

  /// The table itself (to walk keys chosen by the user, as [tenants.NAME]).
  const toml::table& raw() const noexcept { return table_; }

  /// The key's full path ("nodes[2].port").
  std::string key_path(std::string_view key) const;

  /// The value, or nullptr when absent. Marks the key known and records its position.
  const toml::node* get(std::string_view key);

  std::optional<std::string> str(std::string_view key);
  std::optional<std::int64_t> integer(std::string_view key, std::int64_t lo, std::int64_t hi);
  /// A number (integer or float) in [lo, hi].
  std::optional<double> number(std::string_view key, double lo, double hi);
  std::optional<bool> boolean(std::string_view key);
  std::optional<std::vector<std::string>> strings(std::string_view key);
  /// A sub-table; a value of another type is an issue (and nullptr).
  const toml::table* table(std::string_view key);
  /// An array of tables ([[nodes]]).
  const toml::array* tables(std::string_view key);

  /// Reads an integer key into `out` (unchanged when absent or bad).
  template <class T>
  void set(std::string_view key, T& out, std::int64_t lo, std::int64_t hi) {
    if (auto v = integer(key, lo, hi))
      out = static_cast<T>(*v);
  }
  /// Reads an integer number of milliseconds into a duration.
  template <class Duration>
  void set_duration(std::string_view key, Duration& out, std::int64_t lo, std::int64_t hi) {
    if (auto v = integer(key, lo, hi))
      out = Duration(*v);
  }
  /// Reads a number key into `out` (unchanged when absent or bad).
  void set_number(std::string_view key, double& out, double lo, double hi) {
    if (auto v = number(key, lo, hi))
      out = *v;
  }
  void set(std::string_view key, std::string& out);
  void set(std::string_view key, bool& out);
  /// A path, resolved against the config file's directory.
  void set_path(std::string_view key, std::string& out);
  /// A CURVE key given inline (`key`) or in a file (`key`_file), checked as Z85 when given.
  void set_curve_key(std::string_view key, std::string& out);

  /// Adds an issue for every key of the table that was not asked about.
  void finish();

private:
  const toml::table& table_;
  std::string path_;
  parse_state& st_;
  std::set<std::string, std::less<>> known_;
};

} // namespace lf::cluster::detail
