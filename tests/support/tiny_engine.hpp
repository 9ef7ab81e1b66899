#pragma once
/// The tiny GPT-2 (tests/support/tiny_model.hpp) loaded once per test binary, with its tokenizer,
/// for the tests that run the model. Include tests/support/catch_aten.hpp before Catch2 as usual.

#include <string>

#include "tests/support/tiny_model.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/reference/gpt2_model.hpp"
#include "worker/engine/reference/weights.hpp"

namespace lf::test {

/// The model and tokenizer of tiny_model_dir(). Immutable: tests share it.
struct tiny_engine {
  std::string dir = tiny_model_dir();
  engine::gpt2_model model{engine::load_gpt2_weights(dir)};
  text::tokenizer tok = text::tokenizer::from_dir(dir);
};

/// The binary's one tiny_engine.
inline tiny_engine& tiny() {
  static tiny_engine e;
  return e;
}

} // namespace lf::test
