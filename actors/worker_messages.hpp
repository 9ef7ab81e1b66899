#pragma once
/// The router <-> worker conversation, each message with its inspect(); the atoms the router
/// and the workers send themselves. Type ids: actors/messages.hpp.
///
///   worker ──register_worker──> router (replies worker_id), then worker_load periodically
///   router ──worker_submit / worker_credit / worker_cancel──> worker
///   router <──worker_step── worker (loop thread): one per serving-loop step, carrying that
///             step's worker_token* and worker_done | worker_failed | worker_moved of its requests
///   router <──worker_failed── worker (a submit it could not take)
///   router <──prefix_events── worker (loop thread): its prefix cache's stored / removed blocks;
///   router ──resync_atom──> worker: a gap was seen, send a snapshot
///   serving loop ──request_ended──> its own worker actor (the requests that ended in a step)

#include <cstdint>
#include <string>
#include <vector>

#include <caf/atom.hpp>
#include <caf/meta/type_name.hpp>

#include "actors/adapter_messages.hpp"
#include "actors/client_messages.hpp"
#include "actors/core_inspect.hpp"
#include "actors/ids.hpp"
#include "core/request.hpp"
#include "worker/request.hpp"

namespace lf::actors {

// -- atoms (at most 10 characters) ----------------------------------------------------------------

/// Worker: time to send a load report. Router: (expire_atom, route_id) a request's deadline.
using report_atom = caf::atom_constant<caf::atom("lf_report")>;
using expire_atom = caf::atom_constant<caf::atom("lf_expire")>;
/// Router: (drain_atom, node) moves the node's requests to other workers (exact resumption) and
/// places nothing there again; replies (workers drained, requests moved).
using drain_atom = caf::atom_constant<caf::atom("lf_drain")>;
/// Router: (undrain_atom, node) puts the node's drained workers (or worker "node/N") back into
/// placement; replies with how many took placements again.
using undrain_atom = caf::atom_constant<caf::atom("lf_undrain")>;
/// Router: (outage_atom, n) outage n (no worker takes requests) has lasted max_queue_wait.
using outage_atom = caf::atom_constant<caf::atom("lf_outage")>;
/// Router: (stranded_atom, route_id, moves) a moved request's wait for a new worker is over.
using stranded_atom = caf::atom_constant<caf::atom("lf_strand")>;
/// Worker: the router saw a gap in its prefix_events numbers; the next batch must be a snapshot.
using resync_atom = caf::atom_constant<caf::atom("lf_resync")>;

// -- messages -------------------------------------------------------------------------------------

/// What a worker tells the router when it registers (router replies with its worker_id).
struct register_worker {
  std::string name;
  std::uint32_t context_window = 0;
  std::uint32_t vocab_size = 0;
  std::uint32_t total_blocks = 0;
  std::uint32_t block_size = 0;
  std::uint32_t max_seqs = 0;
  std::vector<std::string> adapters;  ///< adapters it holds (loaded) right now
  /// The cluster's join token when the router requires one ([security.nodes] join_token_file);
  /// compared in constant time, never logged.
  std::string join_token;
  /// The worker's copy of the cluster's adapter registry log (from any router it served): a
  /// router whose own log is a prefix of it catches up (a replica that was down, or restarted
  /// without a log file, rebuilds the registry from its workers).
  std::vector<cache::adapter_event> registry;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, register_worker& x) {
  return f(caf::meta::type_name("lf.register_worker"), x.name, x.context_window, x.vocab_size, x.total_blocks,
           x.block_size, x.max_seqs, x.adapters, x.join_token, x.registry);
}

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

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_submit& x) {
  return f(caf::meta::type_name("lf.worker_submit"), x.rid, x.id, x.req, x.timeout_ms, x.resume, x.kv, x.allowance);
}

/// Router -> worker: `rid` may stream tokens with index < `allowance` (window + credits so far).
struct worker_credit {
  route_id rid;
  std::uint32_t allowance = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_credit& x) {
  return f(caf::meta::type_name("lf.worker_credit"), x.rid, x.allowance);
}

