#include "cluster/local_cluster.hpp"

#include <filesystem>
#include <thread>
#include <vector>

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/system_config.hpp"
#include "core/log.hpp"
#include "actors/worker_actor.hpp"

namespace lf::cluster {

namespace {
struct config : caf::actor_system_config {
  config() { actors::add_lorafleet_types(*this); }
};
} // namespace

struct local_cluster::impl {
  cluster_settings settings;
  config cfg;
  caf::actor_system sys{cfg};
  actors::router_actor router;
  std::vector<std::shared_ptr<worker::worker_runtime>> runtimes;
  std::vector<actors::worker_actor> workers;
  std::unique_ptr<gateway::zmq_gateway> gw;
  std::unique_ptr<gateway::http_gateway> http;
  bool down = false;

  explicit impl(cluster_settings s) : settings(std::move(s)) {}
};

local_cluster::local_cluster(cluster_settings s) : impl_(std::make_unique<impl>(std::move(s))) {
  auto& st = *impl_;
  // The model's limits and tokenizer for the edge, unless the caller gave them.
  auto& limits = st.settings.router.limits;
  if (limits.context_window == 0 || limits.vocab_size == 0) {
    const auto model = worker::model_limits(st.settings.worker);
    limits.context_window = model.context_window;
    limits.vocab_size = model.vocab_size;
  }
  if (!st.settings.gateway.tokenizer)
    st.settings.gateway.tokenizer = worker::load_tokenizer(st.settings.worker);
  st.router = router::spawn_router(st.sys, st.settings.router);
  try {
    caf::scoped_actor self{st.sys};
    for (std::uint32_t i = 0; i < st.settings.workers; ++i) {
      auto rt = std::make_shared<worker::worker_runtime>(st.settings.worker);
      log::info("worker", "engine ready", {{"worker", "worker-" + std::to_string(i + 1)}, {"engine", rt->describe()}});
      st.runtimes.push_back(rt);
      actors::worker_options o;
      o.name = "worker-" + std::to_string(i + 1);
      o.report_interval = st.settings.report_interval;
      st.workers.push_back(actors::spawn_worker(st.sys, actors::backend_of(rt), st.router, o));
    }
    std::string why;
    bool ready = false;
    self->request(st.router, std::chrono::seconds(60), caf::wait_for_atom::value, st.settings.workers)
      .receive([&](const actors::router_stats& rs) { ready = rs.workers >= st.settings.workers; },
               [&](const caf::error& e) { why = st.sys.render(e); });
    if (!ready)
      throw std::runtime_error("cluster: the workers did not register: " + why);
    auto g = st.settings.gateway;
    if (!g.limiter)
      g.limiter = std::make_shared<shared_rate_limiter>();  // one set of buckets for both gateways
    st.gw = std::make_unique<gateway::zmq_gateway>(st.sys, st.router, g);
    if (!st.settings.http.listen.empty()) {
      auto h = st.settings.http;
      if (!h.limiter)
        h.limiter = g.limiter;
      h.tokenizer = st.settings.gateway.tokenizer;
      h.limits = limits;
      if (h.model_name.empty())
        h.model_name = default_model_name(st.settings.worker.model_dir);
      st.http = std::make_unique<gateway::http_gateway>(st.sys, st.router, std::move(h));
    }
  } catch (...) {
    // The actor system's destructor waits for every actor: stop the router and the workers
    // started so far, or a failed start (a worker that cannot load, an endpoint that cannot be
    // bound) would hang the process instead of reporting the error.
    shutdown(std::chrono::milliseconds(0));
    throw;
  }
}

local_cluster::~local_cluster() { shutdown(std::chrono::milliseconds(0)); }

std::string local_cluster::endpoint() const { return impl_->gw ? impl_->gw->endpoint() : std::string{}; }

std::string local_cluster::http_address() const { return impl_->http ? impl_->http->address() : std::string{}; }

std::string default_model_name(const std::string& model_dir) {
  auto p = std::filesystem::path(model_dir);
  if (!p.has_filename())
    p = p.parent_path();
  const auto name = p.filename().string();
  return name.empty() ? std::string("gpt2") : name;
}

caf::actor_system& local_cluster::system() { return impl_->sys; }

actors::router_actor local_cluster::router() const { return impl_->router; }

actors::router_stats query_stats(caf::actor_system& sys, const actors::router_actor& router) {
  actors::router_stats out;
  caf::scoped_actor self{sys};
  self->request(router, std::chrono::seconds(1), caf::get_atom::value)
    .receive([&](const actors::router_stats& rs) { out = rs; }, [](const caf::error&) {});
  return out;
}

actors::router_stats local_cluster::stats() { return query_stats(impl_->sys, impl_->router); }

void local_cluster::kill_worker(std::size_t i) {
  caf::anon_send_exit(impl_->workers.at(i), caf::exit_reason::kill);
}

std::size_t drain_and_stop(gateway::zmq_gateway* gw, gateway::http_gateway* http,
                           const std::vector<actors::worker_actor>& workers,
                           const actors::router_actor& router,
                           const std::vector<std::shared_ptr<worker::worker_runtime>>& runtimes,
                           std::chrono::milliseconds drain) {
  std::size_t cancelled = 0;
  if (gw != nullptr)
    gw->stop_accepting();
  if (http != nullptr)
    http->stop_accepting();
  const auto until = std::chrono::steady_clock::now() + drain;
  auto live = [&] { return (gw ? gw->live() : 0) + (http ? http->live() : 0); };
  while (live() > 0 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  cancelled = live();
  if (gw != nullptr)
    gw->stop();  // cancels the rest; their clients get `cancelled`
  if (http != nullptr)
    http->stop();  // the rest get 503 / a stream error
  for (const auto& w : workers)
    caf::anon_send_exit(w, caf::exit_reason::user_shutdown);
  caf::anon_send_exit(router, caf::exit_reason::user_shutdown);
  for (const auto& rt : runtimes)
    rt->loop().stop(false);
  return cancelled;
}

std::size_t local_cluster::shutdown(std::chrono::milliseconds drain) {
  auto& st = *impl_;
  if (st.down)
    return 0;
  st.down = true;
  return drain_and_stop(st.gw.get(), st.http.get(), st.workers, st.router, st.runtimes, drain);
}

} // namespace lf::cluster
