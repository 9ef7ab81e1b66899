// bench_lora: what serving many LoRA adapters in one continuous batch costs, measured through the
// worker's serving loop and adapter cache (a program, not a test).
//
//   bench_lora [--model DIR] [--threads N] [--dtype int8|bf16|f32] [--requests N] [--concurrency N]
//              [--prompt-tokens N] [--max-tokens N] [--rank R] [--adapter-cache-mb MB]
//              [--only base,1,8,64,skewed,naive8,naive64] [--json FILE] [--quick]
//
// Without --model it writes a GPT-2-124M-shaped random checkpoint to a temporary directory
// (--quick: a 2-layer, 128-wide one), then 64 random rank-R adapters on all four modules
// (attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj). Each scenario runs a closed loop of
// `concurrency` clients (a client sends its next request when the last one ends) until
// `requests` have finished, with random prompts and greedy decoding of exactly max-tokens:
//   base     no adapter
//   1/8/64   that many distinct adapters, each request picks one uniformly
//   skewed   64 adapters, 80% of requests on one of them, the rest uniform over the others
//   naive8/naive64  8 / 64 uniform, but a step holds one adapter only (single_adapter_batches):
//            the next adapter's requests wait until the current one's have all finished
// Adapters are loaded into the cache before the clock starts (the load time is reported).
// First, the forward pass alone: one decode step of 32 rows with 0, 1, 8 or 32 distinct adapters
// (each adapter's rows contiguous, as cpu_runner orders them), steps interleaved, median.
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <mutex>
#include <random>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/common/bench_stats.hpp"
#include "worker/engine/model/cpu_model.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/reference/model_writer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf;
using namespace lf::engine;
using lf::text::tokenizer;
using namespace lf::worker;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr int num_adapters = 64;

std::string adapter_name(int i) {
  std::ostringstream s;
  s << "a" << std::setw(2) << std::setfill('0') << i;
  return s.str();
}

struct bench_settings {
  int requests = 128;
  int concurrency = 32;
  int prompt_tokens = 32;
  int max_tokens = 64;
  std::size_t cache_mb = 512;
};

struct scenario {
  std::string key;          ///< --only name
  std::string label;
  int adapters = 0;         ///< distinct adapters (0 = base model)
  bool skewed = false;      ///< 80% of requests on adapter 0
  bool single_adapter = false;
};

struct outcome {
  double seconds = 0, load_ms = 0;
  std::uint64_t tokens = 0, steps = 0, failed = 0;
  std::vector<double> latency_ms, ttft_ms;
  cache::adapter_cache_stats cache;
};

/// Which adapter request `i` uses ("" = base).
std::string pick_adapter(const scenario& s, std::mt19937_64& rng) {
  if (s.adapters == 0)
    return {};
  std::uniform_int_distribution<int> any(0, s.adapters - 1);
  if (s.skewed) {
    if (std::uniform_real_distribution<double>(0, 1)(rng) < 0.8)
      return adapter_name(0);
    return adapter_name(std::uniform_int_distribution<int>(1, s.adapters - 1)(rng));
  }
  return adapter_name(any(rng));
}

