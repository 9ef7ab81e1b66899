#include "tools/train/train_model.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Parallel.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "tools/train/xent_kernel.hpp"

namespace lf::train {

using engine::gpt2_block_weights;
using engine::gpt2_config;
using engine::gpt2_weights;
using engine::lora_module;

precision parse_precision(const std::string& s) {
  if (s == "f32" || s == "fp32" || s == "float32")
    return precision::f32;
  if (s == "bf16" || s == "bfloat16")
    return precision::bf16;
  throw std::invalid_argument("unknown precision '" + s + "' (expected f32 or bf16)");
}

gpt2_weights init_gpt2(const gpt2_config& cfg, std::uint64_t seed, double init_std) {
  cfg.validate("init_gpt2");
  at::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto f32 = at::TensorOptions().dtype(at::kFloat);
  auto normal = [&](std::vector<std::int64_t> shape, double std) {
    return at::normal(0.0, std, shape, gen, f32);
  };
  const std::int64_t C = cfg.n_embd, V = cfg.vocab_size, P = cfg.n_positions, I = cfg.inner_dim();
  const double resid_std = init_std / std::sqrt(2.0 * cfg.n_layer);
  gpt2_weights w;
  w.config = cfg;
  w.wte = normal({V, C}, init_std);
  w.wpe = normal({P, C}, init_std);
  for (int l = 0; l < cfg.n_layer; ++l) {
    gpt2_block_weights b;
    b.ln_1_w = at::ones({C}, f32);
    b.ln_1_b = at::zeros({C}, f32);
    b.attn_w = normal({C, 3 * C}, init_std);
    b.attn_b = at::zeros({3 * C}, f32);
    b.proj_w = normal({C, C}, resid_std);
    b.proj_b = at::zeros({C}, f32);
    b.ln_2_w = at::ones({C}, f32);
    b.ln_2_b = at::zeros({C}, f32);
    b.fc_w = normal({C, I}, init_std);
    b.fc_b = at::zeros({I}, f32);
    b.mproj_w = normal({I, C}, resid_std);
    b.mproj_b = at::zeros({C}, f32);
    w.blocks.push_back(std::move(b));
  }
  w.ln_f_w = at::ones({C}, f32);
  w.ln_f_b = at::zeros({C}, f32);
  w.lm_head = w.wte;
  return w;
}

gpt2_weights owned_copy(const gpt2_weights& w) {
  at::NoGradGuard no_grad;
  if (!w.lm_head.is_same(w.wte) && !at::equal(w.lm_head, w.wte))
    throw std::invalid_argument("training needs lm_head tied to wte (GPT-2's layout)");
  auto own = [](const at::Tensor& t) { return t.detach().to(at::kFloat).contiguous().clone(); };
  gpt2_weights o;
  o.config = w.config;
  o.wte = own(w.wte);
  o.wpe = own(w.wpe);
  for (const auto& b : w.blocks) {
    gpt2_block_weights c;
    c.ln_1_w = own(b.ln_1_w);
    c.ln_1_b = own(b.ln_1_b);
    c.attn_w = own(b.attn_w);
    c.attn_b = own(b.attn_b);
    c.proj_w = own(b.proj_w);
    c.proj_b = own(b.proj_b);
    c.ln_2_w = own(b.ln_2_w);
    c.ln_2_b = own(b.ln_2_b);
    c.fc_w = own(b.fc_w);
    c.fc_b = own(b.fc_b);
    c.mproj_w = own(b.mproj_w);
    c.mproj_b = own(b.mproj_b);
    o.blocks.push_back(std::move(c));
  }
  o.ln_f_w = own(w.ln_f_w);
  o.ln_f_b = own(w.ln_f_b);
  o.lm_head = o.wte;
  return o;
}

std::vector<at::Tensor> parameter_list(const gpt2_weights& w) {
  std::vector<at::Tensor> p = {w.wte, w.wpe};
  for (const auto& b : w.blocks)
    for (const auto* t : {&b.ln_1_w, &b.ln_1_b, &b.attn_w, &b.attn_b, &b.proj_w, &b.proj_b,
                          &b.ln_2_w, &b.ln_2_b, &b.fc_w, &b.fc_b, &b.mproj_w, &b.mproj_b})
      p.push_back(*t);
  p.push_back(w.ln_f_w);
  p.push_back(w.ln_f_b);
  return p;
}

std::vector<at::Tensor> lora_weights::parameters() const {
  std::vector<at::Tensor> p;
  for (std::size_t l = 0; l < a.size(); ++l)
    for (std::size_t m = 0; m < 4; ++m)
      if (a[l][m].defined()) {
        p.push_back(a[l][m]);
        p.push_back(b[l][m]);
      }
  return p;
}

lora_weights init_lora(const gpt2_config& base, int rank, float alpha,
                       const std::vector<lora_module>& targets, std::uint64_t seed) {
  if (rank <= 0)
    throw std::invalid_argument("LoRA rank must be positive, got " + std::to_string(rank));
  if (targets.empty())
    throw std::invalid_argument("LoRA needs at least one target module");
  at::NoGradGuard no_grad;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  lora_weights l;
  l.rank = rank;
  l.alpha = alpha;
  l.a.resize(static_cast<std::size_t>(base.n_layer));
  l.b.resize(static_cast<std::size_t>(base.n_layer));
  for (int layer = 0; layer < base.n_layer; ++layer)
    for (auto m : engine::all_lora_modules) {
      if (std::find(targets.begin(), targets.end(), m) == targets.end())
        continue;
      auto d = engine::module_dims(base, m);
      const double bound = 1.0 / std::sqrt(static_cast<double>(d.in));
      auto idx = static_cast<std::size_t>(m);
      l.a[static_cast<std::size_t>(layer)][idx] =
        at::empty({rank, d.in}, at::kFloat).uniform_(-bound, bound, gen);
      l.b[static_cast<std::size_t>(layer)][idx] = at::zeros({d.out, rank}, at::kFloat);
    }
  return l;
}

lora_weights lora_from_adapter(const engine::lora_adapter& a, const gpt2_config& base) {
  a.validate(base);
  lora_weights l;
  l.rank = a.rank;
  l.alpha = a.alpha;
  l.rslora = a.use_rslora;
  l.a.resize(static_cast<std::size_t>(base.n_layer));
  l.b.resize(static_cast<std::size_t>(base.n_layer));
  auto tensor = [](const std::vector<float>& v, std::int64_t rows, std::int64_t cols) {
    return at::from_blob(const_cast<float*>(v.data()), {rows, cols}, at::kFloat).clone();
  };
  for (const auto& p : a.pairs) {
    auto idx = static_cast<std::size_t>(p.module);
    l.a[static_cast<std::size_t>(p.layer)][idx] = tensor(p.a, p.rank, p.in);
    l.b[static_cast<std::size_t>(p.layer)][idx] = tensor(p.b, p.out, p.rank);
  }
  return l;
}

engine::lora_adapter lora_to_adapter(const lora_weights& l, const std::string& name) {
  engine::lora_adapter out;
  out.name = name;
  out.rank = l.rank;
  out.alpha = l.alpha;
  out.use_rslora = l.rslora;
  auto values = [](const at::Tensor& t) {
    auto c = t.detach().to(at::kFloat).contiguous();
    const float* p = c.data_ptr<float>();
    return std::vector<float>(p, p + c.numel());
  };
  for (std::size_t layer = 0; layer < l.a.size(); ++layer)
    for (std::size_t m = 0; m < 4; ++m) {
      const auto& a = l.a[layer][m];
      if (!a.defined())
        continue;
      engine::lora_pair p;
      p.layer = static_cast<int>(layer);
      p.module = static_cast<lora_module>(m);
      p.rank = l.rank;
      p.in = a.size(1);
      p.out = l.b[layer][m].size(0);
      p.a = values(a);
      p.b = values(l.b[layer][m]);
      out.pairs.push_back(std::move(p));
    }
  return out;
}

at::Tensor forward_hidden(const gpt2_weights& w, const at::Tensor& ids, const forward_options& opts) {
  const auto& cfg = w.config;
  if (ids.dim() != 2)
    throw std::invalid_argument("forward_hidden: ids must be [B, T]");
  const std::int64_t B = ids.size(0), T = ids.size(1);
  const std::int64_t C = cfg.n_embd, H = cfg.n_head, D = cfg.head_dim();
  if (T > cfg.n_positions)
    throw std::invalid_argument("forward_hidden: " + std::to_string(T)
                                + " tokens exceed the context of " + std::to_string(cfg.n_positions));
  const bool bf = opts.prec == precision::bf16;
  auto cast = [bf](const at::Tensor& t) { return bf ? t.to(at::kBFloat16) : t; };
  auto drop = [&opts](const at::Tensor& t) {
    return opts.training && opts.dropout > 0 ? at::dropout(t, opts.dropout, true) : t;
  };
  const double eps = cfg.layer_norm_epsilon;
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  const char* approx = cfg.exact_gelu() ? "none" : "tanh";
  const auto* lora = opts.lora;
  // y = x W + b (+ scale * x A^T B^T): the engine's addmm, with the adapter's delta.
  auto linear = [&](const at::Tensor& x, const at::Tensor& weight, const at::Tensor& bias,
                    int layer, lora_module m) {
    auto y = at::addmm(cast(bias), x, cast(weight));
    if (lora != nullptr) {
      auto idx = static_cast<std::size_t>(m);
      const auto& a = lora->a[static_cast<std::size_t>(layer)][idx];
      if (a.defined()) {
        const auto& b = lora->b[static_cast<std::size_t>(layer)][idx];
        y = y + at::mm(at::mm(x, cast(a).t()), cast(b).t()).mul(lora->scale());
      }
    }
    return y;
  };
  auto x = w.wte.index_select(0, ids.reshape({B * T}).to(at::kLong)).view({B, T, C})
           + w.wpe.narrow(0, 0, T).unsqueeze(0);
  x = drop(x).reshape({B * T, C});
  auto mask = at::full({T, T}, -std::numeric_limits<float>::infinity(), at::kFloat).triu(1);
  auto heads = [&](const at::Tensor& qkv, int i) {
    return qkv.narrow(1, i * C, C).view({B, T, H, D}).transpose(1, 2); // [B, H, T, D]
  };
  for (int l = 0; l < cfg.n_layer; ++l) {
    const auto& b = w.blocks[static_cast<std::size_t>(l)];
    auto h = cast(at::layer_norm(x, {C}, b.ln_1_w, b.ln_1_b, eps));
    auto qkv = linear(h, b.attn_w, b.attn_b, l, lora_module::attn_c_attn);
    auto scores = at::matmul(heads(qkv, 0), heads(qkv, 1).transpose(2, 3));
    auto probs = at::softmax(scores.to(at::kFloat).mul(scale).add(mask), -1);
    auto att = at::matmul(cast(probs), heads(qkv, 2)).transpose(1, 2).reshape({B * T, C});
    x = x + drop(linear(att, b.proj_w, b.proj_b, l, lora_module::attn_c_proj).to(at::kFloat));
    h = cast(at::layer_norm(x, {C}, b.ln_2_w, b.ln_2_b, eps));
    auto m = at::gelu(linear(h, b.fc_w, b.fc_b, l, lora_module::mlp_c_fc), approx);
    x = x + drop(linear(m, b.mproj_w, b.mproj_b, l, lora_module::mlp_c_proj).to(at::kFloat));
  }
  return at::layer_norm(x, {C}, w.ln_f_w, w.ln_f_b, eps);
}

namespace {

at::ScalarType compute_type(const forward_options& opts) {
  return opts.prec == precision::bf16 ? at::kBFloat16 : at::kFloat;
}

} // namespace

at::Tensor forward_logits(const gpt2_weights& w, const at::Tensor& ids, const forward_options& opts) {
  auto h = forward_hidden(w, ids, opts);
  const auto type = compute_type(opts);
  const auto& head = w.lm_head.defined() ? w.lm_head : w.wte;  // untied checkpoints have their own
  return at::mm(h.to(type), head.to(type).t())
    .to(at::kFloat)
    .view({ids.size(0), ids.size(1), w.config.vocab_size});
}

double fused_xent_(at::Tensor& logits, const at::Tensor& targets, double grad_scale,
                   bool write_grad) {
  if (logits.dim() != 2 || !logits.is_contiguous() || targets.dim() != 1
      || targets.size(0) != logits.size(0) || targets.scalar_type() != at::kLong)
    throw std::invalid_argument("fused_xent_: need contiguous logits [N, V] and int64 targets [N]");
  const std::int64_t n = logits.size(0), vocab = logits.size(1);
  auto tc = targets.contiguous();
  const std::int64_t* tgt = tc.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i)
    if (tgt[i] < 0 || tgt[i] >= vocab)
      throw std::invalid_argument("fused_xent_: target " + std::to_string(tgt[i])
                                  + " outside the vocabulary of " + std::to_string(vocab));
  const bool bf16 = logits.scalar_type() == at::kBFloat16;
  if (!bf16 && logits.scalar_type() != at::kFloat)
    throw std::invalid_argument("fused_xent_: logits must be float32 or bfloat16");
  std::vector<double> partial(static_cast<std::size_t>(n), 0.0);
  const auto scale = static_cast<float>(grad_scale);
  at::parallel_for(0, n, 1, [&](std::int64_t begin, std::int64_t end) {
    std::vector<float> scratch(static_cast<std::size_t>(vocab));
    // One row at a time so each thread's partial sum lands in its own slot.
    for (std::int64_t r = begin; r < end; ++r)
      partial[static_cast<std::size_t>(r)] =
        bf16 ? xent_rows_bf16(reinterpret_cast<std::uint16_t*>(logits.data_ptr<at::BFloat16>()),
                              vocab, tgt, r, r + 1, scale, write_grad, scratch.data())
             : xent_rows_f32(logits.data_ptr<float>(), vocab, tgt, r, r + 1, scale, write_grad,
                             scratch.data());
  });
  double total = 0;
  for (double p : partial)
    total += p;
  return total;
}

