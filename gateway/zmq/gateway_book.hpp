#pragma once
/// The gateway's bookkeeping, pure C++: which ZeroMQ connection (ROUTER identity) and client id
/// each live request belongs to. Clients choose their own request ids, unique only per
/// connection, so the gateway gives every request a gateway-wide id for the router and maps
/// events back. Also: duplicate live ids, a per-connection limit, and dropping a connection.

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <variant>
#include <vector>

#include "actors/ids.hpp"
#include "proto/protocol.hpp"

namespace lf::gateway {

/// The id the gateway uses towards the router (actors::sink_request_id of its sink).
using gateway_id = actors::sink_request_id;

/// A live request as the gateway knows it.
struct gateway_entry {
  std::string identity;               ///< the ROUTER socket's routing id of the connection
  proto::client_request_id client_id;
  bool stream = true;
  std::uint32_t tokens_sent = 0;
  bool accepted_sent = false;  ///< `accepted` goes out before the first token or done
  /// stream=false with logprobs: each token's id and log-probabilities until done carries them
  /// (at most proto::max_done_logprobs).
  std::vector<std::int32_t> lp_tokens;
  std::vector<token_logprobs> logprobs;
};

/// Why add() refused a request.
enum class add_refusal { duplicate_id, too_many_requests };

/// See the file comment. Not thread-safe (the gateway actor owns it).
class gateway_book {
public:
  /// `max_per_connection`: live requests one connection may have at once.
  explicit gateway_book(std::size_t max_per_connection = 1024) : max_per_conn_(max_per_connection) {}

  /// Registers a request; refuses a live duplicate (same connection and client id) or one over
  /// the per-connection limit.
  std::variant<gateway_id, add_refusal> add(const std::string& identity, proto::client_request_id id,
                                            bool stream);

  /// The live request `g`, or nullptr.
  gateway_entry* find(gateway_id g);

  /// The live request of (identity, client id), if any.
  std::optional<gateway_id> lookup(const std::string& identity, proto::client_request_id id) const;

  /// Forgets `g` (after its terminal reply). Unknown ids are ignored.
  void end(gateway_id g);

  /// Forgets every request of a connection that has gone away and returns them (to cancel).
  std::vector<gateway_id> drop_connection(const std::string& identity);

  /// Every live request.
  std::vector<gateway_id> all() const;

  /// Live requests in all, and of one connection.
  std::size_t live() const { return entries_.size(); }
  std::size_t live_for(const std::string& identity) const;

private:
  std::size_t max_per_conn_;
  std::uint64_t next_ = 1;
  std::unordered_map<std::uint64_t, gateway_entry> entries_;
  std::map<std::string, std::map<std::uint64_t, std::uint64_t>> by_conn_;  // identity -> client id -> gateway id
};

} // namespace lf::gateway
