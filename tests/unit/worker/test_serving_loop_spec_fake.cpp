// Speculative decoding keeps the model's distribution: over a fake engine whose next-token law
// p(next | token) is known, thousands of seeded requests sampled with n-gram proposals verified in
// the batch emit tokens whose joint frequencies match p (chi-square), and each is bit-identical
// to the same request decoded without speculation.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/unit/worker/loop_fixture.hpp"
#include "worker/serving_loop.hpp"

using namespace lf::worker;

namespace {

constexpr std::int32_t first_token = 64;  // 'a', 'b', 'c', 'd' in GPT-2's vocabulary
constexpr std::size_t vocab = 256;

/// p(next | last): the cycle a -> b -> c -> d -> a most likely, the rest less.
double law(int last, int next) {
  static const double by_step[4] = {0.05, 0.55, 0.25, 0.15};  // next = last + step (mod 4)
  return by_step[((next - last) % 4 + 4) % 4];
}

/// Rows from the token at each position alone; every row a chunk asks for (multi_logits).
class law_engine final : public lf::engine::step_engine {
public:
  void step(const std::vector<lf::engine::engine_chunk>& chunks) override {
    rows_.clear();
    for (const auto& c : chunks) {
      if (!c.want_logits)
        continue;
      for (auto k = c.count - c.logits_count; k < c.count; ++k) {
        std::vector<float> row(vocab, -INFINITY);
        const int last = c.tokens[k] - first_token;
        for (int n = 0; n < 4; ++n)
          row[first_token + n] = static_cast<float>(std::log(law(last, n)));
        rows_.push_back(std::move(row));
      }
    }
  }
  float* logits(std::size_t i) override { return rows_.at(i).data(); }
  std::size_t vocab_size() const override { return vocab; }
  bool multi_logits() const override { return true; }

private:
  std::vector<std::vector<float>> rows_;
};

/// `draft_blocks` > 0: a second law_engine drafts (greedy: the cycle a -> b -> c -> d) over a
/// pool of that many blocks.
std::vector<std::vector<std::int32_t>> run(speculation_mode mode, int n, load_report& report,
                                           std::uint32_t draft_blocks = 0) {
  serving_config cfg;
  cfg.num_blocks = 4096;
  cfg.block_size = 4;
  cfg.sched.max_seqs = 64;
  cfg.sched.max_batched_tokens = 1024;
  cfg.speculation = mode;
  cfg.speculative_tokens = 4;
  cfg.ngram.min_ngram = 1;
  law_engine eng, draft;
  if (draft_blocks > 0) {
    cfg.method = speculation_method::draft;
    cfg.draft_blocks = draft_blocks;
    cfg.draft_block_size = 4;
    cfg.draft_context = 1024;
  }
  serving_loop loop(eng, lf::test::repo_tokenizer(), cfg, nullptr, draft_blocks > 0 ? &draft : nullptr);
  lf::test::collector c;
  for (int i = 0; i < n; ++i) {
    lf::request_draft d;
    d.prompt = {64, 65, 66, 67, 64, 65, 66, 67, 64, 65};  // "abcdabcdab": proposes c d a b
    d.params.temperature = 1.0f;
    d.params.seed = static_cast<std::uint64_t>(i);
    d.params.max_tokens = 3;
    lf::test::submit(loop, d, c.make(i));
  }
  REQUIRE(c.wait_for(static_cast<std::size_t>(n), std::chrono::seconds(120)));
  loop.stop(true);
  report = loop.load();
  CHECK(report.free_blocks == report.total_blocks);
  CHECK(report.draft_free_blocks == draft_blocks);
  std::vector<std::vector<std::int32_t>> out;
  for (int i = 0; i < n; ++i)
    out.push_back(c.result(i).tokens);
  return out;
}

} // namespace

