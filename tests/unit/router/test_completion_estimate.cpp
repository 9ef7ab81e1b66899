// Deadline-aware admission's estimate (router/completion_estimate.hpp), on a simulated clock.
#include <catch2/catch.hpp>

#include "router/completion_estimate.hpp"

using namespace lf::router;
using lf::scheduling_policy;
using namespace std::chrono_literals;

namespace {

/// A meter that has seen `windows` saturated windows at `tok_per_s` and four requests of 10
/// prompt tokens, 8 of 8 output tokens, 20 ms prefill and 10 ms per output token.
rate_meter warmed(double tok_per_s = 1000, int windows = 2) {
  rate_meter m;
  meter_clock::time_point t{};
  m.saturated(t, true);
  for (int w = 0; w < windows; ++w)
    for (int k = 1; k <= 10; ++k)  // 10 ticks of 25 ms per 250 ms window
      m.served(t + (w * 10 + k) * 25ms, static_cast<std::uint64_t>(tok_per_s / 40));
  for (int i = 0; i < 4; ++i)
    m.finished({10, 0, 8, 8, 5.0, 25.0, 25.0 + 7 * 10.0});
  return m;
}

} // namespace

TEST_CASE("rate meter: no estimate until enough is measured", "[estimate]") {
  rate_meter m;
  CHECK_FALSE(m.rates());
  meter_clock::time_point t{};
  for (int i = 0; i < 4; ++i)
    m.finished({10, 0, 8, 8, 0, 20, 90});
  CHECK_FALSE(m.rates());  // requests, but no saturated window yet
  // Tokens served while not saturated say nothing about capacity.
  for (int k = 1; k <= 40; ++k)
    m.served(t + k * 25ms, 50);
  CHECK(m.windows() == 0);
  CHECK_FALSE(m.rates());
  CHECK(warmed().rates());
  CHECK_FALSE(warmed(1000, 1).rates());  // one window is not enough
}

TEST_CASE("rate meter: throughput counts only windows saturated from start to end", "[estimate]") {
  rate_meter m;
  meter_clock::time_point t{};
  m.saturated(t, true);
  for (int k = 1; k <= 10; ++k)
    m.served(t + k * 25ms, 100);  // 1000 tokens in 250 ms
  CHECK(m.windows() == 1);
  // Saturation breaks mid-window: that window is dropped whatever it served.
  m.served(t + 300ms, 100);
  m.saturated(t + 320ms, false);
  m.saturated(t + 330ms, true);
  for (int k = 1; k <= 10; ++k)
    m.served(t + 330ms + k * 25ms, 200);  // 2000 tokens in 250 ms
  CHECK(m.windows() == 2);
  for (int i = 0; i < 4; ++i)
    m.finished({10, 0, 8, 8, 0, 20, 90});
  auto r = m.rates();
  REQUIRE(r);
  // EWMA (alpha 0.3) of 4000/s then 8000/s.
  CHECK(r->tokens_per_s == Approx(4000 + 0.3 * 4000));
}

TEST_CASE("rate meter: per-request speeds from finished requests", "[estimate]") {
  auto r = warmed().rates();
  REQUIRE(r);
  CHECK(r->tpot_ms == Approx(10));
  CHECK(r->prefill_ms_per_token == Approx(2));  // (25 - 5) ms for 10 prompt tokens
  CHECK(r->output_ratio == Approx(1));
  CHECK(r->tokens_per_s == Approx(1000));
  // Requests that stop early on EOS: the expected output shrinks.
  rate_meter m = warmed();
  for (int i = 0; i < 20; ++i)
    m.finished({10, 0, 2, 8, 0, 20, 30});
  CHECK(m.rates()->output_ratio == Approx(0.25).margin(0.01));
  // Cached prompt tokens cost no prefill: 10 ms for the 10 computed of 100.
  rate_meter c = warmed();
  for (int i = 0; i < 30; ++i)
    c.finished({100, 90, 4, 4, 0, 10, 40});
  CHECK(c.rates()->prefill_ms_per_token == Approx(1).margin(0.01));
}

TEST_CASE("estimate: start after the work ahead, then prefill and decode", "[estimate]") {
  service_rates r;
  r.tokens_per_s = 1000;
  r.tpot_ms = 10;
  r.prefill_ms_per_token = 0.5;
  r.output_ratio = 1;
  // A free slot: no wait. 100 prompt tokens: 50 ms; 20 outputs: 19 more steps.
  auto e = estimate_completion(r, {0, 100, 20});
  CHECK(e.start_ms == 0);
  CHECK(e.first_token_ms == Approx(50));
  CHECK(e.finish_ms == Approx(50 + 19 * 10));
  // 2000 tokens ahead at 1000 tokens/s: two seconds first.
  e = estimate_completion(r, {2000, 100, 20});
  CHECK(e.start_ms == Approx(2000));
  CHECK(e.finish_ms == Approx(2000 + 50 + 190));
  // A short prompt still takes one step.
  CHECK(estimate_completion(r, {0, 4, 1}).first_token_ms == Approx(10));
  // Half the outputs expected: half the decode steps.
  r.output_ratio = 0.5;
  CHECK(estimate_completion(r, {0, 100, 20}).finish_ms == Approx(50 + 9 * 10));
}

TEST_CASE("work ahead: all unstarted work under fcfs, the tenant's own over its share under vtc", "[estimate]") {
  CHECK(work_ahead(scheduling_policy::fcfs, 5000, 100, 1, 3) == 5000);
  // vtc, four equal tenants backlogged: 100 of its own at a quarter of the service.
  CHECK(work_ahead(scheduling_policy::vtc, 5000, 100, 1, 3) == Approx(400));
  // A tenant with nothing waiting starts next.
  CHECK(work_ahead(scheduling_policy::vtc, 5000, 0, 1, 3) == 0);
  // Never more than everything unstarted.
  CHECK(work_ahead(scheduling_policy::vtc, 5000, 4000, 1, 3) == 5000);
  // Weight 3 against 1: three quarters of the service.
  CHECK(work_ahead(scheduling_policy::vtc, 5000, 300, 3, 1) == Approx(400));
}
