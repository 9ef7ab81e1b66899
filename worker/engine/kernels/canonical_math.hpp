#pragma once
/// The transcendental functions whose bits must not depend on the machine: the exact (erf) GELU,
/// and the log-sum-exp of reported log-probabilities. libm's erf, exp and log are free to differ
/// in the last bit between C libraries and architectures (and glibc picks code paths by CPU), so
/// these are written out in plain double arithmetic: polynomials evaluated in a fixed order, with
/// no fused multiply-add (the kernels are built with -ffp-contract=off) and no library call. Every
/// IEEE machine then gives the same bits, x86 and aarch64 alike (kernel_digest checks it).

namespace lf::kernels {

/// erf(x) rounded to float: within one float ulp of the true value (a double-precision piecewise
/// Taylor polynomial, error below 1e-14). erf(+-inf) = +-1, erf(NaN) = NaN, erf(-0) = -0.
float erf_canonical(float x) noexcept;

/// exp(z) for z <= 0, within 2 double ulps; exactly 0 for z < -708 (and -inf). Not for z > 0.
double exp_nonpositive_canonical(double z) noexcept;

/// log(x) for a finite x > 0 within 2 double ulps of the true value; -inf for 0, NaN below 0
/// or for NaN, +inf for +inf. Subnormal inputs are scaled first.
double log_canonical(double x) noexcept;

} // namespace lf::kernels
