#pragma once
/// How one worker is configured: the one struct behind `lorafleet serve`'s flags, a cluster
/// config's [workers] / [nodes.workers] tables and worker_runtime, with the one set of defaults;
/// its keys (worker_keys: name, range, doc) and the rules between them (check_settings), which
/// both readers use. Adding a setting: a field here, a row in worker_keys (worker_settings.cpp),
/// and its line in docs/cluster.md (a unit test compares them). Pure C++ (no torch), so the
/// cluster config loader can use it.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cache/cache_salt.hpp"
#include "core/setting_key.hpp"
#include "core/request.hpp"
#include "core/vtc.hpp"
#include "worker/speculation.hpp"

namespace lf::text {
class tokenizer;
}

namespace lf::worker {

/// How the serving loop batches.
enum class batching_mode { continuous, static_batch, static_no_cache };

/// "continuous", "static", "static_no_cache".
std::string_view to_string(batching_mode m);

/// Parses to_string's spellings; std::nullopt otherwise.
std::optional<batching_mode> parse_batching_mode(std::string_view s);

/// The K/V cache types a worker accepts (kernels::parse_kv_type's spellings), as the --kv-dtype of
/// `generate` and the benchmarks lists them (worker_keys has serve's).
inline constexpr const char* kv_dtype_list = "f32, bf16 or int8";

/// Each of `workers` workers' share of this machine's cores, at least 1 and at most 256 (the
/// most `threads` takes).
int share_of_cores(std::uint32_t workers);

/// Everything one worker is built from. Field names are the cluster config's keys.
struct worker_settings {
  std::string model_dir;      ///< config.json + model.safetensors (Hugging Face layout)
  std::string tokenizer_dir;  ///< vocab.json + merges.txt; empty => model_dir
  /// LoRA adapters: PEFT directories under this root, named by their path relative to it
  /// ("shakespeare", "styles/kjv"), loaded on first use. Empty => base model only (requests that
  /// name an adapter end with unknown_adapter).
  std::string adapter_dir;
  /// Threads of this worker's one compute pool (every parallel part of a step runs on it);
  /// 0 => its share of the cores.
  int threads = 0;
  /// Where the model runs: "cpu" (the CPU kernels), or "cuda" / "cuda:N" (GPU N; a build with
  /// CUDA, dtype and kv_dtype "f32").
  std::string device = "cpu";
  std::string dtype = "int8";      ///< compute dtype: f32, bf16, int8 (W8A8) or int4 (W4A8)
  std::string kv_dtype = "bf16";   ///< K/V cache type: f32, bf16 or int8
  /// K/V pool size, at most twice what max_seqs sequences hold at full context (1024 MB holds
  /// about 64 x 455 tokens of GPT-2 124M in bf16; sequences beyond that are preempted and resumed).
  std::size_t kv_cache_mb = 1024;
  std::uint32_t num_blocks = 0;    ///< > 0 overrides kv_cache_mb (tests)
  std::uint32_t block_size = 16;   ///< tokens per KV block
  /// Running sequences per step at most (the rest queue). 64: at 124M as fast as 32 with 64
  /// clients and 8x sooner first tokens; on small models faster (docs/benchmarks.md).
  std::uint32_t max_seqs = 64;
  std::uint32_t max_batched_tokens = 512;  ///< tokens per step at most (prefill chunking)
  std::uint32_t watermark_blocks = 0;      ///< see scheduler_config
  /// Admission order across tenants in the waiting queue (scheduler_config::policy).
  scheduling_policy scheduling = scheduling_policy::vtc;
  bool prefix_cache = true;
  /// Whose prefix-cache blocks a request may reuse (cache/cache_salt.hpp): `tenant` (each named
  /// tenant, e.g. a keyed one, only its own; the default tenant "" shares, as before) or `shared`.
  cache::prefix_isolation prefix_cache_isolation = cache::prefix_isolation::tenant;
  batching_mode mode = batching_mode::continuous;
  std::uint32_t static_batch = 8;          ///< static modes: batch size
  std::uint64_t seed = 0;                  ///< fallback seed base for unseeded requests
  std::size_t adapter_cache_mb = 256;      ///< resident adapter weights at most
  std::uint32_t max_adapters = 64;         ///< resident + loading adapters at most
  /// Speculative decoding with n-gram (prompt-lookup) proposals, for requests that do not choose
  /// (worker/speculation.hpp): "off", "on", or "auto" (per step, where the measured step cost
  /// says it pays: small batches). Never changes a request's output. CPU engine only.
  speculation_mode speculation = speculation_mode::automatic;
  /// The most tokens proposed per request per step (1 to max_speculative_tokens); each request's
  /// length then adapts to its acceptance.
  std::uint32_t speculative_tokens = 4;
  /// A draft model for speculative decoding (worker/draft_proposer.hpp): a smaller GPT-2
  /// checkpoint with the target's vocabulary, run on the CPU beside it in `dtype`, its K/V in
  /// kv_dtype. Empty: none.
  std::string draft_model;
  /// Where proposals come from: "ngram" (lookup in the request's own tokens), "draft" (the draft
  /// model; n-gram lookup for the rows it cannot serve: its pool full, past its context) or
  /// "auto" (draft when draft_model is set, else ngram).
  std::string speculation_method = "auto";
  /// The draft model's K/V pool (MB; a row that does not fit falls back to n-gram lookup).
  std::size_t draft_kv_cache_mb = 64;
  /// Threads of the draft model's own pool (it runs between the model's steps, not beside them).
  /// 1: a small model's steps are too short to pay for a fork-join per operation (measured:
  /// docs/benchmarks.md, "Speculative decoding").
  int draft_threads = 1;
};

/// The method `s` speculates with (its "auto" resolved); check_settings has checked it.
speculation_method method_of(const worker_settings& s);

/// The worker keys: a cluster config's [workers] / [nodes.workers] keys and the flags of `serve`
/// and `node --join` (each named after its key), in --help's order. Every key's range and doc is
/// written here once; defaults are the struct's.
const std::vector<settings::setting_key<worker_settings>>& worker_keys();

/// What is wrong with `s`, every problem (empty: nothing): each key's value against its range or
/// choices in worker_keys, and every rule between keys (max_seqs at most max_batched_tokens; a GPU
/// device computes in f32, continuous batching only, no draft model; speculation_method "draft"
/// needs a draft_model; static modes need a static_batch), one wording per rule, keys named by
/// `name` (settings::file_key for a config file, settings::flag_namer for flags). model_dir and
/// adapter_dir are not keys (a config's [cluster] fills them in at start): not checked here.
std::vector<settings::setting_issue> check_settings(const worker_settings& s, const settings::key_namer& name);

/// The first of those problems in a config file's names, or an empty string.
std::string check_settings(const worker_settings& s);

/// The limits requests for this model are validated against (core/request.hpp): context window
/// and vocabulary from `s.model_dir`/config.json, default policy limits. Throws
/// std::runtime_error naming the file when it cannot be read.
request_limits model_limits(const worker_settings& s);

/// The model's tokenizer (`tokenizer_dir`, or `model_dir` when that is empty), for the edge that
/// tokenizes prompts. Throws std::runtime_error naming the file.
std::shared_ptr<const text::tokenizer> load_tokenizer(const worker_settings& s);

/// `s` with its automatic values filled in for `workers` workers sharing one process: threads 0
/// becomes the workers' share of the cores.
worker_settings resolve_for_process(worker_settings s, std::uint32_t workers);

} // namespace lf::worker
