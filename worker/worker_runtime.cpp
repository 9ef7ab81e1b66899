// A worker built from its settings: the CPU engine or the CUDA engine under the serving loop, in
// every batching mode (the static modes are the loop's scheduling policies). No torch.
#include "worker/worker_runtime.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <mutex>
#include <stdexcept>

#include "core/log.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/cuda/cuda_engine.hpp"
#include "worker/engine/kernels/kernel_table.hpp"
#include "worker/engine/lora/adapter_paths.hpp"
#include "worker/engine/lora/lora_adapter.hpp"
#include "worker/engine/lora/peft_loader.hpp"
#include "worker/engine/model/cpu_runner.hpp"

namespace lf::worker {

namespace {

text::tokenizer tokenizer_of(const worker_settings& s) {
  return text::tokenizer::from_dir(s.tokenizer_dir.empty() ? s.model_dir : s.tokenizer_dir);
}

cache::adapter_cache_config adapter_config(const worker_settings& s) {
  cache::adapter_cache_config cc;
  cc.budget_bytes = s.adapter_cache_mb << 20;
  cc.max_adapters = s.max_adapters;
  return cc;
}

/// Blocks for `s` over `c` when `fit` blocks fit its kv_cache_mb: num_blocks when set, else the
/// budget, but no more than twice what max_seqs sequences hold at full context (the rest keeps
/// finished prompts for the prefix cache): a small model does not pin a large budget.
std::uint32_t pool_blocks(const worker_settings& s, const engine::gpt2_config& c, std::uint64_t fit) {
  if (s.num_blocks > 0)
    return s.num_blocks;
  const auto per_seq = (static_cast<std::uint64_t>(c.n_positions) + s.block_size - 1) / s.block_size;
  const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(fit, 2 * per_seq * s.max_seqs));
  if (n == 0)
    throw std::invalid_argument("kv_cache_mb " + std::to_string(s.kv_cache_mb) + " holds no KV block of "
                                + std::to_string(s.block_size) + " tokens for this model");
  return n;
}

/// The CPU's K/V store's shape for `s` over `c`.
kernels::kv_shape kv_shape_of(const worker_settings& s, const engine::gpt2_config& c) {
  auto k = engine::kv_shape_of(c, static_cast<int>(s.block_size), 0, *kernels::parse_kv_type(s.kv_dtype));
  k.num_blocks = pool_blocks(s, c, kernels::kv_cache::blocks_for_budget(s.kv_cache_mb << 20, k));
  return k;
}

/// Blocks of the GPU's f32 pool for `s` over `c`.
std::uint32_t gpu_blocks(const worker_settings& s, const engine::gpt2_config& c) {
  const auto per_block = engine::cuda_kv_block_bytes(c, static_cast<int>(s.block_size));
  return pool_blocks(s, c, static_cast<std::uint64_t>((s.kv_cache_mb << 20) / per_block));
}

/// `s`, or an exception saying what is wrong with it.
const worker_settings& checked(const worker_settings& s) {
  if (s.model_dir.empty())
    throw std::invalid_argument("worker settings: model_dir is empty");
  if (auto err = check_settings(s); !err.empty())
    throw std::invalid_argument("worker settings: " + err);
  if (!std::filesystem::is_directory(s.model_dir))
    throw std::runtime_error("model directory " + s.model_dir + " does not exist");
  if (!s.adapter_dir.empty() && !std::filesystem::is_directory(s.adapter_dir))
    throw std::runtime_error("adapter directory " + s.adapter_dir + " does not exist");
  return s;
}

} // namespace

