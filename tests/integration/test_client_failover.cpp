// The C++ client with several gateways: the first one goes silent mid-stream (a proxy in front of
// the real gateway stops forwarding, as a frozen or killed gateway would), and every live
// request goes on at the second one as a continuation: one terminal each, the tokens numbered
// on, the text of an undisturbed run.
#include "tests/integration/gateway_fixture.hpp"

#include <atomic>
#include <thread>

#include <zmq.hpp>

using namespace lf;
using namespace lf::test;
using namespace std::chrono_literals;

namespace test_client_failover {

/// A one-client pass-through to a gateway that can fall silent: what a lost gateway looks like.
class silent_proxy {
public:
  explicit silent_proxy(const std::string& upstream) {
    front_.bind("tcp://127.0.0.1:*");
    endpoint_ = front_.get(zmq::sockopt::last_endpoint);
    back_.connect(upstream);
    thread_ = std::thread([this] { run(); });
  }
  ~silent_proxy() {
    stop_ = true;
    thread_.join();
  }
  std::string endpoint() const { return endpoint_; }
  /// From now on nothing passes, either way.
  void go_silent() { silent_ = true; }
  std::size_t tokens_passed() const { return tokens_.load(); }

private:
  void run() {
    std::string client;
    while (!stop_) {
      zmq::pollitem_t items[] = {{static_cast<void*>(front_), 0, ZMQ_POLLIN, 0}, {static_cast<void*>(back_), 0, ZMQ_POLLIN, 0}};
      zmq::poll(items, 2, std::chrono::milliseconds(20));
      zmq::message_t id, body;
      while ((items[0].revents & ZMQ_POLLIN) && front_.recv(id, zmq::recv_flags::dontwait)) {
        (void) front_.recv(body);
        client = id.to_string();
        if (!silent_)
          (void) back_.send(body, zmq::send_flags::dontwait);
      }
      while ((items[1].revents & ZMQ_POLLIN) && back_.recv(body, zmq::recv_flags::dontwait)) {
        if (silent_ || client.empty())
          continue;
        if (body.to_string_view().find("token") != std::string_view::npos)
          ++tokens_;
        (void) front_.send(zmq::buffer(client), zmq::send_flags::sndmore);
        (void) front_.send(body, zmq::send_flags::dontwait);
      }
    }
  }

  zmq::context_t ctx_{1};
  zmq::socket_t front_{ctx_, zmq::socket_type::router};
  zmq::socket_t back_{ctx_, zmq::socket_type::dealer};
  std::string endpoint_;
  std::atomic<bool> stop_{false}, silent_{false};
  std::atomic<std::size_t> tokens_{0};
  std::thread thread_;
};

proto::submit_msg long_request(int i) {
  auto m = greedy(prompts()[static_cast<std::size_t>(i) % prompts().size()], 120);
  m.ignore_eos = true;
  if (i % 2) {
    m.temperature = 0.9f;
    m.seed = 700 + static_cast<std::uint64_t>(i);
  }
  return m;
}

} // namespace test_client_failover

using namespace test_client_failover;

TEST_CASE("a client with two gateways moves its live streams when the first falls silent", "[gateway][model]") {
  gateway_cluster gc(router::router_config{}, 2);
  // The undisturbed texts, straight to the gateway.
  std::vector<std::string> calm;
  {
    client::client c(opts_for(gc.endpoint()));
    for (int i = 0; i < 8; ++i) {
      auto r = c.submit(long_request(i)).get();
      REQUIRE(r.ok());
      calm.push_back(r.text);
    }
  }
  silent_proxy proxy(gc.endpoint());
  client::client_options o;
  o.endpoints = {proxy.endpoint(), gc.endpoint()};
  o.heartbeat = 200ms;
  client::client c(o);
  std::vector<std::future<client::result>> fs;
  std::vector<std::shared_ptr<std::vector<std::uint32_t>>> indices;
  for (int i = 0; i < 8; ++i) {
    auto idx = std::make_shared<std::vector<std::uint32_t>>();
    indices.push_back(idx);
    auto p = std::make_shared<std::promise<client::result>>();
    fs.push_back(p->get_future());
    client::stream_callbacks cb;
    cb.on_token = [idx](const proto::token_msg& t) { idx->push_back(t.index); };
    cb.on_done = [p](const client::result& r) { p->set_value(r); };
    c.submit(long_request(i), std::move(cb));
  }
  // Some tokens through the first gateway, then it falls silent.
  for (int k = 0; k < 3000 && proxy.tokens_passed() < 40; ++k)
    std::this_thread::sleep_for(1ms);
  REQUIRE(proxy.tokens_passed() >= 40);
  proxy.go_silent();
  for (int i = 0; i < 8; ++i) {
    INFO("request " << i);
    REQUIRE(fs[static_cast<std::size_t>(i)].wait_for(60s) == std::future_status::ready);
    auto r = fs[static_cast<std::size_t>(i)].get();
    INFO(client::describe(r));
    REQUIRE(r.ok());
    CHECK(r.text == calm[static_cast<std::size_t>(i)]);
    CHECK(r.tokens.size() == 120);
    CHECK(r.usage.resumed >= 1);
    const auto& idx = *indices[static_cast<std::size_t>(i)];
    for (std::size_t k = 0; k < idx.size(); ++k)
      CHECK(idx[k] == k);
  }
  CHECK(c.continuations() == 8);
  CHECK(c.endpoint() == gc.endpoint());
}

TEST_CASE("a client whose every gateway stays silent ends its requests with worker_lost", "[gateway][model]") {
  gateway_cluster gc(router::router_config{}, 1);
  silent_proxy a(gc.endpoint()), b(gc.endpoint());
  a.go_silent();
  b.go_silent();
  client::client_options o;
  o.endpoints = {a.endpoint(), b.endpoint()};
  o.heartbeat = 100ms;
  client::client c(o);
  auto f = c.submit(long_request(0));
  REQUIRE(f.wait_for(30s) == std::future_status::ready);
  auto r = f.get();
  CHECK(r.error == serve_errc::worker_lost);
  CHECK(r.message.find("no gateway of 2") != std::string::npos);
  CHECK(c.continuations() == 1);  // moved once, then gave up when the second was silent too
}
