#include "cluster/openssl_guard.hpp"

#include <dlfcn.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace {

/// libssl's own `name`: the next definition after this executable's.
template <class F>
F next_fn(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C" {

int SSL_read(SSL* s, void* buf, int num) {
  static const auto real = next_fn<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  return real(s, buf, num);
}

int SSL_write(SSL* s, const void* buf, int num) {
  static const auto real = next_fn<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  return real(s, buf, num);
}

int SSL_accept(SSL* s) {
  static const auto real = next_fn<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(s);
}

int SSL_connect(SSL* s) {
  static const auto real = next_fn<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  return real(s);
}

} // extern "C"

namespace lf::cluster {

bool openssl_guard_active() {
  return ::dlsym(RTLD_DEFAULT, "SSL_read") == reinterpret_cast<void*>(&SSL_read);
}

} // namespace lf::cluster
