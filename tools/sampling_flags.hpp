#pragma once
/// The sampling flags shared by `lorafleet generate` (the engine in this process) and
/// `lorafleet client` (a request to a cluster): --max-tokens --temperature --top-k --top-p
/// --repetition-penalty --seed --stop --ignore-eos. Both commands check them with
/// engine::validate, so a bad value is refused the same way before any work starts.

#include <stdexcept>

#include "tools/args.hpp"
#include "core/sampling_params.hpp"

namespace lf::tools {

/// Reads the sampling flags from `a`; a flag that is absent keeps its value from `defaults`.
/// Throws std::invalid_argument naming the flag or field and the bad value.
inline lf::sampling_params read_sampling(args& a, lf::sampling_params defaults) {
  auto p = std::move(defaults);
  p.max_tokens = static_cast<int>(a.integer_in("max-tokens", p.max_tokens, 1, 1 << 20));
  p.temperature = static_cast<float>(a.real("temperature", p.temperature));
  p.top_k = static_cast<int>(a.integer_in("top-k", p.top_k, 0, 1 << 20));
  p.top_p = static_cast<float>(a.real("top-p", p.top_p));
  p.repetition_penalty = static_cast<float>(a.real("repetition-penalty", p.repetition_penalty));
  if (a.has("seed"))
    p.seed = static_cast<std::uint64_t>(a.integer("seed", 0));
  if (a.has("stop"))
    p.stop = a.all("stop");
  p.ignore_eos = p.ignore_eos || a.has("ignore-eos");
  if (auto err = lf::validate(p))
    throw std::invalid_argument(*err);
  return p;
}

} // namespace lf::tools
