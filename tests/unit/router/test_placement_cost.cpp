// The priced placement's estimate as pure functions, time simulated: rates learned per worker,
// load prices per size class, the delay formula.
#include <catch2/catch.hpp>

#include "router/placement_cost.hpp"

using namespace lf::router;
using lf::actors::worker_id;
using namespace std::chrono_literals;

namespace {

/// Simulates a worker that spends `p` ms per prompt token and `d` ms per output token: each 250 ms
/// window it serves `prompt` prompt tokens (at the window's end) and as many output tokens as fit.
void run_windows(worker_speed_meter& m, cost_clock::time_point& now, int windows, double p, double d,
                 std::uint64_t prompt) {
  for (int i = 0; i < windows; ++i) {
    const double left = 250.0 - static_cast<double>(prompt) * p;
    const auto outputs = static_cast<std::uint64_t>(left / d);
    // Tokens one by one, as the router streams them: outputs spread over the window.
    for (std::uint64_t k = 0; k + 1 < outputs; ++k)
      m.served(now + std::chrono::microseconds(static_cast<std::int64_t>(1000 * d * (k + 1))), 0, 1);
    now += 250ms;
    m.served(now, prompt, 1);
  }
}

} // namespace

TEST_CASE("speed meter: the prior until a busy window is measured", "[placement_cost]") {
  speed_meter_options o;
  o.prior = {0.5, 5.0};
  worker_speed_meter m(o);
  auto now = cost_clock::time_point{} + 1s;
  CHECK(m.speed().prefill_ms_per_token == Approx(0.5));
  CHECK(m.speed().decode_ms_per_token == Approx(5.0));
  // Tokens while idle (no busy window) teach nothing.
  m.served(now, 100, 10);
  now += 1s;
  m.served(now, 100, 10);
  CHECK(m.windows() == 0);
  CHECK(m.speed().decode_ms_per_token == Approx(5.0));
}

TEST_CASE("speed meter: learns a worker's prefill and decode rates from mixed windows", "[placement_cost]") {
  worker_speed_meter m;
  auto now = cost_clock::time_point{} + 1s;
  m.busy(now, true);
  // Timeline: windows alternate a prompt-heavy mix (200 prompt tokens) and a decode-only one.
  for (int round = 0; round < 20; ++round) {
    run_windows(m, now, 1, 0.2, 3.0, 200);
    run_windows(m, now, 1, 0.2, 3.0, 0);
  }
  CHECK(m.windows() >= 30);
  CHECK(m.speed().prefill_ms_per_token == Approx(0.2).epsilon(0.15));
  CHECK(m.speed().decode_ms_per_token == Approx(3.0).epsilon(0.1));
}

TEST_CASE("speed meter: a decode-only worker keeps the prior prefill rate and idle gaps do not count",
          "[placement_cost]") {
  worker_speed_meter m;
  auto now = cost_clock::time_point{} + 1s;
  m.busy(now, true);
  run_windows(m, now, 20, 0.2, 8.0, 0);
  const auto w = m.windows();
  CHECK(m.speed().decode_ms_per_token == Approx(8.0).epsilon(0.1));
  CHECK(m.speed().prefill_ms_per_token == Approx(0.5));
  // Idle for 10 s, then one token: no window of 10 s is measured.
  m.busy(now, false);
  now += 10s;
  m.busy(now, true);
  now += 300ms;
  m.served(now, 0, 1);
  CHECK(m.windows() == w + 1);
  CHECK(m.speed().decode_ms_per_token < 100);
}

TEST_CASE("load prices: prior, per size class, only new loads count", "[placement_cost]") {
  load_price_options o;
  o.prior_ms = 7;
  o.prior_ms_per_mb = 2;
  o.alpha = 0.5;
  load_price_book b(o);
  CHECK(b.price_ms("a") == Approx(7));
  const std::uint64_t mb8 = 8u << 20;
  // Worker 1 reports "a" (8 MiB) loaded once in 40 ms: the 8 MiB class costs 40.
  b.observe(worker_id{1}, {{"a", 1, 40, mb8}});
  CHECK(b.loads_seen() == 1);
  CHECK(b.price_ms("a") == Approx(40));
  // The same report again is no new load.
  b.observe(worker_id{1}, {{"a", 1, 40, mb8}});
  CHECK(b.loads_seen() == 1);
  // "b" of the same class loads on worker 2 in 20 ms: EWMA 40 + 0.5 (20 - 40) = 30.
  b.observe(worker_id{2}, {{"b", 1, 20, mb8 + 1000}});
  CHECK(b.price_ms("a") == Approx(30));
  CHECK(b.price_ms("b") == Approx(30));
  // An adapter never reported: the mean of the classes.
  CHECK(b.price_ms("c") == Approx(30));
  // A known 32 MiB adapter without loads of its class: the nearest class scaled (x4).
  b.observe(worker_id{1}, {{"big", 0, 0, 4 * mb8}});
  CHECK(b.price_ms("big") == Approx(120));
  // Its first load sets its own class.
  b.observe(worker_id{1}, {{"big", 1, 100, 4 * mb8}});
  CHECK(b.price_ms("big") == Approx(100));
  CHECK(b.price_ms("a") == Approx(30));
}

