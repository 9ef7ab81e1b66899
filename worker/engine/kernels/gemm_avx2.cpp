// The avx2 family's matrix products: the portable kernel (gemm_portable.hpp) compiled with AVX2
// flags, so the compiler vectorizes it 8 lanes wide. Called only on CPUs with AVX2 + FMA (also
// for the AVX-512 family's cases that have no kernel of their own: int8 without VNNI).
#include "worker/engine/kernels/gemm_portable.hpp"

#include <cstdint>

namespace lf::kernels::detail {

struct avx2_tag {
  using int8_operand = std::int32_t;
};

void gemm_avx2(const gemm_panels& g, int p0, int p1) { gemm_portable<avx2_tag>(g, p0, p1); }

} // namespace lf::kernels::detail
