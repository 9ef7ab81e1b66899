// run_training end to end on a tiny model: the loss goes down, the output is a checkpoint the
// engine loads, a resumed run ends where an uninterrupted one does, and train-lora writes a PEFT
// adapter that load_peft_adapter reads and that beats the base on its own text.
#include "tests/support/catch_aten.hpp"

#include <fstream>
#include <sstream>

#include "tests/support/temp_dir.hpp"
#include "tests/support/tiny_model.hpp"
#include "tools/train/trainer.hpp"
#include "worker/engine/reference/weights.hpp"

using namespace lf::engine;
using namespace lf::train;

namespace {

/// Writes `n` sentences built from small word lists: varied but very learnable text.
std::string write_text(const lf::test::temp_dir& dir, const std::string& name,
                       const std::vector<std::string>& subjects,
                       const std::vector<std::string>& verbs, int n) {
  std::ostringstream text;
  for (int i = 0; i < n; ++i)
    text << subjects[static_cast<std::size_t>(i * 7 % 5) % subjects.size()] << " "
         << verbs[static_cast<std::size_t>(i * 3 % 4) % verbs.size()] << " the "
         << subjects[static_cast<std::size_t>(i % 3) % subjects.size()] << ".\n";
  auto path = dir / name;
  std::ofstream(path) << text.str();
  return path;
}

std::string plain_corpus(const lf::test::temp_dir& dir) {
  return write_text(dir, "plain.txt", {"the cat", "a dog", "my friend", "the old man", "a bird"},
                    {"sees", "likes", "follows", "finds"}, 1500);
}

train_options tiny_options(const lf::test::temp_dir& dir, const std::string& out) {
  train_options o;
  o.corpus_files = {plain_corpus(dir)};
  o.out_dir = dir / out;
  o.tokenizer_dir = std::string(LF_SOURCE_DIR) + "/models/tokenizer";
  o.config = lf::test::tiny_config(2, 2, 32, 32);
  o.context = 32;
  o.steps = 30;
  o.batch = 4;
  o.micro_batch = 2;
  o.lr = 1e-2;
  o.warmup = 5;
  o.eval_every = 15;
  o.eval_tokens = 2048;
  o.log_every = 10;
  o.prec = precision::f32;
  o.threads = 2;
  return o;
}

/// Max |a - b| over every parameter of two checkpoints.
double weights_diff(const std::string& a, const std::string& b) {
  auto x = load_gpt2_weights(a), y = load_gpt2_weights(b);
  double worst = (x.wte - y.wte).abs().max().item<double>();
  for (std::size_t l = 0; l < x.blocks.size(); ++l)
    worst = std::max(worst, (x.blocks[l].fc_w - y.blocks[l].fc_w).abs().max().item<double>());
  return std::max(worst, (x.ln_f_b - y.ln_f_b).abs().max().item<double>());
}

} // namespace

TEST_CASE("training a tiny model lowers the held-out loss and writes a loadable model", "[train][trainer]") {
  lf::test::temp_dir tmp;
  auto o = tiny_options(tmp, "model");
  o.save_dtype = dtype::f16;
  std::ostringstream log;
  auto r = run_training(o, log);
  INFO(log.str());
  REQUIRE(r.finished);
  REQUIRE(r.evals.size() == 3); // steps 0, 15, 30
  CHECK(r.evals.front().step == 0);
  CHECK(r.evals.back().step == 30);
  CHECK(r.evals.front().mean > 10.0); // ~ln(50257) at initialisation
  CHECK(r.evals.back().mean < r.evals.front().mean - 5.0);
  CHECK_THAT(log.str(), Catch::Contains("step 30/30 | loss") && Catch::Contains("tok/s")
                          && Catch::Contains("ETA"));
  auto w = load_gpt2_weights(o.out_dir);
  CHECK(w.config.n_layer == 2);
  CHECK(w.lm_head.is_same(w.wte));
  for (const char* f : {"vocab.json", "merges.txt", "checkpoint/optimizer.pt", "checkpoint/train_state.json"})
    CHECK(std::filesystem::exists(std::filesystem::path(o.out_dir) / f));
  // The held-out loss the engine's weights give equals the trainer's last validation (f16 storage
  // moves it a little).
  eval_options e;
  e.model_dir = o.out_dir;
  e.tokenizer_dir = o.tokenizer_dir;
  e.corpus_files = o.corpus_files;
  e.context = o.context;
  e.eval_tokens = o.eval_tokens;
  auto losses = evaluate_model(e);
  REQUIRE(losses.size() == 1);
  CHECK(losses[0].loss == Approx(r.evals.back().mean).margin(0.02));
}