TEST_CASE("load prices: a known size before any load uses prior_ms_per_mb and forget resets counts",
          "[placement_cost]") {
  load_price_book b;
  b.observe(worker_id{1}, {{"a", 0, 0, 10u << 20}});
  CHECK(b.price_ms("a") == Approx(20));  // 10 MiB x 2 ms/MiB
  b.observe(worker_id{1}, {{"a", 2, 50, 10u << 20}});
  CHECK(b.loads_seen() == 1);
  b.forget(worker_id{1});
  b.observe(worker_id{1}, {{"a", 2, 50, 10u << 20}});  // a worker registering again starts anew
  CHECK(b.loads_seen() == 2);
  CHECK(load_price_book::size_class(0) == 0);
  CHECK(load_price_book::size_class(1) == 0);
  CHECK(load_price_book::size_class(1024) == 10);
  CHECK(load_price_book::size_class(1025) == 10);
}

TEST_CASE("predicted delay: prompts ahead and one step at the worker's rates, own prefill, load price aged",
          "[placement_cost]") {
  worker_cost_input w;
  w.speed = {0.5, 4.0};
  w.prompt_ahead = 100;   // 50 ms of prefill ahead
  w.rows = 20;            // a step decodes 20 rows: 80 ms
  w.output_ahead = 500;   // what they will still stream does not delay a first token
  placement_request r;
  r.prompt_tokens = 40;   // 20 ms
  CHECK(predicted_delay_ms(w, r, 1000) == Approx(150));
  r.needs_adapter = true;
  r.load_ms = 60;
  CHECK(predicted_delay_ms(w, r, 1000) == Approx(210));
  w.has_adapter = true;
  CHECK(predicted_delay_ms(w, r, 1000) == Approx(150));
  w.has_adapter = false;
  r.waited_ms = 1000;  // waited the aging time: half the price
  CHECK(predicted_delay_ms(w, r, 1000) == Approx(180));
  CHECK(predicted_delay_ms(w, r, 0) == Approx(210));  // no aging
  w.cached_prefix_tokens = 30;  // prefix credit: only 10 tokens of its own to prefill
  CHECK(predicted_delay_ms(w, r, 0) == Approx(195));
  CHECK(age_weight(3000, 1000) == Approx(0.25));
}

TEST_CASE("speed meter: windows too alike to split still predict their time", "[placement_cost]") {
  // Every window has 10 prompt tokens per output token: prefill and decode cannot be told apart.
  // The worker is twice as slow as the prior (1 and 10 ms): T = 20 ms per output token.
  worker_speed_meter m;
  auto now = cost_clock::time_point{} + 1s;
  m.busy(now, true);
  for (int i = 0; i < 40; ++i) {
    const std::uint64_t d = 10 + static_cast<std::uint64_t>(i % 3);
    now += std::chrono::milliseconds(20 * d);
    m.served(now, 10 * d, d);
  }
  const auto s = m.speed();
  CHECK(s.prefill_ms_per_token > 0);
  CHECK(s.decode_ms_per_token > 0);
  CHECK(10 * s.prefill_ms_per_token + s.decode_ms_per_token == Approx(20).epsilon(0.05));
  const double ratio = s.prefill_ms_per_token / s.decode_ms_per_token;
  CHECK(ratio >= 0.1 / worker_speed_meter::max_ratio_drift);
  CHECK(ratio <= 0.1 * worker_speed_meter::max_ratio_drift);
}

TEST_CASE("predicted delay: a cold load where every adapter slot is in use waits for one to free",
          "[placement_cost]") {
  worker_cost_input w;
  w.speed = {0.5, 4.0};
  w.rows = 4;           // one step: 16 ms
  w.output_ahead = 20;  // 5 tokens left each on average: 5 steps of 16 ms until one ends
  placement_request r;
  r.needs_adapter = true;
  r.load_ms = 10;
  CHECK(predicted_delay_ms(w, r, 0) == Approx(26));
  w.slots_full = true;
  CHECK(predicted_delay_ms(w, r, 0) == Approx(106));
  w.has_adapter = true;  // its own adapter is there: no load, no wait
  CHECK(predicted_delay_ms(w, r, 0) == Approx(16));
}

TEST_CASE("predicted delay: decode_share counts a share of the decoding still to come", "[placement_cost]") {
  worker_cost_input w;
  w.speed = {0.5, 4.0};
  w.rows = 4;            // one step: 16 ms
  w.output_ahead = 100;  // 400 ms of decoding to come
  placement_request r;
  CHECK(predicted_delay_ms(w, r, 0) == Approx(16));
  CHECK(predicted_delay_ms(w, r, 0, 0.25) == Approx(116));
  CHECK(predicted_delay_ms(w, r, 0, 1) == Approx(416));
}
