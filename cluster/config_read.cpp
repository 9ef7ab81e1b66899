// Pass 1 of the config loader: TOML syntax, known keys, value types and ranges (the [workers],
// [router], [gateway], [http] and [auth] keys from their tables: worker_keys, router_keys,
// front_keys.hpp), paths resolved against the file's
// directory, CURVE keys read from their files. Relations between values are pass 2's
// (config_check.cpp).
#include <filesystem>

#include "cluster/config_detail.hpp"
#include "cluster/front_keys.hpp"
#include "cluster/toml_reader.hpp"

namespace lf::cluster::detail {

namespace {

namespace fs = std::filesystem;

constexpr std::int64_t max_ms = 24LL * 3600 * 1000;  // a day, as an upper bound for durations

/// Reads the file keys of a settings table (worker/worker_settings.cpp, router/router_config.cpp)
/// from `r` into `out`: each key's type, range or choices checked; a path resolved against the
/// file's directory. A key absent or refused leaves its field as it was.
template <class S>
void read_keys(toml_reader& r, const std::vector<settings::setting_key<S>>& keys, S& out, parse_state& st) {
  using settings::key_type;
  for (const auto& k : keys) {
    if (!k.in_file())
      continue;
    switch (k.type) {
      case key_type::integer:
        if (auto v = r.integer(k.name, static_cast<std::int64_t>(k.lo), static_cast<std::int64_t>(k.hi)))
          k.set(out, *v);
        break;
      case key_type::number:
        if (auto v = r.number(k.name, k.lo, k.hi))
          k.set(out, *v);
        break;
      case key_type::boolean:
        if (auto v = r.boolean(k.name))
          k.set(out, *v);
        break;
      case key_type::text:
        if (auto v = r.str(k.name))
          k.set(out, *v);
        break;
      case key_type::path: {
        std::string p;
        r.set_path(k.name, p);
        if (!p.empty())
          k.set(out, p);
        break;
      }
      case key_type::choice:
        if (auto v = r.str(k.name); v && !k.set(out, *v))
          st.add(r.key_path(k.name), settings::not_a_choice(k, *v, true));
        break;
      case key_type::paths:
        if (auto v = r.strings(k.name)) {
          for (auto& p : *v)
            p = resolve_path(st.dir, p);
          k.set(out, *v);
        }
        break;
    }
  }
}

void read_workers(toml_reader& r, worker_group& w, bool with_count, parse_state& st) {
  if (with_count)
    r.set("count", w.count, 0, 256);
  // Ignored: OpenBLAS served only the old ATen static modes; configs written then still load.
  int blas_threads = 0;
  r.set("blas_threads", blas_threads, 0, 256);
  read_keys(r, worker::worker_keys(), w.settings, st);
  r.set_duration("report_interval_ms", w.report_interval, 10, 60'000);
}

void read_cluster(toml_reader& r, cluster_config& c) {
  r.set("name", c.name);
  r.set("router_node", c.router_node);
  if (auto names = r.strings("router_nodes"))
    c.router_nodes = *names;
  if (auto names = r.strings("gateway_nodes"))
    c.gateway_nodes = *names;
  r.set_path("model_dir", c.model_dir);
  r.set_path("tokenizer_dir", c.tokenizer_dir);
  r.set_path("adapter_dir", c.adapter_dir);
  r.finish();
}

void read_router(toml_reader& r, router::router_config& rs, parse_state& st) {
  read_keys(r, router::router_keys(), rs, st);
  r.finish();
}

void read_tenant(toml_reader& r, router::tenant_limits& t) {
  r.set("max_inflight", t.max_inflight, 1, 1'000'000);
  r.set("max_queued", t.max_queued, 0, 1'000'000);
  r.set_number("weight", t.weight, 1e-6, 1e6);
  r.finish();
}

void read_tenants(toml_reader& r, router::router_config& rs, parse_state& st, const std::string& path) {
  // [tenants.NAME]: one table per tenant; its name is the key.
  for (auto&& [key, node] : r.raw()) {
    const std::string name(key.str());
    const auto* t = r.table(name);
    if (t == nullptr)
      continue;
    toml_reader tr(*t, path + "." + name, st);
    auto limits = rs.tenants.defaults;  // unset keys: the defaults
    read_tenant(tr, limits);
    rs.tenants.tenants[name] = limits;
  }
  r.finish();
}

void read_limits(toml_reader& r, cluster_config& c) {
  auto& l = c.router_cfg.limits;
  r.set("max_prompt_bytes", c.max_prompt_bytes, 1, 1 << 30);
  r.set("max_tokens", l.max_tokens_limit, 1, 1 << 20);
  r.set("max_stop", l.max_stop, 0, 1024);
  r.set("max_stop_len", l.max_stop_len, 1, 1 << 16);
  r.finish();
}

void read_security(toml_reader& r, cluster_config& c, parse_state& st) {
  if (const auto* t = r.table("clients")) {
    toml_reader cr(*t, r.key_path("clients"), st);
    cr.set_curve_key("public_key", c.clients.public_key);
    cr.set_curve_key("secret_key", c.clients.secret_key);
    if (auto keys = cr.strings("allowed_keys"))
      c.clients.allowed_keys = *keys;
    if (auto files = cr.strings("allowed_key_files")) {
      for (std::size_t i = 0; i < files->size(); ++i) {
        std::string why;
        auto key = read_curve_key_file(resolve_path(st.dir, (*files)[i]), why);
        if (why.empty()) {
          c.clients.allowed_keys.push_back(key);
          c.clients.key_names[key] = fs::path((*files)[i]).stem().string();
        } else
          st.add(cr.key_path("allowed_key_files"), "[" + std::to_string(i) + "]: " + why);
      }
    }
    cr.finish();
  }
  if (const auto* t = r.table("nodes")) {
    toml_reader nr(*t, r.key_path("nodes"), st);
    nr.set_path("certificate", c.tls.certificate);
    nr.set_path("key", c.tls.key);
    nr.set_path("ca_file", c.tls.ca_file);
    nr.set("passphrase", c.tls.passphrase);
    nr.set_path("join_token_file", c.tls.join_token_file);
    nr.finish();
  }
  r.finish();
}

void read_launch(toml_reader& r, launch_settings& l) {
  r.set_duration("ready_timeout_s", l.ready_timeout, 1, 86'400);
  r.set_duration("stop_timeout_s", l.stop_timeout, 1, 3'600);
  r.set("restart", l.restart);
  r.set("remote_binary", l.remote_binary);
  r.set("remote_config", l.remote_config);
  if (auto o = r.strings("ssh_options"))
    l.ssh_options = *o;
  r.set_curve_key("client_public_key", l.client_public_key);
  r.set_curve_key("client_secret_key", l.client_secret_key);
  r.finish();
}

void read_node(toml_reader& r, node_config& n, const worker_group& defaults, parse_state& st) {
  n.workers = defaults;
  r.set("name", n.name);
  r.set("host", n.host);
  r.set("port", n.port, 1, 65535);
  r.set("bind", n.bind);
  r.set("ssh", n.ssh);
  r.set_path("tls_certificate", n.tls_certificate);
  r.set_path("tls_key", n.tls_key);
  r.set("gateway_listen", n.gateway_listen);
  r.set("http_listen", n.http_listen);
  if (const auto* w = r.table("workers")) {
    toml_reader wr(*w, r.key_path("workers"), st);
    read_workers(wr, n.workers, true, st);
    wr.finish();
  }
  r.finish();
}

} // namespace

bool read_config(const std::string& text, cluster_config& c, parse_state& st) {
  toml::table root;
  try {
    root = toml::parse(text, st.file);
  } catch (const toml::parse_error& e) {
    st.add_at({static_cast<std::uint32_t>(e.source().begin.line),
               static_cast<std::uint32_t>(e.source().begin.column)},
              "", "TOML syntax: " + std::string(e.description()));
    return false;
  }
  toml_reader r(root, "", st);
  // [workers] first: nodes start from these defaults whatever the order in the file.
  worker_group defaults;
  if (const auto* t = r.table("workers")) {
    toml_reader wr(*t, "workers", st);
    read_workers(wr, defaults, true, st);
    wr.finish();
  }
  c.worker_defaults = defaults;
  if (const auto* t = r.table("cluster")) {
    toml_reader cr(*t, "cluster", st);
    read_cluster(cr, c);
  } else {
    st.add("", "missing [cluster] table (router_node and model_dir are required)");
  }
  for (const auto& front : front_tables())  // [gateway], [http], [auth]
    if (const auto* t = r.table(front.section)) {
      toml_reader fr(*t, front.section, st);
      read_keys(fr, *front.keys, c, st);
      fr.finish();
    }
  c.router_cfg = router::configured_defaults();  // cache_aware placement unless the file says
  if (const auto* t = r.table("router")) {
    toml_reader rr(*t, "router", st);
    read_router(rr, c.router_cfg, st);
  }
  if (const auto* t = r.table("limits")) {
    toml_reader lr(*t, "limits", st);
    read_limits(lr, c);
  }
  // [tenant_defaults] before [tenants.NAME]: a tenant's unset keys are the defaults.
  if (const auto* t = r.table("tenant_defaults")) {
    toml_reader tr(*t, "tenant_defaults", st);
    read_tenant(tr, c.router_cfg.tenants.defaults);
  }
  if (const auto* t = r.table("tenants")) {
    toml_reader tr(*t, "tenants", st);
    read_tenants(tr, c.router_cfg, st, "tenants");
  }
  if (const auto* t = r.table("heartbeat")) {
    toml_reader hr(*t, "heartbeat", st);
    hr.set_duration("interval_ms", c.heartbeat_interval, 0, max_ms);
    hr.set_duration("timeout_ms", c.heartbeat_timeout, 0, max_ms);
    hr.finish();
  }
  if (const auto* t = r.table("reconnect")) {
    toml_reader rc(*t, "reconnect", st);
    rc.set_duration("initial_ms", c.reconnect_initial, 1, max_ms);
    rc.set_duration("max_ms", c.reconnect_max, 1, max_ms);
    rc.finish();
  }
  if (const auto* t = r.table("security")) {
    toml_reader sr(*t, "security", st);
    read_security(sr, c, st);
  }
  if (const auto* t = r.table("launch")) {
    toml_reader lr(*t, "launch", st);
    read_launch(lr, c.launch);
  }
  if (const auto* a = r.tables("nodes")) {
    for (std::size_t i = 0; i < a->size(); ++i) {
      toml_reader nr(*a->get(i)->as_table(), "nodes[" + std::to_string(i + 1) + "]", st);
      node_config n;
      read_node(nr, n, defaults, st);
      c.nodes.push_back(std::move(n));
    }
  }
  r.finish();
  return true;
}

} // namespace lf::cluster::detail
