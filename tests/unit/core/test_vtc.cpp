// Virtual token counters (core/vtc.hpp): who is served next, the lift, weights, bounded memory.
#include <catch2/catch.hpp>

#include <algorithm>
#include <deque>
#include <map>
#include <stdexcept>

#include "core/vtc.hpp"

using namespace lf;

TEST_CASE("vtc: the backlogged tenant with the smallest counter is picked, ties by backlog order", "[vtc]") {
  vtc v;
  CHECK_FALSE(v.pick());
  v.backlogged("a");
  v.backlogged("b");
  CHECK(v.pick() == "a");  // both at 0: a waited longest
  v.charge("a", 10, 0);
  CHECK(v.pick() == "b");
  v.charge("b", 0, 10);  // output tokens cost 2 each
  CHECK(v.counter("b") == 20);
  CHECK(v.pick() == "a");
  // Only tenants the caller accepts (e.g. those under their in-flight cap).
  CHECK(v.pick([](const std::string& t) { return t == "b"; }) == "b");
  CHECK_FALSE(v.pick([](const std::string&) { return false; }));
  v.idle("a");
  CHECK(v.pick() == "b");
  CHECK(v.backlogged_count() == 1);
}

TEST_CASE("vtc: a weight-2 tenant is charged half", "[vtc]") {
  vtc v({1.0, 2.0});
  v.set_weight("gold", 2);
  CHECK(v.weight("gold") == 2);
  CHECK(v.weight("other") == 1);
  v.charge("gold", 8, 4);
  CHECK(v.counter("gold") == Approx((8 + 2 * 4) / 2.0));
  v.set_default_weight(0.5);
  CHECK(v.weight("other") == 0.5);
  CHECK(v.weight("gold") == 2);
  CHECK_THROWS_AS(v.set_default_weight(0), std::invalid_argument);
  CHECK_THROWS_AS(v.set_weight("x", 0), std::invalid_argument);
  CHECK_THROWS_AS(v.set_weight("x", -1), std::invalid_argument);
  CHECK_THROWS_AS(vtc({-1, 1}), std::invalid_argument);
}

TEST_CASE("vtc: a newly backlogged tenant is lifted to the smallest backlogged counter, never lowered", "[vtc]") {
  vtc v;
  v.backlogged("a");
  v.backlogged("b");
  v.charge("a", 100, 0);
  v.charge("b", 300, 0);
  // c idle all along: without the lift it would hold 0 and be served alone for a long time.
  v.backlogged("c");
  CHECK(v.counter("c") == 100);
  // A tenant whose counter is above the minimum keeps it.
  v.charge("d", 500, 0);
  v.backlogged("d");
  CHECK(v.counter("d") == 500);
  // Backlogged again while backlogged: nothing changes.
  v.charge("c", 1, 0);
  v.backlogged("c");
  CHECK(v.counter("c") == 101);
}

TEST_CASE("vtc: with nobody backlogged the lift is the counter of the last tenant to leave", "[vtc]") {
  vtc v;
  v.backlogged("a");
  v.charge("a", 50, 0);
  v.idle("a");
  v.charge("a", 0, 5);  // its requests in service still stream output: 60 now
  v.backlogged("b");
  CHECK(v.counter("b") == 60);
  // The very first tenant starts at 0.
  vtc fresh;
  fresh.charge("x", 7, 0);  // served without ever waiting: no lift source
  fresh.backlogged("y");
  CHECK(fresh.counter("y") == 0);
}

namespace {

/// One unit of service per tick to the picked tenant's oldest request; returns service per
/// tenant over ticks [from, to). Every tenant always has requests waiting (backlogged).
std::map<std::string, double> serve(vtc& v, const std::map<std::string, int>& arrivals_per_tick, int ticks,
                                    int from, std::uint64_t prompt, std::uint64_t output,
                                    double* max_gap = nullptr) {
  std::map<std::string, std::deque<int>> queues;
  std::map<std::string, double> got, total;
  double gap = 0;
  for (int t = 0; t < ticks; ++t) {
    for (const auto& [name, n] : arrivals_per_tick)
      for (int k = 0; k < n; ++k) {
        if (queues[name].empty())
          v.backlogged(name);
        queues[name].push_back(t);
      }
    auto who = v.pick();
    REQUIRE(who);
    queues[*who].pop_front();
    if (queues[*who].empty())
      v.idle(*who);
    v.charge(*who, prompt, output);
    const double cost = static_cast<double>(prompt) + 2.0 * static_cast<double>(output);
    total[*who] += cost;
    if (t >= from)
      got[*who] += cost;
    // The largest difference of cumulative service between any two tenants (weights 1).
    double lo = 1e300, hi = -1e300;
    for (const auto& [name, n] : arrivals_per_tick) {
      lo = std::min(lo, total[name]);
      hi = std::max(hi, total[name]);
    }
    if (t >= from)
      gap = std::max(gap, hi - lo);
  }
  if (max_gap)
    *max_gap = gap;
  return got;
}

} // namespace

TEST_CASE("vtc: one tenant at 10x the load of three others, all backlogged, gets the same service", "[vtc]") {
  vtc v;
  // One request served per tick; a arrives at 10 per tick, b, c, d at 1 each: everyone backlogged.
  double gap = 0;
  auto got = serve(v, {{"a", 10}, {"b", 1}, {"c", 1}, {"d", 1}}, 400, 0, 20, 10, &gap);
  const double one = 20 + 2 * 10;
  for (const auto& t : {"a", "b", "c", "d"})
    CHECK(got[t] == Approx(100 * one).margin(one));
  // The paper's bound: while backlogged, counters stay within one request's charge.
  CHECK(gap <= one);
}

TEST_CASE("vtc: weights split the service in their ratio", "[vtc]") {
  vtc v;
  v.set_weight("gold", 3);
  auto got = serve(v, {{"gold", 5}, {"std", 5}}, 400, 0, 10, 0);
  CHECK(got["gold"] == Approx(3 * got["std"]).epsilon(0.02));
}

TEST_CASE("vtc: counters of many idle tenants are forgotten without changing a pick", "[vtc]") {
  vtc v;
  v.backlogged("big");
  v.charge("big", 1000, 0);
  for (int i = 0; i < 5000; ++i) {
    const auto name = "t" + std::to_string(i);
    v.backlogged(name);
    v.charge(name, 1, 0);
    v.idle(name);
    v.charge("big", 2, 0);  // the floor moves past the tenant that just left
  }
  CHECK(v.size() < 2100);  // pruned as the table grew
  // A returning tenant is lifted to the floor, forgotten or not.
  v.backlogged("t3");
  CHECK(v.counter("t3") == v.counter("big"));
  CHECK(v.pick() == "big");  // tie at 1000: big waited longest
}

TEST_CASE("vtc: tenants only ever charged (served without waiting) do not grow the table without bound", "[vtc]") {
  vtc v;
  for (int i = 0; i < 100000; ++i)
    v.charge("user-" + std::to_string(i), 10, 1);  // every request a new name, never queued
  CHECK(v.size() <= vtc::max_tenants + 1024);
  v.backlogged("x");
  CHECK(v.pick() == "x");
}
