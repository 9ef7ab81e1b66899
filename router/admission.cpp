#include "router/admission.hpp"

namespace lf::router {

std::optional<admit_refuse> refuse_in_outage(const availability& avail, std::size_t live_workers,
                                             std::uint32_t no_workers_retry_ms,
                                             std::chrono::steady_clock::time_point now) {
  // Nothing would serve it: say so now rather than let it wait for its client's timeout.
  if (!avail.refuses() && !avail.expired(now))
    return std::nullopt;
  return admit_refuse{serve_errc::no_workers,
                        live_workers == 0
                          ? std::string("no worker takes requests: none is registered (every one was lost, "
                                        "or none came yet); retry when one is")
                          : "no worker takes requests: the " + std::to_string(live_workers)
                              + " live worker(s) are drained (`lorafleet undrain NODE` puts them back)",
                        no_workers_retry_ms};
}

admission admit(const admission_ask& ask, const admission_view& v, const choose_fn& choose,
                std::chrono::steady_clock::time_point now) {
  if (auto no = refuse_in_outage(*v.avail, v.live_workers, v.no_workers_retry_ms, now))
    return std::move(*no);
  if (auto why = v.tenancy->deadline_refusal({ask.tenant, ask.prompt_tokens, ask.max_tokens, ask.timeout_ms, ask.ttft_ms},
                                             v.saturated))
    return admit_refuse{serve_errc::deadline_unmeetable, std::move(*why), 0};
  const bool tenant_room = v.tenancy->has_room(ask.tenant);
  if (tenant_room && !v.someone_eligible_waits)
    if (auto w = choose())
      return admit_place{*w};
  const auto& limits = v.tenants->limits_of(ask.tenant);
  if (v.queued_of_tenant >= limits.max_queued)
    return admit_refuse{serve_errc::overloaded,
                        tenant_label(ask.tenant) + " has " + std::to_string(v.queued_of_tenant)
                          + " requests queued, its limit (max_queued " + std::to_string(limits.max_queued) + ")"
                          + (tenant_room ? std::string()
                                         : ", and " + std::to_string(limits.max_inflight) + " in flight (max_inflight)"),
                        v.retry_after_ms};
  if (v.queue_full)
    return admit_refuse{serve_errc::overloaded,
                        "all workers are busy and the admission queue is full (" + std::to_string(v.queue_capacity)
                          + " requests)",
                        v.retry_after_ms};
  return admit_enqueue{};
}

const char* to_string(const admission& d) noexcept {
  switch (d.index()) {
    case 0: return "place";
    case 1: return "enqueue";
    default: return "refuse";
  }
}

} // namespace lf::router
