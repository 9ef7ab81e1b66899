/// Encoding: every message becomes one msgpack map {"v": 1, "type": ..., fields...}. Optional
/// fields are left out when absent (never written as nil); sampling floats are written as
/// float32 and times as float64, so decode(encode(m)) == m exactly. Floats are written here rather
/// than with packer::pack_float/pack_double: those turn integral values into msgpack ints (fine
/// for the decoder, surprising for clients) through a float-to-integer cast that is undefined
/// behaviour at 2^64.

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <msgpack.hpp>

#include "proto/protocol.hpp"

namespace lf::proto {

namespace {

/// msgpack-c's packer writes into anything with write(); this appends to a string, no copy.
struct string_sink {
  std::string* out;
  void write(const char* p, std::size_t n) { out->append(p, n); }
};

/// One frame under construction. A msgpack map header states its entry count up front, so
/// callers count their fields first; the writer checks every count against the keys actually
/// written (a field added without updating its count throws std::logic_error from take(), which
/// every round-trip test reaches).
class frame_writer {
public:
  frame_writer(std::string_view type, std::uint32_t fields) : type_(type), sink_{&out_}, pk_(sink_) {
    out_.reserve(64);
    begin_map(fields + 2);
    key("v").pack_uint64(protocol_version);
    key("type");
    str(type);
  }
  frame_writer(const frame_writer&) = delete;
  frame_writer& operator=(const frame_writer&) = delete;

  /// Writes a map header of `n` entries: the next `n` keys (and their values) belong to it.
  void begin_map(std::uint32_t n) {
    pk_.pack_map(n);
    if (n > 0)
      open_.push_back(n);
  }

  /// Writes a key; the caller writes the value next.
  msgpack::packer<string_sink>& key(std::string_view k) {
    if (open_.empty())
      throw std::logic_error("lf::proto::encode: frame \"" + std::string(type_) + "\" writes key \""
                             + std::string(k) + "\" beyond the entries its map headers declared");
    if (--open_.back() == 0)
      open_.pop_back();
    str(k);
    return pk_;
  }

  void str(std::string_view s) {
    if (s.size() > std::numeric_limits<std::uint32_t>::max())
      throw std::length_error("lf::proto::encode: string longer than msgpack allows");
    const auto n = static_cast<std::uint32_t>(s.size());
    pk_.pack_str(n);
    pk_.pack_str_body(s.data(), n);
  }

  void field(std::string_view k, std::string_view v) {
    key(k);
    str(v);
  }
  void field(std::string_view k, client_request_id id) { key(k).pack_uint64(id.value()); }
  void field_u64(std::string_view k, std::uint64_t v) { key(k).pack_uint64(v); }
  void field_i64(std::string_view k, std::int64_t v) { key(k).pack_int64(v); }
  void field_f32(std::string_view k, float v) {
    key(k);
    f32(v);
  }
  /// A float32 value (an array element; a field's value after key()).
  void f32(float v) {
    std::uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    write_big_endian(0xca, bits, 4);
  }
  void field_f64(std::string_view k, double v) {
    key(k);
    std::uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    write_big_endian(0xcb, bits, 8);
  }
  void field_bool(std::string_view k, bool v) {
    if (v)
      key(k).pack_true();
    else
      key(k).pack_false();
  }

  /// The frame; throws std::logic_error if a map header declared more entries than were written.
  std::string take() {
    if (!open_.empty())
      throw std::logic_error("lf::proto::encode: frame \"" + std::string(type_) + "\" declared "
                             + std::to_string(open_.back()) + " more map entries than it wrote");
    return std::move(out_);
  }

private:
  /// A msgpack float: the marker byte, then the IEEE 754 bits, most significant byte first.
  void write_big_endian(unsigned char marker, std::uint64_t bits, int bytes) {
    char buf[9];
    buf[0] = static_cast<char>(marker);
    for (int i = 0; i < bytes; ++i)
      buf[1 + i] = static_cast<char>((bits >> (8 * (bytes - 1 - i))) & 0xff);
    out_.append(buf, 1 + static_cast<std::size_t>(bytes));
  }

