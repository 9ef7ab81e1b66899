// Rate limits per key over ZeroMQ (docs/http.md, "Rate limits per key"): a CURVE client whose
// key-file line has rpm= is charged by the gateway from the process's shared buckets, and past the
// limit the C++ client sees `rate_limited` with a retry time, before the router sees the request.
#include "tests/integration/gateway_fixture.hpp"

#include <zmq.h>

#include "core/api_keys.hpp"
#include "core/rate_limit.hpp"

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace gateway_rate_limit_test {

/// A fresh CURVE key pair, Z85 (40 characters each).
std::pair<std::string, std::string> curve_pair() {
  char pub[41] = {}, sec[41] = {};
  REQUIRE(zmq_curve_keypair(pub, sec) == 0);
  return {pub, sec};
}

} // namespace gateway_rate_limit_test

TEST_CASE("a CURVE key with rpm=2 shares the process's buckets: one spent elsewhere, one here, the next "
          "refused as rate_limited with retry_after_ms",
          "[gateway][model][rate_limit]") {
  const auto [server_pub, server_sec] = gateway_rate_limit_test::curve_pair();
  const auto [zed_pub, zed_sec] = gateway_rate_limit_test::curve_pair();
  const auto [ann_pub, ann_sec] = gateway_rate_limit_test::curve_pair();
  auto s = tiny_cluster_settings("tcp://127.0.0.1:*");
  s.gateway.curve_secret_key = server_sec;
  s.gateway.curve_public_key = server_pub;
  auth::api_key zed;
  zed.name = "zed";
  zed.key = zed_pub;
  zed.curve = true;
  zed.limits = rate_limits{2, 0};
  auth::api_key ann;  // no limits: never charged, never counted
  ann.name = "ann";
  ann.key = ann_pub;
  ann.curve = true;
  s.gateway.keys = std::make_shared<const auth::key_table>(std::vector<auth::api_key>{zed, ann});
  auto limiter = std::make_shared<shared_rate_limiter>();
  s.gateway.limiter = limiter;  // what local_cluster would hand its HTTP gateway too
  cluster::local_cluster lc(s);
  // One of zed's two a minute spent through the other door (as the HTTP gateway charges it).
  REQUIRE(limiter->admit("zed", zed.limits, 7, shared_rate_limiter::clock::now()).allowed);

  auto opts = opts_for(lc.endpoint());
  opts.server_public_key = server_pub;
  opts.public_key = zed_pub;
  opts.secret_key = zed_sec;
  client::client c(opts);
  auto first = c.submit(greedy("Hello there", 2)).get();
  INFO(client::describe(first));
  REQUIRE(first.ok());
  const auto stats_before = lc.stats();
  auto second = c.submit(greedy("Hello there", 2)).get();
  INFO(client::describe(second));
  CHECK(second.error == serve_errc::rate_limited);
  CHECK(second.message.find("requests per minute (2)") != std::string::npos);
  REQUIRE(second.retry_after_ms.has_value());
  CHECK(*second.retry_after_ms >= 1);
  CHECK(*second.retry_after_ms <= 30'000);  // one request refills in 30 s
  CHECK(lc.stats().accepted == stats_before.accepted);  // refused at the gateway, not the router

  auto o2 = opts_for(lc.endpoint());
  o2.server_public_key = server_pub;
  o2.public_key = ann_pub;
  o2.secret_key = ann_sec;
  client::client unlimited(o2);
  for (int i = 0; i < 3; ++i)
    CHECK(unlimited.submit(greedy("Hello there", 2)).get().ok());

  const auto counts = limiter->counts();
  REQUIRE(counts.count("zed") == 1);
  CHECK(counts.at("zed").admitted == 2);
  CHECK(counts.at("zed").rate_limited == 1);
  CHECK(counts.at("zed").tokens == 7 + first.usage.prompt_tokens + 2);
  CHECK(counts.count("ann") == 0);
}
