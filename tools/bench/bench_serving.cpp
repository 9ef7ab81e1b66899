// bench_serving: what continuous batching, the KV cache and the prefix cache buy, measured through
// the worker's serving loop on one model (a program, not a test).
//
//   bench_serving [--model DIR] [--threads N] [--dtype int8|bf16|f32] [--kv-dtype T] [--kv-cache-mb MB]
//                 [--only course,sweep,prefix] [--max-concurrency N] [--json FILE] [--quick]
//
// Without --model it writes a GPT-2-124M-shaped random checkpoint (fp32) to a temporary directory.
// Experiments:
//   course  32 requests at once, batch limit 8, one in eight wants 100 new tokens and the rest 10:
//           total time and per-request latency for continuous vs static batching vs static
//           batching without a KV cache.
//   sweep   closed loop with 1, 2, 4, ... N concurrent clients, 128 prompt tokens in, 128 out:
//           output tokens/s and median / p99 time per output token.
//   prefix  64 requests sharing a 512-token prefix (+16 own tokens, 16 out), prefix cache on/off:
//           prompt tokens computed and time to first token.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <unistd.h>

#include <iomanip>
#include <iostream>
#include <mutex>
#include <random>
#include <set>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/common/bench_stats.hpp"
#include "tools/common/kv_dtype_flag.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/reference/model_writer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf;
using namespace lf::engine;
using lf::text::tokenizer;
using namespace lf::worker;
using lf::tools::percentile;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

/// Counts the tokens each step computes, around the real engine.
class counting_engine final : public step_engine {
public:
  explicit counting_engine(step_engine& inner) : inner_(inner) {}
  void step(const std::vector<engine_chunk>& chunks) override {
    for (const auto& c : chunks)
      computed_ += static_cast<std::uint64_t>(c.count);
    inner_.step(chunks);
  }
  float* logits(std::size_t i) override { return inner_.logits(i); }
  std::size_t vocab_size() const override { return inner_.vocab_size(); }
  std::uint64_t computed() const { return computed_; }

private:
  step_engine& inner_;
  std::uint64_t computed_ = 0;  // loop thread only; read after the loop stops
};

/// Every mode runs the serving engine (the static ones as the loop's scheduling policies).
struct bench_env {
  bench_env(cpu_model& m, const tokenizer& t) : model(m), tok(t) {}

  cpu_model& model;
  const tokenizer& tok;
  std::uint32_t num_blocks = 0;
  std::uint32_t block_size = 16;
  lf::kernels::kv_type kv = lf::kernels::kv_type::bf16;
};

/// One request of a workload.
struct job {
  std::vector<std::int32_t> prompt;
  int max_tokens = 0;
};

/// What one request measured.
struct record {
  double latency_ms = 0, ttft_ms = 0, tpot_ms = 0;
  int tokens = 0;
  bool ok = false;
};

struct run_result {
  double wall_s = 0;
  std::vector<record> records;
  std::uint64_t computed_tokens = 0;
  std::uint64_t cached_tokens = 0;
};

