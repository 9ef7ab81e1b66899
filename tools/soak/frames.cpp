#include "tools/soak/frames.hpp"

#include <msgpack.hpp>

#include "proto/protocol.hpp"

namespace lf::soak {

namespace {

/// {"v": 1, "type": "submit", "id": ID, "prompt": P, "temperature": "hot", "max_tokens": N}
std::string bad_type_frame(const planned_request& r) {
  msgpack::sbuffer buf;
  msgpack::packer<msgpack::sbuffer> pk(buf);
  pk.pack_map(6);
  pk.pack(std::string("v"));
  pk.pack_uint64(proto::protocol_version);
  pk.pack(std::string("type"));
  pk.pack(std::string("submit"));
  pk.pack(std::string("id"));
  pk.pack_uint64(r.id);
  pk.pack(std::string("prompt"));
  pk.pack(r.prompt);
  pk.pack(std::string("temperature"));
  pk.pack(std::string("hot"));
  pk.pack(std::string("max_tokens"));
  pk.pack_int64(r.max_tokens);
  return std::string(buf.data(), buf.size());
}

} // namespace

std::string submit_frame(const planned_request& r) {
  if (r.invalid == invalid_kind::bad_field_type)
    return bad_type_frame(r);
  proto::submit_msg m;
  m.id = proto::client_request_id{r.id};
  m.prompt = r.prompt;
  m.adapter = r.adapter;
  m.temperature = r.temperature;
  m.top_k = r.top_k;
  m.top_p = r.top_p;
  m.seed = r.seed;
  m.max_tokens = r.max_tokens;
  m.stop = r.stop;
  m.ignore_eos = r.ignore_eos;
  m.stream = true;
  return proto::encode(m);
}

std::string cancel_frame(std::uint64_t id) { return proto::encode(proto::cancel_msg{proto::client_request_id{id}}); }

} // namespace lf::soak
