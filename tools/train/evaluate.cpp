#include "tools/train/evaluate.hpp"

#include <ATen/Parallel.h>

#include <cstdio>
#include <stdexcept>

#include "text/tokenizer.hpp"

namespace lf::train {

int set_train_threads(int n) {
  if (n > 0)
    at::set_num_threads(n);
  return at::get_num_threads();
}

eval_record validate(const engine::gpt2_weights& w, const lora_weights* lora, const corpus& c,
                     int context, std::size_t eval_tokens, int micro_batch, precision prec,
                     std::int64_t step) {
  forward_options fo;
  fo.prec = prec;
  fo.lora = lora;
  eval_record r;
  r.step = step;
  double total = 0;
  std::int64_t count = 0;
  for (const auto& s : c.streams) {
    auto windows = validation_windows(s, context, eval_tokens);
    auto [sum, n] = sum_loss(w, windows.tokens, windows.length, micro_batch, fo);
    r.streams.push_back({s.name, n > 0 ? sum / static_cast<double>(n) : 0.0, n});
    total += sum;
    count += n;
  }
  r.mean = count > 0 ? total / static_cast<double>(count) : 0.0;
  return r;
}

std::string format_eval(const eval_record& r) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "val step %lld | loss %.4f", static_cast<long long>(r.step), r.mean);
  std::string out = buf;
  for (const auto& s : r.streams) {
    std::snprintf(buf, sizeof buf, " | %s %.4f (%lld tok)", s.name.c_str(), s.loss,
                  static_cast<long long>(s.tokens));
    out += buf;
  }
  return out;
}

std::vector<stream_loss> evaluate_model(const eval_options& o) {
  if (o.corpus_files.empty())
    throw std::invalid_argument("no corpus files to evaluate on");
  auto tok = text::tokenizer::from_dir(o.tokenizer_dir);
  auto w = engine::load_gpt2_weights(o.model_dir);
  if (o.context < 1 || o.context > w.config.n_positions)
    throw std::invalid_argument("context must be within 1.." + std::to_string(w.config.n_positions));
  lora_weights lora;
  bool has_lora = !o.adapter_dir.empty();
  if (has_lora)
    lora = lora_from_adapter(engine::load_peft_adapter(o.adapter_dir, w.config), w.config);
  // make_corpus wants a training part of one window; evaluation only needs the tail.
  std::vector<token_stream> streams;
  for (const auto& f : o.corpus_files) {
    auto one = load_corpus({f}, tok, o.val_fraction, 1.0, 1);
    streams.push_back(std::move(one.streams.front()));
  }
  corpus c;
  c.streams = std::move(streams);
  return validate(w, has_lora ? &lora : nullptr, c, o.context, o.eval_tokens, o.micro_batch, o.prec, 0)
    .streams;
}

} // namespace lf::train
