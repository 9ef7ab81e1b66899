#include "cluster/node_system.hpp"

#include "core/log.hpp"

#include <caf/actor_system.hpp>
#include <caf/io/middleman.hpp>
#include <caf/io/middleman_actor.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/openssl/manager.hpp>
#include <caf/openssl/publish.hpp>
#include <caf/openssl/remote_actor.hpp>

#include "actors/system_config.hpp"
#include "cluster/front_keys.hpp"
#include "cluster/front_options.hpp"
#include "cluster/local_cluster.hpp"
#include "cluster/openssl_guard.hpp"
#include "worker/worker_settings.hpp"

namespace lf::cluster {

node_system_config::node_system_config(const cluster_config& cfg, const node_config& node) {
  actors::add_lorafleet_types(*this);
  load<caf::io::middleman>();
  if (cfg.heartbeat_interval.count() > 0) {
    // Heartbeats are off by default in CAF 0.17; without them a frozen or unplugged peer is
    // never noticed (a crashed one is, by its closed TCP connection).
    set("middleman.heartbeat-interval", caf::timespan{cfg.heartbeat_interval});
    set("middleman.connection-timeout", caf::timespan{cfg.heartbeat_timeout});
  }
  if (cfg.tls.enabled()) {
    tls_ = true;
    openssl_certificate = node.tls_certificate.empty() ? cfg.tls.certificate : node.tls_certificate;
    openssl_key = node.tls_key.empty() ? cfg.tls.key : node.tls_key;
    openssl_cafile = cfg.tls.ca_file;
    openssl_passphrase = cfg.tls.passphrase;
    if (!openssl_guard_active())
      throw std::runtime_error("TLS: the OpenSSL error-queue workaround is not active in this "
                               "executable (cluster/openssl_guard.hpp); refusing to run TLS");
    load<caf::openssl::manager>();
  }
}

caf::expected<std::uint16_t> publish_router(caf::actor_system& sys, const actors::router_actor& router,
                                            const node_config& node, bool tls) {
  const char* in = node.bind == "0.0.0.0" || node.bind == "*" ? nullptr : node.bind.c_str();
  // SO_REUSEADDR: a restarted router node binds its port at once, with old connections in
  // TIME_WAIT.
  if (tls)
    return caf::openssl::publish(router, node.port, in, true);
  return sys.middleman().publish(router, node.port, in, true);
}

caf::expected<actors::router_actor> connect_router(caf::actor_system& sys, const node_config& node,
                                                   bool tls, std::chrono::milliseconds timeout) {
  // The middleman actor's connect, with a timeout: middleman().remote_actor() waits for ever
  // when the peer accepts TCP but never answers the handshake (a frozen process).
  caf::io::middleman_actor mm = tls ? sys.openssl_manager().actor_handle() : sys.middleman().actor_handle();
  caf::expected<actors::router_actor> out{caf::make_error(caf::sec::request_timeout)};
  caf::scoped_actor self{sys};
  self->request(mm, timeout, caf::connect_atom::value, node.host, node.port)
    .receive(
      [&](const caf::node_id&, caf::strong_actor_ptr& ptr, const std::set<std::string>& ifs) {
        if (!ptr)
          out = caf::make_error(caf::sec::no_actor_published_at_port, node.port);
        else if (!sys.assignable<actors::router_actor>(ifs))
          out = caf::make_error(caf::sec::unexpected_actor_messaging_interface);
        else
          out = caf::actor_cast<actors::router_actor>(std::move(ptr));
      },
      [&](caf::error& e) { out = std::move(e); });
  return out;
}

std::string join_token_of(const cluster_config& cfg) {
  if (cfg.tls.join_token_file.empty())
    return {};
  std::string why;
  auto token = read_join_token(cfg.tls.join_token_file, why);
  if (!why.empty())
    throw std::runtime_error(why);
  return token;
}

worker::worker_settings worker_settings_for(const cluster_config& cfg, const worker_group& g) {
  auto s = g.settings;
  s.model_dir = cfg.model_dir;
  s.tokenizer_dir = cfg.tokenizer_dir;
  s.adapter_dir = cfg.adapter_dir;
  s.scheduling = cfg.router_cfg.tenants.scheduling;  // the router's order, in every waiting queue
  // One OpenBLAS pool per process, shared by the node's workers: by default each worker's share.
  return worker::resolve_for_process(std::move(s), g.count);
}

router::router_config router_config_for(const cluster_config& cfg) {
  auto r = cfg.router_cfg;
  if (r.adapter_roots.empty() && !cfg.adapter_dir.empty())
    r.adapter_roots = {cfg.adapter_dir};
  r.join_token = join_token_of(cfg);
  // The model's context window and vocabulary: every request is validated against them once.
  const auto model = worker::model_limits(worker_settings_for(cfg, cfg.router().workers));
  r.limits.context_window = model.context_window;
  r.limits.vocab_size = model.vocab_size;
  return r;
}

gateway::gateway_options gateway_options_for(const cluster_config& cfg) {
  gateway::gateway_options g;
  apply_front(cfg, front_file_namer(), g);  // endpoint, max_per_connection, API keys
  g.tokenizer = worker::load_tokenizer(worker_settings_for(cfg, cfg.router().workers));
  g.max_prompt_bytes = cfg.max_prompt_bytes;
  g.curve_public_key = cfg.clients.public_key;
  g.curve_secret_key = cfg.clients.secret_key;
  g.allowed_client_keys = cfg.clients.allowed_keys;
  g.client_key_names = cfg.clients.key_names;
  g.limiter = std::make_shared<shared_rate_limiter>();  // http_options_for shares it
  return g;
}

gateway::http_options http_options_for(const cluster_config& cfg, const gateway::gateway_options& zmq,
                                       const std::string& listen, const request_limits& limits) {
  gateway::http_options h;
  apply_front(cfg, front_file_namer(), zmq, h);  // model name, TLS, keys, metrics_need_key
  h.listen = listen;  // this node's own, when it has one
  if (h.model_name.empty())
    h.model_name = default_model_name(cfg.model_dir);
  h.tokenizer = zmq.tokenizer;
  h.max_prompt_bytes = zmq.max_prompt_bytes;
  h.limiter = zmq.limiter;
  h.limits = limits;
  return h;
}

std::vector<std::shared_ptr<worker::worker_runtime>> load_workers(const cluster_config& cfg,
                                                                  const worker_group& group,
                                                                  std::uint32_t count) {
  const auto s = worker_settings_for(cfg, group);
  if (auto err = worker::check_settings(s); !err.empty())
    throw std::invalid_argument(err);
  std::vector<std::shared_ptr<worker::worker_runtime>> out;
  for (std::uint32_t i = 0; i < count; ++i) {
    out.push_back(std::make_shared<worker::worker_runtime>(s));
    log::info("worker", "engine ready", {{"engine", out.back()->describe()}});
  }
  return out;
}

} // namespace lf::cluster
