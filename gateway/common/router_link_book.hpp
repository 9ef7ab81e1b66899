#pragma once
/// The router link's bookkeeping, pure C++: a gateway in front of several router replicas keeps
/// each live stream's request (prompt, parameters, the seed it was given), its credit bound and
/// the tokens already forwarded to the client, and which router carries it. When that router is
/// lost (or stops), the stream waits for another one and goes on there as a continuation: the
/// tokens sent become the router's resumption prefix, sampling goes on from the same seed and
/// index, so the client sees a pause and the text an undisturbed run gives.
///
///   router_link_book b(2);                     // two router replicas, both down
///   b.router_up(0); b.router_up(1);
///   auto r = b.pick();                         // the replica for a new request
///   auto id = b.open(draft, window, *r, now);  // draft.params.seed must be set
///   b.token(id, *r, index, token);             // true: forward it
///   for (auto s : b.router_down(*r, now)) ...  // streams now waiting
///   auto c = b.continue_on(s, other, now);     // continuation | expired
///
/// Time is passed in; nothing here sends or reads a clock.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/credit_window.hpp"
#include "core/request.hpp"

namespace lf::gateway {

using link_clock = std::chrono::steady_clock;

/// The link's own id of a stream (towards the routers).
using link_stream_id = std::uint64_t;

/// One live stream.
struct link_stream {
  link_stream_id id = 0;
  request_draft draft;                     ///< as the client sent it, with its seed fixed
  credit_window credits;                   ///< window + the client's grants so far
  std::vector<std::int32_t> tokens;        ///< forwarded to the client, in index order
  std::optional<std::size_t> router;       ///< the replica carrying it; none: waiting for one
  link_clock::time_point opened;
  std::optional<link_clock::time_point> waiting_since;
  std::uint32_t continuations = 0;         ///< times it moved to another replica
};

/// What a stream sends to its next router.
struct link_continuation {
  request_draft draft;                 ///< timeout_ms lowered by the time already spent
  std::uint32_t window = 0;            ///< the credit bound so far (0: unlimited)
  std::vector<std::int32_t> continued; ///< the tokens the client has
};

/// A stream's deadline passed while it waited for a router.
struct link_expired {};

/// See the file comment. Not thread-safe (its actor owns it).
class router_link_book {
public:
  /// `routers` replicas, all down until router_up.
  explicit router_link_book(std::size_t routers);

  /// Replica `r` is reachable (again).
  void router_up(std::size_t r);
  /// Replica `r` is lost at `now`: its streams wait for another one (returned, in id order).
  std::vector<link_stream_id> router_down(std::size_t r, link_clock::time_point now);
  /// Replica `r` has `accepting` workers that take requests (its last stats).
  void router_accepting(std::size_t r, std::uint32_t accepting);
  bool live(std::size_t r) const { return slots_.at(r).live; }
  /// The replica for a new stream or a continuation: a live one with accepting workers before one
  /// without, then the one carrying the fewest of this link's streams, then round robin. None
  /// when every replica is down. `except`: a replica not to choose (the one just lost).
  std::optional<std::size_t> pick(std::optional<std::size_t> except = std::nullopt);

  /// Books a new stream on replica `r`; `draft.params.seed` must be set (continuations need it).
  /// `continued`: tokens the client already has (it moved here from another gateway).
  link_stream_id open(request_draft draft, std::uint32_t window, std::size_t r, link_clock::time_point now,
                      std::vector<std::int32_t> continued = {});
  /// The stream, or nullptr once closed.
  const link_stream* find(link_stream_id id) const;
  /// Token `index` of stream `id` came from replica `r`: true when it is the next one and `r`
  /// carries the stream (forward it), false for a stale replica's or a repeated index.
  bool token(link_stream_id id, std::size_t r, std::uint32_t index, std::int32_t token);
  /// Is replica `r` the one carrying stream `id` (a terminal from elsewhere is stale)?
  bool carried_by(link_stream_id id, std::size_t r) const;
  /// The client granted `tokens` more credit; the new bound (0: unlimited).
  std::uint32_t grant(link_stream_id id, std::uint32_t tokens);
  /// Stream `id` waits for a replica (its own stopped, or it was refused for that reason).
  void wait(link_stream_id id, link_clock::time_point now);
  /// Moves waiting stream `id` to replica `r`: what to send there, or expired when its deadline
  /// (draft.timeout_ms from opened) has passed.
  std::variant<link_continuation, link_expired> continue_on(link_stream_id id, std::size_t r,
                                                            link_clock::time_point now);
  /// Forgets stream `id` (it ended; its terminal went to the client).
  void close(link_stream_id id);

  /// Streams waiting for a replica, in id order.
  std::vector<link_stream_id> waiting() const;
  /// Waiting streams that have waited `limit` or longer at `now`.
  std::vector<link_stream_id> waited_past(std::chrono::milliseconds limit, link_clock::time_point now) const;
  /// Live streams; on replica `r`.
  std::size_t size() const noexcept { return streams_.size(); }
  std::size_t on(std::size_t r) const { return slots_.at(r).streams; }
  /// Continuations so far (streams moved to another replica).
  std::uint64_t continuations() const noexcept { return continuations_; }

private:
  struct slot {
    bool live = false;
    std::uint32_t accepting = 0;
    std::size_t streams = 0;
  };
  void detach(link_stream& s);

  std::vector<slot> slots_;
  std::map<link_stream_id, link_stream> streams_;
  link_stream_id next_id_ = 1;
  std::size_t turn_ = 0;  ///< round robin among equals
  std::uint64_t continuations_ = 0;
};

} // namespace lf::gateway
