// Paged attention against a double-precision reference for every K/V type and kernel family, and
// the invariances resumption relies on: a row's output is the same whether its sequence was
// prefilled in one chunk, in several, or decoded token by token, and whatever the thread count.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <numeric>

#include "tests/unit/kernels/kernel_reference.hpp"
#include "worker/engine/kernels/attention.hpp"

using namespace lf::kernels;
using lf::test::table_scope;

namespace {

struct seq_data {
  int len;
  std::vector<float> qkv;  ///< len rows of [q | k | v]
  std::vector<std::int32_t> table;
};

/// Runs `len` tokens of one sequence through the cache in chunks of the given sizes; returns the
/// attention output of every row.
std::vector<float> run_chunks(const kv_shape& shape, const seq_data& s, const std::vector<int>& chunks,
                              thread_pool& pool) {
  kv_cache cache(shape);
  const std::size_t C = static_cast<std::size_t>(shape.heads) * shape.head_dim;
  std::vector<float> out(static_cast<std::size_t>(s.len) * C);
  int pos = 0;
  for (int n : chunks) {
    attn_seq a{s.table.data(), pos, n, 0};
    paged_attention(cache.layer(0), s.qkv.data() + static_cast<std::size_t>(pos) * 3 * C, 3 * C,
                    out.data() + static_cast<std::size_t>(pos) * C, C, {a}, pool);
    pos += n;
  }
  return out;
}

seq_data make_seq(const kv_shape& shape, int len, std::uint64_t seed) {
  seq_data s{len, lf::test::random_floats(static_cast<std::size_t>(len) * 3 * shape.heads * shape.head_dim, seed), {}};
  const int blocks = (len + shape.block_size - 1) / shape.block_size;
  s.table.resize(static_cast<std::size_t>(blocks));
  for (int b = 0; b < blocks; ++b)  // scattered blocks, not in order
    s.table[static_cast<std::size_t>(b)] = static_cast<std::int32_t>((b * 7 + 3) % static_cast<int>(shape.num_blocks));
  return s;
}

/// Row r's reference output, in double, from the unquantized K and V.
std::vector<double> reference_row(const kv_shape& shape, const seq_data& s, int r) {
  const int H = shape.heads, D = shape.head_dim;
  const std::size_t C = static_cast<std::size_t>(H) * D;
  std::vector<double> out(C);
  for (int h = 0; h < H; ++h) {
    std::vector<double> w(static_cast<std::size_t>(r) + 1);
    for (int t = 0; t <= r; ++t) {
      double acc = 0;
      for (int d = 0; d < D; ++d)
        acc += static_cast<double>(s.qkv[r * 3 * C + h * D + d]) * s.qkv[t * 3 * C + C + h * D + d];
      w[static_cast<std::size_t>(t)] = acc / std::sqrt(static_cast<double>(D));
    }
    const double mx = *std::max_element(w.begin(), w.end());
    double sum = 0;
    for (auto& x : w)
      sum += (x = std::exp(x - mx));
    for (int d = 0; d < D; ++d) {
      double acc = 0;
      for (int t = 0; t <= r; ++t)
        acc += w[static_cast<std::size_t>(t)] * s.qkv[t * 3 * C + 2 * C + h * D + d];
      out[static_cast<std::size_t>(h) * D + d] = acc / sum;
    }
  }
  return out;
}

} // namespace

TEST_CASE("attention matches the reference for every K/V type, block size and head size", "[kernels][attention]") {
  thread_pool pool(2);
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    for (auto type : {kv_type::f32, kv_type::bf16, kv_type::int8})
      for (auto [bs, d] : std::vector<std::pair<int, int>>{{16, 64}, {8, 16}, {20, 32}, {16, 24}}) {
        kv_shape shape{1, 3, d, bs, 64, type};
        auto s = make_seq(shape, 70, static_cast<std::uint64_t>(bs * 100 + d));
        auto out = run_chunks(shape, s, {70}, pool);
        double worst = 0;
        for (int r : {0, 1, 17, 69}) {
          auto ref = reference_row(shape, s, r);
          for (std::size_t i = 0; i < ref.size(); ++i)
            worst = std::max(worst, std::fabs(out[static_cast<std::size_t>(r) * ref.size() + i] - ref[i]));
        }
        INFO(table->name << " " << to_string(type) << " block " << bs << " head_dim " << d);
        CHECK(worst < (type == kv_type::f32 ? 3e-5 : type == kv_type::bf16 ? 3e-2 : 8e-2));
      }
  }
}

