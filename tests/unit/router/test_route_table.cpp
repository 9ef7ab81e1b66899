// The router's route table (router/route_table) and its outbox to sinks (router/sink_outbox):
// entries by route id and by client, a sink watched while it has live requests, and a step's
// events held per sink in first-seen order. Two scoped actors give two sink addresses.
#include <catch2/catch.hpp>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>

#include "router/route_table.hpp"
#include "router/sink_outbox.hpp"
#include "tests/unit/router/cluster_fixture.hpp"

using namespace lf;
using namespace lf::router;
using actors::route_id;
using actors::sink_request_id;

TEST_CASE("route table: entries by route id and by client, each sink counted while it has requests", "[route_table]") {
  test::test_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor a{sys}, b{sys};
  const auto addr_a = a->address(), addr_b = b->address();
  route_table t;
  auto [first, new_a] = t.add(route_id{1}, addr_a, sink_request_id{7});
  CHECK(new_a);  // a's first live request: watch it
  CHECK(first.rid == route_id{1});
  CHECK(first.client_id == sink_request_id{7});
  first.resumed = 3;
  CHECK_FALSE(t.add(route_id{2}, addr_a, sink_request_id{8}).second);  // a is watched already
  CHECK(t.add(route_id{3}, addr_b, sink_request_id{7}).second);         // the same client id from b
  CHECK(t.size() == 3);
  CHECK(t.in_use(addr_a, sink_request_id{7}));
  CHECK_FALSE(t.in_use(addr_a, sink_request_id{9}));
  REQUIRE(t.find(addr_a, sink_request_id{7}) != nullptr);
  CHECK(t.find(addr_a, sink_request_id{7})->resumed == 3);
  CHECK(t.find(addr_b, sink_request_id{7})->rid == route_id{3});
  CHECK(t.find(route_id{9}) == nullptr);
  CHECK(t.of_sink(addr_a) == std::vector<route_id>{route_id{1}, route_id{2}});
  CHECK(t.has_sink(addr_b));
  // Removing: the last of a sink's requests says so (stop watching it).
  CHECK_FALSE(t.remove(route_id{1}));
  CHECK(t.find(addr_a, sink_request_id{7}) == nullptr);
  CHECK_FALSE(t.in_use(addr_a, sink_request_id{7}));  // the id may be used again
  CHECK(t.remove(route_id{2}));
  CHECK_FALSE(t.has_sink(addr_a));
  CHECK_FALSE(t.remove(route_id{2}));  // unknown now
  CHECK(t.size() == 1);
  std::size_t seen = 0;
  for (const auto& [rid, e] : t)
    seen += rid == route_id{3} && e.sink_addr == addr_b;
  CHECK(seen == 1);
}

TEST_CASE("sink outbox: a step's events held per sink in first-seen order, none held outside a step", "[route_table]") {
  test::test_config cfg;
  caf::actor_system sys{cfg};
  caf::scoped_actor a{sys}, b{sys};
  const auto sink_a = caf::actor_cast<actors::event_sink>(a.ptr());
  const auto sink_b = caf::actor_cast<actors::event_sink>(b.ptr());
  sink_outbox out;
  CHECK(out.batch(sink_a, a->address()) == nullptr);  // closed: send at once
  out.open();
  out.batch(sink_b, b->address())->tokens.push_back({sink_request_id{1}, 5, "x", 0, false, {}});
  out.batch(sink_a, a->address())->tokens.push_back({sink_request_id{2}, 6, "y", 0, false, {}});
  out.batch(sink_b, b->address())->done.push_back({});
  auto held = out.close();
  REQUIRE(held.size() == 2);
  CHECK(held[0].first == sink_b);  // b got the step's first event
  CHECK(held[0].second.tokens.size() == 1);
  CHECK(held[0].second.done.size() == 1);
  CHECK(held[1].first == sink_a);
  CHECK(held[1].second.tokens.at(0).token == 6);
  CHECK(out.batch(sink_a, a->address()) == nullptr);  // closed again
  out.open();
  CHECK(out.close().empty());
}
