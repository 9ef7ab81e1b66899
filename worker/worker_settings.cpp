#include "worker/worker_settings.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "text/tokenizer.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/cuda/cuda_engine.hpp"
#include "worker/engine/kernels/kv_cache.hpp"

namespace lf::worker {

std::string_view to_string(batching_mode m) {
  switch (m) {
    case batching_mode::continuous: return "continuous";
    case batching_mode::static_batch: return "static";
    case batching_mode::static_no_cache: return "static_no_cache";
  }
  return "continuous";
}

std::optional<batching_mode> parse_batching_mode(std::string_view s) {
  for (auto m : {batching_mode::continuous, batching_mode::static_batch, batching_mode::static_no_cache})
    if (to_string(m) == s)
      return m;
  return std::nullopt;
}

bool is_compute_dtype(std::string_view s) { return s == "f32" || s == "bf16" || s == "int8"; }

int share_of_cores(std::uint32_t workers) {
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::max(1u, cores / std::max(1u, workers)));
}

std::string check_device(const worker_settings& s) {
  if (s.device == "cpu")
    return {};
  if (!engine::parse_cuda_device(s.device))
    return "device must be cpu, cuda or cuda:N (got \"" + s.device + "\")";
  if (s.dtype != "f32" || s.kv_dtype != "f32")
    return "device " + s.device + " computes in f32: set dtype and kv_dtype to \"f32\" (got \"" + s.dtype
           + "\" and \"" + s.kv_dtype + "\")";
  if (s.mode != batching_mode::continuous)
    return "device " + s.device + " runs continuous batching only (mode \"" + std::string(to_string(s.mode))
           + "\" runs on the CPU)";
  return {};
}

std::string check_settings(const worker_settings& s) {
  if (s.model_dir.empty())
    return "model_dir is empty";
  if (!is_compute_dtype(s.dtype))
    return std::string("dtype must be ") + compute_dtype_list + " (got \"" + s.dtype + "\")";
  if (!kernels::parse_kv_type(s.kv_dtype))
    return std::string("kv_dtype must be ") + kv_dtype_list + " (got \"" + s.kv_dtype + "\")";
  if (auto err = check_device(s); !err.empty())
    return err;
  if (s.threads < 0)
    return "threads must be >= 0 (got " + std::to_string(s.threads) + ")";
  if (s.block_size == 0)
    return "block_size must be > 0";
  if (s.num_blocks == 0 && s.kv_cache_mb == 0)
    return "kv_cache_mb must be > 0";
  if (s.max_seqs == 0 || s.max_batched_tokens == 0)
    return "max_seqs and max_batched_tokens must be > 0";
  if (s.max_seqs > s.max_batched_tokens)
    return "max_seqs (" + std::to_string(s.max_seqs) + ") must not exceed max_batched_tokens ("
           + std::to_string(s.max_batched_tokens) + "), or a full batch of decodes never fits a step";
  if (s.speculative_tokens < 1 || s.speculative_tokens > max_speculative_tokens)
    return "speculative_tokens must be 1 to " + std::to_string(max_speculative_tokens) + " (got "
           + std::to_string(s.speculative_tokens) + ")";
  if (s.speculation_method != "auto" && !parse_speculation_method(s.speculation_method))
    return "speculation_method must be ngram, draft or auto (got \"" + s.speculation_method + "\")";
  if (s.speculation_method == "draft" && s.draft_model.empty())
    return "speculation_method \"draft\" needs a draft_model";
  if (!s.draft_model.empty() && s.draft_kv_cache_mb == 0)
    return "draft_kv_cache_mb must be > 0";
  if (s.draft_threads < 1)
    return "draft_threads must be >= 1 (got " + std::to_string(s.draft_threads) + ")";
  if (!s.draft_model.empty() && s.device != "cpu")
    return "draft_model runs on the CPU engine only (device is \"" + s.device + "\")";
  if (s.mode != batching_mode::continuous && s.static_batch == 0)
    return "static_batch must be > 0";
  if (!s.adapter_dir.empty() && (s.adapter_cache_mb == 0 || s.max_adapters == 0))
    return "adapter_cache_mb and max_adapters must be > 0";
  return {};
}

speculation_method method_of(const worker_settings& s) {
  if (s.speculation_method == "auto")
    return s.draft_model.empty() ? speculation_method::ngram : speculation_method::draft;
  return parse_speculation_method(s.speculation_method).value_or(speculation_method::ngram);
}

request_limits model_limits(const worker_settings& s) {
  if (!std::filesystem::is_directory(s.model_dir))
    throw std::runtime_error("model directory " + s.model_dir + " does not exist");
  return engine::gpt2_config::load((std::filesystem::path(s.model_dir) / "config.json").string()).limits();
}

std::shared_ptr<const text::tokenizer> load_tokenizer(const worker_settings& s) {
  return std::make_shared<const text::tokenizer>(
    text::tokenizer::from_dir(s.tokenizer_dir.empty() ? s.model_dir : s.tokenizer_dir));
}

worker_settings resolve_for_process(worker_settings s, std::uint32_t workers) {
  const int share = share_of_cores(workers);
  if (s.threads == 0)
    s.threads = share;
  return s;
}

} // namespace lf::worker
