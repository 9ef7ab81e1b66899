// Corpus splitting and batch sampling: the held-out tail never leaks into training windows, files
// are drawn by weight, and a batch depends only on (seed, step, micro-batch).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <numeric>

#include "tools/train/corpus.hpp"

using namespace lf::train;

namespace {

/// A stream whose token values are their positions, so a window reveals where it came from.
token_stream counting_stream(const std::string& name, int n, double val_fraction, int offset = 0) {
  std::vector<std::int32_t> t(static_cast<std::size_t>(n));
  std::iota(t.begin(), t.end(), offset);
  return make_stream(name, std::move(t), val_fraction);
}

} // namespace

TEST_CASE("the last val_fraction of each file is held out", "[train][corpus]") {
  auto s = counting_stream("a", 1000, 0.05);
  CHECK(s.train_size() == 950);
  CHECK(s.val_size() == 50);
  CHECK(s.tokens[s.train_end] == 950);
  CHECK(counting_stream("b", 999, 0.1).val_size() == 99); // rounded down
  CHECK(counting_stream("c", 10, 0.0).val_size() == 0);
  CHECK_THROWS_AS(counting_stream("d", 10, 0.6), std::invalid_argument);
  CHECK_THROWS_AS(counting_stream("e", 10, -0.1), std::invalid_argument);
}

TEST_CASE("mix_power weights files between proportional and uniform", "[train][corpus]") {
  auto make = [](double power) {
    return make_corpus({counting_stream("small", 100, 0), counting_stream("big", 400, 0)}, power, 8);
  };
  CHECK(make(1.0).weights[0] == Approx(0.2));
  CHECK(make(0.0).weights[0] == Approx(0.5));
  CHECK(make(0.5).weights[0] == Approx(10.0 / 30.0));
  CHECK(make(1.0).train_tokens() == 500);
  CHECK_THROWS_WITH(make_corpus({counting_stream("tiny", 8, 0)}, 1.0, 8),
                    Catch::Contains("tiny") && Catch::Contains("fewer than one window"));
  CHECK_THROWS_AS(make_corpus({}, 1.0, 8), std::invalid_argument);
}

TEST_CASE("training windows are consecutive tokens from the training part only", "[train][corpus]") {
  const int context = 16;
  auto c = make_corpus({counting_stream("a", 500, 0.2), counting_stream("b", 300, 0.2, 100000)}, 1.0,
                       context);
  std::map<bool, int> from_b;
  for (std::int64_t step = 0; step < 50; ++step) {
    auto w = sample_windows(c, 7, step, 0, 4, context);
    REQUIRE(w.size() == 4u * (context + 1));
    for (int r = 0; r < 4; ++r) {
      const auto* row = w.data() + r * (context + 1);
      const bool in_b = row[0] >= 100000;
      const auto& s = c.streams[in_b ? 1 : 0];
      const int base = in_b ? 100000 : 0;
      for (int i = 1; i <= context; ++i)
        REQUIRE(row[i] == row[i - 1] + 1); // no jump: one file, consecutive
      REQUIRE(row[context] - base < static_cast<int>(s.train_end)); // never a held-out token
      ++from_b[in_b];
    }
  }
  // Drawn in proportion to training size (400 vs 240 tokens): b is 37.5% of 200 rows.
  CHECK(from_b[true] > 50);
  CHECK(from_b[true] < 100);
}

TEST_CASE("batches depend only on seed, step and micro-batch", "[train][corpus]") {
  auto c = make_corpus({counting_stream("a", 5000, 0.1)}, 1.0, 32);
  auto w = sample_windows(c, 1, 10, 0, 4, 32);
  CHECK(sample_windows(c, 1, 10, 0, 4, 32) == w);
  CHECK(sample_windows(c, 1, 11, 0, 4, 32) != w);
  CHECK(sample_windows(c, 1, 10, 1, 4, 32) != w);
  CHECK(sample_windows(c, 2, 10, 0, 4, 32) != w);
}

TEST_CASE("validation windows cover the held-out tail once", "[train][corpus]") {
  auto s = counting_stream("a", 1000, 0.1); // tail: tokens 900..999
  auto w = validation_windows(s, 10, 0);
  CHECK(w.length == 11);
  CHECK(w.count == 9); // windows start at 900, 910, ..., 980; 990 would need token 1000
  CHECK(w.tokens.front() == 900);
  CHECK(w.tokens[11] == 910); // the next window starts on the previous one's last token
  CHECK(w.tokens.back() == 990);

  auto capped = validation_windows(s, 10, 50);
  CHECK(capped.count == 4);

  auto short_tail = validation_windows(counting_stream("b", 100, 0.05), 10, 0);
  CHECK(short_tail.count == 1);
  CHECK(short_tail.length == 5);
  CHECK(validation_windows(counting_stream("c", 100, 0.0), 10, 0).count == 0);
}

TEST_CASE("stream names are file names without extension", "[train][corpus]") {
  CHECK(stream_name("build/corpus/shakespeare.txt") == "shakespeare");
  CHECK(stream_name("bible") == "bible");
}
