// bench_engine: the GPT-2 engine's speed on this machine, as a program (not a test).
//
//   bench_engine [--model DIR] [--threads N] [--dtype f32|bf16|int8] [--json FILE] [--quick]
//                [--kv-compare-tokens N (default 256; 0 skips KV cache vs no cache)]
//
// Without --model it writes a GPT-2-124M-shaped random checkpoint to a temporary directory first.
// Prints: memory read bandwidth, load RSS, prefill tokens/s (128-token prompts), decode tokens/s at
// batch 1/8/32/64 with each figure as a fraction of the bandwidth floor (weight bytes / bandwidth
// per step), KV cache vs no cache for 256 generated tokens, and peak RSS.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/args.hpp"
#include "tools/loadtest/passage.hpp"
#include "worker/engine/dense_attention.hpp"
#include "worker/engine/generator.hpp"
#include "worker/engine/gpt2_model.hpp"
#include "worker/engine/model_writer.hpp"
#include "worker/engine/tokenizer.hpp"

using namespace lf::engine;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// A /proc/self/status field in MB (VmRSS, VmHWM).
double proc_mb(const std::string& field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind(field + ":", 0) == 0)
      return std::stod(line.substr(field.size() + 1)) / 1024.0;
  return 0;
}

/// Resets VmHWM to the current RSS (Linux >= 4.0), so later peaks measure one phase.
void reset_peak_rss() { std::ofstream("/proc/self/clear_refs") << "5"; }

/// Best-of-5 read bandwidth in GB/s over a 1 GiB buffer, summed by `threads` threads.
double read_bandwidth_gbs(int threads) {
  const std::size_t n = (std::size_t{1} << 30) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  double best = 0;
  for (int rep = 0; rep < 5; ++rep) {
    std::vector<double> sums(static_cast<std::size_t>(threads));
    auto t0 = clock_type::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        auto begin = buf.data() + n * static_cast<std::size_t>(t) / static_cast<std::size_t>(threads);
        auto end = buf.data() + n * static_cast<std::size_t>(t + 1) / static_cast<std::size_t>(threads);
        float acc[16] = {};
        for (auto* p = begin; p + 16 <= end; p += 16)
          for (int k = 0; k < 16; ++k)
            acc[k] += p[k];
        sums[static_cast<std::size_t>(t)] = std::accumulate(acc, acc + 16, 0.0);
      });
    for (auto& th : pool)
      th.join();
    double s = seconds_since(t0);
    if (std::accumulate(sums.begin(), sums.end(), 0.0) != static_cast<double>(n))
      std::cerr << "bandwidth check sum mismatch\n";
    best = std::max(best, static_cast<double>(n * sizeof(float)) / s / 1e9);
  }
  return best;
}

/// Seconds per decode step for `batch` rows after a `prompt`-token prefill, over `steps` steps.
double decode_step_seconds(const gpt2_model& m, std::int64_t batch, std::int64_t prompt, int steps) {
  dense_kv_cache cache(m.config(), batch, prompt + steps + 1, m.scalar_type());
  auto ids = at::randint(0, m.config().vocab_size, {batch * prompt}, at::kLong);
  auto pos = at::arange(prompt, at::kLong).repeat({batch});
  cache.begin_step(prompt, at::ones({batch, prompt}, at::kBool));
  m.logits(m.forward_hidden(ids, pos, cache));
  cache.end_step();
  auto one = at::randint(0, m.config().vocab_size, {batch}, at::kLong);
  double total = 0;
  for (int s = 0; s < steps; ++s) {
    auto len = cache.length();
    auto t0 = clock_type::now();
    cache.begin_step(1, at::ones({batch, len + 1}, at::kBool));
    auto logits = m.logits(m.forward_hidden(one, at::full({batch}, len, at::kLong), cache));
    cache.end_step();
    one = logits.argmax(1);
    if (s >= 2)  // the first steps warm caches and allocators
      total += seconds_since(t0);
  }
  return total / (steps - 2);
}

} // namespace

