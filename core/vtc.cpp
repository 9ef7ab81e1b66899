#include "core/vtc.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

namespace lf {

std::string_view to_string(scheduling_policy p) noexcept {
  switch (p) {
    case scheduling_policy::fcfs: return "fcfs";
    case scheduling_policy::vtc: return "vtc";
  }
  return "vtc";
}

std::optional<scheduling_policy> parse_scheduling_policy(std::string_view s) noexcept {
  if (s == "fcfs")
    return scheduling_policy::fcfs;
  if (s == "vtc")
    return scheduling_policy::vtc;
  return std::nullopt;
}

vtc::vtc(vtc_weights w) : w_(w) {
  if (!std::isfinite(w.prompt) || !std::isfinite(w.output) || w.prompt < 0 || w.output < 0)
    throw std::invalid_argument("vtc: token weights must be finite and >= 0");
}

void vtc::set_weight(const std::string& tenant, double weight) {
  if (!std::isfinite(weight) || !(weight > 0))
    throw std::invalid_argument("vtc: tenant weight must be finite and > 0");
  weight_[tenant] = weight;
}

void vtc::set_default_weight(double weight) {
  if (!std::isfinite(weight) || !(weight > 0))
    throw std::invalid_argument("vtc: tenant weight must be finite and > 0");
  default_weight_ = weight;
}

double vtc::weight(const std::string& tenant) const {
  auto it = weight_.find(tenant);
  return it == weight_.end() ? default_weight_ : it->second;
}

double vtc::floor() const {
  if (backlogged_ == 0) {
    if (!last_left_)
      return 0;
    auto it = t_.find(*last_left_);
    return it != t_.end() ? it->second.counter : last_left_counter_;
  }
  double lo = std::numeric_limits<double>::infinity();
  for (const auto& [name, e] : t_)
    if (e.backlogged)
      lo = std::min(lo, e.counter);
  return lo;
}

void vtc::backlogged(const std::string& tenant) {
  auto found = t_.find(tenant);
  if (found != t_.end() && found->second.backlogged)
    return;
  const double lift = floor();  // before `tenant` joins the backlogged set
  auto& e = t_[tenant];
  e.counter = std::max(e.counter, lift);
  e.backlogged = true;
  e.since = seq_++;
  ++backlogged_;
}

void vtc::idle(const std::string& tenant) {
  auto it = t_.find(tenant);
  if (it == t_.end() || !it->second.backlogged)
    return;
  it->second.backlogged = false;
  --backlogged_;
  last_left_ = tenant;
  last_left_counter_ = it->second.counter;
  if (t_.size() >= prune_at_)
    prune();
}

bool vtc::is_backlogged(const std::string& tenant) const {
  auto it = t_.find(tenant);
  return it != t_.end() && it->second.backlogged;
}

void vtc::charge(const std::string& tenant, std::uint64_t prompt_tokens, std::uint64_t output_tokens) {
  const double cost = w_.prompt * static_cast<double>(prompt_tokens) + w_.output * static_cast<double>(output_tokens);
  if (cost == 0)
    return;
  auto [it, fresh] = t_.try_emplace(tenant);
  it->second.counter += cost / weight(tenant);
  if (fresh && t_.size() >= prune_at_)
    prune();
}

double vtc::counter(const std::string& tenant) const {
  auto it = t_.find(tenant);
  return it == t_.end() ? 0.0 : it->second.counter;
}

std::optional<std::string> vtc::pick(const std::function<bool(const std::string&)>& eligible) const {
  const std::string* best = nullptr;
  const entry* best_e = nullptr;
  for (const auto& [name, e] : t_) {
    if (!e.backlogged || (eligible && !eligible(name)))
      continue;
    if (best_e == nullptr || e.counter < best_e->counter
        || (e.counter == best_e->counter && e.since < best_e->since)) {
      best = &name;
      best_e = &e;
    }
  }
  if (best == nullptr)
    return std::nullopt;
  return *best;
}

double vtc::backlogged_weight() const {
  double sum = 0;
  for (const auto& [name, e] : t_)
    if (e.backlogged)
      sum += weight(name);
  return sum;
}

void vtc::prune() {
  const double f = floor();
  std::vector<std::pair<double, std::string>> idle;
  for (const auto& [name, e] : t_)
    if (!e.backlogged && name != last_left_)
      idle.emplace_back(e.counter, name);
  // First the counters the lift would bring to the floor anyway; then, past max_tenants, the
  // smallest idle ones (a returning tenant may then start lower than it would have: a small
  // unfairness, against memory that grows with every name a client invents).
  auto above = std::partition(idle.begin(), idle.end(), [f](const auto& x) { return x.first <= f; });
  auto drop = static_cast<std::size_t>(above - idle.begin());
  if (t_.size() - drop > max_tenants) {
    const auto more = std::min(idle.size(), t_.size() - max_tenants) - drop;
    std::nth_element(above, above + static_cast<std::ptrdiff_t>(more), idle.end());
    drop += more;
  }
  for (std::size_t i = 0; i < drop; ++i)
    t_.erase(idle[i].second);
  // Amortised: the next pruning after as many new names again, at most 1024 past the cap.
  prune_at_ = std::max<std::size_t>(1024, std::min(2 * t_.size(), max_tenants + 1024));
}

} // namespace lf
