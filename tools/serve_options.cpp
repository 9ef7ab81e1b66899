#include "tools/serve_options.hpp"

#include <filesystem>
#include <stdexcept>
#include <thread>

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

router::cluster_settings cluster_settings_from(args& a) {
  router::cluster_settings s;
  s.worker.model_dir = a.str("model", default_model_dir());
  if (s.worker.model_dir.empty())
    throw std::invalid_argument("--model DIR is needed (no default model in " LF_MODELS_DIR "/default)");
  s.worker.adapter_dir = a.str("adapters", a.has("model") ? std::string{} : default_adapter_dir());
  const auto workers = a.integer("workers", 1);
  if (workers < 1 || workers > 64)
    throw std::invalid_argument("--workers must be in [1, 64]");
  s.workers = static_cast<std::uint32_t>(workers);
  const long cores = std::max(1u, std::thread::hardware_concurrency());
  const auto threads = a.integer("threads", std::max<long>(1, cores / workers));
  if (threads < 1 || threads > 256)
    throw std::invalid_argument("--threads must be in [1, 256]");
  s.worker.threads = static_cast<int>(threads);
  s.worker.dtype = a.str("dtype", "f32");
  const auto kv = a.integer("kv-cache-mb", 256);
  if (kv < 1)
    throw std::invalid_argument("--kv-cache-mb must be >= 1");
  s.worker.kv_budget_mb = static_cast<std::size_t>(kv);
  s.worker.block_size = static_cast<std::uint32_t>(a.integer("block-size", 16));
  s.worker.max_seqs = static_cast<std::uint32_t>(a.integer("max-seqs", 32));
  s.worker.max_batched_tokens = static_cast<std::uint32_t>(a.integer("max-batched-tokens", 512));
  s.worker.prefix_cache = !a.has("no-prefix-cache");
  const auto mode = a.str("mode", "continuous");
  auto m = worker::parse_batching_mode(mode);
  if (!m)
    throw std::invalid_argument("--mode must be continuous, static or static_no_cache (got '" + mode + "')");
  s.worker.mode = *m;
  s.worker.adapter_budget_mb = static_cast<std::size_t>(a.integer("adapter-cache-mb", 256));
  const auto policy = a.str("policy", "least_loaded");
  auto p = actors::parse_placement_policy(policy);
  if (!p)
    throw std::invalid_argument("--policy must be round_robin, least_loaded or adapter_affinity (got '" + policy + "')");
  s.router.placement.policy = *p;
  s.router.max_queue = static_cast<std::size_t>(a.integer("queue-limit", 256));
  s.router.max_inflight_per_worker =
    static_cast<std::uint32_t>(a.integer("max-inflight-per-worker", 2 * s.worker.max_seqs));
  s.gateway.endpoint = a.str("listen", "tcp://127.0.0.1:5555");
  s.gateway.curve_secret_key = a.str("curve-secret-key");
  s.gateway.curve_public_key = a.str("curve-public-key");
  if (auto err = worker::check_settings(s.worker); !err.empty())
    throw std::invalid_argument(err);
  return s;
}

} // namespace lf::tools
