#pragma once
/// A unique temporary directory, removed with everything in it when the object dies.

#include <atomic>
#include <filesystem>
#include <random>
#include <string>

#include <unistd.h>

namespace lf::test {

class temp_dir {
public:
  temp_dir() {
    static std::atomic<int> counter{0};
    std::random_device rd;
    path_ = std::filesystem::temp_directory_path()
            / ("lorafleet-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter++) + "-"
               + std::to_string(rd()));
    std::filesystem::create_directories(path_);
  }
  temp_dir(const temp_dir&) = delete;
  temp_dir& operator=(const temp_dir&) = delete;
  ~temp_dir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

} // namespace lf::test
