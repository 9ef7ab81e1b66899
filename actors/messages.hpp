#pragma once
/// Every message the actors exchange, their inspect() functions and the project's CAF type-id
/// block. Typed actor interfaces live in actors/interfaces.hpp.
///
/// Client side (gateway or test <-> router): the sender of a generate_request is the request's
/// event sink; it receives token_event* then exactly one done_event or error_event, all carrying
/// the client's own request id.
///
///   client ──generate_request──> router ──worker_submit──> worker ──> serving_loop
///   client <──token_event──────── router <──worker_token─── worker <── on_token (loop thread)
///   client <──done/error_event─── router <──worker_done/failed──────── on_done  (loop thread)
///
/// CAF 0.17.6 note: the type-id block is CAF 0.18's syntax, backported; 0.17.6 uses it only to
/// register the types (actors/system_config.hpp: add_message_types<caf::id_block::lorafleet>()).
/// Atoms need no id there. Strings sent between nodes use these names, so keep them stable.

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>
#include <caf/type_id.hpp>

#include "actors/adapter_messages.hpp"
#include "actors/ids.hpp"
#include "core/metrics.hpp"
#include "core/request.hpp"
#include "core/serve_errc.hpp"
#include "worker/request.hpp"

namespace lf::actors {

// -- atoms (at most 10 characters) ----------------------------------------------------------------

/// Worker: time to send a load report. Router: (expire_atom, route_id) a request's deadline.
using report_atom = caf::atom_constant<caf::atom("lf_report")>;
using expire_atom = caf::atom_constant<caf::atom("lf_expire")>;
/// Router: (drain_atom, node) moves the node's requests to other workers (exact resumption) and
/// places nothing there again; replies (workers drained, requests moved).
using drain_atom = caf::atom_constant<caf::atom("lf_drain")>;
/// Router: (stranded_atom, route_id, moves) a moved request's wait for a new worker is over.
using stranded_atom = caf::atom_constant<caf::atom("lf_strand")>;

// -- client <-> router ----------------------------------------------------------------------------

/// A generation request as the gateway builds it (prompt rendered and tokenized); the router
/// validates the draft once (core/request.hpp) and every later hop takes the validated_request.
struct generate_request {
  sink_request_id id;
  request_draft draft;
  /// Credit window in tokens (proto::submit_msg::window); 0 => unlimited.
  std::uint32_t window = 0;
};

/// Grants the sender's request `id` `tokens` more tokens of its credit window.
struct credit_request {
  sink_request_id id;
  std::uint32_t tokens = 0;
};

/// Cancels the sender's request `id`; its terminal event is error_event{cancelled} unless it
/// ended before the cancel arrived.
struct cancel_request {
  sink_request_id id;
};

/// One sampled token of request `id`.
struct token_event {
  sink_request_id id;
  std::int32_t token = 0;
  std::string text;        ///< text that became final with this token (may be empty)
  std::uint32_t index = 0; ///< 0 for the first generated token
  bool has_logprobs = false;  ///< the request asked for logprobs
  token_logprobs logprobs;
};

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

/// Terminal: the request failed, was cancelled or was rejected.
struct error_event {
  sink_request_id id;
  serve_errc code = serve_errc::internal;
  std::string message;
  std::uint32_t retry_after_ms = 0;  ///< overloaded: a hint when to try again
};

// -- router <-> worker ----------------------------------------------------------------------------

/// What a worker tells the router when it registers (router replies with its worker_id).
struct register_worker {
  std::string name;
  std::uint32_t context_window = 0;
  std::uint32_t vocab_size = 0;
  std::uint32_t total_blocks = 0;
  std::uint32_t block_size = 0;
  std::uint32_t max_seqs = 0;
  std::vector<std::string> adapters;  ///< adapters it holds (loaded) right now
};

/// Router -> worker: serve this request. The worker answers with worker_token* and then exactly
/// one worker_done or worker_failed.
struct worker_submit {
  route_id rid;
  sink_request_id id;        ///< the client's id, carried back in the events
  validated_request req;
  std::uint32_t timeout_ms = 0;  ///< time left until the deadline; 0 => none
  /// Exact resumption: the tokens already streamed to the client by an earlier worker. The
  /// worker continues after them (serving_loop::submit); the first token it sends has index
  /// resume.size().
  std::vector<std::int32_t> resume;
  /// A drained worker's K/V of prompt + resume (whole blocks; may be empty): the worker imports
  /// it instead of recomputing those positions when it can (serving_loop::submit).
  worker::kv_blob kv;
  /// Credit allowance: the worker streams tokens with index < allowance, then pauses the request
  /// until a worker_credit raises it; 0 => unlimited.
  std::uint32_t allowance = 0;
};

/// Router -> worker: `rid` may stream tokens with index < `allowance` (window + credits so far).
struct worker_credit {
  route_id rid;
  std::uint32_t allowance = 0;
};

/// Router -> worker: stop serving `rid` and free its blocks. `ship_kv` (a drain): the request is
/// moving; the worker ends it with worker_moved, carrying its computed K/V, instead of
/// worker_failed{cancelled} (a request that finished first still ends with worker_done).
struct worker_cancel {
  route_id rid;
  bool ship_kv = false;
};

/// Worker -> router: `rid` left this worker, as a worker_cancel with ship_kv asked; `kv` is its
/// computed K/V for the next worker (empty if it had none or the engine cannot move K/V).
struct worker_moved {
  worker_id wid;
  route_id rid;
  worker::kv_blob kv;
};

/// Worker -> router: a token of `rid` (ev.id is the client's id).
struct worker_token {
  worker_id wid;
  route_id rid;
  token_event ev;
};

/// Worker -> router: `rid` finished.
struct worker_done {
  worker_id wid;
  route_id rid;
  done_event ev;
};

/// Worker -> router: `rid` failed or was cancelled.
struct worker_failed {
  worker_id wid;
  route_id rid;
  error_event ev;
};

/// Serving loop -> its worker actor: `rid` has ended, forget it.
struct request_ended {
  route_id rid;
};

/// What one adapter's loads cost a worker (cache::adapter_load_record on the wire).
struct adapter_load_cost {
  std::string name;
  std::uint64_t loads = 0;
  double last_load_ms = 0;
  std::uint64_t bytes = 0;
};

/// Worker -> router, periodically and on request: a snapshot of the worker's load.
struct worker_load {
  worker_id wid;
  std::uint32_t waiting = 0, running = 0;
  std::uint64_t waiting_tokens = 0, running_tokens = 0;
  std::uint32_t free_blocks = 0, total_blocks = 0;
  std::uint64_t finished = 0, failed = 0, cancelled = 0;
  std::vector<std::string> adapters;  ///< adapters it holds right now
  std::uint64_t preemptions = 0, adapter_loads = 0;
  std::vector<std::string> servable;  ///< adapters it can load (its adapter directory)
  std::string name;                   ///< filled by the router from register_worker
  std::uint32_t paused = 0;           ///< requests paused for want of credits
  std::vector<adapter_load_cost> loads_by_adapter;  ///< every adapter it loaded, with what loading cost
  std::uint32_t adapter_slots_free = 0;  ///< adapter slots neither resident nor loading (prefetch goes there)
};

/// The router's measurements of the requests one worker served; worker 0 (an invalid id):
/// requests that ended before reaching a worker. Kept after the worker is gone.
struct worker_metrics {
  worker_id wid;
  std::string name;
  bool live = true;
  serve_metrics m;
};

/// What the router has seen, for `status`, tests and readiness checks.
struct router_stats {
  std::uint32_t workers = 0;
  std::uint32_t queued = 0;    ///< accepted, waiting for a worker
  std::uint32_t inflight = 0;  ///< placed on a worker, not ended
  std::uint64_t accepted = 0, overloaded = 0, rejected = 0;  ///< rejected: invalid requests
  std::uint64_t completed = 0, failed = 0, cancelled = 0, timed_out = 0;
  std::uint64_t replaced = 0;     ///< placed again after their worker died, before streaming
  std::uint64_t worker_lost = 0;  ///< ended with worker_lost
  std::uint64_t resumed = 0;      ///< resumptions: mid-stream moves to another worker (lost or drained)
  std::uint32_t draining = 0;     ///< live workers that take no new requests (drained)
  std::uint64_t kv_shipped = 0;   ///< drain moves that brought their K/V along (not recomputed)
  std::uint64_t kv_shipped_tokens = 0;  ///< the tokens' K/V those moves carried
  std::uint64_t adapter_prefetches = 0; ///< background adapter loads asked of workers (adds, updates, demand)
  std::vector<worker_load> loads; ///< last report of each live worker
  std::vector<worker_metrics> metrics;  ///< per worker ever registered, then worker 0
};

// -- inspect ---------------------------------------------------------------------------------------

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, generate_request& x) {
  return f(caf::meta::type_name("lf.generate_request"), x.id, x.draft, x.window);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, credit_request& x) {
  return f(caf::meta::type_name("lf.credit_request"), x.id, x.tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_credit& x) {
  return f(caf::meta::type_name("lf.worker_credit"), x.rid, x.allowance);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, cancel_request& x) {
  return f(caf::meta::type_name("lf.cancel_request"), x.id);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, token_event& x) {
  return f(caf::meta::type_name("lf.token_event"), x.id, x.token, x.text, x.index, x.has_logprobs,
           x.logprobs.logprob, x.logprobs.top_tokens, x.logprobs.top_logprobs);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, done_event& x) {
  return f(caf::meta::type_name("lf.done_event"), x.id, x.finish_reason, x.text, x.tokens, x.usage,
           x.timings, x.worker, x.seed, x.resumed);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, error_event& x) {
  return f(caf::meta::type_name("lf.error_event"), x.id, x.code, x.message, x.retry_after_ms);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, register_worker& x) {
  return f(caf::meta::type_name("lf.register_worker"), x.name, x.context_window, x.vocab_size, x.total_blocks,
           x.block_size, x.max_seqs, x.adapters);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_submit& x) {
  return f(caf::meta::type_name("lf.worker_submit"), x.rid, x.id, x.req, x.timeout_ms, x.resume, x.kv, x.allowance);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_cancel& x) {
  return f(caf::meta::type_name("lf.worker_cancel"), x.rid, x.ship_kv);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_moved& x) {
  return f(caf::meta::type_name("lf.worker_moved"), x.wid, x.rid, x.kv);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_token& x) {
  return f(caf::meta::type_name("lf.worker_token"), x.wid, x.rid, x.ev);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_done& x) {
  return f(caf::meta::type_name("lf.worker_done"), x.wid, x.rid, x.ev);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_failed& x) {
  return f(caf::meta::type_name("lf.worker_failed"), x.wid, x.rid, x.ev);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_ended& x) {
  return f(caf::meta::type_name("lf.request_ended"), x.rid);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_load_cost& x) {
  return f(caf::meta::type_name("lf.adapter_load_cost"), x.name, x.loads, x.last_load_ms, x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_load& x) {
  return f(caf::meta::type_name("lf.worker_load"), x.wid, x.waiting, x.running, x.waiting_tokens,
           x.running_tokens, x.free_blocks, x.total_blocks, x.finished, x.failed, x.cancelled,
           x.adapters, x.preemptions, x.adapter_loads, x.servable, x.name, x.paused, x.loads_by_adapter,
           x.adapter_slots_free);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_metrics& x) {
  return f(caf::meta::type_name("lf.worker_metrics"), x.wid, x.name, x.live, x.m.finished, x.m.errors,
           x.m.prompt_tokens, x.m.generation_tokens, x.m.cached_tokens, x.m.queue_seconds,
           x.m.ttft_seconds, x.m.tpot_seconds, x.m.e2e_seconds);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, router_stats& x) {
  return f(caf::meta::type_name("lf.router_stats"), x.workers, x.queued, x.inflight, x.accepted,
           x.overloaded, x.rejected, x.completed, x.failed, x.cancelled, x.timed_out, x.replaced,
           x.worker_lost, x.resumed, x.draining, x.kv_shipped, x.kv_shipped_tokens, x.loads, x.metrics,
           x.adapter_prefetches);
}

} // namespace lf::actors

namespace lf {

/// sampling_params on the wire: the optional seed as (has_seed, seed).
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, sampling_params& x) {
  bool has_seed = x.seed.has_value();
  std::uint64_t seed = x.seed.value_or(0);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.seed = has_seed ? std::optional<std::uint64_t>(seed) : std::nullopt;
    return caf::none;
  });
  return f(caf::meta::type_name("lf.sampling"), x.temperature, x.top_k, x.top_p,
           x.repetition_penalty, has_seed, seed, x.max_tokens, x.stop, x.ignore_eos, x.logprobs, x.top_logprobs, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_draft& x) {
  return f(caf::meta::type_name("lf.request_draft"), x.prompt, x.params, x.adapter, x.timeout_ms, x.ttft_ms,
           x.tenant, x.tenant_weight);
}

