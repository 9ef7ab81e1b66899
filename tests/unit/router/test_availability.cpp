// "No worker can serve" as a state (router/availability.hpp): when new requests are refused,
// when queued ones end, and that an outage's check does not end the next one. Time is simulated.
#include <catch2/catch.hpp>

#include "router/availability.hpp"

using namespace lf::router;
using namespace std::chrono_literals;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_availability {

namespace {
const availability::clock::time_point t0{};
}

TEST_CASE("availability: before the first worker requests queue, bounded from the router's start",
          "[availability][health]") {
  availability a(500ms, t0);
  CHECK(a.out());
  CHECK_FALSE(a.refuses());  // starting, not refusing: requests queue
  CHECK(a.outage() == 1);
  CHECK_FALSE(a.expired(t0 + 499ms));
  CHECK(a.expired(t0 + 500ms));  // what queued since the start ends now
  CHECK_FALSE(a.update(1, t0 + 100ms));  // a worker: no outage begins
  CHECK_FALSE(a.out());
  CHECK_FALSE(a.expired(t0 + 10s));
}

TEST_CASE("availability: the last worker drained refuses new requests at once and bounds the queue",
          "[availability][health]") {
  availability a(30s, t0);
  a.update(2, t0);
  CHECK_FALSE(a.update(1, t0 + 1s));  // one left: still serving
  CHECK_FALSE(a.refuses());
  // Timeline: 0 workers at 5 s (outage 2), wait bound 30 s -> queued requests end at 35 s.
  CHECK(a.update(0, t0 + 5s));
  CHECK(a.outage() == 2);
  CHECK(a.refuses());
  CHECK(a.since() == t0 + 5s);
  CHECK_FALSE(a.update(0, t0 + 6s));  // still out: the same outage, its clock not restarted
  CHECK(a.since() == t0 + 5s);
  CHECK_FALSE(a.expired(t0 + 34999ms));
  CHECK(a.expired(t0 + 35s));
}

TEST_CASE("availability: a worker back ends the outage, the next outage has its own clock",
          "[availability][health]") {
  availability a(1s, t0);
  a.update(1, t0);
  REQUIRE(a.update(0, t0 + 1s));
  const auto first = a.outage();
  CHECK_FALSE(a.update(1, t0 + 1500ms));  // undrained within the bound
  CHECK_FALSE(a.refuses());
  CHECK_FALSE(a.expired(t0 + 2s));  // the first outage's check finds nothing to end
  REQUIRE(a.update(0, t0 + 1900ms));
  CHECK(a.outage() == first + 1);  // a check scheduled for `first` is stale
  CHECK_FALSE(a.expired(t0 + 2s));
  CHECK(a.expired(t0 + 2900ms));
}

} // namespace test_availability
