#include "router/adapter_log.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fcntl.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

namespace lf::router {

namespace {

std::string hex(std::uint64_t v) {
  static const char* digits = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4)
    s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

std::uint64_t unhex(const std::string& s) {
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw std::invalid_argument("hash is not 16 lowercase hex digits");
  return std::stoull(s, nullptr, 16);
}

std::runtime_error io_error(const std::string& path, const char* what) {
  return std::runtime_error("adapter log " + path + ": " + what + ": " + std::strerror(errno));
}

} // namespace

std::string encode_adapter_event(const cache::adapter_event& e) {
  nlohmann::json j{{"seq", e.seq}, {"op", cache::to_string(e.op)}, {"name", e.name},
                   {"version", e.version}, {"at_ms", e.at_ms}};
  if (e.op != cache::adapter_op::remove) {
    j["path"] = e.source.path;
    j["hash"] = hex(e.source.hash);
    j["rank"] = e.source.rank;
    j["targets"] = e.source.targets;
    j["bytes"] = e.source.bytes;
  }
  return j.dump();
}

cache::adapter_event decode_adapter_event(std::string_view line) {
  try {
    const auto j = nlohmann::json::parse(line);
    cache::adapter_event e;
    e.seq = j.at("seq").get<std::uint64_t>();
    auto op = cache::parse_adapter_op(j.at("op").get<std::string>());
    if (!op)
      throw std::invalid_argument("unknown op " + j.at("op").dump());
    e.op = *op;
    e.name = j.at("name").get<std::string>();
    e.version = j.at("version").get<std::uint32_t>();
    e.at_ms = j.at("at_ms").get<std::int64_t>();
    if (e.op != cache::adapter_op::remove) {
      e.source.path = j.at("path").get<std::string>();
      e.source.hash = unhex(j.at("hash").get<std::string>());
      e.source.rank = j.at("rank").get<std::uint32_t>();
      e.source.targets = j.at("targets").get<std::vector<std::string>>();
      e.source.bytes = j.at("bytes").get<std::uint64_t>();
    }
    return e;
  } catch (const nlohmann::json::exception& err) {
    throw std::invalid_argument(err.what());
  }
}

adapter_log_file::adapter_log_file(std::string path, cache::adapter_registry& reg, std::string& warning)
  : path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (auto dir = fs::path(path_).parent_path(); !dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
  }
  std::string text;
  {
    std::ifstream in(path_, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    text = ss.str();
  }
  std::size_t good = 0, line_no = 0;
  while (good < text.size()) {
    const auto nl = text.find('\n', good);
    ++line_no;
    const bool torn = nl == std::string::npos;  // a complete line always ends with '\n'
    const auto line = std::string_view(text).substr(good, nl == std::string::npos ? std::string::npos : nl - good);
    try {
      if (torn)
        throw std::invalid_argument("no end of line");
      reg.apply(decode_adapter_event(line));
    } catch (const std::invalid_argument& e) {
      if (!torn)
        throw std::runtime_error("adapter log " + path_ + " line " + std::to_string(line_no) + ": " + e.what());
      warning = "adapter log " + path_ + ": its last line was cut off (" + e.what()
                + "): a crash during an operation that was never answered";
      break;
    }
    good = nl + 1;
  }
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0)
    throw io_error(path_, "cannot open");
  if (::ftruncate(fd_, static_cast<off_t>(good)) != 0 || ::lseek(fd_, 0, SEEK_END) < 0) {
    ::close(fd_);
    throw io_error(path_, "cannot cut off the torn line");
  }
}

adapter_log_file::~adapter_log_file() {
  if (fd_ >= 0)
    ::close(fd_);
}

void adapter_log_file::append(const cache::adapter_event& e) {
  const auto line = encode_adapter_event(e) + "\n";
  std::size_t done = 0;
  while (done < line.size()) {
    const auto n = ::write(fd_, line.data() + done, line.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw io_error(path_, "cannot append");
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd_) != 0)
    throw io_error(path_, "cannot sync");
}

} // namespace lf::router
