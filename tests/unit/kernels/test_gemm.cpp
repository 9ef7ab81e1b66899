// The matrix kernels against a double-precision reference on odd shapes (M 1..300, K and N not
// multiples of the vector width), in every kernel table this machine runs; and the invariances
// the engine relies on: a row's result does not depend on the other rows, on M, or on the threads.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "tests/unit/kernels/kernel_reference.hpp"
#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/kernels/gemm.hpp"

using namespace lf::kernels;
using lf::test::table_scope;

namespace {

struct problem {
  int M, K, N;
  std::vector<float> x, w, bias;
  problem(int m, int k, int n, std::uint64_t seed)
    : M(m), K(k), N(n), x(lf::test::random_floats(static_cast<std::size_t>(m) * k, seed)),
      w(lf::test::random_floats(static_cast<std::size_t>(k) * n, seed + 1, 0.05f)),
      bias(lf::test::random_floats(static_cast<std::size_t>(n), seed + 2, 0.1f)) {}
};

std::vector<float> run(const packed_matrix& pm, const problem& p, thread_pool& pool, int rows = -1,
                       int first_row = 0, bool accumulate = false, float start = 0.0f) {
  const int M = rows < 0 ? p.M : rows;
  std::vector<float> y(static_cast<std::size_t>(M) * (p.N + 3), start);  // ldy > N
  gemm_workspace ws;
  gemm_io io;
  io.x = p.x.data() + static_cast<std::size_t>(first_row) * p.K;
  io.ldx = static_cast<std::size_t>(p.K);
  io.y = y.data();
  io.ldy = static_cast<std::size_t>(p.N + 3);
  io.m = M;
  io.bias = p.bias.data();
  io.accumulate = accumulate;
  gemm(pm, io, ws, pool);
  return y;
}

/// Largest |y - ref| relative to the row's largest |ref|.
double worst_error(const std::vector<float>& y, const std::vector<double>& ref, const problem& p) {
  double worst = 0;
  for (int m = 0; m < p.M; ++m) {
    double scale = 1e-6;
    for (int n = 0; n < p.N; ++n)
      scale = std::max(scale, std::fabs(ref[static_cast<std::size_t>(m) * p.N + n]));
    for (int n = 0; n < p.N; ++n)
      worst = std::max(worst, std::fabs(y[static_cast<std::size_t>(m) * (p.N + 3) + n]
                                        - ref[static_cast<std::size_t>(m) * p.N + n]) / scale);
  }
  return worst;
}

packed_matrix pack(weight_type t, const problem& p) {
  return packed_matrix::pack(t, p.K, p.N, {p.w.data(), static_cast<std::size_t>(p.N), 1});
}

} // namespace

TEST_CASE("packing keeps every value (f32 exactly, bf16 and int8 within their step)", "[kernels][gemm]") {
  problem p(1, 37, 70, 3);
  for (auto t : {weight_type::f32, weight_type::bf16, weight_type::int8}) {
    auto pm = pack(t, p);
    CHECK(pm.k_padded() % group_of(t) == 0);
    CHECK(pm.n_padded() == 128);
    std::vector<float> col(static_cast<std::size_t>(p.K));
    for (int n : {0, 15, 16, 63, 64, 69}) {
      pm.column(n, col.data());
      float amax = 0;
      for (int k = 0; k < p.K; ++k)
        amax = std::max(amax, std::fabs(p.w[static_cast<std::size_t>(k) * p.N + n]));
      for (int k = 0; k < p.K; ++k) {
        const float v = p.w[static_cast<std::size_t>(k) * p.N + n];
        const float tol = t == weight_type::f32 ? 0.0f : t == weight_type::bf16 ? std::fabs(v) / 256 : amax / 127 / 2 * 1.0001f;
        INFO(to_string(t) << " k " << k << " n " << n);
        CHECK(std::fabs(col[static_cast<std::size_t>(k)] - v) <= tol);
      }
    }
  }
}

