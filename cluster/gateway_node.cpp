#include "cluster/gateway_node.hpp"

#include <thread>

#include <caf/actor_system.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/send.hpp>

#include "cluster/router_link.hpp"

namespace lf::cluster {

struct gateway_node::impl {
  const cluster_config& cfg;
  log_fn log;
  node_system_config sys_cfg;
  caf::actor_system sys{sys_cfg};
  actors::router_actor link;
  std::unique_ptr<gateway::zmq_gateway> gw;
  std::unique_ptr<gateway::http_gateway> http;
  bool down = false;

  impl(const cluster_config& c, const node_config& self, log_fn l) : cfg(c), log(std::move(l)), sys_cfg(c, self) {}
};

gateway_node::gateway_node(const cluster_config& cfg, const node_config& self, log_fn log)
    : impl_(std::make_unique<impl>(cfg, self, std::move(log))) {
  auto& st = *impl_;
  router_link_options lo;
  for (const auto* r : cfg.routers())
    lo.routers.push_back({r->name, r->host, r->port, {}});
  lo.tls = st.sys_cfg.tls();
  lo.connect_timeout = std::max<std::chrono::milliseconds>(std::chrono::seconds(5), cfg.heartbeat_timeout);
  lo.reconnect_initial = cfg.reconnect_initial;
  lo.reconnect_max = cfg.reconnect_max;
  lo.wait_limit = cfg.router_cfg.max_queue_wait;
  lo.log = st.log;
  st.link = spawn_router_link(st.sys, std::move(lo));
  try {
    auto g = gateway_options_for(cfg);
    g.endpoint = cfg.gateway_listen_of(self);
    // Each gateway node enforces its share of every key's limits: the cluster never admits more
    // than the limit (docs/http.md, "Rate limits per key").
    g.limiter = std::make_shared<shared_rate_limiter>(static_cast<std::uint32_t>(cfg.gateway_nodes.size()));
    st.gw = std::make_unique<gateway::zmq_gateway>(st.sys, st.link, g);
    st.log("gateway on " + st.gw->endpoint() + ", in front of " + std::to_string(cfg.routers().size())
           + " router(s)");
    if (const auto listen = cfg.http_listen_of(self); !listen.empty()) {
      const auto limits = router_config_for(cfg).limits;
      st.http = std::make_unique<gateway::http_gateway>(st.sys, st.link, http_options_for(cfg, g, listen, limits));
      st.log("HTTP (OpenAI API, /metrics, dashboard) on " + st.http->url() + "/");
    }
  } catch (...) {
    stop(std::chrono::milliseconds(0));
    throw;
  }
}

gateway_node::~gateway_node() { stop(std::chrono::milliseconds(0)); }

std::string gateway_node::endpoint() const { return impl_->gw ? impl_->gw->endpoint() : std::string{}; }

std::string gateway_node::http_url() const { return impl_->http ? impl_->http->url() : std::string{}; }

bool gateway_node::ready() {
  auto& st = *impl_;
  if (st.down)
    return false;
  bool ok = false;
  caf::scoped_actor self{st.sys};
  self->request(st.link, std::chrono::seconds(1), caf::get_atom::value)
    .receive([&](const actors::router_stats& rs) { ok = rs.accepting > 0; }, [](const caf::error&) {});
  return ok;
}

std::size_t gateway_node::stop(std::chrono::milliseconds drain) {
  auto& st = *impl_;
  if (st.down)
    return 0;
  st.down = true;
  const auto cancelled = drain_and_stop(st.gw.get(), st.http.get(), {}, st.link, {}, drain);
  return cancelled;
}

} // namespace lf::cluster
