#pragma once
/// Structured log lines for operators: level, time, component, message and key=value fields, as
/// text or as one JSON object per line, written whole (threads never interleave a line).
///
///   lf::log::configure({lf::log::level::info, lf::log::format::json, "head"});
///   lf::log::info("router", "request done", {{"rid", 12}, {"worker", "w1"}, {"ttft_ms", 41.5}});
///
/// text: 2026-11-24T07:45:01.123Z INFO  router request done node=head rid=12 worker=w1 ttft_ms=41.5
/// json: {"ts":"2026-11-24T07:45:01.123Z","level":"info","component":"router","msg":"request done",
///        "node":"head","rid":12,"worker":"w1","ttft_ms":41.5}
///
/// Standard library only. The one process-wide logger writes to stderr unless a sink is set.

#include <chrono>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace lf::log {

/// How much is written: a line at level L is written when L >= the configured level.
enum class level { debug, info, warn, error, off };

/// "debug", "info", "warn", "error", "off".
std::string_view to_string(level l) noexcept;

/// Parses to_string's spellings; std::nullopt otherwise.
std::optional<level> parse_level(std::string_view s) noexcept;

/// Line format.
enum class format { text, json };

/// "text", "json".
std::string_view to_string(format f) noexcept;

/// Parses to_string's spellings; std::nullopt otherwise.
std::optional<format> parse_format(std::string_view s) noexcept;

/// One key=value of a line. Numbers and booleans stay unquoted in JSON.
struct field {
  field(std::string_view k, std::string_view v) : key(k), value(v), quoted(true) {}
  field(std::string_view k, const char* v) : field(k, std::string_view(v)) {}
  field(std::string_view k, const std::string& v) : field(k, std::string_view(v)) {}
  field(std::string_view k, bool v) : key(k), value(v ? "true" : "false"), quoted(false) {}
  field(std::string_view k, double v);
  template <class T, class = std::enable_if_t<std::is_integral_v<T> && !std::is_same_v<T, bool>>>
  field(std::string_view k, T v) : key(k), value(std::to_string(v)), quoted(false) {}

  std::string_view key;
  std::string value;
  bool quoted;
};

/// The logger's settings.
struct settings {
  level min = level::info;
  format fmt = format::text;
  std::string node;  ///< added to every line as node=NAME when not empty (cluster nodes)
};

/// Sets the process-wide logger (call before threads log). `sink` receives each whole line with
/// its newline; empty => stderr.
void configure(settings s, std::function<void(std::string_view)> sink = {});

/// The current settings.
settings current();

/// Whether a line at `l` would be written (to skip building expensive fields).
bool enabled(level l) noexcept;

/// Writes one line if `l` is enabled.
void write(level l, std::string_view component, std::string_view message,
           std::initializer_list<field> fields = {});

inline void debug(std::string_view c, std::string_view m, std::initializer_list<field> f = {}) { write(level::debug, c, m, f); }
inline void info(std::string_view c, std::string_view m, std::initializer_list<field> f = {}) { write(level::info, c, m, f); }
inline void warn(std::string_view c, std::string_view m, std::initializer_list<field> f = {}) { write(level::warn, c, m, f); }
inline void error(std::string_view c, std::string_view m, std::initializer_list<field> f = {}) { write(level::error, c, m, f); }

/// One line as it is written (with its newline), for the time `t`. Pure: what write() uses.
std::string render(format fmt, std::chrono::system_clock::time_point t, level l,
                   std::string_view component, std::string_view message, std::string_view node,
                   const std::vector<field>& fields);

} // namespace lf::log
