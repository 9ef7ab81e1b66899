/// Decoding untrusted frames. Three layers, each refusing early:
///   1. size: frames over max_frame_bytes are refused before msgpack sees them;
///   2. msgpack::unpack under unpack_limit (container sizes, string sizes, depth; no bin or ext),
///      so a few bytes declaring a 4 GiB string or array fail without allocating; trailing bytes
///      after the map are an error;
///   3. field_reader: the envelope ("v", "type"), then each message's fields with their types and
///      ranges, unknown fields rejected; a submit then passes validate().
/// Every exception (msgpack's unpack_error family, std::bad_alloc) becomes a decode_error. An
/// error without an id gets the one scan_request_id finds in the raw bytes (a frame refused in
/// step 1 or 2 never reaches the field reader).

#include <cmath>
#include <limits>
#include <new>

#include "proto/adapter_readers.hpp"
#include "proto/field_reader.hpp"
#include "proto/id_scan.hpp"
#include "proto/protocol.hpp"

namespace lf::proto {

namespace {

using detail::field_reader;
using detail::presence;

/// Deepest legal nesting: the frame map, the messages array, one message map.
constexpr std::size_t max_depth = 3;
/// Largest array msgpack may build; fields have their own smaller limits, checked with clearer
/// messages once the frame is parsed.
constexpr std::size_t max_array = 1024;

constexpr auto u32_max = std::numeric_limits<std::uint32_t>::max();
constexpr auto i32_min = std::numeric_limits<std::int32_t>::min();
constexpr auto i32_max = std::numeric_limits<std::int32_t>::max();

decode_error error(std::string message, std::optional<client_request_id> id = std::nullopt) {
  return decode_error{serve_errc::invalid_request, std::move(message), id};
}

/// A parsed frame whose envelope checked out.
struct frame {
  msgpack::object_handle handle;
  std::optional<field_reader> fields;
  std::string type;
  std::optional<client_request_id> id;  ///< "id" when it is an unsigned integer
};

/// Steps 1 and 2 plus the envelope. Returns an error, or fills `f`.
std::optional<decode_error> open_frame(std::string_view bytes, frame& f) {
  if (bytes.size() > max_frame_bytes)
    return error("frame is " + std::to_string(bytes.size()) + " bytes; the limit is "
                 + std::to_string(max_frame_bytes));
  if (bytes.empty())
    return error("empty frame (expected one msgpack map)");
  const msgpack::unpack_limit limits(max_array, max_stats_entries, max_frame_bytes,
                                     /*bin=*/0, /*ext=*/0, max_depth);
  std::size_t offset = 0;
  try {
    // Strings reference `bytes` instead of being copied into the zone: the object never outlives
    // this decode call, and values are copied out into the message structs.
    f.handle = msgpack::unpack(
      bytes.data(), bytes.size(), offset,
      [](msgpack::type::object_type, std::size_t, void*) { return true; }, nullptr, limits);
  } catch (const msgpack::insufficient_bytes&) {
    return error("truncated msgpack: the frame ends inside a value");
  } catch (const msgpack::array_size_overflow&) {
    return error("an array has more than " + std::to_string(max_array) + " elements");
  } catch (const msgpack::map_size_overflow&) {
    return error("a map has more than " + std::to_string(max_stats_entries) + " entries");
  } catch (const msgpack::str_size_overflow&) {
    return error("a string is longer than the frame limit");
  } catch (const msgpack::bin_size_overflow&) {
    return error("binary values are not part of the protocol (send text as msgpack str)");
  } catch (const msgpack::ext_size_overflow&) {
    return error("extension values are not part of the protocol");
  } catch (const msgpack::depth_size_overflow&) {
    return error("values nested deeper than " + std::to_string(max_depth) + " levels");
  } catch (const msgpack::parse_error&) {
    return error("malformed msgpack (a byte that starts no valid value)");
  }
  if (offset != bytes.size())
    return error(std::to_string(bytes.size() - offset)
                 + " trailing bytes after the msgpack map (a frame holds exactly one map)");
  const auto& root = f.handle.get();
  if (root.type != msgpack::type::MAP)
    return error("a frame must be one msgpack map (got " + std::string(detail::type_name(root))
                 + ")");
  auto& r = f.fields.emplace(root, "", "frame");
  if (const auto* id = r.peek("id"); id != nullptr && id->type == msgpack::type::POSITIVE_INTEGER)
    f.id = client_request_id{id->via.u64};
  if (!r.ok())
    return error(r.error(), f.id);
  const auto* v = r.get("v", presence::required);
  if (v != nullptr && (v->type != msgpack::type::POSITIVE_INTEGER || v->via.u64 != protocol_version))
    r.fail("unsupported protocol version "
           + (v->type == msgpack::type::POSITIVE_INTEGER ? std::to_string(v->via.u64)
                                                         : std::string(detail::type_name(*v)))
           + " (this peer speaks version " + std::to_string(protocol_version) + ")");
  if (auto type = r.get_str("type", presence::required, max_name_bytes))
    f.type = std::move(*type);
  if (!r.ok())
    return error(r.error(), f.id);
  return std::nullopt;
}

/// True when `key` is present with a value other than nil.
bool present(const field_reader& r, std::string_view key) {
  const auto* o = r.peek(key);
  return o != nullptr && o->type != msgpack::type::NIL;
}

client_request_id read_id(field_reader& r) {
  return client_request_id{r.get_uint("id", presence::required, ~std::uint64_t{0}).value_or(0)};
}

std::vector<chat_message> read_messages(field_reader& r, const msgpack::object_array& a) {
  std::vector<chat_message> out;
  out.reserve(a.size);
  for (std::uint32_t i = 0; i < a.size && r.ok(); ++i) {
    const auto name = "messages[" + std::to_string(i) + "]";
    field_reader m(a.ptr[i], name + ".", name);
    const auto role = m.get_str("role", presence::required, max_name_bytes);
    auto content = m.get_str("content", presence::required, max_prompt_bytes);
    m.finish();
    if (!m.ok()) {
      r.fail(m.error());
      break;
    }
    const auto parsed = parse_chat_role(*role);
    if (!parsed) {
      r.fail(name + ".role must be system, user or assistant (got " + detail::quote(*role) + ")");
      break;
    }
    out.push_back(chat_message{*parsed, std::move(*content)});
  }
  return out;
}

/// An array element that must be an integer in [0, i32_max].
std::optional<std::int32_t> token_id_of(field_reader& r, const msgpack::object& o, const std::string& what) {
  if (o.type == msgpack::type::POSITIVE_INTEGER && o.via.u64 <= static_cast<std::uint64_t>(i32_max))
    return static_cast<std::int32_t>(o.via.u64);
  r.fail(what + " must be a token id (an integer in [0, " + std::to_string(i32_max) + "]), got "
         + std::string(detail::type_name(o)));
  return std::nullopt;
}

/// An array element that must be a number, as a float.
std::optional<float> float_of(field_reader& r, const msgpack::object& o, const std::string& what) {
  switch (o.type) {
    case msgpack::type::FLOAT32:
    case msgpack::type::FLOAT64: return static_cast<float>(o.via.f64);
    case msgpack::type::POSITIVE_INTEGER: return static_cast<float>(o.via.u64);
    case msgpack::type::NEGATIVE_INTEGER: return static_cast<float>(o.via.i64);
    default: r.fail(what + " must be a number (got " + std::string(detail::type_name(o)) + ")"); return std::nullopt;
  }
}

/// submit's logit_bias: a map of token id (an integer, or its decimal digits as a string, as
/// JSON-minded encoders write map keys) to a number.
void read_logit_bias(field_reader& r, submit_msg& m) {
  const auto* o = r.get_map("logit_bias", presence::optional);
  if (o == nullptr)
    return;
  const auto& map = o->via.map;
  if (map.size > lf::max_logit_bias_entries) {
    r.fail("logit_bias must have at most " + std::to_string(lf::max_logit_bias_entries) + " entries (got "
           + std::to_string(map.size) + ")");
    return;
  }
  for (std::uint32_t i = 0; i < map.size && r.ok(); ++i) {
    const auto& k = map.ptr[i].key;
    std::optional<std::int32_t> id;
    if (k.type == msgpack::type::STR && k.via.str.size > 0 && k.via.str.size <= 10) {
      std::int64_t v = 0;
      bool digits = true;
      for (std::uint32_t j = 0; j < k.via.str.size; ++j) {
        const char c = k.via.str.ptr[j];
        digits = digits && c >= '0' && c <= '9';
        v = v * 10 + (c - '0');
      }
      if (digits && v <= i32_max)
        id = static_cast<std::int32_t>(v);
      else
        r.fail("logit_bias keys must be token ids (got " + detail::quote({k.via.str.ptr, k.via.str.size}) + ")");
    } else {
      id = token_id_of(r, k, "a logit_bias key");
    }
    const auto bias = float_of(r, map.ptr[i].val, "logit_bias values");
    if (id && bias && !m.logit_bias.emplace(*id, *bias).second)
      r.fail("logit_bias names token " + std::to_string(*id) + " twice");
  }
}

/// `key`: an array of token ids, at most `max` of them.
std::vector<std::int32_t> read_ids(field_reader& r, std::string_view key, presence p, std::size_t max) {
  std::vector<std::int32_t> out;
  if (const auto* a = r.get_array(key, p, max))
    for (std::uint32_t i = 0; i < a->size && r.ok(); ++i)
      out.push_back(token_id_of(r, a->ptr[i], r.field_name(key) + "[" + std::to_string(i) + "]").value_or(0));
  return out;
}

/// An array object of numbers (an element of an array field).
std::vector<float> read_floats(field_reader& r, const msgpack::object& o, const std::string& what, std::size_t max) {
  std::vector<float> out;
  if (o.type != msgpack::type::ARRAY || o.via.array.size > max) {
    r.fail(what + " must be an array of at most " + std::to_string(max) + " numbers");
    return out;
  }
  for (std::uint32_t i = 0; i < o.via.array.size && r.ok(); ++i)
    out.push_back(float_of(r, o.via.array.ptr[i], what + "[" + std::to_string(i) + "]").value_or(0));
  return out;
}

void read_submit(field_reader& r, submit_msg& m) {
  m.id = read_id(r);
  if (present(r, "prompt") && present(r, "messages"))
    r.fail("give either prompt or messages, not both");
  if (auto prompt = r.get_str("prompt", presence::optional, max_prompt_bytes))
    m.prompt = std::move(*prompt);
  if (const auto* a = r.get_array("messages", presence::optional, max_messages)) {
    if (a->size == 0)
      r.fail("messages must not be empty");
    m.messages = read_messages(r, *a);
  }
  if (auto adapter = r.get_str("adapter", presence::optional, max_adapter_bytes))
    m.adapter = std::move(*adapter);
  m.temperature = r.get_float("temperature", presence::optional).value_or(m.temperature);
  m.top_k = static_cast<int>(r.get_int("top_k", presence::optional, i32_min, i32_max)
                               .value_or(m.top_k));
  m.top_p = r.get_float("top_p", presence::optional).value_or(m.top_p);
  m.repetition_penalty =
    r.get_float("repetition_penalty", presence::optional).value_or(m.repetition_penalty);
  m.seed = r.get_uint("seed", presence::optional, ~std::uint64_t{0});
  m.max_tokens = static_cast<int>(r.get_int("max_tokens", presence::optional, i32_min, i32_max)
                                    .value_or(m.max_tokens));
  if (const auto* a = r.get_array("stop", presence::optional, max_stop_strings)) {
    for (std::uint32_t i = 0; i < a->size; ++i)
      if (auto s = detail::read_str(r, a->ptr[i], "stop[" + std::to_string(i) + "]", max_stop_bytes))
        m.stop.push_back(std::move(*s));
  }
  m.ignore_eos = r.get_bool("ignore_eos", presence::optional).value_or(false);
  m.stream = r.get_bool("stream", presence::optional).value_or(true);
  m.deadline_ms = r.get_uint("deadline_ms", presence::optional, max_deadline_ms);
  if (auto w = r.get_uint("window", presence::optional, max_window))
    m.window = static_cast<std::uint32_t>(*w);
  m.ttft_ms = r.get_uint("ttft_ms", presence::optional, max_deadline_ms);
  if (auto tenant = r.get_str("tenant", presence::optional, max_tenant_bytes))
    m.tenant = std::move(*tenant);
  read_logit_bias(r, m);
  m.logprobs = r.get_bool("logprobs", presence::optional).value_or(false);
  m.top_logprobs = static_cast<int>(r.get_int("top_logprobs", presence::optional, 0, lf::max_top_logprobs).value_or(0));
  if (auto kind = r.get_str("constraint_kind", presence::optional, 32))
    m.constraint_kind = std::move(*kind);
  if (auto text = r.get_str("constraint", presence::optional, lf::max_constraint_text))
    m.constraint = std::move(*text);
  if (auto s = r.get_int("speculative", presence::optional, i32_min, i32_max))
    m.speculative = static_cast<std::int32_t>(*s);
  if (present(r, "continued"))
    m.continued = read_ids(r, "continued", presence::required, static_cast<std::size_t>(max_tokens_limit));
  r.finish();
  if (r.ok())
    if (auto problem = validate(m))
      r.fail(std::move(*problem));
}

void read_token(field_reader& r, token_msg& m) {
  m.id = read_id(r);
  m.text = r.get_str("text", presence::required, max_text_bytes).value_or("");
  m.token = static_cast<std::int32_t>(r.get_int("token", presence::required, 0, i32_max).value_or(0));
  m.index = static_cast<std::uint32_t>(r.get_uint("index", presence::required, u32_max).value_or(0));
  if (present(r, "logprob")) {
    lf::token_logprobs lp;
    lp.logprob = r.get_float("logprob", presence::required).value_or(0);
    lp.top_tokens = read_ids(r, "top_tokens", presence::required, lf::max_top_logprobs);
    if (const auto* t = r.get("top_logprobs", presence::required))
      lp.top_logprobs = read_floats(r, *t, "top_logprobs", lf::max_top_logprobs);
    if (r.ok() && lp.top_tokens.size() != lp.top_logprobs.size())
      r.fail("top_tokens and top_logprobs must have the same length");
    m.logprobs = std::move(lp);
  }
}

void read_done(field_reader& r, done_msg& m) {
  m.id = read_id(r);
  m.finish_reason = r.get_str("finish_reason", presence::required, max_name_bytes).value_or("");
  if (r.ok() && m.finish_reason.empty())
    r.fail("finish_reason must not be empty");
  if (const auto* u = r.get_map("usage", presence::required)) {
    field_reader ur(*u, "usage.", "usage");
    const auto count = [&](const char* key) {
      return static_cast<std::uint32_t>(ur.get_uint(key, presence::required, u32_max).value_or(0));
    };
    m.usage.prompt_tokens = count("prompt_tokens");
    m.usage.completion_tokens = count("completion_tokens");
    m.usage.cached_tokens = count("cached_tokens");
    m.usage.resumed = static_cast<std::uint32_t>(ur.get_uint("resumed", presence::optional, u32_max).value_or(0));
    ur.finish();
    if (!ur.ok())
      r.fail(ur.error());
  }
  if (const auto* t = r.get_map("timings", presence::required)) {
    field_reader tr(*t, "timings.", "timings");
    const auto ms = [&](const char* key) {
      const auto v = tr.get_number(key, presence::required);
      if (v && !(std::isfinite(*v) && *v >= 0))
        tr.fail(tr.field_name(key) + " must be a finite number >= 0 (got " + detail::show(*v) + ")");
      return v.value_or(0);
    };
    m.timings.queue_ms = ms("queue_ms");
    m.timings.ttft_ms = ms("ttft_ms");
    m.timings.total_ms = ms("total_ms");
    tr.finish();
    if (!tr.ok())
      r.fail(tr.error());
  }
  m.text = r.get_str("text", presence::optional, max_text_bytes);
  m.seed = r.get_uint("seed", presence::optional, std::numeric_limits<std::uint64_t>::max()).value_or(0);
  if (present(r, "logprobs")) {
    // Four parallel arrays, one entry per generated token.
    m.tokens = read_ids(r, "tokens", presence::required, max_done_logprobs);
    const auto* lps = r.get_array("logprobs", presence::required, max_done_logprobs);
    const auto* tts = r.get_array("top_tokens", presence::required, max_done_logprobs);
    const auto* tls = r.get_array("top_logprobs", presence::required, max_done_logprobs);
    if (!r.ok())
      return;
    const auto n = m.tokens.size();
    if (lps->size != n || tts->size != n || tls->size != n) {
      r.fail("tokens, logprobs, top_tokens and top_logprobs must have the same length");
      return;
    }
    m.logprobs.resize(n);
    for (std::size_t i = 0; i < n && r.ok(); ++i) {
      const auto at = "[" + std::to_string(i) + "]";
      auto& lp = m.logprobs[i];
      lp.logprob = float_of(r, lps->ptr[i], "logprobs" + at).value_or(0);
      const auto& tt = tts->ptr[i];
      if (tt.type != msgpack::type::ARRAY || tt.via.array.size > lf::max_top_logprobs) {
        r.fail("top_tokens" + at + " must be an array of at most " + std::to_string(lf::max_top_logprobs) + " token ids");
        return;
      }
      for (std::uint32_t j = 0; j < tt.via.array.size && r.ok(); ++j)
        lp.top_tokens.push_back(token_id_of(r, tt.via.array.ptr[j], "top_tokens" + at).value_or(0));
      lp.top_logprobs = read_floats(r, tls->ptr[i], "top_logprobs" + at, lf::max_top_logprobs);
      if (r.ok() && lp.top_tokens.size() != lp.top_logprobs.size())
        r.fail("top_tokens" + at + " and top_logprobs" + at + " must have the same length");
    }
  }
}

void read_error(field_reader& r, error_msg& m) {
  if (auto id = r.get_uint("id", presence::optional, ~std::uint64_t{0}))
    m.id = client_request_id{*id};
  if (auto code = r.get_str("code", presence::required, max_name_bytes)) {
    const auto parsed = parse_serve_errc(*code);
    if (parsed && *parsed != serve_errc::none)
      m.code = *parsed;
    else
      r.fail("code must be an error code such as invalid_request or overloaded (got "
             + detail::quote(*code) + ")");
  }
  m.message = r.get_str("message", presence::required, max_text_bytes).value_or("");
  if (auto retry = r.get_uint("retry_after_ms", presence::optional, u32_max))
    m.retry_after_ms = static_cast<std::uint32_t>(*retry);
}

void read_credit(field_reader& r, credit_msg& m) {
  m.id = read_id(r);
  m.tokens = static_cast<std::uint32_t>(r.get_uint("tokens", presence::required, max_window).value_or(0));
  if (r.ok() && m.tokens == 0)
    r.fail("tokens must be in [1, " + std::to_string(max_window) + "] (got 0)");
}

/// The node a drain or undrain names: required, not empty.
std::string read_node(field_reader& r) {
  auto node = r.get_str("node", presence::required, max_name_bytes).value_or("");
  if (r.ok() && node.empty())
    r.fail("node must not be empty");
  return node;
}

void read_drain(field_reader& r, drain_msg& m) { m.node = read_node(r); }

void read_drained(field_reader& r, drained_msg& m) {
  m.node = r.get_str("node", presence::required, max_name_bytes).value_or("");
  m.workers = static_cast<std::uint32_t>(r.get_uint("workers", presence::required, u32_max).value_or(0));
  m.moved = static_cast<std::uint32_t>(r.get_uint("moved", presence::required, u32_max).value_or(0));
}

void read_undrain(field_reader& r, undrain_msg& m) { m.node = read_node(r); }

void read_undrained(field_reader& r, undrained_msg& m) {
  m.node = r.get_str("node", presence::required, max_name_bytes).value_or("");
  m.workers = static_cast<std::uint32_t>(r.get_uint("workers", presence::required, u32_max).value_or(0));
}

void read_stats(field_reader& r, stats_reply& m) {
  const auto* values = r.get_map("values", presence::required);
  if (values == nullptr)
    return;
  const auto& map = values->via.map;
  for (std::uint32_t i = 0; i < map.size && r.ok(); ++i) {
    const auto& kv = map.ptr[i];
    auto key = detail::read_str(r, kv.key, "a key of values", max_name_bytes);
    if (!key)
      break;
    const auto what = "values[" + detail::quote(*key) + "]";
    double v = 0;
    if (kv.val.type == msgpack::type::POSITIVE_INTEGER)
      v = static_cast<double>(kv.val.via.u64);
    else if (kv.val.type == msgpack::type::NEGATIVE_INTEGER)
      v = static_cast<double>(kv.val.via.i64);
    else if (kv.val.type == msgpack::type::FLOAT32 || kv.val.type == msgpack::type::FLOAT64)
      v = kv.val.via.f64;
    else
      r.fail(what + " must be a number (got " + std::string(detail::type_name(kv.val)) + ")");
    if (r.ok() && !std::isfinite(v))
      r.fail(what + " must be finite (got " + detail::show(v) + ")");
    if (r.ok() && !m.values.emplace(std::move(*key), v).second)
      r.fail("duplicate key " + what);
  }
}

/// Reads message T's fields with `read` and checks that nothing else was sent.
template <class T, class Result, class Read>
Result finish_message(frame& f, Read read) {
  f.fields->set_name(f.type + " message");
  T m;
  read(*f.fields, m);
  f.fields->finish();
  if (!f.fields->ok())
    return error(f.fields->error(), f.id);
  return m;
}

/// Messages without fields.
template <class T>
void read_nothing(field_reader&, T&) {}

/// Messages whose only field is the id.
template <class T>
void read_id_only(field_reader& r, T& m) {
  m.id = read_id(r);
}

/// Runs `decode` and turns anything it throws into a decode_error.
template <class Result, class Decode>
Result guarded_decode(Decode decode) {
  try {
    return decode();
  } catch (const std::bad_alloc&) {
    return error("out of memory while decoding the frame");
  } catch (const std::exception& e) {
    return error(std::string("malformed frame: ") + detail::quote(e.what()));
  } catch (...) {
    return error("malformed frame");
  }
}

/// guarded_decode, then the id from the raw bytes for an error that has none, so the peer can
/// tell which request a frame refused by msgpack's limits was about.
template <class Result, class Decode>
Result guarded(std::string_view bytes, Decode decode) {
  auto r = guarded_decode<Result>(decode);
  if (auto* e = std::get_if<decode_error>(&r); e != nullptr && !e->id)
    e->id = scan_request_id(bytes);
  return r;
}

} // namespace

client_decode_result decode_client(std::string_view bytes) {
  using result = client_decode_result;
  return guarded<result>(bytes, [&]() -> result {
    frame f;
    if (auto err = open_frame(bytes, f))
      return *err;
    if (f.type == "submit")
      return finish_message<submit_msg, result>(f, read_submit);
    if (f.type == "cancel")
      return finish_message<cancel_msg, result>(f, read_id_only<cancel_msg>);
    if (f.type == "stats")
      return finish_message<stats_msg, result>(f, read_nothing<stats_msg>);
    if (f.type == "ping")
      return finish_message<ping_msg, result>(f, read_nothing<ping_msg>);
    if (f.type == "drain")
      return finish_message<drain_msg, result>(f, read_drain);
    if (f.type == "undrain")
      return finish_message<undrain_msg, result>(f, read_undrain);
    if (f.type == "credit")
      return finish_message<credit_msg, result>(f, read_credit);
    if (f.type == "adapters")
      return finish_message<adapters_msg, result>(f, detail::read_adapters);
    return error("unknown message type " + detail::quote(f.type)
                   + " (a client sends submit, cancel, credit, stats, ping, drain, undrain or adapters)",
                 f.id);
  });
}

server_decode_result decode_server(std::string_view bytes) {
  using result = server_decode_result;
  return guarded<result>(bytes, [&]() -> result {
    frame f;
    if (auto err = open_frame(bytes, f))
      return *err;
    if (f.type == "accepted")
      return finish_message<accepted_msg, result>(f, read_id_only<accepted_msg>);
    if (f.type == "token")
      return finish_message<token_msg, result>(f, read_token);
    if (f.type == "done")
      return finish_message<done_msg, result>(f, read_done);
    if (f.type == "error")
      return finish_message<error_msg, result>(f, read_error);
    if (f.type == "cancelled")
      return finish_message<cancelled_msg, result>(f, read_id_only<cancelled_msg>);
    if (f.type == "stats")
      return finish_message<stats_reply, result>(f, read_stats);
    if (f.type == "pong")
      return finish_message<pong_msg, result>(f, read_nothing<pong_msg>);
    if (f.type == "drained")
      return finish_message<drained_msg, result>(f, read_drained);
    if (f.type == "adapters_result")
      return finish_message<adapters_result, result>(f, detail::read_adapters_result);
    if (f.type == "undrained")
      return finish_message<undrained_msg, result>(f, read_undrained);
    return error("unknown message type " + detail::quote(f.type)
                   + " (a server sends accepted, token, done, error, cancelled, stats, pong, drained,"
                     " undrained or adapters_result)",
                 f.id);
  });
}

} // namespace lf::proto