TEST_CASE("int4 packing: a scale per block, values within half a step or clipped to 7 steps, exact block sums", "[kernels][gemm][int4]") {
  // K 150: two whole blocks of 64 and a padded one; N 70: a padded second panel.
  problem p(1, 150, 70, 5);
  auto pm = pack(weight_type::int4, p);
  CHECK(pm.k_padded() == 192);
  CHECK(pm.n_padded() == 128);
  CHECK(pm.blocks() == 3);
  CHECK(pm.panel_bytes() == 192 / 8 * 256);
  CHECK(pm.bytes() == 192u * 128 / 2 + 3u * 128 * 6);
  std::vector<float> col(static_cast<std::size_t>(p.K));
  int clipped_blocks = 0;
  for (int n : {0, 1, 15, 16, 63, 64, 69}) {
    pm.column(n, col.data());
    for (int b = 0; b < 3; ++b) {
      const int k0 = b * int4_block, k1 = std::min(p.K, k0 + int4_block);
      float amax = 0;
      double err = 0, err_unclipped = 0;
      for (int k = k0; k < k1; ++k)
        amax = std::max(amax, std::fabs(p.w[static_cast<std::size_t>(k) * p.N + n]));
      const std::size_t meta = (static_cast<std::size_t>(n / panel_cols) * 3 + static_cast<std::size_t>(b)) * panel_cols
                               + static_cast<std::size_t>(n % panel_cols);
      const float scale = pm.block_scales()[meta];
      // The scale is amax / 7 or up to 10/32 smaller (the one of least squared error).
      CHECK(scale <= amax / 7.0f);
      CHECK(scale >= amax / 7.0f * (22.0f / 32.0f));
      clipped_blocks += scale < amax / 7.0f;
      int sum = 0;
      for (int k = k0; k < k1; ++k) {
        const float v = p.w[static_cast<std::size_t>(k) * p.N + n];
        const float got = col[static_cast<std::size_t>(k)];
        INFO("k " << k << " n " << n);
        // Within half a step, or clipped to +-7 steps.
        CHECK((std::fabs(got - v) <= scale / 2 * 1.0001f || (std::fabs(got) == 7 * scale && std::fabs(v) > 7 * scale)));
        CHECK(pm.at(k, n) == got);
        const float q = std::nearbyint(got / scale);
        CHECK(got == q * scale);
        CHECK(std::fabs(q) <= 7.0f);
        sum += static_cast<int>(q);
        const float s0 = amax / 7.0f;
        err += (static_cast<double>(v) - got) * (static_cast<double>(v) - got);
        const double e0 = static_cast<double>(v) - std::nearbyint(v / s0) * s0;
        err_unclipped += e0 * e0;
      }
      CHECK(err <= err_unclipped * (1 + 1e-6));  // never worse than amax / 7
      for (int k = k1; k < k0 + int4_block; ++k)
        CHECK(pm.at(k, n) == 0.0f);  // padding rows are q = 0
      CHECK(pm.block_sums()[meta] == sum);
    }
  }
  CHECK(clipped_blocks > 0);  // the 8-sigma outliers make clipping pay somewhere
  CHECK(pm.at(5, 100) == 0.0f);  // a padding column
  // The layout: the byte of column c at 4 c + j of group row r holds k = 8 r + j (low nibble) and
  // 8 r + 4 + j (high), as the nibble q + 8.
  const auto* bytes = reinterpret_cast<const std::uint8_t*>(pm.panel(1));
  const int c = 3, r = 2, j = 1, n = 64 + c;
  const float s = pm.block_scales()[3 * panel_cols + c];  // panel 1, block 0
  const std::uint8_t byte = bytes[256 * r + 4 * c + j];
  CHECK(static_cast<float>((byte & 0x0f) - 8) * s == pm.at(8 * r + j, n));
  CHECK(static_cast<float>((byte >> 4) - 8) * s == pm.at(8 * r + 4 + j, n));
}

