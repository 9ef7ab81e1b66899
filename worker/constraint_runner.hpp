#pragma once
/// Structured output for a serving loop: the constraints it has compiled (over the tokenizer's
/// vocabulary, cached) and, per constrained request, an output_guide that says which tokens may
/// come next, moves past each token and tells when the output is complete. The mask applies to
/// the raw logits before the sampler's penalty, temperature, top-k and top-p, so greedy output is
/// the argmax among the allowed tokens; the end of text is allowed exactly where the output is
/// complete. A resumed request's guide is recomputed by stepping through its tokens. Pure C++
/// (one background thread to build the vocabulary's trie when asked); the loop thread's alone.

#include <cstddef>
#include <cstdint>
#include <future>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "constrain/token_automaton.hpp"
#include "core/sampling_params.hpp"

namespace lf::constrain {
class constraint_cache;
}
namespace lf::engine {
class sampler;
}
namespace lf::text {
class tokenizer;
}

namespace lf::worker {

/// Compiled constraints a serving loop keeps (each with its state table and masks: see
/// constrain/token_automaton.hpp for their bounds).
inline constexpr std::size_t constraint_cache_size = 32;

/// Where one constrained output stands in its constraint's automaton.
class output_guide {
public:
  output_guide(std::shared_ptr<constrain::token_automaton> automaton);

  /// Moves past `token` (not the end of text); false, the guide unchanged, when the token is
  /// not allowed here (only a broken invariant or a resumed token outside the constraint).
  bool step(std::int32_t token);
  /// Whether the output is complete and nothing more may follow (it ends with "stop").
  bool complete() const;
  /// The next token among those allowed (the mask before penalty, temperature, top-k and top-p);
  /// -1 when none is. With few allowed tokens, no repetition penalty and no logit_bias the
  /// sampler sees only those (the same distribution, cost independent of the vocabulary); else
  /// the row's other logits become -inf. `logits` may be rewritten.
  std::int32_t sample(engine::sampler& pick, const sampling_params& params, float* logits, std::size_t vocab,
                      const std::vector<std::int32_t>& context, std::uint64_t index) const;

private:
  std::shared_ptr<constrain::token_automaton> automaton_;
  constrain::token_automaton::cursor cursor_;
};

/// The constraints of one serving loop.
class constraint_runner {
public:
  /// `tok` must outlive the runner. `prebuild`: build the vocabulary's byte trie (66-120 ms for
  /// GPT-2's) on a thread of its own now, so the first constrained request does not stall the
  /// loop; else it is built at the first constrained request.
  constraint_runner(const text::tokenizer& tok, std::int32_t eos_id, bool prebuild);
  ~constraint_runner();  // waits for a trie being built

  constraint_runner(const constraint_runner&) = delete;
  constraint_runner& operator=(const constraint_runner&) = delete;

  /// A guide at the start of `c`'s output, or why `c` does not compile ("constraint: ...").
  std::variant<output_guide, std::string> start(const output_constraint& c);

private:
  const text::tokenizer& tok_;
  std::int32_t eos_id_;
  /// Made at the first constrained request; at most constraint_cache_size compiled constraints
  /// (least recently used dropped).
  std::unique_ptr<constrain::constraint_cache> cache_;
  /// The trie being built (prebuild); taken by the first constrained request, which waits only if
  /// it came before the build ended.
  std::future<std::shared_ptr<const constrain::vocab_trie>> vocab_trie_;
};

} // namespace lf::worker
