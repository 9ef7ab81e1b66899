// bench_cuda: the CUDA engine on one GPU (a program, not a test).
//
//   bench_cuda [--model DIR] [--device N] [--batches 1,32,256] [--steps N] [--streams 64,256]
//              [--json FILE] [--quick]
//
// Without --model it writes a GPT-2-124M-shaped random checkpoint (f32) to a temporary directory.
//   device   the GPU, its nominal memory bandwidth and a measured device-to-device copy
//   decode   B sequences with 128 cached tokens, timed decode steps, CUDA graphs on and off: tok/s,
//            step time and the memory-bandwidth floor (weights + the K/V each step reads, at the
//            measured copy bandwidth)
//   prefill  128-token prompts, 1 and 32 at once: prompt tokens/s
//   serve    the worker's serving loop (continuous batching, paged K/V, sampling on the host) in
//            this process, N closed-loop streams, 128 tokens in / 128 out, EOS ignored
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

#include <cuda_runtime.h>
#include <nlohmann/json.hpp>

#include "tests/gpu/random_checkpoint.hpp"
#include "tools/common/args.hpp"
#include "tools/common/bench_stats.hpp"
#include "worker/engine/cuda/cuda_engine.hpp"
#include "text/tokenizer.hpp"
#include "worker/serving_loop.hpp"

using namespace lf;
using namespace lf::engine;
using clock_type = std::chrono::steady_clock;
namespace fs = std::filesystem;

