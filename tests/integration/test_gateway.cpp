// The whole request path over a real ZeroMQ socket on loopback: C++ clients -> gateway -> router
// -> two workers over the tiny GPT-2, and back. Concurrency, overload, cancellation, client
// disconnects, a lost worker and bad frames.
#include "tests/integration/gateway_fixture.hpp"

#include <sstream>

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

TEST_CASE("200 concurrent requests from 4 clients: one terminal each, same text as alone",
          "[gateway][model]") {
  gateway_cluster gc;
  // Each prompt alone first (one request in the whole cluster at a time).
  std::vector<std::string> alone;
  {
    client::client c(opts_for(gc.endpoint()));
    for (std::size_t i = 0; i < prompts().size(); ++i) {
      auto r = c.submit(greedy(prompts()[i], 12)).get();
      REQUIRE(r.ok());
      alone.push_back(r.text);
    }
  }
  constexpr int per_client = 50;
  std::vector<std::unique_ptr<client::client>> clients;
  for (int k = 0; k < 4; ++k)
    clients.push_back(std::make_unique<client::client>(opts_for(gc.endpoint())));
  std::mutex m;
  std::map<std::pair<int, std::uint64_t>, std::string> streamed;
  std::vector<std::pair<std::pair<int, std::uint64_t>, std::size_t>> sent;
  std::vector<std::future<client::result>> futures;
  for (int i = 0; i < per_client; ++i)
    for (int k = 0; k < 4; ++k) {
      const auto p = static_cast<std::size_t>(i * 4 + k) % prompts().size();
      client::stream_callbacks cb;
      auto done = std::make_shared<std::promise<client::result>>();
      futures.push_back(done->get_future());
      cb.on_token = [&m, &streamed, k](const proto::token_msg& t) {
        std::lock_guard<std::mutex> g(m);
        streamed[{k, t.id.value()}] += t.text;
      };
      cb.on_done = [done](const client::result& r) { done->set_value(r); };
      auto id = clients[static_cast<std::size_t>(k)]->submit(greedy(prompts()[p], 12), cb);
      std::lock_guard<std::mutex> g(m);
      sent.push_back({{k, id.value()}, p});
    }
  for (std::size_t i = 0; i < futures.size(); ++i) {
    REQUIRE(futures[i].wait_for(120s) == std::future_status::ready);
    auto r = futures[i].get();
    INFO("request " << i << ": " << client::describe(r));
    REQUIRE(r.ok());
    CHECK(r.text == alone[sent[i].second]);
    std::lock_guard<std::mutex> g(m);
    CHECK(streamed[sent[i].first] == r.text);
  }
  for (auto& c : clients)
    CHECK(c->in_flight() == 0);
  // No second terminal arrives later.
  std::this_thread::sleep_for(200ms);
  auto st = gc.cluster->stats();
  CHECK(st.inflight == 0);
  CHECK(st.completed >= 200 + prompts().size());
}

TEST_CASE("an overload burst gets `overloaded` at once for the excess, the rest completes",
          "[gateway][model]") {
  router::router_config rc;
  rc.max_queue = 8;
  rc.max_inflight_per_worker = 4;
  gateway_cluster gc(rc);
  client::client c(opts_for(gc.endpoint()));
  std::vector<std::future<client::result>> fs;
  const int burst = 2 * (8 + 2 * 4);
  for (int i = 0; i < burst; ++i)
    fs.push_back(c.submit(greedy(prompts()[static_cast<std::size_t>(i) % prompts().size()], 24)));
  int ok = 0, overloaded = 0;
  for (auto& f : fs) {
    REQUIRE(f.wait_for(120s) == std::future_status::ready);
    auto r = f.get();
    if (r.ok()) {
      ++ok;
    } else {
      INFO(client::describe(r));
      REQUIRE(r.error == serve_errc::overloaded);
      CHECK(r.retry_after_ms.has_value());
      ++overloaded;
    }
  }
  CHECK(ok >= 8 + 2 * 4);
  CHECK(overloaded > 0);
  CHECK(ok + overloaded == burst);
}

