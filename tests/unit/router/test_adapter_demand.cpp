// When a popular adapter gets another resident copy: share of recent requests against share of
// workers, a floor of requests, a cooldown on a simulated clock, a sliding window.
#include <catch2/catch.hpp>

#include "router/adapter_demand.hpp"

using namespace lf::router;
using namespace std::chrono_literals;

namespace {

const adapter_demand::clock::time_point t0{};

adapter_demand with(std::initializer_list<std::pair<const char*, int>> counts, adapter_demand_options o = {}) {
  adapter_demand d(o);
  for (const auto& [key, n] : counts)
    for (int i = 0; i < n; ++i)
      d.note(key);
  return d;
}

} // namespace

TEST_CASE("an adapter asked for beyond its share of the workers wants a copy", "[adapter_demand]") {
  auto d = with({{"", 60}, {"hot@1", 30}, {"cold@1", 10}});
  CHECK(d.total() == 100);
  CHECK(d.wants_copy("hot@1", 1, 4, t0));       // 30% > 1/4
  CHECK_FALSE(d.wants_copy("hot@1", 2, 4, t0 + 10s));  // 30% < 2/4
  CHECK_FALSE(d.wants_copy("cold@1", 0 + 1, 4, t0));   // 10% < 1/4
  CHECK(d.wants_copy("cold@1", 0, 4, t0));      // not resident anywhere: any share counts
  CHECK_FALSE(d.wants_copy("hot@1", 4, 4, t0 + 10s));  // everywhere already
  CHECK_FALSE(d.wants_copy("", 0, 4, t0));      // the base model needs no copy
  CHECK_FALSE(d.wants_copy("hot@1", 1, 0, t0 + 10s));  // no workers
}

TEST_CASE("a few requests are not demand, and a copy is asked for once per cooldown", "[adapter_demand]") {
  adapter_demand_options o;
  o.min_requests = 8;
  o.cooldown = 2s;
  auto d = with({{"rare@1", 7}}, o);
  CHECK_FALSE(d.wants_copy("rare@1", 0, 2, t0));  // 100% of 7 requests: below the floor
  d.note("rare@1");
  CHECK(d.wants_copy("rare@1", 0, 2, t0));
  CHECK_FALSE(d.wants_copy("rare@1", 0, 2, t0 + 1s));  // the copy may still be loading
  CHECK(d.wants_copy("rare@1", 1, 2, t0 + 2s));
}

TEST_CASE("the window slides: old demand fades", "[adapter_demand]") {
  adapter_demand_options o;
  o.window = 10;
  o.min_requests = 2;
  auto d = with({{"a@1", 10}}, o);
  CHECK(d.recent("a@1") == 10);
  for (int i = 0; i < 9; ++i)
    d.note("");
  CHECK(d.total() == 10);
  CHECK(d.recent("a@1") == 1);
  CHECK_FALSE(d.wants_copy("a@1", 1, 4, t0));
  d.note("");
  CHECK(d.recent("a@1") == 0);
  CHECK_THROWS_AS(adapter_demand(adapter_demand_options{0, 1, 1s}), std::invalid_argument);
}
