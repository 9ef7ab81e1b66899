#include "gateway/zmq/stats_reply.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>

namespace lf::gateway {

proto::stats_reply flatten_stats(const actors::router_stats& rs, std::size_t gateway_live) {
  proto::stats_reply r;
  auto& v = r.values;
  v["gateway.live"] = static_cast<double>(gateway_live);
  for (const auto& f : actors::router_fields)
    v[std::string("router.") + f.name] = f.of(rs);
  for (const auto& l : rs.loads) {
    const auto p = "worker." + std::to_string(l.wid.value()) + ".";
    v[p + "waiting"] = l.waiting;
    v[p + "running"] = l.running;
    v[p + "paused"] = l.paused;
    v[p + "waiting_tokens"] = static_cast<double>(l.waiting_tokens);
    v[p + "running_tokens"] = static_cast<double>(l.running_tokens);
    v[p + "free_blocks"] = l.free_blocks;
    v[p + "total_blocks"] = l.total_blocks;
    v[p + "finished"] = static_cast<double>(l.finished);
    v[p + "failed"] = static_cast<double>(l.failed);
    v[p + "cancelled"] = static_cast<double>(l.cancelled);
    v[p + "adapters"] = static_cast<double>(l.adapters.size());
    v[p + "adapter_slots_free"] = l.adapter_slots_free;
  }
  // Each worker's state by number (core/worker_state.hpp: 0 serving, 1 draining, 2 drained,
  // 3 lost); lost workers keep a row with their state only.
  // and its name as a key of its own ("worker.N.name:pod-a/1" = 1; stats carry numbers only), so
  // `lorafleet status` shows which node joined.
  for (const auto& m : rs.metrics)
    if (m.wid.value() != 0) {
      const auto p = "worker." + std::to_string(m.wid.value()) + ".";
      v[p + "state"] = static_cast<double>(m.state);
      if (p.size() + 5 + m.name.size() <= proto::max_name_bytes)
        v[p + "name:" + m.name] = 1;
    }
  // Adapter residency: "adapter.NAME.resident" (workers holding it now), ".loads" (loads over
  // every worker, reloads after evictions included) and ".last_load_ms" (the slowest worker's
  // last load). Names whose keys would pass the protocol's name limit, and adapters past the
  // entry budget, are left out (`adapters_unlisted` counts them).
  struct agg {
    double resident = 0, loads = 0, last_ms = 0;
  };
  std::map<std::string, agg> by_name;
  for (const auto& l : rs.loads) {
    for (const auto& a : l.adapters)
      by_name[a].resident += 1;
    for (const auto& rec : l.loads_by_adapter) {
      auto& x = by_name[rec.name];
      x.loads += static_cast<double>(rec.loads);
      x.last_ms = std::max(x.last_ms, rec.last_load_ms);
    }
  }
  double unlisted = 0;
  const std::string longest = ".last_load_ms";
  for (const auto& [name, x] : by_name) {
    const auto p = "adapter." + name;
    if (p.size() + longest.size() > proto::max_name_bytes || v.size() + 3 > proto::max_stats_entries - 1) {
      ++unlisted;
      continue;
    }
    v[p + ".resident"] = x.resident;
    v[p + ".loads"] = x.loads;
    v[p + ".last_load_ms"] = x.last_ms;
  }
  v["gateway.adapters_unlisted"] = unlisted;
  return r;
}

proto::adapters_result adapters_result_of(const actors::adapter_reply& r) {
  proto::adapters_result out;
  if (r.error != serve_errc::none)
    out.error = r.error;
  out.message = r.message;
  out.seq = r.seq;
  // One frame holds the answer: rows past the frame (or row) limit are counted, not sent.
  std::size_t budget = proto::max_frame_bytes - 64 * 1024 - out.message.size();
  for (std::size_t i = 0; i < r.adapters.size(); ++i) {
    const auto& a = r.adapters[i];
    const std::size_t cost = 256 + a.name.size() + a.source.path.size() + 32 * a.source.targets.size();
    if (out.adapters.size() == proto::max_adapter_rows || cost > budget) {
      out.message += (out.message.empty() ? "" : "; ") + std::to_string(r.adapters.size() - i)
                     + " more adapter(s) not listed (one reply holds " + std::to_string(i) + ")";
      break;
    }
    budget -= cost;
    proto::adapter_row row;
    row.name = a.name;
    row.version = a.latest;
    row.removed = a.removed;
    row.path = a.source.path;
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(a.source.hash));
    row.hash = hex;
    row.rank = a.source.rank;
    for (const auto& t : a.source.targets)
      row.targets += (row.targets.empty() ? "" : ",") + t;
    row.bytes = a.source.bytes;
    row.updated_ms = a.updated_ms;
    row.resident = i < r.resident.size() ? r.resident[i] : 0;
    out.adapters.push_back(std::move(row));
  }
  return out;
}

} // namespace lf::gateway
