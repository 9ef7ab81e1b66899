#pragma once
/// A table of settings: one row per key, as a cluster config spells it (its flag is derived from
/// it, '_' -> '-', unless the row names another), with its type, its range or choices, a one-line
/// doc, and how to read and write the field it sets. The tables are worker::worker_keys()
/// (worker/worker_settings.cpp) and router::router_keys() (router/router_config.cpp); the config
/// reader (cluster/config_read.cpp), serve's flags (tools/cli/serve_options.cpp), `--help` and the
/// check of docs/cluster.md all read them, so a key's name, range and doc are written once, and a
/// default once (in its struct). Pure C++.
///
///   settings::table<worker_settings> t;
///   t.integer("max_seqs", LF_SETTING(max_seqs), 1, 4096, "running sequences per step at most");
///   t.choice("placement", LF_SETTING(placement.policy), {{"round_robin", ...}, ...}, "...")
///     .flag = "policy";  // the row just added: set its extras before adding the next

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

/// The field a row reads and writes, as a path from the settings struct ("placement.policy").
#define LF_SETTING(member) [](auto& s_) -> auto& { return s_.member; }

namespace lf::settings {

/// What a key holds. `path`: a string that a config file resolves against its own directory;
/// `paths`: a list of them (a TOML array, a comma-separated flag).
enum class key_type { integer, number, boolean, text, path, choice, paths };

/// Where a key is read.
enum class key_scope { both, file_only, flags_only };

/// How a boolean key is written as a flag: `--FLAG on|off`, a switch `--no-FLAG` that turns it
/// off, or a switch `--FLAG` that turns it on.
enum class bool_flag { on_off, no_switch, yes_switch };

/// A key's value, whatever its type: integer, number, boolean, text / path / choice, paths.
using value = std::variant<std::int64_t, double, bool, std::string, std::vector<std::string>>;

/// A row without its accessors: what messages, `--help` and the doc check need.
struct key_info {
  std::string name;  ///< the key in a cluster config ("max_seqs")
  key_type type = key_type::integer;
  std::string doc;   ///< one line
  double lo = 0, hi = 0;             ///< integer, number: the range, both ends included
  std::vector<std::string> choices;  ///< choice: the spellings, in the order messages list them
  std::string flag;                  ///< the flag without "--"; empty: derived from `name`
  std::string meta;                  ///< the value's placeholder in --help; empty: by type
  key_scope scope = key_scope::both;
  bool_flag bool_style = bool_flag::on_off;

  /// The flag without "--": `flag`, or `name` with '_' -> '-'. A no_switch boolean's switch is
  /// "no-" + this; a yes_switch boolean's is this.
  std::string flag_name() const;
  bool in_file() const noexcept { return scope != key_scope::flags_only; }
  bool in_flags() const noexcept { return scope != key_scope::file_only; }
};

/// A row: its description and the field's accessors over settings struct `S`.
template <class S>
struct setting_key : key_info {
  std::function<value(const S&)> get;
  /// Writes the field from a value of the row's type; false (field unchanged) for a spelling
  /// that is not one of a choice's.
  std::function<bool(S&, const value&)> set;
};

/// `key` with '_' -> '-'.
std::string flag_of(std::string_view key);

/// A bound as the docs write it: powers of two from 2^16 as "2^N", powers of ten from 10^6 as
/// "10^N", others in decimal ("0.9", "4096").
std::string quantity(double v);

/// "LO..HI" for integer and number keys, "" for others.
std::string range_text(const key_info& k);

/// "a, b or c"; with `quoted`, "\"a\", \"b\" or \"c\"".
std::string choice_list(const std::vector<std::string>& choices, bool quoted);

/// Why `got` is not a choice of `k`: "must be a, b or c (got 'x')" for a flag, or with quoted
/// spellings, "must be \"a\", \"b\" or \"c\" (got \"x\")" for a config file.
std::string not_a_choice(const key_info& k, std::string_view got, bool quoted);

/// The type column of docs/cluster.md's key tables: "integer 1..4096", "number 0..0.9", "bool",
/// "string", "path", "array of paths", or the choices: `"a"`, `"b"` or `"c"` (in backticks).
std::string doc_type(const key_info& k);

/// A value as the docs and --help show it: 64, 0.1, true, cache_aware, "" (an empty string or
/// list), a,b (a list).
std::string value_text(const value& v);

/// One key's lines in `--help`: the flag with its placeholder, the doc, the range and the default
/// (`shown`: the default as the command applies it).
std::string help_lines(const key_info& k, const value& shown);

/// A problem that check_settings found: the key it is about (a cluster config's spelling) and
/// the message, with every key in it named by the reader's key_namer.
struct setting_issue {
  std::string key;
  std::string message;
};

/// How a reader names a key in messages: a config file by the key itself, the flags by "--flag".
using key_namer = std::function<std::string(std::string_view key)>;

/// The config file's namer: the key as it is.
std::string file_key(std::string_view key);

/// Builds a table row by row.
template <class S>
class table {
public:
  /// An integer key; the field may be any integer type, a floating-point one, or a duration (its
  /// count).
  template <class F>
  setting_key<S>& integer(std::string name, F field, std::int64_t lo, std::int64_t hi, std::string doc) {
    auto& k = add(std::move(name), key_type::integer, std::move(doc));
    k.lo = static_cast<double>(lo);
    k.hi = static_cast<double>(hi);
    k.get = [field](const S& s) { return value{to_int(field(s))}; };
    k.set = [field](S& s, const value& v) {
      from_int(field(s), std::get<std::int64_t>(v));
      return true;
    };
    return k;
  }

