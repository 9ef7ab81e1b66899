#pragma once
/// The sampling flags shared by `lorafleet generate` (the engine in this process) and
/// `lorafleet client` (a request to a cluster): --max-tokens --temperature --top-k --top-p
/// --repetition-penalty --seed --stop --ignore-eos --logit-bias. Both commands check them with
/// engine::validate, so a bad value is refused the same way before any work starts.

#include <cstdint>
#include <stdexcept>
#include <string>

#include "tools/common/args.hpp"
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
  for (const auto& kv : a.all("logit-bias")) {
    // ID=BIAS, as OpenAI's logit_bias entries; the vocabulary bound is checked by the router.
    const auto eq = kv.find('=');
    std::size_t used = 0;
    long long id = -1;
    float bias = 0;
    try {
      id = eq == std::string::npos ? -1 : std::stoll(kv.substr(0, eq), &used);
      if (id >= 0 && used == eq) {
        bias = std::stof(kv.substr(eq + 1), &used);
        used = used == kv.size() - eq - 1 ? used : 0;
      }
    } catch (const std::exception&) {
      id = -1;
    }
    if (id < 0 || id > INT32_MAX || used == 0)
      throw std::invalid_argument("--logit-bias takes TOKEN_ID=BIAS (got \"" + kv + "\")");
    p.logit_bias[static_cast<std::int32_t>(id)] = bias;
  }
  if (auto err = lf::validate(p))
    throw std::invalid_argument(*err);
  return p;
}

} // namespace lf::tools
