#pragma once
// Private to the serving loop's two source files: what the loop thread keeps per request.

#include "worker/engine/sampler.hpp"
#include "worker/engine/text_stream.hpp"
#include "worker/serving_loop.hpp"

namespace lf::worker {

/// A request the loop thread owns.
struct serving_loop::live_request {
  gen_request req;
  request_callbacks cb;
  engine::sampler pick;
  engine::text_stream stream;
  std::vector<std::int32_t> generated;
  time_point submitted, scheduled{}, first_token{};
  std::uint32_t cached_tokens = 0;
  bool started = false;
  cache::adapter_id adapter = cache::base_model;  ///< the registry's id for req.adapter
  bool holds_adapter = false;  ///< acquired from the adapter manager; released by end()
};

struct serving_loop::inbox_item {
  request_id id;
  gen_request req;
  request_callbacks cb;
  time_point submitted;
};

} // namespace lf::worker
