#pragma once
/// Paged KV cache bookkeeping: a pool of fixed-size blocks, one block table per sequence, reference
/// counts and an exact prefix cache. Pure: standard library only, no clocks, no threads (the owner
/// serialises calls), no I/O.
///
/// Lifecycle of a sequence, as the engine drives it:
///   1. `allocate(seq, prompt, adapter, salt)` on admission: reuses the cached leading full blocks of the
///      prompt and reserves slots for the whole prompt. Returns how many prompt tokens are already
///      computed (a multiple of block_size), or nullopt when the pool is short (nothing changed).
///   2. Before each forward over positions [computed, computed + n): `ensure_slots(seq, computed
///      + n)` (a no-op inside the prompt, which is already reserved; one block per block_size
///      decode tokens otherwise). False = pool exhausted, nothing changed: preempt someone.
///   3. The engine writes K/V of position p at `slot_of(seq, p)`.
///   4. After the forward: `commit_tokens(seq, tokens, computed + n)`. Every block that is now full
///      of computed tokens is published to the prefix index (it stays owned by the sequence).
///   5. `free(seq)` on finish, cancel or preemption.
///
/// Block states: in use (refcount > 0, in one or more block tables), cached (refcount 0 but
/// indexed: reusable until evicted) or free (refcount 0, not indexed). Allocation takes free
/// blocks first and evicts cached blocks in LRU order only when none is left; a referenced block
/// is never evicted. Only full, committed blocks are ever shared; the partial last block of a
/// sequence is private to it.
///
/// Prefix key of a full block: (parent block's key, the block's tokens, adapter, salt). The index
/// is bucketed by a hash of that key chain (`block_hasher`, from `salted_root(salt)`), but a match
/// is exact: each indexed block stores its tokens, its adapter, its salt and the exact identity of
/// its parent's content (a "content id", from a counter that is never reused), and all four are
/// compared. A hash collision therefore costs a comparison, never a wrong reuse, and a sequence
/// never reuses a block published under another salt (tenant isolation: a tenant cannot time
/// another's prompts through the cache).
///
/// Last-token rule: a request must produce logits for its last prompt token, so that token is
/// always computed. A prompt of L tokens reuses at most floor((L - 1) / block_size) blocks: a
/// 32-token prompt fully cached in two 16-token blocks reuses one and recomputes the second into a
/// fresh block (vLLM does the same). The recomputed block is indexed too, as a duplicate of
/// identical content; duplicates are harmless and age out through the LRU.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_map>
#include <vector>

#include "cache/block_hash.hpp"
#include "cache/ids.hpp"
#include "cache/lru_list.hpp"
#include "cache/prefix_events.hpp"

namespace lf::cache {

/// Pool shape and policy.
struct block_manager_config {
  /// Physical KV blocks in the pool; must be > 0.
  std::uint32_t num_blocks = 0;
  /// Token slots per block; must be > 0.
  std::uint32_t block_size = 16;
  /// Publish full blocks to the prefix index and reuse them; off = plain paged allocation.
  bool enable_prefix_cache = true;
  /// Hash used to bucket prefix keys; nullptr = default_block_hash. Tests pass degenerate hashers
  /// to force collisions.
  block_hasher hasher = nullptr;
};

/// What admitting a prompt would cost right now (computed without side effects).
struct prefix_probe {
  /// Leading full blocks that would be reused from the prefix cache.
  std::uint32_t hit_blocks = 0;
  /// hit_blocks * block_size: what allocate() would return.
  std::uint32_t hit_tokens = 0;
  /// Blocks the allocation takes out of num_free_blocks(): new blocks plus hits that are currently
  /// unreferenced (reusing them removes them from the evictable pool). allocate() succeeds iff
  /// blocks_needed <= num_free_blocks().
  std::uint32_t blocks_needed = 0;
};

/// Owns the block pool, the block tables and the prefix index. Not thread-safe.
class block_manager {
public:
  /// Pool occupancy and prefix cache effectiveness. total == free + cached + in_use.
  struct stats {
    std::uint32_t total = 0;
    /// Unreferenced, not indexed.
    std::uint32_t free = 0;
    /// Unreferenced but indexed: reusable by a prefix hit, evictable.
    std::uint32_t cached = 0;
    /// Referenced by at least one block table.
    std::uint32_t in_use = 0;
    /// Indexed blocks, referenced or not (cached + the in-use ones that are full and committed).
    std::uint32_t indexed = 0;
    /// Prompt tokens of successful allocate() calls.
    std::uint64_t prefix_query_tokens = 0;
    /// Of those, tokens served from the prefix cache.
    std::uint64_t prefix_hit_tokens = 0;
    /// Cached blocks evicted to make room.
    std::uint64_t evictions = 0;
    /// prefix_hit_tokens / prefix_query_tokens; 0 before the first query.
    double hit_rate() const noexcept;
  };

