// The priced placement as a pure function of worker views (router/placement.hpp, priced).
#include <catch2/catch.hpp>

#include "router/placement.hpp"

using namespace lf::router;
using lf::actors::worker_id;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_placement_priced {

namespace {

/// A worker with `rows` requests placed on it and `prompt` prompt tokens not yet prefilled, at
/// 1 ms per prompt token and 10 ms per output token: its delay is prompt + 10 * rows (ms) plus
/// the new request's own prompt.
worker_view w(std::uint32_t id, std::uint64_t prompt, std::uint32_t rows, bool has = false, bool loading = false,
              std::uint32_t capacity = 8) {
  worker_view v;
  v.id = worker_id{id};
  v.inflight = rows;
  v.capacity = capacity;
  v.load_tokens = prompt + 20 * rows;
  v.has_adapter = has;
  v.loading = loading;
  v.prompt_ahead = prompt;
  v.output_ahead = 20 * rows;
  v.speed = {1.0, 10.0};
  return v;
}

placer priced(std::uint32_t max_loads = 2, double aging_ms = 1000) {
  placement_options o;
  o.policy = placement_policy::priced;
  o.max_concurrent_loads = max_loads;
  o.aging_ms = aging_ms;
  return placer(o);
}

placement_request req(double load_ms, double waited_ms = 0, std::uint32_t prompt = 10) {
  placement_request r;
  r.needs_adapter = load_ms > 0;
  r.prompt_tokens = prompt;
  r.load_ms = load_ms;
  r.waited_ms = waited_ms;
  return r;
}

std::uint32_t pick(placer& p, const std::vector<worker_view>& ws, const placement_request& r) {
  auto id = p.choose(ws, r);
  REQUIRE(id);
  return id->value();
}

} // namespace

TEST_CASE("priced: the name round-trips", "[placement][priced]") {
  CHECK(parse_placement_policy("priced") == placement_policy::priced);
  CHECK(to_string(placement_policy::priced) == "priced");
}

TEST_CASE("priced: the holder wins while the load costs more than its extra delay", "[placement][priced]") {
  auto p = priced();
  // Worker 1 holds the adapter with 5 rows (50 ms a step); worker 2 is idle but cold.
  const std::vector<worker_view> ws{w(1, 0, 5, true), w(2, 0, 0)};
  CHECK(pick(p, ws, req(80)) == 1);  // 50 < 80
  CHECK(pick(p, ws, req(30)) == 2);  // 50 > 30: load it
  // Base-model requests ignore residency.
  CHECK(pick(p, ws, req(0)) == 2);
  // Prompts waiting for their prefill count too: 40 tokens ahead on worker 2.
  CHECK(pick(p, {w(1, 0, 3), w(2, 40, 0)}, req(0)) == 1);
}

TEST_CASE("priced: delays are priced at each worker's own rates", "[placement][priced]") {
  auto p = priced();
  auto slow = w(1, 0, 4);
  slow.speed = {1.0, 20.0};  // 80 ms a step
  auto fast = w(2, 0, 6);    // 60 ms a step: more rows, less time
  CHECK(pick(p, {slow, fast}, req(0)) == 2);
}

TEST_CASE("priced: ties go to fewer requests then the smaller id and full workers are skipped",
          "[placement][priced]") {
  auto p = priced();
  // 20 ms each: two rows, or one row and 10 prompt tokens ahead.
  CHECK(pick(p, {w(1, 0, 2), w(2, 10, 1)}, req(0)) == 2);
  CHECK(pick(p, {w(3, 0, 1), w(2, 0, 1), w(1, 0, 1)}, req(0)) == 1);
  CHECK(pick(p, {w(1, 0, 8), w(2, 0, 5)}, req(0)) == 2);  // worker 1 is at its capacity
  CHECK_FALSE(p.choose({w(1, 0, 8)}, req(0)));
}

TEST_CASE("priced: at most max_concurrent_loads workers load one adapter at once", "[placement][priced]") {
  auto p = priced(2, 1000);
  // Workers 1 and 2 are loading it and busy; 3 is idle and cold. With a 1 ms price, 3 would win.
  const std::vector<worker_view> ws{w(1, 0, 3, true, true), w(2, 0, 4, true, true), w(3, 0, 0)};
  CHECK(pick(p, ws, req(1)) == 1);
  // One loader only: 3 may load it too.
  const std::vector<worker_view> one{w(1, 0, 3, true, true), w(2, 0, 4, true, false), w(3, 0, 0)};
  CHECK(pick(p, one, req(1)) == 3);
  // Both loaders full: the request waits rather than start a third load...
  const std::vector<worker_view> full{w(1, 0, 8, true, true), w(2, 0, 8, true, true), w(3, 0, 0)};
  CHECK_FALSE(p.choose(full, req(1)));
  // ...until it has waited aging_ms (simulated clock: accepted at t=0, asked again at 999 and 1000).
  CHECK_FALSE(p.choose(full, req(1, 999)));
  CHECK(pick(p, full, req(1, 1000)) == 3);
  // No bound: 0.
  auto unbounded = priced(0);
  CHECK(pick(unbounded, ws, req(1)) == 3);
}

TEST_CASE("priced: aging lowers the load price so a rare adapter's request is not starved", "[placement][priced]") {
  auto p = priced(2, 1000);
  // The holder's step takes 30 ms; a cold idle worker costs a 50 ms load.
  const std::vector<worker_view> ws{w(1, 0, 3, true), w(2, 0, 0)};
  // Simulated clock: the request was accepted at t=0; asked at t=0, 500, 1000, 2000.
  CHECK(pick(p, ws, req(50, 0)) == 1);     // 30 < 50
  CHECK(pick(p, ws, req(50, 500)) == 1);   // 30 < 33
  CHECK(pick(p, ws, req(50, 1000)) == 2);  // 30 > 25: load it elsewhere now
  CHECK(pick(p, ws, req(50, 2000)) == 2);
}

TEST_CASE("priced: a cold load goes where an adapter slot is free", "[placement][priced]") {
  auto p = priced(0);
  // Worker 1: 4 rows, all 8 slots in use; worker 2: 5 rows (10 ms more a step), a slot free.
  auto full = w(1, 0, 4);
  full.adapters_in_use = 8;
  full.adapter_slots = 8;
  auto room = w(2, 0, 5);
  room.adapters_in_use = 7;
  room.adapter_slots = 8;
  CHECK(pick(p, {full, room}, req(5)) == 2);
  // Base-model requests do not care about slots: the lighter worker.
  CHECK(pick(p, {full, room}, req(0)) == 1);
  // Slots unknown (0: never seen a report): no wait assumed.
  full.adapter_slots = 0;
  CHECK(pick(p, {full, room}, req(5)) == 1);
}

} // namespace test_placement_priced
