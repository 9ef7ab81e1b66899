#pragma once
/// What the [gateway], [http] and [auth] keys (front_keys.hpp) set in the gateways' options: one
/// mapping for `serve` (its flags read into a cluster_config) and for a cluster's router and
/// gateway nodes.

#include "cluster/cluster_config.hpp"
#include "core/setting_key.hpp"
#include "gateway/openai/http_options.hpp"
#include "gateway/zmq/gateway.hpp"

namespace lf::cluster {

/// The ZeroMQ gateway's endpoint, its per-connection bound and the API keys (the key file read:
/// std::invalid_argument "NAME: why", NAME being auth.key_file as `name` spells it).
void apply_front(const cluster_config& c, const settings::key_namer& name, gateway::gateway_options& zmq);

/// The HTTP gateway's address, model name (empty: the caller fills in the model's), TLS files and
/// metrics_need_key, with `zmq`'s keys; std::invalid_argument when metrics_need_key has no HTTP
/// key to open /metrics with.
void apply_front(const cluster_config& c, const settings::key_namer& name, const gateway::gateway_options& zmq,
                 gateway::http_options& http);

} // namespace lf::cluster
