#include "core/secret_file.hpp"

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <vector>

#include <sys/stat.h>
#include <unistd.h>

namespace lf::secrets {

namespace {

std::string mode_octal(mode_t m) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(m) & 07777u);
  return buf;
}

/// Is `gid` this process's effective group or one of its supplementary groups?
bool own_group(gid_t gid) {
  if (gid == ::getegid())
    return true;
  const int n = ::getgroups(0, nullptr);
  if (n <= 0)
    return false;
  std::vector<gid_t> groups(static_cast<std::size_t>(n));
  const int got = ::getgroups(n, groups.data());
  for (int i = 0; i < got; ++i)
    if (groups[static_cast<std::size_t>(i)] == gid)
      return true;
  return false;
}

} // namespace

std::string check_secret_mode(const std::string& path, std::string_view what) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    return path + ": cannot read " + std::string(what) + " (no such file or not accessible)";
  if (!S_ISREG(st.st_mode))
    return path + ": " + std::string(what) + " is not a regular file";
  const mode_t others = st.st_mode & S_IRWXO;
  const mode_t group = st.st_mode & S_IRWXG;
  if (others != 0 || (group & ~S_IRGRP) != 0 || (group != 0 && !own_group(st.st_gid)))
    return path + ": " + std::string(what) + " has mode " + mode_octal(st.st_mode)
           + ", which lets " + (others != 0 ? "others" : "its group") + " reach it; chmod 600 " + path;
  return {};
}

std::string read_secret_file(const std::string& path, std::string_view what) {
  if (auto why = check_secret_mode(path, what); !why.empty())
    throw std::invalid_argument(why);
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw std::invalid_argument(path + ": cannot read " + std::string(what));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace lf::secrets
