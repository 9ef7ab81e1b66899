// Randomized scheduler test: 1,000 requests with shared prefixes, LoRA adapters that go cold,
// deadlines, cancellations (some while their step runs), dropped steps and a pool small enough
// to preempt often. A fake engine checks every plan and the K/V read back before every sample.
// At the end: every request finished, was cancelled or expired; every finished output equals an
// unscheduled reference run (preemption and prefix hits change nothing); no block leaked; and
// nothing waited unboundedly.

#include <catch2/catch.hpp>

#include <map>
#include <random>

#include "tests/unit/worker/scheduler_harness.hpp"

using namespace lf::worker;
using namespace lf::worker::testing;
using lf::cache::adapter_id;
using lf::cache::seq_id;

namespace {

struct scenario {
  const char* name;
  scheduler_config cfg;
  std::uint32_t num_blocks;
  std::uint32_t block_size;
  std::uint32_t max_prompt;
  std::uint32_t max_new;
  std::uint64_t seed;
  double arrival; // chance of a burst of 1-3 arrivals per step: keeps load below capacity
};

enum class outcome { finished, cancelled, expired };

struct request {
  adapter_id adapter;
  token_vec prompt;
  std::uint32_t max_tokens = 0;
  long added_at = 0; // step
  std::optional<outcome> result;
};

void run_scenario(const scenario& sc) {
  INFO("scenario " << sc.name);
  constexpr std::uint64_t num_requests = 1000;
  constexpr long max_steps = 200000;
  std::mt19937_64 rng{sc.seed};
  auto uniform = [&](std::uint64_t lo, std::uint64_t hi) { // [lo, hi]
    return std::uniform_int_distribution<std::uint64_t>{lo, hi}(rng);
  };
  auto chance = [&](double p) { return std::bernoulli_distribution{p}(rng); };

  harness h{sc.cfg, sc.num_blocks, sc.block_size};
  // A few shared prefixes, so the prefix cache hits across requests.
  std::vector<token_vec> prefixes;
  for (int i = 0; i < 4; ++i)
    prefixes.push_back(iota_tokens(uniform(sc.max_prompt / 4, sc.max_prompt * 3 / 4), 1000 * (i + 1)));

  std::map<seq_id, request> requests;
  std::vector<seq_id> live;
  std::uint64_t submitted = 0;
  bool adapter2_ready = true;
  long step = 0;
  long longest_wait = 0;

  auto settle = [&](seq_id id, outcome o) {
    auto& r = requests.at(id);
    REQUIRE_FALSE(r.result.has_value());
    r.result = o;
    longest_wait = std::max(longest_wait, step - r.added_at);
    live.erase(std::find(live.begin(), live.end(), id));
  };
  auto cancel_random = [&] {
    const auto id = live[uniform(0, live.size() - 1)];
    REQUIRE(h.s.finish(id));
    settle(id, outcome::cancelled);
  };

  for (; step < max_steps && (submitted < num_requests || !h.s.idle()); ++step) {
    const auto now = at_ms(step);
    // Arrivals: bursts, so queues build up.
    for (auto k = chance(sc.arrival) ? uniform(1, 3) : 0; k > 0 && submitted < num_requests; --k) {
      const seq_id id{submitted++};
      request r;
      r.adapter = adapter_id{static_cast<std::uint32_t>(uniform(0, 2))};
      r.prompt = chance(0.7) ? prefixes[uniform(0, prefixes.size() - 1)] : token_vec{};
      const auto tail = uniform(1, sc.max_prompt - std::min<std::size_t>(r.prompt.size(),
                                                                          sc.max_prompt - 1));
      for (std::uint64_t i = 0; i < tail; ++i)
        r.prompt.push_back(static_cast<std::int32_t>(uniform(0, 999)));
      r.max_tokens = static_cast<std::uint32_t>(uniform(1, sc.max_new));
      r.added_at = step;
      std::optional<time_point> deadline;
      if (chance(0.1))
        deadline = now + std::chrono::milliseconds(uniform(0, 400));
      auto err = h.s.add(seq_spec{id, r.prompt, r.adapter, r.max_tokens, deadline}, now);
      INFO(err.value_or(""));
      REQUIRE_FALSE(err);
      requests.emplace(id, std::move(r));
      live.push_back(id);
    }
    if (!live.empty() && chance(0.02))
      cancel_random();
    if (chance(0.05))
      adapter2_ready = !adapter2_ready;

    const auto plan = h.s.schedule(now, [&](adapter_id a) { return a != adapter_id{2} || adapter2_ready; });
    for (auto id : plan.expired)
      settle(id, outcome::expired);
    if (chance(0.01))
      continue; // the step failed: drop the plan, the next one recomputes
    const auto sampled = h.eng.run(plan);
    // Cancellation racing with the step: the result for it must be ignored.
    if (!live.empty() && chance(0.02))
      cancel_random();
    h.s.complete(plan, sampled);
    h.bm.check_invariants();

    // The worker's stop conditions: max_tokens, or an "EOS" token.
    for (auto id : h.s.running()) {
      const auto& toks = h.s.tokens(id);
      const auto& r = requests.at(id);
      REQUIRE(h.s.num_generated(id) <= r.max_tokens);
      if (h.s.num_generated(id) == r.max_tokens
          || (h.s.num_generated(id) > 0 && toks.back() < 10)) {
        // Whatever was preempted or served from the prefix cache, the output is the model's.
        REQUIRE(toks == reference_run(r.adapter, r.prompt, h.s.num_generated(id)));
        REQUIRE(h.s.finish(id));
        settle(id, outcome::finished);
      }
    }

    const auto l = h.s.get_load();
    REQUIRE(l.waiting + l.running == live.size());
    REQUIRE(l.free_blocks == h.bm.num_free_blocks());
    for (auto id : h.s.running())
      REQUIRE(h.bm.contains(id));
    for (auto id : h.s.waiting())
      REQUIRE_FALSE(h.bm.contains(id));
  }

  REQUIRE(step < max_steps);
  REQUIRE(submitted == num_requests);
  REQUIRE(h.s.idle());
  std::map<outcome, int> count;
  for (const auto& [id, r] : requests) {
    REQUIRE(r.result.has_value());
    ++count[*r.result];
  }
  const auto st = h.bm.get_stats();
  CHECK(st.in_use == 0);
  CHECK(st.free + st.cached == st.total);
  CHECK(h.bm.num_sequences() == 0);
  // Preemption and the prefix cache were exercised, and nothing starved.
  CHECK(h.s.get_load().preemptions > 0);
  CHECK(st.prefix_hit_tokens > 0);
  CHECK(count[outcome::finished] > 700);
  CHECK(longest_wait < 2000);
  UNSCOPED_INFO(sc.name << ": " << step << " steps, " << count[outcome::finished] << " finished, "
                        << count[outcome::cancelled] << " cancelled, " << count[outcome::expired]
                        << " expired, " << h.s.get_load().preemptions << " preemptions, "
                        << st.prefix_hit_tokens << " prefix hit tokens, longest wait "
                        << longest_wait << " steps");
}

} // namespace

TEST_CASE("random requests on a small pool: no leak, no starvation, exact outputs",
          "[scheduler]") {
  // Pools of about 2-3 of the largest requests, so decodes regularly preempt.
  const scenario scenarios[] = {
    {"tiny blocks", scheduler_config{8, 32}, 60, 4, 60, 40, 1, 0.2},
    {"large blocks", scheduler_config{16, 64}, 20, 16, 100, 40, 2, 0.1},
    {"one block each", scheduler_config{4, 4}, 8, 8, 16, 16, 3, 0.1},
    {"big budget", scheduler_config{32, 256}, 80, 4, 80, 40, 4, 0.3},
  };
  for (const auto& sc : scenarios)
    DYNAMIC_SECTION(sc.name) { run_scenario(sc); }
}
