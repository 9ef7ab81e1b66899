// The router's prefix-cache index: the workers' prefix_events in, each request's cached prefix
// per worker out (router/prefix_index.hpp holds the index; placement credits what it answers).
#include <map>
#include <utility>

#include <caf/typed_event_based_actor.hpp>

#include "cache/cache_salt.hpp"
#include "cache/prefix_events.hpp"
#include "core/log.hpp"
#include "router/router_state.hpp"

namespace lf::router {

void router_state::on_prefix_events(actors::prefix_events& msg) {
  auto it = workers_.find(msg.wid);
  if (it == workers_.end())
    return;  // a lost worker's loop, still running: its entries went with it
  auto& w = it->second;
  w.cache_block_size = msg.block_size;
  w.tenant_isolation = msg.tenant_isolation;
  cache::prefix_event_batch b;
  b.seq = msg.seq;
  b.snapshot = msg.snapshot;
  b.stored = std::move(msg.stored);
  b.removed = std::move(msg.removed);
  if (prefix_.apply(msg.wid, b) == index_outcome::gap) {
    log::warn("router", "gap in a worker's prefix-cache events: asking for a snapshot",
              {{"worker", w.info.name}, {"seq", msg.seq}});
    ++counters_.prefix_resyncs;
    self_->send(w.handle, actors::resync_atom::value);
  }
}

cached_tokens router_state::cached_of(const validated_request& req, const std::vector<std::int32_t>& sent) const {
  cached_tokens out;
  const auto policy = placement_.options().policy;
  // cache_aware's guard needs the blocks of every request placed, also before any is cached.
  const bool guard = policy == placement_policy::cache_aware;
  if ((policy != placement_policy::priced && !guard) || (prefix_.entries() == 0 && !guard))
    return out;
  std::vector<std::int32_t> tokens = req.prompt();
  tokens.insert(tokens.end(), sent.begin(), sent.end());
  if (tokens.size() < 2)
    return out;
  const auto tag = cache::adapter_tag(req.adapter());
  // Workers with the same block size and isolation rule share one hash chain (usually all do).
  std::map<std::pair<std::uint32_t, bool>, std::map<actors::worker_id, std::uint32_t>> groups;
  for (const auto& [id, w] : workers_)
    if (w.cache_block_size > 0)
      groups[{w.cache_block_size, w.tenant_isolation}][id] = 0;
  for (auto& [key, members] : groups) {
    const auto [bs, tenant] = key;
    const auto salt = cache::request_salt(tenant ? cache::prefix_isolation::tenant : cache::prefix_isolation::shared,
                                          req.tenant());
    // The last-token rule: a worker reuses at most (L - 1) / block_size blocks.
    const auto hashes = cache::public_block_hashes(tokens, bs, salt, tag, (tokens.size() - 1) / bs);
    if (prefix_.entries() > 0)
      for (auto [wid, blocks] : prefix_.longest_prefixes(hashes))
        if (members.count(wid) != 0 && blocks > 0) {
          out.tokens[wid] = blocks * bs;
          out.keys[wid] = hashes[blocks - 1];
        }
    if (guard)
      for (const auto& m : members)
        out.blocks[m.first] = hashes;
  }
  return out;
}

} // namespace lf::router
