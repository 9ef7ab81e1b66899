// The bounded admission queue: one line per tenant, fcfs or VTC across them, a front lane for
// moved requests.
#include <catch2/catch.hpp>

#include <map>

#include "router/admission_queue.hpp"
#include "actors/ids.hpp"

using namespace lf::router;
using lf::scheduling_policy;
using lf::actors::route_id;
using lf::actors::worker_id;

namespace {

/// Takes the next request out, as the router's dispatch does.
std::optional<route_id> pop(admission_queue<route_id>& q, const admission_queue<route_id>::eligible_fn& ok = {}) {
  auto n = q.next(ok);
  if (n)
    q.remove(*n);
  return n;
}

} // namespace

TEST_CASE("admission queue: FIFO, bounded, refuses duplicates", "[admission]") {
  admission_queue<route_id> q(3);
  CHECK(q.push(route_id{1}, ""));
  CHECK(q.push(route_id{2}, ""));
  CHECK_FALSE(q.push(route_id{2}, ""));
  CHECK(q.push(route_id{3}, ""));
  CHECK(q.full());
  CHECK_FALSE(q.push(route_id{4}, ""));  // full: the router answers overloaded
  CHECK(q.size() == 3);
  CHECK(pop(q) == route_id{1});
  CHECK(q.push(route_id{4}, ""));
  CHECK(pop(q) == route_id{2});
  CHECK(pop(q) == route_id{3});
  CHECK(pop(q) == route_id{4});
  CHECK_FALSE(pop(q));
  CHECK(q.empty());
}

TEST_CASE("admission queue: push_front ignores the bound, remove works anywhere", "[admission]") {
  admission_queue<route_id> q(2, scheduling_policy::vtc);
  q.push(route_id{10}, "a");
  q.push(route_id{11}, "b");
  // Taken back from a dead worker: first in line even though the queue is full.
  CHECK(q.push_front(route_id{5}));
  CHECK(q.size() == 3);
  CHECK(q.next() == route_id{5});
  // Even a tenant the caller holds back: a moved request was admitted already.
  CHECK(q.next([](const std::string&) { return false; }) == route_id{5});
  CHECK(q.remove(route_id{10}));  // cancelled while queued
  CHECK_FALSE(q.remove(route_id{10}));
  CHECK_FALSE(q.contains(route_id{10}));
  CHECK(q.queued("a") == 0);
  CHECK(pop(q) == route_id{5});
  CHECK(pop(q) == route_id{11});
}

TEST_CASE("admission queue: fcfs across tenants, skipping a tenant the caller holds back", "[admission]") {
  admission_queue<route_id> q(10, scheduling_policy::fcfs);
  q.push(route_id{1}, "heavy");
  q.push(route_id{2}, "heavy");
  q.push(route_id{3}, "light");
  q.push(route_id{4}, "heavy");
  CHECK(q.queued("heavy") == 3);
  // heavy at its in-flight limit: light goes, heavy keeps its order.
  CHECK(pop(q, [](const std::string& t) { return t != "heavy"; }) == route_id{3});
  CHECK_FALSE(q.next([](const std::string& t) { return t != "heavy"; }));
  CHECK(pop(q) == route_id{1});
  CHECK(pop(q) == route_id{2});
  CHECK(pop(q) == route_id{4});
}

TEST_CASE("admission queue: vtc serves the tenant with the least service, fcfs within it", "[admission][vtc]") {
  admission_queue<route_id> q(100, scheduling_policy::vtc, {1.0, 2.0});
  // Timeline (one placement at a time, each request 10 prompt + 5 output tokens = 20):
  //   heavy: 1..9 queued first, light: 100, 101 queued after.
  for (std::uint64_t i = 1; i <= 9; ++i)
    q.push(route_id{i}, "heavy");
  q.push(route_id{100}, "light");
  q.push(route_id{101}, "light");
  std::vector<std::uint64_t> order;
  while (auto n = pop(q)) {
    order.push_back(n->value());
    const auto tenant = n->value() >= 100 ? "light" : "heavy";
    q.counters().charge(tenant, 10, 5);
  }
  // fcfs would give 1..9, 100, 101; vtc alternates while both are backlogged.
  CHECK(order == std::vector<std::uint64_t>{1, 100, 2, 101, 3, 4, 5, 6, 7, 8, 9});
}

TEST_CASE("admission queue: a tenant arriving late is lifted, it cannot claim the service it missed", "[admission][vtc]") {
  admission_queue<route_id> q(100, scheduling_policy::vtc);
  for (std::uint64_t i = 1; i <= 6; ++i)
    q.push(route_id{i}, "a");
  for (int k = 0; k < 4; ++k) {
    pop(q);
    q.counters().charge("a", 100, 0);
  }
  q.push(route_id{50}, "late");
  q.push(route_id{51}, "late");
  // Lifted to a's 400: one each, not both of late's first.
  CHECK(q.counters().counter("late") == 400);
  CHECK(pop(q) == route_id{5});  // tie: a was backlogged first
  q.counters().charge("a", 100, 0);
  CHECK(pop(q) == route_id{50});
  q.counters().charge("late", 100, 0);
  CHECK(pop(q) == route_id{6});
}

TEST_CASE("admission queue: weights split placements in their ratio", "[admission][vtc]") {
  admission_queue<route_id> q(1000, scheduling_policy::vtc);
  q.counters().set_weight("gold", 3);
  for (std::uint64_t i = 0; i < 200; ++i) {
    q.push(route_id{i}, "std");
    q.push(route_id{1000 + i}, "gold");
  }
  std::map<std::string, int> placed;
  for (int k = 0; k < 200; ++k) {
    auto n = pop(q);
    REQUIRE(n);
    const auto t = n->value() >= 1000 ? "gold" : "std";
    ++placed[t];
    q.counters().charge(t, 16, 0);
  }
  // 3:1, give or take a tie broken the other way by rounding (16 / 3 is not exact).
  CHECK(placed["gold"] == Approx(150).margin(2));
  CHECK(placed["std"] == Approx(50).margin(2));
}
