#include "worker/engine/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

namespace lf::engine {

namespace {

constexpr float neg_inf = -std::numeric_limits<float>::infinity();
constexpr float pos_inf = std::numeric_limits<float>::infinity();

struct candidate {
  float z;  ///< scaled logit, <= 0
  float e;  ///< exp(z): unnormalized probability
  std::int32_t id;
};

/// Highest logit first; equal logits by id, so kept sets and walk orders (and therefore the drawn
/// token) are fully determined by the input.
struct ranks_higher {
  bool operator()(const candidate& a, const candidate& b) const noexcept {
    return a.z > b.z || (a.z == b.z && a.id < b.id);
  }
};

/// Per-thread scratch: samplers are per sequence, so member buffers would cost ~1 MB per running
/// sequence; nothing here outlives a call, so sharing per thread is safe even if the calling
/// actor migrates between threads.
struct scratch {
  std::vector<float> probs;        ///< exp(z) per token id
  std::vector<double> block_mass;  ///< unfiltered draw: mass per block of ids
  std::vector<candidate> cands;    ///< filtered draw
  std::vector<std::uint8_t> seen;  ///< repetition penalty: ids done this call
  std::vector<std::uint8_t> bucket;  ///< top-p: each id's z-bucket
};

scratch& thread_scratch() {
  thread_local scratch s;
  return s;
}

/// The unfiltered draw sums ids in blocks, so finding the token walks vocab/64 block sums and one
/// block instead of the whole vocabulary.
constexpr std::size_t block_size = 64;
/// top_k up to this keeps a bounded heap in one pass; larger k uses nth_element.
constexpr std::size_t heap_top_k_max = 1024;
/// Top-p buckets candidates by z (a log-probability relative to the best token) in slices of
/// 1/4 nat, so only the one slice where the nucleus ends needs ordering.
constexpr float buckets_per_nat = 4.0f;
constexpr int num_buckets = 256;

int bucket_of(float z) {
  const float f = -z * buckets_per_nat;
  return f >= static_cast<float>(num_buckets - 1) ? num_buckets - 1 : static_cast<int>(f);
}

/// exp(z) for z <= 0 (including -inf) within 1e-7 relative error, and exactly 0 for z <= -87
/// (below 1.7e-38 of the best token's weight). Plain arithmetic that the compiler vectorizes,
/// unlike a libm call: 4-5x faster over a 50k vocabulary. Unlike libm, which picks an FMA or a
/// non-FMA code path at run time, it also gives the same bits on every CPU running one binary.
inline float exp_nonpositive(float z) {
  const bool live = z > -87.0f;
  const float x = live ? z : -87.0f;
  // Cody-Waite: x = n ln2 + r with |r| <= ln2 / 2; adding 1.5 * 2^23 rounds to an integer.
  constexpr float round_magic = 12582912.0f;
  const float n = (x * 1.44269504088896341f + round_magic) - round_magic;
  const float r = (x - n * 0.693359375f) + n * 2.12194440e-4f;
  // Cephes expf polynomial.
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * (r * r) + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) * (1 << 23);
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return live ? p * scale : 0.0f;
}

/// Mass per z-bucket and where the nucleus ends: buckets before `last` are kept whole, the cut
/// lies inside bucket `last`, and `need` is the mass still needed from it.
struct nucleus_plan {
  double bucket_mass[num_buckets] = {};
  std::size_t count[num_buckets] = {};
  int last = 0;
  double need = 0.0;

