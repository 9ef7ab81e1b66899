// bench_engine: the serving engine's speed and quality on this machine, as a program (not a test).
//
//   bench_engine [--model DIR] [--threads N] [--dtype f32|bf16|int8|int4|all] [--kv-dtype bf16|int8|f32]
//                [--batches 1,8,32,64] [--context N] [--prompt-tokens N] [--steps N]
//                [--quality-model DIR] [--json FILE] [--quick] [--layers N --heads N --embd N]
//                [--cpu-clock]
//
// Without --model it writes a GPT-2-124M-shaped random checkpoint to a temporary directory (or,
// with --layers / --heads / --embd, one of that shape: 24 / 16 / 1024 is GPT-2 medium). For
// each dtype it prints: load time and weight bytes; a prompt of --prompt-tokens tokens (default
// 128) prefilled in one step, in tokens/s; decode steps at each batch size with every sequence at
// --context cached tokens (default 128), in tokens/s, with the step's bytes (weights + K/V read)
// against the measured bandwidth and its operations against the measured kernel peak (the
// roofline). With a trained model (--quality-model, default models/default) it adds the quality
// of each dtype against f32 on 256 tokens of English: loss, top-1 agreement, largest logit change.
// --cpu-clock times the steps by the process's CPU time instead of the wall clock: on a shared
// machine that leaves out the time spent waiting for a core (meant for --threads 1; with more,
// every thread's time adds up, a waiting thread's spinning included).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <sstream>
#include <thread>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/common/bench_stats.hpp"
#include "tools/common/kv_dtype_flag.hpp"
#include "tools/common/passage.hpp"
#include "worker/engine/kernels/kernel_table.hpp"
#include "worker/engine/kernels/peak_probe.hpp"
#include "worker/engine/model/cpu_model.hpp"
#include "worker/engine/reference/model_writer.hpp"

using namespace lf::engine;
using lf::text::tokenizer;
namespace kernels = lf::kernels;
namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// --cpu-clock: the process's CPU seconds so far.
double cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
bool cpu_clock = false;

/// Sequences laid out in a K/V store of their own: sequence i owns blocks [i * per, (i + 1) * per).
struct harness {
  cpu_model& model;
  kernels::kv_cache kv;
  std::vector<std::vector<std::int32_t>> tables;

  harness(cpu_model& m, kernels::kv_type t, int seqs, int max_len)
    : model(m), kv(shape(m, t, seqs, max_len)) {
    const int per = (max_len + 15) / 16;
    for (int i = 0; i < seqs; ++i) {
      tables.emplace_back();
      for (int b = 0; b < per; ++b)
        tables.back().push_back(i * per + b);
    }
  }

  static kernels::kv_shape shape(cpu_model& m, kernels::kv_type t, int seqs, int max_len) {
    return kv_shape_of(m.config(), 16, static_cast<std::uint32_t>(seqs * ((max_len + 15) / 16)), t);
  }

  /// One step: each listed sequence adds `count` tokens at `start`; logits of every row when
  /// `all_logits`, else of each sequence's last row. Returns its seconds.
  double step(const std::vector<int>& seqs, int start, const std::vector<std::int32_t>& tokens, int count,
              bool all_logits = false) {
    cpu_step s;
    int row = 0;
    for (int q : seqs) {
      s.seqs.push_back({tables[static_cast<std::size_t>(q)].data(), start, count, row});
      for (int k = 0; k < count; ++k) {
        s.tokens.push_back(tokens[static_cast<std::size_t>(row + k) % tokens.size()]);
        s.positions.push_back(start + k);
        if (all_logits)
          s.logit_rows.push_back(row + k);
      }
      row += count;
      if (!all_logits)
        s.logit_rows.push_back(row - 1);
    }
    const auto t0 = clock_type::now();
    const double c0 = cpu_clock ? cpu_seconds() : 0;
    model.forward(s, kv);
    return cpu_clock ? cpu_seconds() - c0 : seconds_since(t0);
  }
};

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, ','))
    out.push_back(std::stoi(part));
  return out;
}

