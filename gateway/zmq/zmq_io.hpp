#pragma once
// Private to gateway.cpp and zmq_io.cpp: the ZeroMQ side of zmq_gateway (the socket thread's
// state and loop: socket I/O, frame checks, pings, ZAP) and the atoms it sends the gateway actor.

#include <atomic>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <caf/actor.hpp>
#include <caf/actor_system.hpp>
#include <caf/atom.hpp>
#include <zmq.hpp>

#include "gateway/zmq/gateway.hpp"

namespace lf::gateway {

/// Gateway actor: (zmq_in_atom, identity, frame, key name, peer) a decoded-ok client frame to
/// handle; key name: the ZAP user id of the client's CURVE key (empty when unnamed); peer: the
/// client's address (tcp), for audit lines.
using zmq_in_atom = caf::atom_constant<caf::atom("lf_zmq_in")>;
/// Gateway actor: (gone_atom, identity) a client vanished (a send to it failed).
using gone_atom = caf::atom_constant<caf::atom("lf_gone")>;
/// Gateway actor: (refused_atom, identity, id, why) a frame with a readable id was refused.
using refused_atom = caf::atom_constant<caf::atom("lf_refused")>;

/// The socket thread's state; the gateway actor reaches it through send_out() and the atomics.
struct zmq_gateway::impl {
  caf::actor_system& sys;
  actors::router_actor router;
  gateway_options opts;
  zmq::context_t ctx{1};
  zmq::socket_t sock{ctx, zmq::socket_type::router};
  zmq::socket_t out_pull{ctx, zmq::socket_type::pull};
  zmq::socket_t out_push{ctx, zmq::socket_type::push};
  std::unique_ptr<zmq::socket_t> zap;
  std::mutex push_m;
  std::atomic<bool> accepting{true}, running{true};
  std::atomic<std::size_t> live{0};
  caf::actor actor;
  std::thread thread;
  std::string bound;
  bool local = false;            ///< the configured endpoint is ipc / inproc / loopback
  bool curve_keys = false;       ///< the key file names CURVE clients: roles are in force

  impl(caf::actor_system& s, actors::router_actor r, gateway_options o)
    : sys(s), router(std::move(r)), opts(std::move(o)) {
    if (!opts.limiter)
      opts.limiter = std::make_shared<shared_rate_limiter>();
  }

  /// Queues (identity, frame) for the ZeroMQ thread (any thread).
  void send_out(const std::string& identity, const std::string& frame);
  /// Queues many (identity, frame) pairs at once, in order (any thread).
  void send_out(const std::vector<std::pair<std::string, std::string>>& frames);

  /// Sends (identity, frame) now (the ZeroMQ thread); a peer that is gone is reported to the
  /// actor once (gone_atom) and added to `gone`.
  void reply_now(const std::string& identity, const std::string& frame, std::set<std::string>& gone);
  /// Answers one ZAP request: CURVE keys on the allow-list (or any key without one) pass; a
  /// named key gets its name as the user id.
  void handle_zap();
  /// One multipart message from a client: frame count and decode checks and pings answered here,
  /// the rest handed to the actor.
  void on_client_frames(std::vector<zmq::message_t>& parts, std::set<std::string>& gone);
  /// The ZeroMQ thread's loop, until `running` is false or the context ends.
  void run();
};

} // namespace lf::gateway
