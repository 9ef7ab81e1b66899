// The router's admission decision (router/admission.hpp) without actors: outages, placing at
// once, queueing behind eligible requests, and the queue's refusals, each with its message.
#include <catch2/catch.hpp>

#include "router/admission.hpp"

using namespace lf;
using namespace lf::router;
using namespace std::chrono_literals;

namespace {

using clock_t_ = std::chrono::steady_clock;

/// Books of a router with `accepting` workers taking requests since t0.
struct books {
  clock_t_::time_point t0{};
  availability avail{5s, t0};
  tenancy_options tenants;
  tenant_ledger tenancy;
  admission_view view;

  explicit books(std::uint32_t accepting = 2) {
    avail.update(accepting, t0);
    tenants.tenants["capped"].max_inflight = 1;
    tenants.tenants["capped"].max_queued = 2;
    tenants.tenants["no-queue"].max_queued = 0;
    tenancy = tenant_ledger(tenants);
    view.avail = &avail;
    view.tenancy = &tenancy;
    view.tenants = &tenants;
    view.live_workers = accepting;
    view.queue_capacity = 4;
    view.retry_after_ms = 200;
    view.no_workers_retry_ms = 1000;
  }
};

admission_ask ask_of(const std::string& tenant = "") { return {tenant, 16, 32, 0, 0}; }

/// A chooser that picks `w` (or nothing) and counts its calls.
choose_fn chooser(std::optional<std::uint32_t> w, int& calls) {
  return [w, &calls]() -> std::optional<actors::worker_id> {
    ++calls;
    if (!w)
      return std::nullopt;
    return actors::worker_id{*w};
  };
}

} // namespace

TEST_CASE("admit: a worker with room takes the request at once", "[admission]") {
  books b;
  int calls = 0;
  const auto d = admit(ask_of(), b.view, chooser(7, calls), b.t0);
  REQUIRE(std::holds_alternative<admit_place>(d));
  CHECK(std::get<admit_place>(d).worker == actors::worker_id{7});
  CHECK(calls == 1);
  CHECK(std::string(to_string(d)) == "place");
}

TEST_CASE("admit: behind an eligible queued request, or with no worker free, it queues", "[admission]") {
  books b;
  int calls = 0;
  b.view.someone_eligible_waits = true;
  auto d = admit(ask_of(), b.view, chooser(7, calls), b.t0);
  CHECK(std::holds_alternative<admit_enqueue>(d));
  CHECK(calls == 0);  // the policy is not even asked: the queue goes first
  b.view.someone_eligible_waits = false;
  d = admit(ask_of(), b.view, chooser(std::nullopt, calls), b.t0);
  CHECK(std::holds_alternative<admit_enqueue>(d));
  CHECK(calls == 1);
}

TEST_CASE("admit: no worker takes requests -> no_workers at once, with a retry hint", "[admission]") {
  SECTION("workers registered once, all drained or lost now") {
    books b;
    b.avail.update(0, b.t0 + 1s);
    b.view.live_workers = 2;
    int calls = 0;
    const auto d = admit(ask_of(), b.view, chooser(1, calls), b.t0 + 1s);
    REQUIRE(std::holds_alternative<admit_refuse>(d));
    const auto& r = std::get<admit_refuse>(d);
    CHECK(r.code == serve_errc::no_workers);
    CHECK(r.retry_after_ms == 1000);
    CHECK_THAT(r.message, Catch::Contains("the 2 live worker(s) are drained"));
    CHECK(calls == 0);
    CHECK(refuse_in_outage(b.avail, 2, 1000, b.t0 + 1s));
  }
  SECTION("none ever came: queued while the first outage is young, refused once it is older than the wait") {
    books b(0);
    b.view.live_workers = 0;
    int calls = 0;
    CHECK(std::holds_alternative<admit_enqueue>(admit(ask_of(), b.view, chooser(std::nullopt, calls), b.t0 + 1s)));
    const auto d = admit(ask_of(), b.view, chooser(std::nullopt, calls), b.t0 + 6s);
    REQUIRE(std::holds_alternative<admit_refuse>(d));
    CHECK_THAT(std::get<admit_refuse>(d).message, Catch::Contains("none is registered"));
  }
}

TEST_CASE("admit: the queue's limits refuse with overloaded, naming the tenant or the queue", "[admission]") {
  books b;
  int calls = 0;
  SECTION("the tenant's max_queued") {
    b.view.queued_of_tenant = 2;
    const auto d = admit(ask_of("capped"), b.view, chooser(std::nullopt, calls), b.t0);
    REQUIRE(std::holds_alternative<admit_refuse>(d));
    const auto& r = std::get<admit_refuse>(d);
    CHECK(r.code == serve_errc::overloaded);
    CHECK(r.retry_after_ms == 200);
    CHECK(r.message == "tenant \"capped\" has 2 requests queued, its limit (max_queued 2)");
  }
  SECTION("max_queued 0: a request that cannot be placed at once is refused") {
    const auto d = admit(ask_of("no-queue"), b.view, chooser(std::nullopt, calls), b.t0);
    REQUIRE(std::holds_alternative<admit_refuse>(d));
    CHECK(std::get<admit_refuse>(d).code == serve_errc::overloaded);
    // ... but one a worker takes at once is not.
    CHECK(std::holds_alternative<admit_place>(admit(ask_of("no-queue"), b.view, chooser(3, calls), b.t0)));
  }
  SECTION("the whole queue") {
    b.view.queue_full = true;
    const auto d = admit(ask_of(), b.view, chooser(std::nullopt, calls), b.t0);
    REQUIRE(std::holds_alternative<admit_refuse>(d));
    CHECK(std::get<admit_refuse>(d).message
          == "all workers are busy and the admission queue is full (4 requests)");
  }
}

TEST_CASE("admit: a tenant at max_inflight waits in the queue while others are placed", "[admission]") {
  books b;
  tenant_ticket t{"capped", 16, 32};
  b.tenancy.accepted(t);
  vtc counters;
  b.tenancy.placed(t, counters);  // one in flight: its limit
  int calls = 0;
  CHECK(std::holds_alternative<admit_enqueue>(admit(ask_of("capped"), b.view, chooser(1, calls), b.t0)));
  CHECK(calls == 0);
  CHECK(std::holds_alternative<admit_place>(admit(ask_of("other"), b.view, chooser(1, calls), b.t0)));
  b.view.queued_of_tenant = 2;
  const auto d = admit(ask_of("capped"), b.view, chooser(1, calls), b.t0);
  REQUIRE(std::holds_alternative<admit_refuse>(d));
  CHECK_THAT(std::get<admit_refuse>(d).message, Catch::EndsWith(", and 1 in flight (max_inflight)"));
}