TEST_CASE("a row's output does not depend on chunking, decoding or the thread count", "[kernels][attention]") {
  thread_pool one(1), two(2), three(3);
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    for (auto type : {kv_type::f32, kv_type::bf16, kv_type::int8}) {
      kv_shape shape{1, 4, 64, 16, 32, type};
      auto s = make_seq(shape, 45, 11);
      const auto whole = run_chunks(shape, s, {45}, two);
      INFO(table->name << " " << to_string(type));
      CHECK(run_chunks(shape, s, {45}, one) == whole);
      CHECK(run_chunks(shape, s, {45}, three) == whole);
      CHECK(run_chunks(shape, s, {7, 1, 20, 17}, two) == whole);
      CHECK(run_chunks(shape, s, std::vector<int>(45, 1), two) == whole);  // decode only
    }
  }
}

TEST_CASE("sequences of one step do not affect each other", "[kernels][attention]") {
  thread_pool pool(2);
  kv_shape shape{1, 2, 64, 16, 64, kv_type::bf16};
  auto a = make_seq(shape, 30, 1);
  auto b = make_seq(shape, 5, 2);
  for (auto& t : b.table)
    t += 32;  // disjoint blocks
  const std::size_t C = 128;
  const auto a_alone = run_chunks(shape, a, {30}, pool);
  // a's 30 rows and b's 5 rows in one step.
  kv_cache cache(shape);
  std::vector<float> qkv(a.qkv);
  qkv.insert(qkv.end(), b.qkv.begin(), b.qkv.end());
  std::vector<float> out(35 * C);
  paged_attention(cache.layer(0), qkv.data(), 3 * C, out.data(), C,
                  {attn_seq{a.table.data(), 0, 30, 0}, attn_seq{b.table.data(), 0, 5, 30}}, pool);
  CHECK(std::memcmp(out.data(), a_alone.data(), 30 * C * sizeof(float)) == 0);
}

TEST_CASE("attention gives the same bits in every table, for every K/V type, block size and head size", "[kernels][attention]") {
  // The vector kernels' shapes (head sizes of whole vectors, block sizes of whole lanes) and the
  // portable kernel's fallbacks for the others; prefill in chunks of 1 to 5 queries (the AVX-512
  // kernel groups up to four), lengths past several 16-lane steps.
  thread_pool pool(2);
  for (auto type : {kv_type::f32, kv_type::bf16, kv_type::int8})
    for (auto [bs, d] : std::vector<std::pair<int, int>>{{16, 64}, {8, 16}, {32, 48}, {20, 32}, {16, 24}, {4, 12}})
      for (int len : {1, 17, 70}) {
        kv_shape shape{1, 2, d, bs, 64, type};
        auto s = make_seq(shape, len, static_cast<std::uint64_t>(bs * 1000 + d * 10 + len));
        std::vector<int> chunks;
        for (int left = len, n = 1; left > 0; n = n % 5 + 1) {
          chunks.push_back(std::min(n, left));
          left -= chunks.back();
        }
        std::vector<float> first;
        for (const auto* table : lf::test::runnable_tables()) {
          table_scope scope(*table);
          const auto out = run_chunks(shape, s, chunks, pool);
          if (first.empty())
            first = out;
          INFO(table->name << " " << to_string(type) << " block " << bs << " head_dim " << d << " len " << len);
          CHECK(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)) == 0);
        }
      }
}
