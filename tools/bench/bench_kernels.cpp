// bench_kernels: the engine's matrix kernels against maintained libraries, per GPT-2 shape and
// batch size M: ours in f32, bf16, int8 (W8A8) and int4 (W4A8) on the worker's thread pool,
// OpenBLAS's sgemm and, where the build found it, oneDNN's matmul in f32, bf16 and u8 x s8 (the
// libraries on their own thread pools of the same size). Prints GFLOP/s per product and which one wins.
//
//   bench_kernels [--threads N] [--m 1,8,32,128,512] [--embd 768] [--vocab 50257] [--quick]
//                 [--cpu-clock]
//
// --cpu-clock times by the process's CPU time instead of the wall clock: on a shared machine it
// leaves out the time the process waits for a core (with --threads 1; with more, every thread's
// time adds up, spinning included).
//
// Every product is y[M, N] = x[M, K] W[K, N] with weights packed (or reordered) once before the
// clock starts, as a loaded model has them; ours includes converting the activations (bf16
// rounding, per-row u8 quantization) in its time, oneDNN is given them already converted, and its
// int8 uses one activation scale per tensor where the engine needs one per row. Medians of 5
// timed batches of repeated products.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <functional>
#include <iomanip>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "tools/common/args.hpp"
#include "tools/common/bench_stats.hpp"
#include "worker/engine/kernels/common/half.hpp"
#include "worker/engine/kernels/kernel_table.hpp"
#include "worker/engine/kernels/gemm.hpp"

#if LF_HAVE_OPENBLAS
extern "C" {
// The CBLAS entry point and OpenBLAS's thread setting (declared here: no BLAS header needed).
void cblas_sgemm(int order, int trans_a, int trans_b, int m, int n, int k, float alpha, const float* a,
                 int lda, const float* b, int ldb, float beta, float* c, int ldc);
void openblas_set_num_threads(int threads);
}
#endif
#if LF_HAVE_DNNL
#include <dnnl.hpp>
#include <omp.h>
#endif

namespace {

namespace kernels = lf::kernels;
using clock_type = std::chrono::steady_clock;

/// --cpu-clock: time by the process's CPU time.
bool cpu_clock = false;

/// Seconds now, on the wall clock or (cpu_clock) the process's CPU time.
double now_s() {
  if (cpu_clock) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
  }
  return std::chrono::duration<double>(clock_type::now().time_since_epoch()).count();
}

/// Seconds per call of `fn`: median of 5 batches, each repeating it for at least `batch_s`.
double time_call(const std::function<void()>& fn, double batch_s) {
  fn();
  fn();
  std::vector<double> per_call;
  for (int b = 0; b < 5; ++b) {
    int n = 0;
    const double t0 = now_s();
    double el = 0;
    do {
      fn();
      ++n;
      el = now_s() - t0;
    } while (el < batch_s);
    per_call.push_back(el / n);
  }
  return lf::tools::percentile(per_call, 50);
}

/// Largest |a - b| relative to max |b|.
double rel_error(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    scale = std::max(scale, static_cast<double>(std::fabs(b[i])));
  }
  return diff / scale;
}

std::vector<int> parse_list(const std::string& s) {
  std::vector<int> out;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ','))
    out.push_back(std::stoi(item));
  for (int v : out)
    if (v < 1 || v > 8192)
      throw std::invalid_argument("--m values must be in [1, 8192]");
  return out;
}

struct shape {
  std::string name;
  int k, n;
};

#if LF_HAVE_DNNL
/// A oneDNN matmul y = x W with W reordered once into the layout the primitive chose.
struct dnnl_product {
  dnnl::memory src, weights, dst;
  dnnl::matmul prim;

  dnnl_product(dnnl::engine& eng, dnnl::stream& s, int m, int k, int n, dnnl::memory::data_type src_t,
               dnnl::memory::data_type w_t, const void* x, const void* w, const dnnl::primitive_attr& attr) {
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory::desc a_md({m, k}, src_t, tag::ab), b_any({k, n}, w_t, tag::any), c_md({m, n}, dt::f32, tag::ab);
    dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_any, c_md), attr, eng);
    src = dnnl::memory(a_md, eng, const_cast<void*>(x));
    dnnl::memory plain({{k, n}, w_t, tag::ab}, eng, const_cast<void*>(w));
    weights = dnnl::memory(pd.weights_desc(), eng);
    dnnl::reorder(plain, weights).execute(s, plain, weights);
    dst = dnnl::memory(c_md, eng);
    prim = dnnl::matmul(pd);
    s.wait();
  }
  void run(dnnl::stream& s) {
    prim.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, weights}, {DNNL_ARG_DST, dst}});
    s.wait();
  }
  std::vector<float> result() const {
    const auto* p = static_cast<const float*>(dst.get_data_handle());
    return {p, p + dst.get_desc().get_size() / sizeof(float)};
  }
};
#endif

} // namespace