TEST_CASE("sampled speculative decoding keeps the model's distribution and every seed's exact output",
          "[serving_loop][speculation]") {
  constexpr int n = 3000;
  load_report spec_load, plain_load;
  const auto spec = run(speculation_mode::on, n, spec_load);
  const auto plain = run(speculation_mode::off, n, plain_load);
  // The proposals ran, and verification both accepted and rejected.
  const auto& s = spec_load.speculation;
  INFO("proposed " << s.proposed << ", accepted " << s.accepted << ", rows " << s.rows);
  CHECK(s.rows > 0);
  CHECK(s.accepted > 0);
  CHECK(s.accepted < s.proposed);
  CHECK(plain_load.speculation.rows == 0);
  // Bit-identical per seed: the draw of token index i is the one plain decoding makes.
  CHECK(spec == plain);
  // The first two tokens' joint frequencies against p(t0 | 'b') p(t1 | t0): chi-square, 15
  // degrees of freedom, 37.70 the 0.001 critical value. Fixed seeds: the test is deterministic.
  std::vector<double> count(16, 0.0);
  for (const auto& t : spec) {
    REQUIRE(t.size() == 3);
    count[static_cast<std::size_t>((t[0] - first_token) * 4 + (t[1] - first_token))] += 1;
  }
  double chi2 = 0;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b) {
      const double expected = n * law(1, a) * law(a, b);
      const double d = count[static_cast<std::size_t>(a * 4 + b)] - expected;
      chi2 += d * d / expected;
    }
  INFO("chi-square " << chi2);
  CHECK(chi2 < 37.70);
  // And the third token's marginal: 3 degrees of freedom, 16.27 at 0.001.
  std::vector<double> third(4, 0.0), want(4, 0.0);
  for (const auto& t : spec)
    third[static_cast<std::size_t>(t[2] - first_token)] += 1;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      for (int c = 0; c < 4; ++c)
        want[static_cast<std::size_t>(c)] += n * law(1, a) * law(a, b) * law(b, c);
  double chi3 = 0;
  for (int c = 0; c < 4; ++c)
    chi3 += (third[static_cast<std::size_t>(c)] - want[static_cast<std::size_t>(c)])
            * (third[static_cast<std::size_t>(c)] - want[static_cast<std::size_t>(c)]) / want[static_cast<std::size_t>(c)];
  INFO("third token chi-square " << chi3);
  CHECK(chi3 < 16.27);
}

TEST_CASE("draft-model proposals keep every seed's exact output, and a full draft pool falls back to n-gram",
          "[serving_loop][speculation][draft]") {
  constexpr int n = 400;
  load_report plain_load;
  const auto plain = run(speculation_mode::off, n, plain_load);
  for (std::uint32_t blocks : {4096u, 12u}) {
    INFO("draft pool of " << blocks << " blocks");
    load_report l;
    const auto got = run(speculation_mode::on, n, l, blocks);
    CHECK(got == plain);
    const auto& s = l.speculation;
    INFO("proposed " << s.proposed << ", accepted " << s.accepted << ", draft rows " << s.draft_rows << ", refused "
                     << s.draft_refused);
    CHECK(s.draft_rows > 0);
    CHECK(s.draft_proposed > 0);
    CHECK(s.accepted > 0);
    CHECK(s.accepted < s.proposed);
    CHECK(l.failed == 0);
    if (blocks == 12u)
      CHECK(s.draft_refused > 0);  // those rows took n-gram proposals instead
    else
      CHECK(s.draft_refused == 0);
  }
}

TEST_CASE("a draft model whose vocabulary differs is refused at start", "[serving_loop][draft]") {
  class small_vocab final : public lf::engine::step_engine {
  public:
    void step(const std::vector<lf::engine::engine_chunk>&) override {}
    float* logits(std::size_t) override { return nullptr; }
    std::size_t vocab_size() const override { return 50; }
  } other;
  law_engine eng;
  serving_config cfg;
  cfg.num_blocks = 16;
  cfg.draft_blocks = 16;
  cfg.draft_context = 64;
  CHECK_THROWS_WITH(serving_loop(eng, lf::test::repo_tokenizer(), cfg, nullptr, &other),
                    Catch::Contains("vocabulary"));
}
