#include "tools/serve_options.hpp"

#include <filesystem>
#include <stdexcept>

#include "worker/compute_settings.hpp"

namespace lf::tools {

namespace fs = std::filesystem;

std::string default_model_dir() {
  const std::string d = LF_MODELS_DIR "/default";
  return fs::exists(d + "/config.json") ? d : std::string{};
}

std::string default_adapter_dir() {
  const std::string d = LF_MODELS_DIR "/adapters";
  return fs::is_directory(d) ? d : std::string{};
}

cluster::cluster_settings cluster_settings_from(args& a, const std::string& adapter_dir_flag) {
  cluster::cluster_settings s;
  s.worker.model_dir = a.str("model", default_model_dir());
  if (s.worker.model_dir.empty())
    throw std::invalid_argument("--model DIR is needed (no default model in " LF_MODELS_DIR "/default)");
  s.worker.adapter_dir = a.str(adapter_dir_flag, a.has("model") ? std::string{} : default_adapter_dir());
  const auto workers = a.integer_in("workers", 1, 1, 64);
  s.workers = static_cast<std::uint32_t>(workers);
  const auto share = worker::share_of_cores(s.workers);
  const auto threads = a.integer_in("threads", share, 1, 256);
  s.worker.threads = static_cast<int>(threads);
  // One OpenBLAS pool per process: workers sharing it wait on each other, so by default each
  // worker's share of the cores (1 for two workers on two cores), whatever --threads is.
  s.worker.blas_threads =
    static_cast<int>(a.integer_in("blas-threads", share, 1, 256));
  s.worker.dtype = a.str("dtype", "f32");
  if (!worker::is_compute_dtype(s.worker.dtype))
    throw std::invalid_argument(std::string("--dtype must be ") + worker::compute_dtype_list + " (got '"
                                + s.worker.dtype + "')");
  s.worker.kv_budget_mb = static_cast<std::size_t>(a.integer_in("kv-cache-mb", 256, 1, 1 << 20));
  s.worker.block_size = static_cast<std::uint32_t>(a.integer_in("block-size", 16, 1, 1024));
  s.worker.max_seqs = static_cast<std::uint32_t>(a.integer_in("max-seqs", 32, 1, 4096));
  s.worker.max_batched_tokens =
    static_cast<std::uint32_t>(a.integer_in("max-batched-tokens", 512, 1, 1 << 20));
  if (s.worker.max_seqs > s.worker.max_batched_tokens)
    throw std::invalid_argument("--max-seqs (" + std::to_string(s.worker.max_seqs)
                                + ") must not exceed --max-batched-tokens ("
                                + std::to_string(s.worker.max_batched_tokens) + ")");
  s.worker.prefix_cache = !a.has("no-prefix-cache");
  const auto mode = a.str("mode", "continuous");
  auto m = worker::parse_batching_mode(mode);
  if (!m)
    throw std::invalid_argument("--mode must be continuous, static or static_no_cache (got '" + mode + "')");
  s.worker.mode = *m;
  s.worker.adapter_budget_mb = static_cast<std::size_t>(a.integer_in("adapter-cache-mb", 256, 1, 1 << 20));
  const auto policy = a.str("policy", "least_loaded");
  auto p = router::parse_placement_policy(policy);
  if (!p)
    throw std::invalid_argument("--policy must be round_robin, least_loaded or adapter_affinity (got '" + policy + "')");
  s.router.placement.policy = *p;
  s.router.max_queue = static_cast<std::size_t>(a.integer_in("queue-limit", 256, 0, 1'000'000));
  s.router.max_inflight_per_worker = static_cast<std::uint32_t>(
    a.integer_in("max-inflight-per-worker", 2 * s.worker.max_seqs, 1, 1'000'000));
  s.gateway.endpoint = a.str("listen", "tcp://127.0.0.1:5555");
  s.gateway.curve_secret_key = a.str("curve-secret-key");
  s.gateway.curve_public_key = a.str("curve-public-key");
  if (auto err = worker::check_settings(s.worker); !err.empty())
    throw std::invalid_argument(err);
  return s;
}

} // namespace lf::tools
