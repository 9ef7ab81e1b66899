#include "tools/loadtest/http_reuse.hpp"

#include <cctype>

namespace lf::loadtest {

namespace {

/// True when the comma-separated `list` holds `token` (ASCII, any case, spaces around ignored).
bool has_token(std::string_view list, std::string_view token) {
  while (!list.empty()) {
    const auto comma = list.find(',');
    auto item = list.substr(0, comma);
    list = comma == std::string_view::npos ? std::string_view() : list.substr(comma + 1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.front())))
      item.remove_prefix(1);
    while (!item.empty() && std::isspace(static_cast<unsigned char>(item.back())))
      item.remove_suffix(1);
    if (item.size() != token.size())
      continue;
    bool same = true;
    for (std::size_t i = 0; i < item.size() && same; ++i)
      same = std::tolower(static_cast<unsigned char>(item[i])) == std::tolower(static_cast<unsigned char>(token[i]));
    if (same)
      return true;
  }
  return false;
}

} // namespace

bool resend_on_fresh_connection(const http_attempt& a) {
  return a.reused && a.connection_closed && !a.response_started && a.resends < max_stale_resends;
}

bool reusable_after_reply(int major, int minor, std::string_view connection) {
  if (has_token(connection, "close"))
    return false;
  if (major > 1 || (major == 1 && minor >= 1))
    return true;  // HTTP/1.1 and later keep the connection unless told otherwise
  return has_token(connection, "keep-alive");
}

} // namespace lf::loadtest