/// The one way to read and write a validated_request's fields: CAF's (de)serialization between
/// the nodes of one cluster, which trust each other's validation.
struct validated_request_access {
  static request_draft& fields(validated_request& r) { return r.d_; }
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, validated_request& x) {
  return f(caf::meta::type_name("lf.validated_request"), validated_request_access::fields(x));
}

} // namespace lf

namespace lf {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, histogram& x) {
  return f(caf::meta::type_name("lf.histogram"), x.bounds, x.counts, x.sum, x.count);
}

} // namespace lf

namespace lf::worker {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, usage_counts& x) {
  return f(caf::meta::type_name("lf.usage"), x.prompt_tokens, x.completion_tokens, x.cached_tokens);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, kv_blob& x) {
  return f(caf::meta::type_name("lf.kv_blob"), x.format, x.tokens, x.bytes);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_timings& x) {
  return f(caf::meta::type_name("lf.timings"), x.queue_ms, x.ttft_ms, x.total_ms);
}

} // namespace lf::worker

// serve_errc as a CAF error category: caf::error{serve_errc::overloaded, "detail"} and
// caf::result<T> built from a serve_errc carry the category atom "serve".
CAF_ERROR_CODE_ENUM(lf::serve_errc, "serve")

CAF_BEGIN_TYPE_ID_BLOCK(lorafleet, caf::first_custom_type_id)
  CAF_ADD_TYPE_ID(lorafleet, (lf::serve_errc))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::sink_request_id))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::route_id))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_id))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::generate_request))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::cancel_request))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::token_event))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::done_event))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::error_event))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::register_worker))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_submit))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_cancel))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_token))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_done))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_failed))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::request_ended))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_load))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::router_stats))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_metrics))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_moved))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::credit_request))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_credit))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::adapter_command))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::adapter_reply))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::adapter_check))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::adapter_checked))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_adapters))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_prefetch))
CAF_END_TYPE_ID_BLOCK(lorafleet)

namespace lf::actors {

/// The CAF error for `code` with `message` as context (category "serve").
inline caf::error make_serve_error(serve_errc code, std::string message) {
  return caf::make_error(code, std::move(message));
}

/// The serve_errc inside `e`, or serve_errc::internal for an error of another category (a CAF
/// system error such as a broken connection); serve_errc::none for no error.
inline serve_errc serve_code_of(const caf::error& e) {
  if (!e)
    return serve_errc::none;
  if (e.category() != caf::atom("serve"))
    return serve_errc::internal;
  return static_cast<serve_errc>(e.code());
}

} // namespace lf::actors
