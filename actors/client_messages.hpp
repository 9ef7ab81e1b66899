#pragma once
/// The client conversation (gateway or test <-> router), each message with its inspect(). The
/// sender of a generate_request is the request's event sink; it receives token_event* then
/// exactly one done_event or error_event, all carrying the client's own request id.
///
///   client ──generate_request──> router        client <──token_event──────── router
///   client ──credit_request────> router        client <──done/error_event─── router
///   client ──cancel_request────> router        client <──event_batch───────── router
///
/// What a worker's step produced for one sink comes as one event_batch; events the router makes
/// itself (refusals, cancels, deadlines) come alone.
///
/// Type ids: actors/messages.hpp.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/type_name.hpp>

#include "actors/core_inspect.hpp"
#include "actors/ids.hpp"
#include "core/request.hpp"
#include "core/sampling_params.hpp"
#include "core/serve_errc.hpp"
#include "worker/request.hpp"

namespace lf::actors {

/// A generation request as the gateway builds it (prompt rendered and tokenized); the router
/// validates the draft once (core/request.hpp) and every later hop takes the validated_request.
struct generate_request {
  sink_request_id id;
  request_draft draft;
  /// Credit window in tokens (proto::submit_msg::window); 0 => unlimited.
  std::uint32_t window = 0;
  /// A continuation: tokens the client already received from another router (that router was
  /// lost). The router resumes after them exactly as after a lost worker (the draft carries the
  /// seed); the first event is token `continued.size()`. Empty for a new request.
  std::vector<std::int32_t> continued;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generate_request& x) {
  return f(caf::meta::type_name("lf.generate_request"), x.id, x.draft, x.window, x.continued);
}

/// Grants the sender's request `id` `tokens` more tokens of its credit window.
struct credit_request {
  sink_request_id id;
  std::uint32_t tokens = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, credit_request& x) {
  return f(caf::meta::type_name("lf.credit_request"), x.id, x.tokens);
}

/// Cancels the sender's request `id`; its terminal event is error_event{cancelled} unless it
/// ended before the cancel arrived.
struct cancel_request {
  sink_request_id id;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_request& x) {
  return f(caf::meta::type_name("lf.cancel_request"), x.id);
}

/// One sampled token of request `id`.
struct token_event {
  sink_request_id id;
  std::int32_t token = 0;
  std::string text;        ///< text that became final with this token (may be empty)
  std::uint32_t index = 0; ///< 0 for the first generated token
  bool has_logprobs = false;  ///< the request asked for logprobs
  token_logprobs logprobs;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_event& x) {
  return f(caf::meta::type_name("lf.token_event"), x.id, x.token, x.text, x.index, x.has_logprobs, x.logprobs);
}

/// Terminal: the request finished normally.
struct done_event {
  sink_request_id id;
  std::string finish_reason;  ///< "eos", "stop" or "length"
  std::string text;           ///< everything streamed (stop sequence excluded)
  std::vector<std::int32_t> tokens;
  worker::usage_counts usage;
  worker::request_timings timings;  ///< measured by the worker, from its submit
  worker_id worker;                 ///< who served it (the last worker, if it was resumed)
  std::uint64_t seed = 0;           ///< the sampling seed used (the client's, or assigned at admission)
  std::uint32_t resumed = 0;        ///< times it moved to another worker mid-stream
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, done_event& x) {
  return f(caf::meta::type_name("lf.done_event"), x.id, x.finish_reason, x.text, x.tokens, x.usage,
           x.timings, x.worker, x.seed, x.resumed);
}

/// Terminal: the request failed, was cancelled or was rejected.
struct error_event {
  sink_request_id id;
  serve_errc code = serve_errc::internal;
  std::string message;
  std::uint32_t retry_after_ms = 0;  ///< overloaded: a hint when to try again
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error_event& x) {
  return f(caf::meta::type_name("lf.error_event"), x.id, x.code, x.message, x.retry_after_ms);
}

/// Router -> event sink: the events one worker step produced for this sink's requests. The sink
/// takes `tokens` in order, then `done` and `errors`: a request's tokens come by index, at most
/// one terminal follows them, and nothing of that request comes after it.
struct event_batch {
  std::vector<token_event> tokens;
  std::vector<done_event> done;
  std::vector<error_event> errors;

  bool empty() const noexcept { return tokens.empty() && done.empty() && errors.empty(); }

  /// Hands each event to its handler in the order they happened: the tokens, then the terminals
  /// (done, then errors), so no request's terminal precedes its last token.
  template <class OnToken, class OnDone, class OnError>
  void dispatch(OnToken&& on_token, OnDone&& on_done, OnError&& on_error) const {
    for (const auto& ev : tokens)
      on_token(ev);
    for (const auto& ev : done)
      on_done(ev);
    for (const auto& ev : errors)
      on_error(ev);
  }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, event_batch& x) {
  return f(caf::meta::type_name("lf.event_batch"), x.tokens, x.done, x.errors);
}

} // namespace lf::actors