/// Runs `jobs` through a fresh serving loop with `concurrency` closed-loop clients (0: submit
/// every job at once).
run_result run_jobs(bench_env& env, serving_config cfg, const std::vector<job>& jobs,
                    std::size_t concurrency) {
  const auto& mc = env.model.config();
  cfg.num_blocks = env.num_blocks;
  cfg.block_size = env.block_size;
  lf::kernels::kv_cache kv(kv_shape_of(mc, static_cast<int>(cfg.block_size), cfg.num_blocks, env.kv));
  cpu_runner runner(env.model, kv);
  counting_engine counter(runner);
  run_result out;
  out.records.resize(jobs.size());
  std::mutex m;
  std::condition_variable cv;
  std::size_t next = 0, done = 0;
  std::vector<clock_type::time_point> sent(jobs.size());
  std::vector<std::optional<clock_type::time_point>> first(jobs.size());
  serving_loop loop(counter, env.tok, cfg);
  std::function<void()> submit_next;  // called with m held
  submit_next = [&] {
    if (next >= jobs.size())
      return;
    const auto i = next++;
    request_draft d;
    d.prompt = jobs[i].prompt;
    d.params.temperature = 0;
    d.params.ignore_eos = true;
    d.params.max_tokens = jobs[i].max_tokens;
    auto r = validate_or_throw(std::move(d), mc.limits());
    request_callbacks cb;
    cb.on_token = [&, i](std::int32_t, std::string_view) {
      std::lock_guard<std::mutex> g(m);
      if (!first[i])
        first[i] = clock_type::now();
    };
    cb.on_done = [&, i](request_result res) {
      const auto now = clock_type::now();
      std::lock_guard<std::mutex> g(m);
      auto& rec = out.records[i];
      rec.ok = res.outcome == request_outcome::finished;
      rec.tokens = static_cast<int>(res.tokens.size());
      rec.latency_ms = std::chrono::duration<double, std::milli>(now - sent[i]).count();
      rec.ttft_ms = first[i] ? std::chrono::duration<double, std::milli>(*first[i] - sent[i]).count()
                             : rec.latency_ms;
      rec.tpot_ms = rec.tokens > 1 ? (rec.latency_ms - rec.ttft_ms) / (rec.tokens - 1) : 0;
      out.cached_tokens += res.usage.cached_tokens;
      if (!rec.ok)
        std::cerr << "request " << i << " failed: " << res.message << "\n";
      ++done;
      if (concurrency > 0)
        submit_next();
      cv.notify_all();
    };
    sent[i] = clock_type::now();
    loop.submit(std::move(r), std::nullopt, std::move(cb));
  };
  const auto t0 = clock_type::now();
  {
    std::unique_lock<std::mutex> lk(m);
    const auto initial = concurrency == 0 ? jobs.size() : std::min(concurrency, jobs.size());
    for (std::size_t k = 0; k < initial; ++k)
      submit_next();
    cv.wait(lk, [&] { return done == jobs.size(); });
  }
  out.wall_s = std::chrono::duration<double>(clock_type::now() - t0).count();
  loop.stop(true);
  out.computed_tokens = counter.computed();
  return out;
}

std::vector<std::int32_t> random_tokens(std::mt19937& rng, std::size_t n) {
  std::uniform_int_distribution<std::int32_t> d(0, 50255);
  std::vector<std::int32_t> v(n);
  for (auto& t : v)
    t = d(rng);
  return v;
}

template <class F>
std::vector<double> field(const std::vector<record>& rs, F f) {
  std::vector<double> v;
  for (const auto& r : rs)
    v.push_back(f(r));
  return v;
}

} // namespace