  /// Throws std::invalid_argument if num_blocks or block_size is 0.
  explicit block_manager(block_manager_config cfg);

  std::uint32_t block_size() const noexcept { return cfg_.block_size; }
  std::uint32_t num_blocks() const noexcept { return cfg_.num_blocks; }
  bool prefix_cache_enabled() const noexcept { return cfg_.enable_prefix_cache; }

  /// Prefix hits and block cost of allocate(…, tokens, adapter, salt) in the current state.
  prefix_probe probe(const std::vector<std::int32_t>& tokens, adapter_id adapter,
                     cache_salt salt = no_salt) const;

  /// probe(tokens, adapter, salt).blocks_needed: compare with num_free_blocks() to admit. (A
  /// prompt of more than num_blocks() * block_size() tokens can never fit.)
  std::uint32_t blocks_needed(const std::vector<std::int32_t>& tokens, adapter_id adapter,
                              cache_salt salt = no_salt) const;

  /// Creates `seq`'s block table covering all of `prompt`: leading cached blocks of the same
  /// adapter and salt are shared
  /// (refcount + 1, within the last-token rule), the rest are fresh private blocks. Returns the
  /// number of prompt tokens already computed (hit blocks * block_size, always < prompt.size()),
  /// or std::nullopt when the pool is short, in which case nothing changed (stats included).
  /// Afterwards num_slots(seq) == prompt.size() and num_computed(seq) == the returned value.
  /// Throws std::invalid_argument for an empty prompt, std::logic_error if `seq` already exists.
  std::optional<std::uint32_t> allocate(seq_id seq, const std::vector<std::int32_t>& prompt,
                                        adapter_id adapter, cache_salt salt = no_salt);

  /// Blocks ensure_slots(seq, total_tokens) would take from num_free_blocks() (0 if none).
  std::uint32_t blocks_to_grow(seq_id seq, std::uint32_t total_tokens) const;

  /// Makes positions [0, total_tokens) of `seq` addressable; a no-op returning true when they
  /// already are. Needs ceil(total_tokens / block_size) - current blocks new blocks; returns false
  /// with no side effect when the pool cannot supply them. Idempotent, so the engine can call it
  /// with "computed + chunk" before every forward, prefill chunk or decode step alike.
  bool ensure_slots(seq_id seq, std::uint32_t total_tokens);

  /// ensure_slots(seq, num_slots(seq) + n): room for n more tokens after the reserved ones.
  bool append_slots(seq_id seq, std::uint32_t n);

  /// Records that the K/V of positions [0, num_computed) of `seq` are written, `tokens` being the
  /// sequence's tokens (at least num_computed of them; later ones, e.g. a just-sampled token whose
  /// K/V is not written yet, are ignored). Blocks that became full are published to the prefix
  /// index and stay in `seq`'s table. Block tables never change here. Throws std::logic_error if
  /// num_computed exceeds num_slots(seq) or is below num_computed(seq), std::invalid_argument if
  /// tokens.size() < num_computed.
  void commit_tokens(seq_id seq, const std::vector<std::int32_t>& tokens,
                     std::uint32_t num_computed);

  /// Drops `seq`'s references (finish, cancel or preemption) and forgets it. Blocks left
  /// unreferenced become cached (if indexed) or free; the table is released last block first, so
  /// a sequence's tail is evicted before its head (a child is useless without its parent).
  /// Returns false if `seq` is unknown (already freed): cancel paths may race with finish.
  bool free(seq_id seq);

  /// Whether `seq` holds a block table.
  bool contains(seq_id seq) const;

  /// `seq`'s blocks, position p living in block_table(seq)[p / block_size()]. Only grows while the
  /// sequence lives (entries never change). Throws std::out_of_range for an unknown seq.
  const std::vector<block_id>& block_table(seq_id seq) const;

  /// Flat K/V slot of position `pos`: block_table[pos / block_size] * block_size + pos %
  /// block_size. Throws std::out_of_range for an unknown seq or pos >= num_slots(seq).
  std::uint64_t slot_of(seq_id seq, std::uint32_t pos) const;

  /// Positions of `seq` that have a slot (prompt length after allocate, grown by ensure_slots).
  std::uint32_t num_slots(seq_id seq) const;

  /// Positions of `seq` whose K/V is written: the prefix hit, then the last commit_tokens.
  std::uint32_t num_computed(seq_id seq) const;

  /// Live sequences.
  std::size_t num_sequences() const noexcept { return seqs_.size(); }

  /// Blocks allocation can take right now: free plus cached (evictable).
  std::uint32_t num_free_blocks() const noexcept;

