#pragma once
/// A workaround for CAF 0.17.6's OpenSSL module, for nodes with TLS on.
///
/// libcaf_openssl takes a failed handshake's errors off OpenSSL's per-thread error queue only
/// inside CAF_LOG_INFO, which Debian's build (log level QUIET) compiles out. The queue is then
/// never emptied, and the next SSL_get_error() for *any other* connection served by the same
/// multiplexer thread reports SSL_ERROR_SSL: one peer with a bad certificate (or a port scanner)
/// disconnects every node. OpenSSL requires an empty queue before each TLS I/O call; this file
/// defines SSL_read, SSL_write, SSL_accept and SSL_connect in the executable (exported, so they
/// take precedence over libssl's for libcaf_openssl) that empty it and call libssl's.

namespace lf::cluster {

/// True when the wrappers are the functions libcaf_openssl calls (checked with dlsym). Calling
/// it also makes sure the wrappers are linked into the executable.
bool openssl_guard_active();

} // namespace lf::cluster