  /// A number key (integer or float in a file) into a floating-point field.
  template <class F>
  setting_key<S>& number(std::string name, F field, double lo, double hi, std::string doc) {
    auto& k = add(std::move(name), key_type::number, std::move(doc));
    k.lo = lo;
    k.hi = hi;
    k.get = [field](const S& s) { return value{static_cast<double>(field(s))}; };
    k.set = [field](S& s, const value& v) {
      field(s) = std::get<double>(v);
      return true;
    };
    return k;
  }

  /// A boolean key (`--FLAG on|off` unless the row says otherwise).
  template <class F>
  setting_key<S>& boolean(std::string name, F field, std::string doc) {
    auto& k = add(std::move(name), key_type::boolean, std::move(doc));
    k.get = [field](const S& s) { return value{static_cast<bool>(field(s))}; };
    k.set = [field](S& s, const value& v) {
      field(s) = std::get<bool>(v);
      return true;
    };
    return k;
  }

  /// A string key, free-form (what it must look like is check_settings' to say).
  template <class F>
  setting_key<S>& text(std::string name, F field, std::string doc) {
    return string_key(key_type::text, std::move(name), field, std::move(doc));
  }

  /// A path: a config file resolves it against its own directory.
  template <class F>
  setting_key<S>& path(std::string name, F field, std::string doc) {
    return string_key(key_type::path, std::move(name), field, std::move(doc));
  }

  /// A list of paths.
  template <class F>
  setting_key<S>& paths(std::string name, F field, std::string doc) {
    auto& k = add(std::move(name), key_type::paths, std::move(doc));
    k.get = [field](const S& s) { return value{std::vector<std::string>(field(s))}; };
    k.set = [field](S& s, const value& v) {
      field(s) = std::get<std::vector<std::string>>(v);
      return true;
    };
    return k;
  }

  /// One of `options` (spelling, the field's value), listed in messages in this order.
  template <class F, class T>
  setting_key<S>& choice(std::string name, F field, std::vector<std::pair<std::string, T>> options, std::string doc) {
    auto& k = add(std::move(name), key_type::choice, std::move(doc));
    for (const auto& o : options)
      k.choices.push_back(o.first);
    k.get = [field, options](const S& s) {
      for (const auto& [spelling, v] : options)
        if (field(s) == v)
          return value{spelling};
      return value{std::string{}};
    };
    k.set = [field, options](S& s, const value& v) {
      for (const auto& [spelling, x] : options)
        if (spelling == std::get<std::string>(v)) {
          field(s) = x;
          return true;
        }
      return false;
    };
    return k;
  }

  /// The rows, in the order they were added (the order of --help and of messages).
  std::vector<setting_key<S>> rows;

private:
  setting_key<S>& add(std::string name, key_type type, std::string doc) {
    auto& k = rows.emplace_back();
    k.name = std::move(name);
    k.type = type;
    k.doc = std::move(doc);
    return k;
  }

  template <class F>
  setting_key<S>& string_key(key_type type, std::string name, F field, std::string doc) {
    auto& k = add(std::move(name), type, std::move(doc));
    k.get = [field](const S& s) { return value{std::string(field(s))}; };
    k.set = [field](S& s, const value& v) {
      field(s) = std::get<std::string>(v);
      return true;
    };
    return k;
  }

  template <class T>
  struct is_duration : std::false_type {};
  template <class R, class P>
  struct is_duration<std::chrono::duration<R, P>> : std::true_type {};

  template <class T>
  static std::int64_t to_int(const T& v) {
    if constexpr (is_duration<T>::value)
      return static_cast<std::int64_t>(v.count());
    else
      return static_cast<std::int64_t>(v);
  }
  template <class T>
  static void from_int(T& out, std::int64_t v) {
    if constexpr (is_duration<T>::value)
      out = T(v);
    else
      out = static_cast<T>(v);
  }
};

/// A choice's options from enum values, each spelt by its to_string (found by argument-dependent
/// lookup), so an enum's spellings stay where the enum is.
template <class E>
std::vector<std::pair<std::string, E>> spelt(std::initializer_list<E> values) {
  std::vector<std::pair<std::string, E>> out;
  for (auto v : values)
    out.emplace_back(std::string(to_string(v)), v);
  return out;
}

/// The row of `keys` named `name`, or nullptr.
template <class S>
const setting_key<S>* find(const std::vector<setting_key<S>>& keys, std::string_view name) {
  for (const auto& k : keys)
    if (k.name == name)
      return &k;
  return nullptr;
}

/// The flags' namer for `keys`: "--" + a key's flag (derived for a key the table lacks).
template <class S>
key_namer flag_namer(const std::vector<setting_key<S>>& keys) {
  return [&keys](std::string_view key) {
    const auto* k = find(keys, key);
    return "--" + (k ? k->flag_name() : flag_of(key));
  };
}

/// The first issue's message, or "" when there is none.
inline std::string first_message(const std::vector<setting_issue>& issues) {
  return issues.empty() ? std::string{} : issues.front().message;
}

} // namespace lf::settings
