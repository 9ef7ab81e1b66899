// The router's tenants and deadlines (router_state.hpp): per-tenant books and limits, the VTC
// charges, the meter of the workers' speed, and deadline-aware admission. The decisions are the
// pure cores' (admission_queue, completion_estimate); this file keeps their inputs up to date.
#include <algorithm>
#include <cmath>

#include "router/router_state.hpp"

namespace lf::router {

namespace {

std::string whole(double x) { return std::to_string(static_cast<long long>(std::llround(x))); }

} // namespace

bool router_state::tenant_has_room(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  const std::uint32_t inflight = it == tenants_.end() ? 0 : it->second.inflight;
  return inflight < cfg_.tenants.limits_of(tenant).max_inflight;
}

admission_queue<actors::route_id>::eligible_fn router_state::eligible() const {
  return [this](const std::string& tenant) { return tenant_has_room(tenant); };
}

bool router_state::saturated() const {
  if (!queue_.empty())
    return true;
  bool any = false;
  for (const auto& [id, w] : workers_) {
    if (w.draining)
      continue;
    any = true;
    const auto slots = w.info.max_seqs > 0 ? std::min(w.info.max_seqs, cfg_.max_inflight_per_worker)
                                           : cfg_.max_inflight_per_worker;
    if (w.inflight < slots)
      return false;  // a free batch slot: the next request starts at once
  }
  return any;
}

void router_state::note_load() { meter_.saturated(router_clock::now(), saturated()); }

std::optional<std::string> router_state::deadline_refusal(const validated_request& r) const {
  if (!cfg_.deadline_admission || (r.timeout_ms() == 0 && r.ttft_ms() == 0))
    return std::nullopt;
  const auto rates = meter_.rates();
  if (!rates)
    return std::nullopt;  // not measured yet: refuse nothing
  const auto& tenant = r.tenant();
  double ahead = 0;
  if (saturated() || !tenant_has_room(tenant)) {
    double own = 0, others = 0;
    for (const auto& [name, b] : tenants_) {
      if (name == tenant)
        own = b.unstarted;
      else if (b.unstarted > 0)
        others += cfg_.tenants.limits_of(name).weight;
    }
    ahead = work_ahead(cfg_.tenants.scheduling, unstarted_, own, cfg_.tenants.limits_of(tenant).weight, others);
  }
  const auto e = estimate_completion(*rates, {ahead, static_cast<std::uint32_t>(r.prompt().size()),
                                              static_cast<std::uint32_t>(r.params().max_tokens)});
  const auto why = " (" + whole(e.start_ms) + " ms waiting behind " + whole(ahead) + " tokens of work at "
                   + whole(rates->tokens_per_s) + " tokens/s, then " + whole(rates->tpot_ms)
                   + " ms per output token)";
  const double keep = 1.0 - std::clamp(cfg_.deadline_margin, 0.0, 0.99);
  if (r.ttft_ms() > 0 && e.first_token_ms > keep * r.ttft_ms())
    return "the first token is predicted in " + whole(e.first_token_ms) + " ms, too close to or after the ttft_ms target of "
           + std::to_string(r.ttft_ms()) + " ms" + why;
  if (r.timeout_ms() > 0 && e.finish_ms > keep * r.timeout_ms())
    return "the request is predicted to finish in " + whole(e.finish_ms) + " ms, too close to or after its deadline_ms of "
           + std::to_string(r.timeout_ms()) + " ms" + why;
  return std::nullopt;
}

std::optional<std::string> router_state::too_late(const route_entry& e) const {
  if (!cfg_.deadline_admission || !e.deadline || e.moves > 0)
    return std::nullopt;  // a moved request has its own rules (move_wait, resumption)
  const auto rates = meter_.rates();
  if (!rates)
    return std::nullopt;
  const auto now = router_clock::now();
  const double left = std::chrono::duration<double, std::milli>(*e.deadline - now).count();
  const auto service = estimate_completion(*rates, {0, static_cast<std::uint32_t>(e.req.prompt().size()),
                                                    static_cast<std::uint32_t>(e.req.params().max_tokens)});
  if (service.finish_ms <= left)
    return std::nullopt;
  const double waited = std::chrono::duration<double, std::milli>(now - e.accepted).count();
  return "after " + whole(waited) + " ms in the queue, " + whole(std::max(0.0, left))
         + " ms of its deadline are left and it is predicted to need " + whole(service.finish_ms)
         + " ms: dropped before it starts";
}

void router_state::tenant_accepted(route_entry& e) {
  auto& b = tenants_[e.req.tenant()];
  ++b.live;
  const auto rates = meter_.rates();
  const double ratio = rates ? rates->output_ratio : 1.0;
  e.expect = static_cast<double>(e.req.prompt().size()) + ratio * e.req.params().max_tokens;
  b.unstarted += e.expect;
  unstarted_ += e.expect;
}

void router_state::tenant_placed(route_entry& e) {
  ++tenants_[e.req.tenant()].inflight;
  if (!e.prompt_charged) {
    queue_.counters().charge(e.req.tenant(), e.req.prompt().size(), 0);
    e.prompt_charged = true;
  }
  note_load();
}

void router_state::tenant_unplaced(route_entry& e) {
  if (auto it = tenants_.find(e.req.tenant()); it != tenants_.end() && it->second.inflight > 0)
    --it->second.inflight;
  note_load();
}

void router_state::tenant_token(route_entry& e) {
  queue_.counters().charge(e.req.tenant(), 0, 1);
  const auto now = router_clock::now();
  if (e.started) {
    meter_.served(now, 1);
    return;
  }
  e.started = true;
  if (auto it = tenants_.find(e.req.tenant()); it != tenants_.end())
    it->second.unstarted = std::max(0.0, it->second.unstarted - e.expect);
  unstarted_ = std::max(0.0, unstarted_ - e.expect);
  meter_.served(now, e.req.prompt().size() + 1);
}

void router_state::tenant_finished(const route_entry& e, const actors::done_event& ev) {
  finished_request f;
  f.prompt_tokens = ev.usage.prompt_tokens;
  f.cached_tokens = ev.usage.cached_tokens;
  f.completion_tokens = ev.usage.completion_tokens;
  f.max_tokens = static_cast<std::uint32_t>(e.req.params().max_tokens);
  f.queue_ms = ev.timings.queue_ms;
  f.ttft_ms = ev.timings.ttft_ms;
  f.total_ms = ev.timings.total_ms;
  if (e.resumed == 0)  // a resumed request's timings span two workers
    meter_.finished(f);
}

void router_state::tenant_forgotten(const route_entry& e) {
  auto it = tenants_.find(e.req.tenant());
  if (it == tenants_.end())
    return;
  auto& b = it->second;
  if (!e.started) {
    b.unstarted = std::max(0.0, b.unstarted - e.expect);
    unstarted_ = std::max(0.0, unstarted_ - e.expect);
  }
  if (b.live > 0 && --b.live == 0)
    tenants_.erase(it);
  if (tenants_.empty())
    unstarted_ = 0;  // no rounding residue survives an idle moment
  note_load();
}

} // namespace lf::router
