// backend_of: a worker actor over a worker_runtime. Its own library (lf_worker_backend), so the
// actors and the router link without torch; only what builds real workers links the runtime.
#include "actors/worker_actor.hpp"

#include "worker/serving_loop.hpp"
#include "worker/worker_runtime.hpp"

namespace lf::actors {

worker_backend backend_of(std::shared_ptr<worker::worker_runtime> rt) {
  worker_backend b;
  b.loop = &rt->loop();
  b.context_window = rt->context_window();
  b.vocab_size = static_cast<std::uint32_t>(rt->vocab_size());
  b.block_size = rt->block_size();
  b.max_seqs = rt->settings().max_seqs;
  b.max_adapters = rt->settings().max_adapters;
  auto* raw = rt.get();
  b.loaded_adapters = [raw] { return raw->adapters(); };
  b.servable_adapters = [raw] { return raw->servable_adapters(); };
  b.adapter_records = [raw] {
    std::vector<adapter_load_cost> out;
    for (auto& r : raw->adapter_records())
      out.push_back({r.name, r.loads, r.last_load_ms, r.bytes});
    return out;
  };
  b.adapter_log = [raw] { return raw->adapter_log(); };
  b.apply_adapter_events = [raw](const std::vector<cache::adapter_event>& ev, bool whole) {
    raw->apply_adapter_events(ev, whole);
  };
  b.adapter_slots_free = [raw] { return raw->adapter_slots_free(); };
  b.prefetch_adapter = [raw](const std::string& key) { return raw->prefetch_adapter(key); };
  b.check_adapter = [raw](const std::string& dir, std::uint32_t max_rank) { return raw->check_adapter(dir, max_rank); };
  b.owner = std::move(rt);
  return b;
}

} // namespace lf::actors
