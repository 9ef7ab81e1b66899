// `lorafleet tokenize` and `make-model`: the tokenizer and random checkpoints on the command line.
#include <filesystem>
#include <iostream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/utf8.hpp"
#include "text/tokenizer.hpp"
#include "tools/args.hpp"
#include "tools/commands.hpp"
#include "worker/engine/reference/model_writer.hpp"

namespace lf::tools {

namespace fs = std::filesystem;
using namespace lf::engine;
using lf::text::tokenizer;

const char* default_tokenizer_dir() { return LF_DEFAULT_TOKENIZER_DIR; }

namespace {

/// The model directory's own vocab.json/merges.txt, else the repository's.
tokenizer tokenizer_of(const std::string& model_dir) {
  if (!model_dir.empty() && fs::exists(fs::path(model_dir) / "vocab.json"))
    return tokenizer::from_dir(model_dir);
  return tokenizer::from_dir(default_tokenizer_dir());
}

} // namespace

int cmd_tokenize(int argc, char** argv) {
  args a(argc, argv, 2, {"decode"});
  auto dir = a.str("model");
  bool decode = a.has("decode");
  a.finish();
  auto tok = tokenizer_of(dir);
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
    // Invalid UTF-8 (a token can end inside a character) as U+FFFD, as generate and the server do.
    std::cout << replace_invalid_utf8(tok.decode(ids));
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
