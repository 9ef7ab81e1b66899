#pragma once
/// The HTTP gateway's bookkeeping, pure C++ (gateway_book.hpp is the ZeroMQ side's): which OpenAI
/// request (HTTP id) each live choice belongs to. A request of prompts x n choices sends one
/// lorafleet request per choice, each with a gateway-wide id for the router; their events come
/// back by that id and are written into the request's reply at the choice's index.
///
///   add(hid, entry, choices) -> gateway ids (index order)
///   event for gateway id g   -> lookup(g): (hid, choice index, entry)
///   choice g done            -> end_choice(g)
///   request answered / gone  -> finish(hid): its choices still live (to cancel)

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "actors/ids.hpp"
#include "gateway/openai/openai_response.hpp"

namespace lf::gateway {

/// One OpenAI request in flight.
struct http_entry {
  std::unique_ptr<openai_reply> reply;
  std::vector<actors::sink_request_id> choices;  ///< by choice index
  bool stream = false;
  bool started = false;  ///< streaming: the response line and headers have gone out
  /// x-ratelimit-* headers, on the reply or the stream's start.
  std::vector<std::pair<std::string, std::string>> headers;
};

/// Where a choice's events go: its HTTP request, its index there, and that request's entry.
struct choice_ref {
  std::uint64_t hid = 0;
  std::size_t choice = 0;
  http_entry* entry = nullptr;
};

/// See the file comment. Not thread-safe (the HTTP gateway actor owns it).
class http_book {
public:
  /// Registers HTTP request `hid` (not live) with `choices` choices; returns their gateway ids,
  /// by choice index (also in the entry's `choices`).
  const std::vector<actors::sink_request_id>& add(std::uint64_t hid, http_entry e, std::size_t choices);

  /// The live choice `g`, if any.
  std::optional<choice_ref> lookup(actors::sink_request_id g);

  /// Choice `g` has ended (its request stays until finish()); false if it was not live.
  bool end_choice(actors::sink_request_id g);

  /// Forgets HTTP request `hid` and returns its choices that had not ended (to cancel).
  std::vector<actors::sink_request_id> finish(std::uint64_t hid);

  /// The entry of live HTTP request `hid`, or nullptr.
  http_entry* find(std::uint64_t hid);

  /// Every live HTTP request.
  std::vector<std::uint64_t> all() const;

  /// HTTP requests in flight, and choices among them not ended.
  std::size_t live() const { return entries_.size(); }
  std::size_t live_choices() const { return by_choice_.size(); }

private:
  std::uint64_t next_gid_ = 1;
  std::unordered_map<std::uint64_t, http_entry> entries_;  ///< by HTTP id
  /// gateway id -> (HTTP id, choice index), for choices not ended
  std::unordered_map<std::uint64_t, std::pair<std::uint64_t, std::size_t>> by_choice_;
};

} // namespace lf::gateway
