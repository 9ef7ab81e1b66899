// cuda_logits: the last position's logits of prompts on the CUDA engine and on the CPU engine's
// f32 path, for tools/check_cuda_vs_hf.py (which compares them with transformers and PEFT).
//
//   cuda_logits --model DIR --prompts FILE --out FILE [--adapter DIR] [--device N]
//
// FILE holds one prompt per line, token ids separated by spaces. Writes the GPU's logits as raw
// little-endian f32, one row of vocab_size per prompt, and prints each prompt's largest
// |GPU - CPU| difference.
#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>

#include "tools/common/args.hpp"
#include "worker/engine/model/cpu_lora.hpp"
#include "worker/engine/model/cpu_model.hpp"
#include "worker/engine/model/cpu_runner.hpp"
#include "worker/engine/cuda/cuda_engine.hpp"

using namespace lf;
using namespace lf::engine;

int main(int argc, char** argv) try {
  tools::args a(argc, argv, 1);
  const auto model = a.str("model", "");
  const auto prompts_path = a.str("prompts", "");
  const auto out_path = a.str("out", "");
  const auto adapter_dir = a.str("adapter", "");
  const int device = static_cast<int>(a.integer_in("device", 0, 0, 64));
  a.finish();
  if (model.empty() || prompts_path.empty() || out_path.empty())
    throw std::invalid_argument("--model, --prompts and --out are needed");
  std::vector<std::vector<std::int32_t>> prompts;
  std::ifstream in(prompts_path);
  for (std::string line; std::getline(in, line);) {
    std::stringstream ss(line);
    std::vector<std::int32_t> p;
    for (std::int32_t t; ss >> t;)
      p.push_back(t);
    if (!p.empty())
      prompts.push_back(std::move(p));
  }
  const auto cfg = gpt2_config::load(model + "/config.json");
  std::shared_ptr<const cpu_lora> adapter;
  if (!adapter_dir.empty())
    adapter = std::make_shared<cpu_lora>(load_peft_adapter(adapter_dir, cfg), cfg);
  const auto id = adapter ? cache::adapter_id{1} : cache::base_model;
  cache::adapter_lookup_fn lookup = [&](cache::adapter_id) -> std::shared_ptr<const cache::adapter_payload> {
    return adapter;
  };
  const int bs = 16;
  const auto blocks = static_cast<std::uint32_t>((cfg.n_positions + bs - 1) / bs);
  cuda_options o;
  o.device = device;
  o.block_size = bs;
  o.num_blocks = blocks;
  auto gpu = make_cuda_engine(model, o, lookup);
  cpu_model cm(load_cpu_weights(model, compute_dtype::f32), 4);
  kernels::kv_cache kv(kv_shape_of(cfg, bs, blocks, kernels::kv_type::f32));
  cpu_runner cpu(cm, kv, lookup);
  std::vector<cache::block_id> table;
  for (std::uint32_t b = 0; b < blocks; ++b)
    table.emplace_back(b);
  std::ofstream out(out_path, std::ios::binary);
  const auto V = gpu->vocab_size();
  double worst = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    const auto& p = prompts[i];
    std::vector<engine_chunk> chunk{{p.data(), 0, static_cast<std::int64_t>(p.size()), &table, true, id}};
    gpu->step(chunk);
    cpu.step(chunk);
    const float* g = gpu->logits(0);
    const float* c = cpu.logits(0);
    double d = 0;
    for (std::size_t k = 0; k < V; ++k)
      d = std::max(d, std::fabs(static_cast<double>(g[k]) - c[k]));
    worst = std::max(worst, d);
    std::cout << "prompt " << i << " (" << p.size() << " tokens): largest |gpu - cpu| " << d << "\n";
    out.write(reinterpret_cast<const char*>(g), static_cast<std::streamsize>(V * sizeof(float)));
  }
  std::cout << "largest |gpu - cpu| over " << prompts.size() << " prompts: " << worst << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "cuda_logits: " << e.what() << "\n";
  return 1;
}