namespace {

nlohmann::json summarize(const run_result& r) {
  auto lat = field(r.records, [](const record& x) { return x.latency_ms; });
  auto ttft = field(r.records, [](const record& x) { return x.ttft_ms; });
  auto tpot = field(r.records, [](const record& x) { return x.tpot_ms; });
  double out_tokens = 0;
  int failed = 0;
  for (const auto& x : r.records) {
    out_tokens += x.tokens;
    failed += x.ok ? 0 : 1;
  }
  return {{"wall_s", r.wall_s}, {"requests", r.records.size()}, {"failed", failed},
          {"output_tokens_per_s", out_tokens / r.wall_s},
          {"latency_ms", {{"mean", lf::tools::mean(lat)}, {"p50", percentile(lat, 50)},
                          {"p99", percentile(lat, 99)}, {"max", percentile(lat, 100)}}},
          {"ttft_ms", {{"mean", lf::tools::mean(ttft)}, {"p50", percentile(ttft, 50)},
                       {"p99", percentile(ttft, 99)}}},
          {"tpot_ms", {{"p50", percentile(tpot, 50)}, {"p99", percentile(tpot, 99)}}},
          {"computed_tokens", r.computed_tokens}, {"cached_tokens", r.cached_tokens}};
}

/// The course's experiment: static vs continuous batching (and no KV cache) on a skewed mix.
nlohmann::json course(bench_env& env, bool quick) {
  std::mt19937 rng(7);
  std::vector<job> jobs;
  for (int i = 0; i < 32; ++i)
    jobs.push_back({random_tokens(rng, 16), i % 8 == 0 ? 100 : 10});
  std::cout << "\n[course] 32 requests submitted at once, batch limit 8, 1 in 8 wants 100 tokens, "
               "the rest 10 (16-token prompts)\n"
            << "  mode             | total s | mean latency ms | p50 ms | max ms | tokens/s\n";
  nlohmann::json out;
  for (auto mode : {batching_mode::continuous, batching_mode::static_batch,
                    batching_mode::static_no_cache}) {
    if (quick && mode == batching_mode::static_no_cache)
      continue;
    serving_config cfg;
    cfg.mode = mode;
    cfg.sched.max_seqs = 8;
    cfg.sched.max_batched_tokens = 512;
    cfg.static_batch = 8;
    cfg.static_wait = std::chrono::milliseconds(20);
    auto s = summarize(run_jobs(env, cfg, jobs, 0));
    out[std::string(to_string(mode))] = s;
    std::cout << "  " << std::left << std::setw(16) << to_string(mode) << std::right << " | "
              << std::setw(7) << s["wall_s"].get<double>() << " | " << std::setw(15)
              << s["latency_ms"]["mean"].get<double>() << " | " << std::setw(6)
              << s["latency_ms"]["p50"].get<double>() << " | " << std::setw(6)
              << s["latency_ms"]["max"].get<double>() << " | "
              << s["output_tokens_per_s"].get<double>() << "\n";
  }
  const double cont = out["continuous"]["wall_s"], stat = out["static"]["wall_s"];
  out["static_over_continuous_total"] = stat / cont;
  out["static_over_continuous_mean_latency"] =
    out["static"]["latency_ms"]["mean"].get<double>() / out["continuous"]["latency_ms"]["mean"].get<double>();
  std::cout << "  continuous batching: " << stat / cont << "x less total time, "
            << out["static_over_continuous_mean_latency"].get<double>()
            << "x lower mean latency than static batching\n";
  return out;
}

/// Closed-loop concurrency sweep: the latency / throughput trade-off of batching.
nlohmann::json sweep(bench_env& env, std::size_t max_concurrency, bool quick) {
  const int in = quick ? 32 : 128, out_tokens = quick ? 32 : 128;
  std::cout << "\n[sweep] closed loop, " << in << " tokens in / " << out_tokens
            << " out, 2 requests per client\n"
            << "  clients | tokens/s | TPOT p50 ms | TPOT p99 ms | TTFT p50 ms | TTFT p99 ms\n";
  nlohmann::json out = nlohmann::json::array();
  std::mt19937 rng(11);
  for (std::size_t c = 1; c <= max_concurrency; c *= 2) {
    std::vector<job> jobs;
    for (std::size_t i = 0; i < 2 * c; ++i)
      jobs.push_back({random_tokens(rng, static_cast<std::size_t>(in)), out_tokens});
    serving_config cfg;
    cfg.sched.max_seqs = static_cast<std::uint32_t>(std::max<std::size_t>(c, 1));
    cfg.sched.max_batched_tokens = 512;
    auto s = summarize(run_jobs(env, cfg, jobs, c));
    s["clients"] = c;
    out.push_back(s);
    std::cout << "  " << std::setw(7) << c << " | " << std::setw(8)
              << s["output_tokens_per_s"].get<double>() << " | " << std::setw(11)
              << s["tpot_ms"]["p50"].get<double>() << " | " << std::setw(11)
              << s["tpot_ms"]["p99"].get<double>() << " | " << std::setw(11)
              << s["ttft_ms"]["p50"].get<double>() << " | " << std::setw(11)
              << s["ttft_ms"]["p99"].get<double>() << "\n";
  }
  return out;
}

/// Shared-prefix requests with and without the prefix cache.
nlohmann::json prefix(bench_env& env, bool quick) {
  const std::size_t n = quick ? 16 : 64, shared = quick ? 128 : 512;
  std::mt19937 rng(13);
  const auto common = random_tokens(rng, shared);
  std::vector<job> jobs;
  for (std::size_t i = 0; i < n; ++i) {
    job j{common, 16};
    auto own = random_tokens(rng, 16);
    j.prompt.insert(j.prompt.end(), own.begin(), own.end());
    jobs.push_back(std::move(j));
  }
  std::cout << "\n[prefix] " << n << " requests sharing a " << shared
            << "-token prefix (+16 own tokens, 16 out), 8 clients\n"
            << "  prefix cache | prompt tokens computed | cached | TTFT p50 ms | TTFT p99 ms | total s\n";
  nlohmann::json out;
  for (bool on : {false, true}) {
    serving_config cfg;
    cfg.prefix_cache = on;
    cfg.sched.max_seqs = 8;
    cfg.sched.max_batched_tokens = 512;
    auto r = run_jobs(env, cfg, jobs, 8);
    auto s = summarize(r);
    std::uint64_t decode = 0;
    for (const auto& x : r.records)
      decode += static_cast<std::uint64_t>(std::max(0, x.tokens - 1));
    s["prompt_tokens_computed"] = r.computed_tokens - decode;
    out[on ? "on" : "off"] = s;
    std::cout << "  " << std::setw(12) << (on ? "on" : "off") << " | " << std::setw(22)
              << r.computed_tokens - decode << " | " << std::setw(6) << r.cached_tokens << " | "
              << std::setw(11) << s["ttft_ms"]["p50"].get<double>() << " | " << std::setw(11)
              << s["ttft_ms"]["p99"].get<double>() << " | " << s["wall_s"].get<double>() << "\n";
  }
  return out;
}

} // namespace