  void add(float z, float e) {
    const int b = bucket_of(z);
    bucket_mass[b] += e;
    ++count[b];
  }
  void plan(double total, float top_p) {
    need = static_cast<double>(top_p) * total;
    last = 0;
    while (last < num_buckets - 1 && bucket_mass[last] < need)
      need -= bucket_mass[last++];
  }
};

/// Orders [lo, hi) (one bucket) just enough to return the end of the highest-ranked prefix whose
/// mass reaches `need`: a weighted quickselect, expected O(hi - lo).
candidate* nucleus_end(candidate* lo, candidate* hi, double need) {
  const ranks_higher order;
  while (hi - lo > 32) {
    candidate* mid = lo + (hi - lo) / 2;
    std::nth_element(lo, mid, hi, order);
    double m = 0.0;
    for (candidate* p = lo; p < mid; ++p)
      m += p->e;
    if (m >= need) {
      hi = mid;
    } else {
      need -= m; // the upper half is kept whole
      lo = mid;
    }
  }
  std::sort(lo, hi, order);
  double cum = 0.0;
  for (candidate* p = lo; p < hi; ++p) {
    cum += p->e;
    if (cum >= need)
      return p + 1;
  }
  return hi; // rounding left the bucket a hair short: keep all of it
}

/// Draws from c[0, n) in this order. The walk repeats the additions that produced `total`, so it
/// reaches exactly `total`; the fallback only covers `target` rounding up to `total` itself.
std::int32_t walk(const candidate* c, std::size_t n, double u) {
  double total = 0.0;
  for (std::size_t j = 0; j < n; ++j)
    total += c[j].e;
  const double target = u * total;
  double cum = 0.0;
  std::int32_t last = c[0].id;
  for (std::size_t j = 0; j < n; ++j) {
    if (c[j].e > 0.0f) {
      cum += c[j].e;
      last = c[j].id;
      if (cum > target)
        return c[j].id;
    }
  }
  return last;
}

/// Sixteen floats / int32 flags as one value (GCC vector extensions): each target clone below
/// compiles them to its widest registers (one AVX-512 register, two AVX2, four SSE).
typedef float lanes_f32 __attribute__((vector_size(64)));
typedef std::int32_t lanes_i32 __attribute__((vector_size(64)));
constexpr std::size_t lanes = 16;

/// Rejects rows a blown-up model produces and returns the maximum, sixteen lanes at a time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
float checked_max(const float* logits, std::size_t vocab) {
  lanes_f32 m;
  lanes_i32 ok;
  for (std::size_t j = 0; j < lanes; ++j) {
    m[j] = neg_inf;
    ok[j] = -1;
  }
  std::size_t i = 0;
  for (; i + lanes <= vocab; i += lanes) {
    lanes_f32 v;
    __builtin_memcpy(&v, logits + i, sizeof v);
    ok &= v < pos_inf;  // 0 where NaN or +inf
    m = v > m ? v : m;
  }
  float max = neg_inf;
  bool any_bad = false;
  for (std::size_t j = 0; j < lanes; ++j) {
    max = m[j] > max ? m[j] : max;
    any_bad |= ok[j] == 0;
  }
  for (; i < vocab; ++i) {
    any_bad |= !(logits[i] < pos_inf);
    max = logits[i] > max ? logits[i] : max;
  }
  if (any_bad) {
    i = 0;
    while (logits[i] < pos_inf)
      ++i;
    throw std::runtime_error("sampler: logit " + std::to_string(i) + " is "
                             + (std::isnan(logits[i]) ? "nan" : "+inf")
                             + " (the model produced non-finite values)");
  }
  if (max == neg_inf)
    throw std::runtime_error("sampler: every logit is -inf, no token can be sampled");
  return max;
}

/// The first i with logits[i] == value (which is there): greedy's argmax after checked_max, in
/// blocks of 16 compared at once.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
std::int32_t first_index_of(const float* logits, std::size_t vocab, float value) {
  std::size_t i = 0;
  lanes_f32 want;
  for (std::size_t j = 0; j < lanes; ++j)
    want[j] = value;
  for (; i + lanes <= vocab; i += lanes) {
    lanes_f32 v;
    __builtin_memcpy(&v, logits + i, sizeof v);
    const lanes_i32 eq = v == want;
    std::int32_t hit = 0;
    for (std::size_t j = 0; j < lanes; ++j)
      hit |= eq[j];
    if (hit)
      break;
  }
  while (logits[i] != value)
    ++i;
  return static_cast<std::int32_t>(i);
}

/// logits[i] = (logits[i] - max) * inv_t and probs[i] = exp of that, in one vectorizable pass.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
void scale_and_exp(float* __restrict logits, float* __restrict probs, std::size_t vocab, float max,
                   float inv_t) {
  for (std::size_t i = 0; i < vocab; ++i) {
    const float z = (logits[i] - max) * inv_t;
    logits[i] = z;
    probs[i] = exp_nonpositive(z);
  }
}

/// Lanes of a block sum: a block's mass is summed in this many double lanes, then the lanes
/// pairwise, the same order everywhere (so a seed draws the same token on every machine).
constexpr std::size_t mass_lanes = 8;

/// The mass of ids [first, end) (at most block_size of them) in mass_lanes lanes.
inline double block_mass_of(const float* probs, std::size_t first, std::size_t end) {
  double l[mass_lanes] = {};
  std::size_t i = first;
  for (; i + mass_lanes <= end; i += mass_lanes)
    for (std::size_t j = 0; j < mass_lanes; ++j)
      l[j] += probs[i + j];
  for (std::size_t j = 0; i < end; ++i, ++j)
    l[j] += probs[i];
  return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}

/// out[b] = the mass of block b of ids for every block; returns their sum in block order.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
__attribute__((target_clones("avx512f", "avx2", "default")))
#endif
double block_masses(const float* probs, std::size_t vocab, double* out) {
  const std::size_t blocks = (vocab + block_size - 1) / block_size;
  double total = 0.0;
  for (std::size_t b = 0; b < blocks; ++b) {
    out[b] = block_mass_of(probs, b * block_size, std::min(vocab, (b + 1) * block_size));
    total += out[b];
  }
  return total;
}

/// Sets every logit outside c[0, n) to -inf.
void mask_all_but(float* logits, std::size_t vocab, const candidate* c, std::size_t n) {
  std::fill(logits, logits + vocab, neg_inf);
  for (std::size_t j = 0; j < n; ++j)
    logits[c[j].id] = c[j].z;
}

sampling_params numeric_part(const sampling_params& p) {
  sampling_params q;
  q.temperature = p.temperature;
  q.top_k = p.top_k;
  q.top_p = p.top_p;
  q.repetition_penalty = p.repetition_penalty;
  return q;
}

} // namespace

