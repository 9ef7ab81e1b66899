#include "worker/engine/peft_manager.hpp"

#include <filesystem>
#include <stdexcept>

namespace lf::engine {

namespace fs = std::filesystem;

cache::adapter_load_fn peft_loader(std::string root, gpt2_config base, payload_factory make) {
  return [root = std::move(root), base, make = std::move(make)](const std::string& name)
           -> std::shared_ptr<const cache::adapter_payload> {
    fs::path dir;
    try {
      dir = resolve_adapter_path(root, name);
    } catch (const std::invalid_argument& e) {
      throw cache::adapter_load_error(serve_errc::invalid_request, e.what());
    }
    std::error_code ec;
    if (!fs::is_directory(dir, ec))
      throw cache::adapter_load_error(serve_errc::unknown_adapter,
                                      "adapter \"" + name + "\" not found under " + root);
    auto a = load_peft_adapter(dir.string(), base);
    a.name = name;
    return make(a);
  };
}

cache::adapter_name_check peft_name_check(std::string root) {
  return [root = std::move(root)](const std::string& name) -> std::string {
    try {
      resolve_adapter_path(root, name);
      return {};
    } catch (const std::exception& e) {
      return e.what();
    }
  };
}

std::unique_ptr<cache::adapter_manager> make_peft_manager(std::string root, gpt2_config base,
                                                          payload_factory make,
                                                          cache::adapter_cache_config cfg) {
  if (root.empty())
    throw std::invalid_argument("make_peft_manager: the adapter directory is empty");
  auto check = peft_name_check(root);
  return std::make_unique<cache::adapter_manager>(cfg, peft_loader(std::move(root), base, std::move(make)),
                                                  std::move(check));
}

} // namespace lf::engine
