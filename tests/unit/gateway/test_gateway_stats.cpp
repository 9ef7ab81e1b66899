// The stats reply's adapter residency: per adapter the workers holding it, its loads over every
// worker and the slowest last load; names too long for a stats key are counted, not sent.
#include <catch2/catch.hpp>

#include "gateway/zmq/stats_reply.hpp"

using namespace lf;

TEST_CASE("stats show where each adapter is resident and what loading it cost", "[gateway][stats]") {
  actors::router_stats rs;
  actors::worker_load w1, w2;
  w1.wid = actors::worker_id{1};
  w1.adapters = {"alpha", "beta"};
  w1.loads_by_adapter = {{"alpha", 2, 40.5, 1000}, {"beta", 1, 12.0, 500}, {"gamma", 1, 9.0, 500}};
  w2.wid = actors::worker_id{2};
  w2.adapters = {"alpha", std::string(200, 'x')};
  w2.loads_by_adapter = {{"alpha", 1, 55.0, 1000}, {std::string(200, 'x'), 1, 3.0, 10}};
  rs.loads = {w1, w2};
  const auto v = gateway::flatten_stats(rs, 0).values;
  CHECK(v.at("adapter.alpha.resident") == 2);
  CHECK(v.at("adapter.alpha.loads") == 3);
  CHECK(v.at("adapter.alpha.last_load_ms") == 55.0);
  CHECK(v.at("adapter.beta.resident") == 1);
  CHECK(v.at("adapter.gamma.resident") == 0);  // loaded once, evicted since
  CHECK(v.at("adapter.gamma.loads") == 1);
  CHECK(v.at("gateway.adapters_unlisted") == 1);
  for (const auto& [k, x] : v)
    CHECK(k.size() <= proto::max_name_bytes);
}

TEST_CASE("an adapter listing fits one frame: the rows past it are counted, not sent", "[gateway][adapters]") {
  actors::adapter_reply r;
  r.seq = 9;
  cache::adapter_record a;
  a.name = "styles/kjv";
  a.latest = 3;
  a.source.path = "/srv/adapters/kjv";
  a.source.hash = 0xabc;
  a.source.targets = {"attn.c_attn", "mlp.c_fc"};
  r.adapters = {a};
  r.resident = {2};
  auto one = gateway::adapters_result_of(r);
  REQUIRE(one.adapters.size() == 1);
  CHECK(one.adapters[0].hash == "0000000000000abc");
  CHECK(one.adapters[0].targets == "attn.c_attn,mlp.c_fc");
  CHECK(one.adapters[0].version == 3);
  CHECK(one.adapters[0].resident == 2);
  CHECK_FALSE(one.error);
  a.source.path = std::string(3000, 'p');  // long paths: about 300 rows fill a frame
  r.adapters.assign(1000, a);
  r.resident.assign(1000, 0);
  auto many = gateway::adapters_result_of(r);
  CHECK(many.adapters.size() < 1000);
  CHECK(many.adapters.size() > 250);
  CHECK_THAT(many.message, Catch::Contains(std::to_string(1000 - many.adapters.size()) + " more adapter(s) not listed"));
  CHECK(proto::encode(many).size() <= proto::max_frame_bytes);
}