  std::string_view type_;
  std::vector<std::uint32_t> open_;  ///< entries still to come in each open map, innermost last
  std::string out_;
  string_sink sink_;
  msgpack::packer<string_sink> pk_;
};

std::uint32_t count(std::initializer_list<bool> present) {
  std::uint32_t n = 0;
  for (bool p : present)
    n += p ? 1 : 0;
  return n;
}

template <class T>
std::string encode_id_only(std::string_view type, const T& m) {
  frame_writer w(type, 1);
  w.field("id", m.id);
  return w.take();
}

/// A frame of one field, the node a drain or undrain names.
std::string encode_node_only(const char* type, const std::string& node) {
  frame_writer w(type, 1);
  w.field("node", node);
  return w.take();
}

/// An array of ints, then an array of float32s.
void write_ids(frame_writer& w, std::string_view k, const std::vector<std::int32_t>& ids) {
  auto& pk = w.key(k);
  pk.pack_array(static_cast<std::uint32_t>(ids.size()));
  for (auto id : ids)
    pk.pack_int64(id);
}
void write_floats(msgpack::packer<string_sink>& pk, frame_writer& w, const std::vector<float>& xs) {
  pk.pack_array(static_cast<std::uint32_t>(xs.size()));
  for (auto x : xs)
    w.f32(x);
}

} // namespace

std::string encode(const submit_msg& m) {
  // An invalid struct is encoded as it is (both inputs, or an empty prompt): the peer rejects it.
  const bool with_prompt = !m.prompt.empty() || m.messages.empty();
  const bool with_messages = !m.messages.empty();
  const auto n = 7
                 + count({with_prompt, with_messages, !m.adapter.empty(), m.seed.has_value(),
                          !m.stop.empty(), m.ignore_eos, m.deadline_ms.has_value(), m.window.has_value(),
                          m.ttft_ms.has_value(), !m.tenant.empty(), !m.logit_bias.empty(), m.logprobs,
                          m.top_logprobs != 0, !m.constraint_kind.empty(), !m.constraint.empty(),
                          m.speculative.has_value(), !m.continued.empty()});
  frame_writer w("submit", n);
  w.field("id", m.id);
  if (with_prompt)
    w.field("prompt", m.prompt);
  if (with_messages) {
    w.key("messages").pack_array(static_cast<std::uint32_t>(m.messages.size()));
    for (const auto& msg : m.messages) {
      w.begin_map(2);
      w.field("role", to_string(msg.role));
      w.field("content", msg.content);
    }
  }
  if (!m.adapter.empty())
    w.field("adapter", m.adapter);
  w.field_f32("temperature", m.temperature);
  w.field_i64("top_k", m.top_k);
  w.field_f32("top_p", m.top_p);
  w.field_f32("repetition_penalty", m.repetition_penalty);
  if (m.seed)
    w.field_u64("seed", *m.seed);
  w.field_i64("max_tokens", m.max_tokens);
  if (!m.stop.empty()) {
    w.key("stop").pack_array(static_cast<std::uint32_t>(m.stop.size()));
    for (const auto& s : m.stop)
      w.str(s);
  }
  if (m.ignore_eos)
    w.field_bool("ignore_eos", true);
  w.field_bool("stream", m.stream);
  if (m.deadline_ms)
    w.field_u64("deadline_ms", *m.deadline_ms);
  if (m.window)
    w.field_u64("window", *m.window);
  if (m.ttft_ms)
    w.field_u64("ttft_ms", *m.ttft_ms);
  if (!m.tenant.empty())
    w.field("tenant", m.tenant);
  if (!m.logit_bias.empty()) {
    w.key("logit_bias");
    w.begin_map(static_cast<std::uint32_t>(m.logit_bias.size()));
    for (const auto& [id, bias] : m.logit_bias)
      w.field_f32(std::to_string(id), bias);
  }
  if (m.logprobs)
    w.field_bool("logprobs", true);
  if (m.top_logprobs != 0)
    w.field_i64("top_logprobs", m.top_logprobs);
  if (!m.constraint_kind.empty())
    w.field("constraint_kind", m.constraint_kind);
  if (!m.constraint.empty())
    w.field("constraint", m.constraint);
  if (m.speculative)
    w.field_i64("speculative", *m.speculative);
  if (!m.continued.empty())
    write_ids(w, "continued", m.continued);
  return w.take();
}

std::string encode(const cancel_msg& m) { return encode_id_only("cancel", m); }

std::string encode(const credit_msg& m) {
  frame_writer w("credit", 2);
  w.field("id", m.id);
  w.field_u64("tokens", m.tokens);
  return w.take();
}
std::string encode(const stats_msg&) { return frame_writer("stats", 0).take(); }
std::string encode(const ping_msg&) { return frame_writer("ping", 0).take(); }
std::string encode(const accepted_msg& m) { return encode_id_only("accepted", m); }
std::string encode(const cancelled_msg& m) { return encode_id_only("cancelled", m); }
std::string encode(const pong_msg&) { return frame_writer("pong", 0).take(); }

std::string encode(const drain_msg& m) { return encode_node_only("drain", m.node); }

std::string encode(const drained_msg& m) {
  frame_writer w("drained", 3);
  w.field("node", m.node);
  w.field_u64("workers", m.workers);
  w.field_u64("moved", m.moved);
  return w.take();
}

std::string encode(const undrain_msg& m) { return encode_node_only("undrain", m.node); }

std::string encode(const undrained_msg& m) {
  frame_writer w("undrained", 2);
  w.field("node", m.node);
  w.field_u64("workers", m.workers);
  return w.take();
}

std::string encode(const adapters_msg& m) {
  frame_writer w("adapters", 1 + (m.name.empty() ? 0 : 1) + (m.path.empty() ? 0 : 1));
  w.field("op", m.op);
  if (!m.name.empty())
    w.field("name", m.name);
  if (!m.path.empty())
    w.field("path", m.path);
  return w.take();
}

std::string encode(const adapters_result& m) {
  frame_writer w("adapters_result", 3 + (m.error ? 1 : 0));
  if (m.error)
    w.field("code", to_string(*m.error));
  w.field("message", m.message);
  w.field_u64("seq", m.seq);
  w.key("adapters").pack_array(static_cast<std::uint32_t>(m.adapters.size()));
  for (const auto& r : m.adapters) {
    w.begin_map(10);
    w.field("name", r.name);
    w.field_u64("version", r.version);
    w.field_bool("removed", r.removed);
    w.field("path", r.path);
    w.field("hash", r.hash);
    w.field_u64("rank", r.rank);
    w.field("targets", r.targets);
    w.field_u64("bytes", r.bytes);
    w.field_i64("updated_ms", r.updated_ms);
    w.field_u64("resident", r.resident);
  }
  return w.take();
}

std::string encode(const token_msg& m) {
  frame_writer w("token", 4 + (m.logprobs ? 3 : 0));
  w.field("id", m.id);
  w.field("text", m.text);
  w.field_i64("token", m.token);
  w.field_u64("index", m.index);
  if (m.logprobs) {
    w.field_f32("logprob", m.logprobs->logprob);
    write_ids(w, "top_tokens", m.logprobs->top_tokens);
    write_floats(w.key("top_logprobs"), w, m.logprobs->top_logprobs);
  }
  return w.take();
}

std::string encode(const done_msg& m) {
  frame_writer w("done", 5 + count({m.text.has_value()}) + (m.logprobs.empty() ? 0 : 4));
  w.field("id", m.id);
  w.field("finish_reason", m.finish_reason);
  w.key("usage");
  w.begin_map(4);
  w.field_u64("prompt_tokens", m.usage.prompt_tokens);
  w.field_u64("completion_tokens", m.usage.completion_tokens);
  w.field_u64("cached_tokens", m.usage.cached_tokens);
  w.field_u64("resumed", m.usage.resumed);
  w.key("timings");
  w.begin_map(3);
  w.field_f64("queue_ms", m.timings.queue_ms);
  w.field_f64("ttft_ms", m.timings.ttft_ms);
  w.field_f64("total_ms", m.timings.total_ms);
  w.field_u64("seed", m.seed);
  if (m.text)
    w.field("text", *m.text);
  if (!m.logprobs.empty()) {
    // Four parallel arrays, one entry per generated token (nesting stays within the decoder's
    // depth of 3).
    write_ids(w, "tokens", m.tokens);
    auto& pk = w.key("logprobs");
    pk.pack_array(static_cast<std::uint32_t>(m.logprobs.size()));
    for (const auto& lp : m.logprobs)
      w.f32(lp.logprob);
    w.key("top_tokens").pack_array(static_cast<std::uint32_t>(m.logprobs.size()));
    for (const auto& lp : m.logprobs) {
      pk.pack_array(static_cast<std::uint32_t>(lp.top_tokens.size()));
      for (auto id : lp.top_tokens)
        pk.pack_int64(id);
    }
    w.key("top_logprobs").pack_array(static_cast<std::uint32_t>(m.logprobs.size()));
    for (const auto& lp : m.logprobs)
      write_floats(pk, w, lp.top_logprobs);
  }
  return w.take();
}

std::string encode(const error_msg& m) {
  frame_writer w("error", 2 + count({m.id.has_value(), m.retry_after_ms.has_value()}));
  if (m.id)
    w.field("id", *m.id);
  w.field("code", to_string(m.code));
  w.field("message", m.message);
  if (m.retry_after_ms)
    w.field_u64("retry_after_ms", *m.retry_after_ms);
  return w.take();
}

std::string encode(const stats_reply& m) {
  frame_writer w("stats", 1);
  w.key("values");
  w.begin_map(static_cast<std::uint32_t>(m.values.size()));
  for (const auto& [k, v] : m.values)
    w.field_f64(k, v);
  return w.take();
}

std::string encode(const client_message& m) {
  return std::visit([](const auto& x) { return encode(x); }, m);
}

std::string encode(const server_message& m) {
  return std::visit([](const auto& x) { return encode(x); }, m);
}

} // namespace lf::proto
