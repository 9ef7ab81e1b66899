// `lorafleet make-adapter`: a random PEFT LoRA adapter for a base model (tests, demos, benchmarks).
#include <iostream>

#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"
#include "worker/engine/checkpoint/gpt2_config.hpp"
#include "worker/engine/lora/lora_adapter.hpp"

namespace lf::tools {

using namespace lf::engine;

int cmd_make_adapter(int argc, char** argv) {
  args a(argc, argv, 2, {"rslora"});
  const auto base_dir = a.required("base");
  const auto out = a.required("out");
  const auto rank = a.integer("rank", 8);
  const auto alpha = a.real("alpha", 2.0 * static_cast<double>(rank));
  const auto targets = parse_lora_targets(a.str("targets", "c_attn,c_proj,c_fc,mlp.c_proj"));
  const auto seed = static_cast<std::uint64_t>(a.integer("seed", 0));
  const auto init_std = a.real("init-std", 0.02);
  const auto dt = a.str("dtype", "f32");
  const bool rslora = a.has("rslora");
  a.finish();
  if (rank < 1 || rank > 4096)
    throw std::invalid_argument("--rank must be in [1, 4096]");
  const dtype storage = dt == "f32"    ? dtype::f32
                        : dt == "f16"  ? dtype::f16
                        : dt == "bf16" ? dtype::bf16
                                       : throw std::invalid_argument("--dtype must be f32, f16 or bf16");
  const auto base = gpt2_config::load(base_dir + "/config.json");
  auto adapter = make_random_adapter(base, static_cast<int>(rank), static_cast<float>(alpha),
                                     targets, seed, static_cast<float>(init_std));
  adapter.use_rslora = rslora;
  write_peft_adapter(out, adapter, storage, base_dir);
  std::cout << "wrote " << out << ": rank " << rank << ", alpha " << alpha << " (scale "
            << adapter.scale() << "), targets";
  for (auto m : adapter.modules())
    std::cout << " " << to_string(m);
  std::cout << ", " << base.n_layer << " layers, " << adapter.bytes() / 1024 << " KiB as f32\n";
  return 0;
}

} // namespace lf::tools
