// Where the repository's tokenizer lies (both programs default to it).
#include "tools/commands.hpp"

namespace lf::tools {

const char* default_tokenizer_dir() { return LF_DEFAULT_TOKENIZER_DIR; }

} // namespace lf::tools
