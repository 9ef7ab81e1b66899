// The gateway's ZeroMQ thread: socket I/O, frame checks, pings and ZAP (see zmq_io.hpp).
#include "gateway/zmq/zmq_io.hpp"

#include <algorithm>

#include <caf/send.hpp>

#include "core/log.hpp"
#include "proto/protocol.hpp"

namespace lf::gateway {

namespace {

std::string as_string(const zmq::message_t& m) { return std::string(static_cast<const char*>(m.data()), m.size()); }

} // namespace

void zmq_gateway::impl::send_out(const std::string& identity, const std::string& frame) {
  std::lock_guard<std::mutex> g(push_m);
  out_push.send(zmq::buffer(identity), zmq::send_flags::sndmore);
  out_push.send(zmq::buffer(frame), zmq::send_flags::none);
}

void zmq_gateway::impl::send_out(const std::vector<std::pair<std::string, std::string>>& frames) {
  std::lock_guard<std::mutex> g(push_m);
  for (const auto& [identity, frame] : frames) {
    out_push.send(zmq::buffer(identity), zmq::send_flags::sndmore);
    out_push.send(zmq::buffer(frame), zmq::send_flags::none);
  }
}

void zmq_gateway::impl::reply_now(const std::string& identity, const std::string& frame, std::set<std::string>& gone) {
  try {
    // Both frames or neither: a refused routing frame (EAGAIN at the peer's high-water mark)
    // must not be followed by the payload, which would then be read as a routing id.
    if (sock.send(zmq::buffer(identity), zmq::send_flags::sndmore | zmq::send_flags::dontwait)
        && sock.send(zmq::buffer(frame), zmq::send_flags::dontwait))
      return;
  } catch (const zmq::error_t&) {
    // EHOSTUNREACH: the peer is gone (ROUTER_MANDATORY)
  }
  if (gone.insert(identity).second)
    caf::anon_send(actor, gone_atom::value, identity);
}

void zmq_gateway::impl::handle_zap() {
  std::vector<zmq::message_t> parts;
  zmq::message_t m;
  do {
    if (!zap->recv(m))
      return;
    parts.push_back(std::move(m));
  } while (parts.back().more());
  if (parts.size() < 6)
    return;
  bool ok = opts.allowed_client_keys.empty();
  std::string user_id;
  if (as_string(parts[5]) == "CURVE" && parts.size() >= 7 && parts[6].size() == 32) {
    char z85[41] = {};
    zmq_z85_encode(z85, static_cast<const std::uint8_t*>(parts[6].data()), 32);
    ok = ok || std::find(opts.allowed_client_keys.begin(), opts.allowed_client_keys.end(), z85)
                 != opts.allowed_client_keys.end();
    if (auto name = opts.client_key_names.find(z85); ok && name != opts.client_key_names.end())
      user_id = name->second;
  }
  auto send = [&](const std::string& s, bool more) {
    zap->send(zmq::buffer(s), more ? zmq::send_flags::sndmore : zmq::send_flags::none);
  };
  send("1.0", true);
  send(as_string(parts[1]), true);
  send(ok ? "200" : "400", true);
  send(ok ? "OK" : "client key not allowed", true);
  send(user_id, true);
  send("", false);
}

void zmq_gateway::impl::on_client_frames(std::vector<zmq::message_t>& parts, std::set<std::string>& gone) {
  const auto identity = as_string(parts[0]);
  gone.erase(identity);  // it spoke: it is connected
  if (parts.size() != 2) {
    proto::error_msg e;
    e.code = serve_errc::invalid_request;
    e.message = "expected exactly one msgpack frame per message, got " + std::to_string(parts.size() - 1);
    reply_now(identity, proto::encode(e), gone);
    return;
  }
  const std::string_view payload(static_cast<const char*>(parts[1].data()), parts[1].size());
  auto decoded = proto::decode_client(payload);
  if (auto* err = std::get_if<proto::decode_error>(&decoded)) {
    log::debug("gateway", "frame refused", {{"reason", err->message}});
    // An error with an id ends that request for the client, so only the actor, which knows
    // the live requests, may send one (after every frame this connection sent before).
    if (err->id)
      caf::anon_send(actor, refused_atom::value, identity, err->id->value(), err->message);
    else
      reply_now(identity, proto::encode(proto::to_error_msg(*err)), gone);
    return;
  }
  if (std::holds_alternative<proto::ping_msg>(decoded)) {
    reply_now(identity, proto::encode(proto::pong_msg{}), gone);
    return;
  }
  // The ZAP user id: the name of the client's CURVE key (no such property without ZAP).
  const char* key_name = zmq_msg_gets(parts[1].handle(), "User-Id");
  const char* peer = zmq_msg_gets(parts[1].handle(), "Peer-Address");
  caf::anon_send(actor, zmq_in_atom::value, identity, std::string(payload),
                 std::string(key_name != nullptr ? key_name : ""), std::string(peer != nullptr ? peer : ""));
}

void zmq_gateway::impl::run() {
  std::set<std::string> gone;  // identities reported gone, until they speak again
  while (running) {
    std::vector<zmq::pollitem_t> items{{static_cast<void*>(sock), 0, ZMQ_POLLIN, 0},
                                       {static_cast<void*>(out_pull), 0, ZMQ_POLLIN, 0}};
    if (zap)
      items.push_back({static_cast<void*>(*zap), 0, ZMQ_POLLIN, 0});
    try {
      zmq::poll(items.data(), items.size(), std::chrono::milliseconds(100));
      if (items[0].revents & ZMQ_POLLIN) {
        for (int burst = 0; burst < 256; ++burst) {
          std::vector<zmq::message_t> parts;
          zmq::message_t m;
          if (!sock.recv(m, zmq::recv_flags::dontwait))
            break;
          parts.push_back(std::move(m));
          while (parts.back().more()) {
            zmq::message_t next;
            (void) sock.recv(next);
            parts.push_back(std::move(next));
          }
          on_client_frames(parts, gone);
        }
      }
      if (items[1].revents & ZMQ_POLLIN) {
        zmq::message_t id, frame;
        while (out_pull.recv(id, zmq::recv_flags::dontwait)) {
          (void) out_pull.recv(frame);
          const auto identity = as_string(id);
          if (!identity.empty() && !gone.count(identity))
            reply_now(identity, as_string(frame), gone);
        }
      }
      if (zap && (items[2].revents & ZMQ_POLLIN))
        handle_zap();
    } catch (const zmq::error_t& e) {
      if (e.num() == ETERM)
        return;
      // Anything else is about one frame; keep serving.
    }
  }
}

} // namespace lf::gateway