/// Members in construction order: the loop is last so it is stopped before what it uses goes.
struct worker_runtime::impl {
  worker_settings settings;
  engine::gpt2_config config;
  text::tokenizer tok;
  // The CPU engine (none on a GPU).
  std::unique_ptr<engine::cpu_model> model;
  std::unique_ptr<kernels::kv_cache> kv;
  /// The worker's copy of the cluster's adapter registry (the loader threads read it).
  struct registry_copy {
    std::mutex m;
    cache::adapter_registry r;
  };
  std::shared_ptr<registry_copy> registry = std::make_shared<registry_copy>();
  std::unique_ptr<cache::adapter_manager> adapters;
  std::unique_ptr<engine::step_engine> runner;
  // The draft model for speculative decoding (draft_model set): its own weights, pool and K/V.
  std::unique_ptr<engine::cpu_model> draft_model;
  std::unique_ptr<kernels::kv_cache> draft_kv;
  std::unique_ptr<engine::cpu_runner> draft_runner;
  std::string gpu_name;  ///< the GPU's name when the model runs on one
  std::unique_ptr<serving_loop> loop;
  mutable std::mutex listed_m;
  mutable std::vector<std::string> listed;
  mutable std::chrono::steady_clock::time_point listed_at{};

  explicit impl(const worker_settings& s) : settings(checked(s)), tok(tokenizer_of(s)) {
    const int threads = s.threads > 0 ? s.threads : share_of_cores(1);
    settings.threads = threads;
    const auto dtype = engine::parse_compute_dtype(s.dtype);
    if (auto gpu = engine::parse_cuda_device(s.device)) {
      config = engine::gpt2_config::load((std::filesystem::path(s.model_dir) / "config.json").string());
      engine::cuda_options o;
      o.device = *gpu;
      o.block_size = static_cast<int>(s.block_size);
      o.num_blocks = gpu_blocks(s, config);
      o.max_rows = static_cast<int>(s.max_batched_tokens);
      o.host_threads = threads;
      adapters = engine::make_cpu_lora_manager(s.adapter_dir, config, adapter_config(s), sources());
      auto e = engine::make_cuda_engine(s.model_dir, o, adapters->lookup());
      const auto& d = e->device();
      log::info("worker", "device " + s.device + ": " + d.name,
                {{"memory_mb", d.memory_bytes >> 20}, {"multiprocessors", d.multiprocessors},
                 {"weights_mb", e->weight_bytes() >> 20}, {"kv_mb", e->kv_bytes() >> 20},
                 {"kv_blocks", o.num_blocks}});
      gpu_name = d.name;
      settings.num_blocks = o.num_blocks;
      runner = std::move(e);
    } else {
      model = std::make_unique<engine::cpu_model>(engine::load_cpu_weights(s.model_dir, dtype), threads);
      if (auto problem = kernels::lf_isa_problem())
        log::warn("worker", *problem);
      const auto& table = kernels::active_table();
      log::info("worker", "kernels " + std::string(table.name) + ": " + std::string(table.summary),
                {{"cpu", kernels::describe(kernels::host_features())},
                 {"runnable", kernels::runnable_names(kernels::host_features())}});
      if (auto note = kernels::slow_path_note(kernels::host_features(), table, s.dtype))
        log::warn("worker", *note);
      config = model->config();
      kv = std::make_unique<kernels::kv_cache>(kv_shape_of(s, config));
      adapters = engine::make_cpu_lora_manager(s.adapter_dir, config, adapter_config(s), sources());
      runner = std::make_unique<engine::cpu_runner>(*model, *kv, adapters->lookup());
      settings.num_blocks = kv->shape().num_blocks;
    }
    auto cfg = make_config(settings, settings.num_blocks, tok.eos_id());
    if (!s.draft_model.empty())
      load_draft(cfg, dtype);
    loop = std::make_unique<serving_loop>(*runner, tok, cfg, adapters.get(), draft_runner.get());
  }

