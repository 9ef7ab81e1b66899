#include "cache/adapter_cache.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf::cache {

std::string format_mib(std::size_t bytes) {
  const auto tenths = (bytes * 10 + (std::size_t{1} << 19)) >> 20;
  return std::to_string(tenths / 10) + "." + std::to_string(tenths % 10) + " MiB";
}

std::string_view to_string(adapter_state s) noexcept {
  switch (s) {
    case adapter_state::absent: return "absent";
    case adapter_state::queued: return "queued";
    case adapter_state::loading: return "loading";
    case adapter_state::ready: return "ready";
    case adapter_state::failed: return "failed";
  }
  return "unknown";
}

adapter_cache::adapter_cache(adapter_cache_config cfg) : cfg_(cfg) {
  if (cfg.budget_bytes == 0 || cfg.max_adapters == 0 || cfg.max_names == 0)
    throw std::invalid_argument("adapter_cache: budget_bytes, max_adapters and max_names must be "
                                "> 0");
}

adapter_cache::entry& adapter_cache::at(adapter_id id) {
  auto it = entries_.find(id);
  if (it == entries_.end())
    throw std::out_of_range("adapter_cache: unknown adapter id " + std::to_string(id.value()));
  return it->second;
}

const adapter_info& adapter_cache::info(adapter_id id) const {
  auto it = entries_.find(id);
  if (it == entries_.end())
    throw std::out_of_range("adapter_cache: unknown adapter id " + std::to_string(id.value()));
  return it->second.info;
}

adapter_state adapter_cache::state(adapter_id id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? adapter_state::absent : it->second.info.state;
}

adapter_id adapter_cache::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? base_model : it->second;
}

// -- requests -----------------------------------------------------------------------------------

adapter_acquire adapter_cache::acquire(const std::string& name, adapter_clock::time_point now) {
  adapter_acquire r;
  auto found = by_name_.find(name);
  if (found == by_name_.end()) {
    if (by_name_.size() >= cfg_.max_names)
      collect_names();
    if (by_name_.size() >= cfg_.max_names) {
      ++counters_.misses;
      r.state = adapter_state::failed;
      r.error = serve_errc::overloaded;
      r.message = "adapter \"" + name + "\": the worker tracks " + std::to_string(cfg_.max_names)
                  + " adapter names, all in use; retry later";
      return r;
    }
    const adapter_id id{next_id_++};
    entry e;
    e.info.name = name;
    entries_.emplace(id, std::move(e));
    found = by_name_.emplace(name, id).first;
  }
  r.id = found->second;
  auto& e = at(r.id);
  e.last_use = ++clock_;
  auto& st = e.info.state;
  if (st == adapter_state::ready)
    ++counters_.hits;
  else
    ++counters_.misses;
  if (st == adapter_state::failed) {
    if (now - e.failed_at < cfg_.retry_after) {
      r.state = st;
      r.error = e.info.error;
      r.message = e.info.message;
      return r;
    }
    st = adapter_state::absent;  // retry: forget the old failure
    e.info.error = serve_errc::none;
    e.info.message.clear();
  }
  ++e.info.refs;
  if (st == adapter_state::absent)
    want_load(r.id, e, r.actions);
  r.state = st;
  return r;
}

adapter_actions adapter_cache::release(adapter_id id) {
  auto& e = at(id);
  if (e.info.refs == 0)
    throw std::logic_error("adapter_cache::release: adapter \"" + e.info.name
                           + "\" holds no reference");
  adapter_actions out;
  if (--e.info.refs == 0 && e.info.state == adapter_state::queued) {
    e.info.state = adapter_state::absent;  // nobody waits for it any more
    --queued_count_;
  }
  drop_if_retired(id, e, out);
  fit_budget(out);
  start_queued(out);
  return out;
}

// -- load results -------------------------------------------------------------------------------

adapter_actions adapter_cache::loaded(adapter_id id, std::size_t bytes,
                                      adapter_clock::time_point now) {
  auto& e = at(id);
  if (e.info.state != adapter_state::loading)
    throw std::logic_error("adapter_cache::loaded: adapter \"" + e.info.name + "\" is "
                           + std::string(to_string(e.info.state)) + ", not loading");
  if (bytes > cfg_.budget_bytes)
    return load_failed(id, serve_errc::unknown_adapter,
                       "adapter \"" + e.info.name + "\" needs " + format_mib(bytes)
                         + ", more than the whole adapter cache budget of "
                         + format_mib(cfg_.budget_bytes),
                       now);
  adapter_actions out;
  --loading_count_;
  e.info.state = adapter_state::ready;
  e.info.bytes = bytes;
  ++resident_count_;
  bytes_ += bytes;
  ++counters_.loads;
  out.settled.push_back(id);
  drop_if_retired(id, e, out);
  fit_budget(out);
  start_queued(out);
  return out;
}

