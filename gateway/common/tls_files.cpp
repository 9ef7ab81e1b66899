// The HTTP gateway's TLS file checks. See tls_files.hpp.
#include "gateway/common/tls_files.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>

#include <sys/stat.h>

namespace lf::gateway {

namespace {

/// Why `path` cannot be read as a file, or empty.
std::string unreadable(const std::string& path) {
  struct stat st{};
  if (::stat(path.c_str(), &st) != 0)
    return std::strerror(errno);
  if (!S_ISREG(st.st_mode))
    return "not a regular file";
  std::ifstream in(path);
  if (!in)
    return std::strerror(errno);
  return {};
}

} // namespace

std::string check_tls_paths(const tls_files& f, const std::string& cert_name, const std::string& key_name) {
  if (f.cert.empty() != f.key.empty())
    return cert_name + " and " + key_name + " go together: " + (f.cert.empty() ? cert_name : key_name)
           + " is missing";
  if (!f.enabled())
    return {};
  if (auto why = unreadable(f.cert); !why.empty())
    return cert_name + " " + f.cert + ": " + why;
  if (auto why = unreadable(f.key); !why.empty())
    return key_name + " " + f.key + ": " + why;
  return {};
}

} // namespace lf::gateway
