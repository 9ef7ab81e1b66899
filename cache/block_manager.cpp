#include "cache/block_manager.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace lf::cache {

namespace {

std::string seq_name(seq_id seq) { return "sequence " + std::to_string(seq.value()); }

/// ceil(tokens / block_size) in 64 bits, so tokens near UINT32_MAX cannot overflow.
std::uint64_t blocks_for(std::uint64_t tokens, std::uint32_t block_size) {
  return (tokens + block_size - 1) / block_size;
}

} // namespace

double block_manager::stats::hit_rate() const noexcept {
  return prefix_query_tokens == 0
           ? 0.0
           : static_cast<double>(prefix_hit_tokens) / static_cast<double>(prefix_query_tokens);
}

block_manager::block_manager(block_manager_config cfg)
  : cfg_(cfg),
    hash_(cfg.hasher != nullptr ? cfg.hasher : &default_block_hash),
    blocks_(cfg.num_blocks),
    tokens_(std::size_t{cfg.num_blocks} * cfg.block_size),
    lru_(cfg.num_blocks) {
  if (cfg.num_blocks == 0 || cfg.block_size == 0)
    throw std::invalid_argument("block_manager: num_blocks and block_size must be > 0");
  // Pushed in reverse so the stack hands out block 0 first: predictable tables in tests and logs.
  free_.reserve(cfg.num_blocks);
  for (auto b = cfg.num_blocks; b-- > 0;)
    free_.push_back(b);
  index_.reserve(cfg.num_blocks);
}

// -- queries ------------------------------------------------------------------------------------

block_manager::seq_state& block_manager::state_of(seq_id seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end())
    throw std::out_of_range("block_manager: unknown " + seq_name(seq));
  return it->second;
}

const block_manager::seq_state& block_manager::state_of(seq_id seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end())
    throw std::out_of_range("block_manager: unknown " + seq_name(seq));
  return it->second;
}

bool block_manager::contains(seq_id seq) const { return seqs_.count(seq) != 0; }

const std::vector<block_id>& block_manager::block_table(seq_id seq) const {
  return state_of(seq).table;
}

std::uint64_t block_manager::slot_of(seq_id seq, std::uint32_t pos) const {
  const auto& st = state_of(seq);
  if (pos >= st.num_slots)
    throw std::out_of_range("block_manager::slot_of: position " + std::to_string(pos)
                            + " has no slot in " + seq_name(seq));
  return std::uint64_t{st.table[pos / cfg_.block_size].value()} * cfg_.block_size
         + pos % cfg_.block_size;
}

std::uint32_t block_manager::num_slots(seq_id seq) const { return state_of(seq).num_slots; }

std::uint32_t block_manager::num_computed(seq_id seq) const { return state_of(seq).num_computed; }

std::uint32_t block_manager::num_free_blocks() const noexcept {
  return static_cast<std::uint32_t>(free_.size()) + lru_.size();
}

std::uint32_t block_manager::ref_count(block_id block) const { return blocks_.at(block.value()).ref; }

bool block_manager::is_indexed(block_id block) const { return blocks_.at(block.value()).indexed; }

block_manager::stats block_manager::get_stats() const {
  stats s;
  s.total = cfg_.num_blocks;
  s.free = static_cast<std::uint32_t>(free_.size());
  s.cached = lru_.size();
  s.in_use = s.total - s.free - s.cached;
  s.indexed = static_cast<std::uint32_t>(index_.size());
  s.prefix_query_tokens = query_tokens_;
  s.prefix_hit_tokens = hit_tokens_;
  s.evictions = evictions_;
  return s;
}

// -- prefix lookup ------------------------------------------------------------------------------

std::uint32_t block_manager::find_exact(std::uint64_t hash, std::uint64_t parent_cid,
                                        adapter_id adapter, cache_salt salt,
                                        const std::int32_t* tokens) const {
  auto found = npos;
  auto [first, last] = index_.equal_range(hash);
  for (auto it = first; it != last; ++it) {
    const auto b = it->second;
    const auto& m = blocks_[b];
    // The hash only picks the bucket; the key itself decides.
    if (m.parent_cid != parent_cid || m.adapter != adapter || m.salt != salt
        || !std::equal(tokens, tokens + cfg_.block_size, tokens_of(b)))
      continue;
    if (m.ref > 0)
      return b;
    if (found == npos)
      found = b;
  }
  return found;
}

