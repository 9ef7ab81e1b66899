// The only worker/ file outside engine/ that includes ATen (through the engine headers).
#include "worker/worker_runtime.hpp"

#include <filesystem>
#include <stdexcept>

#include "cache/kv_pool.hpp"
#include "worker/engine/blas_threads.hpp"
#include "worker/engine/generator.hpp"
#include "worker/engine/gpt2_model.hpp"
#include "worker/engine/lora_weights.hpp"
#include "worker/engine/paged_runner.hpp"
#include "worker/engine/tokenizer.hpp"
#include "worker/engine/weights.hpp"

namespace lf::worker {

namespace {

engine::tokenizer tokenizer_of(const worker_settings& s) {
  return engine::tokenizer::from_dir(s.tokenizer_dir.empty() ? s.model_dir : s.tokenizer_dir);
}

std::unique_ptr<cache::adapter_manager> make_adapters(const worker_settings& s,
                                                       const engine::gpt2_model& model) {
  if (s.adapter_dir.empty())
    return nullptr;
  cache::adapter_cache_config cc;
  cc.budget_bytes = s.adapter_cache_mb << 20;
  cc.max_adapters = s.max_adapters;
  return engine::make_lora_manager(s.adapter_dir, model, cc);
}

std::uint32_t pool_blocks(const worker_settings& s, const engine::gpt2_config& c) {
  if (s.num_blocks > 0)
    return s.num_blocks;
  auto n = cache::kv_pool::blocks_for_budget(s.kv_cache_mb << 20, c.n_layer, c.n_head,
                                             c.head_dim(), s.block_size);
  if (n == 0)
    throw std::invalid_argument("kv_cache_mb " + std::to_string(s.kv_cache_mb)
                                + " holds no KV block of " + std::to_string(s.block_size)
                                + " tokens for this model");
  return n;
}

} // namespace

/// Members in construction order: the loop is last so it is stopped before what it uses goes.
struct worker_runtime::impl {
  worker_settings settings;
  engine::gpt2_model model;
  engine::tokenizer tok;
  cache::kv_pool pool;
  std::unique_ptr<cache::adapter_manager> adapters;  ///< null without an adapter_dir
  engine::paged_runner runner;
  serving_loop loop;

  impl(const worker_settings& s, engine::gpt2_weights w)
    : settings(s), model(std::move(w)), tok(tokenizer_of(s)),
      pool({model.config().n_layer, model.config().n_head, model.config().head_dim(),
            pool_blocks(s, model.config()), s.block_size}),
      adapters(make_adapters(s, model)),
      runner(model, pool, adapters ? adapters->lookup() : cache::adapter_lookup_fn{}),
      loop(runner, tok, make_config(s, model.config(), pool.config().num_blocks, tok),
           [this](const std::vector<engine::generation_request>& b, const engine::generate_options& o) {
             return engine::generate(model, tok, b, o);
           },
           adapters.get()) {
    settings.num_blocks = pool.config().num_blocks;
  }

  static serving_config make_config(const worker_settings& s, const engine::gpt2_config& mc,
                                     std::uint32_t blocks, const engine::tokenizer& tok) {
    serving_config c;
    c.sched.max_seqs = s.max_seqs;
    c.sched.max_batched_tokens = s.max_batched_tokens;
    c.sched.watermark_blocks = s.watermark_blocks;
    c.num_blocks = blocks;
    c.block_size = s.block_size;
    c.prefix_cache = s.prefix_cache;
    c.mode = s.mode;
    c.static_batch = s.static_batch;
    c.seed = s.seed;
    c.eos_id = tok.eos_id();
    return c;
  }
};

namespace {

engine::gpt2_weights load_weights(const worker_settings& s) {
  if (auto err = check_settings(s); !err.empty())
    throw std::invalid_argument("worker settings: " + err);
  if (!std::filesystem::is_directory(s.model_dir))
    throw std::runtime_error("model directory " + s.model_dir + " does not exist");
  if (!s.adapter_dir.empty() && !std::filesystem::is_directory(s.adapter_dir))
    throw std::runtime_error("adapter directory " + s.adapter_dir + " does not exist");
  if (s.threads > 0)
    engine::set_compute_threads(s.threads);
  if (s.blas_threads > 0)
    engine::set_blas_threads(s.blas_threads);
  return engine::load_gpt2_weights(s.model_dir, engine::parse_compute_dtype(s.dtype));
}

} // namespace

worker_runtime::worker_runtime(const worker_settings& s)
  : impl_(std::make_unique<impl>(s, load_weights(s))) {}

worker_runtime::~worker_runtime() {
  // Cancel and join before the model and the pool go away (they would anyway, as the loop is
  // the last member, but this makes the order explicit).
  if (impl_)
    impl_->loop.stop(false);
}

serving_loop& worker_runtime::loop() { return impl_->loop; }

const engine::tokenizer& worker_runtime::tokenizer() const { return impl_->tok; }

std::uint32_t worker_runtime::context_window() const {
  return static_cast<std::uint32_t>(impl_->model.config().n_positions);
}

request_limits worker_runtime::limits() const { return impl_->model.config().limits(); }

std::size_t worker_runtime::vocab_size() const {
  return static_cast<std::size_t>(impl_->model.config().vocab_size);
}

std::uint32_t worker_runtime::num_blocks() const { return impl_->pool.config().num_blocks; }

std::uint32_t worker_runtime::block_size() const { return impl_->pool.config().block_size; }

const worker_settings& worker_runtime::settings() const { return impl_->settings; }

std::vector<std::string> worker_runtime::adapters() const {
  return impl_->adapters ? impl_->adapters->resident_names() : std::vector<std::string>{};
}

} // namespace lf::worker
