#pragma once
/// The GPT-2 tokenizer of models/tokenizer, loaded once per test binary: tests that play the
/// gateway tokenize their prompts with it, as the gateway does. Pure C++ (no torch).

#include <string>

#include "text/tokenizer.hpp"

namespace lf::test {

/// The binary's one tokenizer (models/tokenizer under the source tree).
inline const text::tokenizer& tokenizer() {
  static const text::tokenizer tok = text::tokenizer::from_dir(std::string(LF_SOURCE_DIR) + "/models/tokenizer");
  return tok;
}

} // namespace lf::test
