#include "gateway/common/audit.hpp"

#include "core/log.hpp"

namespace lf::gateway {

void audit(const auth::caller& c, std::string_view remote, std::string_view door, std::string_view op,
           std::string_view result, std::string_view why) {
  const std::string_view key = c.keyed() ? std::string_view(c.name) : std::string_view("-");
  const std::string_view role = c.keyed() ? auth::to_string(c.role) : std::string_view("-");
  const std::string_view from = remote.empty() ? std::string_view("-") : remote;
  const bool refused = result == "unauthenticated" || result == "forbidden";
  if (why.empty())
    log::info("audit", refused ? "refused" : "admin operation",
              {{"key", key}, {"role", role}, {"remote", from}, {"door", door}, {"op", op}, {"result", result}});
  else
    log::info("audit", refused ? "refused" : "admin operation",
              {{"key", key}, {"role", role}, {"remote", from}, {"door", door}, {"op", op}, {"result", result},
               {"why", why}});
}

} // namespace lf::gateway
