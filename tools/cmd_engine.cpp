// `lorafleet generate`, `tokenize` and `make-model`: the engine on the command line.
#include <filesystem>
#include <iostream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tools/args.hpp"
#include "tools/commands.hpp"
#include "tools/sampling_flags.hpp"
#include "worker/engine/generator.hpp"
#include "worker/engine/gpt2_model.hpp"
#include "worker/engine/lora_weights.hpp"
#include "worker/engine/model_writer.hpp"
#include "worker/engine/tokenizer.hpp"

namespace lf::tools {

namespace fs = std::filesystem;
using namespace lf::engine;

const char* default_tokenizer_dir() { return LF_DEFAULT_TOKENIZER_DIR; }

namespace {

/// The model directory's own vocab.json/merges.txt, else the repository's.
tokenizer load_tokenizer(const std::string& model_dir) {
  if (!model_dir.empty() && fs::exists(fs::path(model_dir) / "vocab.json"))
    return tokenizer::from_dir(model_dir);
  return tokenizer::from_dir(default_tokenizer_dir());
}

/// Loads the adapters of `--adapter` (one for every prompt, or one per prompt; "-" or "none" is
/// the base model) and sets each row's id. A value is a directory, or with `--adapters ROOT` a
/// name under ROOT. Returns the lookup for generate_options::adapters.
cache::adapter_lookup_fn load_row_adapters(const std::vector<std::string>& values,
                                           const std::string& root, const gpt2_model& model,
                                           std::vector<generation_request>& batch) {
  if (values.empty())
    return {};
  if (values.size() != 1 && values.size() != batch.size())
    throw std::invalid_argument("give one --adapter for every prompt or one per prompt ("
                                + std::to_string(batch.size()) + "); '-' is the base model");
  std::map<std::string, cache::adapter_id> ids;
  std::map<cache::adapter_id, std::shared_ptr<const lora_weights>> loaded;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const auto& v = values[values.size() == 1 ? 0 : i];
    if (v == "-" || v == "none")
      continue;
    auto [it, fresh] = ids.emplace(v, cache::adapter_id{static_cast<std::uint32_t>(ids.size() + 1)});
    if (fresh) {
      // A directory that exists is used as given; otherwise a name under --adapters ROOT.
      const auto dir = root.empty() || fs::is_directory(v) ? v : resolve_adapter_path(root, v).string();
      auto a = load_peft_adapter(dir, model.config());
      auto w = std::make_shared<const lora_weights>(a, model.config(), model.scalar_type());
      std::cerr << "adapter " << v << ": rank " << w->rank() << ", scale " << w->scale() << ", "
                << a.modules().size() << " module kinds, " << w->bytes() / 1024 << " KiB\n";
      loaded.emplace(it->second, std::move(w));
    }
    batch[i].adapter = it->second;
  }
  return [loaded = std::move(loaded)](cache::adapter_id id)
           -> std::shared_ptr<const cache::adapter_payload> {
    auto it = loaded.find(id);
    return it == loaded.end() ? nullptr : it->second;
  };
}

int default_threads() {
  auto n = static_cast<int>(std::thread::hardware_concurrency());
  return n > 0 ? n : 1;
}

} // namespace