int main(int argc, char** argv) try {
  std::cout << std::unitbuf << std::fixed << std::setprecision(1);
  lf::tools::args a(argc, argv, 1, {"quick"});
  const int threads = static_cast<int>(a.integer_in("threads", 2, 1, 256));
  const auto dtype = parse_compute_dtype(a.str("dtype", "int8"));
  const auto kv_type = lf::tools::kv_dtype_flag(a, "bf16");
  auto model_dir = a.str("model");
  const auto json_path = a.str("json");
  const bool quick = a.has("quick");
  const auto kv_mb = static_cast<std::size_t>(a.integer("kv-cache-mb", 2048));
  const auto max_c = static_cast<std::size_t>(a.integer("max-concurrency", quick ? 8 : 64));
  std::set<std::string> only;
  {
    std::stringstream ss(a.str("only", "course,sweep,prefix"));
    for (std::string x; std::getline(ss, x, ',');)
      only.insert(x);
  }
  a.finish();
  std::string tmp;
  if (model_dir.empty()) {
    tmp = (fs::temp_directory_path() / ("lorafleet-bench-serving-" + std::to_string(::getpid()))).string();
    random_model_options o;  // GPT-2 124M shape
    o.seed = 1;
    if (quick) {
      o.config.n_layer = 4;
      o.config.n_embd = 256;
      o.config.n_head = 4;
    }
    write_random_model(tmp, o);
    model_dir = tmp;
  }
  cpu_model model(load_cpu_weights(model_dir, dtype), threads);
  auto tok = tokenizer::from_dir(LF_TOKENIZER_DIR);
  const auto& mc = model.config();
  bench_env env{model, tok};
  env.kv = kv_type;
  env.num_blocks = lf::kernels::kv_cache::blocks_for_budget(
    kv_mb << 20, kv_shape_of(mc, static_cast<int>(env.block_size), 0, env.kv));
  std::cout << "model: " << mc.n_layer << " layers, " << mc.n_embd << " embd, "
            << static_cast<double>(model.weights().bytes()) / (1 << 20) << " MiB of " << to_string(dtype)
            << " weights, " << lf::kernels::to_string(env.kv) << " K/V (every mode on the serving engine)"
            << "; threads " << threads << "; KV pool " << kv_mb << " MiB = " << env.num_blocks
            << " blocks of " << env.block_size << " tokens\n";
  nlohmann::json report{{"threads", threads}, {"kv_cache_mb", kv_mb}, {"num_blocks", env.num_blocks},
                        {"layers", mc.n_layer}, {"embd", mc.n_embd}};
  if (only.count("course"))
    report["course"] = course(env, quick);
  if (only.count("sweep"))
    report["sweep"] = sweep(env, max_c, quick);
  if (only.count("prefix"))
    report["prefix"] = prefix(env, quick);
  if (!json_path.empty())
    std::ofstream(json_path) << report.dump(2) << "\n";
  if (!tmp.empty())
    fs::remove_all(tmp);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_serving: " << e.what() << "\n";
  return 1;
}