sampler::sampler(const sampling_params& params, std::uint64_t fallback_seed)
  : temperature_(params.temperature),
    top_k_(params.top_k),
    top_p_(params.top_p),
    repetition_penalty_(params.repetition_penalty),
    seed_(params.seed.value_or(fallback_seed)) {
  // Only the fields the sampler reads; copying the stop list just to check it would be waste.
  if (auto err = validate(numeric_part(params)))
    throw std::invalid_argument("sampler: " + *err);
}

namespace {

/// SplitMix64's output function (Steele, Lea and Flood 2014).
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

} // namespace

std::uint64_t sampler::draw(std::uint64_t seed, std::uint64_t index) noexcept {
  // SplitMix64 advances its state by the golden gamma per output: output i is mix of
  // state0 + (i + 1) * gamma. Starting from mix64(seed) keeps nearby seeds' streams apart.
  constexpr std::uint64_t gamma = 0x9e3779b97f4a7c15ULL;
  return mix64(mix64(seed) + (index + 1) * gamma);
}

double sampler::uniform_at(std::uint64_t index) const noexcept {
  return static_cast<double>(draw(seed_, index) >> 11) * 0x1.0p-53;
}

void sampler::apply_repetition_penalty(float* logits, std::size_t vocab,
                                       const std::vector<std::int32_t>& context) {
  const float p = repetition_penalty_;
  if (p == 1.0f || context.empty())
    return;
  // Check every id before touching anything so a bad context leaves the scratch clean.
  for (auto id : context)
    if (id < 0 || static_cast<std::size_t>(id) >= vocab)
      throw std::out_of_range("sampler: context token id " + std::to_string(id)
                              + " outside the vocabulary of " + std::to_string(vocab));
  auto& seen = thread_scratch().seen;
  if (seen.size() < vocab)
    seen.resize(vocab, 0);
  constexpr float max_finite = std::numeric_limits<float>::max();
  for (auto id : context) {
    if (seen[id])
      continue; // penalize each id once, however often it repeats
    seen[id] = 1;
    float& l = logits[id];
    const bool was_finite = std::isfinite(l);
    l = l > 0.0f ? l / p : l * p;
    // An extreme penalty must not turn a finite logit into an infinity: +inf would be reported as
    // a model blow-up and -inf would silently mask the token.
    if (was_finite && !std::isfinite(l))
      l = l > 0.0f ? max_finite : -max_finite;
  }
  for (auto id : context)
    seen[id] = 0;
}

