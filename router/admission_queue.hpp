#pragma once
/// The router's bounded admission queue: accepted requests that no worker has room for yet, one
/// first-come-first-served line per tenant. Pure C++. `next()` says which request goes next:
///
///   1. requests taken back from a lost or drained worker (push_front), oldest move last: they
///      were admitted already and have waited longest;
///   2. fcfs: the oldest head among the tenants `eligible` accepts;
///      vtc:  the head of the eligible backlogged tenant with the smallest virtual token counter
///            (core/vtc.hpp; the owner charges the counters as requests are served).
///
/// `eligible` lets the owner hold back a tenant at its in-flight limit without blocking the
/// others. A new request is refused when the queue is full (the router then answers `overloaded`
/// at once); push_front ignores the bound. Any entry can be removed (cancel, deadline).

#include <cstddef>
#include <functional>
#include <list>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/vtc.hpp"
#include "router/tenancy.hpp"

namespace lf::router {

/// See the file comment. `Id` must be hashable and equality-comparable.
template <class Id>
class admission_queue {
public:
  /// Tenants the caller lets go next (empty: all).
  using eligible_fn = std::function<bool(const std::string&)>;

  /// `capacity`: most entries push() admits (push_front() may exceed it).
  explicit admission_queue(std::size_t capacity, scheduling_policy policy = scheduling_policy::fcfs,
                           vtc_weights weights = {})
    : capacity_(capacity), policy_(policy), counters_(weights) {}

  /// Appends `id` to `tenant`'s line; false (and no change) when full or already queued.
  bool push(Id id, const std::string& tenant) {
    if (full() || pos_.count(id))
      return false;
    auto& line = lines_[tenant];
    if (line.empty())
      counters_.backlogged(tenant);
    pos_.emplace(id, where{false, line.insert(line.end(), item{id, seq_++, tenant})});
    return true;
  }

  /// Puts `id` before every line, even when full; false if already queued.
  bool push_front(Id id) {
    if (pos_.count(id))
      return false;
    pos_.emplace(id, where{true, front_.insert(front_.begin(), item{id, seq_++, {}})});
    return true;
  }

  /// The request to place next (see the file comment), if any.
  std::optional<Id> next(const eligible_fn& eligible = {}) const {
    if (!front_.empty())
      return front_.front().id;
    if (policy_ == scheduling_policy::vtc) {
      auto t = counters_.pick(eligible);
      if (!t)
        return std::nullopt;
      return lines_.at(*t).front().id;
    }
    const item* oldest = nullptr;
    for (const auto& [tenant, line] : lines_)
      if ((!eligible || eligible(tenant)) && (oldest == nullptr || line.front().seq < oldest->seq))
        oldest = &line.front();
    if (oldest == nullptr)
      return std::nullopt;
    return oldest->id;
  }

  /// Removes `id`; false if it was not queued.
  bool remove(Id id) {
    auto it = pos_.find(id);
    if (it == pos_.end())
      return false;
    if (it->second.front) {
      front_.erase(it->second.at);
    } else {
      const auto tenant = it->second.at->tenant;
      auto line = lines_.find(tenant);
      line->second.erase(it->second.at);
      if (line->second.empty()) {
        lines_.erase(line);
        counters_.idle(tenant);
      }
    }
    pos_.erase(it);
    return true;
  }

  bool contains(Id id) const { return pos_.count(id) != 0; }
  std::size_t size() const noexcept { return pos_.size(); }
  bool empty() const noexcept { return pos_.empty(); }
  bool full() const noexcept { return pos_.size() >= capacity_; }
  std::size_t capacity() const noexcept { return capacity_; }
  scheduling_policy policy() const noexcept { return policy_; }

  /// Requests of `tenant` in its line (moved requests in the front lane not counted).
  std::size_t queued(const std::string& tenant) const {
    auto it = lines_.find(tenant);
    return it == lines_.end() ? 0 : it->second.size();
  }

  /// The virtual token counters: the owner charges them as requests are served and sets weights.
  vtc& counters() noexcept { return counters_; }
  const vtc& counters() const noexcept { return counters_; }

private:
  struct item {
    Id id;
    std::uint64_t seq;   ///< arrival order (fcfs across tenants)
    std::string tenant;  ///< empty in the front lane
  };
  struct where {
    bool front;
    typename std::list<item>::iterator at;
  };

  std::size_t capacity_;
  scheduling_policy policy_;
  vtc counters_;
  std::list<item> front_;
  std::unordered_map<std::string, std::list<item>> lines_;  ///< non-empty lines only
  std::unordered_map<Id, where> pos_;
  std::uint64_t seq_ = 0;
};

} // namespace lf::router
