#include "cluster/front_keys.hpp"

#include "gateway/common/host_port.hpp"

namespace lf::cluster {

const std::vector<settings::setting_key<cluster_config>>& gateway_keys() {
  static const auto keys = [] {
    settings::table<cluster_config> t;
    t.text("listen", LF_SETTING(gateway_listen),
           "the ZeroMQ client endpoint: tcp://HOST:PORT (HOST may be * or 0.0.0.0) or ipc://PATH")
      .meta = "EP";
    t.integer("max_per_connection", LF_SETTING(max_per_connection), 1, 1'000'000, "live requests per client connection");
    return t.rows;
  }();
  return keys;
}

const std::vector<settings::setting_key<cluster_config>>& http_keys() {
  static const auto keys = [] {
    settings::table<cluster_config> t;
    auto& listen = t.text("listen", LF_SETTING(http_listen),
                          "the OpenAI-compatible API, /metrics, /health, /ready and the dashboard on HOST:PORT");
    listen.flag = "http";
    listen.meta = "HOST:PORT";
    t.text("model_name", LF_SETTING(http_model_name), "the base model's name in the API (default: the model directory's)")
      .meta = "NAME";
    t.path("tls_cert", LF_SETTING(http_tls_cert), "HTTPS: a PEM certificate chain (with tls_key)").meta = "PEM";
    t.path("tls_key", LF_SETTING(http_tls_key), "HTTPS: its unencrypted PEM private key").meta = "PEM";
    return t.rows;
  }();
  return keys;
}

const std::vector<settings::setting_key<cluster_config>>& auth_keys() {
  static const auto keys = [] {
    settings::table<cluster_config> t;
    auto& file = t.path("key_file", LF_SETTING(api_key_file),
                        "API keys and roles, NAME ROLE KEY [TENANT] per line, readable by its owner only");
    file.flag = "api-key-file";
    file.meta = "FILE";
    t.boolean("metrics_need_key", LF_SETTING(metrics_need_key), "/metrics, /api/stats and the dashboard need a key too")
      .bool_style = settings::bool_flag::yes_switch;
    return t.rows;
  }();
  return keys;
}

const std::vector<front_table>& front_tables() {
  static const std::vector<front_table> tables{{"gateway", &gateway_keys()}, {"http", &http_keys()}, {"auth", &auth_keys()}};
  return tables;
}

settings::key_namer front_flag_namer() {
  return [](std::string_view key) {
    const auto dot = key.find('.');
    for (const auto& t : front_tables())
      if (dot != std::string_view::npos && key.substr(0, dot) == t.section)
        if (const auto* k = settings::find(*t.keys, key.substr(dot + 1)))
          return "--" + k->flag_name();
    return "--" + settings::flag_of(key);
  };
}

settings::key_namer front_file_namer() {
  return [](std::string_view key) {
    const auto dot = key.find('.');
    if (dot == std::string_view::npos)
      return std::string(key);
    return "[" + std::string(key.substr(0, dot)) + "] " + std::string(key.substr(dot + 1));
  };
}

std::vector<settings::setting_issue> check_front(const cluster_config& c, const settings::key_namer& name) {
  std::vector<settings::setting_issue> out;
  auto issue = [&](const char* key, std::string message) { out.push_back({key, std::move(message)}); };
  std::string why;
  if (!c.http_listen.empty() && !gateway::parse_host_port(c.http_listen, &why))
    issue("http.listen", name("http.listen") + ": " + why);
  if (c.http_tls_cert.empty() != c.http_tls_key.empty()) {
    const char* missing = c.http_tls_cert.empty() ? "http.tls_cert" : "http.tls_key";
    issue(c.http_tls_cert.empty() ? "http.tls_key" : "http.tls_cert",
          name("http.tls_cert") + " and " + name("http.tls_key") + " go together: " + name(missing) + " is missing");
  } else if (!c.http_tls_cert.empty() && c.http_listen.empty()) {
    issue("http.tls_cert", name("http.tls_cert") + " and " + name("http.tls_key") + " need " + name("http.listen")
                             + " (TLS secures the HTTP gateway)");
  }
  if (c.metrics_need_key && c.api_key_file.empty())
    issue("auth.metrics_need_key", name("auth.metrics_need_key") + " needs " + name("auth.key_file")
                                     + " (no key could open /metrics)");
  return out;
}

std::string check_metrics_key(const cluster_config& c, const auth::key_table* keys, const settings::key_namer& name) {
  if (!c.metrics_need_key || (keys && keys->has_secrets()))
    return {};
  return name("auth.metrics_need_key") + " needs an HTTP key in " + name("auth.key_file")
         + " (none of its keys could open /metrics)";
}

} // namespace lf::cluster
