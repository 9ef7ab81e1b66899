#include "worker/worker_settings.hpp"

#include <algorithm>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "text/tokenizer.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/cuda/cuda_engine.hpp"

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

int share_of_cores(std::uint32_t workers) {
  const auto cores = std::max(1u, std::thread::hardware_concurrency());
  return static_cast<int>(std::min(256u, std::max(1u, cores / std::max(1u, workers))));
}

const std::vector<settings::setting_key<worker_settings>>& worker_keys() {
  using settings::key_scope;
  static const auto keys = [] {
    settings::table<worker_settings> t;
    const std::vector<std::pair<std::string, std::string>> kv_dtypes{{"f32", "f32"}, {"bf16", "bf16"}, {"int8", "int8"}};
    auto dtypes = kv_dtypes;  // weights: also 4-bit (the K/V cache has no int4)
    dtypes.emplace_back("int4", "int4");
    t.text("device", LF_SETTING(device), "where the model runs: cpu, or cuda / cuda:N (GPU N, in f32)");
    t.integer("threads", LF_SETTING(threads), 0, 256, "the worker's compute pool; 0: the process's cores / its workers");
    t.choice("dtype", LF_SETTING(dtype), dtypes, "compute dtype (int8: W8A8, int4: W4A8)");
    t.choice("kv_dtype", LF_SETTING(kv_dtype), kv_dtypes, "K/V cache type (int8: one scale per token and head)");
    t.integer("kv_cache_mb", LF_SETTING(kv_cache_mb), 1, 1 << 20,
              "K/V pool per worker, at most twice what max_seqs sequences hold at full context")
      .meta = "MB";
    t.integer("block_size", LF_SETTING(block_size), 1, 1024, "tokens per K/V block");
    t.integer("max_seqs", LF_SETTING(max_seqs), 1, 4096, "running sequences per step at most; more queue");
    t.integer("max_batched_tokens", LF_SETTING(max_batched_tokens), 1, 1 << 20,
              "tokens per step at most (prefill chunking); at least max_seqs");
    t.choice("mode", LF_SETTING(mode),
             settings::spelt({batching_mode::continuous, batching_mode::static_batch, batching_mode::static_no_cache}),
             "how the loop batches (the static modes are the benchmarks' baselines)")
      .scope = key_scope::flags_only;
    t.boolean("prefix_cache", LF_SETTING(prefix_cache), "reuse K/V blocks of shared prompt prefixes").bool_style =
      settings::bool_flag::no_switch;
    t.choice("prefix_cache_isolation", LF_SETTING(prefix_cache_isolation),
             settings::spelt({cache::prefix_isolation::tenant, cache::prefix_isolation::shared}),
             "whose cached blocks a request may reuse: its own tenant's, or everyone's");
    t.choice("speculation", LF_SETTING(speculation),
             settings::spelt({speculation_mode::off, speculation_mode::on, speculation_mode::automatic}),
             "n-gram speculative decoding for requests that do not choose (auto: where it pays)");
    t.integer("speculative_tokens", LF_SETTING(speculative_tokens), 1, max_speculative_tokens,
              "the most tokens proposed per request per step");
    t.path("draft_model", LF_SETTING(draft_model),
           "a smaller GPT-2 with the model's vocabulary that proposes tokens, on the CPU")
      .meta = "DIR";
    t.choice("speculation_method", LF_SETTING(speculation_method),
             std::vector<std::pair<std::string, std::string>>{{"ngram", "ngram"}, {"draft", "draft"}, {"auto", "auto"}},
             "where proposals come from (draft needs draft_model; auto: draft when one is set)");
    t.integer("draft_kv_cache_mb", LF_SETTING(draft_kv_cache_mb), 1, 1 << 20, "the draft model's K/V pool").meta = "MB";
    t.integer("draft_threads", LF_SETTING(draft_threads), 1, 256, "threads of the draft model's pool");
    t.integer("adapter_cache_mb", LF_SETTING(adapter_cache_mb), 1, 1 << 20, "resident LoRA weights per worker").meta =
      "MB";
    t.integer("max_adapters", LF_SETTING(max_adapters), 1, 1 << 20, "resident + loading adapters per worker");
    return t.rows;
  }();
  return keys;
}

std::vector<settings::setting_issue> check_settings(const worker_settings& s, const settings::key_namer& name) {
  std::vector<settings::setting_issue> out;
  auto issue = [&](const char* key, std::string message) { out.push_back({key, std::move(message)}); };
  // Each key alone, for settings built in code (the readers refuse these values with their own
  // wording before they get here).
  for (const auto& k : worker_keys()) {
    const auto v = k.get(s);
    if (k.type == settings::key_type::integer) {
      const auto x = std::get<std::int64_t>(v);
      if (x < k.lo || x > k.hi)
        out.push_back({k.name, name(k.name) + " must be in [" + settings::quantity(k.lo) + ", "
                                 + settings::quantity(k.hi) + "] (got " + std::to_string(x) + ")"});
    } else if (k.type == settings::key_type::choice && std::get<std::string>(v).empty()) {
      out.push_back({k.name, name(k.name) + " must be " + settings::choice_list(k.choices, true)});
    }
  }
  // The rules between keys.
  if (s.device != "cpu") {
    if (!engine::parse_cuda_device(s.device))
      issue("device", name("device") + " must be cpu, cuda or cuda:N (got \"" + s.device + "\")");
    else if (s.dtype != "f32" || s.kv_dtype != "f32")
      issue("device", name("device") + " " + s.device + " computes in f32: set " + name("dtype") + " and "
                        + name("kv_dtype") + " to \"f32\" (got \"" + s.dtype + "\" and \"" + s.kv_dtype + "\")");
    else if (s.mode != batching_mode::continuous)
      issue("device", name("device") + " " + s.device + " runs continuous batching only (" + name("mode") + " \""
                        + std::string(to_string(s.mode)) + "\" runs on the CPU)");
    if (!s.draft_model.empty())
      issue("draft_model", name("draft_model") + " runs on the CPU engine only (" + name("device") + " is \""
                             + s.device + "\")");
  }
  if (s.max_seqs > s.max_batched_tokens)
    issue("max_batched_tokens", name("max_seqs") + " (" + std::to_string(s.max_seqs) + ") must not exceed "
                                  + name("max_batched_tokens") + " (" + std::to_string(s.max_batched_tokens)
                                  + "), or a full batch of decodes never fits a step");
  if (s.speculation_method == "draft" && s.draft_model.empty())
    issue("speculation_method", name("speculation_method") + " \"draft\" needs a " + name("draft_model"));
  if (s.mode != batching_mode::continuous && s.static_batch == 0)
    issue("mode", "static_batch must be > 0 in " + name("mode") + " \"" + std::string(to_string(s.mode)) + "\"");
  return out;
}

std::string check_settings(const worker_settings& s) {
  return settings::first_message(check_settings(s, settings::file_key));
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
