#include "worker/constraint_runner.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "constrain/constraint.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/sampling/sampler.hpp"

namespace lf::worker {

namespace {

std::shared_ptr<const constrain::vocab_trie> make_vocab_trie(const text::tokenizer& tok, std::int32_t eos_id) {
  std::vector<std::string> bytes;
  bytes.reserve(tok.vocab_size());
  for (std::size_t i = 0; i < tok.vocab_size(); ++i)
    bytes.push_back(tok.decode_token(static_cast<std::int32_t>(i)));
  return std::make_shared<const constrain::vocab_trie>(std::move(bytes), eos_id);
}

} // namespace

output_guide::output_guide(std::shared_ptr<constrain::token_automaton> automaton)
  : automaton_(std::move(automaton)), cursor_(automaton_->start()) {}

bool output_guide::step(std::int32_t token) {
  auto next = automaton_->advance(cursor_, token);
  if (!next)
    return false;
  cursor_ = std::move(*next);
  return true;
}

bool output_guide::complete() const {
  const auto& st = *cursor_.state;
  return st.accepting() && st.stacks.size() == 1;  // only the empty stack: nothing can follow
}

std::int32_t output_guide::sample(engine::sampler& pick, const sampling_params& params, float* logits,
                                  std::size_t vocab, const std::vector<std::int32_t>& context,
                                  std::uint64_t index) const {
  const auto mask = automaton_->mask(cursor_);
  if (mask->allowed == 0)
    return -1;
  if (!mask->ids.empty() && params.repetition_penalty == 1.0f && params.logit_bias.empty()) {
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

constraint_runner::constraint_runner(const text::tokenizer& tok, std::int32_t eos_id, bool prebuild)
  : tok_(tok), eos_id_(eos_id) {
  if (prebuild)
    vocab_trie_ = std::async(std::launch::async, make_vocab_trie, std::cref(tok_), eos_id_);
}

constraint_runner::~constraint_runner() {
  if (vocab_trie_.valid())
    vocab_trie_.wait();
}

std::variant<output_guide, std::string> constraint_runner::start(const output_constraint& c) {
  try {
    if (!cache_) {
      auto vocab = vocab_trie_.valid() ? vocab_trie_.get() : make_vocab_trie(tok_, eos_id_);
      // Bounds per compiled constraint: 4096 states (1 KiB of transitions each) and 256 masks
      // (vocab / 8 bytes each, 6.3 KB for GPT-2): about 5.6 MiB, 180 MiB for the whole cache.
      constrain::token_automaton::limits lim;
      lim.max_states = 4096;
      lim.max_masks = 256;
      cache_ = std::make_unique<constrain::constraint_cache>(std::move(vocab), constraint_cache_size, lim);
    }
    return output_guide(cache_->get(c));
  } catch (const std::exception& e) {
    return std::string("constraint: ") + e.what();
  }
}

} // namespace lf::worker
