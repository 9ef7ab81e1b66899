// Where the repository's tokenizer lies (both programs default to it).
#include "tools/commands.hpp"

#include <filesystem>

#include "text/tokenizer.hpp"

namespace lf::tools {

const char* default_tokenizer_dir() { return LF_DEFAULT_TOKENIZER_DIR; }

text::tokenizer tokenizer_for(const std::string& model_dir) {
  namespace fs = std::filesystem;
  if (!model_dir.empty() && fs::exists(fs::path(model_dir) / "vocab.json"))
    return text::tokenizer::from_dir(model_dir);
  return text::tokenizer::from_dir(default_tokenizer_dir());
}

} // namespace lf::tools
