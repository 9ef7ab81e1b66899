// The router's adapter registry: operators' commands, the check on a worker before an add, the
// log, broadcasting events to the workers, pinning requests to a version, prefetch.
#include <algorithm>
#include <chrono>
#include <filesystem>

#include <caf/send.hpp>
#include <caf/stateful_actor.hpp>
#include <caf/typed_event_based_actor.hpp>

#include "core/log.hpp"
#include "router/router_state.hpp"

namespace lf::router {

namespace {

namespace fs = std::filesystem;

actors::adapter_reply refusal(serve_errc code, std::string message) {
  actors::adapter_reply r;
  r.error = code;
  r.message = std::move(message);
  return r;
}

/// `path` resolved (symlinks too), if it lies strictly inside one of `roots`.
std::optional<std::string> inside_roots(const std::string& path, const std::vector<std::string>& roots) {
  std::error_code ec;
  const auto p = fs::weakly_canonical(fs::absolute(path, ec), ec);
  if (ec)
    return std::nullopt;
  for (const auto& root : roots) {
    const auto r = fs::weakly_canonical(fs::absolute(root, ec), ec);
    if (ec)
      continue;
    const auto rel = p.lexically_relative(r);
    if (!rel.empty() && rel != "." && *rel.begin() != "..")
      return p.string();
  }
  return std::nullopt;
}

/// The refusal of an operation the registry's state does not allow (adapter_registry::next):
/// adding a live name is a bad request; updating or removing one that is not live names an
/// unknown adapter (docs/protocol.md, adapters_result).
actors::adapter_reply conflict(cache::adapter_op op, std::string why) {
  return refusal(op == cache::adapter_op::add ? serve_errc::invalid_request : serve_errc::unknown_adapter,
                 std::move(why));
}

std::int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

std::optional<std::string> router_state::pin_adapter(request_draft& d) const {
  auto res = adapters_->registry.resolve(d.adapter);
  if (res.error != serve_errc::none)
    return std::move(res.message);
  d.adapter = std::move(res.key);
  return std::nullopt;
}

void router_state::catch_up_adapters(const std::vector<cache::adapter_event>& copy, const std::string& from) {
  const auto& mine = adapters_->registry.log();
  if (copy.size() <= mine.size() || !cache::is_prefix_of(mine, copy))
    return;  // nothing newer, or a different history: this router's log stands (the worker follows it)
  log::info("router", "adapter registry caught up from a worker",
            {{"worker", from}, {"events", copy.size() - mine.size()}, {"seq", copy.back().seq}});
  const std::vector<cache::adapter_event> newer(copy.begin() + static_cast<std::ptrdiff_t>(mine.size()), copy.end());
  for (const auto& e : newer)
    commit_adapter_event(e);  // logged to its file, applied, and sent to its other workers
}

void router_state::replay_adapters(const worker_entry& w) const {
  // Sent even when empty: a worker that kept a copy from a router that has since started over
  // must learn that its copy is stale.
  self_->send(w.handle, actors::worker_adapters{adapters_->registry.log(), true});
}

actors::adapter_reply router_state::adapter_rows(const std::string& name) const {
  actors::adapter_reply r;
  r.seq = adapters_->registry.last_seq();
  for (auto& rec : adapters_->registry.list()) {
    if (!name.empty() && rec.name != name)
      continue;
    const auto holders = placement_.resident_count(cache::adapter_key(rec.name, rec.latest));
    r.resident.push_back(rec.removed ? 0 : holders);
    r.adapters.push_back(std::move(rec));
  }
  return r;
}

actors::adapter_reply router_state::commit_adapter_event(const cache::adapter_event& e) {
  try {
    if (adapters_->file)
      adapters_->file->append(e);
  } catch (const std::exception& err) {
    log::error("router", "adapter log write failed", {{"error", err.what()}});
    return refusal(serve_errc::internal, err.what());
  }
  adapters_->registry.apply(e);
  for (const auto& [id, w] : workers_)
    self_->send(w.handle, actors::worker_adapters{{e}, false});
  const auto key = cache::adapter_key(e.name, e.version);
  log::info("router", "adapter registry changed",
            {{"op", cache::to_string(e.op)}, {"adapter", key}, {"seq", e.seq}, {"path", e.source.path}});
  if (e.op != cache::adapter_op::remove)
    prefetch(key, cfg_.prefetch_copies);
  return adapter_rows(e.name);
}

std::uint32_t router_state::prefetch(const std::string& key, std::uint32_t copies) {
  const auto chosen = placement_.prefetch(key, copies);
  for (auto wid : chosen)
    self_->send(workers_.at(wid).handle, actors::worker_prefetch{key});
  counters_.adapter_prefetches += chosen.size();
  return static_cast<std::uint32_t>(chosen.size());
}

void router_state::note_adapter_demand(const std::string& key) {
  demand_.note(key);
  if (key.empty())
    return;
  const auto s = placement_.spread(key);
  // A prefetch is a load too: it respects the bound on workers loading one adapter at once.
  const auto bound = placement_.options().max_concurrent_loads;
  if (bound > 0 && s.loading >= bound)
    return;
  if (s.room > 0 && demand_.wants_copy(key, s.holders, s.live, router_clock::now())) {  // room: see prefetch
    log::debug("router", "adapter demand: one more copy", {{"adapter", key}, {"holders", s.holders},
                                                           {"recent", demand_.recent(key)}});
    prefetch(key, 1);
  }
}

void router_state::adapter_command(actors::adapter_command cmd,
                                   caf::typed_response_promise<actors::adapter_reply> rp) {
  auto& reg = adapters_->registry;
  if (cmd.op == "list")
    return static_cast<void>(rp.deliver(adapter_rows("")));
  const auto op = cache::parse_adapter_op(cmd.op);
  if (!op)
    return static_cast<void>(rp.deliver(refusal(serve_errc::invalid_request,
                                                "unknown adapter operation \"" + cmd.op
                                                  + "\" (list, add, update, remove)")));
  if (!valid_adapter_name(cmd.name) || cmd.name.find('@') != std::string::npos)
    return static_cast<void>(rp.deliver(refusal(
      serve_errc::invalid_request, "adapter name \"" + cmd.name
                                     + "\" is not a relative path of [A-Za-z0-9._-] components")));
  std::string why;
  if (*op == cache::adapter_op::remove) {
    auto e = reg.next(*op, cmd.name, {}, wall_ms(), why);
    return static_cast<void>(rp.deliver(e ? commit_adapter_event(*e) : conflict(*op, why)));
  }
  // add / update: the state must allow it now (and again once the check is back) ...
  if (!reg.next(*op, cmd.name, {}, 0, why))
    return static_cast<void>(rp.deliver(conflict(*op, why)));
  if (cfg_.adapter_roots.empty())
    return static_cast<void>(rp.deliver(refusal(
      serve_errc::invalid_request, "no adapter roots are configured, so nothing can be added "
                                   "([router] adapter_roots, serve --adapter-roots)")));
  auto path = inside_roots(cmd.path, cfg_.adapter_roots);
  if (cmd.path.empty() || !path) {
    std::string roots;
    for (const auto& r : cfg_.adapter_roots)
      roots += (roots.empty() ? "" : ", ") + r;
    return static_cast<void>(rp.deliver(refusal(
      serve_errc::invalid_request, "adapter path \"" + cmd.path + "\" is outside the allowed roots (" + roots + ")")));
  }
  // ... and a worker, which has the base model, checks the files.
  const auto checker = placement_.least_loaded();
  if (!checker)
    return static_cast<void>(rp.deliver(refusal(
      serve_errc::overloaded, "no worker has registered to check the adapter against its model; "
                              "try again when one has")));
  self_->request(workers_.at(*checker).handle, std::chrono::seconds(60), actors::adapter_check{*path, cfg_.max_adapter_rank})
    .then(
      [this, rp, op = *op, name = cmd.name](actors::adapter_checked& c) mutable {
        if (!c.error.empty())
          return static_cast<void>(rp.deliver(refusal(serve_errc::invalid_request,
                                                      "adapter " + name + " refused: " + c.error)));
        std::string why2;
        auto e = adapters_->registry.next(op, name, std::move(c.source), wall_ms(), why2);
        rp.deliver(e ? commit_adapter_event(*e) : conflict(op, why2));
      },
      [rp](caf::error& err) mutable {
        rp.deliver(refusal(serve_errc::internal, "the worker checking the adapter did not answer: "
                                                   + caf::to_string(err)));
      });
}

} // namespace lf::router
