// Where the program's data lies: the default model, its adapters and the GPT-2 tokenizer.
#include "tools/cli/commands.hpp"

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

#include "text/tokenizer.hpp"

namespace lf::tools {

namespace fs = std::filesystem;

std::string models_dir() {
  if (const char* env = std::getenv("LORAFLEET_MODELS_DIR"); env != nullptr && *env != '\0')
    return env;
  // An installed program (the container image): BIN/../share/lorafleet/models.
  char exe[4096];
  const auto n = ::readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n > 0) {
    exe[n] = '\0';
    const auto installed = fs::path(exe).parent_path().parent_path() / "share" / "lorafleet" / "models";
    std::error_code ec;
    if (fs::is_directory(installed, ec))
      return installed.lexically_normal().string();
  }
  return LF_MODELS_DIR;  // the source tree it was built from
}

std::string default_tokenizer_dir() { return models_dir() + "/tokenizer"; }

text::tokenizer tokenizer_for(const std::string& model_dir) {
  if (!model_dir.empty() && fs::exists(fs::path(model_dir) / "vocab.json"))
    return text::tokenizer::from_dir(model_dir);
  return text::tokenizer::from_dir(default_tokenizer_dir());
}

} // namespace lf::tools
