#include "tools/cli/serve_options.hpp"

#include <filesystem>
#include <sstream>
#include <stdexcept>

#include "core/api_keys.hpp"
#include "gateway/host_port.hpp"
#include "gateway/tls_context.hpp"
#include "tools/cli/kv_dtype_flag.hpp"
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

worker::worker_settings worker_settings_from(args& a, const std::string& adapter_dir_flag, std::uint32_t& workers) {
  worker::worker_settings w;
  const worker::worker_settings defaults;  // the one set of worker defaults
  w.model_dir = a.str("model", default_model_dir());
  if (w.model_dir.empty())
    throw std::invalid_argument("--model DIR is needed (no default model in " + models_dir() + "/default)");
  w.adapter_dir = a.str(adapter_dir_flag, a.has("model") ? std::string{} : default_adapter_dir());
  workers = static_cast<std::uint32_t>(a.integer_in("workers", 1, 1, 64));
  // 0 (the default) becomes each worker's share of the cores in resolve_for_process.
  w.threads = static_cast<int>(a.integer_in("threads", defaults.threads, 0, 256));
  // A GPU computes in f32: its dtype defaults follow the device.
  w.device = a.str("device", defaults.device);
  const bool gpu = w.device != "cpu";
  w.dtype = a.str("dtype", gpu ? "f32" : defaults.dtype);
  if (!worker::is_compute_dtype(w.dtype))
    throw std::invalid_argument(std::string("--dtype must be ") + worker::compute_dtype_list + " (got '"
                                + w.dtype + "')");
  w.kv_dtype = std::string(kernels::to_string(kv_dtype_flag(a, gpu ? "f32" : defaults.kv_dtype)));
  w.kv_cache_mb = static_cast<std::size_t>(a.integer_in("kv-cache-mb", static_cast<std::int64_t>(defaults.kv_cache_mb), 1, 1 << 20));
  w.block_size = static_cast<std::uint32_t>(a.integer_in("block-size", defaults.block_size, 1, 1024));
  w.max_seqs = static_cast<std::uint32_t>(a.integer_in("max-seqs", defaults.max_seqs, 1, 4096));
  w.max_batched_tokens =
    static_cast<std::uint32_t>(a.integer_in("max-batched-tokens", defaults.max_batched_tokens, 1, 1 << 20));
  w.prefix_cache = !a.has("no-prefix-cache");
  const auto isolation = a.str("prefix-cache-isolation", "tenant");
  auto iso = cache::parse_prefix_isolation(isolation);
  if (!iso)
    throw std::invalid_argument("--prefix-cache-isolation must be tenant or shared (got '" + isolation + "')");
  w.prefix_cache_isolation = *iso;
  const auto mode = a.str("mode", std::string(worker::to_string(defaults.mode)));
  auto m = worker::parse_batching_mode(mode);
  if (!m)
    throw std::invalid_argument("--mode must be continuous, static or static_no_cache (got '" + mode + "')");
  w.mode = *m;
  const auto spec = a.str("speculation", std::string(worker::to_string(defaults.speculation)));
  auto sm = worker::parse_speculation_mode(spec);
  if (!sm)
    throw std::invalid_argument("--speculation must be off, on or auto (got '" + spec + "')");
  w.speculation = *sm;
  w.speculative_tokens = static_cast<std::uint32_t>(
    a.integer_in("speculative-tokens", defaults.speculative_tokens, 1, worker::max_speculative_tokens));
  w.draft_model = a.str("draft-model", "");
  w.speculation_method = a.str("speculation-method", defaults.speculation_method);
  w.draft_kv_cache_mb = static_cast<std::size_t>(
    a.integer_in("draft-kv-cache-mb", static_cast<std::int64_t>(defaults.draft_kv_cache_mb), 1, 1 << 20));
  w.draft_threads = static_cast<int>(a.integer_in("draft-threads", defaults.draft_threads, 1, 256));
  w.adapter_cache_mb = static_cast<std::size_t>(
    a.integer_in("adapter-cache-mb", static_cast<std::int64_t>(defaults.adapter_cache_mb), 1, 1 << 20));
  w.max_adapters = static_cast<std::uint32_t>(a.integer_in("max-adapters", defaults.max_adapters, 1, 1 << 20));
  w = worker::resolve_for_process(std::move(w), workers);
  if (auto err = settings::first_message(worker::check_settings(w, settings::flag_namer(worker::worker_keys())));
      !err.empty())
    throw std::invalid_argument(err);
  return w;
}