TEST_CASE("activation rows quantize to u8 with 0 exact and every value within half a step", "[kernels][gemm]") {
  auto x = lf::test::random_floats(203, 9);
  std::vector<std::uint8_t> q(208);
  float scale;
  std::int32_t zero;
  quantize_row_u8(x.data(), 203, 208, q.data(), scale, zero);
  for (int i = 0; i < 203; ++i)
    CHECK(std::fabs(scale * (q[static_cast<std::size_t>(i)] - zero) - x[static_cast<std::size_t>(i)]) <= scale / 2 * 1.0001f);
  for (int i = 203; i < 208; ++i)
    CHECK(q[static_cast<std::size_t>(i)] == zero);
  const float zeros[5] = {};
  quantize_row_u8(zeros, 5, 8, q.data(), scale, zero);
  CHECK(scale == 1.0f);
  CHECK(zero == 0);
  const float positive[3] = {1, 2, 3};  // the range still includes 0
  quantize_row_u8(positive, 3, 4, q.data(), scale, zero);
  CHECK(zero == 0);
  CHECK(q[2] == 255);
}

TEST_CASE("products match the reference on odd shapes in every kernel table", "[kernels][gemm]") {
  thread_pool pool(2);
  const std::vector<std::array<int, 3>> shapes = {{1, 1, 1}, {1, 768, 2304}, {3, 37, 70}, {7, 129, 65},
                                                  {13, 64, 64}, {61, 200, 130}, {300, 95, 33}};
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    for (auto [M, K, N] : shapes) {
      problem p(M, K, N, static_cast<std::uint64_t>(M * 1000 + K));
      const auto ref = lf::test::reference_product(p.x, p.w, p.bias, M, K, N);
      for (auto t : {weight_type::f32, weight_type::bf16, weight_type::int8, weight_type::int4}) {
        INFO(table->name << " " << to_string(t) << " M " << M << " K " << K << " N " << N);
        const auto pm = pack(t, p);
        const auto y = run(pm, p, pool);
        if (t != weight_type::int4) {
          // f32: rounding only; bf16: 8-bit mantissas; int8: weights and activations at 8 bits
          // (the inputs have 8-sigma outliers, which widen a row's quantization step).
          CHECK(worst_error(y, ref, p) < (t == weight_type::f32 ? 1e-5 : t == weight_type::bf16 ? 2e-2 : 8e-2));
          continue;
        }
        // int4: against the dequantized weights only the activations' 8 bits are left; against
        // the float weights each output is within its own bound of the quantization errors,
        // sum |x| |w - wq| + sum |wq| * (half the row's u8 step) (an outlier in a block of 64
        // leaves its neighbours a step of 8 sigma / 7, so no one relative bound fits).
        std::vector<float> wq(static_cast<std::size_t>(K) * N);
        for (int k = 0; k < K; ++k)
          for (int n = 0; n < N; ++n)
            wq[static_cast<std::size_t>(k) * N + n] = pm.at(k, n);
        CHECK(worst_error(y, lf::test::reference_product(p.x, wq, p.bias, M, K, N), p) < 8e-2);
        int outside = 0;
        for (int m = 0; m < M; ++m) {
          const float* xm = p.x.data() + static_cast<std::size_t>(m) * K;
          float lo = 0, hi = 0;
          for (int k = 0; k < K; ++k)
            lo = std::min(lo, xm[k]), hi = std::max(hi, xm[k]);
          const double half_step = (static_cast<double>(hi) - lo) / 255 / 2;
          for (int n = 0; n < N; ++n) {
            double bound = 0;
            for (int k = 0; k < K; ++k) {
              const std::size_t i = static_cast<std::size_t>(k) * N + n;
              bound += std::fabs(xm[k]) * std::fabs(p.w[i] - wq[i]) + std::fabs(wq[i]) * half_step;
            }
            const double r = ref[static_cast<std::size_t>(m) * N + n];
            outside += std::fabs(y[static_cast<std::size_t>(m) * (N + 3) + n] - r) > bound * 1.01 + 1e-5 * (1 + std::fabs(r));
          }
        }
        CHECK(outside == 0);
      }
    }
  }
}

