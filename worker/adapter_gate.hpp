#pragma once
/// The serving loop's adapter gate: which LoRA adapters' requests may start in a step, and whether
/// an adapter's load has failed for the requests waiting on it. It reads the adapter manager
/// (behind the manager's own lock) and keeps the step's turn; no threads, no I/O of its own.
///
/// Without single-adapter batches a request may start once its adapter is loaded (the base model
/// always is). With them (serving_config::single_adapter_batches) each step also has a turn, one
/// adapter whose requests alone may join:
///   - continuous batching keeps the turn while a running request holds an adapter, then gives it
///     to the oldest waiting request whose adapter is loaded; none loaded: the base model's turn,
///     under which no adapter may start;
///   - static batches give it to the oldest waiting request that can run, base model included.

#include <cstdint>
#include <optional>
#include <vector>

#include "cache/adapter_manager.hpp"

namespace lf::worker {

/// See the file comment. Loop thread only.
class adapter_gate {
public:
  /// `adapters`: nullptr when the worker serves no adapters (only the base model runs).
  adapter_gate(const cache::adapter_manager* adapters, bool single_adapter_batches) noexcept
    : adapters_(adapters), single_(single_adapter_batches) {}

  /// The base model, or an adapter whose weights are loaded.
  bool ready(cache::adapter_id a) const;

  /// Sets this step's turn from the adapters of the running requests and of the waiting ones,
  /// oldest first; `base_decides`: static batches (see the file comment; they start with nothing
  /// running). No turn without single-adapter batches.
  void take_turn(const std::vector<cache::adapter_id>& running, const std::vector<cache::adapter_id>& waiting,
                 bool base_decides);

  /// Single-adapter batches: take_turn() decides something.
  bool turns() const noexcept { return single_; }

  /// This step's turn; nullopt: any ready adapter may start.
  std::optional<cache::adapter_id> turn() const noexcept { return turn_; }

  /// A request for `a` may start in this step: ready, and of this step's turn if there is one.
  bool usable(cache::adapter_id a) const { return (!turn_ || a == *turn_) && ready(a); }

  /// True once for each batch of adapter loads that settled (loaded or failed) since the last call
  /// that returned true: only then can a waiting request's adapter have failed.
  bool loads_settled();

  /// The failure of `a`'s load (its error and message), for the requests waiting on it; nullopt
  /// while it loads, once it is ready, and for the base model.
  std::optional<cache::adapter_info> failure(cache::adapter_id a) const;

private:
  const cache::adapter_manager* adapters_;
  bool single_;
  std::optional<cache::adapter_id> turn_;
  std::uint64_t settled_seen_ = 0;
};

} // namespace lf::worker
