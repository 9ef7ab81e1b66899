// The CUDA engine against the CPU engine's f32 path on the same random checkpoints: logits of
// every step (chunked prefill, mixed steps, decode from graphs), greedy choices, LoRA batches that
// mix adapters and the base model, graph replay against eager launches, and refused input.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <random>

#include "tests/gpu/random_checkpoint.hpp"
#include "tests/support/temp_dir.hpp"
#include "worker/engine/model/cpu_lora.hpp"
#include "worker/engine/model/cpu_model.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/cuda/cuda_engine.hpp"

using namespace lf;
using namespace lf::engine;

namespace {

constexpr int block_size = 8;

engine::gpt2_config small_config(bool tied = true) {
  gpt2_config c;
  c.n_layer = 3;
  c.n_head = 4;
  c.n_embd = 128;
  c.n_positions = 128;
  c.vocab_size = 1000;
  c.n_inner = 512;
  c.tie_word_embeddings = tied;
  return c;
}

/// A sequence driven through every engine in lockstep.
struct sequence {
  std::vector<std::int32_t> tokens;
  std::size_t done = 0;  ///< tokens whose K/V are cached
  std::vector<cache::block_id> table;
  cache::adapter_id adapter = cache::base_model;
};

/// The CPU engine (the reference) and any number of CUDA engines on one checkpoint.
struct bench {
  test::temp_dir tmp;
  gpt2_config cfg;
  std::string dir;
  std::uint32_t blocks;
  std::map<std::uint32_t, std::shared_ptr<const cpu_lora>> adapters;
  cache::adapter_lookup_fn lookup = [this](cache::adapter_id id) -> std::shared_ptr<const cache::adapter_payload> {
    auto it = adapters.find(id.value());
    return it == adapters.end() ? nullptr : it->second;
  };
  std::unique_ptr<cpu_model> cpu_m;
  std::unique_ptr<kernels::kv_cache> cpu_kv;
  std::unique_ptr<cpu_runner> cpu;

  explicit bench(gpt2_config c, std::uint32_t max_seqs = 32) : cfg(c), dir(tmp / "model") {
    test::write_random_checkpoint(dir, cfg, 7);
    blocks = max_seqs * static_cast<std::uint32_t>((cfg.n_positions + block_size - 1) / block_size);
    cpu_m = std::make_unique<cpu_model>(load_cpu_weights(dir, compute_dtype::f32), 2);
    cpu_kv = std::make_unique<kernels::kv_cache>(kv_shape_of(cfg, block_size, blocks, kernels::kv_type::f32));
    cpu = std::make_unique<cpu_runner>(*cpu_m, *cpu_kv, lookup);
  }

  std::unique_ptr<cuda_engine> gpu(bool graphs = true) {
    cuda_options o;
    o.num_blocks = blocks;
    o.block_size = block_size;
    o.max_rows = 64;  // small, so steps grow the buffers
    o.graphs = graphs;
    return make_cuda_engine(dir, o, lookup);
  }

  void add_adapter(std::uint32_t id, int rank, std::vector<lora_module> targets, std::uint64_t seed) {
    auto a = make_random_adapter(cfg, rank, 2.0f * static_cast<float>(rank), std::move(targets), seed, 0.1f);
    adapters[id] = std::make_shared<cpu_lora>(a, cfg);
  }