std::int32_t sampler::sample(float* logits, std::size_t vocab,
                             const std::vector<std::int32_t>& context, std::uint64_t index) {
  if (vocab == 0 || vocab > static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max()))
    throw std::invalid_argument("sampler: vocabulary size " + std::to_string(vocab)
                                + " out of range");
  apply_repetition_penalty(logits, vocab, context);
  const float max = checked_max(logits, vocab);
  if (temperature_ == 0.0f)
    return first_index_of(logits, vocab, max);

  // Multiplying is cheaper than dividing; clamping keeps 0 * inv_t finite for the best token
  // when the temperature is subnormal.
  const float inv_t = std::min(1.0f / temperature_, std::numeric_limits<float>::max());
  const double u = uniform_at(index);
  auto& s = thread_scratch();
  if (s.cands.size() < vocab) {
    s.cands.resize(vocab);
    s.probs.resize(vocab);
    s.block_mass.resize((vocab + block_size - 1) / block_size);
    s.bucket.resize(vocab);
  }
  // Raw pointers into the scratch: writing through `logits` would otherwise make the compiler
  // reload a vector's end pointer from thread-local storage on every token.
  candidate* const c = s.cands.data();
  float* const probs = s.probs.data();
  const ranks_higher order;
  const std::size_t k = static_cast<std::size_t>(top_k_);
  const bool top_k_cuts = top_k_ > 0 && k < vocab;
  std::size_t n = 0;

  if (top_k_cuts && k <= heap_top_k_max) {
    // One pass with a bounded heap whose front is the weakest of the best k seen so far; after
    // the first few thousand ids almost every token fails the single comparison with it.
    for (std::size_t i = 0; i < vocab; ++i) {
      const float z = (logits[i] - max) * inv_t;
      logits[i] = z;
      if (z == neg_inf)
        continue;
      const candidate x{z, 0.0f, static_cast<std::int32_t>(i)};
      if (n < k) {
        c[n++] = x;
        std::push_heap(c, c + n, order);
      } else if (order(x, c[0])) {
        std::pop_heap(c, c + n, order);
        c[n - 1] = x;
        std::push_heap(c, c + n, order);
      }
    }
    for (std::size_t j = 0; j < n; ++j)
      c[j].e = exp_nonpositive(c[j].z);
    if (n == k)
      mask_all_but(logits, vocab, c, n);
  } else {
    scale_and_exp(logits, probs, vocab, max, inv_t);
    if (!top_k_cuts && top_p_ >= 1.0f)
      return draw_unfiltered(probs, vocab, u);
    if (!top_k_cuts)
      return draw_nucleus(logits, probs, vocab, u);
    for (std::size_t i = 0; i < vocab; ++i)
      if (logits[i] != neg_inf)
        c[n++] = candidate{logits[i], probs[i], static_cast<std::int32_t>(i)};
    if (k < n) {
      std::nth_element(c, c + k, c + n, order);
      n = k;
      mask_all_but(logits, vocab, c, n);
    }
  }

  std::size_t keep = n;
  if (top_p_ < 1.0f) {
    nucleus_plan plan;
    double total = 0.0;
    for (std::size_t j = 0; j < n; ++j) {
      plan.add(c[j].z, c[j].e);
      total += c[j].e;
    }
    plan.plan(total, top_p_);
    const int last = plan.last;
    candidate* lo = std::partition(c, c + n, [last](const candidate& x) {
      return bucket_of(x.z) < last;
    });
    candidate* hi = std::partition(lo, c + n, [last](const candidate& x) {
      return bucket_of(x.z) == last;
    });
    keep = static_cast<std::size_t>(nucleus_end(lo, hi, plan.need) - c);
    for (std::size_t j = keep; j < n; ++j)
      logits[c[j].id] = neg_inf;
  }
  return walk(c, keep, u);
}

