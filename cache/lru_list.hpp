#pragma once
/// Intrusive doubly-linked list over the dense indices [0, capacity): O(1) push_back, remove and
/// pop_front, no allocation after construction. The block manager keeps its evictable cached
/// blocks in one, least recently used at the front.

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace lf::cache {

/// A queue of distinct indices in [0, capacity) that also supports removal from the middle.
class lru_list {
public:
  /// "No index": the end of the list.
  static constexpr std::uint32_t npos = UINT32_MAX;

  explicit lru_list(std::uint32_t capacity)
    : prev_(capacity, npos), next_(capacity, npos), linked_(capacity, 0) {}

  std::uint32_t size() const noexcept { return size_; }
  bool empty() const noexcept { return size_ == 0; }
  bool contains(std::uint32_t i) const { return linked_.at(i) != 0; }

  /// The least recently pushed index still linked; npos when empty.
  std::uint32_t front() const noexcept { return head_; }

  /// The index after `i` (towards the most recent end); npos at the end.
  std::uint32_t next(std::uint32_t i) const { return next_.at(i); }

  /// Appends `i` as the most recent entry. `i` must not be linked.
  void push_back(std::uint32_t i) {
    if (contains(i))
      throw std::logic_error("lru_list::push_back: index " + std::to_string(i) + " already linked");
    prev_[i] = tail_;
    next_[i] = npos;
    if (tail_ == npos)
      head_ = i;
    else
      next_[tail_] = i;
    tail_ = i;
    linked_[i] = 1;
    ++size_;
  }

  /// Unlinks `i`, wherever it is. `i` must be linked.
  void remove(std::uint32_t i) {
    if (!contains(i))
      throw std::logic_error("lru_list::remove: index " + std::to_string(i) + " not linked");
    if (prev_[i] == npos)
      head_ = next_[i];
    else
      next_[prev_[i]] = next_[i];
    if (next_[i] == npos)
      tail_ = prev_[i];
    else
      prev_[next_[i]] = prev_[i];
    prev_[i] = next_[i] = npos;
    linked_[i] = 0;
    --size_;
  }

  /// Unlinks and returns the front. The list must not be empty.
  std::uint32_t pop_front() {
    if (empty())
      throw std::logic_error("lru_list::pop_front: empty list");
    auto i = head_;
    remove(i);
    return i;
  }

  /// Walks the list and throws std::logic_error if the links, flags or size disagree.
  void check() const {
    std::uint32_t count = 0;
    std::uint32_t prev = npos;
    for (auto i = head_; i != npos; i = next_[i]) {
      if (i >= linked_.size() || !linked_[i] || prev_[i] != prev || ++count > size_)
        throw std::logic_error("lru_list: broken links at index " + std::to_string(i));
      prev = i;
    }
    if (prev != tail_ || count != size_)
      throw std::logic_error("lru_list: tail or size mismatch");
    std::uint32_t flagged = 0;
    for (auto f : linked_)
      flagged += f;
    if (flagged != size_)
      throw std::logic_error("lru_list: linked flags do not match size");
  }

private:
  std::vector<std::uint32_t> prev_;
  std::vector<std::uint32_t> next_;
  std::vector<std::uint8_t> linked_; // uint8_t, not bool: plain loads, no bit packing
  std::uint32_t head_ = npos;
  std::uint32_t tail_ = npos;
  std::uint32_t size_ = 0;
};

} // namespace lf::cache
