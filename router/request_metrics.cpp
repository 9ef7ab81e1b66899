#include "router/request_metrics.hpp"

namespace lf::router {

namespace {

double seconds(request_metrics::clock::duration d) { return std::chrono::duration<double>(d).count(); }

} // namespace

worker_measures& request_metrics::of(actors::worker_id w) {
  auto [it, fresh] = by_worker_.try_emplace(w);
  if (fresh && w.value() == 0)
    it->second.name = "-";
  return it->second;
}

void request_metrics::name(actors::worker_id w, std::string name) { of(w).name = std::move(name); }

void request_metrics::departed(actors::worker_id w, std::size_t keep) {
  if (w.value() == 0)
    return;
  departed_.push_back(w);
  while (departed_.size() > keep) {
    by_worker_.erase(departed_.front());
    departed_.pop_front();
  }
}

void request_metrics::count_error(actors::worker_id w, serve_errc code) {
  ++of(w).m.errors[std::string(to_string(code))];
}

void request_metrics::count_done(actors::worker_id w, std::string_view finish_reason, const finished_request& f,
                                 const request_milestones& t, clock::time_point now) {
  auto& m = of(w).m;
  ++m.finished[std::string(finish_reason)];
  m.prompt_tokens += f.prompt_tokens;
  m.generation_tokens += f.completion_tokens;
  m.cached_tokens += f.cached_tokens;
  // Queue: waiting at the router for a worker, then in the worker's scheduler.
  const double router_queue = t.placed ? seconds(*t.placed - t.accepted) : 0.0;
  m.queue_seconds.observe(router_queue + f.queue_ms / 1000.0);
  if (t.first_token) {
    m.ttft_seconds.observe(seconds(*t.first_token - t.accepted));
    if (f.completion_tokens > 1)
      m.tpot_seconds.observe(seconds(now - *t.first_token) / (f.completion_tokens - 1));
  }
  m.e2e_seconds.observe(seconds(now - t.accepted));
}

} // namespace lf::router