std::int32_t sampler::draw_unfiltered(const float* probs, std::size_t vocab, double u) {
  auto& block_mass = thread_scratch().block_mass;
  const std::size_t blocks = (vocab + block_size - 1) / block_size;
  const double total = block_masses(probs, vocab, block_mass.data());
  const double target = u * total;
  double cum = 0.0;
  std::size_t b = 0;
  std::size_t last_nonempty = 0;
  for (; b < blocks; ++b) {
    if (block_mass[b] > 0.0)
      last_nonempty = b;
    if (cum + block_mass[b] > target)
      break;
    cum += block_mass[b];
  }
  // Running off the end means `target` rounded up to `total`: the last token with mass is right.
  const std::size_t pick = b < blocks ? b : last_nonempty;
  const std::size_t first = pick * block_size;
  const std::size_t end = std::min(vocab, first + block_size);
  if (b < blocks) {
    // The running sum crosses `target` inside the block, up to rounding (the block's mass was
    // summed in lanes): if it does not, the block's last token with mass below is the pick.
    double in_block = 0.0;
    for (std::size_t i = first; i < end; ++i) {
      in_block += probs[i];
      if (probs[i] > 0.0f && cum + in_block > target)
        return static_cast<std::int32_t>(i);
    }
  }
  std::size_t i = end - 1;
  while (i > first && !(probs[i] > 0.0f))
    --i;
  return static_cast<std::int32_t>(i);
}

std::int32_t sampler::draw_nucleus(float* logits, const float* probs, std::size_t vocab,
                                   double u) {
  // Top-p without top-k, straight from the arrays: bucket by z, then copy out only the tokens
  // that are surely kept plus the one bucket where the cut falls, instead of all 50k.
  // Each id's bucket once (a vectorizable pass), then the histogram in four interleaved copies so
  // runs of ids in one bucket do not wait on each other's additions; merged in a fixed order.
  std::uint8_t* const bucket = thread_scratch().bucket.data();
  for (std::size_t i = 0; i < vocab; ++i)
    bucket[i] = static_cast<std::uint8_t>(bucket_of(logits[i]));
  constexpr std::size_t ways = 4;
  double mass[ways][num_buckets] = {};
  std::uint32_t count[ways][num_buckets] = {};
  for (std::size_t i = 0; i < vocab; ++i) {
    if (logits[i] != neg_inf) {
      mass[i % ways][bucket[i]] += probs[i];
      ++count[i % ways][bucket[i]];
    }
  }
  nucleus_plan plan;
  double total = 0.0;
  for (int b = 0; b < num_buckets; ++b) {
    plan.bucket_mass[b] = (mass[0][b] + mass[1][b]) + (mass[2][b] + mass[3][b]);
    plan.count[b] = std::size_t{count[0][b]} + count[1][b] + count[2][b] + count[3][b];
    total += plan.bucket_mass[b];
  }
  plan.plan(total, top_p_);
  std::size_t whole = 0;
  for (int b = 0; b < plan.last; ++b)
    whole += plan.count[b];
  candidate* const c = thread_scratch().cands.data();
  std::size_t front = 0;
  std::size_t back = whole;
  for (std::size_t i = 0; i < vocab; ++i) {
    if (logits[i] == neg_inf)
      continue;
    const int b = bucket[i];
    if (b < plan.last)
      c[front++] = candidate{logits[i], probs[i], static_cast<std::int32_t>(i)};
    else if (b == plan.last)
      c[back++] = candidate{logits[i], probs[i], static_cast<std::int32_t>(i)};
  }
  const std::size_t keep = static_cast<std::size_t>(nucleus_end(c + whole, c + back, plan.need) - c);
  mask_all_but(logits, vocab, c, keep);
  return walk(c, keep, u);
}

} // namespace lf::engine