int main(int argc, char** argv) try {
  if (auto refusal = lf::kernels::lf_isa_refusal()) {
    std::cerr << "bench_kernels: " << *refusal << "\n";
    return 2;
  }
  std::cout << std::unitbuf;
  lf::tools::args a(argc, argv, 1, {"quick", "cpu-clock"});
  const int threads = static_cast<int>(a.integer_in("threads", std::max(1u, std::thread::hardware_concurrency()), 1, 256));
  const auto ms = parse_list(a.str("m", "1,8,32,128,512"));
  const int embd = static_cast<int>(a.integer_in("embd", 768, 16, 16384));
  const int vocab = static_cast<int>(a.integer_in("vocab", 50257, 16, 1 << 20));
  const double batch_s = a.has("quick") ? 0.01 : 0.04;
  cpu_clock = a.has("cpu-clock");
  a.finish();

  std::cout << "cpu: " << kernels::describe(kernels::host_features()) << "; our kernels "
            << kernels::active_table().name << "; " << threads << " thread(s) for every library\n";
#if LF_HAVE_OPENBLAS
  openblas_set_num_threads(threads);
#endif
#if LF_HAVE_DNNL
  omp_set_num_threads(threads);
  const auto* v = dnnl_version();
  std::cout << "oneDNN " << v->major << "." << v->minor << "." << v->patch << " (cpu runtime: OpenMP)\n";
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
#else
  std::cout << "oneDNN: not found at build time (install libdnnl-dev and rebuild to compare it)\n";
#endif
  const std::vector<shape> shapes = {{"attn.c_attn", embd, 3 * embd}, {"attn.c_proj", embd, embd},
                                     {"mlp.c_fc", embd, 4 * embd},     {"mlp.c_proj", 4 * embd, embd},
                                     {"lm_head", embd, vocab}};
  kernels::thread_pool pool(threads);
  kernels::gemm_workspace ws;
  std::mt19937 rng(7);
  std::normal_distribution<float> wdist(0.0f, 0.02f), xdist(0.0f, 1.0f);

  std::cout << std::fixed << std::setprecision(1);
  std::cout << "\nGFLOP/s (2 M K N per product / median time); best in the last column\n";
  std::vector<std::string> names = {"ours f32", "ours bf16", "ours int8", "ours int4"};
#if LF_HAVE_OPENBLAS
  names.push_back("openblas f32");
#endif
#if LF_HAVE_DNNL
  names.insert(names.end(), {"onednn f32", "onednn bf16", "onednn u8s8"});
#endif
  std::cout << std::left << std::setw(12) << "shape" << std::right << std::setw(6) << "M";
  for (auto& n : names)
    std::cout << std::setw(14) << n;
  std::cout << "  best\n";

  for (const auto& sh : shapes) {
    const int K = sh.k, N = sh.n;
    std::vector<float> w(static_cast<std::size_t>(K) * N);
    for (auto& x : w)
      x = wdist(rng);
    const kernels::float_source src{w.data(), static_cast<std::size_t>(N), 1};
    const auto wf = kernels::packed_matrix::pack(kernels::weight_type::f32, K, N, src);
    const auto wb = kernels::packed_matrix::pack(kernels::weight_type::bf16, K, N, src);
    const auto wq = kernels::packed_matrix::pack(kernels::weight_type::int8, K, N, src);
    const auto wq4 = kernels::packed_matrix::pack(kernels::weight_type::int4, K, N, src);
#if LF_HAVE_DNNL
    std::vector<std::uint16_t> w_bf16(w.size());
    std::vector<std::int8_t> w_s8(w.size());
    std::vector<float> col_scale(static_cast<std::size_t>(N));
    for (std::size_t i = 0; i < w.size(); ++i)
      w_bf16[i] = lf::engine::f32_to_bf16(w[i]);
    for (int n = 0; n < N; ++n) {
      float mx = 0;
      for (int k = 0; k < K; ++k)
        mx = std::max(mx, std::fabs(w[static_cast<std::size_t>(k) * N + n]));
      col_scale[static_cast<std::size_t>(n)] = mx > 0 ? mx / 127.0f : 1.0f;
      for (int k = 0; k < K; ++k) {
        const auto i = static_cast<std::size_t>(k) * N + n;
        w_s8[i] = static_cast<std::int8_t>(std::lround(w[i] / col_scale[static_cast<std::size_t>(n)]));
      }
    }
#endif
    for (int M : ms) {
      std::vector<float> x(static_cast<std::size_t>(M) * K), y(static_cast<std::size_t>(M) * N);
      for (auto& e : x)
        e = xdist(rng);
      std::vector<double> gflops;
      std::vector<float> ref;
      std::vector<double> errs;
      const double flop = 2.0 * M * K * N;
      for (const auto* pm : {&wf, &wb, &wq, &wq4}) {
        const kernels::gemm_io io{x.data(), static_cast<std::size_t>(K), y.data(), static_cast<std::size_t>(N), M, nullptr, false};
        gflops.push_back(flop / time_call([&] { kernels::gemm(*pm, io, ws, pool); }, batch_s) / 1e9);
        if (ref.empty())
          ref = y;
        errs.push_back(rel_error(y, ref));
      }
#if LF_HAVE_OPENBLAS
      gflops.push_back(flop / time_call([&] {
        cblas_sgemm(101, 111, 111, M, N, K, 1.0f, x.data(), K, w.data(), N, 0.0f, y.data(), N);  // row-major, no transposes
      }, batch_s) / 1e9);
      errs.push_back(rel_error(y, ref));
#endif
#if LF_HAVE_DNNL
      {
        using dt = dnnl::memory::data_type;
        std::vector<std::uint16_t> x_bf16(x.size());
        for (std::size_t i = 0; i < x.size(); ++i)
          x_bf16[i] = lf::engine::f32_to_bf16(x[i]);
        float lo = 0, hi = 0;
        for (float e : x)
          lo = std::min(lo, e), hi = std::max(hi, e);
        const float a_scale = (hi - lo) / 255.0f;
        const auto zp = static_cast<std::int32_t>(std::lround(-lo / a_scale));
        std::vector<std::uint8_t> x_u8(x.size());
        for (std::size_t i = 0; i < x.size(); ++i)
          x_u8[i] = static_cast<std::uint8_t>(std::clamp<long>(std::lround(x[i] / a_scale) + zp, 0, 255));
        std::vector<float> out_scale(col_scale);
        for (auto& s : out_scale)
          s *= a_scale;
        dnnl::primitive_attr plain, q;
        q.set_output_scales(1 << 1, out_scale);
        q.set_zero_points(DNNL_ARG_SRC, 0, {zp});
        // A type oneDNN has no kernel for on this CPU (bf16 without AVX-512) shows as 0.
        auto measure = [&](dt src_t, dt wei_t, const void* src, const void* wei, const dnnl::primitive_attr& attr) {
          try {
            dnnl_product p(eng, strm, M, K, N, src_t, wei_t, src, wei, attr);
            gflops.push_back(flop / time_call([&] { p.run(strm); }, batch_s) / 1e9);
            errs.push_back(rel_error(p.result(), ref));
          } catch (const dnnl::error&) {
            gflops.push_back(0.0);
            errs.push_back(0.0);
          }
        };
        measure(dt::f32, dt::f32, x.data(), w.data(), plain);
        measure(dt::bf16, dt::bf16, x_bf16.data(), w_bf16.data(), plain);
        measure(dt::u8, dt::s8, x_u8.data(), w_s8.data(), q);
      }
#endif
      std::size_t best = 0;
      for (std::size_t i = 1; i < gflops.size(); ++i)
        if (gflops[i] > gflops[best])
          best = i;
      std::cout << std::left << std::setw(12) << sh.name << std::right << std::setw(6) << M;
      for (double g : gflops)
        std::cout << std::setw(14) << g;
      std::cout << "  " << names[best] << "\n";
      for (std::size_t i = 0; i < errs.size(); ++i)
        // A misused library shows here (bf16 / int8 differ from f32 by ~1e-2; int4, 15 levels a
        // block of 64, by ~0.1).
        if (errs[i] > (names[i] == "ours int4" ? 0.2 : 0.05))
          std::cout << "  warning: " << names[i] << " differs from ours f32 by " << errs[i] << " (relative)\n";
    }
  }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "bench_kernels: " << e.what() << "\n";
  return 2;
}
