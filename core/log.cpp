#include "core/log.hpp"

#include "core/json_quote.hpp"

#include <atomic>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <mutex>

namespace lf::log {

namespace {

struct logger {
  std::mutex m;
  settings s;
  std::function<void(std::string_view)> sink;
  std::atomic<int> min{static_cast<int>(level::info)};
};

logger& the_logger() {
  static logger l;
  return l;
}

/// 2026-11-24T07:45:01.123Z
std::string timestamp(std::chrono::system_clock::time_point t) {
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  const std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char buf[64];  // room for any int the fields could hold, so nothing is cut
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
                static_cast<int>(ms % 1000));
  return buf;
}

void json_string(std::string& out, std::string_view s) { append_json_string(out, s); }

/// A text value: bare when it is one simple word, else quoted like JSON.
void text_value(std::string& out, std::string_view v) {
  bool bare = !v.empty();
  for (unsigned char c : v)
    if (c <= ' ' || c == '"' || c == '=' || c == '\\' || c >= 0x7f)
      bare = false;
  if (bare)
    out += v;
  else
    json_string(out, v);
}

} // namespace

field::field(std::string_view k, double v) : key(k), quoted(false) {
  if (!std::isfinite(v)) {  // JSON has no NaN or infinities
    value = "null";
    return;
  }
  char buf[32];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general, 6);
  value.assign(buf, r.ptr);
}

std::string_view to_string(level l) noexcept {
  switch (l) {
    case level::debug: return "debug";
    case level::info: return "info";
    case level::warn: return "warn";
    case level::error: return "error";
    case level::off: return "off";
  }
  return "info";
}

std::optional<level> parse_level(std::string_view s) noexcept {
  for (auto l : {level::debug, level::info, level::warn, level::error, level::off})
    if (to_string(l) == s)
      return l;
  return std::nullopt;
}

std::string_view to_string(format f) noexcept { return f == format::json ? "json" : "text"; }

std::optional<format> parse_format(std::string_view s) noexcept {
  if (s == "text")
    return format::text;
  if (s == "json")
    return format::json;
  return std::nullopt;
}

std::string render(format fmt, std::chrono::system_clock::time_point t, level l,
                   std::string_view component, std::string_view message, std::string_view node,
                   const std::vector<field>& fields) {
  std::string out;
  out.reserve(128 + fields.size() * 24);
  if (fmt == format::json) {
    out += "{\"ts\":\"" + timestamp(t) + "\",\"level\":\"";
    out += to_string(l);
    out += "\",\"component\":";
    json_string(out, component);
    out += ",\"msg\":";
    json_string(out, message);
    if (!node.empty()) {
      out += ",\"node\":";
      json_string(out, node);
    }
    for (const auto& f : fields) {
      out += ',';
      json_string(out, f.key);
      out += ':';
      if (f.quoted)
        json_string(out, f.value);
      else
        out += f.value;
    }
    out += "}\n";
    return out;
  }
  out += timestamp(t);
  out += ' ';
  std::string lv(to_string(l));
  for (auto& c : lv)
    c = static_cast<char>(c - 'a' + 'A');
  lv.resize(5, ' ');
  out += lv;
  out += ' ';
  out += component;
  out += ' ';
  out += message;
  if (!node.empty()) {
    out += " node=";
    text_value(out, node);
  }
  for (const auto& f : fields) {
    out += ' ';
    out += f.key;
    out += '=';
    if (f.quoted)
      text_value(out, f.value);
    else
      out += f.value;
  }
  out += '\n';
  return out;
}

void configure(settings s, std::function<void(std::string_view)> sink) {
  auto& lg = the_logger();
  std::lock_guard<std::mutex> g(lg.m);
  lg.min = static_cast<int>(s.min);
  lg.s = std::move(s);
  lg.sink = std::move(sink);
}

settings current() {
  auto& lg = the_logger();
  std::lock_guard<std::mutex> g(lg.m);
  return lg.s;
}

bool enabled(level l) noexcept {
  return l != level::off && static_cast<int>(l) >= the_logger().min.load(std::memory_order_relaxed);
}

void write(level l, std::string_view component, std::string_view message,
           std::initializer_list<field> fields) {
  if (!enabled(l))
    return;
  auto& lg = the_logger();
  const auto now = std::chrono::system_clock::now();
  std::lock_guard<std::mutex> g(lg.m);
  const auto line = render(lg.s.fmt, now, l, component, message, lg.s.node, std::vector<field>(fields));
  if (lg.sink) {
    lg.sink(line);
  } else {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fflush(stderr);
  }
}

} // namespace lf::log
