// The C++ client across a server restart: in-flight requests fail with worker_lost once the
// gateway stops answering heartbeats, and the same client object works again when a new server
// binds the endpoint. Plus: memory stays flat across repeated overload bursts.
#include "tests/integration/gateway_fixture.hpp"
#include "tests/support/free_port.hpp"

#include <fstream>
#include <condition_variable>
#include <mutex>

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
  // A port known before the first bind: the server comes back on the same endpoint.
  const auto endpoint = "tcp://127.0.0.1:" + std::to_string(free_port());
  // Two sequences at a time: sixteen 240-token requests are eight rounds of work, far longer than
  // the cancellation takes to arrive on a loaded machine.
  auto settings = tiny_cluster_settings(endpoint, 1);
  settings.worker.max_seqs = 2;
  auto server = std::make_unique<cluster::local_cluster>(settings);
  client::client_options o;
  o.endpoint = endpoint;
  o.heartbeat = 200ms;
  client::client c(o);
  REQUIRE(c.submit(greedy("Hi", 4)).get().ok());
  // Requests in flight when the server goes away end with cancelled or worker_lost (not a hang);
  // one that reaches the gateway after its shutdown began is refused with shutting_down.
  // Eight times the worker's max_seqs of long requests, and the shutdown as soon as the first
  // token arrives: most are still queued then, however fast the engine is.
  std::mutex m;
  std::condition_variable cv;
  bool streaming = false;
  std::vector<std::promise<client::result>> done(16);
  for (auto& p : done) {
    client::stream_callbacks cb;
    cb.on_token = [&](const proto::token_msg&) {
      std::lock_guard<std::mutex> g(m);
      streaming = true;
      cv.notify_all();
    };
    cb.on_done = [&p](client::result r) { p.set_value(std::move(r)); };
    c.submit(greedy("Call me Ishmael.", 240), std::move(cb));
  }
  {
    std::unique_lock<std::mutex> lk(m);
    REQUIRE(cv.wait_for(lk, 30s, [&] { return streaming; }));
  }
  server->shutdown(0ms);
  server.reset();
  int interrupted = 0;
  for (auto& p : done) {
    auto f = p.get_future();
    REQUIRE(f.wait_for(30s) == std::future_status::ready);
    auto r = f.get();
    if (!r.ok()) {
      ++interrupted;
      INFO(client::describe(r));
      CHECK((r.error == serve_errc::cancelled || r.error == serve_errc::worker_lost
             || r.error == serve_errc::shutting_down));
    }
  }
  CHECK(interrupted >= 8);
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
