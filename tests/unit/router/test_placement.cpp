// Placement policies as pure functions of the router's worker views.
#include <catch2/catch.hpp>

#include <map>

#include "router/placement.hpp"

using namespace lf::router;
using lf::actors::route_id;
using lf::actors::worker_id;

namespace {

worker_view w(std::uint32_t id, std::uint64_t load = 0, std::uint32_t inflight = 0,
              bool has_adapter = false, std::uint32_t capacity = 4) {
  worker_view v;
  v.id = worker_id{id};
  v.inflight = inflight;
  v.capacity = capacity;
  v.load_tokens = load;
  v.has_adapter = has_adapter;
  return v;
}

std::uint32_t pick(placer& p, const std::vector<worker_view>& ws, bool needs_adapter = false) {
  auto id = p.choose(ws, needs_adapter);
  REQUIRE(id);
  return id->value();
}

placer make(placement_policy policy, std::uint64_t cold_cost = 100) {
  placement_options o;
  o.policy = policy;
  o.adapter_load_cost_tokens = cold_cost;
  return placer(o);
}

} // namespace

TEST_CASE("policy names round-trip", "[placement]") {
  for (auto p : {placement_policy::round_robin, placement_policy::least_loaded,
                 placement_policy::adapter_affinity})
    CHECK(parse_placement_policy(to_string(p)) == p);
  CHECK_FALSE(parse_placement_policy("random"));
}

TEST_CASE("no worker, or every worker full: no choice", "[placement]") {
  for (auto policy : {placement_policy::round_robin, placement_policy::least_loaded,
                      placement_policy::adapter_affinity}) {
    auto p = make(policy);
    CHECK_FALSE(p.choose({}, false));
    CHECK_FALSE(p.choose({w(1, 0, 4), w(2, 0, 5)}, true));
  }
}

TEST_CASE("round_robin cycles by id and skips full workers", "[placement]") {
  auto p = make(placement_policy::round_robin);
  std::vector<worker_view> ws = {w(3), w(1), w(2)};  // order of the vector does not matter
  // Picks: 1, 2, 3, 1, ...
  CHECK(pick(p, ws) == 1);
  CHECK(pick(p, ws) == 2);
  CHECK(pick(p, ws) == 3);
  CHECK(pick(p, ws) == 1);
  ws[2] = w(2, 0, 4);  // worker 2 full
  CHECK(pick(p, ws) == 3);
  CHECK(pick(p, ws) == 1);
  CHECK(pick(p, ws) == 3);
}

TEST_CASE("round_robin survives workers leaving and joining", "[placement]") {
  auto p = make(placement_policy::round_robin);
  CHECK(pick(p, {w(1), w(2), w(3)}) == 1);
  CHECK(pick(p, {w(1), w(2), w(3)}) == 2);
  // Worker 2 (the last choice) dies; the rotation continues after it.
  CHECK(pick(p, {w(1), w(3)}) == 3);
  // Worker 7 joins.
  CHECK(pick(p, {w(1), w(3), w(7)}) == 7);
  CHECK(pick(p, {w(1), w(3), w(7)}) == 1);
}

TEST_CASE("least_loaded picks the smallest token load, ties by inflight then id", "[placement]") {
  auto p = make(placement_policy::least_loaded);
  CHECK(pick(p, {w(1, 500), w(2, 100), w(3, 300)}) == 2);
  CHECK(pick(p, {w(1, 100, 3), w(2, 100, 1), w(3, 100, 2)}) == 2);
  CHECK(pick(p, {w(2, 100, 1), w(1, 100, 1)}) == 1);
  // The least loaded worker is full: next best.
  CHECK(pick(p, {w(1, 500), w(2, 0, 4), w(3, 300)}) == 3);
  // least_loaded ignores adapters.
  CHECK(pick(p, {w(1, 10, 0, false), w(2, 50, 0, true)}, true) == 1);
}

TEST_CASE("least_loaded spreads a burst when the caller accounts each placement", "[placement]") {
  // The router adds each request's cost to the chosen worker before the next choice.
  auto p = make(placement_policy::least_loaded);
  std::vector<worker_view> ws = {w(1, 0, 0, false, 100), w(2, 0, 0, false, 100)};
  std::map<std::uint32_t, int> count;
  for (int i = 0; i < 10; ++i) {
    auto id = pick(p, ws);
    ++count[id];
    for (auto& v : ws)
      if (v.id.value() == id) {
        v.load_tokens += 50;
        ++v.inflight;
      }
  }
  CHECK(count[1] == 5);
  CHECK(count[2] == 5);
}

TEST_CASE("adapter_affinity prefers a holder unless it is much busier", "[placement]") {
  auto p = make(placement_policy::adapter_affinity, 100);
  // Holder a bit busier than the cold worker: stays with the holder.
  CHECK(pick(p, {w(1, 0, 0, false), w(2, 60, 0, true)}, true) == 2);
  // Holder busier by more than a cold load costs: the cold worker wins.
  CHECK(pick(p, {w(1, 0, 0, false), w(2, 160, 0, true)}, true) == 1);
  // Two holders: the less loaded one.
  CHECK(pick(p, {w(1, 0), w(2, 90, 0, true), w(3, 40, 0, true)}, true) == 3);
  // Holder full: the best cold worker.
  CHECK(pick(p, {w(1, 30), w(2, 0, 4, true), w(3, 20)}, true) == 3);
}

TEST_CASE("adapter_affinity is least_loaded for base-model requests", "[placement]") {
  auto p = make(placement_policy::adapter_affinity, 100);
  // needs_adapter == false: has_adapter is irrelevant (base model is everywhere).
  CHECK(pick(p, {w(1, 0, 0, false), w(2, 60, 0, true)}, false) == 1);
}
