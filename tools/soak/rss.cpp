#include "tools/soak/rss.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>

namespace lf::soak {

std::optional<std::uint64_t> parse_vm_rss_kib(std::string_view text) {
  constexpr std::string_view key = "VmRSS:";
  std::size_t at = 0;
  while (at < text.size()) {
    const auto end = std::min(text.find('\n', at), text.size());
    const auto line = text.substr(at, end - at);
    at = end + 1;
    if (line.substr(0, key.size()) != key)
      continue;
    std::istringstream in{std::string(line.substr(key.size()))};
    std::uint64_t kib = 0;
    std::string unit;
    if (in >> kib >> unit && unit == "kB")
      return kib;
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> read_rss_kib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  if (!in)
    return std::nullopt;
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_vm_rss_kib(ss.str());
}

std::uint64_t rss_bound::limit_kib(std::uint64_t before_kib) const {
  const double grow = std::max(before_kib * percent / 100.0, mib * 1024.0);
  return before_kib + static_cast<std::uint64_t>(std::llround(grow));
}

std::string rss_bound::describe() const {
  std::ostringstream s;
  s << "+" << percent << "% or +" << mib << " MiB, whichever is larger";
  return s.str();
}

} // namespace lf::soak
