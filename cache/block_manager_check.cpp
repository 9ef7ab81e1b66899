// block_manager::check_invariants: a from-scratch recount of everything the manager tracks
// incrementally. Kept apart from the hot paths in block_manager.cpp.

#include <map>
#include <stdexcept>
#include <string>
#include <tuple>

#include "cache/block_manager.hpp"

namespace lf::cache {

namespace {

[[noreturn]] void fail(const std::string& what) {
  throw std::logic_error("block_manager invariant violated: " + what);
}

std::string blk(std::uint32_t b) { return "block " + std::to_string(b); }

} // namespace

void block_manager::check_invariants() const {
  const auto n = cfg_.num_blocks;
  const auto bs = cfg_.block_size;
  if (blocks_.size() != n || tokens_.size() != std::size_t{n} * bs)
    fail("storage sizes do not match the configuration");

  // 1. Block tables: shape, references, and which entries are indexed.
  std::vector<std::uint32_t> refs(n, 0);
  std::vector<std::uint32_t> seen_in(n, 0); // stamp of the last table a block appeared in
  std::uint32_t stamp = 0;
  for (const auto& [seq, st] : seqs_) {
    ++stamp;
    const auto who = "sequence " + std::to_string(seq.value());
    if (st.table.size() != (std::uint64_t{st.num_slots} + bs - 1) / bs)
      fail(who + " has " + std::to_string(st.table.size()) + " blocks for "
           + std::to_string(st.num_slots) + " slots");
    if (st.num_computed > st.num_slots)
      fail(who + " has more computed tokens than slots");
    const auto want_indexed = cfg_.enable_prefix_cache ? st.num_computed / bs : 0;
    if (st.num_indexed != want_indexed)
      fail(who + " has " + std::to_string(st.num_indexed) + " indexed blocks, expected "
           + std::to_string(want_indexed));
    for (std::uint32_t pos = 0; pos < st.table.size(); ++pos) {
      const auto b = st.table[pos].value();
      if (b >= n)
        fail(who + " references out-of-range " + blk(b));
      if (seen_in[b] == stamp)
        fail(who + " holds " + blk(b) + " twice");
      seen_in[b] = stamp;
      ++refs[b];
      const auto& m = blocks_[b];
      if (pos >= st.num_indexed) {
        if (m.indexed)
          fail(who + " has indexed " + blk(b) + " at position " + std::to_string(pos)
               + " beyond its full, computed blocks");
        continue;
      }
      if (!m.indexed)
        fail(who + " has unindexed " + blk(b) + " among its full, computed blocks");
      if (m.adapter != st.adapter)
        fail(who + " shares " + blk(b) + " of another adapter");
      if (m.salt != st.salt)
        fail(who + " shares " + blk(b) + " of another salt");
      const auto* parent = pos > 0 ? &blocks_[st.table[pos - 1].value()] : nullptr;
      if (m.parent_cid != (parent ? parent->cid : 0)
          || m.parent_hash != (parent ? parent->hash : salted_root(st.salt)))
        fail(who + " holds " + blk(b) + " whose parent is not the previous table entry");
    }
  }

  // 2. Reference counts and pool membership: in use XOR cached (LRU) XOR free.
  lru_.check();
  std::vector<std::uint8_t> in_free(n, 0);
  for (auto b : free_) {
    if (b >= n || in_free[b])
      fail("free list holds " + blk(b) + " twice or out of range");
    in_free[b] = 1;
  }
  std::uint32_t num_indexed = 0;
  for (std::uint32_t b = 0; b < n; ++b) {
    const auto& m = blocks_[b];
    if (m.ref != refs[b])
      fail(blk(b) + " has refcount " + std::to_string(m.ref) + " but "
           + std::to_string(refs[b]) + " table references");
    if (m.ref > 1 && !m.indexed)
      fail(blk(b) + " is private (unindexed) but shared by " + std::to_string(m.ref)
           + " sequences");
    const bool cached = lru_.contains(b);
    if (m.ref > 0 && (cached || in_free[b]))
      fail(blk(b) + " is referenced and also free or evictable");
    if (m.ref == 0 && cached == (in_free[b] != 0))
      fail(blk(b) + " is unreferenced but in " + (cached ? "both pools" : "neither pool"));
    if (cached && !m.indexed)
      fail(blk(b) + " is in the LRU but not indexed");
    if (in_free[b] && m.indexed)
      fail(blk(b) + " is free but still indexed");
    num_indexed += m.indexed ? 1 : 0;
  }

  // 3. Index: every indexed block exactly once, under its recomputed hash.
  if (!cfg_.enable_prefix_cache && !index_.empty())
    fail("prefix cache disabled but the index is not empty");
  if (index_.size() != num_indexed)
    fail("index holds " + std::to_string(index_.size()) + " entries for "
         + std::to_string(num_indexed) + " indexed blocks");
  std::vector<std::uint8_t> in_index(n, 0);
  for (const auto& [h, b] : index_) {
    if (b >= n || in_index[b] || !blocks_[b].indexed)
      fail("index entry for " + blk(b) + " is duplicated, out of range or stale");
    in_index[b] = 1;
    const auto& m = blocks_[b];
    if (h != m.hash || m.hash != hash_(m.parent_hash, m.adapter, tokens_of(b), bs))
      fail(blk(b) + " is indexed under a hash that does not match its key");
  }

  // 4. Content ids are exact: equal key <=> equal content id.
  using key = std::tuple<std::uint64_t, std::uint32_t, std::uint64_t, std::vector<std::int32_t>>;
  std::map<key, std::uint64_t> cid_of_key;
  std::map<std::uint64_t, const key*> key_of_cid;
  for (std::uint32_t b = 0; b < n; ++b) {
    const auto& m = blocks_[b];
    if (!m.indexed)
      continue;
    if (m.cid == 0 || m.cid >= next_cid_)
      fail(blk(b) + " has an unassigned content id");
    key k{m.parent_cid, m.adapter.value(), m.salt.value(), {tokens_of(b), tokens_of(b) + bs}};
    auto [kit, new_key] = cid_of_key.emplace(std::move(k), m.cid);
    if (!new_key && kit->second != m.cid)
      fail(blk(b) + " has the same key as another block but a different content id");
    auto [cit, new_cid] = key_of_cid.emplace(m.cid, &kit->first);
    if (!new_cid && *cit->second != kit->first)
      fail(blk(b) + " shares its content id with a block of different content");
  }
}

} // namespace lf::cache
