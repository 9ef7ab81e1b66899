#pragma once
/// The client-facing keys of a cluster config, its [gateway], [http] and [auth] tables, as
/// settings tables over cluster_config (core/setting_key.hpp), with check_front, every rule
/// between them. The config reader (config_read.cpp), `serve`'s flags (tools/cli/serve_options.cpp),
/// `--help` and the check of docs/cluster.md read them, as they read worker_keys and router_keys.
/// A key here has a flag of another name (--http for [http] listen): the rows say which. Pure C++.

#include <string>
#include <vector>

#include "cluster/cluster_config.hpp"
#include "core/api_keys.hpp"
#include "core/setting_key.hpp"

namespace lf::cluster {

/// [gateway]: the ZeroMQ client endpoint and its per-connection bound.
const std::vector<settings::setting_key<cluster_config>>& gateway_keys();

/// [http]: the OpenAI-compatible HTTP gateway's address, model name and TLS files.
const std::vector<settings::setting_key<cluster_config>>& http_keys();

/// [auth]: the API key file, and whether /metrics needs a key.
const std::vector<settings::setting_key<cluster_config>>& auth_keys();

/// The three tables, each with its TOML table's name ("gateway", "http", "auth").
struct front_table {
  const char* section;
  const std::vector<settings::setting_key<cluster_config>>* keys;
};
const std::vector<front_table>& front_tables();

/// Names "http.tls_cert" as the flags do ("--tls-cert").
settings::key_namer front_flag_namer();

/// Names "http.tls_cert" as a config file shows it ("[http] tls_cert").
settings::key_namer front_file_namer();

/// The rules between the front keys, each issue under its "section.key", in `name`'s spelling:
/// [http] listen is HOST:PORT, tls_cert and tls_key go together and need it, metrics_need_key
/// needs a key file. Files are not read (config_check's check_paths and the gateways do that);
/// [gateway] listen is a cluster's rule (config_check: a port other nodes can be told, where
/// `serve --listen` may bind port 0).
std::vector<settings::setting_issue> check_front(const cluster_config& c, const settings::key_namer& name);

/// metrics_need_key's rule once the key file is read (`keys`: its keys, nullptr without one): some
/// key must open the HTTP gateway. The message (in `name`'s spelling), or "" when it holds. The
/// config check (config_check.cpp) and the gateways' start (apply_front) both ask it.
std::string check_metrics_key(const cluster_config& c, const auth::key_table* keys, const settings::key_namer& name);

} // namespace lf::cluster
