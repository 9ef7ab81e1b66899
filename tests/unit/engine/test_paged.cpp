// The paged KV path: mixed prefill-chunk + decode batches through block tables give the same
// logits and greedy tokens as the plain dense KV-cache path, and prefix-cache hits change nothing.
#include "tests/support/catch_aten.hpp"

#include "cache/block_manager.hpp"
#include "cache/kv_pool.hpp"
#include "tests/support/tiny_engine.hpp"
#include "worker/engine/dense_attention.hpp"
#include "worker/engine/generator.hpp"
#include "worker/engine/gpt2_model.hpp"
#include "worker/engine/paged_runner.hpp"
#include "worker/engine/step_engine.hpp"
#include "worker/engine/tokenizer.hpp"
#include "worker/engine/weights.hpp"

using namespace lf::engine;
using lf::cache::seq_id;

namespace {

lf::test::tiny_engine& fx() { return lf::test::tiny(); }

/// Greedy tokens of one prompt through the dense path, for reference.
std::vector<std::int32_t> dense_greedy(const std::vector<std::int32_t>& prompt, int n) {
  lf::request_draft d;
  d.prompt = prompt;
  d.params.temperature = 0;
  d.params.max_tokens = n;
  d.params.ignore_eos = true;
  generation_request r{lf::validate_or_throw(std::move(d), fx().model.config().limits())};
  return generate(fx().model, fx().tok, {r}).outputs[0].tokens;
}

/// Last-position logits of a full sequence recomputed densely.
at::Tensor dense_logits(const std::vector<std::int32_t>& seq) {
  auto n = static_cast<std::int64_t>(seq.size());
  dense_kv_cache c(fx().model.config(), 1, n, at::kFloat);
  c.begin_step(n, at::ones({1, n}, at::kBool));
  std::vector<std::int64_t> ids(seq.begin(), seq.end());
  auto h = fx().model.forward_hidden(at::tensor(ids, at::kLong), at::arange(n, at::kLong), c);
  return fx().model.logits(h.narrow(0, n - 1, 1))[0];
}

/// Runs several sequences together through the paged runner: each step every sequence adds its
/// next prefill chunk (at most `chunk` tokens) or one decode token. Returns generated tokens.
struct paged_driver {
  lf::cache::block_manager blocks{{64, 4, true}};
  lf::cache::kv_pool pool{{2, 4, 16, 64, 4}};
  paged_runner runner{fx().model, pool};
  double worst_diff = 0;

  std::vector<std::vector<std::int32_t>> run(const std::vector<std::vector<std::int32_t>>& prompts,
                                             int new_tokens, std::int64_t chunk) {
    struct seq { seq_id id; std::vector<std::int32_t> toks; std::int64_t computed; std::size_t prompt_len; };
    std::vector<seq> seqs;
    static std::uint64_t next_id = 1;
    for (auto& p : prompts) {
      seq s{seq_id{next_id++}, p, 0, p.size()};
      auto hit = blocks.allocate(s.id, p, lf::cache::base_model);
      REQUIRE(hit.has_value());
      s.computed = *hit;
      seqs.push_back(std::move(s));
    }
    auto done = [&](const seq& s) { return s.toks.size() >= s.prompt_len + static_cast<std::size_t>(new_tokens); };
    while (!std::all_of(seqs.begin(), seqs.end(), done)) {
      std::vector<engine_chunk> chunks;
      std::vector<seq*> sampling;
      for (auto& s : seqs) {
        if (done(s))
          continue;
        auto remaining = static_cast<std::int64_t>(s.toks.size()) - s.computed;
        auto count = std::min(remaining, chunk);
        REQUIRE(blocks.ensure_slots(s.id, static_cast<std::uint32_t>(s.computed + count)));
        bool last = count == remaining;
        chunks.push_back({s.toks.data() + s.computed, s.computed, count, &blocks.block_table(s.id), last});
        if (last)
          sampling.push_back(&s);
      }
      runner.step(chunks);
      std::size_t i = 0, r = 0;
      for (auto& s : seqs) {
        if (done(s))
          continue;
        s.computed += chunks[i++].count;
        blocks.commit_tokens(s.id, s.toks, static_cast<std::uint32_t>(s.computed));
      }
      for (auto* s : sampling) {
        auto row = at::from_blob(runner.logits(r++), {static_cast<std::int64_t>(runner.vocab_size())}, at::kFloat);
        worst_diff = std::max(worst_diff, (row - dense_logits(s->toks)).abs().max().item<double>());
        s->toks.push_back(static_cast<std::int32_t>(row.argmax().item<std::int64_t>()));
      }
      blocks.check_invariants();
    }
    std::vector<std::vector<std::int32_t>> out;
    for (auto& s : seqs) {
      out.emplace_back(s.toks.begin() + static_cast<std::ptrdiff_t>(s.prompt_len), s.toks.end());
      blocks.free(s.id);
    }
    return out;
  }
};

} // namespace

TEST_CASE("mixed prefill chunks and decodes through block tables equal the dense path", "[paged]") {
  std::vector<std::vector<std::int32_t>> prompts = {
      fx().tok.encode("Once upon a time, in a land far far away, there lived a king"),
      fx().tok.encode("Hi"), fx().tok.encode("The quick brown fox jumps over the lazy dog.")};
  paged_driver d;
  for (std::int64_t chunk : {3, 5, 64}) {
    auto out = d.run(prompts, 12, chunk);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
      INFO("chunk " << chunk << " prompt " << i);
      CHECK(out[i] == dense_greedy(prompts[i], 12));
    }
  }
  INFO("worst |paged - dense| logit difference: " << d.worst_diff);
  CHECK(d.worst_diff < 1e-4);
  CHECK(d.blocks.get_stats().in_use == 0);
}

TEST_CASE("a prefix-cache hit gives identical output", "[paged]") {
  auto prompt = fx().tok.encode("To be, or not to be, that is the question: whether tis nobler in the mind");
  paged_driver d;
  auto first = d.run({prompt}, 10, 8);
  auto hits_before = d.blocks.get_stats().prefix_hit_tokens;
  auto second = d.run({prompt}, 10, 8);
  CHECK(d.blocks.get_stats().prefix_hit_tokens > hits_before);  // the second run reused blocks
  CHECK(first == second);
  CHECK(d.worst_diff < 1e-4);
}
