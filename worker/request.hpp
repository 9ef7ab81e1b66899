#pragma once
/// What a worker serves: a validated request (core/request.hpp), its streamed tokens and its
/// single terminal result. Pure C++; shared by the serving loop, the worker actor and the router.

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/serve_errc.hpp"
#include "core/strong_id.hpp"
#include "cache/ids.hpp"
#include "core/request.hpp"

namespace lf::worker {

using time_point = std::chrono::steady_clock::time_point;

/// A request inside one worker (the serving loop's handle; also its KV sequence id).
using request_id = lf::strong_id<struct request_tag, std::uint64_t>;

/// How a request ended.
enum class request_outcome { finished, cancelled, failed };

/// "finished", "cancelled", "failed".
std::string_view to_string(request_outcome o);

/// Token counts of a request.
struct usage_counts {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t completion_tokens = 0;
  std::uint32_t cached_tokens = 0;  ///< prompt tokens served by the prefix cache
};

/// Where a request's time went, in milliseconds from submit().
struct request_timings {
  double queue_ms = 0;  ///< until first scheduled
  double ttft_ms = 0;   ///< until the first token was sampled
  double total_ms = 0;  ///< until the terminal result
};

/// A sequence's computed K/V, moved from a drained worker to the next one so that it resumes
/// without recomputing them (serving_loop::cancel with ship_kv, serving_loop::submit). Whole
/// blocks only: `tokens` is a multiple of the block size long.
struct kv_blob {
  std::string format;                ///< step_engine::kv_format() of the engine that wrote it
  std::vector<std::int32_t> tokens;  ///< the tokens of the positions it holds: prompt, then generated
  std::string bytes;                 ///< tokens.size() / block size blocks, step_engine::read_kv()

  bool empty() const noexcept { return tokens.empty(); }
};

/// The single terminal event of a request.
struct request_result {
  request_outcome outcome = request_outcome::finished;
  std::string finish_reason;      ///< finished: "eos", "stop" or "length"
  serve_errc error = serve_errc::none;  ///< failed / cancelled: why
  std::string message;            ///< human-readable detail for errors
  std::string text;               ///< everything streamed (stop sequence excluded)
  std::vector<std::int32_t> tokens;  ///< generated ids
  usage_counts usage;
  request_timings timings;
  /// Ended by cancel(id, ship_kv = true): the request moves to another worker. `kv` holds its
  /// computed K/V (empty when it had none, or the engine cannot move K/V).
  bool moved = false;
  kv_blob kv;
};

/// A request's terminal result for a normal end: "eos", "stop" or "length".
inline request_result finished(std::string reason) {
  request_result r;
  r.outcome = request_outcome::finished;
  r.finish_reason = std::move(reason);
  return r;
}

/// A request's terminal result for an error; serve_errc::cancelled makes it a cancellation.
inline request_result failure(serve_errc code, std::string message) {
  request_result r;
  r.outcome = code == serve_errc::cancelled ? request_outcome::cancelled : request_outcome::failed;
  r.error = code;
  r.message = std::move(message);
  return r;
}

/// One thing a step did for one request: a streamed token (what on_token would be told), or
/// the request's terminal result, which is its last entry ever.
struct step_entry {
  request_id id;          ///< the serving loop's id (submit's return value)
  std::uint64_t tag = 0;  ///< the submitter's own name for the request (request_callbacks::tag)
  std::int32_t token = 0;
  std::string text;         ///< text that became final with this token (may be empty)
  std::uint32_t index = 0;  ///< the token's index in the request's output (resumed tokens count)
  std::optional<token_logprobs> logprobs;  ///< requests with params().logprobs
  std::optional<request_result> result;    ///< set: the terminal entry (no token)

  bool terminal() const noexcept { return result.has_value(); }
};

/// What one step (one turn of the loop thread) produced for the requests of one step_sink, in
/// the order it happened: a request's tokens by index, and its terminal entry after them.
struct step_batch {
  std::vector<step_entry> entries;
};

/// Receives the step batches of the requests submitted with it: at most one call per step, on
/// the serving loop's thread (or, for a request refused because the loop has stopped, on the
/// submitter's thread), never with an empty batch. Many requests share one sink: that is what
/// turns a message per token into a message per step.
class step_sink {
public:
  virtual ~step_sink() = default;
  virtual void deliver(step_batch batch) = 0;
};

/// Callbacks of one request, invoked on the serving loop's thread: on_token once per sampled
/// token (with the text that became final, possibly empty), then on_done exactly once. With a
/// `sink` the same events also go, as step_entries tagged `tag`, into that sink's batch of the
/// step in which they happen.
struct request_callbacks {
  std::function<void(std::int32_t token, std::string_view text)> on_token;
  /// Requests with params().logprobs (continuous batching only): called just before on_token
  /// with that token's log-probabilities.
  std::function<void(token_logprobs)> on_logprobs;
  std::function<void(request_result)> on_done;
  std::shared_ptr<step_sink> sink;
  std::uint64_t tag = 0;
};

} // namespace lf::worker
