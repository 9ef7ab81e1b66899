// The training loop: AdamW over the base model or LoRA factors, checkpoints and resume. One of the
// two files of the project that include <torch/torch.h> (for torch::optim and its serialization).
#include "tools/train/trainer.hpp"

#include <torch/torch.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "text/tokenizer.hpp"
#include "tools/train/corpus.hpp"
#include "tools/train/evaluate.hpp"
#include "tools/train/schedule.hpp"
#include "tools/train/train_model.hpp"
#include "worker/engine/reference/model_writer.hpp"

namespace lf::train {

namespace fs = std::filesystem;

namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void check_options(const train_options& o) {
  auto fail = [](const std::string& m) { throw std::invalid_argument(m); };
  if (o.corpus_files.empty())
    fail("no corpus files (--corpus)");
  if (o.out_dir.empty())
    fail("no output directory (--out)");
  if (o.steps < 1 || o.batch < 1 || o.context < 1)
    fail("steps, batch and context must be positive");
  const int micro = o.micro_batch > 0 ? o.micro_batch : o.batch;
  if (o.batch % micro != 0)
    fail("batch (" + std::to_string(o.batch) + ") must be a multiple of micro-batch ("
         + std::to_string(micro) + ")");
  if (!(o.lr > 0) || o.warmup < 0 || o.eval_every < 1 || o.log_every < 1 || o.save_every < 0)
    fail("need lr > 0, warmup >= 0, eval-every >= 1, log-every >= 1, save-every >= 0");
  if (!(o.dropout >= 0 && o.dropout < 1))
    fail("dropout must be within [0, 1)");
  if (!o.base_dir.empty() && (o.lora_rank < 1 || o.lora_targets.empty()))
    fail("LoRA needs rank >= 1 and at least one target module");
}

/// What a run trains: the whole base model, or LoRA factors on a frozen base.
struct trainee {
  engine::gpt2_weights w;
  lora_weights lora;
  bool is_lora = false;

  std::vector<at::Tensor> params() const { return is_lora ? lora.parameters() : parameter_list(w); }
};

/// Progress of a run, stored as checkpoint/train_state.json.
struct run_state {
  std::int64_t step = 0;      ///< Optimizer steps done.
  double elapsed = 0;         ///< Training seconds over all invocations.
  std::uint64_t tokens = 0;   ///< Training tokens seen over all invocations.
};

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  if (!out.flush())
    throw std::runtime_error(path.string() + ": cannot write");
}

void save_trainee(const trainee& t, const train_options& o, const fs::path& dir, engine::dtype storage) {
  at::NoGradGuard no_grad;
  if (t.is_lora)
    engine::write_peft_adapter(dir.string(), lora_to_adapter(t.lora, fs::path(o.out_dir).filename().string()),
                               storage, o.base_dir);
  else
    engine::save_gpt2_checkpoint(t.w, dir.string(), storage);
}

/// Writes weights, optimizer state and run state to OUT/checkpoint.tmp, then swaps it in for
/// OUT/checkpoint, so an interrupted save leaves the previous checkpoint whole.
void save_checkpoint(const trainee& t, const train_options& o, torch::optim::AdamW& opt,
                     const run_state& st) {
  const fs::path out(o.out_dir);
  const auto dir = out / "checkpoint", tmp = out / "checkpoint.tmp", old = out / "checkpoint.old";
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  save_trainee(t, o, tmp, engine::dtype::f32);
  torch::save(opt, (tmp / "optimizer.pt").string());
  nlohmann::json j;
  j["kind"] = t.is_lora ? "lora" : "base";
  j["step"] = st.step;
  j["elapsed_s"] = st.elapsed;
  j["tokens"] = st.tokens;
  j["steps"] = o.steps;
  j["batch"] = o.batch;
  j["context"] = o.context;
  j["lr"] = o.lr;
  j["seed"] = o.seed;
  write_text(tmp / "train_state.json", j.dump(2) + "\n");
  fs::remove_all(old);
  if (fs::exists(dir))
    fs::rename(dir, old);
  fs::rename(tmp, dir);
  fs::remove_all(old);
}

