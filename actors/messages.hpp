#pragma once
/// Every message the actors exchange, and the project's CAF type-id block: the one header to
/// include for messages. The structs live by conversation, each with its inspect() beside it:
///
///   actors/client_messages.hpp   client (gateway, test) <-> router: requests, tokens, terminals
///   actors/worker_messages.hpp   router <-> worker: registration, submit, streamed events; atoms
///   actors/stats_messages.hpp    load reports, router_stats, per-worker metrics
///   actors/adapter_messages.hpp  the adapter registry: operator commands, checks, events
///   actors/core_inspect.hpp      inspect() of the core types they carry (draft, sampling, ...)
///
/// Typed actor interfaces live in actors/interfaces.hpp.
///
/// CAF 0.17.6 note: the type-id block is CAF 0.18's syntax, backported; 0.17.6 uses it only to
/// register the types (actors/system_config.hpp: add_message_types<caf::id_block::lorafleet>()).
/// Atoms need no id there (and at most 10 characters); every reply type needs one. Strings sent
/// between nodes use these names, so keep them stable.

#include <string>

#include <caf/atom.hpp>
#include <caf/error.hpp>
#include <caf/make_message.hpp>
#include <caf/message.hpp>
#include <caf/type_id.hpp>

#include "actors/adapter_messages.hpp"
#include "actors/client_messages.hpp"
#include "actors/ids.hpp"
#include "actors/stats_messages.hpp"
#include "actors/worker_messages.hpp"
#include "core/serve_errc.hpp"

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
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::worker_step))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::event_batch))
  CAF_ADD_TYPE_ID(lorafleet, (lf::actors::prefix_events))
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
