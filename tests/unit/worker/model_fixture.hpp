#pragma once
/// The tiny GPT-2 the model-level serving-loop tests share: written once per test binary, with
/// its tokenizer, a LoRA adapter "one" under `root`, and a second model of another seed
/// (`other`: the same shape, other weights).

#include <string>

#include "tests/support/lora_fixture.hpp"
#include "text/tokenizer.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"

namespace lf::test {

struct model_fixture {
  temp_dir tmp;
  std::string dir = write_tiny_model(tmp);
  std::string other = write_tiny_model(tmp, "other", engine::dtype::f32, false, true, 7);
  engine::gpt2_config mc = engine::gpt2_config::load(dir + "/config.json");
  text::tokenizer tok = text::tokenizer::from_dir(dir);
  std::string root = tmp / "adapters";

  model_fixture() { write_peft_adapter(root + "/one", tiny_adapter(mc, 1)); }
};

/// The binary's one model_fixture.
inline model_fixture& model_fx() {
  static model_fixture f;
  return f;
}

} // namespace lf::test
