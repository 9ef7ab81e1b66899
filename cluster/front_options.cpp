#include "cluster/front_options.hpp"

#include <memory>
#include <stdexcept>

#include "cluster/front_keys.hpp"
#include "core/api_keys.hpp"

namespace lf::cluster {

void apply_front(const cluster_config& c, const settings::key_namer& name, gateway::gateway_options& zmq) {
  zmq.endpoint = c.gateway_listen;
  zmq.max_per_connection = c.max_per_connection;
  zmq.keys.reset();
  if (!c.api_key_file.empty()) {
    try {
      zmq.keys = std::make_shared<const auth::key_table>(auth::load_key_file(c.api_key_file));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(name("auth.key_file") + ": " + e.what());
    }
  }
}

void apply_front(const cluster_config& c, const settings::key_namer& name, const gateway::gateway_options& zmq,
                 gateway::http_options& http) {
  http.listen = c.http_listen;
  http.model_name = c.http_model_name;
  http.tls = {c.http_tls_cert, c.http_tls_key};
  http.keys = zmq.keys;
  http.metrics_need_key = c.metrics_need_key;
  if (auto why = check_metrics_key(c, zmq.keys.get(), name); !why.empty())
    throw std::invalid_argument(why);
}

} // namespace lf::cluster
