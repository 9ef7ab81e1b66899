// The commands of lorafleet-train, the libtorch side of `lorafleet`: `train`, `train-lora` and
// `eval-loss` (training the default model and its adapters) and `make-model` (random checkpoints).
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "tools/train/trainer.hpp"
#include "tools/train/widen_model.hpp"
#include "worker/engine/reference/model_writer.hpp"
#include "worker/engine/reference/weights.hpp"

namespace lf::tools {

namespace fs = std::filesystem;
using namespace lf::train;

namespace {

/// Every --corpus value, each possibly a comma-separated list.
std::vector<std::string> corpus_files(args& a) {
  std::vector<std::string> files;
  for (const auto& v : a.all("corpus")) {
    std::stringstream ss(v);
    for (std::string f; std::getline(ss, f, ',');)
      if (!f.empty())
        files.push_back(f);
  }
  if (files.empty())
    throw std::invalid_argument("missing required --corpus");
  return files;
}

engine::dtype parse_storage(const std::string& s) {
  if (s == "f32")
    return engine::dtype::f32;
  if (s == "f16")
    return engine::dtype::f16;
  if (s == "bf16")
    return engine::dtype::bf16;
  throw std::invalid_argument("--save-dtype must be f32, f16 or bf16 (got '" + s + "')");
}

/// "c_attn,c_proj,c_fc,mlp.c_proj" -> modules, with PEFT's suffix meaning: "c_proj" is both
/// projections, "c_attn" / "c_fc" their only module, "all" (or "all-linear") all four.
std::vector<engine::lora_module> parse_targets(const std::string& list) {
  std::vector<engine::lora_module> out;
  auto add = [&out](engine::lora_module m) {
    if (std::find(out.begin(), out.end(), m) == out.end())
      out.push_back(m);
  };
  std::stringstream ss(list);
  for (std::string t; std::getline(ss, t, ',');) {
    if (t.empty())
      continue;
    if (t == "all" || t == "all-linear") {
      for (auto m : engine::all_lora_modules)
        add(m);
    } else if (t == "c_attn") {
      add(engine::lora_module::attn_c_attn);
    } else if (t == "c_fc") {
      add(engine::lora_module::mlp_c_fc);
    } else if (t == "c_proj") {
      add(engine::lora_module::attn_c_proj);
      add(engine::lora_module::mlp_c_proj);
    } else if (auto m = engine::parse_lora_module(t)) {
      add(*m);
    } else {
      throw std::invalid_argument("unknown LoRA target '" + t
                                  + "' (c_attn, c_proj, c_fc, attn.c_proj, mlp.c_proj, all)");
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

/// The options both training commands share; `lora` picks that command's defaults.
train_options common_options(args& a, bool lora) {
  train_options o;
  o.corpus_files = corpus_files(a);
  o.out_dir = a.required("out");
  o.steps = a.integer("steps", lora ? 600 : 2000);
  o.batch = static_cast<int>(a.integer("batch", 8));
  o.micro_batch = static_cast<int>(a.integer("micro-batch", 0));
  o.lr = a.real("lr", lora ? 1e-3 : 6e-4);
  o.min_lr_ratio = a.real("min-lr-ratio", 0.1);
  o.warmup = a.integer("warmup", lora ? 30 : 100);
  o.weight_decay = a.real("weight-decay", lora ? 0.0 : 0.1);
  o.grad_clip = a.real("grad-clip", 1.0);
  o.dropout = a.real("dropout", 0.0);
  o.val_fraction = a.real("val-fraction", 0.05);
  o.mix_power = a.real("mix-power", 1.0);
  o.eval_every = a.integer("eval-every", lora ? 100 : 250);
  o.eval_tokens = static_cast<std::size_t>(a.integer("eval-tokens", 32768));
  o.save_every = a.integer("save-every", 0);
  o.log_every = a.integer("log-every", 10);
  o.seed = static_cast<std::uint64_t>(a.integer("seed", 1337));
  o.threads = static_cast<int>(a.integer("threads", 0));
  o.prec = parse_precision(a.str("dtype", "bf16"));
  o.save_dtype = parse_storage(a.str("save-dtype", "f32"));
  o.resume = a.has("resume");
  o.stop_after = a.integer("stop-after", 0);
  return o;
}

} // namespace

int cmd_train(int argc, char** argv) {
  args a(argc, argv, 2, {"resume"});
  auto o = common_options(a, false);
  o.config.n_layer = static_cast<int>(a.integer("layers", 4));
  o.config.n_head = static_cast<int>(a.integer("heads", 4));
  o.config.n_embd = static_cast<int>(a.integer("embd", 256));
  o.config.n_positions = static_cast<int>(a.integer("context", 256));
  o.config.n_inner = 4 * o.config.n_embd;
  o.config.validate("lorafleet train");
  o.context = o.config.n_positions;
  o.init_std = a.real("init-std", 0.02);
  o.tokenizer_dir = a.str("tokenizer", default_tokenizer_dir());
  a.finish();
  return run_training(o, std::cout).finished ? 0 : 3;
}

int cmd_train_lora(int argc, char** argv) {
  args a(argc, argv, 2, {"resume"});
  auto o = common_options(a, true);
  o.base_dir = a.required("base");
  auto base = engine::gpt2_config::load((fs::path(o.base_dir) / "config.json").string());
  o.context = static_cast<int>(a.integer("context", base.n_positions));
  o.lora_rank = static_cast<int>(a.integer("rank", 8));
  o.lora_alpha = static_cast<float>(a.real("alpha", 2.0 * o.lora_rank));
  o.lora_targets = parse_targets(a.str("targets", "c_attn,c_proj,c_fc"));
  bool own_vocab = fs::exists(fs::path(o.base_dir) / "vocab.json");
  o.tokenizer_dir = a.str("tokenizer", own_vocab ? o.base_dir : default_tokenizer_dir());
  a.finish();
  return run_training(o, std::cout).finished ? 0 : 3;
}

int cmd_eval_loss(int argc, char** argv) {
  args a(argc, argv, 2);
  eval_options o;
  o.model_dir = a.required("model");
  o.adapter_dir = a.str("adapter");
  o.corpus_files = corpus_files(a);
  auto base = engine::gpt2_config::load((fs::path(o.model_dir) / "config.json").string());
  o.context = static_cast<int>(a.integer("context", base.n_positions));
  o.val_fraction = a.real("val-fraction", 0.05);
  o.eval_tokens = static_cast<std::size_t>(a.integer("eval-tokens", 0));
  o.micro_batch = static_cast<int>(a.integer("micro-batch", 8));
  o.prec = parse_precision(a.str("dtype", "f32"));
  bool own_vocab = fs::exists(fs::path(o.model_dir) / "vocab.json");
  o.tokenizer_dir = a.str("tokenizer", own_vocab ? o.model_dir : default_tokenizer_dir());
  if (auto n = a.integer("threads", 0); n > 0)
    set_train_threads(static_cast<int>(n));
  a.finish();
  auto losses = evaluate_model(o);
  double total = 0;
  std::int64_t count = 0;
  for (const auto& s : losses) {
    std::cout << s.name << "\t" << s.loss << "\t(" << s.tokens << " held-out tokens)\n";
    total += s.loss * static_cast<double>(s.tokens);
    count += s.tokens;
  }
  if (count > 0)
    std::cout << "all\t" << total / static_cast<double>(count) << "\t(" << count << " tokens)\n";
  return 0;
}

int cmd_make_model(int argc, char** argv) {
  args a(argc, argv, 2, {"prefix", "untied"});
  engine::random_model_options o;
  auto out = a.required("out");
  o.config.n_layer = static_cast<int>(a.integer("layers", 2));
  o.config.n_head = static_cast<int>(a.integer("heads", 4));
  o.config.n_embd = static_cast<int>(a.integer("embd", 128));
  o.config.n_positions = static_cast<int>(a.integer("context", 1024));
  o.config.n_inner = 4 * o.config.n_embd;
  o.seed = static_cast<std::uint64_t>(a.integer("seed", 0));
  o.init_std = a.real("init-std", 0.02);
  auto dt = a.str("dtype", "f32");
  o.storage = dt == "f32" ? engine::dtype::f32 : dt == "f16" ? engine::dtype::f16 : dt == "bf16" ? engine::dtype::bf16
            : throw std::invalid_argument("--dtype must be f32, f16 or bf16");
  o.transformer_prefix = a.has("prefix");
  o.tied_lm_head = !a.has("untied");
  o.tokenizer_dir = a.str("tokenizer", default_tokenizer_dir());
  a.finish();
  if (o.config.n_layer < 1 || o.config.n_head < 1 || o.config.n_embd < 1 || o.config.n_positions < 1
      || o.config.n_embd % o.config.n_head != 0)
    throw std::invalid_argument("need layers, heads, embd, context >= 1 and embd divisible by heads");
  engine::write_random_model(out, o);
  std::cout << "wrote " << out << ": " << o.config.n_layer << " layers, " << o.config.n_head
            << " heads, " << o.config.n_embd << " embd, context " << o.config.n_positions << ", "
            << dt << "\n";
  return 0;
}

int cmd_widen_model(int argc, char** argv) {
  args a(argc, argv, 2);
  const auto from = a.required("from");
  const auto out = a.required("out");
  widen_options o;
  o.layers = static_cast<int>(a.integer("layers", 12));
  o.embd = static_cast<int>(a.integer("embd", 768));
  o.context = static_cast<int>(a.integer("context", 1024));
  o.noise = a.real("noise", 0.0);
  o.seed = static_cast<std::uint64_t>(a.integer("seed", 0));
  a.finish();
  if (o.noise < 0)
    throw std::invalid_argument("--noise must be >= 0");
  auto w = widen_gpt2(engine::load_gpt2_weights(from), o);
  engine::save_gpt2_checkpoint(w, out, engine::dtype::f32);
  for (const char* f : {"vocab.json", "merges.txt"})
    if (fs::exists(fs::path(from) / f))
      fs::copy_file(fs::path(from) / f, fs::path(out) / f, fs::copy_options::overwrite_existing);
  std::cout << "wrote " << out << ": " << o.layers << " layers, " << w.config.n_head << " heads, " << o.embd
            << " embd, context " << o.context << ", noise " << o.noise << " (from " << from << ")\n";
  return 0;
}

} // namespace lf::tools
