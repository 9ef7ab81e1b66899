#include "router/placement_book.hpp"

#include <algorithm>
#include <chrono>

namespace lf::router {

bool worker_book::resident(const std::string& key) const {
  return std::find(resident_adapters.begin(), resident_adapters.end(), key) != resident_adapters.end();
}

bool worker_book::expects(const std::string& key) const {
  return placed_adapters.count(key) != 0 || unreported_adapters.count(key) != 0;
}

placement_book::placement_book(placement_options opts, std::uint32_t capacity)
  : capacity_(capacity), placer_(opts) {}

void placement_book::add(actors::worker_id w, std::uint32_t max_seqs, std::vector<std::string> adapters) {
  auto& b = books_[w];
  b.max_seqs = max_seqs;
  b.resident_adapters = std::move(adapters);
}

void placement_book::remove(actors::worker_id w) {
  books_.erase(w);
  prices_.forget(w);
}

const worker_book* placement_book::find(actors::worker_id w) const {
  auto it = books_.find(w);
  return it == books_.end() ? nullptr : &it->second;
}

void placement_book::report(actors::worker_id w, std::vector<std::string> adapters, std::uint32_t slots_free,
                            const std::vector<load_observation>& loads) {
  auto it = books_.find(w);
  if (it == books_.end())
    return;
  prices_.observe(w, loads);
  auto& b = it->second;
  // Its slots: resident + free ones (loading ones are neither), the most seen.
  b.adapter_slots = std::max(b.adapter_slots, static_cast<std::uint32_t>(adapters.size()) + slots_free);
  b.resident_adapters = std::move(adapters);
  b.adapter_slots_free = slots_free;
  b.unreported_adapters.clear();
}

bool placement_book::drain(actors::worker_id w) {
  auto it = books_.find(w);
  if (it == books_.end() || it->second.draining)
    return false;
  it->second.draining = true;
  return true;
}

bool placement_book::undrain(actors::worker_id w) {
  auto it = books_.find(w);
  if (it == books_.end() || !it->second.draining)
    return false;
  it->second.draining = false;
  return true;
}

bool placement_book::draining(actors::worker_id w) const {
  const auto* b = find(w);
  return b != nullptr && b->draining;
}

worker_state placement_book::state(actors::worker_id w) const {
  const auto* b = find(w);
  if (b == nullptr)
    return worker_state::lost;
  if (!b->draining)
    return worker_state::serving;
  // A drain's requests stay on the books until they move off (worker_moved) or end there.
  return b->inflight > 0 ? worker_state::draining : worker_state::drained;
}

std::uint32_t placement_book::accepting() const {
  std::uint32_t n = 0;
  for (const auto& [id, b] : books_)
    n += b.draining ? 0 : 1;
  return n;
}

std::vector<worker_view> placement_book::views(const std::string& adapter) const {
  std::vector<worker_view> out;
  out.reserve(books_.size());
  // A worker not measured yet (just joined, or never busy) is priced at the mean of the measured
  // workers' rates, not at the prior: where the fleet is much faster than the prior, an idle new
  // worker would otherwise look slower than a busy measured one, get nothing and never be measured.
  std::vector<bool> unmeasured;
  service_speed mean{0, 0};
  std::size_t measured = 0;
  for (const auto& [id, w] : books_) {
    if (w.draining)
      continue;
    bool placed = false, resident = false;
    if (!adapter.empty()) {
      placed = w.expects(adapter);
      resident = w.resident(adapter);
    }
    worker_view v;
    v.id = id;
    v.inflight = w.inflight;
    v.capacity = capacity_;
    v.load_tokens = w.load_tokens;
    v.has_adapter = placed || resident;
    v.loading = placed && !resident;
    v.prompt_ahead = w.prompt_ahead;
    v.output_ahead = w.output_ahead;
    v.speed = w.speed.speed();
    v.adapters_in_use = static_cast<std::uint32_t>(w.placed_adapters.size());
    v.adapter_slots = w.adapter_slots;
    unmeasured.push_back(w.speed.windows() == 0);
    if (!unmeasured.back()) {
      mean.prefill_ms_per_token += v.speed.prefill_ms_per_token;
      mean.decode_ms_per_token += v.speed.decode_ms_per_token;
      ++measured;
    }
    out.push_back(v);
  }
  if (measured > 0) {
    mean.prefill_ms_per_token /= static_cast<double>(measured);
    mean.decode_ms_per_token /= static_cast<double>(measured);
    for (std::size_t i = 0; i < out.size(); ++i)
      if (unmeasured[i])
        out[i].speed = mean;
  }
  return out;
}

std::optional<actors::worker_id> placement_book::choose(const std::string& adapter, std::uint32_t prompt_tokens,
                                                        double waited_ms,
                                                        const std::map<actors::worker_id, std::uint32_t>& cached,
                                                        const std::map<actors::worker_id, std::uint64_t>& keys) {
  placement_request q;
  q.needs_adapter = !adapter.empty();
  q.prompt_tokens = prompt_tokens;
  const auto policy = placer_.options().policy;
  if (q.needs_adapter && (policy == placement_policy::priced || policy == placement_policy::cache_aware))
    q.load_ms = prices_.price_ms(adapter) * placer_.options().load_price_weight;
  q.waited_ms = waited_ms;
  auto vs = views(adapter);
  if (!cached.empty())
    for (auto& v : vs)
      if (auto it = cached.find(v.id); it != cached.end())
        v.cached_prefix_tokens = it->second;
  for (auto& v : vs) {
    auto k = keys.find(v.id);
    if (k == keys.end())
      continue;
    const auto& held = books_.at(v.id).inflight_blocks;
    if (auto h = held.find(k->second); h != held.end())
      v.sharing = h->second;
  }
  return placer_.choose(vs, q);
}

void placement_book::place(actors::worker_id wid, placement_ticket& t, std::uint64_t prompt_tokens,
                           std::uint64_t max_tokens, std::uint64_t streamed, cost_clock::time_point now,
                           std::uint64_t cached, std::vector<std::uint64_t> blocks) {
  auto& w = books_.at(wid);
  t.blocks = std::move(blocks);
  for (auto h : t.blocks)
    ++w.inflight_blocks[h];
  if (w.inflight++ == 0)
    w.speed.busy(now, true);
  w.load_tokens += t.cost;
  // A resumed request prefills its prompt and the tokens it streamed, then produces the rest.
  t.prompt_ahead = prompt_tokens + streamed - std::min(cached, prompt_tokens + streamed);
  t.output_ahead = max_tokens - std::min(max_tokens, streamed);
  w.prompt_ahead += t.prompt_ahead;
  w.output_ahead += t.output_ahead;
  if (!t.adapter.empty()) {
    ++w.placed_adapters[t.adapter];
    w.unreported_adapters.insert(t.adapter);
  }
}

void placement_book::unplace(actors::worker_id wid, placement_ticket& t, cost_clock::time_point now) {
  auto it = books_.find(wid);
  if (it == books_.end()) {
    t.blocks.clear();
    return;
  }
  auto& w = it->second;
  for (auto h : t.blocks)
    if (auto b = w.inflight_blocks.find(h); b != w.inflight_blocks.end() && --b->second == 0)
      w.inflight_blocks.erase(b);
  t.blocks.clear();
  if (--w.inflight == 0)
    w.speed.busy(now, false);
  w.load_tokens -= std::min(w.load_tokens, t.cost);
  w.prompt_ahead -= std::min(w.prompt_ahead, t.prompt_ahead);
  w.output_ahead -= std::min(w.output_ahead, t.output_ahead);
  t.prompt_ahead = t.output_ahead = 0;
  if (!t.adapter.empty()) {
    auto a = w.placed_adapters.find(t.adapter);
    if (a != w.placed_adapters.end() && --a->second == 0)
      w.placed_adapters.erase(a);
  }
}

void placement_book::streamed(actors::worker_id wid, placement_ticket& t, cost_clock::time_point now) {
  auto it = books_.find(wid);
  if (it == books_.end())
    return;
  auto& w = it->second;
  const std::uint64_t prompt = t.prompt_ahead;  // non-zero only with the first token here
  w.prompt_ahead -= std::min(w.prompt_ahead, prompt);
  t.prompt_ahead = 0;
  if (t.output_ahead > 0) {
    --t.output_ahead;
    w.output_ahead -= std::min<std::uint64_t>(w.output_ahead, 1);
  }
  w.speed.served(now, prompt, 1);
}

bool placement_book::saturated() const {
  bool any = false;
  for (const auto& [id, w] : books_) {
    if (w.draining)
      continue;
    any = true;
    const auto slots = w.max_seqs > 0 ? std::min(w.max_seqs, capacity_) : capacity_;
    if (w.inflight < slots)
      return false;  // a free batch slot: the next request starts at once
  }
  return any;
}

std::optional<actors::worker_id> placement_book::least_loaded() const {
  std::optional<actors::worker_id> best;
  std::uint64_t load = 0;
  for (const auto& [id, w] : books_)
    if (!w.draining && (!best || w.load_tokens < load)) {
      best = id;
      load = w.load_tokens;
    }
  return best;
}

std::uint32_t placement_book::resident_count(const std::string& key) const {
  std::uint32_t n = 0;
  for (const auto& [id, w] : books_)
    n += w.resident(key) ? 1 : 0;
  return n;
}

adapter_spread placement_book::spread(const std::string& key) const {
  adapter_spread s;
  for (const auto& [id, w] : books_) {
    if (w.draining)
      continue;
    ++s.live;
    const bool holds = w.holds(key);
    s.holders += holds ? 1 : 0;
    s.loading += holds && !w.resident(key) ? 1 : 0;
    s.room += !holds && w.adapter_slots_free > 0 ? 1 : 0;
  }
  return s;
}

std::vector<actors::worker_id> placement_book::prefetch(const std::string& key, std::uint32_t copies) {
  std::vector<std::pair<actors::worker_id, worker_book*>> order;
  for (auto& [id, w] : books_)
    if (!w.draining && !w.holds(key) && w.adapter_slots_free > 0)
      order.emplace_back(id, &w);
  std::stable_sort(order.begin(), order.end(),
                   [](const auto& a, const auto& b) { return a.second->load_tokens < b.second->load_tokens; });
  order.resize(std::min<std::size_t>(order.size(), copies));
  std::vector<actors::worker_id> out;
  for (auto& [id, w] : order) {
    w->unreported_adapters.insert(key);
    out.push_back(id);
  }
  return out;
}

} // namespace lf::router