TEST_CASE("cancel while streaming, cancel of an unknown id, and a vanished client",
          "[gateway][model]") {
  gateway_cluster gc;
  client::client c(opts_for(gc.endpoint()));
  std::promise<void> first_token;
  std::atomic<bool> once{false};
  client::stream_callbacks cb;
  std::promise<client::result> done;
  cb.on_token = [&](const proto::token_msg&) {
    if (!once.exchange(true))
      first_token.set_value();
  };
  cb.on_done = [&](const client::result& r) { done.set_value(r); };
  auto id = c.submit(greedy("Call me Ishmael.", 200), cb);
  REQUIRE(first_token.get_future().wait_for(60s) == std::future_status::ready);
  REQUIRE(c.cancel(id));
  auto f = done.get_future();
  REQUIRE(f.wait_for(30s) == std::future_status::ready);
  CHECK(f.get().error == serve_errc::cancelled);
  CHECK_FALSE(c.cancel(id));

  // A raw client cancels an id it never sent, and one whose request has just finished: nothing
  // comes back for either (docs/protocol.md). A stats request goes through the gateway actor
  // after the cancels (a ping would not: the socket thread answers it), so it is the next reply.
  raw_client raw(gc.endpoint());
  raw.send(proto::encode(proto::cancel_msg{proto::client_request_id{77}}));
  raw.send(proto::encode(proto::stats_msg{}));
  auto reply = raw.recv_decoded(5s);
  REQUIRE(reply);
  CHECK(std::holds_alternative<proto::stats_reply>(*reply));
  raw.send(proto::encode(greedy("Once upon a time", 2, proto::client_request_id{5})));
  REQUIRE(raw.wait_for_type<proto::done_msg>(60s));
  raw.send(proto::encode(proto::cancel_msg{proto::client_request_id{5}}));
  raw.send(proto::encode(proto::stats_msg{}));
  reply = raw.recv_decoded(5s);
  REQUIRE(reply);
  INFO("got a message of type index " << reply->index() << " (stats_reply is 5)");
  CHECK(std::holds_alternative<proto::stats_reply>(*reply));

  // A client that disappears mid-stream: its request is cancelled and its KV blocks come back.
  {
    raw_client gone(gc.endpoint());
    gone.send(proto::encode(greedy("It was the best of times", 200, proto::client_request_id{1})));
    REQUIRE(gone.wait_for_type<proto::token_msg>(60s));
  }  // socket closed
  const auto until = std::chrono::steady_clock::now() + 60s;
  bool freed = false;
  while (!freed && std::chrono::steady_clock::now() < until) {
    auto st = gc.cluster->stats();
    freed = st.inflight == 0 && !st.loads.empty();
    for (const auto& l : st.loads)
      freed = freed && l.running == 0 && l.waiting == 0 && l.free_blocks == l.total_blocks;
    std::this_thread::sleep_for(50ms);
  }
  auto st = gc.cluster->stats();
  INFO("loads " << st.loads.size() << ", inflight " << st.inflight << ", completed " << st.completed << ", cancelled " << st.cancelled);
  std::ostringstream os;
  for (const auto& l : st.loads)
    os << "worker " << l.wid.value() << ": running " << l.running << ", waiting " << l.waiting
       << ", free " << l.free_blocks << " of " << l.total_blocks << "; ";
  INFO(os.str());
  CHECK(freed);
}

TEST_CASE("a worker killed mid-batch: every request ends once, none hangs", "[gateway][model]") {
  gateway_cluster gc;
  client::client c(opts_for(gc.endpoint()));
  std::vector<std::future<client::result>> fs;
  for (int i = 0; i < 24; ++i)
    fs.push_back(c.submit(greedy(prompts()[static_cast<std::size_t>(i) % prompts().size()], 64)));
  std::this_thread::sleep_for(300ms);
  gc.cluster->kill_worker(0);
  int ok = 0, lost = 0;
  for (auto& f : fs) {
    REQUIRE(f.wait_for(120s) == std::future_status::ready);
    auto r = f.get();
    if (r.ok())
      ++ok;
    else if (r.error == serve_errc::worker_lost)
      ++lost;
    else
      FAIL("unexpected " << client::describe(r));
  }
  CHECK(ok + lost == 24);
  CHECK(ok > 0);
  // The cluster keeps serving on the other worker.
  CHECK(c.submit(greedy("Hi", 4)).get().ok());
}