  /// Sequence i with a random prompt of `len` tokens; its blocks are i's share of the pool.
  sequence make_sequence(int i, int len, cache::adapter_id adapter = cache::base_model) {
    std::mt19937 rng(static_cast<unsigned>(100 + i));
    sequence s;
    for (int k = 0; k < len; ++k)
      s.tokens.push_back(static_cast<std::int32_t>(rng() % static_cast<unsigned>(cfg.vocab_size)));
    const auto per = static_cast<std::uint32_t>((cfg.n_positions + block_size - 1) / block_size);
    for (std::uint32_t b = 0; b < per; ++b)
      s.table.emplace_back(static_cast<std::uint32_t>(i) * per + (per - 1 - b));  // not in order
    s.adapter = adapter;
    return s;
  }
};

/// Greatest logit's index (lowest on ties).
std::size_t argmax(const float* v, std::size_t n) { return static_cast<std::size_t>(std::max_element(v, v + n) - v); }

/// What a lockstep run saw.
struct comparison {
  double max_rel = 0;          ///< largest |logit difference| / max(1, largest |logit|)
  int steps = 0, rows = 0;
  int near_ties = 0;           ///< greedy choices that differ where the reference's gap is tiny
  int greedy_mismatches = 0;   ///< greedy choices that differ elsewhere
};

/// One step: each sequence with prompt left gets a chunk of up to `chunk` tokens, the others one
/// decode token; every engine runs it, engines[1..] are compared with engines[0], whose greedy
/// choice extends the sequences.
void lockstep(std::vector<step_engine*> engines, std::vector<sequence>& seqs, int chunk, comparison& cmp) {
  std::vector<engine_chunk> chunks;
  for (auto& s : seqs) {
    const auto left = s.tokens.size() - s.done;
    const auto n = std::min<std::size_t>(left, static_cast<std::size_t>(chunk));
    engine_chunk c;
    c.tokens = s.tokens.data() + s.done;
    c.start = static_cast<std::int64_t>(s.done);
    c.count = static_cast<std::int64_t>(n);
    c.table = &s.table;
    c.want_logits = s.done + n == s.tokens.size();
    c.adapter = s.adapter;
    chunks.push_back(c);
  }
  for (auto* e : engines)
    e->step(chunks);
  ++cmp.steps;
  const auto V = engines[0]->vocab_size();
  std::size_t li = 0;
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    auto& s = seqs[i];
    s.done += static_cast<std::size_t>(chunks[i].count);
    if (!chunks[i].want_logits)
      continue;
    const float* ref = engines[0]->logits(li);
    double scale = 1.0;
    for (std::size_t k = 0; k < V; ++k)
      scale = std::max(scale, static_cast<double>(std::fabs(ref[k])));
    const auto pick = argmax(ref, V);
    for (std::size_t e = 1; e < engines.size(); ++e) {
      const float* got = engines[e]->logits(li);
      for (std::size_t k = 0; k < V; ++k)
        cmp.max_rel = std::max(cmp.max_rel, std::fabs(static_cast<double>(got[k]) - ref[k]) / scale);
      const auto other = argmax(got, V);
      if (other != pick) {
        if (ref[pick] - ref[other] <= 2e-4 * scale)
          ++cmp.near_ties;
        else
          ++cmp.greedy_mismatches;
      }
    }
    ++cmp.rows;
    ++li;
    s.tokens.push_back(static_cast<std::int32_t>(pick));
  }
}

/// Runs `seqs` through prefill (chunks of `chunk`) and then `decode` decode steps.
comparison run(std::vector<step_engine*> engines, std::vector<sequence> seqs, int chunk, int decode) {
  comparison cmp;
  std::vector<std::size_t> target;
  for (auto& s : seqs)
    target.push_back(s.tokens.size() + static_cast<std::size_t>(decode));
  for (int guard = 0; guard < 1000; ++guard) {
    bool all = true;
    for (std::size_t i = 0; i < seqs.size(); ++i)
      all = all && seqs[i].tokens.size() >= target[i];
    if (all)
      break;
    lockstep(engines, seqs, chunk, cmp);
  }
  return cmp;
}

void require_close(const comparison& c) {
  INFO("steps " << c.steps << ", rows " << c.rows << ", largest relative logit difference " << c.max_rel
                << ", near ties " << c.near_ties);
  CHECK(c.rows > 0);
  CHECK(c.max_rel <= 1e-4);
  CHECK(c.greedy_mismatches == 0);
  WARN("compared " << c.rows << " rows over " << c.steps << " steps: largest relative logit difference "
                   << c.max_rel << ", greedy near-ties " << c.near_ties);
}

} // namespace

