#pragma once
/// The router's bounded admission queue: accepted requests that no worker has room for yet.
/// Pure C++. FIFO; a new request is refused when the queue is full (the router then answers
/// `overloaded` at once). Requests taken back from a dead worker go to the front regardless of
/// the bound: they were admitted already and have waited longest. Any entry can be removed
/// (cancel, deadline) in O(1).

#include <cstddef>
#include <list>
#include <optional>
#include <unordered_map>

namespace lf::router {

/// See the file comment. `Id` must be hashable and equality-comparable.
template <class Id>
class admission_queue {
public:
  /// `capacity`: most entries push() admits (push_front() may exceed it).
  explicit admission_queue(std::size_t capacity) : capacity_(capacity) {}

  /// Appends `id`; false (and no change) when full or already queued.
  bool push(Id id) {
    if (full() || pos_.count(id))
      return false;
    pos_.emplace(id, order_.insert(order_.end(), id));
    return true;
  }

  /// Puts `id` first, even when full; false if already queued.
  bool push_front(Id id) {
    if (pos_.count(id))
      return false;
    pos_.emplace(id, order_.insert(order_.begin(), id));
    return true;
  }

  /// The oldest entry, if any.
  std::optional<Id> front() const {
    if (order_.empty())
      return std::nullopt;
    return order_.front();
  }

  /// Removes and returns the oldest entry.
  std::optional<Id> pop() {
    auto f = front();
    if (f)
      remove(*f);
    return f;
  }

  /// Removes `id`; false if it was not queued.
  bool remove(Id id) {
    auto it = pos_.find(id);
    if (it == pos_.end())
      return false;
    order_.erase(it->second);
    pos_.erase(it);
    return true;
  }

  bool contains(Id id) const { return pos_.count(id) != 0; }
  std::size_t size() const noexcept { return order_.size(); }
  bool empty() const noexcept { return order_.empty(); }
  bool full() const noexcept { return order_.size() >= capacity_; }
  std::size_t capacity() const noexcept { return capacity_; }

private:
  std::size_t capacity_;
  std::list<Id> order_;
  std::unordered_map<Id, typename std::list<Id>::iterator> pos_;
};

} // namespace lf::router
