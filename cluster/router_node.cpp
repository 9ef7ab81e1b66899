#include "cluster/router_node.hpp"

#include <thread>

#include <caf/actor_system.hpp>
#include <caf/event_based_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "actors/worker_actor.hpp"
#include "cluster/local_cluster.hpp"

namespace lf::cluster {

namespace {

/// Polls the router and logs when the number of registered workers changes (a node joined or
/// was lost). Ends with the router.
caf::behavior worker_count_logger(caf::event_based_actor* self, actors::router_actor router,
                                  log_fn log, std::uint32_t expected) {
  self->monitor(router);
  self->set_down_handler([self](const caf::down_msg&) { self->quit(); });
  auto last = std::make_shared<std::uint32_t>(0);
  self->send(self, caf::tick_atom::value);
  return {
    [=](caf::tick_atom) {
      self->request(router, std::chrono::seconds(2), caf::get_atom::value)
        .then(
          [=](const actors::router_stats& rs) {
            if (rs.workers != *last)
              log("workers registered: " + std::to_string(rs.workers)
                  + (expected > 0 ? " of " + std::to_string(expected) + " in the config" : " (joined)")
                  + (rs.workers < *last ? " (lost some)" : ""));
            *last = rs.workers;
          },
          [](const caf::error&) {});
      self->delayed_send(self, std::chrono::milliseconds(250), caf::tick_atom::value);
    },
  };
}

} // namespace

struct router_node::impl {
  const cluster_config& cfg;
  log_fn log;
  node_system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  actors::router_actor router;
  std::uint16_t port = 0;
  std::vector<std::shared_ptr<worker::worker_runtime>> runtimes;
  std::vector<actors::worker_actor> workers;
  std::unique_ptr<gateway::zmq_gateway> gw;
  std::unique_ptr<gateway::http_gateway> http;
  bool down = false;

  impl(const cluster_config& c, const node_config& self, log_fn l)
      : cfg(c), log(std::move(l)), sys_cfg(c, self) {}
};

router_node::router_node(const cluster_config& cfg, const node_config& self, log_fn log)
    : impl_(std::make_unique<impl>(cfg, self, std::move(log))) {
  auto& st = *impl_;
  if (auto why = check_router_exposure(cfg); !why.empty())
    throw std::runtime_error(why);
  // Read once (the model's limits, the join token): the router, its local workers and the HTTP
  // gateway share it.
  auto rc = router_config_for(cfg);
  // Router replicas keep a log each (two processes appending to one file would interleave):
  // adapter_log "registry.log" is "registry.log.router-a" on router-a.
  if (cfg.routers().size() > 1 && !rc.adapter_log.empty())
    rc.adapter_log += "." + self.name;
  st.router = router::spawn_router(st.sys, rc);
  auto p = publish_router(st.sys, st.router, self, st.sys_cfg.tls());
  if (!p) {
    caf::anon_send_exit(st.router, caf::exit_reason::user_shutdown);
    throw std::runtime_error("cannot publish the router on " + self.bind + ":"
                             + std::to_string(self.port) + ": " + st.sys.render(p.error()));
  }
  st.port = *p;
  st.log("router published on " + self.bind + ":" + std::to_string(st.port)
         + (st.sys_cfg.tls() ? " (mutual TLS)" : "") + ", placement "
         + std::string(router::to_string(cfg.router_cfg.placement.policy)));
  st.sys.spawn(worker_count_logger, st.router, st.log, cfg.total_workers());
  try {
    if (self.workers.count > 0) {
      st.log("loading " + std::to_string(self.workers.count) + " local worker(s) from " + cfg.model_dir);
      st.runtimes = load_workers(cfg, self.workers, self.workers.count);
    }
    for (std::size_t i = 0; i < st.runtimes.size(); ++i) {
      actors::worker_options o;
      o.name = self.name + "/" + std::to_string(i + 1);
      o.report_interval = self.workers.report_interval;
      o.join_token = rc.join_token;
      st.workers.push_back(actors::spawn_worker(st.sys, actors::backend_of(st.runtimes[i]), st.router, o));
    }
    if (cfg.split_front())
      return;  // the gateways run on gateway nodes, which reach every router replica
    const auto g = gateway_options_for(cfg);
    st.gw = std::make_unique<gateway::zmq_gateway>(st.sys, st.router, g);
    if (!cfg.http_listen.empty()) {
      st.http = std::make_unique<gateway::http_gateway>(
        st.sys, st.router, http_options_for(cfg, g, cfg.http_listen, rc.limits));
      st.log("HTTP (OpenAI API, /metrics, dashboard) on " + st.http->url() + "/");
    }
  } catch (...) {
    stop(std::chrono::milliseconds(0));
    throw;
  }
  st.log("gateway on " + st.gw->endpoint()
         + (cfg.clients.enabled() ? std::string(" (CURVE") + (cfg.clients.allowed_keys.empty() ? "" : ", allow-list")
                                      + ")"
                                  : std::string{}));
}

router_node::~router_node() { stop(std::chrono::milliseconds(0)); }

std::string router_node::endpoint() const { return impl_->gw ? impl_->gw->endpoint() : std::string{}; }

std::uint16_t router_node::port() const { return impl_->port; }

actors::router_stats router_node::stats() { return cluster::query_stats(impl_->sys, impl_->router); }

std::size_t router_node::stop(std::chrono::milliseconds drain) {
  auto& st = *impl_;
  if (st.down)
    return 0;
  st.down = true;
  return cluster::drain_and_stop(st.gw.get(), st.http.get(), st.workers, st.router, st.runtimes, drain);
}

} // namespace lf::cluster
