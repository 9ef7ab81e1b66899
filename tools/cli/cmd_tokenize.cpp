// `lorafleet tokenize`: the tokenizer on the command line.
#include <iostream>
#include <iterator>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/utf8.hpp"
#include "text/tokenizer.hpp"
#include "tools/common/args.hpp"
#include "tools/cli/commands.hpp"

namespace lf::tools {

using lf::text::tokenizer;

int cmd_tokenize(int argc, char** argv) {
  args a(argc, argv, 2, {"decode"});
  auto dir = a.str("model");
  bool decode = a.has("decode");
  a.finish();
  auto tok = tokenizer_for(dir);
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

} // namespace lf::tools
