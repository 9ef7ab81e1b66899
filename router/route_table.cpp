#include "router/route_table.hpp"

#include <algorithm>

namespace lf::router {

std::string_view to_string(route_state s) noexcept {
  switch (s) {
    case route_state::queued: return "queued";
    case route_state::placed: return "placed";
    case route_state::streaming: return "streaming";
  }
  return "queued";
}

std::pair<route_entry&, bool> route_table::add(actors::route_id rid, const caf::actor_addr& addr,
                                               actors::sink_request_id client) {
  auto& e = routes_[rid];
  e.rid = rid;
  e.client_id = client;
  e.sink_addr = addr;
  by_client_.emplace(std::make_pair(addr, client.value()), rid);
  return {e, sinks_[addr]++ == 0};
}

route_entry* route_table::find(actors::route_id rid) {
  auto it = routes_.find(rid);
  return it == routes_.end() ? nullptr : &it->second;
}

route_entry* route_table::find(const caf::actor_addr& addr, actors::sink_request_id client) {
  auto it = by_client_.find({addr, client.value()});
  return it == by_client_.end() ? nullptr : find(it->second);
}

std::vector<actors::route_id> route_table::of_sink(const caf::actor_addr& addr) const {
  std::vector<actors::route_id> out;
  for (const auto& [rid, e] : routes_)
    if (e.sink_addr == addr)
      out.push_back(rid);
  std::sort(out.begin(), out.end());
  return out;
}

bool route_table::remove(actors::route_id rid) {
  auto it = routes_.find(rid);
  if (it == routes_.end())
    return false;
  const auto addr = it->second.sink_addr;
  by_client_.erase({addr, it->second.client_id.value()});
  routes_.erase(it);
  auto s = sinks_.find(addr);
  if (s == sinks_.end() || --s->second > 0)
    return false;
  sinks_.erase(s);
  return true;
}

} // namespace lf::router