cluster::cluster_settings cluster_settings_from(args& a, const std::string& adapter_dir_flag) {
  cluster::cluster_settings s;
  s.worker = worker_settings_from(a, adapter_dir_flag, s.workers);
  const auto& w = s.worker;
  const auto policy = a.str("policy", "cache_aware");  // the default: docs/benchmarks.md, "Cache-aware routing"
  auto p = router::parse_placement_policy(policy);
  if (!p)
    throw std::invalid_argument("--policy must be round_robin, least_loaded, adapter_affinity, priced or cache_aware (got '" + policy
                                + "')");
  s.router.placement.policy = *p;
  s.router.placement.max_concurrent_loads = static_cast<std::uint32_t>(
    a.integer_in("max-concurrent-loads", s.router.placement.max_concurrent_loads, 0, 1 << 20));
  s.router.placement.load_price_weight = a.real_above("load-price-weight", 1, 0, true, 1000);
  s.router.placement.decode_share = a.real_above("decode-share", 0, 0, true, 1000);
  s.router.placement.balance_abs = static_cast<std::uint32_t>(
    a.integer_in("balance-abs", s.router.placement.balance_abs, 0, 1 << 20));
  s.router.placement.balance_rel = a.real_above("balance-rel", s.router.placement.balance_rel, 1, true, 1000);
  const auto scope = a.str("balance-scope", "prefix");
  if (scope != "prefix" && scope != "all")
    throw std::invalid_argument("--balance-scope must be prefix or all (got '" + scope + "')");
  s.router.placement.balance_on_prefix = scope == "prefix";
  s.router.placement.aging_ms =
    static_cast<double>(a.integer_in("placement-aging-ms", static_cast<std::int64_t>(s.router.placement.aging_ms), 0, 86'400'000));
  s.router.max_queue = static_cast<std::size_t>(a.integer_in("queue-limit", 256, 0, 1'000'000));
  s.router.max_inflight_per_worker = static_cast<std::uint32_t>(
    a.integer_in("max-inflight-per-worker", 2 * w.max_seqs, 1, 1'000'000));
  s.router.max_queue_wait =
    std::chrono::milliseconds(a.integer_in("max-queue-wait-ms", s.router.max_queue_wait.count(), 0, 86'400'000));
  const auto drain_kv = a.str("drain-kv", "ship");
  if (drain_kv != "ship" && drain_kv != "recompute")
    throw std::invalid_argument("--drain-kv must be ship or recompute (got '" + drain_kv + "')");
  s.router.ship_kv = drain_kv == "ship";
  s.router.adapter_log = a.str("adapter-log");
  if (a.has("adapter-roots")) {
    std::stringstream roots(a.str("adapter-roots"));
    for (std::string root; std::getline(roots, root, ',');)
      if (!root.empty())
        s.router.adapter_roots.push_back(root);
  } else if (!w.adapter_dir.empty()) {
    s.router.adapter_roots = {w.adapter_dir};
  }
  s.router.max_adapter_rank = static_cast<std::uint32_t>(a.integer_in("max-adapter-rank", 64, 1, 4096));
  s.router.prefetch_copies = static_cast<std::uint32_t>(a.integer_in("prefetch-copies", 1, 0, 1024));
  const auto scheduling = a.str("scheduling", "vtc");
  auto sp = parse_scheduling_policy(scheduling);
  if (!sp)
    throw std::invalid_argument("--scheduling must be fcfs or vtc (got '" + scheduling + "')");
  s.router.tenants.scheduling = *sp;
  s.worker.scheduling = *sp;
  const auto deadline = a.str("deadline-admission", "on");
  if (deadline != "on" && deadline != "off")
    throw std::invalid_argument("--deadline-admission must be on or off (got '" + deadline + "')");
  s.router.deadline_admission = deadline == "on";
  s.router.deadline_margin = a.real_above("deadline-margin", 0.1, 0, true, 0.9);
  s.gateway.endpoint = a.str("listen", "tcp://127.0.0.1:5555");
  s.gateway.curve_secret_key = a.str("curve-secret-key");
  s.gateway.curve_public_key = a.str("curve-public-key");
  s.http.listen = a.str("http");
  if (std::string why; a.has("http") && !gateway::parse_host_port(s.http.listen, &why))
    throw std::invalid_argument("--http: " + why);
  s.http.model_name = a.str("model-name");
  if (const auto file = a.str("api-key-file"); !file.empty()) {
    try {
      auto keys = std::make_shared<const auth::key_table>(auth::load_key_file(file));
      s.gateway.keys = keys;
      s.http.keys = keys;
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(std::string("--api-key-file: ") + e.what());
    }
  }
  s.http.metrics_need_key = a.has("metrics-need-key");
  if (s.http.metrics_need_key && !(s.http.keys && s.http.keys->has_secrets()))
    throw std::invalid_argument("--metrics-need-key needs --api-key-file with at least one HTTP key");
  s.http.tls = {a.str("tls-cert"), a.str("tls-key")};
  if (s.http.tls.enabled() && !a.has("http"))
    throw std::invalid_argument("--tls-cert and --tls-key need --http (they secure the HTTP gateway)");
  // Checked now, before the model loads: a bad file should not cost a minute's start first.
  if (auto err = gateway::check_tls_paths(s.http.tls, "--tls-cert", "--tls-key"); !err.empty())
    throw std::invalid_argument(err);
  if (auto err = gateway::check_tls_files(s.http.tls); !err.empty())
    throw std::invalid_argument(err);
  return s;
}

} // namespace lf::tools
