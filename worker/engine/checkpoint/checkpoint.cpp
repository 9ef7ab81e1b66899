#include "worker/engine/checkpoint/checkpoint.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <filesystem>
#include <stdexcept>

namespace lf::engine {

namespace {

std::string shape_str(const std::vector<std::int64_t>& s) {
  std::string r = "[";
  for (std::size_t i = 0; i < s.size(); ++i)
    r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

} // namespace

std::string checkpoint_tensors_path(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir))
    throw std::runtime_error(dir + ": model directory not found");
  auto path = (fs::path(dir) / "model.safetensors").string();
  if (!fs::exists(path))
    throw std::runtime_error(path + ": not found (a GPT-2 checkpoint needs config.json and "
                             "model.safetensors; make one with `lorafleet make-model`)");
  return path;
}

const tensor_view* find_gpt2_tensor(const safetensors_file& file, const std::string& name) {
  if (auto* t = file.find(name))
    return t;
  return file.find("transformer." + name);
}

const tensor_view& require_gpt2_tensor(const safetensors_file& file, const std::string& name) {
  const tensor_view* t = find_gpt2_tensor(file, name);
  if (t == nullptr)
    throw std::runtime_error(file.path() + ": missing tensor '" + name + "' (also looked for 'transformer."
                             + name + "')");
  return *t;
}

void check_gpt2_shape(const safetensors_file& file, const tensor_view& t, const std::vector<std::int64_t>& expected) {
  if (t.shape != expected)
    throw std::runtime_error(file.path() + ": tensor '" + t.name + "' has shape " + shape_str(t.shape)
                             + " but config.json implies " + shape_str(expected));
}

void release_tensor_pages(const tensor_view& t) {
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  const auto begin = (reinterpret_cast<std::uintptr_t>(t.data) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(t.data) + t.nbytes) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

} // namespace lf::engine
