#include "router/prefix_index.hpp"

#include <algorithm>

namespace lf::router {

void prefix_index::add(actors::worker_id w, std::uint64_t bound) {
  auto& e = workers_[w];
  clear(w, e);
  e.bound = bound;
  e.st = {};
}

void prefix_index::remove(actors::worker_id w) {
  auto it = workers_.find(w);
  if (it == workers_.end())
    return;
  clear(w, it->second);
  workers_.erase(it);
}

void prefix_index::resync(actors::worker_id w) {
  auto it = workers_.find(w);
  if (it == workers_.end())
    return;
  clear(w, it->second);
  it->second.st.next_seq = 0;
}

index_outcome prefix_index::apply(actors::worker_id w, const cache::prefix_event_batch& b) {
  auto it = workers_.find(w);
  if (it == workers_.end() || b.seq == 0)
    return index_outcome::ignored;
  auto& e = it->second;
  if (b.snapshot) {
    // A snapshot replaces what the index knew, whatever the numbers said before.
    clear(w, e);
    for (auto h : b.stored)
      insert(w, e, h);
    e.st.next_seq = b.seq + 1;
    ++e.st.snapshots;
    return index_outcome::applied;
  }
  if (e.st.next_seq == 0 || b.seq < e.st.next_seq)
    return index_outcome::ignored;  // awaiting a snapshot, or older than the one applied
  if (b.seq != e.st.next_seq) {
    clear(w, e);
    e.st.next_seq = 0;
    ++e.st.gaps;
    return index_outcome::gap;
  }
  for (auto h : b.removed)
    erase(w, e, h);
  for (auto h : b.stored)
    insert(w, e, h);
  e.st.next_seq = b.seq + 1;
  return index_outcome::applied;
}

std::map<actors::worker_id, std::uint32_t> prefix_index::longest_prefixes(
  const std::vector<std::uint64_t>& hashes) const {
  std::map<actors::worker_id, std::uint32_t> out;
  if (hashes.empty())
    return out;
  auto first = holders_.find(hashes[0]);
  if (first == holders_.end())
    return out;
  std::vector<actors::worker_id> alive = first->second;  // still matching
  for (auto w : alive)
    out[w] = 1;
  for (std::size_t i = 1; i < hashes.size() && !alive.empty(); ++i) {
    auto h = holders_.find(hashes[i]);
    if (h == holders_.end())
      break;
    const auto& hold = h->second;
    alive.erase(std::remove_if(alive.begin(), alive.end(),
                               [&](actors::worker_id w) {
                                 return std::find(hold.begin(), hold.end(), w) == hold.end();
                               }),
                alive.end());
    for (auto w : alive)
      out[w] = static_cast<std::uint32_t>(i + 1);
  }
  return out;
}

bool prefix_index::holds(actors::worker_id w, std::uint64_t hash) const {
  auto it = workers_.find(w);
  return it != workers_.end() && it->second.hashes.count(hash) != 0;
}

index_worker_stats prefix_index::stats(actors::worker_id w) const {
  auto it = workers_.find(w);
  if (it == workers_.end())
    return {};
  auto s = it->second.st;
  s.blocks = it->second.hashes.size();
  return s;
}

void prefix_index::insert(actors::worker_id w, worker_entry& e, std::uint64_t hash) {
  if (e.hashes.count(hash) != 0)
    return;
  if (e.hashes.size() >= e.bound) {
    ++e.st.dropped;  // more than its pool can index: a confused or hostile worker
    return;
  }
  e.hashes.insert(hash);
  holders_[hash].push_back(w);
  ++entries_;
}

void prefix_index::erase(actors::worker_id w, worker_entry& e, std::uint64_t hash) {
  if (e.hashes.erase(hash) == 0)
    return;
  auto it = holders_.find(hash);
  if (it != holders_.end()) {
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), w), v.end());
    if (v.empty())
      holders_.erase(it);
  }
  --entries_;
}

void prefix_index::clear(actors::worker_id w, worker_entry& e) {
  for (auto h : e.hashes) {
    auto it = holders_.find(h);
    if (it == holders_.end())
      continue;
    auto& v = it->second;
    v.erase(std::remove(v.begin(), v.end(), w), v.end());
    if (v.empty())
      holders_.erase(it);
  }
  entries_ -= e.hashes.size();
  e.hashes.clear();
}

} // namespace lf::router