TEST_CASE("accumulate adds to y, a row's result does not depend on M, its neighbours or threads", "[kernels][gemm]") {
  problem p(37, 150, 200, 77);
  thread_pool one(1), two(2), three(3);
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    for (auto t : {weight_type::f32, weight_type::bf16, weight_type::int8, weight_type::int4}) {
      INFO(table->name << " " << to_string(t));
      auto pm = pack(t, p);
      const auto all = run(pm, p, two);
      const std::size_t ldy = static_cast<std::size_t>(p.N + 3);
      CHECK(run(pm, p, one) == all);
      CHECK(run(pm, p, three) == all);
      for (int first : {0, 5, 36}) {
        for (int rows : {1, 2, 7}) {
          if (first + rows > p.M)
            continue;
          const auto part = run(pm, p, two, rows, first);
          for (int r = 0; r < rows; ++r)
            CHECK(std::memcmp(part.data() + r * ldy, all.data() + (first + r) * ldy, sizeof(float) * p.N) == 0);
        }
      }
      const auto acc = run(pm, p, two, -1, 0, true, 1.5f);
      for (std::size_t i = 0; i < all.size(); i += 7)
        if (i % ldy < static_cast<std::size_t>(p.N))
          CHECK(acc[i] == 1.5f + all[i]);
    }
  }
}

TEST_CASE("bf16 products round activations exactly as f32_to_bf16_operand in every kernel table", "[kernels][gemm]") {
  // K = 1 and W = 1: y = bf16(x) * 1, exact; x covers ties, both signs, 0, huge values, the
  // smallest normal and subnormals (below the 2^-56 floor: a signed zero), and the floor itself.
  std::vector<float> x;
  for (std::uint32_t hi : {0x3f80u, 0x3f81u, 0xbf80u, 0x0080u, 0x7f7fu, 0x0000u, 0x8000u, 0x0001u, 0x8010u,
                           0x2380u, 0xa380u, 0x237fu})
    for (std::uint32_t lo : {0x0000u, 0x7fffu, 0x8000u, 0x8001u, 0xffffu}) {
      const std::uint32_t u = hi << 16 | lo;
      float f;
      std::memcpy(&f, &u, 4);
      x.push_back(f);
    }
  const int M = static_cast<int>(x.size());
  std::vector<float> one{1.0f};
  auto pm = packed_matrix::pack(weight_type::bf16, 1, 1, {one.data(), 1, 1});
  thread_pool pool(2);
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    std::vector<float> y(x.size());
    gemm_workspace ws;
    gemm(pm, {x.data(), 1, y.data(), 1, M, nullptr, false}, ws, pool);
    for (std::size_t i = 0; i < x.size(); ++i) {
      INFO(table->name << " x " << x[i]);
      CHECK(y[i] == lf::engine::bf16_to_f32(lf::engine::f32_to_bf16_operand(x[i])));  // -0 sums to +0
      if (std::abs(x[i]) < 0x1p-56f)
        CHECK(y[i] == 0.0f);
    }
  }
  // Wider rows go through the vector loop and its masked tail.
  problem p(5, 37, 3, 11);
  std::vector<float> w(static_cast<std::size_t>(p.K) * p.N, 0.0f);
  w[0] = 1.0f;  // column 0 = x[:, 0]; column 1 = x[:, 36] (the tail)
  w[static_cast<std::size_t>(36) * p.N + 1] = 1.0f;
  auto pw = packed_matrix::pack(weight_type::bf16, p.K, p.N, {w.data(), static_cast<std::size_t>(p.N), 1});
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    std::vector<float> y(static_cast<std::size_t>(p.M) * p.N);
    gemm_workspace ws;
    gemm(pw, {p.x.data(), static_cast<std::size_t>(p.K), y.data(), static_cast<std::size_t>(p.N), p.M, nullptr, false}, ws, pool);
    for (int m = 0; m < p.M; ++m) {
      INFO(table->name << " row " << m);
      CHECK(y[static_cast<std::size_t>(m) * p.N] == lf::engine::bf16_to_f32(lf::engine::f32_to_bf16(p.x[static_cast<std::size_t>(m) * p.K])));
      CHECK(y[static_cast<std::size_t>(m) * p.N + 1] == lf::engine::bf16_to_f32(lf::engine::f32_to_bf16(p.x[static_cast<std::size_t>(m) * p.K + 36])));
    }
  }
}

