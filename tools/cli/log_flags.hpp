#pragma once
/// --log-level and --log-format, shared by serve, node and launch.

#include <stdexcept>
#include <string>
#include <vector>

#include "core/log.hpp"
#include "tools/common/args.hpp"

namespace lf::tools {

/// The logger settings from --log-level (debug, info, warn, error, off; default `level`) and
/// --log-format (text, json); `node` is added to every line.
inline log::settings log_settings_from(args& a, const std::string& level = "info",
                                       const std::string& node = {}) {
  log::settings s;
  const auto lv = a.str("log-level", level);
  const auto l = log::parse_level(lv);
  if (!l)
    throw std::invalid_argument("--log-level must be debug, info, warn, error or off (got '" + lv + "')");
  const auto fm = a.str("log-format", "text");
  const auto f = log::parse_format(fm);
  if (!f)
    throw std::invalid_argument("--log-format must be text or json (got '" + fm + "')");
  s.min = *l;
  s.fmt = *f;
  s.node = node;
  return s;
}

/// The same flags as arguments for a child process.
inline std::vector<std::string> log_flags_of(const log::settings& s) {
  return {"--log-level", std::string(log::to_string(s.min)), "--log-format",
          std::string(log::to_string(s.fmt))};
}

} // namespace lf::tools
