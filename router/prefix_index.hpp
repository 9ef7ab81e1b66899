#pragma once
/// The router's global prefix-cache index: which worker holds which public block hashes
/// (cache/prefix_events.hpp), fed by the workers' numbered event batches. Pure C++ (no CAF, no
/// clock); the router actor feeds it and asks it.
///
///   add(w, bound) ──> [awaiting snapshot] ──snapshot batch──> [in sync] ──batch seq + 1──> [in sync]
///                            ^                                    │
///                            └──── batch with a gap in the numbers ┘ (its entries dropped; the
///                                  router asks the worker for a snapshot)
///   remove(w) (lost, gone): its entries go at once
///
/// Questions: longest_prefixes(hashes) walks the prompt's block hashes from the start and answers,
/// per worker, how many leading blocks it holds, in time proportional to the blocks matched
/// times the workers holding them (a hash holds a small vector of workers).
///
/// Memory bound: each worker's entries are capped at its `bound` (its KV pool's num_blocks, the
/// most its prefix cache can index; hashes beyond are not recorded), so the index holds at most
/// the sum of the workers' pools: per entry one node of the worker's hash set and a share of the
/// global map's node and holder vector (at most ~150 bytes with libstdc++'s allocations, one
/// holder per hash; less when several workers hold a hash): 4 workers x 1 M blocks would be
/// ~600 MB at worst, 4 x 4096 blocks ~2.5 MB.

#include <cstdint>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "actors/ids.hpp"
#include "cache/prefix_events.hpp"

namespace lf::router {

/// What one batch did to the index.
enum class index_outcome {
  applied,        ///< in order (or a snapshot): the worker's entries changed
  gap,            ///< its number was not the next one: the worker's entries were dropped; ask a snapshot
  ignored,        ///< awaiting a snapshot, an old number, or an unknown worker: nothing changed
};

/// One worker's standing in the index.
struct index_worker_stats {
  std::uint64_t blocks = 0;     ///< hashes held
  std::uint64_t next_seq = 0;   ///< the number expected next (0: awaiting a snapshot)
  std::uint64_t gaps = 0, snapshots = 0, dropped = 0;  ///< dropped: hashes over its bound
};

/// See the file comment. Not thread-safe.
class prefix_index {
public:
  /// Worker `w` joined (or rejoined: what it had is forgotten) with at most `bound` entries; it
  /// awaits a snapshot.
  void add(actors::worker_id w, std::uint64_t bound);
  /// Worker `w` is lost or gone: its entries go now.
  void remove(actors::worker_id w);
  /// Applies a batch of `w`'s events.
  index_outcome apply(actors::worker_id w, const cache::prefix_event_batch& b);
  /// Drops `w`'s entries and waits for a snapshot (a partition healed, a resync asked).
  void resync(actors::worker_id w);

  /// For each worker holding `hashes[0]`: the number of leading hashes it holds, by worker id.
  std::map<actors::worker_id, std::uint32_t> longest_prefixes(const std::vector<std::uint64_t>& hashes) const;

  /// Whether `w` holds `hash`.
  bool holds(actors::worker_id w, std::uint64_t hash) const;
  /// Its standing; zeros for an unknown worker.
  index_worker_stats stats(actors::worker_id w) const;
  /// Entries over all workers.
  std::uint64_t entries() const noexcept { return entries_; }
  /// Workers known.
  std::size_t workers() const noexcept { return workers_.size(); }

private:
  struct worker_entry {
    std::uint64_t bound = 0;
    std::unordered_set<std::uint64_t> hashes;
    index_worker_stats st;
  };

  void insert(actors::worker_id w, worker_entry& e, std::uint64_t hash);
  void erase(actors::worker_id w, worker_entry& e, std::uint64_t hash);
  void clear(actors::worker_id w, worker_entry& e);

  std::map<actors::worker_id, worker_entry> workers_;
  std::unordered_map<std::uint64_t, std::vector<actors::worker_id>> holders_;
  std::uint64_t entries_ = 0;
};

} // namespace lf::router