TEST_CASE("[gpu] logits match the CPU engine's f32 path through chunked prefill, mixed steps and decode") {
  for (bool tied : {true, false}) {
    bench b(small_config(tied));
    auto gpu = b.gpu();
    std::vector<sequence> seqs;
    int i = 0;
    for (int len : {3, 9, 17, 30, 45})
      seqs.push_back(b.make_sequence(i++, len));
    const auto c = run({b.cpu.get(), gpu.get()}, seqs, 8, 24);
    require_close(c);
    CHECK(gpu->stats().graph_steps > 0);
    CHECK(gpu->stats().eager_steps > 0);
  }
}

TEST_CASE("[gpu] several logits rows of one chunk (speculative verification) match the CPU engine's") {
  bench b(small_config());
  auto gpu = b.gpu();
  std::vector<sequence> seqs;
  for (int i = 0; i < 4; ++i)
    seqs.push_back(b.make_sequence(i, 6 + 5 * i));
  // Prefill each prompt but its last 5 tokens, then one step where each chunk of 5 wants the
  // logits of its last 1, 3, 5 and 5 positions (a decode row with 0, 2 or 4 proposed tokens).
  for (int phase = 0; phase < 2; ++phase) {
    std::vector<engine_chunk> chunks;
    std::vector<std::int64_t> counts = {1, 3, 5, 5};
    for (std::size_t i = 0; i < seqs.size(); ++i) {
      auto& s = seqs[i];
      engine_chunk c;
      c.tokens = s.tokens.data() + s.done;
      c.start = static_cast<std::int64_t>(s.done);
      c.count = phase == 0 ? static_cast<std::int64_t>(s.tokens.size() - 5) : 5;
      c.table = &s.table;
      c.want_logits = phase == 1 || i % 2 == 0;
      c.logits_count = phase == 1 ? counts[i] : 1;
      chunks.push_back(c);
      s.done += static_cast<std::size_t>(c.count);
    }
    b.cpu->step(chunks);
    gpu->step(chunks);
    std::size_t rows = 0;
    for (const auto& c : chunks)
      rows += c.want_logits ? static_cast<std::size_t>(c.logits_count) : 0;
    const auto V = b.cpu->vocab_size();
    double worst = 0;
    for (std::size_t r = 0; r < rows; ++r) {
      const float *ref = b.cpu->logits(r), *got = gpu->logits(r);
      double scale = 1.0;
      for (std::size_t k = 0; k < V; ++k)
        scale = std::max(scale, static_cast<double>(std::fabs(ref[k])));
      for (std::size_t k = 0; k < V; ++k)
        worst = std::max(worst, std::fabs(static_cast<double>(got[k]) - ref[k]) / scale);
      CHECK(argmax(got, V) == argmax(ref, V));
    }
    INFO("phase " << phase << ", rows " << rows);
    CHECK(rows == (phase == 0 ? 2u : 14u));
    CHECK(worst <= 1e-4);
  }
  engine_chunk bad;
  bad.tokens = seqs[0].tokens.data();
  bad.count = 2;
  bad.table = &seqs[0].table;
  bad.want_logits = true;
  bad.logits_count = 3;
  CHECK_THROWS_WITH(gpu->step({bad}), Catch::Contains("more positions"));
  CHECK(gpu->multi_logits());
}

TEST_CASE("[gpu] graph replay computes what eager launches compute, at every padded batch size") {
  bench b(small_config());
  auto graphs = b.gpu(true), eager = b.gpu(false);
  for (int n : {1, 3, 6, 13}) {
    std::vector<sequence> seqs;
    for (int i = 0; i < n; ++i)
      seqs.push_back(b.make_sequence(i, 4 + i));
    const auto c = run({eager.get(), graphs.get()}, seqs, 16, 6);
    INFO(n << " sequences: largest relative difference " << c.max_rel);
    CHECK(c.max_rel <= 1e-5);
    CHECK(c.greedy_mismatches == 0);
  }
  CHECK(graphs->stats().graph_steps > 0);
  CHECK(graphs->stats().graphs_captured >= 4);
  CHECK(eager->stats().graph_steps == 0);
}

