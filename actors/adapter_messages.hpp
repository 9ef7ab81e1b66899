#pragma once
/// The adapter registry's conversation (cache/adapter_registry.hpp), each message with its
/// inspect(). Type ids: actors/messages.hpp.
///
///   operator ──adapter_command──> router ──adapter_check──> one worker ──adapter_checked──┐
///   operator <──adapter_reply──── router <─────────────────────────────────────────────────┘
///   router ──worker_adapters (the events; the whole log when a worker registers)──> every worker
///   router ──worker_prefetch──> a worker: load this version now, before requests need it

#include <cstdint>
#include <string>
#include <vector>

#include <caf/meta/load_callback.hpp>
#include <caf/meta/type_name.hpp>

#include "cache/adapter_registry.hpp"
#include "core/serve_errc.hpp"

namespace lf::actors {

/// Operator -> router: "list", or "add" / "update" NAME PATH, or "remove" NAME.
struct adapter_command {
  std::string op;
  std::string name;
  std::string path;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_command& x) {
  return f(caf::meta::type_name("lf.adapter_command"), x.op, x.name, x.path);
}

/// Router -> operator. `error` none: done; `adapters` holds every registered name (list) or the
/// one changed, each with `resident[i]` = live workers holding its newest version.
struct adapter_reply {
  serve_errc error = serve_errc::none;
  std::string message;
  std::vector<cache::adapter_record> adapters;
  std::vector<std::uint32_t> resident;
  std::uint64_t seq = 0;  ///< the log's newest event
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_reply& x) {
  return f(caf::meta::type_name("lf.adapter_reply"), x.error, x.message, x.adapters, x.resident, x.seq);
}

/// Router -> worker: check the adapter at `path` against your model (engine::check_peft_adapter).
struct adapter_check {
  std::string path;
  std::uint32_t max_rank = 0;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_check& x) {
  return f(caf::meta::type_name("lf.adapter_check"), x.path, x.max_rank);
}

/// Worker -> router: what the check found; `error` non-empty: refused, and why.
struct adapter_checked {
  std::string error;
  cache::adapter_source source;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_checked& x) {
  return f(caf::meta::type_name("lf.adapter_checked"), x.error, x.source);
}

/// Router -> worker: registry events to apply, in order (worker_runtime::apply_adapter_events).
/// `whole_log`: the router's entire log (sent when a worker registers): a copy that is not a
/// prefix of it (the router started over without its log file) is replaced, not extended.
struct worker_adapters {
  std::vector<cache::adapter_event> events;
  bool whole_log = false;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_adapters& x) {
  return f(caf::meta::type_name("lf.worker_adapters"), x.events, x.whole_log);
}

/// Router -> worker: start loading `key` ("NAME@V") in the background.
struct worker_prefetch {
  std::string key;
};

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, worker_prefetch& x) {
  return f(caf::meta::type_name("lf.worker_prefetch"), x.key);
}

} // namespace lf::actors

namespace lf::cache {

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_source& x) {
  return f(caf::meta::type_name("lf.adapter_source"), x.path, x.hash, x.rank, x.targets, x.bytes);
}

/// The op travels as its number.
template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_event& x) {
  auto op = static_cast<std::uint8_t>(x.op);
  auto load = caf::meta::load_callback([&]() -> caf::error {
    x.op = static_cast<adapter_op>(op);
    return caf::none;
  });
  return f(caf::meta::type_name("lf.adapter_event"), x.seq, op, x.name, x.version, x.source, x.at_ms, load);
}

template <class Inspector>
typename Inspector::result_type inspect(Inspector& f, adapter_record& x) {
  return f(caf::meta::type_name("lf.adapter_record"), x.name, x.latest, x.removed, x.source, x.updated_ms);
}

} // namespace lf::cache
