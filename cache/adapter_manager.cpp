#include "cache/adapter_manager.hpp"

#include <algorithm>
#include <exception>

namespace lf::cache {

adapter_manager::adapter_manager(adapter_cache_config cfg, adapter_load_fn load,
                                 adapter_name_check check, unsigned loader_threads)
  : load_(std::move(load)), check_(std::move(check)), cache_(cfg) {
  if (!load_)
    throw std::invalid_argument("adapter_manager: a load function is required");
  if (loader_threads == 0)
    throw std::invalid_argument("adapter_manager: at least one loader thread is required");
  for (unsigned i = 0; i < loader_threads; ++i)
    loaders_.emplace_back([this] { loader_main(); });
}

adapter_manager::~adapter_manager() {
  {
    std::lock_guard<std::mutex> g(mtx_);
    stopping_ = true;
    jobs_.clear();
  }
  jobs_cv_.notify_all();
  for (auto& t : loaders_)
    t.join();
}

void adapter_manager::set_listener(std::function<void()> on_settled) {
  // Waits for a call in progress: once this returns, the old listener is never called again.
  std::lock_guard<std::mutex> g(listener_mtx_);
  listener_ = std::move(on_settled);
}

adapter_acquire adapter_manager::acquire(const std::string& name) {
  if (check_) {
    if (auto why = check_(name); !why.empty()) {
      adapter_acquire r;
      r.state = adapter_state::failed;
      r.error = serve_errc::invalid_request;
      r.message = std::move(why);
      return r;
    }
  }
  std::lock_guard<std::mutex> g(mtx_);
  auto r = cache_.acquire(name, adapter_clock::now());
  apply(r.actions);
  return r;
}

void adapter_manager::release(adapter_id id) {
  std::lock_guard<std::mutex> g(mtx_);
  apply(cache_.release(id));
}

void adapter_manager::retire(const std::string& name) {
  std::lock_guard<std::mutex> g(mtx_);
  apply(cache_.retire(name));
}

std::uint32_t adapter_manager::free_slots() const {
  std::lock_guard<std::mutex> g(mtx_);
  return free_slots_locked();
}

std::uint32_t adapter_manager::free_slots_locked() const {
  const auto st = cache_.stats();
  const auto used = st.loaded + st.loading;
  return used >= cache_.config().max_adapters ? 0 : cache_.config().max_adapters - used;
}

bool adapter_manager::prefetch(const std::string& name) {
  {
    std::lock_guard<std::mutex> g(mtx_);
    const auto id = cache_.find(name);
    const auto st = cache_.state(id);
    if (id != base_model && (st == adapter_state::ready || st == adapter_state::loading))
      return true;  // nothing to do
    if (free_slots_locked() == 0)
      return false;
  }
  auto r = acquire(name);
  if (r.state == adapter_state::failed)
    return false;
  release(r.id);
  return true;
}

void adapter_manager::apply(const adapter_actions& a) {
  for (auto id : a.evict)
    weights_.erase(id);
  for (auto id : a.start_loads)
    jobs_.push_back({id, cache_.info(id).name});
  if (!a.start_loads.empty())
    jobs_cv_.notify_all();
}

void adapter_manager::loader_main() {
  for (;;) {
    job j;
    {
      std::unique_lock<std::mutex> lk(mtx_);
      jobs_cv_.wait(lk, [&] { return stopping_ || !jobs_.empty(); });
      if (stopping_)
        return;
      j = std::move(jobs_.front());
      jobs_.pop_front();
    }
    std::shared_ptr<const adapter_payload> w;
    serve_errc code = serve_errc::unknown_adapter;
    std::string why;
    const auto started = adapter_clock::now();
    try {
      w = load_(j.name);
      if (!w) {
        code = serve_errc::internal;
        why = "adapter \"" + j.name + "\": the load function returned no weights";
      }
    } catch (const adapter_load_error& e) {
      code = e.code();
      why = e.what();
    } catch (const std::exception& e) {
      why = e.what();
    } catch (...) {
      why = "adapter \"" + j.name + "\": unknown error while loading";
    }
    {
      std::lock_guard<std::mutex> g(mtx_);
      const auto now = adapter_clock::now();
      auto& rec = records_[j.name];
      rec.name = j.name;
      if (w) {
        ++rec.loads;
        rec.last_load_ms = std::chrono::duration<double, std::milli>(now - started).count();
        rec.bytes = w->bytes();
      } else {
        ++rec.failures;
      }
      adapter_actions a;
      if (w) {
        a = cache_.loaded(j.id, w->bytes(), now);
        if (cache_.state(j.id) == adapter_state::ready)
          weights_[j.id] = std::move(w);
      } else {
        a = cache_.load_failed(j.id, code, std::move(why), now);
      }
      apply(a);
      ++settled_;
    }
    settled_cv_.notify_all();
    std::lock_guard<std::mutex> g(listener_mtx_);
    if (listener_)
      listener_();
  }
}

adapter_state adapter_manager::state(adapter_id id) const {
  std::lock_guard<std::mutex> g(mtx_);
  return cache_.state(id);
}

adapter_info adapter_manager::info(adapter_id id) const {
  std::lock_guard<std::mutex> g(mtx_);
  return cache_.info(id);
}

std::string adapter_manager::name(adapter_id id) const {
  std::lock_guard<std::mutex> g(mtx_);
  try {
    return cache_.info(id).name;
  } catch (const std::out_of_range&) {
    return {};
  }
}

std::shared_ptr<const adapter_payload> adapter_manager::get(adapter_id id) const {
  std::lock_guard<std::mutex> g(mtx_);
  auto it = weights_.find(id);
  return it == weights_.end() ? nullptr : it->second;
}

adapter_lookup_fn adapter_manager::lookup() const {
  return [this](adapter_id id) { return get(id); };
}

adapter_cache_stats adapter_manager::stats() const {
  std::lock_guard<std::mutex> g(mtx_);
  return cache_.stats();
}

std::vector<std::string> adapter_manager::resident_names() const {
  std::lock_guard<std::mutex> g(mtx_);
  std::vector<std::string> out;
  for (auto id : cache_.resident())
    out.push_back(cache_.info(id).name);
  return out;
}

std::vector<adapter_load_record> adapter_manager::load_records() const {
  std::lock_guard<std::mutex> g(mtx_);
  std::vector<adapter_load_record> out;
  out.reserve(records_.size());
  for (const auto& [name, r] : records_)
    out.push_back(r);
  return out;
}

std::uint64_t adapter_manager::settled_count() const {
  std::lock_guard<std::mutex> g(mtx_);
  return settled_;
}

adapter_state adapter_manager::wait_settled(adapter_id id, std::chrono::milliseconds limit) const {
  std::unique_lock<std::mutex> lk(mtx_);
  settled_cv_.wait_for(lk, limit, [&] {
    auto s = cache_.state(id);
    return s != adapter_state::queued && s != adapter_state::loading;
  });
  return cache_.state(id);
}

} // namespace lf::cache