  /// The draft model of settings.draft_model, its pool sized by draft_kv_cache_mb, into `cfg`.
  void load_draft(serving_config& cfg, engine::compute_dtype dtype) {
    const auto& s = settings;
    if (!std::filesystem::is_directory(s.draft_model))
      throw std::runtime_error("draft model directory " + s.draft_model + " does not exist");
    draft_model = std::make_unique<engine::cpu_model>(engine::load_cpu_weights(s.draft_model, dtype), s.draft_threads);
    const auto& dc = draft_model->config();
    if (dc.vocab_size != config.vocab_size)
      throw std::invalid_argument("draft_model " + s.draft_model + " has a vocabulary of "
                                  + std::to_string(dc.vocab_size) + " tokens, the model "
                                  + std::to_string(config.vocab_size) + ": a draft must share the vocabulary");
    auto k = engine::kv_shape_of(dc, static_cast<int>(s.block_size), 0, *kernels::parse_kv_type(s.kv_dtype));
    k.num_blocks = static_cast<std::uint32_t>(
      std::max<std::uint64_t>(1, kernels::kv_cache::blocks_for_budget(s.draft_kv_cache_mb << 20, k)));
    draft_kv = std::make_unique<kernels::kv_cache>(k);
    draft_runner = std::make_unique<engine::cpu_runner>(*draft_model, *draft_kv);
    cfg.draft_blocks = k.num_blocks;
    cfg.draft_block_size = s.block_size;
    cfg.draft_context = static_cast<std::uint32_t>(dc.n_positions);
    log::info("worker", "draft model " + s.draft_model,
              {{"layers", dc.n_layer}, {"embd", dc.n_embd}, {"context", dc.n_positions}, {"kv_blocks", k.num_blocks},
               {"method", std::string(to_string(cfg.method))}});
  }

  /// Registered keys' files, from the registry copy.
  engine::adapter_source_fn sources() const {
    return [reg = registry](const std::string& key) -> std::optional<cache::adapter_source> {
      std::lock_guard<std::mutex> g(reg->m);
      if (auto* s = reg->r.source(key))
        return *s;
      return std::nullopt;
    };
  }

  static serving_config make_config(const worker_settings& s, std::uint32_t blocks, std::int32_t eos) {
    serving_config c;
    c.sched.max_seqs = s.max_seqs;
    c.sched.max_batched_tokens = s.max_batched_tokens;
    c.sched.watermark_blocks = s.watermark_blocks;
    c.sched.policy = s.scheduling;
    c.sched.isolation = s.prefix_cache_isolation;
    c.num_blocks = blocks;
    c.block_size = s.block_size;
    c.prefix_cache = s.prefix_cache;
    c.mode = s.mode;
    c.static_batch = s.static_batch;
    c.speculation = s.speculation;
    c.speculative_tokens = s.speculative_tokens;
    c.method = method_of(s);
    c.seed = s.seed;
    c.eos_id = eos;
    c.prebuild_vocab_trie = true;  // a worker's first constrained request does not stall its loop
    return c;
  }
};

worker_runtime::worker_runtime(const worker_settings& s) : impl_(std::make_unique<impl>(s)) {}

worker_runtime::~worker_runtime() {
  // Cancel and join before the engine and the store go away.
  if (impl_ && impl_->loop)
    impl_->loop->stop(false);
}

serving_loop& worker_runtime::loop() { return *impl_->loop; }

const text::tokenizer& worker_runtime::tokenizer() const { return impl_->tok; }

std::uint32_t worker_runtime::context_window() const {
  return static_cast<std::uint32_t>(impl_->config.n_positions);
}

request_limits worker_runtime::limits() const { return impl_->config.limits(); }

std::size_t worker_runtime::vocab_size() const { return static_cast<std::size_t>(impl_->config.vocab_size); }

std::uint32_t worker_runtime::num_blocks() const { return impl_->settings.num_blocks; }

std::uint32_t worker_runtime::block_size() const { return impl_->settings.block_size; }

const worker_settings& worker_runtime::settings() const { return impl_->settings; }

std::vector<std::string> worker_runtime::adapters() const {
  return impl_->adapters->resident_names();
}

