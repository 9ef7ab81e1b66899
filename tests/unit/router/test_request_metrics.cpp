// The router's per-worker measurements (router/request_metrics.hpp) without an actor system.
#include <catch2/catch.hpp>

#include "router/request_metrics.hpp"

using namespace lf::router;
using lf::actors::worker_id;
using namespace std::chrono_literals;

TEST_CASE("request metrics: errors and finished requests per worker", "[request_metrics]") {
  request_metrics m;
  m.name(worker_id{1}, "node/0");
  m.count_error(worker_id{0}, lf::serve_errc::overloaded);
  m.count_error(worker_id{1}, lf::serve_errc::timeout);
  m.count_error(worker_id{1}, lf::serve_errc::timeout);

  const request_metrics::clock::time_point t0{};
  request_milestones t;
  t.accepted = t0;
  t.placed = t0 + 100ms;
  t.first_token = t0 + 300ms;
  finished_request f;
  f.prompt_tokens = 12;
  f.cached_tokens = 4;
  f.completion_tokens = 11;
  f.queue_ms = 50;
  m.count_done(worker_id{1}, "length", f, t, t0 + 1300ms);

  const auto& all = m.all();
  REQUIRE(all.size() == 2);
  CHECK(all.at(worker_id{0}).name == "-");
  CHECK(all.at(worker_id{0}).m.errors.at("overloaded") == 1);
  const auto& w = all.at(worker_id{1});
  CHECK(w.name == "node/0");
  CHECK(w.m.errors.at("timeout") == 2);
  CHECK(w.m.finished.at("length") == 1);
  CHECK(w.m.prompt_tokens == 12);
  CHECK(w.m.generation_tokens == 11);
  CHECK(w.m.cached_tokens == 4);
  // Queue: 100 ms at the router, then 50 ms at the worker.
  CHECK(w.m.queue_seconds.sum == Approx(0.15));
  CHECK(w.m.ttft_seconds.sum == Approx(0.3));
  CHECK(w.m.tpot_seconds.sum == Approx(0.1));  // 1 s over 10 tokens after the first
  CHECK(w.m.e2e_seconds.sum == Approx(1.3));
  CHECK(w.m.e2e_seconds.count == 1);

  // A request that ended without a first token has no ttft or tpot.
  m.count_done(worker_id{1}, "eos", f, {t0, std::nullopt, std::nullopt}, t0 + 10ms);
  CHECK(w.m.ttft_seconds.count == 1);
  CHECK(w.m.queue_seconds.count == 2);
}

TEST_CASE("request metrics: departed workers are kept up to a bound, oldest forgotten first", "[request_metrics]") {
  request_metrics m;
  m.count_error(worker_id{0}, lf::serve_errc::overloaded);
  for (std::uint32_t w = 1; w <= 5; ++w) {
    m.name(worker_id{w}, "pod-" + std::to_string(w) + "/1");
    m.count_error(worker_id{w}, lf::serve_errc::timeout);
  }
  m.departed(worker_id{0}, 2);  // worker 0 is never a worker that leaves
  for (std::uint32_t w = 1; w <= 4; ++w)
    m.departed(worker_id{w}, 2);
  // Pods 1 and 2 left longest ago: forgotten. 3 and 4 are the last two departed; 5 still serves.
  CHECK(m.all().size() == 4);
  CHECK(m.all().count(worker_id{0}));
  CHECK_FALSE(m.all().count(worker_id{1}));
  CHECK_FALSE(m.all().count(worker_id{2}));
  CHECK(m.all().at(worker_id{3}).name == "pod-3/1");
  CHECK(m.all().count(worker_id{4}));
  CHECK(m.all().count(worker_id{5}));
}
