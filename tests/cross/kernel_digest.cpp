// kernel_digest: one hash of every kernel's output bits on fixed inputs, per kernel table this
// CPU runs: layer norm, GELU (tanh, and erf), a LoRA row, attention (f32, bf16 and int8 K/V,
// prefill in chunks), products with f32, bf16, int8 and int4 weights (bf16 also with operands
// around its 2^-56 floor), and canonical_math's exp and log. The inputs come from an integer generator (no
// libm, no std::*_distribution), so they are the same bits on every machine. It prints a line per
// table and exits 1 if two tables of this CPU differ; tests/cross/run_aarch64.sh compares the
// aarch64 tables' hash (under qemu) with this machine's, so x86 and aarch64 are held to the same
// bits too.
//
//   kernel_digest      prints "TABLE HASH" per runnable table, then "digest HASH"
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "worker/engine/kernels/attention.hpp"
#include "worker/engine/kernels/canonical_math.hpp"
#include "worker/engine/kernels/elementwise.hpp"
#include "worker/engine/kernels/gemm.hpp"
#include "worker/engine/kernels/kernel_table.hpp"
#include "worker/engine/kernels/kv_cache.hpp"
#include "worker/engine/kernels/packed_matrix.hpp"
#include "worker/engine/kernels/thread_pool.hpp"

using namespace lf::kernels;

namespace {

/// n floats in [-scale, scale), exact multiples of 2^-20 from a 64-bit LCG.
std::vector<float> floats(std::size_t n, std::uint64_t seed, float scale) {
  std::vector<float> v(n);
  std::uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    const auto k = static_cast<std::int32_t>((s >> 40) & 0x1fffff) - (1 << 20);  // [-2^20, 2^20)
    x = static_cast<float>(k) * (scale / static_cast<float>(1 << 20));
  }
  return v;
}

/// FNV-1a over the bytes of `v`, into `h`.
void mix(std::uint64_t& h, const std::vector<float>& v) {
  const auto* b = reinterpret_cast<const unsigned char*>(v.data());
  for (std::size_t i = 0; i < v.size() * sizeof(float); ++i)
    h = (h ^ b[i]) * 0x100000001b3ull;
}

/// y = x W (+ bias) for x [M][K] and W [K][N] packed as `type`.
std::vector<float> product(weight_type type, const std::vector<float>& x, const std::vector<float>& w, int M, int K,
                           int N, const float* bias, thread_pool& pool) {
  auto pm = packed_matrix::pack(type, K, N, {w.data(), static_cast<std::size_t>(N), 1});
  std::vector<float> y(static_cast<std::size_t>(M) * N);
  gemm_workspace ws;
  gemm_io io;
  io.x = x.data();
  io.ldx = static_cast<std::size_t>(K);
  io.y = y.data();
  io.ldy = static_cast<std::size_t>(N);
  io.m = M;
  io.bias = bias;
  gemm(pm, io, ws, pool);
  return y;
}

