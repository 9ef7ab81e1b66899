#pragma once
/// Integration-test helpers: a local cluster (router + 2 workers over the tiny GPT-2 + gateway on
/// a free loopback port), request builders, and a raw DEALER client for hand-made frames.

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <zmq.hpp>

#include "client/client.hpp"
#include "proto/protocol.hpp"
#include "cluster/local_cluster.hpp"
#include "tests/support/tiny_model.hpp"

namespace lf::test {

/// `workers` small workers over the tiny model behind a gateway bound to `endpoint`.
inline cluster::cluster_settings tiny_cluster_settings(const std::string& endpoint,
                                                      std::uint32_t workers = 2) {
  cluster::cluster_settings s;
  s.worker.model_dir = tiny_model_dir();
  s.worker.threads = 1;
  s.worker.num_blocks = 256;
  s.worker.block_size = 8;
  s.worker.max_seqs = 8;
  s.worker.max_batched_tokens = 64;
  s.workers = workers;
  s.gateway.endpoint = endpoint;
  s.report_interval = std::chrono::milliseconds(20);
  return s;
}

/// Two workers over the tiny model behind a gateway on 127.0.0.1 (a free port).
struct gateway_cluster {
  std::unique_ptr<cluster::local_cluster> cluster;

  explicit gateway_cluster(router::router_config rc = {}, std::uint32_t workers = 2) {
    auto s = tiny_cluster_settings("tcp://127.0.0.1:*", workers);
    s.router = rc;
    cluster = std::make_unique<cluster::local_cluster>(s);
  }
  std::string endpoint() const { return cluster->endpoint(); }
};

/// Client options for `endpoint`, everything else default.
inline client::client_options opts_for(const std::string& endpoint) {
  client::client_options o;
  o.endpoint = endpoint;
  return o;
}

/// A greedy request ignoring EOS, so its length is exactly `max_tokens`.
inline proto::submit_msg greedy(std::string prompt, int max_tokens,
                                proto::client_request_id id = proto::client_request_id{0}) {
  proto::submit_msg m;
  m.id = id;
  m.prompt = std::move(prompt);
  m.temperature = 0;
  m.max_tokens = max_tokens;
  m.ignore_eos = true;
  return m;
}


/// A bare DEALER socket for frames the client library would never send.
class raw_client {
public:
  explicit raw_client(const std::string& endpoint) : sock_(ctx_, zmq::socket_type::dealer) {
    sock_.set(zmq::sockopt::linger, 0);
    sock_.connect(endpoint);
  }
  void send(const std::string& frame) { sock_.send(zmq::buffer(frame), zmq::send_flags::none); }
  void send_frames(const std::vector<std::string>& frames) {
    for (std::size_t i = 0; i < frames.size(); ++i)
      sock_.send(zmq::buffer(frames[i]),
                 i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
  /// The next server message, decoded; std::nullopt on timeout or an undecodable frame.
  std::optional<proto::server_message> recv_decoded(std::chrono::milliseconds timeout) {
    sock_.set(zmq::sockopt::rcvtimeo, static_cast<int>(timeout.count()));
    zmq::message_t m;
    if (!sock_.recv(m))
      return std::nullopt;
    auto d = proto::decode_server(std::string_view(static_cast<const char*>(m.data()), m.size()));
    return std::visit(
      [](auto&& x) -> std::optional<proto::server_message> {
        if constexpr (std::is_same_v<std::decay_t<decltype(x)>, proto::decode_error>)
          return std::nullopt;
        else
          // Built in place: from a temporary variant, GCC 12 warns -Wfree-nonheap-object (falsely).
          return std::optional<proto::server_message>(std::in_place, std::move(x));
      },
      d);
  }
  /// Reads until a message of type T arrives (true) or the time is up (false).
  template <class T>
  bool wait_for_type(std::chrono::milliseconds timeout) {
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (std::chrono::steady_clock::now() < until) {
      auto m = recv_decoded(std::chrono::milliseconds(200));
      if (m && std::holds_alternative<T>(*m))
        return true;
    }
    return false;
  }

private:
  zmq::context_t ctx_{1};
  zmq::socket_t sock_;
};

} // namespace lf::test