double train_backward(const gpt2_weights& w, const at::Tensor& windows,
                      const forward_options& opts, double loss_scale, at::Tensor* workspace) {
  if (windows.dim() != 2 || windows.size(1) < 2)
    throw std::invalid_argument("train_backward: windows must be [B, T + 1] with T >= 1");
  const std::int64_t T = windows.size(1) - 1;
  auto ids = windows.narrow(1, 0, T);
  auto targets = windows.narrow(1, 1, T).reshape({-1}).to(at::kLong);
  auto h = forward_hidden(w, ids, opts);
  const auto type = compute_type(opts);
  const std::int64_t n = h.size(0), vocab = w.config.vocab_size;
  at::NoGradGuard no_grad;
  auto hc = h.detach().to(type);
  auto head = w.wte.detach().to(type);
  at::Tensor g;
  if (workspace != nullptr && workspace->defined() && workspace->scalar_type() == type
      && workspace->numel() >= n * vocab)
    g = workspace->flatten().narrow(0, 0, n * vocab).view({n, vocab});
  else
    g = at::empty({n, vocab}, at::TensorOptions().dtype(type));
  if (workspace != nullptr)
    *workspace = g;
  // Logits chunk by chunk, each turned into its gradient while it is still in cache.
  double loss = 0;
  constexpr std::int64_t chunk = 128;
  for (std::int64_t r = 0; r < n; r += chunk) {
    const auto rows = std::min(chunk, n - r);
    auto gc = g.narrow(0, r, rows);
    at::mm_out(gc, hc.narrow(0, r, rows), head.t());
    loss += fused_xent_(gc, targets.narrow(0, r, rows), loss_scale / static_cast<double>(n), true);
  }
  auto grad_h = at::mm(g, head).to(at::kFloat);
  {
    at::AutoGradMode grad_mode(true);
    h.backward(grad_h);
  }
  if (w.wte.requires_grad()) {
    auto grad_head = at::mm(g.t(), hc).to(at::kFloat); // tied: lm_head's share of wte's gradient
    auto& grad = w.wte.mutable_grad();
    if (grad.defined())
      grad.add_(grad_head);
    else
      grad = grad_head;
  }
  return loss / static_cast<double>(n);
}