TEST_CASE("a resumed run continues from the saved step and ends where an uninterrupted one does", "[train][trainer]") {
  lf::test::temp_dir tmp;
  auto straight = tiny_options(tmp, "straight");
  straight.steps = 8;
  straight.eval_every = 100;
  std::ostringstream log;
  REQUIRE(run_training(straight, log).finished);

  auto split = straight;
  split.out_dir = tmp / "split";
  split.stop_after = 5;
  auto first = run_training(split, log);
  CHECK_FALSE(first.finished);
  CHECK(first.steps_done == 5);
  CHECK_FALSE(std::filesystem::exists(std::filesystem::path(split.out_dir) / "model.safetensors"));

  split.stop_after = 0;
  split.resume = true;
  auto second = run_training(split, log);
  CHECK(second.first_step == 5);
  CHECK(second.steps_done == 8);
  CHECK(second.finished);
  INFO(log.str());
  CHECK(weights_diff(straight.out_dir, split.out_dir) < 1e-5);

  auto lora = split;
  lora.base_dir = straight.out_dir;
  lora.lora_targets = {lora_module::attn_c_attn};
  CHECK_THROWS_WITH(run_training(lora, log), Catch::Contains("not a LoRA"));
  auto nothing = straight;
  nothing.out_dir = tmp / "nothing";
  nothing.resume = true;
  CHECK_THROWS_WITH(run_training(nothing, log), Catch::Contains("no checkpoint"));
}

TEST_CASE("train-lora writes a PEFT adapter that loads and beats the base on its style", "[train][trainer]") {
  lf::test::temp_dir tmp;
  auto base = tiny_options(tmp, "base");
  base.steps = 15; // a rough base is enough: the adapter has to beat it on its own text
  base.eval_every = 100;
  std::ostringstream log;
  REQUIRE(run_training(base, log).finished);

  auto o = tiny_options(tmp, "adapter");
  o.steps = 20;
  o.eval_every = 100;
  o.corpus_files = {write_text(tmp, "verse.txt", {"thou art", "the lord", "his servant", "thy house"},
                               {"hath blessed", "shall keep", "spake unto"}, 1500)};
  o.base_dir = base.out_dir;
  o.lora_rank = 4;
  o.lora_alpha = 8;
  o.lora_targets = {lora_module::attn_c_attn, lora_module::attn_c_proj, lora_module::mlp_c_fc,
                    lora_module::mlp_c_proj};
  o.weight_decay = 0;
  auto r = run_training(o, log);
  INFO(log.str());
  REQUIRE(r.finished);
  // Step 0 is the base itself (B = 0); the adapter must do better on held-out text of its style.
  CHECK(r.evals.back().mean < r.evals.front().mean - 0.5);

  auto base_cfg = load_gpt2_weights(base.out_dir).config;
  auto a = load_peft_adapter(o.out_dir, base_cfg);
  CHECK(a.rank == 4);
  CHECK(a.alpha == 8.0f);
  CHECK(a.pairs.size() == 2u * 4u);
  CHECK(a.modules().size() == 4);
  bool b_moved = false;
  for (const auto& p : a.pairs)
    for (float v : p.b)
      b_moved = b_moved || v != 0.0f;
  CHECK(b_moved);

  eval_options e;
  e.model_dir = base.out_dir;
  e.tokenizer_dir = base.tokenizer_dir;
  e.corpus_files = o.corpus_files;
  e.context = o.context;
  auto without = evaluate_model(e);
  e.adapter_dir = o.out_dir;
  auto with = evaluate_model(e);
  CHECK(with[0].loss < without[0].loss - 0.5);
}
