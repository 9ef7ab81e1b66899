#include "router/tenant_ledger.hpp"

#include <algorithm>
#include <cmath>

namespace lf::router {

namespace {

std::string whole(double x) { return std::to_string(static_cast<long long>(std::llround(x))); }

} // namespace

tenant_ledger::tenant_ledger(tenancy_options tenants, deadline_options deadlines, rate_meter_options meter)
  : opts_(std::move(tenants)), deadlines_(deadlines), meter_(meter) {}

bool tenant_ledger::has_room(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  const std::uint32_t inflight = it == tenants_.end() ? 0 : it->second.inflight;
  return inflight < opts_.limits_of(tenant).max_inflight;
}

const tenant_book* tenant_ledger::book(const std::string& tenant) const {
  auto it = tenants_.find(tenant);
  return it == tenants_.end() ? nullptr : &it->second;
}

void tenant_ledger::accepted(tenant_ticket& t) {
  auto& b = tenants_[t.tenant];
  ++b.live;
  const auto rates = meter_.rates();
  const double ratio = rates ? rates->output_ratio : 1.0;
  t.expect = static_cast<double>(t.prompt_tokens) + ratio * t.max_tokens;
  b.unstarted += t.expect;
  unstarted_ += t.expect;
}

void tenant_ledger::placed(tenant_ticket& t, vtc& counters) {
  ++tenants_[t.tenant].inflight;
  if (!t.prompt_charged) {
    counters.charge(t.tenant, t.prompt_tokens, 0);
    t.prompt_charged = true;
  }
}

void tenant_ledger::unplaced(const tenant_ticket& t) {
  if (auto it = tenants_.find(t.tenant); it != tenants_.end() && it->second.inflight > 0)
    --it->second.inflight;
}

void tenant_ledger::token(tenant_ticket& t, vtc& counters, clock::time_point now) {
  counters.charge(t.tenant, 0, 1);
  if (t.started) {
    meter_.served(now, 1);
    return;
  }
  t.started = true;
  if (auto it = tenants_.find(t.tenant); it != tenants_.end())
    it->second.unstarted = std::max(0.0, it->second.unstarted - t.expect);
  unstarted_ = std::max(0.0, unstarted_ - t.expect);
  meter_.served(now, t.prompt_tokens + 1);
}

void tenant_ledger::finished(const finished_request& f, bool resumed) {
  if (!resumed)  // a resumed request's timings span two workers
    meter_.finished(f);
}

void tenant_ledger::forgotten(const tenant_ticket& t) {
  auto it = tenants_.find(t.tenant);
  if (it == tenants_.end())
    return;
  auto& b = it->second;
  if (!t.started) {
    b.unstarted = std::max(0.0, b.unstarted - t.expect);
    unstarted_ = std::max(0.0, unstarted_ - t.expect);
  }
  if (b.live > 0 && --b.live == 0)
    tenants_.erase(it);
  if (tenants_.empty())
    unstarted_ = 0;  // no rounding residue survives an idle moment
}

void tenant_ledger::load(clock::time_point now, bool saturated) { meter_.saturated(now, saturated); }

std::optional<std::string> tenant_ledger::deadline_refusal(const deadline_ask& r, bool saturated) const {
  if (!deadlines_.admission || (r.timeout_ms == 0 && r.ttft_ms == 0))
    return std::nullopt;
  const auto rates = meter_.rates();
  if (!rates)
    return std::nullopt;  // not measured yet: refuse nothing
  double ahead = 0;
  if (saturated || !has_room(r.tenant)) {
    double own = 0, others = 0;
    for (const auto& [name, b] : tenants_) {
      if (name == r.tenant)
        own = b.unstarted;
      else if (b.unstarted > 0)
        others += opts_.limits_of(name).weight;
    }
    ahead = work_ahead(opts_.scheduling, unstarted_, own, opts_.limits_of(r.tenant).weight, others);
  }
  const auto e = estimate_completion(*rates, {ahead, r.prompt_tokens, r.max_tokens});
  const auto why = " (" + whole(e.start_ms) + " ms waiting behind " + whole(ahead) + " tokens of work at "
                   + whole(rates->tokens_per_s) + " tokens/s, then " + whole(rates->tpot_ms)
                   + " ms per output token)";
  const double keep = 1.0 - std::clamp(deadlines_.margin, 0.0, 0.99);
  if (r.ttft_ms > 0 && e.first_token_ms > keep * r.ttft_ms)
    return "the first token is predicted in " + whole(e.first_token_ms) + " ms, too close to or after the ttft_ms target of "
           + std::to_string(r.ttft_ms) + " ms" + why;
  if (r.timeout_ms > 0 && e.finish_ms > keep * r.timeout_ms)
    return "the request is predicted to finish in " + whole(e.finish_ms) + " ms, too close to or after its deadline_ms of "
           + std::to_string(r.timeout_ms) + " ms" + why;
  return std::nullopt;
}

std::optional<std::string> tenant_ledger::too_late(const tenant_ticket& t, clock::time_point deadline,
                                                   clock::time_point accepted, clock::time_point now) const {
  if (!deadlines_.admission)
    return std::nullopt;
  const auto rates = meter_.rates();
  if (!rates)
    return std::nullopt;
  const double left = std::chrono::duration<double, std::milli>(deadline - now).count();
  const auto service = estimate_completion(*rates, {0, t.prompt_tokens, t.max_tokens});
  if (service.finish_ms <= left)
    return std::nullopt;
  const double waited = std::chrono::duration<double, std::milli>(now - accepted).count();
  return "after " + whole(waited) + " ms in the queue, " + whole(std::max(0.0, left))
         + " ms of its deadline are left and it is predicted to need " + whole(service.finish_ms)
         + " ms: dropped before it starts";
}

} // namespace lf::router