namespace {

at::Tensor window_loss(const gpt2_weights& w, const at::Tensor& windows,
                       const forward_options& opts, std::int64_t reduction) {
  if (windows.dim() != 2 || windows.size(1) < 2)
    throw std::invalid_argument("lm_loss: windows must be [B, T + 1] with T >= 1");
  const std::int64_t T = windows.size(1) - 1;
  auto ids = windows.narrow(1, 0, T);
  auto targets = windows.narrow(1, 1, T).reshape({-1}).to(at::kLong);
  auto logits = forward_logits(w, ids, opts);
  return at::cross_entropy_loss(logits.view({-1, logits.size(2)}), targets, {}, reduction);
}

} // namespace

at::Tensor lm_loss(const gpt2_weights& w, const at::Tensor& windows, const forward_options& opts) {
  return window_loss(w, windows, opts, at::Reduction::Mean);
}

std::pair<double, std::int64_t> sum_loss(const gpt2_weights& w,
                                         const std::vector<std::int32_t>& windows, int length,
                                         int micro_batch, const forward_options& opts) {
  at::NoGradGuard no_grad;
  if (length < 2 || micro_batch < 1)
    return {0.0, 0};
  const auto rows = static_cast<std::int64_t>(windows.size()) / length;
  auto all = at::from_blob(const_cast<std::int32_t*>(windows.data()), {rows, length}, at::kInt);
  auto eval = opts;
  eval.training = false;
  const auto type = compute_type(opts);
  auto head = (w.lm_head.defined() ? w.lm_head : w.wte).to(type);  // wte itself when tied
  double total = 0;
  for (std::int64_t r = 0; r < rows; r += micro_batch) {
    auto n = std::min<std::int64_t>(micro_batch, rows - r);
    auto win = all.narrow(0, r, n).to(at::kLong);
    auto h = forward_hidden(w, win.narrow(1, 0, length - 1), eval);
    auto logits = at::mm(h.to(type), head.t());
    total += fused_xent_(logits, win.narrow(1, 1, length - 1).reshape({-1}), 0.0, false);
  }
  return {total, rows * (length - 1)};
}

} // namespace lf::train
