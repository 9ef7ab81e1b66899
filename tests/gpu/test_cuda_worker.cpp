// A whole worker on the GPU (worker_runtime with device cuda:0: settings, the engine, the serving
// loop, the sampler on the host) against the same worker on the CPU's f32 path, on the embedded
// default model: the same greedy text for the test prompts (seeded samples are reported).
#include <catch2/catch.hpp>

#include <future>

#include "text/tokenizer.hpp"
#include "worker/worker_runtime.hpp"

using namespace lf;

namespace {

worker::worker_settings worker_on(const std::string& device,
                                 worker::speculation_mode spec = worker::speculation_mode::off) {
  worker::worker_settings s;
  s.model_dir = std::string(LF_SOURCE_DIR) + "/models/default";
  s.device = device;
  s.dtype = "f32";
  s.kv_dtype = "f32";
  s.threads = 2;
  s.kv_cache_mb = 256;
  s.max_seqs = 8;
  s.max_batched_tokens = 64;  // prompts are chunked
  s.speculation = spec;
  return s;
}

/// Runs every prompt at once through `rt` and returns each one's tokens.
std::vector<std::vector<std::int32_t>> generate(worker::worker_runtime& rt, const std::vector<std::string>& prompts,
                                                float temperature) {
  std::vector<std::promise<worker::request_result>> done(prompts.size());
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    request_draft d;
    d.prompt = rt.tokenizer().encode(prompts[i]);
    d.params.temperature = temperature;
    d.params.seed = 1234 + i;
    d.params.max_tokens = 40;
    d.params.ignore_eos = true;
    worker::request_callbacks cb;
    cb.on_done = [&done, i](worker::request_result r) { done[i].set_value(std::move(r)); };
    rt.loop().submit(validate_or_throw(std::move(d), rt.limits()), std::nullopt, std::move(cb));
  }
  std::vector<std::vector<std::int32_t>> out;
  for (auto& p : done) {
    auto r = p.get_future().get();
    REQUIRE(r.outcome == worker::request_outcome::finished);
    out.push_back(r.tokens);
  }
  return out;
}

} // namespace

TEST_CASE("[gpu] a worker on cuda:0 writes the CPU worker's greedy text") {
  const std::vector<std::string> prompts = {
    "The quick brown fox", "Once upon a time, in a land far away,", "To be, or not to be:",
    "In the beginning", "The meaning of life is", "A"};
  worker::worker_runtime cpu(worker_on("cpu"));
  worker::worker_runtime gpu(worker_on("cuda:0"));
  CHECK_THAT(gpu.describe(), Catch::Contains("cuda:0"));
  const auto a = generate(cpu, prompts, 0.0f);
  const auto b = generate(gpu, prompts, 0.0f);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    INFO("prompt " << i << ": " << gpu.tokenizer().decode(b[i]));
    CHECK(a[i] == b[i]);
  }
  // Sampling runs the CPU's sampler on the GPU's logits. Unlike the CPU engine, the GPU engine is
  // not batch-invariant: cuBLAS picks its kernels by the step's row count, so a row's logits move
  // by ~1e-6 with the batch the scheduler happened to form, and a seeded draw that lands that
  // close to a boundary of the cumulative distribution takes the neighbouring token (seen on an
  // H200: two runs of the same seeded requests differed at one token of 240). Greedy text is
  // checked above; seeded samples are reported.
  const auto s1 = generate(gpu, prompts, 0.8f);
  const auto s2 = generate(gpu, prompts, 0.8f);
  const auto sc = generate(cpu, prompts, 0.8f);
  int same = 0, repeated = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    repeated += s1[i] == s2[i] ? 1 : 0;
    same += s1[i] == sc[i] ? 1 : 0;
  }
  WARN("seeded samples repeated on the GPU for " << repeated << " of " << prompts.size() << " prompts");
  WARN("seeded samples equal on both devices for " << same << " of " << prompts.size() << " prompts");
}

TEST_CASE("[gpu] a worker on cuda:0 speculating (n-gram) writes the plain CPU worker's greedy text") {
  const std::vector<std::string> prompts = {
    "Repeat after me: the cat sat on the mat. The cat sat on the mat. The cat", "A list: one, two, three, one, two,",
    "The quick brown fox", "Once upon a time, in a land far away,"};
  worker::worker_runtime cpu(worker_on("cpu"));
  worker::worker_runtime gpu(worker_on("cuda:0", worker::speculation_mode::on));
  const auto a = generate(cpu, prompts, 0.0f);
  const auto b = generate(gpu, prompts, 0.0f);
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    INFO("prompt " << i << ": " << gpu.tokenizer().decode(b[i]));
    CHECK(a[i] == b[i]);
  }
  const auto st = gpu.loop().load().speculation;
  WARN("speculation on the GPU: " << st.proposed << " proposed, " << st.accepted << " accepted, " << st.rows
                                  << " verifications");
  CHECK(st.rows > 0);
  CHECK(st.accepted > 0);
}

TEST_CASE("[gpu] settings that a GPU worker cannot run are refused with a reason") {
  auto s = worker_on("cuda:0");
  s.dtype = "int8";
  CHECK_THROWS_WITH(worker::worker_runtime(s), Catch::Contains("f32"));
  s = worker_on("cuda:7");
  CHECK_THROWS_WITH(worker::worker_runtime(s), Catch::Contains("no such GPU"));
}