TEST_CASE("bf16 products near the operand floor: no subnormal arises, every table sums as a scalar loop", "[kernels][gemm]") {
  // Operands from 2^-60 to 1 (those under 2^-56 are zero), signs mixed so partial sums cancel. A
  // scalar loop over the rounded operands, the odd element of each pair first, in f32: with the
  // floor no product or partial sum is subnormal, so vdpbf16ps (which flushes them) agrees.
  const int M = 4, K = 96, N = 21;
  std::vector<float> x(static_cast<std::size_t>(M) * K), w(static_cast<std::size_t>(K) * N);
  const float scales[] = {0x1p-70f, 0x1p-60f, 0x1p-56f, 0x1p-50f, 0x1p-40f, 1.0f};
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = scales[i % 6] * (1.0f + static_cast<float>(i % 11) / 16.0f) * (i % 4 < 2 ? 1.0f : -1.0f);
  for (std::size_t i = 0; i < w.size(); ++i)
    w[i] = scales[(i * 5) % 6] * (1.0f + static_cast<float>(i % 7) / 8.0f) * (i % 3 == 0 ? -1.0f : 1.0f);
  // Where vdpbf16ps would differ without the floor: row M-1 times column N-1 has only products
  // of 2^-64 and 2^-64 (each subnormal, flushed by it); row M-2 holds subnormals, column N-2 2^100.
  for (int k = 0; k < K; ++k) {
    x[static_cast<std::size_t>(M - 1) * K + k] = 0x1p-64f * (1.0f + static_cast<float>(k % 5) / 8.0f);
    w[static_cast<std::size_t>(k) * N + N - 1] = 0x1p-64f * (k % 2 ? 1.0f : -1.5f);
    x[static_cast<std::size_t>(M - 2) * K + k] = k % 3 ? 1e-40f * static_cast<float>(k) : x[static_cast<std::size_t>(M - 2) * K + k];
    w[static_cast<std::size_t>(k) * N + N - 2] = 0x1p100f;
  }
  auto pm = packed_matrix::pack(weight_type::bf16, K, N, {w.data(), static_cast<std::size_t>(N), 1});
  std::vector<float> want(static_cast<std::size_t>(M) * N);
  bool subnormal = false;
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float acc = 0.0f;
      auto op = [](float v) { return lf::engine::bf16_to_f32(lf::engine::f32_to_bf16_operand(v)); };
      for (int k = 0; k < K; k += 2) {
        const std::size_t xo = static_cast<std::size_t>(m) * K + k, wo = static_cast<std::size_t>(k) * N + n;
        acc += op(x[xo + 1]) * op(w[wo + N]);
        subnormal |= std::fpclassify(acc) == FP_SUBNORMAL;
        acc += op(x[xo]) * op(w[wo]);
        subnormal |= std::fpclassify(acc) == FP_SUBNORMAL;
      }
      want[static_cast<std::size_t>(m) * N + n] = acc;
    }
  CHECK_FALSE(subnormal);
  thread_pool pool(2);
  for (const auto* table : lf::test::runnable_tables()) {
    table_scope scope(*table);
    std::vector<float> y(want.size());
    gemm_workspace ws;
    gemm(pm, {x.data(), static_cast<std::size_t>(K), y.data(), static_cast<std::size_t>(N), M, nullptr, false}, ws, pool);
    INFO(table->name);
    CHECK(std::memcmp(y.data(), want.data(), y.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("every weight type's results are the same bit for bit in every table, on every tile shape", "[kernels][gemm]") {
  // M 1 takes whole panels, 2..13 every row-tile remainder; N 1..200 every column tail. Each output
  // sums over k in order: f32 with one fused multiply-add a step (the portable kernel calls
  // std::fma), bf16 the odd element of a pair first (a bf16 product is exact in f32, so a multiply
  // and an add give the same), int8 exact integers, int4 exact integers per block and then one
  // fused multiply-add per block in k order.
  thread_pool pool(2);
  for (auto type : {weight_type::int8, weight_type::int4, weight_type::f32, weight_type::bf16})
    for (auto [M, K, N] : std::vector<std::array<int, 3>>{{1, 768, 200}, {2, 64, 9}, {3, 130, 71}, {5, 4, 1},
                                                          {6, 97, 64}, {7, 512, 129}, {13, 33, 8}, {4, 3072, 70}}) {
      problem p(M, K, N, static_cast<std::uint64_t>(M * 7 + N));
      auto pm = pack(type, p);
      std::vector<float> first;
      for (const auto* table : lf::test::runnable_tables()) {
        table_scope scope(*table);
        auto y = run(pm, p, pool);
        if (first.empty())
          first = y;
        INFO(table->name << " " << to_string(type) << " M " << M << " K " << K << " N " << N);
        CHECK(std::memcmp(y.data(), first.data(), y.size() * sizeof(float)) == 0);
      }
    }
}

TEST_CASE("activation rows quantize to the same bytes in every table", "[kernels][gemm]") {
  // The u8 bytes, scales and zero points are what makes int8 bit-identical across tables.
  for (int k : {1, 7, 8, 15, 16, 17, 768, 1001}) {
    const auto x = lf::test::random_floats(static_cast<std::size_t>(k) * 3, static_cast<std::uint64_t>(k));
    const int kp = (k + 3) / 4 * 4;
    std::vector<std::uint8_t> want(static_cast<std::size_t>(kp) * 3);
    float want_scale[3];
    std::int32_t want_zero[3];
    for (int r = 0; r < 3; ++r)
      quantize_row_u8(x.data() + static_cast<std::size_t>(r) * k, k, kp, want.data() + static_cast<std::size_t>(r) * kp,
                      want_scale[r], want_zero[r]);
    for (const auto* table : lf::test::runnable_tables()) {
      std::vector<std::uint8_t> got(want.size());
      float scale[3];
      std::int32_t zero[3];
      table->rows_to_u8(x.data(), static_cast<std::size_t>(k), 3, k, kp, got.data(), scale, zero);
      INFO(table->name << " k " << k);
      CHECK(got == want);
      for (int r = 0; r < 3; ++r) {
        CHECK(scale[r] == want_scale[r]);
        CHECK(zero[r] == want_zero[r]);
      }
    }
  }
}

TEST_CASE("a worker on a slow kernel path is told why, and the best table says nothing", "[kernels]") {
  using lf::kernels::cpu_cap;
  using lf::kernels::cpu_features;
  using lf::kernels::find_table;
  using lf::kernels::slow_path_note;
  const cpu_features avx512_all{cpu_cap::avx2, cpu_cap::fma, cpu_cap::avx512f, cpu_cap::avx512bw,
                                cpu_cap::avx512vl, cpu_cap::avx512_vnni, cpu_cap::avx512_bf16};
  const cpu_features zen3{cpu_cap::avx2, cpu_cap::fma, cpu_cap::f16c};
  const cpu_features none{};
  const auto& portable = *find_table("portable");
  CHECK(slow_path_note(none, portable, "int8"));  // nothing better exists, but say it is slow
  if (const auto* avx2 = find_table("avx2")) {
    CHECK(&lf::kernels::best_table(zen3) == avx2);
    CHECK_FALSE(slow_path_note(zen3, *avx2, "int8"));
    CHECK_FALSE(slow_path_note(zen3, *avx2, "f32"));
    CHECK(slow_path_note(zen3, *avx2, "bf16"));  // widened: int8 is faster there
    auto forced = slow_path_note(zen3, portable, "int8");
    REQUIRE(forced);
    CHECK(forced->find("forced") != std::string::npos);
    const auto& best = lf::kernels::best_table(avx512_all);
    CHECK(best.name == "avx512_bf16");
    for (const char* d : {"f32", "bf16", "int8"})
      CHECK_FALSE(slow_path_note(avx512_all, best, d));
    CHECK(slow_path_note(avx512_all, *avx2, "int8"));
  }
}