outcome run(const scenario& sc, const bench_settings& st, cpu_model& model, const tokenizer& tok,
            const std::string& adapter_root) {
  const auto& mc = model.config();
  cache::adapter_cache_config cc;
  cc.budget_bytes = st.cache_mb << 20;
  cc.max_adapters = 2 * num_adapters;
  auto mgr = make_cpu_lora_manager(adapter_root, mc, cc);
  outcome out;
  // Warm the cache: every adapter of the scenario loaded once, then released (still resident).
  auto t_load = clock_type::now();
  for (int i = 0; i < sc.adapters; ++i) {
    auto a = mgr->acquire(adapter_name(i));
    if (mgr->wait_settled(a.id, std::chrono::minutes(5)) != cache::adapter_state::ready)
      throw std::runtime_error("adapter " + adapter_name(i) + ": " + mgr->info(a.id).message);
    mgr->release(a.id);
  }
  out.load_ms = std::chrono::duration<double, std::milli>(clock_type::now() - t_load).count();

  const std::uint32_t block_size = 16;
  const auto per_seq = static_cast<std::uint32_t>((st.prompt_tokens + st.max_tokens) / 16 + 2);
  const auto blocks = per_seq * static_cast<std::uint32_t>(st.concurrency) + 16;
  lf::kernels::kv_cache kv(kv_shape_of(mc, static_cast<int>(block_size), blocks, lf::kernels::kv_type::bf16));
  cpu_runner runner(model, kv, mgr->lookup());
  serving_config cfg;
  cfg.sched.max_seqs = static_cast<std::uint32_t>(st.concurrency);
  cfg.sched.max_batched_tokens = std::max<std::uint32_t>(512, cfg.sched.max_seqs);
  cfg.num_blocks = blocks;
  cfg.block_size = block_size;
  cfg.prefix_cache = false;  // random prompts: nothing to share anyway
  cfg.eos_id = tok.eos_id();
  cfg.single_adapter_batches = sc.single_adapter;
  serving_loop loop(runner, tok, cfg, mgr.get());

  std::mt19937_64 rng(1234);
  std::uniform_int_distribution<std::int32_t> token(0, mc.vocab_size - 2);
  std::mutex m;
  std::condition_variable cv;
  int sent = 0, done = 0;
  std::function<void()> send;  // called with `m` held
  send = [&] {
    request_draft d;
    for (int k = 0; k < st.prompt_tokens; ++k)
      d.prompt.push_back(token(rng));
    d.params.temperature = 0;
    d.params.max_tokens = st.max_tokens;
    d.params.ignore_eos = true;
    d.adapter = pick_adapter(sc, rng);
    auto r = validate_or_throw(std::move(d), mc.limits());
    ++sent;
    request_callbacks cb;
    cb.on_done = [&](request_result res) {
      std::lock_guard<std::mutex> g(m);
      ++done;
      if (res.outcome == request_outcome::finished) {
        out.tokens += res.usage.completion_tokens;
        out.latency_ms.push_back(res.timings.total_ms);
        out.ttft_ms.push_back(res.timings.ttft_ms);
      } else {
        ++out.failed;
        std::cerr << "request failed: " << res.message << "\n";
      }
      if (sent < st.requests)
        send();
      cv.notify_all();
    };
    loop.submit(std::move(r), std::nullopt, std::move(cb));
  };
  auto t0 = clock_type::now();
  {
    std::unique_lock<std::mutex> lk(m);
    for (int i = 0; i < st.concurrency && sent < st.requests; ++i)
      send();
    cv.wait(lk, [&] { return done >= st.requests; });
  }
  out.seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
  loop.stop(true);
  auto l = loop.load();
  out.steps = l.steps;
  out.cache = l.adapters;
  return out;
}

/// Median decode-step milliseconds at batch 32 for each adapter count in `counts` (0 = base):
/// 32 sequences with 32 cached tokens, row r on adapter r * k / 32.
std::vector<double> step_overhead(cpu_model& m, const std::vector<std::shared_ptr<const cpu_lora>>& ws,
                                  const std::vector<int>& counts, int reps) {
  const int batch = 32, prompt = 32;
  const auto& c = m.config();
  const int per_seq = (prompt + reps * static_cast<int>(counts.size()) + 16) / 16 + 1;
  lf::kernels::kv_cache kv(kv_shape_of(c, 16, static_cast<std::uint32_t>(batch * per_seq), lf::kernels::kv_type::bf16));
  std::vector<std::vector<std::int32_t>> tables(batch);
  for (int i = 0; i < batch; ++i)
    for (int b = 0; b < per_seq; ++b)
      tables[static_cast<std::size_t>(i)].push_back(i * per_seq + b);
  auto step = [&](int start, int count, const std::vector<cpu_lora_run>& lora) {
    cpu_step s;
    for (int i = 0; i < batch; ++i) {
      s.seqs.push_back({tables[static_cast<std::size_t>(i)].data(), start, count, i * count});
      for (int k = 0; k < count; ++k) {
        s.tokens.push_back((i * 131 + k * 17) % c.vocab_size);
        s.positions.push_back(start + k);
      }
      s.logit_rows.push_back(i * count + count - 1);
    }
    s.lora = lora;
    const auto t0 = clock_type::now();
    m.forward(s, kv);
    return std::chrono::duration<double, std::milli>(clock_type::now() - t0).count();
  };
  step(0, prompt, {});
  std::vector<std::vector<cpu_lora_run>> runs;
  for (int k : counts) {
    std::vector<cpu_lora_run> r;
    for (int i = 0; i < k; ++i)  // rows [i * 32 / k, (i + 1) * 32 / k) on adapter i
      r.push_back({ws[static_cast<std::size_t>(i)].get(), i * batch / k, (i + 1) * batch / k - i * batch / k});
    runs.push_back(std::move(r));
  }
  std::vector<std::vector<double>> ms(counts.size());
  int pos = prompt;
  for (int rep = 0; rep < reps; ++rep)
    for (std::size_t v = 0; v < counts.size(); ++v)
      ms[v].push_back(step(pos++, 1, runs[v]));
  std::vector<double> out;
  for (auto& v : ms)
    out.push_back(tools::percentile(v, 50));
  return out;
}

} // namespace

