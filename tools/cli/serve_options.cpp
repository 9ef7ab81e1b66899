#include "tools/cli/serve_options.hpp"

#include <filesystem>
#include <stdexcept>

#include "cluster/front_keys.hpp"
#include "cluster/front_options.hpp"
#include "gateway/openai/tls_context.hpp"
#include "tools/cli/setting_flags.hpp"
#include "worker/worker_settings.hpp"

namespace lf::tools {

namespace fs = std::filesystem;

std::string default_model_dir() {
  const auto d = models_dir() + "/default";
  return fs::exists(d + "/config.json") ? d : std::string{};
}

std::string default_adapter_dir() {
  const auto d = models_dir() + "/adapters";
  return fs::is_directory(d) ? d : std::string{};
}

std::set<std::string> setting_switches() {
  std::set<std::string> out;
  add_setting_switches(worker::worker_keys(), out);
  add_setting_switches(router::router_keys(), out);
  for (const auto& t : cluster::front_tables())
    add_setting_switches(*t.keys, out);
  return out;
}

worker::worker_settings worker_settings_from(args& a, const std::string& adapter_dir_flag, std::uint32_t& workers) {
  worker::worker_settings w;  // the one set of worker defaults
  w.model_dir = a.str("model", default_model_dir());
  if (w.model_dir.empty())
    throw std::invalid_argument("--model DIR is needed (no default model in " + models_dir() + "/default)");
  w.adapter_dir = a.str(adapter_dir_flag, a.has("model") ? std::string{} : default_adapter_dir());
  workers = static_cast<std::uint32_t>(a.integer_in("workers", 1, 1, 64));
  read_setting_flags(a, worker::worker_keys(), w);
  // A GPU computes in f32: its dtype defaults follow the device.
  if (w.device != "cpu") {
    if (!a.has("dtype"))
      w.dtype = "f32";
    if (!a.has("kv-dtype"))
      w.kv_dtype = "f32";
  }
  // threads 0 (the default) becomes each worker's share of the cores.
  w = worker::resolve_for_process(std::move(w), workers);
  if (auto err = settings::first_message(worker::check_settings(w, settings::flag_namer(worker::worker_keys())));
      !err.empty())
    throw std::invalid_argument(err);
  return w;
}

router::router_config serve_router_defaults(std::uint32_t max_seqs) {
  auto r = router::configured_defaults();
  r.max_inflight_per_worker = 2 * max_seqs;  // serve's own default: two batches per worker
  return r;
}

std::string settings_help(bool with_router) {
  const worker::worker_settings w;
  std::string out = "\nworker settings (in a cluster config's [workers]: the same keys, with '_' for '-'):\n"
                    + setting_flags_help(worker::worker_keys(), w);
  if (with_router) {
    out += "\nrouter settings (in its [router]: the same keys; --policy is placement):\n"
           + setting_flags_help(router::router_keys(), serve_router_defaults(w.max_seqs));
    const cluster::cluster_config front;
    out += "\ngateway, HTTP and key settings (a cluster config's [gateway], [http] and [auth]):\n";
    for (const auto& t : cluster::front_tables())
      out += setting_flags_help(*t.keys, front);
  }
  return out;
}

cluster::cluster_settings cluster_settings_from(args& a, const std::string& adapter_dir_flag) {
  cluster::cluster_settings s;
  s.worker = worker_settings_from(a, adapter_dir_flag, s.workers);
  const auto& w = s.worker;
  s.router = serve_router_defaults(w.max_seqs);
  read_setting_flags(a, router::router_keys(), s.router);
  if (!a.has("adapter-roots") && !w.adapter_dir.empty())
    s.router.adapter_roots = {w.adapter_dir};
  s.worker.scheduling = s.router.tenants.scheduling;  // the router's order, in every waiting queue
  s.gateway.curve_secret_key = a.str("curve-secret-key");
  s.gateway.curve_public_key = a.str("curve-public-key");
  // The [gateway], [http] and [auth] keys as flags (--listen, --http, --api-key-file, ...): read
  // into a cluster config, checked and applied as a cluster's router node does.
  cluster::cluster_config front;
  for (const auto& t : cluster::front_tables())
    read_setting_flags(a, *t.keys, front);
  const auto name = cluster::front_flag_namer();
  if (auto err = settings::first_message(cluster::check_front(front, name)); !err.empty())
    throw std::invalid_argument(err);
  cluster::apply_front(front, name, s.gateway);
  cluster::apply_front(front, name, s.gateway, s.http);
  // Checked now, before the model loads: a bad file should not cost a minute's start first.
  if (auto err = gateway::check_tls_paths(s.http.tls, "--tls-cert", "--tls-key"); !err.empty())
    throw std::invalid_argument(err);
  if (auto err = gateway::check_tls_files(s.http.tls); !err.empty())
    throw std::invalid_argument(err);
  return s;
}

} // namespace lf::tools