TEST_CASE("[gpu] one batch mixing three adapters and the base model matches the CPU engine") {
  bench b(small_config());
  b.add_adapter(1, 4, {all_lora_modules.begin(), all_lora_modules.end()}, 11);
  b.add_adapter(2, 8, {lora_module::attn_c_attn}, 12);
  b.add_adapter(3, 2, {lora_module::attn_c_proj, lora_module::mlp_c_fc}, 13);
  auto gpu = b.gpu();
  std::vector<sequence> seqs;
  const std::uint32_t which[] = {1, 2, 3, 0, 1, 0};
  for (int i = 0; i < 6; ++i)
    seqs.push_back(b.make_sequence(i, 6 + 5 * i, cache::adapter_id{which[i]}));
  require_close(run({b.cpu.get(), gpu.get()}, seqs, 8, 16));

  // The adapters change the output: the same prompt under adapter 1 and the base model differs.
  std::vector<sequence> two{b.make_sequence(0, 10, cache::adapter_id{1}), b.make_sequence(1, 10)};
  two[1].tokens = two[0].tokens;
  comparison ignored;
  lockstep({gpu.get()}, two, 16, ignored);
  const float* with = gpu->logits(0);
  const float* without = gpu->logits(1);
  double diff = 0;
  for (std::size_t k = 0; k < gpu->vocab_size(); ++k)
    diff = std::max(diff, std::fabs(static_cast<double>(with[k]) - without[k]));
  CHECK(diff > 1e-2);
}

TEST_CASE("[gpu] more adapters than device slots: slots grow within a step and are reused across steps") {
  bench b(small_config(), 40);
  for (std::uint32_t a = 1; a <= 24; ++a)
    b.add_adapter(a, 1 + static_cast<int>(a % 5), {all_lora_modules.begin(), all_lora_modules.end()}, 100 + a);
  auto gpu = b.gpu();
  std::vector<sequence> seqs;
  for (int i = 0; i < 24; ++i)  // 24 adapters in one batch: more than the 16 slots it starts with
    seqs.push_back(b.make_sequence(i, 5, cache::adapter_id{static_cast<std::uint32_t>(i + 1)}));
  require_close(run({b.cpu.get(), gpu.get()}, seqs, 8, 4));
  std::vector<sequence> later;
  for (int i = 0; i < 5; ++i)
    later.push_back(b.make_sequence(30 + i, 7, cache::adapter_id{static_cast<std::uint32_t>(20 - 3 * i)}));
  require_close(run({b.cpu.get(), gpu.get()}, later, 8, 4));
}

TEST_CASE("[gpu] a bad chunk is refused before anything runs, and the engine goes on") {
  bench b(small_config());
  auto gpu = b.gpu();
  auto s = b.make_sequence(0, 5);
  engine_chunk c{s.tokens.data(), 0, 5, &s.table, true, cache::base_model};
  std::vector<cache::block_id> outside{cache::block_id{b.blocks}};
  auto bad = c;
  bad.table = &outside;
  CHECK_THROWS_AS(gpu->step({bad}), std::invalid_argument);
  auto token = s;
  token.tokens[2] = 5000;
  bad = c;
  bad.tokens = token.tokens.data();
  CHECK_THROWS_AS(gpu->step({bad}), std::invalid_argument);
  bad = c;
  bad.start = b.cfg.n_positions - 2;
  CHECK_THROWS_AS(gpu->step({bad}), std::invalid_argument);
  bad = c;
  bad.adapter = cache::adapter_id{9};  // not loaded
  CHECK_THROWS(gpu->step({bad}));
  std::vector<sequence> seqs{s};
  require_close(run({b.cpu.get(), gpu.get()}, seqs, 8, 3));
}
