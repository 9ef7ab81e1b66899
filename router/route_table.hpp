#pragma once
/// The router's accepted requests: each one's entry by route id, the same entry by its client's
/// (sink, id), and how many live requests each sink has (the router watches a sink while it has
/// any: a sink going away cancels them). Bookkeeping only: the router actor sends, monitors and
/// decides; tests/unit/router/test_route_table.cpp.

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <caf/actor_addr.hpp>

#include "core/credit_window.hpp"
#include "core/request.hpp"
#include "router/placement_book.hpp"
#include "router/request_metrics.hpp"
#include "router/tenant_ledger.hpp"
#include "worker/request.hpp"

namespace lf::router {

using router_clock = std::chrono::steady_clock;

/// Where an accepted request is (router_actor.hpp draws its life).
enum class route_state { queued, placed, streaming };

/// "queued", "placed", "streaming".
std::string_view to_string(route_state s) noexcept;

/// One accepted request.
struct route_entry {
  actors::route_id rid;
  actors::sink_request_id client_id;   ///< the sink's id, put on every event to the sink
  validated_request req;   ///< kept to place it again if its worker dies or is drained
  actors::event_sink sink;
  caf::actor_addr sink_addr;
  route_state state = route_state::queued;
  actors::worker_id worker;                      ///< valid unless queued
  std::vector<std::int32_t> sent;        ///< tokens sent to the sink: what a resumption continues after
  std::uint32_t resumed = 0;             ///< mid-stream moves so far
  std::uint32_t moves = 0;               ///< moves of any kind (resumed or placed again)
  bool moving = false;                   ///< drained: its worker was asked to ship its K/V (worker_moved)
  worker::kv_blob kv;                    ///< K/V shipped from its drained worker, for the next placement
  credit_window credits;                 ///< window + credits granted: how far it may stream
  placement_ticket placing;              ///< what it puts on its worker's books (placement_book)
  tenant_ticket tenancy;                 ///< what it puts on its tenant's books (tenant_ledger)
  std::optional<router_clock::time_point> deadline;
  request_milestones times;              ///< accepted, first placed, first token
};

/// See the file comment.
class route_table {
public:
  /// A new entry for `rid`, request `client` of the sink at `addr` (route id, client id and sink
  /// address set; the caller fills the rest), and whether it is the sink's first live request
  /// (start watching it). `client` must not be in use by that sink (in_use).
  std::pair<route_entry&, bool> add(actors::route_id rid, const caf::actor_addr& addr, actors::sink_request_id client);

  /// Whether the sink at `addr` has a live request `client`.
  bool in_use(const caf::actor_addr& addr, actors::sink_request_id client) const {
    return by_client_.count({addr, client.value()}) > 0;
  }

  /// The entry of `rid`, or nullptr.
  route_entry* find(actors::route_id rid);
  /// The entry of the sink's request `client`, or nullptr.
  route_entry* find(const caf::actor_addr& addr, actors::sink_request_id client);

  /// Whether the sink at `addr` has live requests.
  bool has_sink(const caf::actor_addr& addr) const { return sinks_.count(addr) > 0; }

  /// The routes of the sink at `addr`, in route id order.
  std::vector<actors::route_id> of_sink(const caf::actor_addr& addr) const;

  /// Removes `rid` (entries found before are gone); whether it was its sink's last live request
  /// (stop watching it). False for an unknown id.
  bool remove(actors::route_id rid);

  std::size_t size() const noexcept { return routes_.size(); }
  auto begin() { return routes_.begin(); }
  auto end() { return routes_.end(); }
  auto begin() const { return routes_.begin(); }
  auto end() const { return routes_.end(); }

private:
  std::unordered_map<actors::route_id, route_entry> routes_;
  std::map<std::pair<caf::actor_addr, std::uint64_t>, actors::route_id> by_client_;
  std::map<caf::actor_addr, std::uint32_t> sinks_;  ///< live requests per sink
};

} // namespace lf::router