run_state read_state(const fs::path& dir, bool is_lora) {
  auto path = dir / "train_state.json";
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error(path.string() + ": no checkpoint to resume from");
  auto j = nlohmann::json::parse(in);
  if (j.at("kind").get<std::string>() != (is_lora ? "lora" : "base"))
    throw std::runtime_error(path.string() + ": checkpoint is a " + j.at("kind").get<std::string>()
                             + " run, not a " + (is_lora ? "LoRA" : "base model") + " run");
  run_state st;
  st.step = j.at("step").get<std::int64_t>();
  st.elapsed = j.value("elapsed_s", 0.0);
  st.tokens = j.value("tokens", std::uint64_t{0});
  return st;
}

trainee load_trainee(const train_options& o, const fs::path& ckpt) {
  trainee t;
  t.is_lora = !o.base_dir.empty();
  if (t.is_lora) {
    t.w = owned_copy(engine::load_gpt2_weights(o.base_dir));
    t.lora = o.resume ? lora_from_adapter(engine::load_peft_adapter(ckpt.string(), t.w.config), t.w.config)
                      : init_lora(t.w.config, o.lora_rank, o.lora_alpha, o.lora_targets, o.seed);
  } else {
    t.w = o.resume ? owned_copy(engine::load_gpt2_weights(ckpt.string()))
                   : init_gpt2(o.config, o.seed, o.init_std);
    for (auto& p : parameter_list(t.w))
      p.requires_grad_(true);
  }
  for (auto& p : t.lora.parameters())
    p.requires_grad_(true);
  return t;
}

torch::optim::AdamW make_optimizer(const trainee& t, const train_options& o) {
  std::vector<at::Tensor> decay, rest;
  for (auto& p : t.params())
    (p.dim() >= 2 ? decay : rest).push_back(p);
  auto base = torch::optim::AdamWOptions(o.lr).betas({o.beta1, o.beta2}).eps(1e-8);
  std::vector<torch::optim::OptimizerParamGroup> groups;
  auto with_decay = base;
  with_decay.weight_decay(o.weight_decay);
  groups.emplace_back(decay, std::make_unique<torch::optim::AdamWOptions>(with_decay));
  if (!rest.empty()) {
    auto no_decay = base;
    no_decay.weight_decay(0.0);
    groups.emplace_back(rest, std::make_unique<torch::optim::AdamWOptions>(no_decay));
  }
  return torch::optim::AdamW(std::move(groups), base);
}

void log_setup(std::ostream& log, const corpus& c, const trainee& t, const train_options& o) {
  for (std::size_t i = 0; i < c.streams.size(); ++i) {
    const auto& s = c.streams[i];
    log << "corpus " << s.name << ": " << s.train_size() << " training + " << s.val_size()
        << " held-out tokens, drawn " << std::lround(100 * c.weights[i]) << "% of the time\n";
  }
  std::int64_t n = 0;
  for (auto& p : t.params())
    n += p.numel();
  const auto per_step = static_cast<double>(o.batch) * o.context;
  log << (t.is_lora ? "LoRA" : "model") << ": " << n << " trainable parameters; " << t.w.config.n_layer
      << " layers, " << t.w.config.n_head << " heads, " << t.w.config.n_embd << " embd; "
      << per_step << " tokens per step, " << per_step * static_cast<double>(o.steps) / 1e6
      << "M tokens in " << o.steps << " steps (" << per_step * static_cast<double>(o.steps) /
      static_cast<double>(c.train_tokens()) << " epochs)" << std::endl;
}

} // namespace