std::vector<cache::adapter_load_record> worker_runtime::adapter_records() const {
  return impl_->adapters->load_records();
}

void worker_runtime::apply_adapter_events(const std::vector<cache::adapter_event>& events, bool whole_log) {
  auto& i = *impl_;
  std::vector<std::string> retired;
  {
    std::lock_guard<std::mutex> g(i.registry->m);
    if (whole_log && !cache::is_prefix_of(i.registry->r.log(), events)) {
      log::warn("worker", "the router's adapter log differs from this worker's copy (a router that "
                          "started over without its log file?): replacing the copy",
                {{"copy_events", i.registry->r.last_seq()}, {"router_events", events.size()}});
      for (const auto& e : i.registry->r.log())
        if (e.op != cache::adapter_op::remove)
          retired.push_back(cache::adapter_key(e.name, e.version));
      i.registry->r = cache::adapter_registry{};
    }
    for (const auto& e : events) {
      try {
        if (i.registry->r.apply(e))
          for (auto& key : i.registry->r.retired_by(e))
            retired.push_back(std::move(key));
      } catch (const std::invalid_argument& err) {
        log::warn("worker", "adapter registry event skipped", {{"error", err.what()}});
      }
    }
  }
  for (const auto& key : retired)
    i.adapters->retire(key);
}

std::vector<cache::adapter_event> worker_runtime::adapter_log() const {
  auto& i = *impl_;
  std::lock_guard<std::mutex> g(i.registry->m);
  return i.registry->r.log();
}

bool worker_runtime::prefetch_adapter(const std::string& key) { return impl_->adapters->prefetch(key); }

std::uint32_t worker_runtime::adapter_slots_free() const { return impl_->adapters->free_slots(); }

cache::adapter_source worker_runtime::check_adapter(const std::string& dir, std::uint32_t max_rank) const {
  return engine::check_peft_adapter(dir, impl_->config, max_rank, adapter_config(impl_->settings).budget_bytes);
}

std::vector<std::string> worker_runtime::servable_adapters() const {
  auto& i = *impl_;
  std::vector<std::string> out;
  {
    std::lock_guard<std::mutex> g(i.registry->m);
    for (const auto& rec : i.registry->r.list())
      if (!rec.removed)
        out.push_back(rec.name);
  }
  if (i.settings.adapter_dir.empty())
    return out;
  std::lock_guard<std::mutex> g(i.listed_m);
  const auto now = std::chrono::steady_clock::now();
  if (i.listed_at == std::chrono::steady_clock::time_point{} || now - i.listed_at > std::chrono::seconds(5)) {
    i.listed = engine::list_adapter_ids(i.settings.adapter_dir);
    i.listed_at = now;
  }
  for (const auto& name : i.listed)  // a registered name shadows the directory's
    if (std::find(out.begin(), out.end(), name) == out.end())
      out.push_back(name);
  return out;
}

std::string worker_runtime::describe() const {
  const auto& s = impl_->settings;
  std::string d = std::string(to_string(s.mode)) + ", " + s.dtype + " weights";
  if (!impl_->gpu_name.empty())
    d += " on " + s.device + " (" + impl_->gpu_name + "), f32 K/V (" + std::to_string(s.num_blocks) + " blocks of "
         + std::to_string(s.block_size) + ")";
  if (impl_->model) {
    d += ", " + s.kv_dtype + " K/V (" + std::to_string(s.num_blocks) + " blocks of " + std::to_string(s.block_size)
         + "), " + std::to_string(impl_->model->threads()) + " thread(s), kernels "
         + std::string(kernels::active_table().name) + " on "
         + kernels::describe(kernels::host_features());
  }
  if (!s.draft_model.empty())
    d += ", draft model " + s.draft_model + " (" + std::to_string(impl_->draft_kv->shape().num_blocks) + " K/V blocks)";
  return d;
}

} // namespace lf::worker