  /// References to `block` (0 when cached or free). For tests and debugging.
  std::uint32_t ref_count(block_id block) const;

  /// Whether `block` is in the prefix index (in use or cached). For tests and debugging.
  bool is_indexed(block_id block) const;

  stats get_stats() const;

  /// Tells `log` (not owned; must outlive this) every public block hash that enters or leaves the
  /// prefix index from now on (cache/prefix_events.hpp). Attach before the first allocation;
  /// nullptr detaches. Throws std::logic_error if blocks are indexed already.
  void attach_events(prefix_event_log* log);

  /// The public tag of `adapter`'s blocks (adapter_tag of its key "NAME@V"), for the events'
  /// hashes; an adapter never named counts as tag 0 (the base model's). Bounded by the adapters
  /// the owner names (one entry each).
  void name_adapter(adapter_id adapter, std::uint64_t tag) { tags_[adapter] = tag; }

  /// Verifies every invariant: refcounts equal block table occurrences; each block is exactly one
  /// of in use / cached (in the LRU, indexed) / free (not indexed); only indexed blocks are shared
  /// and a private block has one owner; table sizes match reserved slots; exactly the full,
  /// committed blocks of each table are indexed, with parent links matching the table; the index
  /// maps each indexed block once under its recomputed hash; equal content <=> equal content id.
  /// Throws std::logic_error naming the first violation. O(blocks + table entries); for tests.
  void check_invariants() const;

private:
  static constexpr std::uint32_t npos = UINT32_MAX;

  /// Per physical block. Key fields are meaningful only while `indexed`.
  struct block_meta {
    std::uint32_t ref = 0;
    bool indexed = false;
    adapter_id adapter;
    cache_salt salt;
    std::uint64_t hash = 0;        // block_hasher(parent_hash, adapter, tokens)
    std::uint64_t parent_hash = 0; // salted_root(salt) for a first block
    std::uint64_t cid = 0;         // content id: equal iff (parent_cid, adapter, tokens) equal
    std::uint64_t parent_cid = 0;  // 0 for a first block
    std::uint64_t ext = 0;         // public hash (prefix_events.hpp), with an event log only
  };

  struct seq_state {
    adapter_id adapter;
    cache_salt salt;
    std::vector<block_id> table;
    std::uint32_t num_slots = 0;
    std::uint32_t num_computed = 0;
    std::uint32_t num_indexed = 0; // leading table entries in the index
  };

  seq_state& state_of(seq_id seq);
  const seq_state& state_of(seq_id seq) const;

  /// Walks the index along `tokens` within the last-token rule; appends hits to `hits` if set.
  prefix_probe probe_impl(const std::vector<std::int32_t>& tokens, adapter_id adapter,
                          cache_salt salt, std::vector<std::uint32_t>* hits) const;

  /// An indexed block whose key is exactly (parent_cid, adapter, salt, tokens), preferring a
  /// referenced one (reusing it costs no free block); npos if none.
  std::uint32_t find_exact(std::uint64_t hash, std::uint64_t parent_cid, adapter_id adapter,
                           cache_salt salt, const std::int32_t* tokens) const;

  /// Takes an unreferenced block (free first, else evicts the LRU cached one); refcount becomes 1.
  std::uint32_t take_block();

  /// Adds a reference to an indexed block found by a prefix hit.
  void acquire(std::uint32_t block);

  /// Drops a reference; at zero the block becomes cached or free.
  void release(std::uint32_t block);

  /// Publishes the full, computed table entry `pos` of `st`.
  void index_block(const seq_state& st, std::uint32_t pos, const std::int32_t* tokens);

  /// Removes an unreferenced block from the index (eviction).
  void unindex(std::uint32_t block);

  const std::int32_t* tokens_of(std::uint32_t block) const {
    return tokens_.data() + std::size_t{block} * cfg_.block_size;
  }

  block_manager_config cfg_;
  block_hasher hash_;
  std::vector<block_meta> blocks_;
  std::vector<std::int32_t> tokens_; // block b's tokens at [b * block_size, (b + 1) * block_size)
  std::vector<std::uint32_t> free_;  // unreferenced, not indexed; used as a stack
  lru_list lru_;                     // unreferenced, indexed; least recently released first
  std::unordered_multimap<std::uint64_t, std::uint32_t> index_; // hash -> indexed block
  std::unordered_map<seq_id, seq_state> seqs_;
  std::uint64_t next_cid_ = 1;
  std::uint64_t query_tokens_ = 0;
  std::uint64_t hit_tokens_ = 0;
  std::uint64_t evictions_ = 0;
  prefix_event_log* events_ = nullptr;
  std::unordered_map<adapter_id, std::uint64_t> tags_;  ///< adapter -> public tag (name_adapter)
};

} // namespace lf::cache
