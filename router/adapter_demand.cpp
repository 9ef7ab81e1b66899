#include "router/adapter_demand.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf::router {

adapter_demand::adapter_demand(adapter_demand_options opts) : opts_(opts) {
  if (opts_.window == 0)
    throw std::invalid_argument("adapter_demand: window must be > 0");
}

void adapter_demand::note(const std::string& key) {
  order_.push_back(key);
  ++counts_[key];
  if (order_.size() > opts_.window) {
    auto it = counts_.find(order_.front());
    if (--it->second == 0) {
      counts_.erase(it);
      last_copy_.erase(order_.front());  // forgotten with its last request: bounded memory
    }
    order_.pop_front();
  }
}

std::uint32_t adapter_demand::recent(const std::string& key) const {
  auto it = counts_.find(key);
  return it == counts_.end() ? 0 : it->second;
}

bool adapter_demand::wants_copy(const std::string& key, std::uint32_t holders, std::uint32_t workers,
                                clock::time_point now) {
  const auto n = recent(key);
  if (key.empty() || workers == 0 || holders >= workers || n < opts_.min_requests)
    return false;
  // share > holders / workers, in integers: n * workers > holders * total
  if (static_cast<std::uint64_t>(n) * workers <= static_cast<std::uint64_t>(holders) * total())
    return false;
  if (auto it = last_copy_.find(key); it != last_copy_.end() && now - it->second < opts_.cooldown)
    return false;
  last_copy_[key] = now;
  return true;
}

} // namespace lf::router
