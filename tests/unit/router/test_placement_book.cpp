// The router's placement books (router/placement_book.hpp) without an actor system: what
// placing, streaming and unplacing a request puts on its worker, load reports, draining,
// saturation, and which workers a prefetch picks. Time is a simulated clock.
#include <catch2/catch.hpp>

#include "router/placement_book.hpp"

using namespace lf::router;
using lf::actors::worker_id;

// The file's own namespace: its helpers may share names with other test files'
// (test targets build as unity batches).
namespace test_placement_book {

namespace {

const cost_clock::time_point t0{};
const worker_id w1{1}, w2{2}, w3{3};

placement_ticket ticket(std::string adapter, std::uint64_t cost) {
  placement_ticket t;
  t.adapter = std::move(adapter);
  t.cost = cost;
  return t;
}

} // namespace

TEST_CASE("placement book: a request's placement is taken off exactly", "[placement_book]") {
  placement_book book({}, 4);
  book.add(w1, 8, {});
  auto t = ticket("kjv@1", 30);
  // prompt 10, max 20 output tokens, 5 of them streamed before a move: prefill 15, 15 to come.
  book.place(w1, t, 10, 20, 5, t0);
  const auto* b = book.find(w1);
  REQUIRE(b != nullptr);
  CHECK(b->inflight == 1);
  CHECK(b->load_tokens == 30);
  CHECK(b->prompt_ahead == 15);
  CHECK(b->output_ahead == 15);
  CHECK(t.prompt_ahead == 15);
  CHECK(b->expects("kjv@1"));
  CHECK(b->placed_adapters.at("kjv@1") == 1);

  // The first token clears the prompt ahead; each token takes one output token off.
  book.streamed(w1, t, t0);
  CHECK(b->prompt_ahead == 0);
  CHECK(b->output_ahead == 14);
  book.streamed(w1, t, t0);
  CHECK(b->output_ahead == 13);

  book.unplace(w1, t, t0);
  CHECK(b->inflight == 0);
  CHECK(b->load_tokens == 0);
  CHECK(b->prompt_ahead == 0);
  CHECK(b->output_ahead == 0);
  CHECK(b->placed_adapters.empty());
  CHECK(b->expects("kjv@1"));  // placed since the last report: maybe loaded there
  book.report(w1, {}, 1, {});
  CHECK_FALSE(b->expects("kjv@1"));

  // Unplacing from a worker that is gone changes nothing (and does not throw).
  book.remove(w1);
  book.unplace(w1, t, t0);
  CHECK(book.find(w1) == nullptr);
}

TEST_CASE("placement book: views skip draining workers, choose places by load", "[placement_book]") {
  placement_options o;
  o.policy = placement_policy::least_loaded;
  placement_book book(o, 2);
  book.add(w1, 0, {});
  book.add(w2, 0, {"kjv@1"});
  auto a = ticket("", 100);
  book.place(w1, a, 10, 90, 0, t0);
  CHECK(book.choose("", 10, 0) == w2);  // the less loaded
  auto views = book.views("kjv@1");
  REQUIRE(views.size() == 2);
  CHECK_FALSE(views[0].has_adapter);
  CHECK(views[1].has_adapter);
  CHECK_FALSE(views[1].loading);  // resident by its registration
  CHECK(views[1].capacity == 2);

  CHECK(book.drain(w2));
  CHECK_FALSE(book.drain(w2));  // already
  CHECK(book.draining(w2));
  CHECK(book.views("").size() == 1);
  CHECK(book.choose("", 10, 0) == w1);
  auto b = ticket("", 100);
  book.place(w1, b, 10, 90, 0, t0);
  CHECK_FALSE(book.choose("", 10, 0));  // w1 is at its capacity of 2, w2 drains
}

TEST_CASE("placement book: a worker not measured yet is priced at the measured workers' mean rates",
          "[placement_book]") {
  placement_options o;
  o.policy = placement_policy::cache_aware;
  placement_book book(o, 64);
  book.add(w1, 0, {});
  book.add(w2, 0, {});
  // Nothing measured: every worker has the prior.
  for (const auto& v : book.views("")) {
    CHECK(v.speed.decode_ms_per_token == service_speed{}.decode_ms_per_token);
    CHECK(v.speed.prefill_ms_per_token == service_speed{}.prefill_ms_per_token);
  }
  // w1 decodes a token a millisecond for 2 s, far faster than the prior's 5 ms.
  auto t = ticket("", 0);
  book.place(w1, t, 10, 4000, 0, t0);
  for (int ms = 1; ms <= 2000; ++ms)
    book.streamed(w1, t, t0 + std::chrono::milliseconds(ms));
  // w3 joins now; w2 was never busy. Both are priced at w1's measured rates.
  book.add(w3, 0, {});
  const auto views = book.views("");
  REQUIRE(views.size() == 3);
  const auto measured = views[0].speed;
  CHECK(measured.decode_ms_per_token < 2.0);
  for (std::size_t i = 1; i < 3; ++i) {
    CHECK(views[i].speed.decode_ms_per_token == measured.decode_ms_per_token);
    CHECK(views[i].speed.prefill_ms_per_token == measured.prefill_ms_per_token);
  }
  // So an idle newcomer wins a request against the busy measured worker.
  const auto pick = book.choose("", 10, 0);
  REQUIRE(pick);
  CHECK(*pick != w1);
}

TEST_CASE("placement book: a worker's state through drain and undrain, only serving ones accept",
          "[placement_book][health]") {
  placement_book book({}, 4);
  book.add(w1, 0, {});
  book.add(w2, 0, {});
  CHECK(book.accepting() == 2);
  CHECK(book.state(w1) == lf::worker_state::serving);
  CHECK(book.state(w3) == lf::worker_state::lost);  // never registered (or removed)
  CHECK_FALSE(book.undrain(w1));  // not drained: nothing to undo

  auto a = ticket("", 10);
  book.place(w1, a, 5, 5, 0, t0);
  CHECK(book.drain(w1));
  CHECK(book.state(w1) == lf::worker_state::draining);  // a request still on it
  CHECK(book.accepting() == 1);
  book.unplace(w1, a, t0);
  CHECK(book.state(w1) == lf::worker_state::drained);
  CHECK(book.choose("", 5, 0) == w2);

  CHECK(book.drain(w2));
  CHECK(book.accepting() == 0);
  CHECK_FALSE(book.choose("", 5, 0));  // nothing takes placements
  CHECK(book.least_loaded() == std::nullopt);

  CHECK(book.undrain(w1));
  CHECK_FALSE(book.undrain(w1));  // already back
  CHECK(book.state(w1) == lf::worker_state::serving);
  CHECK(book.accepting() == 1);
  CHECK(book.choose("", 5, 0) == w1);
  CHECK(book.views("").size() == 1);

  book.remove(w2);
  CHECK(book.state(w2) == lf::worker_state::lost);
  CHECK_FALSE(book.undrain(w2));  // gone: nothing to put back
}

TEST_CASE("placement book: saturated when every live batch is full", "[placement_book]") {
  placement_book book({}, 3);
  CHECK_FALSE(book.saturated());  // no worker at all
  book.add(w1, 1, {});  // its batch (1) is smaller than the router's capacity (3)
  book.add(w2, 0, {});  // unknown batch: the capacity
  auto a = ticket("", 1), b = ticket("", 1), c = ticket("", 1), d = ticket("", 1);
  book.place(w1, a, 1, 1, 0, t0);
  CHECK_FALSE(book.saturated());
  book.place(w2, b, 1, 1, 0, t0);
  book.place(w2, c, 1, 1, 0, t0);
  CHECK_FALSE(book.saturated());
  book.place(w2, d, 1, 1, 0, t0);
  CHECK(book.saturated());
  book.unplace(w2, d, t0);
  CHECK_FALSE(book.saturated());
  book.drain(w2);
  CHECK(book.saturated());  // the one live worker is full
}

TEST_CASE("placement book: adapters by report, spread, prefetch targets", "[placement_book]") {
  placement_book book({}, 8);
  book.add(w1, 0, {});
  book.add(w2, 0, {});
  book.add(w3, 0, {});
  book.report(w1, {"kjv@1"}, 0, {});  // holds it, no free slot
  book.report(w2, {}, 2, {});
  book.report(w3, {}, 1, {});
  CHECK(book.find(w2)->adapter_slots == 2);
  CHECK(book.resident_count("kjv@1") == 1);
  auto heavy = ticket("", 50);
  book.place(w2, heavy, 10, 40, 0, t0);

  auto s = book.spread("kjv@1");
  CHECK(s.live == 3);
  CHECK(s.holders == 1);
  CHECK(s.loading == 0);
  CHECK(s.room == 2);

  // Least loaded first, never a holder, never one without a free slot.
  CHECK(book.prefetch("kjv@1", 1) == std::vector<worker_id>{w3});
  CHECK(book.find(w3)->expects("kjv@1"));
  s = book.spread("kjv@1");
  CHECK(s.holders == 2);
  CHECK(s.loading == 1);  // expected there, not reported yet
  CHECK(book.prefetch("kjv@1", 5) == std::vector<worker_id>{w2});
  CHECK(book.prefetch("kjv@1", 5).empty());
  CHECK(book.least_loaded() == w1);
}

} // namespace test_placement_book