std::uint64_t digest_of_active_table(thread_pool& pool) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (int n : {17, 768}) {
    const auto x = floats(static_cast<std::size_t>(n) * 3, static_cast<std::uint64_t>(n), 6.0f);
    const auto g = floats(static_cast<std::size_t>(n), 2, 1.0f), b = floats(static_cast<std::size_t>(n), 3, 0.5f);
    std::vector<float> y(x.size());
    layer_norm_rows(x.data(), static_cast<std::size_t>(n), y.data(), static_cast<std::size_t>(n), 3, n, g.data(), b.data(),
                    1e-5f);
    mix(h, y);
    auto z = x;
    gelu_rows(z.data(), static_cast<std::size_t>(n), 3, n, false);
    mix(h, z);
    z = x;
    gelu_rows(z.data(), static_cast<std::size_t>(n), 3, n, true);
    mix(h, z);
    const int rank = 8, out = 40;
    const auto a = floats(static_cast<std::size_t>(n) * rank, 4, 0.1f), bb = floats(static_cast<std::size_t>(rank) * out, 5, 0.1f);
    std::vector<float> lo(static_cast<std::size_t>(3 * out), 0.25f), t(rank);
    lora_rows(x.data(), static_cast<std::size_t>(n), lo.data(), static_cast<std::size_t>(out), 3, n, rank, out, a.data(),
              bb.data(), t.data());
    mix(h, lo);
  }
  for (auto type : {kv_type::f32, kv_type::bf16, kv_type::int8}) {
    kv_shape shape{1, 2, 64, 16, 16, type};
    kv_cache cache(shape);
    const int len = 45;
    const std::size_t C = 2 * 64;
    const auto qkv = floats(static_cast<std::size_t>(len) * 3 * C, 6, 2.0f);
    std::vector<std::int32_t> table{5, 1, 9};
    std::vector<float> o(static_cast<std::size_t>(len) * C);
    int pos = 0;
    for (int n = 1; pos < len; n = n % 5 + 1) {  // chunks of 1, 2, 3, 4, 5, 1, ...
      const int take = std::min(n, len - pos);
      paged_attention(cache.layer(0), qkv.data() + static_cast<std::size_t>(pos) * 3 * C, 3 * C,
                      o.data() + static_cast<std::size_t>(pos) * C, C, {attn_seq{table.data(), pos, take, 0}}, pool);
      pos += take;
    }
    mix(h, o);
  }
  for (auto type : {weight_type::f32, weight_type::bf16, weight_type::int8, weight_type::int4}) {
    const int M = 5, K = 130, N = 71;
    const auto x = floats(static_cast<std::size_t>(M) * K, 7, 1.0f), w = floats(static_cast<std::size_t>(K) * N, 8, 0.05f);
    const auto bias = floats(static_cast<std::size_t>(N), 9, 0.1f);
    mix(h, product(type, x, w, M, K, N, bias.data(), pool));
  }
  {
    // bf16 operands around the 2^-56 floor (below it they are zero; above, every partial sum is 0
    // or normal), so vdpbf16ps's flushing of subnormals never shows.
    const int M = 3, K = 64, N = 17;
    auto x = floats(static_cast<std::size_t>(M) * K, 10, 1.0f), w = floats(static_cast<std::size_t>(K) * N, 11, 1.0f);
    for (std::size_t i = 0; i < x.size(); ++i)
      x[i] *= i % 3 == 0 ? 0x1p-55f : i % 3 == 1 ? 0x1p-57f : 1.0f;
    for (std::size_t i = 0; i < w.size(); ++i)
      w[i] *= i % 2 == 0 ? 0x1p-55f : 0x1p-58f;
    mix(h, product(weight_type::bf16, x, w, M, K, N, nullptr, pool));
  }
  {
    // Each input is one rounding of an exact integer (a quotient or a product), so a compiler that
    // fuses a * b + c (aarch64 GCC does by default, here in test code) cannot change its bits.
    std::vector<double> v;
    for (std::int64_t i = 0; i < 4096; ++i) {
      const double z = -static_cast<double>(i * 745'000 + i % 7) / 4'096'000.0;  // [-745, 0]
      v.push_back(exp_nonpositive_canonical(z));
      v.push_back(log_canonical(static_cast<double>(100 + 37 * i) / 100.0));
      v.push_back(log_canonical(static_cast<double>(i + 1) * 1e-300));
    }
    const auto* b = reinterpret_cast<const unsigned char*>(v.data());
    for (std::size_t i = 0; i < v.size() * sizeof(double); ++i)
      h = (h ^ b[i]) * 0x100000001b3ull;
  }
  return h;
}

} // namespace

int main() {
  thread_pool pool(2);
  const auto tables = runnable_tables(host_features());
  std::uint64_t first = 0;
  bool same = true;
  for (std::size_t i = 0; i < tables.size(); ++i) {
    set_active_table(*tables[i]);
    const auto h = digest_of_active_table(pool);
    std::printf("%s %016llx\n", std::string(tables[i]->name).c_str(), static_cast<unsigned long long>(h));
    if (i == 0)
      first = h;
    same = same && h == first;
  }
  std::printf("digest %016llx\n", static_cast<unsigned long long>(first));
  return same ? 0 : 1;
}