int cmd_generate(int argc, char** argv) {
  args a(argc, argv, 2, {"no-kv-cache", "ignore-eos", "quiet"});
  auto dir = a.str("model", default_model_dir());
  if (dir.empty())
    throw std::invalid_argument("--model DIR is needed (no default model in " LF_MODELS_DIR "/default)");
  auto prompts = a.all("prompt");
  if (prompts.empty())
    throw std::invalid_argument("missing required --prompt");
  sampling_params defaults;  // greedy, 32 tokens
  defaults.temperature = 0;
  defaults.max_tokens = 32;
  auto params = read_sampling(a, defaults);
  int threads = set_compute_threads(static_cast<int>(a.integer("threads", default_threads())));
  auto dtype = parse_compute_dtype(a.str("dtype", "f32"));
  bool kv = !a.has("no-kv-cache");
  bool quiet = a.has("quiet");
  auto adapters = a.all("adapter");
  auto adapter_root = a.str("adapters", a.has("model") ? std::string{} : default_adapter_dir());
  a.finish();

  auto tok = load_tokenizer(dir);
  gpt2_model model(load_gpt2_weights(dir, dtype));
  std::vector<generation_request> batch;
  for (auto& p : prompts)  // this command is an edge: it validates like the router does
    batch.push_back({validate_or_throw({tok.encode(p), params, {}, 0}, model.config().limits())});
  generate_options opts;
  opts.adapters = load_row_adapters(adapters, adapter_root, model, batch);
  opts.use_kv_cache = kv;
  opts.seed = params.seed.value_or(0);
  if (batch.size() == 1 && !quiet) {
    std::cout << prompts[0] << std::flush;
    opts.on_token = [](std::size_t, std::int32_t, std::string_view d) { std::cout << d << std::flush; };
  }
  auto res = generate(model, tok, batch, opts);
  if (batch.size() == 1 && !quiet) {
    std::cout << "\n";
  } else {
    for (std::size_t i = 0; i < batch.size(); ++i)
      std::cout << "[" << i << "] " << prompts[i] << res.outputs[i].text << "\n";
  }
  const auto& t = res.timing;
  std::cerr << "model " << dir << ": " << model.config().n_layer << " layers, "
            << model.config().n_embd << " embd; dtype " << (dtype == compute_dtype::bf16 ? "bf16" : "f32")
            << ", threads " << threads << ", kv cache " << (kv ? "on" : "off") << "\n"
            << "prefill: " << t.prefill_ms << " ms for " << t.prompt_tokens << " prompt tokens ("
            << batch.size() << " rows)\n"
            << "decode: " << t.ms_per_step() << " ms per token step, " << t.decode_steps
            << " steps, " << t.generated_tokens << " tokens generated\n";
  for (std::size_t i = 0; i < batch.size(); ++i)
    std::cerr << "finish[" << i << "]: " << to_string(res.outputs[i].reason) << "\n";
  return 0;
}

int cmd_tokenize(int argc, char** argv) {
  args a(argc, argv, 2, {"decode"});
  auto dir = a.str("model");
  bool decode = a.has("decode");
  a.finish();
  auto tok = load_tokenizer(dir);
  std::string in((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
  if (decode) {
    nlohmann::json j;
    try {
      j = nlohmann::json::parse(in);
    } catch (const std::exception& e) {
      throw std::invalid_argument(std::string("stdin is not a JSON array of token ids: ") + e.what());
    }
    if (!j.is_array())
      throw std::invalid_argument("stdin must be a JSON array of token ids");
    std::vector<std::int32_t> ids;
    for (auto& v : j) {
      if (!v.is_number_integer())
        throw std::invalid_argument("token ids must be integers (got " + v.dump() + ")");
      auto x = v.get<long long>();
      if (x < 0 || x >= static_cast<long long>(tok.vocab_size()))
        throw std::invalid_argument("token id " + std::to_string(x) + " is outside the vocabulary");
      ids.push_back(static_cast<std::int32_t>(x));
    }
    std::cout << tok.decode(ids);
  } else {
    std::cout << nlohmann::json(tok.encode(in)).dump() << "\n";
  }
  return 0;
}

int cmd_make_model(int argc, char** argv) {
  args a(argc, argv, 2, {"prefix", "untied"});
  random_model_options o;
  auto out = a.required("out");
  o.config.n_layer = static_cast<int>(a.integer("layers", 2));
  o.config.n_head = static_cast<int>(a.integer("heads", 4));
  o.config.n_embd = static_cast<int>(a.integer("embd", 128));
  o.config.n_positions = static_cast<int>(a.integer("context", 1024));
  o.config.n_inner = 4 * o.config.n_embd;
  o.seed = static_cast<std::uint64_t>(a.integer("seed", 0));
  o.init_std = a.real("init-std", 0.02);
  auto dt = a.str("dtype", "f32");
  o.storage = dt == "f32" ? dtype::f32 : dt == "f16" ? dtype::f16 : dt == "bf16" ? dtype::bf16
            : throw std::invalid_argument("--dtype must be f32, f16 or bf16");
  o.transformer_prefix = a.has("prefix");
  o.tied_lm_head = !a.has("untied");
  o.tokenizer_dir = a.str("tokenizer", default_tokenizer_dir());
  a.finish();
  if (o.config.n_layer < 1 || o.config.n_head < 1 || o.config.n_embd < 1 || o.config.n_positions < 1
      || o.config.n_embd % o.config.n_head != 0)
    throw std::invalid_argument("need layers, heads, embd, context >= 1 and embd divisible by heads");
  write_random_model(out, o);
  std::cout << "wrote " << out << ": " << o.config.n_layer << " layers, " << o.config.n_head
            << " heads, " << o.config.n_embd << " embd, context " << o.config.n_positions << ", "
            << dt << "\n";
  return 0;
}

} // namespace lf::tools
