#pragma once
/// What the router sends clients' sinks while it takes in one worker step: each sink's tokens,
/// terminals and errors held as one event_batch (sinks in the order they first got an event),
/// sent when the step is done; outside a step nothing is held and each event goes at once.
/// Holding only: the router actor sends what close() returns.

#include <cstddef>
#include <map>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>

#include "actors/interfaces.hpp"

namespace lf::router {

/// See the file comment.
class sink_outbox {
public:
  /// One sink's batch, and the sink.
  using held = std::pair<actors::event_sink, actors::event_batch>;

  /// A worker step begins: events are held until close().
  void open() noexcept { open_ = true; }

  /// While open, the batch for the sink at `addr` (`sink`'s), else nullptr: send the event now.
  actors::event_batch* batch(const actors::event_sink& sink, const caf::actor_addr& addr) {
    if (!open_)
      return nullptr;
    auto [it, added] = index_.try_emplace(addr, held_.size());
    if (added)
      held_.emplace_back(sink, actors::event_batch{});
    return &held_[it->second].second;
  }

  /// The step is done: what was held, in order; nothing is held after.
  std::vector<held> close() {
    open_ = false;
    index_.clear();
    return std::exchange(held_, {});
  }

private:
  bool open_ = false;
  std::vector<held> held_;
  std::map<caf::actor_addr, std::size_t> index_;  ///< sink -> index in held_
};

} // namespace lf::router