train_result run_training(const train_options& o, std::ostream& log) {
  check_options(o);
  set_train_threads(o.threads);
  const fs::path out(o.out_dir), ckpt = fs::path(o.out_dir) / "checkpoint";
  fs::create_directories(out);

  auto t0 = now_seconds();
  auto tok = text::tokenizer::from_dir(o.tokenizer_dir);
  auto data = load_corpus(o.corpus_files, tok, o.val_fraction, o.mix_power, o.context);
  log << "tokenized " << data.streams.size() << " files in " << format_duration(now_seconds() - t0)
      << "\n";

  run_state st;
  if (o.resume)
    st = read_state(ckpt, !o.base_dir.empty());
  trainee t = load_trainee(o, ckpt);
  if (o.context > t.w.config.n_positions)
    throw std::invalid_argument("context " + std::to_string(o.context) + " exceeds the model's "
                                + std::to_string(t.w.config.n_positions) + " positions");
  auto opt = make_optimizer(t, o);
  if (o.resume) {
    torch::load(opt, (ckpt / "optimizer.pt").string());
    log << "resuming at step " << st.step << " from " << ckpt.string() << "\n";
  }
  log_setup(log, data, t, o);

  const int micro = o.micro_batch > 0 ? o.micro_batch : o.batch;
  const int accum = o.batch / micro;
  lr_schedule sched{o.lr, o.min_lr_ratio, o.warmup, o.steps};
  forward_options fo;
  fo.prec = o.prec;
  fo.dropout = o.dropout;
  fo.training = true;
  fo.lora = t.is_lora ? &t.lora : nullptr;
  auto params = t.params();
  at::Tensor workspace; // the logits buffer, reused every step
  auto run_eval = [&](std::int64_t step) {
    auto r = validate(t.w, fo.lora, data, o.context, o.eval_tokens, micro, o.prec, step);
    log << format_eval(r) << std::endl;
    return r;
  };

  train_result res;
  res.first_step = st.step;
  if (st.step == 0)
    res.evals.push_back(run_eval(0));
  const double start = now_seconds(), elapsed_before = st.elapsed;
  progress_meter meter(st.step, o.steps, start);
  std::int64_t ran = 0;
  const auto save_every = o.save_every > 0 ? o.save_every : o.eval_every;
  while (st.step < o.steps) {
    const auto step = st.step;
    const double lr = sched.at(step);
    for (auto& g : opt.param_groups())
      static_cast<torch::optim::AdamWOptions&>(g.options()).lr(lr);
    opt.zero_grad();
    double loss_sum = 0;
    for (int m = 0; m < accum; ++m) {
      auto rows = sample_windows(data, o.seed, step, m, micro, o.context);
      auto windows = at::from_blob(rows.data(), {micro, o.context + 1}, at::kInt).to(at::kLong);
      loss_sum += train_backward(t.w, windows, fo, 1.0 / accum, &workspace);
    }
    const double loss = loss_sum / accum;
    if (!std::isfinite(loss))
      throw std::runtime_error("loss is " + std::to_string(loss) + " at step " + std::to_string(step)
                               + "; try a lower --lr");
    double grad_norm = o.grad_clip > 0 ? torch::nn::utils::clip_grad_norm_(params, o.grad_clip)
                                       : std::nan("");
    opt.step();
    ++st.step;
    ++ran;
    const auto tokens = static_cast<std::size_t>(o.batch) * static_cast<std::size_t>(o.context);
    st.tokens += tokens;
    meter.record(step, tokens, now_seconds());
    res.last_train_loss = loss;
    const bool last = st.step == o.steps, stopping = o.stop_after > 0 && ran >= o.stop_after;
    if (st.step % o.log_every == 0 || last || stopping)
      log << meter.line(loss, lr, grad_norm) << std::endl;
    if (st.step % o.eval_every == 0 || last)
      res.evals.push_back(run_eval(st.step));
    if (st.step % save_every == 0 || last || stopping) {
      st.elapsed = elapsed_before + (now_seconds() - start);
      save_checkpoint(t, o, opt, st);
    }
    if (stopping)
      break;
  }
  res.steps_done = st.step;
  res.seconds = now_seconds() - start;
  res.tokens_per_second = meter.tokens_per_second();
  if (st.step >= o.steps) {
    save_trainee(t, o, out, o.save_dtype);
    if (!t.is_lora)
      for (const char* f : {"vocab.json", "merges.txt"}) {
        fs::copy_file(fs::path(o.tokenizer_dir) / f, out / f, fs::copy_options::overwrite_existing);
        // The source may be read-only; the copy must stay replaceable by the next run.
        fs::permissions(out / f, fs::perms::owner_write, fs::perm_options::add);
      }
    res.finished = true;
    log << "wrote " << out.string() << " (" << engine::to_string(o.save_dtype) << ") after "
        << st.step << " steps, " << format_duration(res.seconds) << " in this run, "
        << std::lround(res.tokens_per_second) << " tok/s" << std::endl;
  } else {
    log << "stopped at step " << st.step << " of " << o.steps << "; continue with --resume"
        << std::endl;
  }
  return res;
}

} // namespace lf::train