int main(int argc, char** argv) try {
  std::cout << std::unitbuf;  // progress shows as it happens, also when redirected
  lf::tools::args a(argc, argv, 1, {"quick"});
  int threads = set_compute_threads(static_cast<int>(a.integer("threads", 2)));
  auto dtype = parse_compute_dtype(a.str("dtype", "f32"));
  auto model_dir = a.str("model");
  auto json_path = a.str("json");
  bool quick = a.has("quick");
  const auto kv_tokens = a.integer("kv-compare-tokens", quick ? 64 : 256);  // 0: skip the comparison
  a.finish();
  nlohmann::json report;
  report["threads"] = threads;
  report["dtype"] = dtype == compute_dtype::bf16 ? "bf16" : dtype == compute_dtype::int8 ? "int8" : "f32";
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "threads: " << threads << " (ATen intra-op), dtype " << report["dtype"].get<std::string>() << "\n";

  double bw = read_bandwidth_gbs(threads);
  report["read_bandwidth_gbs"] = bw;
  std::cout << "memory read bandwidth: " << bw << " GB/s (" << threads << " threads, best of 5, 1 GiB)\n";

  std::string tmp;
  if (model_dir.empty()) {
    tmp = (fs::temp_directory_path() / ("lorafleet-bench-" + std::to_string(::getpid()))).string();
    random_model_options o;  // GPT-2 124M shape
    o.seed = 1;
    write_random_model(tmp, o);
    model_dir = tmp;
    std::cout << "wrote a GPT-2-124M-shaped random checkpoint to " << tmp << "\n";
  }
  reset_peak_rss();
  double rss0 = proc_mb("VmRSS");
  auto t0 = clock_type::now();
  gpt2_model m(load_gpt2_weights(model_dir, dtype));
  double load_s = seconds_since(t0);
  // Touch every weight once, as the first forward would.
  dense_kv_cache warm(m.config(), 1, 2, m.scalar_type());
  warm.begin_step(1, at::ones({1, 1}, at::kBool));
  m.logits(m.forward_hidden(at::zeros({1}, at::kLong), at::zeros({1}, at::kLong), warm));
  double weights_mb = static_cast<double>(m.weights().bytes()) / (1024.0 * 1024.0);
  double load_peak = proc_mb("VmHWM") - rss0;
  report["weights_mb"] = weights_mb;
  report["load_peak_rss_delta_mb"] = load_peak;
  report["load_seconds"] = load_s;
  std::cout << "model: " << m.weights().num_parameters() / 1e6 << " M parameters, " << weights_mb
            << " MiB of weights; load " << load_s * 1e3 << " ms, peak RSS during load + first step: +"
            << load_peak << " MiB (target <= weights + 300)\n";

  double floor_s = static_cast<double>(m.weights().bytes_per_step()) / (bw * 1e9);
  report["floor_ms_per_step"] = floor_s * 1e3;
  std::cout << "bandwidth floor per decode step: " << std::setprecision(2) << floor_s * 1e3
            << " ms (" << m.weights().bytes_per_step() / 1e6 << " MB of weights read per step)\n";

  // Prefill: 128-token prompts.
  auto prefill = [&](std::int64_t batch) {
    const std::int64_t n = 128;
    double best = 1e9;
    for (int rep = 0; rep < (quick ? 2 : 4); ++rep) {
      dense_kv_cache c(m.config(), batch, n, m.scalar_type());
      auto ids = at::randint(0, m.config().vocab_size, {batch * n}, at::kLong);
      auto t = clock_type::now();
      c.begin_step(n, at::ones({batch, n}, at::kBool));
      auto h = m.forward_hidden(ids, at::arange(n, at::kLong).repeat({batch}), c);
      m.logits(h.view({batch, n, -1}).select(1, n - 1));
      best = std::min(best, seconds_since(t));
    }
    return static_cast<double>(batch * n) / best;
  };
  std::cout << std::setprecision(1);
  for (std::int64_t b : {1, 8}) {
    double tps = prefill(b);
    report["prefill_tokens_per_s"][std::to_string(b)] = tps;
    std::cout << "prefill 128-token prompts, batch " << b << ": " << tps << " tokens/s\n";
  }

  std::cout << "\n batch | ms/step | tokens/s | floor fraction | vs batch 1\n";
  double tps1 = 0;
  for (std::int64_t b : {1, 8, 32, 64}) {
    double s = decode_step_seconds(m, b, 64, quick ? 8 : 24);
    double tps = static_cast<double>(b) / s;
    if (b == 1)
      tps1 = tps;
    report["decode"][std::to_string(b)] = {{"ms_per_step", s * 1e3}, {"tokens_per_s", tps},
                                           {"floor_fraction", floor_s / s}, {"vs_batch1", tps / tps1}};
    std::cout << std::setw(6) << b << " | " << std::setw(7) << s * 1e3 << " | " << std::setw(8) << tps
              << " | " << std::setw(14) << std::setprecision(2) << floor_s / s << " | "
              << std::setw(9) << tps / tps1 << "x\n" << std::setprecision(1);
  }

  if (kv_tokens > 0) {
    auto tok = tokenizer::from_dir(LF_TOKENIZER_DIR);
    lf::request_draft d;
    d.prompt = tok.encode("The history of the world is a long and complicated story of");
    d.params.temperature = 0;
    d.params.ignore_eos = true;
    d.params.max_tokens = static_cast<int>(kv_tokens);
    generation_request req{lf::validate_or_throw(std::move(d), m.config().limits())};
    std::cout << "\nKV cache vs no cache, " << kv_tokens << " generated tokens, batch 1:\n";
    for (bool kv : {true, false}) {
      generate_options o;
      o.use_kv_cache = kv;
      auto t = clock_type::now();
      auto r = generate(m, tok, {req}, o);
      double s = seconds_since(t);
      report[kv ? "kv_cache_seconds" : "no_cache_seconds"] = s;
      std::cout << "  " << (kv ? "kv cache" : "no cache") << ": " << std::setprecision(2) << s
                << " s (" << r.timing.generated_tokens / s << " tokens/s)\n";
    }
    report["kv_speedup"] = report["no_cache_seconds"].get<double>() / report["kv_cache_seconds"].get<double>();
    std::cout << "  speedup from the KV cache: " << report["kv_speedup"].get<double>() << "x\n";
  }
  report["peak_rss_mb"] = proc_mb("VmHWM");
  std::cout << "peak RSS since load: " << std::setprecision(1) << report["peak_rss_mb"].get<double>() << " MiB\n";

  if (dtype != compute_dtype::f32) {
    // What the reduced precision costs: one 256-token passage through this model and through the
    // f32 one (next-token loss, top-1 agreement, largest logit difference).
    auto tok = tokenizer::from_dir(LF_TOKENIZER_DIR);
    auto text = tok.encode(lf::loadtest::passage_text());
    const auto n = std::min<std::int64_t>({256, static_cast<std::int64_t>(text.size()), m.config().n_positions});
    auto ids = at::tensor(std::vector<std::int64_t>(text.begin(), text.begin() + n), at::kLong);
    auto run = [&](const gpt2_model& model) {
      dense_kv_cache c(model.config(), 1, n, model.scalar_type());
      c.begin_step(n, at::ones({1, n}, at::kBool));
      return model.logits(model.forward_hidden(ids, at::arange(n, at::kLong), c));
    };
    gpt2_model ref(load_gpt2_weights(model_dir, compute_dtype::f32));
    auto lq = run(m), lr = run(ref);
    auto nll = [&](const at::Tensor& l) {
      return -at::log_softmax(l.narrow(0, 0, n - 1), 1).gather(1, ids.narrow(0, 1, n - 1).unsqueeze(1)).mean().item<double>();
    };
    const double loss_q = nll(lq), loss_r = nll(lr);
    const double agree = lq.argmax(1).eq(lr.argmax(1)).to(at::kFloat).mean().item<double>();
    const double max_diff = (lq - lr).abs().max().item<double>();
    report["quality"] = {{"tokens", n}, {"loss", loss_q}, {"loss_f32", loss_r}, {"top1_agreement", agree},
                         {"max_abs_logit_diff", max_diff}};
    std::cout << "\nquality vs f32 on " << n << " tokens of English: loss " << std::setprecision(4) << loss_q
              << " vs " << loss_r << " (f32), top-1 agreement " << std::setprecision(1) << agree * 100
              << "%, largest logit difference " << std::setprecision(3) << max_diff << "\n";
  }
  if (!json_path.empty())
    std::ofstream(json_path) << report.dump(2) << "\n";
  if (!tmp.empty())
    fs::remove_all(tmp);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_engine: " << e.what() << "\n";
  return 1;
}