prefix_probe block_manager::probe_impl(const std::vector<std::int32_t>& tokens,
                                       adapter_id adapter, cache_salt salt,
                                       std::vector<std::uint32_t>* hits) const {
  const auto bs = cfg_.block_size;
  prefix_probe p;
  std::uint32_t unreferenced_hits = 0;
  if (cfg_.enable_prefix_cache && !tokens.empty()) {
    // Last-token rule: keep at least one prompt token to compute.
    const auto max_hits = static_cast<std::uint32_t>((tokens.size() - 1) / bs);
    std::uint64_t parent_cid = 0;
    std::uint64_t parent_hash = salted_root(salt);
    for (std::uint32_t i = 0; i < max_hits; ++i) {
      const auto* chunk = tokens.data() + std::size_t{i} * bs;
      const auto h = hash_(parent_hash, adapter, chunk, bs);
      const auto b = find_exact(h, parent_cid, adapter, salt, chunk);
      if (b == npos)
        break;
      if (blocks_[b].ref == 0)
        ++unreferenced_hits;
      if (hits != nullptr)
        hits->push_back(b);
      ++p.hit_blocks;
      parent_cid = blocks_[b].cid;
      parent_hash = h;
    }
  }
  p.hit_tokens = p.hit_blocks * bs;
  const auto total = blocks_for(tokens.size(), bs);
  const auto needed = total - p.hit_blocks + unreferenced_hits;
  p.blocks_needed = static_cast<std::uint32_t>(std::min<std::uint64_t>(needed, UINT32_MAX));
  return p;
}

prefix_probe block_manager::probe(const std::vector<std::int32_t>& tokens,
                                  adapter_id adapter, cache_salt salt) const {
  return probe_impl(tokens, adapter, salt, nullptr);
}

std::uint32_t block_manager::blocks_needed(const std::vector<std::int32_t>& tokens,
                                           adapter_id adapter, cache_salt salt) const {
  return probe_impl(tokens, adapter, salt, nullptr).blocks_needed;
}

// -- pool ---------------------------------------------------------------------------------------

std::uint32_t block_manager::take_block() {
  std::uint32_t b;
  if (!free_.empty()) {
    b = free_.back();
    free_.pop_back();
  } else {
    // Callers check num_free_blocks() first, so the LRU is not empty here.
    b = lru_.pop_front();
    unindex(b);
    ++evictions_;
  }
  auto& m = blocks_[b];
  if (m.ref != 0 || m.indexed)
    throw std::logic_error("block_manager: handing out block " + std::to_string(b)
                           + " that is still referenced or indexed");
  m.ref = 1;
  return b;
}

void block_manager::acquire(std::uint32_t block) {
  auto& m = blocks_[block];
  if (m.ref == 0)
    lru_.remove(block);
  ++m.ref;
}

void block_manager::release(std::uint32_t block) {
  auto& m = blocks_[block];
  if (m.ref == 0)
    throw std::logic_error("block_manager: refcount of block " + std::to_string(block)
                           + " would go negative");
  if (--m.ref > 0)
    return;
  if (m.indexed)
    lru_.push_back(block);
  else
    free_.push_back(block);
}

void block_manager::index_block(const seq_state& st, std::uint32_t pos,
                                const std::int32_t* tokens) {
  const auto b = st.table[pos].value();
  auto& m = blocks_[b];
  m.parent_cid = 0;
  m.parent_hash = salted_root(st.salt);
  if (pos > 0) {
    // Blocks are indexed in table order, so the parent is indexed already.
    const auto& parent = blocks_[st.table[pos - 1].value()];
    m.parent_cid = parent.cid;
    m.parent_hash = parent.hash;
  }
  std::copy(tokens, tokens + cfg_.block_size, tokens_.data() + std::size_t{b} * cfg_.block_size);
  m.adapter = st.adapter;
  m.salt = st.salt;
  m.hash = hash_(m.parent_hash, m.adapter, tokens, cfg_.block_size);
  // Identical content already indexed (e.g. recomputed under the last-token rule, or two
  // sequences prefilled the same prefix concurrently): share its content id, so children of
  // either copy match through both.
  const auto twin = find_exact(m.hash, m.parent_cid, m.adapter, m.salt, tokens);
  m.cid = twin != npos ? blocks_[twin].cid : next_cid_++;
  m.indexed = true;
  index_.emplace(m.hash, b);
  if (events_ != nullptr) {
    std::uint64_t parent = 0;
    if (pos > 0) {
      parent = blocks_[st.table[pos - 1].value()].ext;
    } else {
      auto t = tags_.find(st.adapter);
      parent = public_root(st.salt, t == tags_.end() ? 0 : t->second);
    }
    m.ext = default_block_hash(parent, base_model, tokens, cfg_.block_size);
    events_->stored(m.ext);
  }
}

void block_manager::attach_events(prefix_event_log* log) {
  if (log != nullptr && !index_.empty())
    throw std::logic_error("block_manager: attach_events after blocks were indexed");
  events_ = log;
}

