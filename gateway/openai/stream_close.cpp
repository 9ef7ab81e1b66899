#include "gateway/openai/stream_close.hpp"

#include <cctype>

namespace lf::gateway {

namespace {

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size())
    return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != std::tolower(static_cast<unsigned char>(b[i])))
      return false;
  return true;
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.substr(0, prefix.size()) == prefix;
}

/// The major version in "v18.20.4" or "18.20.4"; -1 when it does not start with digits.
int major_version(std::string_view v) {
  if (!v.empty() && (v[0] == 'v' || v[0] == 'V'))
    v.remove_prefix(1);
  int major = 0;
  std::size_t digits = 0;
  for (; digits < v.size() && digits < 6 && std::isdigit(static_cast<unsigned char>(v[digits])); ++digits)
    major = major * 10 + (v[digits] - '0');
  return digits == 0 ? -1 : major;
}

} // namespace

bool close_after_stream(const stream_client& c) {
  if (iequals(c.connection, "close"))
    return true;
  if (starts_with(c.user_agent, "node-fetch"))
    return true;
  if (iequals(c.runtime, "node")) {
    const int major = major_version(c.runtime_version);
    return major >= 0 && major < 20;
  }
  return false;
}

} // namespace lf::gateway
