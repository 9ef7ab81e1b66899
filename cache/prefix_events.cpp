#include "cache/prefix_events.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf::cache {

std::vector<std::uint64_t> public_block_hashes(const std::vector<std::int32_t>& tokens, std::uint32_t block_size,
                                               cache_salt salt, std::uint64_t tag, std::size_t max_blocks) {
  if (block_size == 0)
    throw std::invalid_argument("public_block_hashes: block_size must be > 0");
  const std::size_t n = std::min(tokens.size() / block_size, max_blocks);
  std::vector<std::uint64_t> out;
  out.reserve(n);
  std::uint64_t parent = public_root(salt, tag);
  for (std::size_t i = 0; i < n; ++i) {
    parent = default_block_hash(parent, base_model, tokens.data() + i * block_size, block_size);
    out.push_back(parent);
  }
  return out;
}

void prefix_event_log::note(std::uint64_t hash, bool stored) {
  if (snapshot_owed_)
    return;  // the snapshot will say it
  auto [it, fresh] = pending_.emplace(hash, stored);
  if (!fresh) {
    // The opposite change is pending: together they change nothing the receiver knows.
    pending_.erase(it);
    return;
  }
  if (pending_.size() > o_.max_pending) {
    pending_.clear();
    snapshot_owed_ = true;
  }
}

void prefix_event_log::stored(std::uint64_t hash) {
  if (copies_[hash]++ == 0)
    note(hash, true);  // a second copy of the content changes nothing outside
}

void prefix_event_log::removed(std::uint64_t hash) {
  auto it = copies_.find(hash);
  if (it == copies_.end())
    return;
  if (--it->second > 0)
    return;
  copies_.erase(it);
  note(hash, false);
}

bool prefix_event_log::due(clock::time_point now) const {
  if (!snapshot_owed_ && pending_.empty())
    return false;
  return !ever_ || now - last_ >= o_.min_interval;
}

prefix_event_batch prefix_event_log::take(clock::time_point now) {
  prefix_event_batch b;
  if (!due(now))
    return b;
  b.seq = ++seq_;
  last_ = now;
  ever_ = true;
  if (snapshot_owed_) {
    snapshot_owed_ = false;
    b.snapshot = true;
    b.stored.reserve(copies_.size());
    for (const auto& [h, n] : copies_)
      b.stored.push_back(h);
    pending_.clear();
    return b;
  }
  for (const auto& [h, stored] : pending_)
    (stored ? b.stored : b.removed).push_back(h);
  pending_.clear();
  return b;
}

} // namespace lf::cache
