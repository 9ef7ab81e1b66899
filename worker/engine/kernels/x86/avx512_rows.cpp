// The AVX-512 tables' row operations and sampler passes: the canonical ones (common/), compiled
// with AVX-512's flags.
#include "worker/engine/kernels/common/canonical_rows.hpp"
#include "worker/engine/kernels/common/family.hpp"
#include "worker/engine/kernels/common/sampler_passes.hpp"

LF_DEFINE_SAMPLER_PASSES(avx512)
LF_DEFINE_CANONICAL_ROWS(avx512)