void block_manager::unindex(std::uint32_t block) {
  auto& m = blocks_[block];
  auto [first, last] = index_.equal_range(m.hash);
  auto it = std::find_if(first, last, [block](const auto& kv) { return kv.second == block; });
  if (it == last)
    throw std::logic_error("block_manager: indexed block " + std::to_string(block)
                           + " missing from the index");
  index_.erase(it);
  // Children keyed on this content id stay indexed but become unreachable once no block carries
  // the id; content ids are never reused, so they cannot match a different parent later.
  m.indexed = false;
  if (events_ != nullptr)
    events_->removed(m.ext);
}

// -- sequence lifecycle -------------------------------------------------------------------------

std::optional<std::uint32_t> block_manager::allocate(seq_id seq,
                                                     const std::vector<std::int32_t>& prompt,
                                                     adapter_id adapter, cache_salt salt) {
  if (prompt.empty())
    throw std::invalid_argument("block_manager::allocate: empty prompt for " + seq_name(seq));
  if (prompt.size() > UINT32_MAX)
    throw std::invalid_argument("block_manager::allocate: prompt too long");
  if (contains(seq))
    throw std::logic_error("block_manager::allocate: " + seq_name(seq) + " already allocated");
  std::vector<std::uint32_t> hits;
  const auto p = probe_impl(prompt, adapter, salt, &hits);
  if (p.blocks_needed > num_free_blocks())
    return std::nullopt;
  auto& st = seqs_[seq];
  st.adapter = adapter;
  st.salt = salt;
  const auto total = static_cast<std::uint32_t>(blocks_for(prompt.size(), cfg_.block_size));
  st.table.reserve(total);
  // Hits first: once referenced they are out of the LRU, so take_block cannot evict them.
  for (auto b : hits) {
    acquire(b);
    st.table.emplace_back(b);
  }
  while (st.table.size() < total)
    st.table.emplace_back(take_block());
  st.num_slots = static_cast<std::uint32_t>(prompt.size());
  st.num_computed = p.hit_tokens;
  st.num_indexed = p.hit_blocks;
  query_tokens_ += prompt.size();
  hit_tokens_ += p.hit_tokens;
  return p.hit_tokens;
}

std::uint32_t block_manager::blocks_to_grow(seq_id seq, std::uint32_t total_tokens) const {
  const auto& st = state_of(seq);
  const auto want = blocks_for(total_tokens, cfg_.block_size);
  return want > st.table.size() ? static_cast<std::uint32_t>(want - st.table.size()) : 0;
}

bool block_manager::ensure_slots(seq_id seq, std::uint32_t total_tokens) {
  auto& st = state_of(seq);
  if (total_tokens <= st.num_slots)
    return true;
  const auto grow = blocks_to_grow(seq, total_tokens);
  if (grow > num_free_blocks())
    return false;
  for (std::uint32_t i = 0; i < grow; ++i)
    st.table.emplace_back(take_block());
  st.num_slots = total_tokens;
  return true;
}

bool block_manager::append_slots(seq_id seq, std::uint32_t n) {
  const auto total = std::uint64_t{state_of(seq).num_slots} + n;
  if (total > UINT32_MAX)
    throw std::invalid_argument("block_manager::append_slots: sequence length overflows");
  return ensure_slots(seq, static_cast<std::uint32_t>(total));
}

void block_manager::commit_tokens(seq_id seq, const std::vector<std::int32_t>& tokens,
                                  std::uint32_t num_computed) {
  auto& st = state_of(seq);
  if (num_computed > st.num_slots)
    throw std::logic_error("block_manager::commit_tokens: " + std::to_string(num_computed)
                           + " computed tokens but only " + std::to_string(st.num_slots)
                           + " slots in " + seq_name(seq));
  if (num_computed < st.num_computed)
    throw std::logic_error("block_manager::commit_tokens: computed tokens went back from "
                           + std::to_string(st.num_computed) + " to "
                           + std::to_string(num_computed) + " in " + seq_name(seq));
  if (tokens.size() < num_computed)
    throw std::invalid_argument("block_manager::commit_tokens: fewer tokens than num_computed");
  st.num_computed = num_computed;
  if (!cfg_.enable_prefix_cache)
    return;
  const auto full = num_computed / cfg_.block_size;
  for (auto pos = st.num_indexed; pos < full; ++pos)
    index_block(st, pos, tokens.data() + std::size_t{pos} * cfg_.block_size);
  st.num_indexed = std::max(st.num_indexed, full);
}

bool block_manager::free(seq_id seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end())
    return false;
  const auto& table = it->second.table;
  // Tail first: its blocks land in the LRU before (= are evicted before) the head's.
  for (auto b = table.rbegin(); b != table.rend(); ++b)
    release(b->value());
  seqs_.erase(it);
  return true;
}

} // namespace lf::cache