int main(int argc, char** argv) try {
  lf::tools::args a(argc, argv, 1, {"quick"});
  const bool quick = a.has("quick");
  const int threads = static_cast<int>(a.integer_in("threads", 2, 1, 256));
  auto dtype = parse_compute_dtype(a.str("dtype", "int8"));
  auto model_dir = a.str("model");
  auto json_path = a.str("json");
  bench_settings st;
  st.requests = static_cast<int>(a.integer("requests", quick ? 48 : 128));
  st.concurrency = static_cast<int>(a.integer("concurrency", 32));
  st.prompt_tokens = static_cast<int>(a.integer("prompt-tokens", quick ? 16 : 32));
  st.max_tokens = static_cast<int>(a.integer("max-tokens", quick ? 16 : 64));
  st.cache_mb = static_cast<std::size_t>(a.integer("adapter-cache-mb", 512));
  const int rank = static_cast<int>(a.integer("rank", 8));
  const auto only = a.str("only");
  a.finish();
  if (st.requests < 1 || st.concurrency < 1 || st.prompt_tokens < 1 || st.max_tokens < 1 || rank < 1)
    throw std::invalid_argument("--requests, --concurrency, --prompt-tokens, --max-tokens and "
                                "--rank must be >= 1");

  const auto tmp = fs::temp_directory_path() / ("lorafleet-bench-lora-" + std::to_string(::getpid()));
  fs::create_directories(tmp);
  if (model_dir.empty()) {
    random_model_options o;  // GPT-2 124M shape
    o.seed = 1;
    if (quick) {
      o.config.n_layer = 2;
      o.config.n_head = 4;
      o.config.n_embd = 128;
      o.config.n_inner = 512;
    }
    model_dir = (tmp / "model").string();
    write_random_model(model_dir, o);
  }
  cpu_model model(load_cpu_weights(model_dir, dtype), threads);
  auto tok = tokenizer::from_dir(LF_TOKENIZER_DIR);
  const auto adapter_root = (tmp / "adapters").string();
  std::size_t adapter_bytes = 0;
  std::vector<std::shared_ptr<const cpu_lora>> in_memory;  // for the forward-pass figures
  for (int i = 0; i < num_adapters; ++i) {
    auto ad = make_random_adapter(model.config(), rank, 2.0f * static_cast<float>(rank),
                                  {all_lora_modules.begin(), all_lora_modules.end()},
                                  static_cast<std::uint64_t>(100 + i));
    adapter_bytes = ad.bytes();
    write_peft_adapter(adapter_root + "/" + adapter_name(i), ad, dtype::f16);
    if (i < 32)
      in_memory.push_back(std::make_shared<const cpu_lora>(ad, model.config()));
  }
  const auto& mc = model.config();
  std::cout << "model: " << mc.n_layer << " layers, " << mc.n_embd << " wide, "
            << static_cast<double>(model.weights().bytes()) / (1 << 20) << " MiB of weights; threads " << threads
            << ", dtype " << to_string(dtype) << ", bf16 K/V\n"
            << "adapters: " << num_adapters << " x rank " << rank
            << " on attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj, " << std::fixed
            << std::setprecision(2) << static_cast<double>(adapter_bytes) / (1 << 20)
            << " MiB each (f32)\n"
            << "workload: " << st.requests << " requests, " << st.concurrency
            << " concurrent (closed loop), " << st.prompt_tokens << " prompt tokens, "
            << st.max_tokens << " generated tokens each\n\n";

  const std::vector<int> counts = {0, 1, 8, 32};
  const auto step_ms = step_overhead(model, in_memory, counts, quick ? 6 : 20);
  std::cout << "forward pass, one decode step of 32 rows (median ms):";
  for (std::size_t i = 0; i < counts.size(); ++i) {
    std::cout << "  " << counts[i] << (counts[i] == 1 ? " adapter " : " adapters ")
              << std::setprecision(1) << step_ms[i];
    if (i > 0) {
      const double pct = 100.0 * (step_ms[i] / step_ms[0] - 1.0);
      std::cout << " (" << (pct >= 0 ? "+" : "") << std::setprecision(0) << pct << "%)";
    }
  }
  std::cout << "\n\n";
  in_memory.clear();

  const std::vector<scenario> all = {
    {"base", "base model only", 0, false, false},
    {"1", "1 adapter", 1, false, false},
    {"8", "8 adapters, uniform", 8, false, false},
    {"64", "64 adapters, uniform", 64, false, false},
    {"skewed", "64 adapters, 80% on one", 64, true, false},
    {"naive8", "8 uniform, one adapter per batch", 8, false, true},
    {"naive64", "64 uniform, one adapter per batch", 64, false, true},
  };
  nlohmann::json report;
  report["threads"] = threads;
  for (std::size_t i = 0; i < counts.size(); ++i)
    report["decode_step_ms_batch32"][std::to_string(counts[i])] = step_ms[i];
  report["settings"] = {{"requests", st.requests}, {"concurrency", st.concurrency},
                        {"prompt_tokens", st.prompt_tokens}, {"max_tokens", st.max_tokens},
                        {"rank", rank}, {"quick", quick}, {"n_layer", mc.n_layer},
                        {"n_embd", mc.n_embd}};
  std::cout << std::left << std::setw(34) << "scenario" << std::right << std::setw(10) << "tokens/s"
            << std::setw(9) << "vs base" << std::setw(8) << "steps" << std::setw(11) << "tok/step"
            << std::setw(11) << "ttft p50" << std::setw(11) << "lat p50" << std::setw(10)
            << "load ms" << "\n";
  double base_tps = 0;
  for (const auto& sc : all) {
    if (!only.empty() && ("," + only + ",").find("," + sc.key + ",") == std::string::npos)
      continue;
    auto r = run(sc, st, model, tok, adapter_root);
    const double tps = static_cast<double>(r.tokens) / r.seconds;
    if (sc.adapters == 0)
      base_tps = tps;
    std::cout << std::left << std::setw(34) << sc.label << std::right << std::setprecision(1)
              << std::setw(10) << tps << std::setw(8)
              << (base_tps > 0 ? tps / base_tps : 0.0) << "x" << std::setw(8) << r.steps
              << std::setw(11) << static_cast<double>(r.tokens) / static_cast<double>(r.steps)
              << std::setw(9) << tools::percentile(r.ttft_ms, 50) << "ms" << std::setw(9)
              << tools::percentile(r.latency_ms, 50) << "ms" << std::setw(10) << r.load_ms
              << (r.failed ? "  (" + std::to_string(r.failed) + " failed)" : std::string()) << "\n"
              << std::flush;
    report["scenarios"][sc.key] = {
      {"label", sc.label}, {"tokens_per_s", tps}, {"seconds", r.seconds},
      {"tokens", r.tokens}, {"steps", r.steps}, {"failed", r.failed},
      {"ttft_p50_ms", tools::percentile(r.ttft_ms, 50)},
      {"latency_p50_ms", tools::percentile(r.latency_ms, 50)},
      {"latency_p99_ms", tools::percentile(r.latency_ms, 99)},
      {"adapter_load_ms", r.load_ms}, {"cache_loads", r.cache.loads},
      {"cache_hits", r.cache.hits}, {"cache_evictions", r.cache.evictions}};
  }
  std::cout << "\n(steps counts loop iterations, including idle ones; tok/step = generated "
               "tokens per iteration)\n";
  if (!json_path.empty())
    std::ofstream(json_path) << report.dump(2) << "\n";
  fs::remove_all(tmp);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_lora: " << e.what() << "\n";
  return 1;
}
