// `lorafleet generate`: prompts through the serving engine in this process (the worker's serving
// loop over the CPU engine: continuous batching, the paged K/V store, LoRA adapters), or with
// --no-kv-cache as the course's recompute-everything baseline (the same loop and engine, every
// sequence computed again for each token).
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <thread>

#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/common/kv_dtype_flag.hpp"
#include "tools/cli/sampling_flags.hpp"
#include "worker/engine/kernels/kernel_table.hpp"
#include "worker/engine/lora/adapter_paths.hpp"
#include "worker/engine/model/cpu_lora.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/serving_loop.hpp"

namespace lf::tools {

namespace fs = std::filesystem;
using namespace lf::engine;
using lf::text::tokenizer;

namespace {

/// `--adapter` values, one for every prompt or one per prompt; "-" or "none" is the base model.
/// A value is a directory, or with --adapters ROOT a name under ROOT. Returns each prompt's
/// adapter directory ("" = base).
std::vector<std::string> adapter_dirs(const std::vector<std::string>& values, const std::string& root,
                                      std::size_t prompts) {
  std::vector<std::string> out(prompts);
  if (values.empty())
    return out;
  if (values.size() != 1 && values.size() != prompts)
    throw std::invalid_argument("give one --adapter for every prompt or one per prompt ("
                                + std::to_string(prompts) + "); '-' is the base model");
  for (std::size_t i = 0; i < prompts; ++i) {
    const auto& v = values[values.size() == 1 ? 0 : i];
    if (v == "-" || v == "none")
      continue;
    out[i] = root.empty() || fs::is_directory(v) ? v : resolve_adapter_path(root, v).string();
  }
  return out;
}

} // namespace

int cmd_generate(int argc, char** argv) {
  args a(argc, argv, 2, {"no-kv-cache", "ignore-eos", "quiet"});
  auto dir = a.str("model", default_model_dir());
  if (dir.empty())
    throw std::invalid_argument("--model DIR is needed (no default model in " + models_dir() + "/default)");
  auto prompts = a.all("prompt");
  if (prompts.empty())
    throw std::invalid_argument("missing required --prompt");
  sampling_params defaults;  // greedy, 32 tokens
  defaults.temperature = 0;
  defaults.max_tokens = 32;
  auto params = read_sampling(a, defaults);
  const int threads = static_cast<int>(a.integer_in("threads", std::max(1u, std::thread::hardware_concurrency()), 1, 256));
  const auto dtype_name = a.str("dtype", "int8");
  auto dtype = parse_compute_dtype(dtype_name);
  const auto kv_type = kv_dtype_flag(a, "bf16");
  bool quiet = a.has("quiet");
  const auto adapters = adapter_dirs(a.all("adapter"), a.str("adapters", a.has("model") ? std::string{} : default_adapter_dir()),
                                     prompts.size());
  const bool no_cache = a.has("no-kv-cache");
  a.finish();

  auto tok = tokenizer_for(dir);
  cpu_model model(load_cpu_weights(dir, dtype), threads);
  if (auto note = kernels::slow_path_note(kernels::host_features(), kernels::active_table(), dtype_name))
    std::cerr << "note: " << *note << "\n";
  const auto& cfg = model.config();
  // Adapters by synthetic name ("a1", ...): the manager loads each from its directory.
  std::map<std::string, std::string> dir_of;
  std::vector<std::string> name_of(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i)
    if (!adapters[i].empty()) {
      auto it = std::find_if(dir_of.begin(), dir_of.end(), [&](auto& kv) { return kv.second == adapters[i]; });
      name_of[i] = it != dir_of.end() ? it->first : "a" + std::to_string(dir_of.size() + 1);
      dir_of[name_of[i]] = adapters[i];
    }
  std::unique_ptr<cache::adapter_manager> manager;
  if (!dir_of.empty())
    manager = std::make_unique<cache::adapter_manager>(
      cache::adapter_cache_config{},
      [&](const std::string& name) -> std::shared_ptr<const cache::adapter_payload> {
        return std::make_shared<const cpu_lora>(load_peft_adapter(dir_of.at(name), cfg), cfg);
      },
      [&](const std::string& name) { return dir_of.count(name) ? std::string() : "unknown adapter " + name; });
  // Room for every prompt at its longest.
  std::vector<validated_request> reqs;
  std::uint32_t blocks = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    reqs.push_back(validate_or_throw({tok.encode(prompts[i]), params, name_of[i], 0}, cfg.limits()));
    blocks += static_cast<std::uint32_t>((reqs.back().max_length() + 15) / 16);
  }
  kernels::kv_cache kv(kv_shape_of(cfg, 16, blocks, kv_type));
  cpu_runner runner(model, kv, manager ? manager->lookup() : cache::adapter_lookup_fn{});
  worker::serving_config sc;
  sc.num_blocks = blocks;
  sc.block_size = 16;
  sc.sched.max_seqs = static_cast<std::uint32_t>(prompts.size());
  sc.sched.max_batched_tokens = std::max<std::uint32_t>(512, sc.sched.max_seqs);
  sc.eos_id = tok.eos_id();
  sc.seed = params.seed.value_or(0);
  if (no_cache) {
    // The recompute baseline: the prompts as one batch, every sequence computed again per token.
    sc.mode = worker::batching_mode::static_no_cache;
    sc.static_batch = static_cast<std::uint32_t>(prompts.size());
    sc.static_wait = std::chrono::milliseconds(0);
  }
  worker::serving_loop loop(runner, tok, sc, manager.get());
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::optional<worker::request_result>> results(prompts.size());
  const bool stream = prompts.size() == 1 && !quiet;
  if (stream)
    std::cout << prompts[0] << std::flush;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    worker::request_callbacks cb;
    if (stream)
      cb.on_token = [](std::int32_t, std::string_view d) { std::cout << d << std::flush; };
    cb.on_done = [&, i](worker::request_result r) {
      std::lock_guard<std::mutex> g(m);
      results[i] = std::move(r);
      cv.notify_all();
    };
    loop.submit(std::move(reqs[i]), std::nullopt, std::move(cb));
  }
  {
    std::unique_lock<std::mutex> lk(m);
    cv.wait(lk, [&] { return std::all_of(results.begin(), results.end(), [](auto& r) { return r.has_value(); }); });
  }
  loop.stop(true);
  int failed = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto& r = *results[i];
    if (r.outcome != worker::request_outcome::finished) {
      std::cerr << "[" << i << "] failed: " << r.message << "\n";
      ++failed;
      continue;
    }
    if (stream)
      std::cout << std::endl;
    else
      std::cout << "[" << i << "] " << prompts[i] << r.text << "\n";
    std::cerr << "[" << i << "] " << r.finish_reason << "; " << r.usage.prompt_tokens << " prompt + "
              << r.usage.completion_tokens << " tokens; first token " << r.timings.ttft_ms << " ms, total "
              << r.timings.total_ms << " ms\n";
  }
  std::cerr << "model " << dir << ": " << cfg.n_layer << " layers, " << cfg.n_embd << " embd; " << dtype_name
            << " weights, " << (no_cache ? "no K/V cache (each token recomputes the sequence)"
                                           : std::string(kernels::to_string(kv_type)) + " K/V")
            << ", " << threads << " thread(s), kernels " << kernels::active_table().name << "\n";
  return failed ? 1 : 0;
}

} // namespace lf::tools
