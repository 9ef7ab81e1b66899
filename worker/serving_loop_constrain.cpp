// Structured output in the serving loop: each constrained request holds its constraint's token
// automaton (compiled once per text, cached by the loop) and a cursor into it. The mask applies
// to the raw logits before the sampler's penalty, temperature, top-k and top-p, so greedy output
// is the argmax among the allowed tokens; the end of text is allowed exactly where the output is
// complete. A resumed request's cursor is recomputed by replaying its tokens.
#include "worker/serving_loop.hpp"
#include "worker/serving_loop_state.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "constrain/constraint.hpp"
#include "text/tokenizer.hpp"

namespace lf::worker {

std::shared_ptr<const constrain::vocab_trie> make_vocab_trie(const text::tokenizer& tok, std::int32_t eos_id) {
  std::vector<std::string> bytes;
  bytes.reserve(tok.vocab_size());
  for (std::size_t i = 0; i < tok.vocab_size(); ++i)
    bytes.push_back(tok.decode_token(static_cast<std::int32_t>(i)));
  return std::make_shared<const constrain::vocab_trie>(std::move(bytes), eos_id);
}

void serving_loop::prebuild_vocab_trie() {
  if (cfg_.prebuild_vocab_trie)
    vocab_trie_ = std::async(std::launch::async, make_vocab_trie, std::cref(tok_), cfg_.eos_id);
}

bool serving_loop::start_constraint(request_id id, live_request& lr) {
  try {
    if (!constraints_) {
      auto vocab = vocab_trie_.valid() ? vocab_trie_.get() : make_vocab_trie(tok_, cfg_.eos_id);
      // Bounds per compiled constraint: 4096 states (1 KiB of transitions each) and 256 masks
      // (vocab / 8 bytes each, 6.3 KB for GPT-2): about 5.6 MiB, 180 MiB for the whole cache.
      constrain::token_automaton::limits lim;
      lim.max_states = 4096;
      lim.max_masks = 256;
      constraints_ = std::make_unique<constrain::constraint_cache>(std::move(vocab), constraint_cache_size, lim);
    }
    lr.automaton = constraints_->get(lr.req.params().constraint);
    lr.cursor = lr.automaton->start();
    return true;
  } catch (const std::exception& e) {
    lr.automaton.reset();
    end(id, failure(serve_errc::invalid_request, std::string("constraint: ") + e.what()));
    return false;
  }
}

bool serving_loop::constraint_step(live_request& lr, std::int32_t token) {
  auto next = lr.automaton->advance(lr.cursor, token);
  if (!next)
    return false;
  lr.cursor = std::move(*next);
  return true;
}

bool serving_loop::constraint_complete(const live_request& lr) {
  const auto& st = *lr.cursor.state;
  return st.accepting() && st.stacks.size() == 1;  // only the empty stack: nothing can follow
}

std::int32_t serving_loop::sample_constrained(live_request& lr, engine::sampler& pick, float* logits,
                                              std::size_t vocab, const std::vector<std::int32_t>& context,
                                              std::uint64_t index) {
  const auto mask = lr.automaton->mask(lr.cursor);
  if (mask->allowed == 0)
    return -1;
  if (!mask->ids.empty() && lr.req.params().repetition_penalty == 1.0f && lr.req.params().logit_bias.empty()) {
    // The allowed tokens alone, in id order: the masked row's distribution without its -inf.
    // (Not with a penalty or a logit_bias: both index the whole vocabulary.)
    thread_local std::vector<float> compact;
    compact.resize(mask->ids.size());
    for (std::size_t j = 0; j < mask->ids.size(); ++j)
      compact[j] = logits[mask->ids[j]];
    static const std::vector<std::int32_t> no_context;
    return mask->ids[static_cast<std::size_t>(pick.sample(compact.data(), compact.size(), no_context, index))];
  }
  constexpr float ninf = -std::numeric_limits<float>::infinity();
  // A row longer than the tokenizer's vocabulary (a padded embedding): the rest is never allowed.
  for (std::size_t i = mask->bits.size() * 64; i < vocab; ++i)
    logits[i] = ninf;
  for (std::size_t w = 0; w * 64 < vocab && w < mask->bits.size(); ++w) {
    const auto bits = mask->bits[w];
    if (bits == ~std::uint64_t{0})
      continue;
    const auto end = std::min(vocab, (w + 1) * 64);
    for (auto i = w * 64; i < end; ++i)
      if (!((bits >> (i - w * 64)) & 1u))
        logits[i] = ninf;
  }
  return pick.sample(logits, vocab, context, index);
}

} // namespace lf::worker
