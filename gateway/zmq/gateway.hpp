#pragma once
/// The client gateway: a ZeroMQ ROUTER socket on its own thread, bridged to the router actor.
///
///   client DEALER ──frame──> [zmq thread] ROUTER ── id-less decode error / ping: answered here
///                                  │ (identity, frame), or a decode error with an id
///                                  v
///                          [gateway actor] render chat, tokenize (the edge: request_draft);
///                                  │ errors naming a live request's id go without it
///                                  │ gateway_book ──generate_request / cancel──> router
///                                  ^                                                     │
///                                  └──────────── token / done / error events ────────────┘
///                          encode ──(identity, frame) via inproc PUSH──> [zmq thread] ──> client
///
/// Socket settings (docs/protocol.md): ZMQ_ROUTER_MANDATORY (a send to a client that has gone
/// away fails, and its requests are cancelled), ZMQ_MAXMSGSIZE 4 MiB (larger frames drop the
/// connection; frames over the 1 MiB protocol limit get an error reply), high-water marks of
/// 10,000 frames per peer (a client that stops reading until that fills is treated as gone).
/// CURVE: with a server secret key the socket is a CURVE server; with an allow-list, a ZAP
/// handler refuses every other client key and gives each named key its name as the ZAP user id,
/// which then names the tenant of every request on that connection.
/// Roles (core/access.hpp): `curve:` lines of the API key file join the allow-list with their
/// names; drain, adapter changes and any other admin message pass one check (admin role, or,
/// with no CURVE keys in the key file, an ipc / loopback endpoint), else an `error` reply
/// `unauthenticated` / `forbidden`, and an audit line either way.

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <caf/fwd.hpp>

#include "actors/interfaces.hpp"
#include "core/api_keys.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::gateway {

/// Settings of a gateway.
struct gateway_options {
  std::string endpoint = "tcp://127.0.0.1:5555";  ///< where to bind
  /// The model's tokenizer: the gateway renders chats and tokenizes prompts, so the router gets
  /// token ids (request_draft). Required.
  std::shared_ptr<const text::tokenizer> tokenizer;
  /// Rendered prompts (a chat with its template) longer than this are refused (prompt_too_long)
  /// before tokenizing.
  std::size_t max_prompt_bytes = std::size_t{1} << 20;
  int send_hwm = 10000;                             ///< frames queued per peer at most
  int recv_hwm = 10000;
  std::size_t max_per_connection = 1024;            ///< live requests per client connection
  /// CURVE (Z85 keys, 40 characters); empty secret: plaintext.
  std::string curve_public_key, curve_secret_key;
  /// Client public keys allowed (Z85); empty: any client with a valid CURVE handshake.
  std::vector<std::string> allowed_client_keys;
  /// Names of allowed client keys (Z85 key -> name). A request from a named key is that name's
  /// tenant, whatever its `tenant` field says: an authenticated name takes precedence.
  std::map<std::string, std::string> client_key_names;
  /// The API key file's keys (nullptr: none). Its `curve:` keys are added to the allow-list and
  /// the names above, and give their clients a role and a tenant.
  std::shared_ptr<const auth::key_table> keys;
  /// Rate-limit buckets per key (rpm= / tpm= in the key file), shared with the process's HTTP
  /// gateway; nullptr: the gateway makes its own.
  std::shared_ptr<shared_rate_limiter> limiter;
};

/// See the file comment.
class zmq_gateway {
public:
  /// Binds and starts serving; throws std::runtime_error (naming the endpoint) when binding fails.
  zmq_gateway(caf::actor_system& sys, actors::router_actor router, gateway_options opts);
  /// stop(), then joins the thread.
  ~zmq_gateway();
  zmq_gateway(const zmq_gateway&) = delete;
  zmq_gateway& operator=(const zmq_gateway&) = delete;

  /// The endpoint actually bound (resolves port 0 / wildcards).
  std::string endpoint() const;
  /// From now on new submits are refused with shutting_down; requests in flight continue.
  void stop_accepting();
  /// Requests accepted and not yet ended.
  std::size_t live() const;
  /// Cancels what is in flight (each client gets its terminal reply), closes the socket.
  void stop();

  struct impl;  ///< shared with the gateway actor and the ZeroMQ thread

private:
  std::shared_ptr<impl> impl_;
};

} // namespace lf::gateway
