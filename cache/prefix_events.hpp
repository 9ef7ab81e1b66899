#pragma once
/// What enters and leaves a worker's prefix cache, told to the router (vLLM's KV events: block
/// stored / block removed, numbered batches, a snapshot to resynchronise). Pure, standard library
/// only; the owner (the serving loop's thread) serialises calls.
///
/// Public block hashes. The block manager's own keys use the worker's local adapter ids, which
/// differ between workers, so the events carry a second chain that any process can compute from a
/// request alone (the router does, from the prompt tokens the gateway tokenized):
///
///     root      = public_root(salt, adapter_tag(adapter key "NAME@V", "" for the base model))
///     block i   = default_block_hash(block i-1 (root for i = 0), base_model, its block_size tokens)
///
/// so a block's public hash names the whole prefix up to its end, the adapter version and the
/// tenant's salt (cache_salt.hpp). Equal public hashes mean "probably the same prefix": the router
/// only uses them to predict a hit, never to reuse K/V (the worker's own index stays exact).
///
///   block_manager ──stored(h) / removed(h)──> prefix_event_log ──take(now) / snapshot()──> batch
///
/// The log counts copies per hash (the block manager may index the same content twice, see its
/// last-token rule), so a hash is announced when its first copy is indexed and withdrawn when its
/// last copy is evicted. Memory: one entry per distinct indexed hash (at most the pool's
/// num_blocks) plus the pending events, at most `max_pending`; past that the pending events are
/// dropped and the next batch is a snapshot instead (at most num_blocks hashes).

#include <chrono>
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "cache/block_hash.hpp"
#include "cache/ids.hpp"

namespace lf::cache {

/// The public tag of an adapter key ("NAME@V" as the router pins it; "" = the base model, tag 0).
/// FNV-1a finalised by mix64; never 0 for a non-empty key.
inline std::uint64_t adapter_tag(std::string_view key) noexcept {
  if (key.empty())
    return 0;
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : key) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  h = mix64(h ^ key.size());
  return h == 0 ? 1 : h;
}

/// The public parent hash of a sequence's first block under `salt` and adapter tag `tag`.
constexpr std::uint64_t public_root(cache_salt salt, std::uint64_t tag) noexcept {
  return tag == 0 ? salted_root(salt) : mix64(salted_root(salt) ^ mix64(tag));
}

/// The public hashes of the first `max_blocks` full blocks of `tokens` (block i covers tokens
/// [i * block_size, (i + 1) * block_size)). Throws std::invalid_argument for block_size 0.
std::vector<std::uint64_t> public_block_hashes(const std::vector<std::int32_t>& tokens, std::uint32_t block_size,
                                               cache_salt salt, std::uint64_t tag,
                                               std::size_t max_blocks = SIZE_MAX);

/// One numbered batch of prefix-cache events. A snapshot lists every hash the cache holds now
/// (in `stored`; `removed` empty) and replaces whatever the receiver knew.
struct prefix_event_batch {
  std::uint64_t seq = 0;  ///< 1, 2, ... per log; a snapshot takes the next number too
  bool snapshot = false;
  std::vector<std::uint64_t> stored, removed;

  bool empty() const noexcept { return !snapshot && stored.empty() && removed.empty(); }
};

/// Settings of a prefix_event_log.
struct prefix_event_options {
  /// Pending events at most; beyond, they are dropped and the next batch is a snapshot.
  std::size_t max_pending = 8192;
  /// take() hands out a batch at most this often (0: whenever asked): the events' rate bound.
  std::chrono::milliseconds min_interval{10};
};

/// The worker side of the events: copies per public hash, the pending events, the numbering.
class prefix_event_log {
public:
  using clock = std::chrono::steady_clock;

  explicit prefix_event_log(prefix_event_options o = {}) : o_(o) {}

  /// A copy of block `hash` entered the index.
  void stored(std::uint64_t hash);
  /// A copy of block `hash` left the index (eviction). Unknown hashes are ignored.
  void removed(std::uint64_t hash);

  /// Whether take() would return a batch at `now` (events pending or a snapshot owed, and
  /// min_interval passed since the last batch).
  bool due(clock::time_point now) const;
  /// The pending events as the next numbered batch (a snapshot if events were dropped or one was
  /// asked for), or an empty batch (seq 0) when nothing is due.
  prefix_event_batch take(clock::time_point now);
  /// Asks for the next batch to be a snapshot (a receiver joined or saw a gap).
  void want_snapshot() noexcept { snapshot_owed_ = true; }

  /// Distinct hashes held now.
  std::size_t size() const noexcept { return copies_.size(); }
  /// Batches handed out so far (the last one's seq).
  std::uint64_t last_seq() const noexcept { return seq_; }
  /// Pending events (stored + removed not yet taken).
  std::size_t pending() const noexcept { return pending_.size(); }

private:
  /// A net change pending for the receiver: a stored then removed hash (or the reverse) within
  /// one batch cancels out, so a batch's order does not matter to whoever applies it.
  void note(std::uint64_t hash, bool stored);

  prefix_event_options o_;
  std::unordered_map<std::uint64_t, std::uint32_t> copies_;  ///< hash -> indexed copies
  std::unordered_map<std::uint64_t, bool> pending_;          ///< hash -> stored (true) / removed
  bool snapshot_owed_ = false;
  std::uint64_t seq_ = 0;
  clock::time_point last_{};
  bool ever_ = false;  ///< a batch was handed out (last_ is meaningful)
};

} // namespace lf::cache
