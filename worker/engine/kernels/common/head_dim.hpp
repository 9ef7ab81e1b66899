#pragma once
// Private to the kernels: the one dispatch from a run-time head_dim to a kernel compiled for a
// number of vector registers per head row. Each family's attention holds a row of q, of the output
// and of V in DV registers of `Lanes` floats (16 for AVX-512, 8 for AVX2, 4 for NEON), so its
// kernels are templates on DV; this picks the instance, or says none fits (the portable kernel's
// case).

#include <type_traits>
#include <utility>

namespace lf::kernels::detail {

namespace head_dim_detail {

template <class F, int... I>
bool call_with(int dv, F& f, std::integer_sequence<int, I...>) {
  return ((dv == I + 1 ? (f(std::integral_constant<int, I + 1>{}), true) : false) || ...);
}

} // namespace head_dim_detail

/// Calls `f(std::integral_constant<int, DV>{})` when `head_dim` is DV whole vectors of `Lanes`
/// floats with 1 <= DV <= MaxDV, and returns true; returns false, f not called, for any other
/// head_dim.
template <int Lanes, int MaxDV, class F>
bool with_head_vectors(int head_dim, F&& f) {
  static_assert(Lanes > 0 && MaxDV > 0);
  if (head_dim <= 0 || head_dim % Lanes != 0 || head_dim / Lanes > MaxDV)
    return false;
  return head_dim_detail::call_with(head_dim / Lanes, f, std::make_integer_sequence<int, MaxDV>{});
}

} // namespace lf::kernels::detail
