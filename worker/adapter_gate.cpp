#include "worker/adapter_gate.hpp"

namespace lf::worker {

bool adapter_gate::ready(cache::adapter_id a) const {
  return a == cache::base_model || (adapters_ != nullptr && adapters_->ready(a));
}

void adapter_gate::take_turn(const std::vector<cache::adapter_id>& running,
                             const std::vector<cache::adapter_id>& waiting, bool base_decides) {
  turn_.reset();
  if (!single_)
    return;
  for (auto a : running)
    if (a != cache::base_model) {
      turn_ = a;  // kept while the current adapter's sequences run
      return;
    }
  for (auto a : waiting)
    if ((base_decides || a != cache::base_model) && ready(a)) {
      turn_ = a;
      return;
    }
  turn_ = cache::base_model;  // nobody's turn yet: no adapter may start in this step
}

bool adapter_gate::loads_settled() {
  if (adapters_ == nullptr)
    return false;
  const auto settled = adapters_->settled_count();
  if (settled == settled_seen_)
    return false;
  settled_seen_ = settled;
  return true;
}

std::optional<cache::adapter_info> adapter_gate::failure(cache::adapter_id a) const {
  if (a == cache::base_model || adapters_ == nullptr || adapters_->state(a) != cache::adapter_state::failed)
    return std::nullopt;
  return adapters_->info(a);
}

} // namespace lf::worker
