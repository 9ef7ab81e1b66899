#pragma once
// Private to the serving loop's source files: what the loop thread keeps per request, and a submit
// on its way in. Below serving_loop.hpp, which only names them.

#include <optional>
#include <string>
#include <vector>

#include "cache/ids.hpp"
#include "core/credit_window.hpp"
#include "core/request.hpp"
#include "text/text_stream.hpp"
#include "worker/constraint_runner.hpp"
#include "worker/engine/sampling/sampler.hpp"
#include "worker/request.hpp"

namespace lf::worker {

/// The result of cancel(id, ship_kv): a plain cancellation, or (ship_kv) `moved` (its K/V, if
/// any, is the caller's to add).
inline request_result cancelled(bool ship_kv) {
  auto r = failure(serve_errc::cancelled, ship_kv ? "moved to another worker" : "cancelled");
  r.moved = ship_kv;
  return r;
}

/// A request the loop thread owns.
struct live_request {
  live_request(validated_request r, std::optional<time_point> d, request_callbacks c,
               std::uint64_t fallback_seed, time_point t)
    : req(std::move(r)), deadline(d), cb(std::move(c)), pick(req.params(), fallback_seed),
      stream(req.params().stop), submitted(t) {}

  validated_request req;
  std::optional<time_point> deadline;
  request_callbacks cb;
  engine::sampler pick;
  text::text_stream stream;
  std::vector<std::int32_t> generated;
  time_point submitted;
  time_point scheduled{};
  std::optional<time_point> first_token;  ///< when this worker sampled its first token
  std::uint32_t cached_tokens = 0;
  bool started = false;
  cache::adapter_id adapter = cache::base_model;  ///< the registry's id for req.adapter
  bool holds_adapter = false;  ///< acquired from the adapter manager; released by end()
  credit_window credits;  ///< how far it may stream (submit's allowance, raised by credit())
  std::uint32_t streamed = 0;  ///< the index of its next streamed token (resumed tokens count)
  /// Structured output: where the output stands in its constraint (constraint_runner.hpp); none
  /// without a constraint. Replaying resumed tokens recomputes it.
  std::optional<output_guide> guide;
};

struct inbox_item {
  request_id id;
  validated_request req;
  std::optional<time_point> deadline;
  request_callbacks cb;
  time_point submitted;
  std::vector<std::int32_t> resume;
  kv_blob kv;
  std::uint32_t allowance = 0;
};

} // namespace lf::worker
