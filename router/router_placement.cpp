// The router's side of placement: the worker views the placer sees, and what the priced policy
// measures (work ahead of each worker, its rates, adapter load prices).
#include <algorithm>

#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "router/router_state.hpp"

namespace lf::router {

std::vector<worker_view> router_state::views(const std::string& adapter) const {
  std::vector<worker_view> out;
  out.reserve(workers_.size());
  for (auto& [id, w] : workers_) {
    if (w.draining)
      continue;
    bool placed = false, resident = false;
    if (!adapter.empty()) {
      placed = w.expects(adapter);
      resident = w.resident(adapter);
    }
    worker_view v;
    v.id = id;
    v.inflight = w.inflight;
    v.capacity = cfg_.max_inflight_per_worker;
    v.load_tokens = w.load_tokens;
    v.has_adapter = placed || resident;
    v.loading = placed && !resident;
    v.prompt_ahead = w.prompt_ahead;
    v.output_ahead = w.output_ahead;
    v.speed = w.speed.speed();
    v.adapters_in_use = static_cast<std::uint32_t>(w.placed_adapters.size());
    v.adapter_slots = w.adapter_slots;
    out.push_back(v);
  }
  return out;
}

std::optional<actors::worker_id> router_state::choose(const validated_request& r, std::size_t streamed,
                                                      router_clock::time_point accepted) {
  placement_request q;
  q.needs_adapter = !r.adapter().empty();
  q.prompt_tokens = static_cast<std::uint32_t>(r.prompt().size() + streamed);
  if (q.needs_adapter && placer_.options().policy == placement_policy::priced)
    q.load_ms = prices_.price_ms(r.adapter()) * placer_.options().load_price_weight;
  q.waited_ms = std::chrono::duration<double, std::milli>(router_clock::now() - accepted).count();
  return placer_.choose(views(r.adapter()), q);
}

void router_state::charge(route_entry& e, worker_entry& w, bool add) {
  if (add) {
    // A resumed request prefills its prompt and the tokens it streamed, then produces the rest.
    e.prompt_ahead = e.req.prompt().size() + e.sent.size();
    const std::uint64_t max_out = static_cast<std::uint64_t>(std::max(0, e.req.params().max_tokens));
    e.output_ahead = max_out - std::min<std::uint64_t>(max_out, e.sent.size());
    w.prompt_ahead += e.prompt_ahead;
    w.output_ahead += e.output_ahead;
    return;
  }
  w.prompt_ahead -= std::min(w.prompt_ahead, e.prompt_ahead);
  w.output_ahead -= std::min(w.output_ahead, e.output_ahead);
  e.prompt_ahead = e.output_ahead = 0;
}

void router_state::streamed(route_entry& e) {
  auto it = workers_.find(e.worker);
  if (it == workers_.end())
    return;
  auto& w = it->second;
  const std::uint64_t prompt = e.prompt_ahead;  // non-zero only with the first token here
  w.prompt_ahead -= std::min(w.prompt_ahead, prompt);
  e.prompt_ahead = 0;
  if (e.output_ahead > 0) {
    --e.output_ahead;
    w.output_ahead -= std::min<std::uint64_t>(w.output_ahead, 1);
  }
  w.speed.served(router_clock::now(), prompt, 1);
}

void router_state::observe_loads(const actors::worker_load& load) {
  std::vector<load_observation> seen;
  seen.reserve(load.loads_by_adapter.size());
  for (const auto& r : load.loads_by_adapter)
    seen.push_back({r.name, r.loads, r.last_load_ms, r.bytes});
  prices_.observe(load.wid, seen);
}

} // namespace lf::router