namespace {

double seconds_since(clock_type::time_point t0) {
  return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::vector<int> int_list(const std::string& s) {
  std::vector<int> v;
  std::stringstream ss(s);
  for (std::string x; std::getline(ss, x, ',');)
    v.push_back(std::stoi(x));
  return v;
}

/// Device-to-device copy bandwidth, bytes read + written per second (the median of 5 copies of
/// 1 GiB).
double copy_bandwidth(int device) {
  cudaSetDevice(device);
  const std::size_t n = 1u << 30;
  void *a = nullptr, *b = nullptr;
  if (cudaMalloc(&a, n) != cudaSuccess || cudaMalloc(&b, n) != cudaSuccess)
    throw std::runtime_error("bench_cuda: no 2 GiB for the copy test");
  cudaEvent_t e0, e1;
  cudaEventCreate(&e0);
  cudaEventCreate(&e1);
  std::vector<double> bw;
  for (int i = 0; i < 6; ++i) {
    cudaEventRecord(e0);
    cudaMemcpy(b, a, n, cudaMemcpyDeviceToDevice);
    cudaEventRecord(e1);
    cudaEventSynchronize(e1);
    float ms = 0;
    cudaEventElapsedTime(&ms, e0, e1);
    if (i > 0)
      bw.push_back(2.0 * static_cast<double>(n) / (ms * 1e-3));
  }
  cudaFree(a);
  cudaFree(b);
  std::sort(bw.begin(), bw.end());
  return bw[bw.size() / 2];
}

/// B sequences with their own blocks, driven by hand (no scheduler).
struct batch {
  std::vector<std::vector<std::int32_t>> tokens;
  std::vector<std::vector<cache::block_id>> tables;
  std::vector<std::int64_t> done;
  std::uint32_t per_seq = 0;

  batch(int b, int prompt, int extra, int block_size, std::mt19937& rng, int vocab) : per_seq(0) {
    per_seq = static_cast<std::uint32_t>((prompt + extra + block_size - 1) / block_size);
    for (int i = 0; i < b; ++i) {
      std::vector<std::int32_t> t(static_cast<std::size_t>(prompt));
      for (auto& x : t)
        x = static_cast<std::int32_t>(rng() % static_cast<unsigned>(vocab));
      tokens.push_back(std::move(t));
      std::vector<cache::block_id> tab;
      for (std::uint32_t k = 0; k < per_seq; ++k)
        tab.emplace_back(static_cast<std::uint32_t>(i) * per_seq + k);
      tables.push_back(std::move(tab));
      done.push_back(0);
    }
  }

  /// Prefill every sequence (chunks of at most `max_rows` rows per step); returns seconds.
  double prefill(step_engine& e, int max_rows) {
    const auto t0 = clock_type::now();
    std::size_t i = 0;
    while (i < tokens.size()) {
      std::vector<engine_chunk> chunks;
      std::int64_t rows = 0;
      while (i < tokens.size() && rows + static_cast<std::int64_t>(tokens[i].size()) <= max_rows) {
        const auto n = static_cast<std::int64_t>(tokens[i].size());
        chunks.push_back({tokens[i].data(), 0, n, &tables[i], true, cache::base_model});
        done[i] = n;
        rows += n;
        ++i;
      }
      if (chunks.empty())
        throw std::runtime_error("bench_cuda: a prompt is longer than the engine's step");
      e.step(chunks);
    }
    return seconds_since(t0);
  }

  /// `steps` decode steps (the next token is argmax-free: a fixed id, so only the engine is
  /// timed); returns seconds.
  double decode(step_engine& e, int steps) {
    const auto t0 = clock_type::now();
    std::vector<std::int32_t> next(tokens.size(), 464);
    for (int s = 0; s < steps; ++s) {
      std::vector<engine_chunk> chunks;
      for (std::size_t i = 0; i < tokens.size(); ++i)
        chunks.push_back({&next[i], done[i]++, 1, &tables[i], true, cache::base_model});
      e.step(chunks);
    }
    return seconds_since(t0);
  }
};

struct stream_result {
  double tokens_per_s = 0, ttft_p50_ms = 0, tpot_p50_ms = 0, wall_s = 0;
  int failed = 0;
};

/// `streams` closed-loop clients, 2 requests each, through a serving loop over `e`.
stream_result serve(step_engine& e, const text::tokenizer& tok, const gpt2_config& c, std::uint32_t blocks,
                    int block_size, int streams, int in, int out) {
  worker::serving_config cfg;
  cfg.num_blocks = blocks;
  cfg.block_size = static_cast<std::uint32_t>(block_size);
  cfg.sched.max_seqs = static_cast<std::uint32_t>(streams);
  cfg.sched.max_batched_tokens = std::max<std::uint32_t>(2048, static_cast<std::uint32_t>(streams));
  cfg.eos_id = tok.eos_id();
  worker::serving_loop loop(e, tok, cfg);
  std::mt19937 rng(5);
  const int total = 2 * streams;
  std::mutex m;
  std::condition_variable cv;
  int next = 0, done = 0;
  std::vector<clock_type::time_point> sent(static_cast<std::size_t>(total));
  std::vector<double> ttft, tpot;
  stream_result r;
  std::uint64_t produced = 0;
  std::function<void()> submit = [&] {  // with m held
    if (next >= total)
      return;
    const auto i = static_cast<std::size_t>(next++);
    request_draft d;
    for (int k = 0; k < in; ++k)
      d.prompt.push_back(static_cast<std::int32_t>(rng() % 50000));
    d.params.temperature = 0;
    d.params.ignore_eos = true;
    d.params.max_tokens = static_cast<std::uint32_t>(out);
    auto req = validate_or_throw(std::move(d), c.limits());
    auto first = std::make_shared<std::optional<clock_type::time_point>>();
    worker::request_callbacks cb;
    cb.on_token = [first](std::int32_t, std::string_view) {
      if (!*first)
        *first = clock_type::now();
    };
    cb.on_done = [&, i, first](worker::request_result res) {
      const auto now = clock_type::now();
      std::lock_guard<std::mutex> g(m);
      if (res.outcome != worker::request_outcome::finished)
        ++r.failed;
      produced += res.tokens.size();
      const double lat = std::chrono::duration<double, std::milli>(now - sent[i]).count();
      const double tt = *first ? std::chrono::duration<double, std::milli>(**first - sent[i]).count() : lat;
      ttft.push_back(tt);
      if (res.tokens.size() > 1)
        tpot.push_back((lat - tt) / static_cast<double>(res.tokens.size() - 1));
      ++done;
      submit();
      cv.notify_all();
    };
    sent[i] = clock_type::now();
    loop.submit(std::move(req), std::nullopt, std::move(cb));
  };
  const auto t0 = clock_type::now();
  {
    std::unique_lock<std::mutex> lk(m);
    for (int k = 0; k < streams; ++k)
      submit();
    cv.wait(lk, [&] { return done == total; });
  }
  r.wall_s = seconds_since(t0);
  loop.stop(true);
  r.tokens_per_s = static_cast<double>(produced) / r.wall_s;
  r.ttft_p50_ms = tools::percentile(ttft, 50);
  r.tpot_p50_ms = tools::percentile(tpot, 50);
  return r;
}

} // namespace

int main(int argc, char** argv) try {
  tools::args a(argc, argv, 1, {"quick"});
  const int device = static_cast<int>(a.integer_in("device", 0, 0, 64));
  const bool quick = a.has("quick");
  const auto batches = int_list(a.str("batches", quick ? "1,32" : "1,32,256"));
  const auto stream_counts = int_list(a.str("streams", quick ? "16" : "64,256"));
  const int steps = static_cast<int>(a.integer_in("steps", quick ? 16 : 64, 1, 4096));
  const auto json_path = a.str("json", "");
  auto model = a.str("model", "");
  const auto tok_dir = a.str("tokenizer", std::string(LF_SOURCE_DIR) + "/models/tokenizer");
  a.finish();
  const auto info = describe_cuda_device(device);  // before anything is written
  fs::path tmp;
  if (model.empty()) {
    tmp = fs::temp_directory_path() / ("bench_cuda_" + std::to_string(::getpid()));
    std::cout << "writing a GPT-2-124M-shaped random checkpoint to " << tmp << "\n";
    test::write_random_checkpoint(tmp.string(), gpt2_config{}, 1, 0.02f);
    model = tmp.string();
  }
  nlohmann::json report;
  const double bw = copy_bandwidth(device);
  std::cout << "[device] cuda:" << device << " " << info.name << ", " << info.multiprocessors << " SMs, "
            << (info.memory_bytes >> 30) << " GiB, nominal " << info.memory_bandwidth_gbs << " GB/s, copy "
            << bw / 1e9 << " GB/s (read + write)\n";
  report["device"] = {{"name", info.name}, {"sms", info.multiprocessors}, {"nominal_gbs", info.memory_bandwidth_gbs},
                      {"copy_gbs", bw / 1e9}};
  const int block_size = 16, prompt = 128;
  const int max_b = std::max(*std::max_element(batches.begin(), batches.end()), 32);
  const auto max_streams = *std::max_element(stream_counts.begin(), stream_counts.end());
  const auto c = gpt2_config::load(model + "/config.json");
  const auto per_seq = static_cast<std::uint32_t>((prompt + 128 + steps + block_size) / block_size);
  cuda_options o;
  o.device = device;
  o.block_size = block_size;
  o.num_blocks = per_seq * static_cast<std::uint32_t>(std::max(max_b, max_streams));
  o.max_rows = 4096;
  o.host_threads = 8;
  auto e = make_cuda_engine(model, o);
  std::cout << "weights " << (e->weight_bytes() >> 20) << " MiB read per step, K/V pool " << (e->kv_bytes() >> 20)
            << " MiB\n\n[decode] " << prompt << " cached tokens, " << steps << " timed steps\n"
            << "  batch | graphs | tok/s    | step ms | floor ms | floor/step\n";
  std::mt19937 rng(3);
  const double kv_per_token = 2.0 * c.n_layer * c.n_embd * 4;
  for (int b : batches) {
    for (bool graphs : {true, false}) {
      e->set_graphs(graphs);
      batch bt(b, prompt, steps + 8, block_size, rng, c.vocab_size);
      bt.prefill(*e, o.max_rows);
      bt.decode(*e, 4);  // warm-up: graphs captured, clocks up
      const double s = bt.decode(*e, steps);
      const double step_ms = s * 1e3 / steps;
      const double floor_ms =
        (static_cast<double>(e->weight_bytes()) + kv_per_token * b * (prompt + 4 + steps / 2.0)) / bw * 1e3;
      const double tps = static_cast<double>(b) * steps / s;
      std::cout << "  " << std::setw(5) << b << " | " << std::setw(6) << (graphs ? "on" : "off") << " | "
                << std::setw(8) << std::fixed << std::setprecision(1) << tps << " | " << std::setw(7)
                << std::setprecision(3) << step_ms << " | " << std::setw(8) << floor_ms << " | " << std::setw(6)
                << std::setprecision(2) << floor_ms / step_ms << "\n";
      report["decode"].push_back({{"batch", b}, {"graphs", graphs}, {"tokens_per_s", tps}, {"step_ms", step_ms},
                                  {"floor_ms", floor_ms}});
    }
  }
  e->set_graphs(true);
  std::cout << "\n[prefill] " << prompt << "-token prompts\n  prompts | prompt tok/s\n";
  for (int b : {1, 32}) {
    batch warm(b, prompt, 8, block_size, rng, c.vocab_size);
    warm.prefill(*e, o.max_rows);
    batch bt(b, prompt, 8, block_size, rng, c.vocab_size);
    const double s = bt.prefill(*e, o.max_rows);
    const double tps = static_cast<double>(b) * prompt / s;
    std::cout << "  " << std::setw(7) << b << " | " << std::setprecision(0) << tps << "\n";
    report["prefill"].push_back({{"prompts", b}, {"tokens_per_s", tps}});
  }
  const auto tok = text::tokenizer::from_dir(tok_dir);
  std::cout << "\n[serve] serving loop in-process, closed loop, " << prompt << " in / 128 out, 2 requests per stream\n"
            << "  streams | output tok/s | TTFT p50 ms | TPOT p50 ms | failed\n";
  for (int n : stream_counts) {
    const auto r = serve(*e, tok, c, o.num_blocks, block_size, n, prompt, 128);
    std::cout << "  " << std::setw(7) << n << " | " << std::setw(12) << std::setprecision(1) << r.tokens_per_s << " | "
              << std::setw(11) << r.ttft_p50_ms << " | " << std::setw(11) << std::setprecision(2) << r.tpot_p50_ms
              << " | " << r.failed << "\n";
    report["serve"].push_back({{"streams", n}, {"tokens_per_s", r.tokens_per_s}, {"ttft_p50_ms", r.ttft_p50_ms},
                               {"tpot_p50_ms", r.tpot_p50_ms}, {"failed", r.failed}});
  }
  const auto st = e->stats();
  report["stats"] = {{"graph_steps", st.graph_steps}, {"eager_steps", st.eager_steps},
                     {"graphs_captured", st.graphs_captured}};
  if (!json_path.empty())
    std::ofstream(json_path) << report.dump(2) << "\n";
  e.reset();
  if (!tmp.empty())
    fs::remove_all(tmp);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_cuda: " << e.what() << "\n";
  return 1;
}