adapter_actions adapter_cache::load_failed(adapter_id id, serve_errc error, std::string message,
                                           adapter_clock::time_point now) {
  auto& e = at(id);
  if (e.info.state != adapter_state::loading)
    throw std::logic_error("adapter_cache::load_failed: adapter \"" + e.info.name + "\" is "
                           + std::string(to_string(e.info.state)) + ", not loading");
  adapter_actions out;
  --loading_count_;
  e.info.state = adapter_state::failed;
  e.info.error = error == serve_errc::none ? serve_errc::unknown_adapter : error;
  e.info.message = std::move(message);
  e.failed_at = now;
  ++counters_.failures;
  out.settled.push_back(id);
  start_queued(out);
  return out;
}

// -- room ---------------------------------------------------------------------------------------

void adapter_cache::want_load(adapter_id id, entry& e, adapter_actions& out) {
  if (make_room(out)) {
    e.info.state = adapter_state::loading;
    ++loading_count_;
    out.start_loads.push_back(id);
  } else {
    e.info.state = adapter_state::queued;
    e.queued_at = ++clock_;
    ++queued_count_;
  }
}

bool adapter_cache::make_room(adapter_actions& out) {
  while (occupied() >= cfg_.max_adapters)
    if (!evict_one(out))
      return false;
  fit_budget(out);
  return bytes_ <= cfg_.budget_bytes;
}

void adapter_cache::fit_budget(adapter_actions& out) {
  while (bytes_ > cfg_.budget_bytes)
    if (!evict_one(out))
      return;
}

void adapter_cache::start_queued(adapter_actions& out) {
  while (queued_count_ > 0) {
    entry* next = nullptr;
    adapter_id next_id;
    for (auto& [id, e] : entries_)
      if (e.info.state == adapter_state::queued && (next == nullptr || e.queued_at < next->queued_at)) {
        next = &e;
        next_id = id;
      }
    if (next == nullptr || !make_room(out))
      return;
    next->info.state = adapter_state::loading;
    --queued_count_;
    ++loading_count_;
    out.start_loads.push_back(next_id);
  }
}

bool adapter_cache::evict_one(adapter_actions& out) {
  entry* victim = nullptr;
  adapter_id victim_id;
  for (auto& [id, e] : entries_)
    if (e.info.state == adapter_state::ready && e.info.refs == 0
        && (victim == nullptr || e.last_use < victim->last_use)) {
      victim = &e;
      victim_id = id;
    }
  if (victim == nullptr)
    return false;
  evict(victim_id, *victim, out);
  return true;
}

void adapter_cache::evict(adapter_id id, entry& e, adapter_actions& out) {
  e.info.state = adapter_state::absent;
  bytes_ -= e.info.bytes;
  e.info.bytes = 0;
  --resident_count_;
  ++counters_.evictions;
  out.evict.push_back(id);
}

void adapter_cache::drop_if_retired(adapter_id id, entry& e, adapter_actions& out) {
  if (e.retired && e.info.refs == 0 && e.info.state == adapter_state::ready)
    evict(id, e, out);
}

adapter_actions adapter_cache::retire(const std::string& name) {
  adapter_actions out;
  auto found = by_name_.find(name);
  if (found == by_name_.end())
    return out;
  auto& e = at(found->second);
  e.retired = true;
  drop_if_retired(found->second, e, out);
  start_queued(out);
  return out;
}

void adapter_cache::collect_names() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    const auto& i = it->second.info;
    if (i.refs == 0 && (i.state == adapter_state::absent || i.state == adapter_state::failed)) {
      by_name_.erase(i.name);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
}

// -- queries ------------------------------------------------------------------------------------

std::vector<adapter_id> adapter_cache::resident() const {
  std::vector<std::pair<std::uint64_t, adapter_id>> v;
  for (const auto& [id, e] : entries_)
    if (e.info.state == adapter_state::ready)
      v.emplace_back(e.last_use, id);
  std::sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<adapter_id> out;
  for (const auto& p : v)
    out.push_back(p.second);
  return out;
}

adapter_cache_stats adapter_cache::stats() const {
  auto s = counters_;
  s.loaded = resident_count_;
  s.bytes = bytes_;
  s.loading = loading_count_;
  s.queued = queued_count_;
  return s;
}

} // namespace lf::cache