/// Loss and argmax of every position of `tokens` (teacher forcing), all logits kept.
struct scored {
  std::vector<std::vector<float>> logits;
  double loss = 0;
};

scored score(cpu_model& m, kernels::kv_type kvt, const std::vector<std::int32_t>& tokens) {
  const int n = static_cast<int>(tokens.size());
  harness h(m, kvt, 1, n);
  h.step({0}, 0, tokens, n, true);
  scored out;
  for (int i = 0; i + 1 < n; ++i) {
    const float* row = m.logits(static_cast<std::size_t>(i));
    out.logits.emplace_back(row, row + m.vocab_size());
    const float mx = *std::max_element(row, row + m.vocab_size());
    double sum = 0;
    for (std::size_t v = 0; v < m.vocab_size(); ++v)
      sum += std::exp(static_cast<double>(row[v] - mx));
    out.loss += std::log(sum) + mx - row[tokens[static_cast<std::size_t>(i) + 1]];
  }
  out.loss /= n - 1;
  return out;
}

} // namespace

int main(int argc, char** argv) try {
  if (auto refusal = lf::kernels::lf_isa_refusal()) {
    std::cerr << "bench_engine: " << *refusal << "\n";
    return 2;
  }
  std::cout << std::unitbuf;  // progress shows as it happens, also when redirected
  lf::tools::args a(argc, argv, 1, {"quick", "cpu-clock"});
  const int threads = static_cast<int>(a.integer_in("threads", std::max(1u, std::thread::hardware_concurrency()), 1, 256));
  const auto dtypes = a.str("dtype", "all");
  const auto kvt = lf::tools::kv_dtype_flag(a, "bf16");
  auto model_dir = a.str("model");
  const auto json_path = a.str("json");
  const bool quick = a.has("quick");
  cpu_clock = a.has("cpu-clock");
  const auto batches = parse_list(a.str("batches", "1,8,32,64"));
  const int context = static_cast<int>(a.integer_in("context", 128, 1, 1 << 20));
  const int prompt_tokens = static_cast<int>(a.integer_in("prompt-tokens", 128, 1, 1 << 20));
  const int steps = static_cast<int>(a.integer_in("steps", quick ? 6 : 16, 3, 10000));
  auto quality_dir = a.str("quality-model", fs::exists(LF_MODELS_DIR "/default/config.json") ? LF_MODELS_DIR "/default" : "");
  random_model_options shape;  // GPT-2 124M unless told
  shape.seed = 1;
  shape.config.n_layer = static_cast<int>(a.integer_in("layers", shape.config.n_layer, 1, 256));
  shape.config.n_head = static_cast<int>(a.integer_in("heads", shape.config.n_head, 1, 256));
  shape.config.n_embd = static_cast<int>(a.integer_in("embd", shape.config.n_embd, 1, 1 << 16));
  if (shape.config.n_embd % shape.config.n_head != 0)
    throw std::invalid_argument("--embd must be a multiple of --heads");
  a.finish();
  std::vector<compute_dtype> list;
  if (dtypes == "all")
    list = {compute_dtype::f32, compute_dtype::bf16, compute_dtype::int8, compute_dtype::int4};
  else
    list = {parse_compute_dtype(dtypes)};

  nlohmann::json report;
  const auto& f = kernels::host_features();
  report["cpu"] = kernels::describe(f);
  report["kernels"] = std::string(kernels::active_table().name);
  report["threads"] = threads;
  report["kv_dtype"] = std::string(kernels::to_string(kvt));
  report["clock"] = cpu_clock ? "process cpu time" : "wall";
  std::cout << std::fixed << std::setprecision(1);
  std::cout << "cpu: " << kernels::describe(f) << "; kernels " << kernels::active_table().name
            << "; " << threads << " thread(s) in the worker's pool; K/V " << kernels::to_string(kvt)
            << (cpu_clock ? "; steps timed by process CPU time" : "") << "\n";
  kernels::thread_pool probe_pool(threads);
  const auto peaks = kernels::measure_peaks(probe_pool);
  report["read_bandwidth_gbs"] = peaks.read_gbs;
  report["peak"] = {{"f32_gflops", peaks.f32_gflops}, {"bf16_gflops", peaks.bf16_gflops}, {"int8_gops", peaks.int8_gops}};
  std::cout << "measured: read bandwidth " << peaks.read_gbs << " GB/s; peak f32 " << peaks.f32_gflops
            << " GFLOP/s, bf16 " << peaks.bf16_gflops << " GFLOP/s, int8 " << peaks.int8_gops << " GOP/s\n";

  std::string tmp;
  if (model_dir.empty()) {
    tmp = (fs::temp_directory_path() / ("lorafleet-bench-" + std::to_string(::getpid()))).string();
    write_random_model(tmp, shape);
    model_dir = tmp;
    std::cout << "wrote a random checkpoint (" << shape.config.n_layer << " layers, " << shape.config.n_head
              << " heads, " << shape.config.n_embd << " embd) to " << tmp << "\n";
  }
  auto tok = tokenizer::from_dir(LF_TOKENIZER_DIR);
  std::vector<std::int32_t> tokens = tok.encode(lf::loadtest::passage_text());

  for (auto dt : list) {
    const std::string name = to_string(dt);
    auto t0 = clock_type::now();
    cpu_model m(load_cpu_weights(model_dir, dt), threads);
    const double load_s = seconds_since(t0);
    const auto& cfg = m.config();
    const double wbytes = static_cast<double>(m.weights().bytes_per_step());
    auto& r = report["dtypes"][name];
    r["load_seconds"] = load_s;
    r["weights_mb"] = static_cast<double>(m.weights().bytes()) / (1 << 20);
    std::cout << "\n== " << name << ": " << r["weights_mb"].get<double>() << " MiB of weights, load "
              << load_s << " s\n";
    // Operations per token of the step's matrices: 2 * (blocks' weights + head).
    const double block_macs = static_cast<double>(cfg.n_layer) * cfg.n_embd * (4.0 * cfg.n_embd + 2.0 * cfg.inner_dim());
    const double head_macs = static_cast<double>(cfg.n_embd) * cfg.vocab_size;
    // int4 runs on the int8 dot-product instructions (the nibbles unpacked to bytes first).
    const double peak = dt == compute_dtype::int8 || dt == compute_dtype::int4 ? peaks.int8_gops : dt == compute_dtype::bf16 ? peaks.bf16_gflops : peaks.f32_gflops;

    // Lengths within the model's context (a small model may have fewer than 128 positions).
    const int prompt_n = std::min(prompt_tokens, cfg.n_positions);
    const int ctx = std::max(1, std::min(context, cfg.n_positions - steps - 1));
    if (prompt_n != prompt_tokens || ctx != context)
      std::cout << "(context " << cfg.n_positions << ": prompt " << prompt_n << " tokens, decode at " << ctx
                << " cached tokens)\n";
    {  // prefill
      const int prompt_tokens = prompt_n;
      harness h(m, kvt, 1, prompt_tokens);
      std::vector<double> secs;
      for (int rep = 0; rep < (quick ? 3 : 5); ++rep)
        secs.push_back(h.step({0}, 0, tokens, prompt_tokens));
      const double s = lf::tools::percentile(secs, 50);
      const double gops = (2 * block_macs * prompt_tokens + 2 * head_macs) / s / 1e9;
      r["prefill"] = {{"tokens", prompt_tokens}, {"tokens_per_s", prompt_tokens / s}, {"seconds", s},
                      {"gops", gops}, {"peak_fraction", gops / peak}};
      std::cout << "prefill " << prompt_tokens << " tokens: " << prompt_tokens / s << " tokens/s (" << s * 1e3
                << " ms; " << gops << " GOP/s = " << std::setprecision(2) << gops / peak << " of peak)\n"
                << std::setprecision(1);
    }
    std::cout << " batch | ms/step | tokens/s | MB read | GB/s (of " << peaks.read_gbs << ") | GOP/s (of "
              << peak << ")\n";
    for (int b : batches) {
      const int context = ctx;
      harness h(m, kvt, b, context + steps + 1);
      std::vector<int> all(static_cast<std::size_t>(b));
      for (int i = 0; i < b; ++i)
        all[static_cast<std::size_t>(i)] = i;
      for (int i = 0; i < b; ++i)  // each sequence prefilled to `context` tokens
        h.step({i}, 0, tokens, context);
      std::vector<double> secs;
      for (int s = 0; s < steps; ++s)
        secs.push_back(h.step(all, context + s, tokens, 1));
      const double s = lf::tools::percentile(secs, 50);
      const double kv_bytes = static_cast<double>(b) * (context + steps / 2.0) * kernels::kv_cache::bytes_per_block(h.kv.shape()) / 16;
      const double mb = (wbytes + kv_bytes) / 1e6;
      const double gops = 2 * (block_macs + head_macs) * b / s / 1e9;
      r["decode"][std::to_string(b)] = {{"ms_per_step", s * 1e3}, {"tokens_per_s", b / s}, {"mb_read", mb},
                                         {"gbs", mb / 1e3 / s}, {"gops", gops}};
      std::cout << std::setw(6) << b << " | " << std::setw(7) << s * 1e3 << " | " << std::setw(8) << b / s << " | "
                << std::setw(7) << mb << " | " << std::setw(12) << mb / 1e3 / s << " | " << std::setw(8) << gops << "\n";
    }
  }

  if (!quality_dir.empty()) {
    cpu_model ref_model(load_cpu_weights(quality_dir, compute_dtype::f32), threads);
    // 256 tokens (or the model's context), each predicted from the ones before it.
    const auto n = std::min<std::size_t>({256, tokens.size(), static_cast<std::size_t>(ref_model.config().n_positions)});
    std::vector<std::int32_t> passage(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n));
    std::cout << "\nquality on " << passage.size() << " tokens of English (" << passage.size() - 1
              << " predictions), model " << quality_dir << "\n";
    const auto ref = score(ref_model, kernels::kv_type::f32, passage);
    std::cout << "  f32 weights, f32 K/V: loss " << std::setprecision(4) << ref.loss << "\n";
    for (auto dt : {compute_dtype::f32, compute_dtype::bf16, compute_dtype::int8, compute_dtype::int4})
      for (auto kv : {kernels::kv_type::bf16, kernels::kv_type::int8}) {
        cpu_model m(load_cpu_weights(quality_dir, dt), threads);
        const auto got = score(m, kv, passage);
        std::size_t agree = 0;
        double worst = 0;
        for (std::size_t i = 0; i < ref.logits.size(); ++i) {
          const auto& a = ref.logits[i];
          const auto& b = got.logits[i];
          agree += std::max_element(a.begin(), a.end()) - a.begin() == std::max_element(b.begin(), b.end()) - b.begin();
          for (std::size_t v = 0; v < a.size(); ++v)
            worst = std::max(worst, static_cast<double>(std::fabs(a[v] - b[v])));
        }
        const double agreement = static_cast<double>(agree) / static_cast<double>(ref.logits.size());
        const auto key = std::string(to_string(dt)) + "/" + std::string(kernels::to_string(kv));
        report["quality"][key] = {{"loss", got.loss}, {"loss_delta", got.loss - ref.loss},
                                  {"top1_agreement", agreement}, {"max_logit_diff", worst}};
        std::cout << "  " << to_string(dt) << " weights, " << kernels::to_string(kv) << " K/V: loss " << got.loss
                  << " (" << std::showpos << got.loss - ref.loss << std::noshowpos << "), top-1 agreement "
                  << std::setprecision(1) << agreement * 100 << "%, largest logit difference "
                  << std::setprecision(3) << worst << "\n" << std::setprecision(4);
      }
  }
  if (!json_path.empty())
    std::ofstream(json_path) << report.dump(2) << "\n";
  if (!tmp.empty())
    fs::remove_all(tmp);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_engine: " << e.what() << "\n";
  return 2;
}
