// The router's measurements: per worker, what its requests' clients saw (router_state.hpp).
#include <chrono>

#include "router/router_state.hpp"

namespace lf::router {

namespace {

double seconds(router_clock::duration d) { return std::chrono::duration<double>(d).count(); }

} // namespace

actors::worker_metrics& router_state::metrics_of(actors::worker_id wid) {
  auto& m = metrics_[wid];
  m.wid = wid;
  if (wid.value() == 0)
    m.name = "-";
  return m;
}

void router_state::count_error(const route_entry* e, serve_errc code) {
  const bool placed = e != nullptr && e->state != route_state::queued;
  auto& m = metrics_of(placed ? e->worker : actors::worker_id{0});
  ++m.m.errors[std::string(to_string(code))];
}

void router_state::count_done(const route_entry& e, const actors::done_event& ev) {
  const auto now = router_clock::now();
  auto& m = metrics_of(e.state != route_state::queued ? e.worker : actors::worker_id{0}).m;
  ++m.finished[ev.finish_reason];
  m.prompt_tokens += ev.usage.prompt_tokens;
  m.generation_tokens += ev.usage.completion_tokens;
  m.cached_tokens += ev.usage.cached_tokens;
  // Queue: waiting at the router for a worker, then in the worker's scheduler.
  const double router_queue = e.placed ? seconds(*e.placed - e.accepted) : 0.0;
  m.queue_seconds.observe(router_queue + ev.timings.queue_ms / 1000.0);
  if (e.first_token) {
    m.ttft_seconds.observe(seconds(*e.first_token - e.accepted));
    if (ev.usage.completion_tokens > 1)
      m.tpot_seconds.observe(seconds(now - *e.first_token) / (ev.usage.completion_tokens - 1));
  }
  m.e2e_seconds.observe(seconds(now - e.accepted));
}

} // namespace lf::router
