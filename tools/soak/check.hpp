#pragma once
/// The soak's invariants, checked over what the clients saw: every message of every request, in
/// arrival order. Pure: the driver records, these functions judge, so the judging is tested with
/// made-up logs (a duplicate token, a second terminal, a gap) without a cluster.
///
/// Per request (check_request):
///   - exactly one terminal reply (done, error or cancelled) and no message after it;
///   - `accepted` at most once, before any token;
///   - token indices 0, 1, 2, ... with no gap and no duplicate;
///   - an invalid request: the expected error, nothing accepted or streamed;
///   - a valid request: `done` with as many tokens as usage says; cancelled ones may end
///     `cancelled` instead (one cancelled before it was accepted must), never with an error;
///     `worker_lost` is never right.
/// Replays (compare_replay): a request served again on a calm cluster with the seed it was
/// served with streams the same tokens and text and ends for the same reason.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/serve_errc.hpp"
#include "tools/soak/plan.hpp"

namespace lf::soak {

/// The kinds of server messages about one request.
enum class event_kind { accepted, token, done, error, cancelled };

std::string_view to_string(event_kind k) noexcept;

/// One message the client received for a request.
struct observed {
  event_kind kind = event_kind::accepted;
  double at_ms = 0;              ///< since the submit was sent
  std::uint32_t index = 0;       ///< token
  std::int32_t token = 0;        ///< token
  std::string text;              ///< token
  std::string finish_reason;     ///< done
  std::uint32_t completion_tokens = 0;  ///< done
  std::uint32_t resumed = 0;     ///< done: times it moved to another worker mid-stream
  std::uint64_t seed = 0;        ///< done: the seed it was served with
  serve_errc code = serve_errc::none;   ///< error
  std::string message;           ///< error
};

/// Everything one request saw.
struct request_log {
  bool submitted = false;
  bool cancel_sent = false;
  double cancel_at_ms = 0;  ///< since the submit
  std::vector<observed> events;

  /// The first terminal event, or nullptr.
  const observed* terminal() const;
  /// Its streamed text: the token texts in order.
  std::string text() const;
  /// Its streamed token ids in order.
  std::vector<std::int32_t> tokens() const;
  /// Milliseconds to the first token (nullopt-like: < 0 when none).
  double ttft_ms() const;
};

/// The violations of one request, each a line naming it ("request 17: ..."); empty when fine.
std::vector<std::string> check_request(const planned_request& r, const request_log& log);

/// The differences between a request's first run and its replay; empty when they agree.
std::vector<std::string> compare_replay(const planned_request& r, const request_log& first,
                                        const request_log& replay);

/// Counts over a run.
struct run_counts {
  std::size_t requests = 0, done = 0, cancelled = 0, errors = 0, no_terminal = 0;
  std::size_t resumed = 0;              ///< done requests with usage.resumed > 0
  std::size_t planned_cancels = 0, planned_invalid = 0;
  std::uint64_t tokens = 0;             ///< streamed tokens of every request
  std::map<std::string, std::size_t> errors_by_code;
  std::map<std::string, std::size_t> finish_reasons;  ///< of done requests
  std::vector<double> ttft_ms, e2e_ms;  ///< of done requests that streamed tokens
};

/// Counts `logs[i]` against `plans[i]` (same length).
run_counts count_run(const std::vector<planned_request>& plans, const std::vector<request_log>& logs);

/// Which done requests to replay: every reproducible-or-reported-seed one that was resumed, and
/// up to `controls` that were not (spread over the run, every sampling mode). Indices into plans.
std::vector<std::size_t> pick_replays(const std::vector<planned_request>& plans,
                                      const std::vector<request_log>& logs, std::size_t controls);

} // namespace lf::soak