/// Router -> worker: stop serving `rid` and free its blocks. `ship_kv` (a drain): the request is
/// moving; the worker ends it with worker_moved, carrying its computed K/V, instead of
/// worker_failed{cancelled} (a request that finished first still ends with worker_done).
struct worker_cancel {
  route_id rid;
  bool ship_kv = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_cancel& x) {
  return f(caf::meta::type_name("lf.worker_cancel"), x.rid, x.ship_kv);
}

/// Inside a worker_step: `rid` left this worker, as a worker_cancel with ship_kv asked; `kv` is its
/// computed K/V for the next worker (empty if it had none or the engine cannot move K/V).
struct worker_moved {
  worker_id wid;
  route_id rid;
  worker::kv_blob kv;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_moved& x) {
  return f(caf::meta::type_name("lf.worker_moved"), x.wid, x.rid, x.kv);
}

/// What a worker says of one of its requests, inside a worker_step: a token, its end or its
/// failure (the router puts the client's id into ev.id). One struct for the three; each has its
/// name on the wire (worker_event_name).
template <class Event>
struct worker_event {
  worker_id wid;
  route_id rid;
  Event ev;
};

/// A token of `rid`.
using worker_token = worker_event<token_event>;
/// `rid` finished.
using worker_done = worker_event<done_event>;
/// `rid` failed or was cancelled: inside a worker_step, or alone when the worker could not take
/// the submit.
using worker_failed = worker_event<error_event>;

/// The wire name of a worker_event of `Event`.
template <class Event>
constexpr const char* worker_event_name() noexcept;
template <>
constexpr const char* worker_event_name<token_event>() noexcept { return "lf.worker_token"; }
template <>
constexpr const char* worker_event_name<done_event>() noexcept { return "lf.worker_done"; }
template <>
constexpr const char* worker_event_name<error_event>() noexcept { return "lf.worker_failed"; }

template <class Inspector, class Event>
typename Inspector::result_type inspect(Inspector& f, worker_event<Event>& x) {
  return f(caf::meta::type_name(worker_event_name<Event>()), x.wid, x.rid, x.ev);
}

/// Worker (its serving loop's thread) -> router: what one step produced, one message a step
/// instead of one a token. Each request's tokens are in `tokens` in index order; a request that
/// ended in this step has its terminal in `done`, `failed` or `moved`, which the router takes
/// after every token (a request is in at most one of the three, and nothing of it follows).
struct worker_step {
  worker_id wid;
  std::vector<worker_token> tokens;
  std::vector<worker_done> done;
  std::vector<worker_failed> failed;
  std::vector<worker_moved> moved;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_step& x) {
  return f(caf::meta::type_name("lf.worker_step"), x.wid, x.tokens, x.done, x.failed, x.moved);
}

/// Worker (its serving loop's thread) -> router: what entered and left its prefix cache, one
/// numbered batch a loop turn at most (cache/prefix_events.hpp; vLLM's KV events). `seq` goes
/// 1, 2, ... per registration; a snapshot lists every block hash held and replaces what the
/// router knew; a gap in the numbers makes the router send resync_atom. The hashes are public
/// block hashes chained from the prompt's start (adapter key and, under tenant isolation, the
/// tenant's salt in the root), so the router computes the same ones from a prompt.
struct prefix_events {
  worker_id wid;
  std::uint64_t seq = 0;
  bool snapshot = false;
  std::uint32_t block_size = 0;   ///< tokens per block: how the router cuts a prompt into hashes
  bool tenant_isolation = true;   ///< prefix_cache_isolation = "tenant": named tenants salt their blocks
  std::vector<std::uint64_t> stored, removed;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, prefix_events& x) {
  return f(caf::meta::type_name("lf.prefix_events"), x.wid, x.seq, x.snapshot, x.block_size, x.tenant_isolation,
           x.stored, x.removed);
}

/// Serving loop -> its worker actor: these requests have ended (in one step), forget them.
struct request_ended {
  std::vector<route_id> rids;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, request_ended& x) {
  return f(caf::meta::type_name("lf.request_ended"), x.rids);
}

} // namespace lf::actors
