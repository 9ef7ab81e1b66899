// bench_sampler: the cost of sampling one row of GPT-2's 50,257 logits, per sampling setting, as a
// program (not a test). Logits are drawn once from N(0, 2) with a fixed seed and copied back before
// every draw; the context (for the repetition penalty) is 128 ids.
//
//   bench_sampler [--vocab N] [--rows N]
//
// Prints microseconds per row, the median of 5 batches of --rows draws each, on one thread (the
// serving loop samples a step's rows on the worker's pool, one row per thread at a time).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "tools/common/args.hpp"
#include "worker/engine/sampling/sampler.hpp"

int main(int argc, char** argv) try {
  lf::tools::args a(argc, argv, 1);
  const auto vocab = static_cast<std::size_t>(a.integer_in("vocab", 50257, 1, 1 << 20));
  const int rows = static_cast<int>(a.integer_in("rows", 2000, 1, 1 << 20));
  a.finish();
  std::mt19937 gen(1);
  std::normal_distribution<float> normal(0.0f, 2.0f);
  std::vector<float> base(vocab);
  for (auto& x : base)
    x = normal(gen);
  const std::vector<std::int32_t> context(128, 5);
  struct setting {
    const char* name;
    float temperature, top_p;
    int top_k;
    float repetition_penalty;
  };
  const setting settings[] = {{"greedy", 0.0f, 1.0f, 0, 1.0f},
                              {"temperature 1", 1.0f, 1.0f, 0, 1.0f},
                              {"temperature 0.8, top_p 0.95", 0.8f, 0.95f, 0, 1.0f},
                              {"  + repetition_penalty 1.1", 0.8f, 0.95f, 0, 1.1f},
                              {"temperature 0.7, top_k 40", 0.7f, 1.0f, 40, 1.0f}};
  std::printf("vocabulary %zu, %d rows per batch, median of 5 batches\n", vocab, rows);
  for (const auto& st : settings) {
    lf::sampling_params p;
    p.temperature = st.temperature;
    p.top_p = st.top_p;
    p.top_k = st.top_k;
    p.repetition_penalty = st.repetition_penalty;
    lf::engine::sampler s(p, 1);
    std::vector<float> logits(vocab);
    std::vector<double> batch_us;
    for (int b = 0; b < 5; ++b) {
      double us = 0;
      for (int r = 0; r < rows; ++r) {
        std::copy(base.begin(), base.end(), logits.begin());
        const auto t0 = std::chrono::steady_clock::now();
        const auto token = s.sample(logits.data(), vocab, context);
        us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
        if (token < 0 || static_cast<std::size_t>(token) >= vocab)
          throw std::runtime_error("sampled an id outside the vocabulary");
      }
      batch_us.push_back(us / rows);
    }
    std::sort(batch_us.begin(), batch_us.end());
    std::printf("%-30s %8.1f us/row\n", st.name, batch_us[2]);
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "bench_sampler: %s\n", e.what());
  return 2;
}
