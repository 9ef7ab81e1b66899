#pragma once
// Private to the x86 peak probes: ten independent chains of one instruction sequence, timed. The
// empty asm keeps every chain in a vector register ("v": xmm/ymm/zmm) and live, so nothing is
// hoisted or folded away. Internal linkage: each family's file keeps its own copy.

#include <chrono>

namespace lf::kernels::detail {
namespace {

constexpr long probe_iterations = 4'000'000;

inline double probe_seconds(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace
} // namespace lf::kernels::detail

#define LF_PROBE_BODY(type, init, op)                                                              \
  type c0 = init, c1 = init, c2 = init, c3 = init, c4 = init, c5 = init, c6 = init, c7 = init,     \
       c8 = init, c9 = init;                                                                       \
  for (long i = 0; i < probe_iterations; ++i) {                                                    \
    c0 = op(c0); c1 = op(c1); c2 = op(c2); c3 = op(c3); c4 = op(c4);                               \
    c5 = op(c5); c6 = op(c6); c7 = op(c7); c8 = op(c8); c9 = op(c9);                               \
    __asm__ volatile("" : "+v"(c0), "+v"(c1), "+v"(c2), "+v"(c3), "+v"(c4), "+v"(c5), "+v"(c6),    \
                     "+v"(c7), "+v"(c8), "+v"(c9));                                                \
  }
