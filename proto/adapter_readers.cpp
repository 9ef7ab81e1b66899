#include "proto/adapter_readers.hpp"

#include <limits>

namespace lf::proto::detail {

namespace {

constexpr std::uint64_t u32_max = 0xffffffffu;

void read_row(field_reader& outer, const msgpack::object& o, std::size_t i, adapter_row& row) {
  const auto where = "adapters[" + std::to_string(i) + "]";
  field_reader r(o, where + ".", where);
  row.name = r.get_str("name", presence::required, max_adapter_bytes).value_or("");
  row.version = static_cast<std::uint32_t>(r.get_uint("version", presence::required, u32_max).value_or(0));
  row.removed = r.get_bool("removed", presence::required).value_or(false);
  row.path = r.get_str("path", presence::required, max_path_bytes).value_or("");
  row.hash = r.get_str("hash", presence::required, 16).value_or("");
  row.rank = static_cast<std::uint32_t>(r.get_uint("rank", presence::required, u32_max).value_or(0));
  row.targets = r.get_str("targets", presence::required, max_name_bytes).value_or("");
  row.bytes = r.get_uint("bytes", presence::required, ~std::uint64_t{0}).value_or(0);
  row.updated_ms = r.get_int("updated_ms", presence::required, 0, std::numeric_limits<std::int64_t>::max()).value_or(0);
  row.resident = static_cast<std::uint32_t>(r.get_uint("resident", presence::required, u32_max).value_or(0));
  r.finish();
  if (!r.ok())
    outer.fail(r.error());
}

} // namespace

void read_adapters(field_reader& r, adapters_msg& m) {
  m.op = r.get_str("op", presence::required, max_name_bytes).value_or("");
  const bool list = m.op == "list", named = m.op == "add" || m.op == "update" || m.op == "remove";
  if (r.ok() && !list && !named)
    r.fail("op must be list, add, update or remove (got " + quote(m.op) + ")");
  m.name = r.get_str("name", list ? presence::optional : presence::required, max_adapter_bytes).value_or("");
  const bool wants_path = m.op == "add" || m.op == "update";
  m.path = r.get_str("path", wants_path ? presence::required : presence::optional, max_path_bytes).value_or("");
  if (r.ok() && named && m.name.empty())
    r.fail("name must not be empty");
  if (r.ok() && wants_path && m.path.empty())
    r.fail("path must not be empty");
  if (r.ok() && !wants_path && !m.path.empty())
    r.fail("path is only for add and update");
}

void read_adapters_result(field_reader& r, adapters_result& m) {
  if (auto code = r.get_str("code", presence::optional, max_name_bytes)) {
    const auto parsed = parse_serve_errc(*code);
    if (parsed && *parsed != serve_errc::none)
      m.error = *parsed;
    else
      r.fail("code must be an error code such as invalid_request (got " + quote(*code) + ")");
  }
  m.message = r.get_str("message", presence::required, max_text_bytes).value_or("");
  m.seq = r.get_uint("seq", presence::required, ~std::uint64_t{0}).value_or(0);
  if (const auto* a = r.get_array("adapters", presence::required, max_adapter_rows)) {
    m.adapters.resize(a->size);
    for (std::uint32_t i = 0; i < a->size && r.ok(); ++i)
      read_row(r, a->ptr[i], i, m.adapters[i]);
  }
}

} // namespace lf::proto::detail
