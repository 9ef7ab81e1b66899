// The C++ client across a server restart: in-flight requests fail with worker_lost once the
// gateway stops answering heartbeats, and the same client object works again when a new server
// binds the endpoint. Plus: memory stays flat across repeated overload bursts.
#include "tests/integration/gateway_fixture.hpp"

#include <fstream>
#include <random>

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace {

double rss_mb() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0)
      return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

} // namespace

TEST_CASE("the client survives a server restart", "[gateway][model]") {
  std::mt19937 rng(std::random_device{}());
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(30000 + rng() % 20000);
  auto server = std::make_unique<cluster::local_cluster>(tiny_cluster_settings(endpoint, 1));
  client::client_options o;
  o.endpoint = endpoint;
  o.heartbeat = 200ms;
  client::client c(o);
  REQUIRE(c.submit(greedy("Hi", 4)).get().ok());
  // A request in flight when the server goes away ends with worker_lost (not a hang).
  auto lost = c.submit(greedy("Call me Ishmael.", 240));
  std::this_thread::sleep_for(100ms);
  server->shutdown(0ms);
  server.reset();
  auto r = lost.get();  // cancelled by the shutdown, or lost when the gateway went silent
  CHECK((r.error == serve_errc::cancelled || r.error == serve_errc::worker_lost));
  // A request sent while nobody listens fails after the heartbeats go unanswered.
  auto orphan = c.submit(greedy("Hi", 4));
  REQUIRE(orphan.wait_for(10s) == std::future_status::ready);
  CHECK(orphan.get().error == serve_errc::worker_lost);
  // A new server on the same endpoint: the same client works again.
  server = std::make_unique<cluster::local_cluster>(tiny_cluster_settings(endpoint, 1));
  client::result again;
  for (int attempt = 0; attempt < 20; ++attempt) {
    again = c.submit(greedy("Hi", 4)).get();
    if (again.ok())
      break;
  }
  INFO(client::describe(again));
  CHECK(again.ok());
}

TEST_CASE("memory stays flat across repeated overload bursts", "[gateway][model]") {
  router::router_config rc;
  rc.max_queue = 16;
  rc.max_inflight_per_worker = 8;
  gateway_cluster gc(rc, 1);
  client::client c(opts_for(gc.endpoint()));
  auto burst = [&] {
    std::vector<std::future<client::result>> fs;
    for (int i = 0; i < 400; ++i)
      fs.push_back(c.submit(greedy(prompts()[static_cast<std::size_t>(i) % prompts().size()], 4)));
    int overloaded = 0;
    for (auto& f : fs) {
      auto r = f.get();
      overloaded += r.error == serve_errc::overloaded ? 1 : 0;
      REQUIRE((r.ok() || r.error == serve_errc::overloaded));
    }
    return overloaded;
  };
  CHECK(burst() > 0);  // warm-up: allocator pools, caches
  const double before = rss_mb();
  int overloaded = 0;
  for (int k = 0; k < 3; ++k)
    overloaded += burst();
  const double after = rss_mb();
  INFO("RSS " << before << " MiB -> " << after << " MiB over 1200 requests, " << overloaded << " overloaded");
  CHECK(overloaded > 0);
  CHECK(after - before < 64);
}
