#include "worker/engine/sampling/sampler.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "worker/engine/kernels/common/sampler_passes.hpp"
#include "worker/engine/kernels/kernel_table.hpp"

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

using kernels::sampler_passes::exp_nonpositive;

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

/// The largest logit through the kernel table's pass; a NaN or +inf logit (a blown-up model) or a
/// row of -inf is an error.
float checked_max(const float* logits, std::size_t vocab) {
  bool bad = false;
  const float max = kernels::active_table().logits_max(logits, vocab, bad);
  if (bad) {
    std::size_t i = 0;
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
    seed_(params.seed.value_or(fallback_seed)),
    logit_bias_(params.logit_bias.begin(), params.logit_bias.end()) {
  // Only the fields the sampler reads; copying the stop list just to check it would be waste.
  auto numeric = numeric_part(params);
  numeric.logit_bias = params.logit_bias;
  if (auto err = validate(numeric))
    throw std::invalid_argument("sampler: " + *err);
}

void sampler::apply_logit_bias(float* logits, std::size_t vocab) const noexcept {
  for (const auto& [id, bias] : logit_bias_)
    if (static_cast<std::size_t>(id) < vocab)
      logits[id] += bias;
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
  apply_logit_bias(logits, vocab);
  apply_repetition_penalty(logits, vocab, context);
  const float max = checked_max(logits, vocab);
  if (temperature_ == 0.0f)
    return kernels::active_table().first_index_of(logits, vocab, max);

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
    kernels::active_table().scale_and_exp(logits, probs, vocab, max, inv_t);
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
  const double total = kernels::active_table().block_masses(probs, vocab, block_size, block_mass.data());
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
