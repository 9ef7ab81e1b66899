#include "cache/adapter_registry.hpp"

#include <algorithm>
#include <stdexcept>

namespace lf::cache {

std::string_view to_string(adapter_op op) noexcept {
  switch (op) {
    case adapter_op::add: return "add";
    case adapter_op::update: return "update";
    case adapter_op::remove: return "remove";
  }
  return "unknown";
}

std::optional<adapter_op> parse_adapter_op(std::string_view s) noexcept {
  for (auto op : {adapter_op::add, adapter_op::update, adapter_op::remove})
    if (s == to_string(op))
      return op;
  return std::nullopt;
}

std::string adapter_key(std::string_view name, std::uint32_t version) {
  return std::string(name) + "@" + std::to_string(version);
}

std::optional<std::pair<std::string_view, std::uint32_t>> split_adapter_key(std::string_view key) {
  const auto at = key.rfind('@');
  if (at == std::string_view::npos || at == 0 || at + 1 == key.size() || key.size() - at > 10
      || key[at + 1] == '0')
    return std::nullopt;
  std::uint64_t v = 0;
  for (auto c : key.substr(at + 1)) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + static_cast<std::uint64_t>(c - '0');
  }
  if (v > 0xffffffffu)
    return std::nullopt;
  return std::make_pair(key.substr(0, at), static_cast<std::uint32_t>(v));
}

bool is_prefix_of(const std::vector<adapter_event>& log, const std::vector<adapter_event>& longer) {
  if (log.size() > longer.size())
    return false;
  for (std::size_t i = 0; i < log.size(); ++i) {
    const auto &a = log[i], &b = longer[i];
    if (a.seq != b.seq || a.op != b.op || a.name != b.name || a.version != b.version
        || a.source.path != b.source.path || a.source.hash != b.source.hash)
      return false;
  }
  return true;
}

std::optional<adapter_event> adapter_registry::next(adapter_op op, const std::string& name,
                                                    adapter_source source, std::int64_t at_ms,
                                                    std::string& error) const {
  const auto it = names_.find(name);
  const bool live = it != names_.end() && !it->second.removed;
  adapter_event e;
  e.seq = last_seq() + 1;
  e.op = op;
  e.name = name;
  e.at_ms = at_ms;
  switch (op) {
    case adapter_op::add:
      if (live) {
        error = "adapter " + name + " is registered already (version "
                + std::to_string(it->second.latest) + "); update it or remove it first";
        return std::nullopt;
      }
      e.version = it == names_.end() ? 1 : it->second.latest + 1;
      e.source = std::move(source);
      break;
    case adapter_op::update:
    case adapter_op::remove:
      if (!live) {
        error = "adapter " + name
                + (it == names_.end() ? " is not registered" : " was removed");
        return std::nullopt;
      }
      e.version = it->second.latest + (op == adapter_op::update ? 1 : 0);
      if (op == adapter_op::update)
        e.source = std::move(source);
      break;
  }
  return e;
}

bool adapter_registry::apply(const adapter_event& e) {
  if (e.seq <= last_seq())
    return false;
  if (e.seq != last_seq() + 1)
    throw std::invalid_argument("adapter log: event " + std::to_string(e.seq) + " follows event "
                                + std::to_string(last_seq()));
  std::string error;
  auto expect = next(e.op, e.name, e.source, e.at_ms, error);
  if (!expect)
    throw std::invalid_argument("adapter log: event " + std::to_string(e.seq) + ": " + error);
  if (expect->version != e.version)
    throw std::invalid_argument("adapter log: event " + std::to_string(e.seq) + " gives " + e.name
                                + " version " + std::to_string(e.version) + ", expected "
                                + std::to_string(expect->version));
  auto& st = names_[e.name];
  if (e.op == adapter_op::add)
    st.first = e.version;
  st.latest = e.version;
  st.removed = e.op == adapter_op::remove;
  st.updated_ms = e.at_ms;
  if (e.op != adapter_op::remove)
    sources_[adapter_key(e.name, e.version)] = e.source;
  log_.push_back(e);
  return true;
}

adapter_resolution adapter_registry::resolve(std::string_view requested) const {
  adapter_resolution r;
  if (requested.empty())
    return r;
  std::string_view name = requested;
  std::optional<std::uint32_t> version;
  if (auto split = split_adapter_key(requested)) {
    name = split->first;
    version = split->second;
  }
  const auto it = names_.find(std::string(name));
  if (it == names_.end()) {
    r.key = std::string(requested);
    if (version) {
      r.error = serve_errc::unknown_adapter;
      r.message = "adapter " + std::string(name) + " is not registered, so it has no version "
                  + std::to_string(*version);
    }
    return r;
  }
  if (it->second.removed) {
    r.error = serve_errc::unknown_adapter;
    r.message = "adapter " + std::string(name) + " was removed";
    return r;
  }
  const auto v = version.value_or(it->second.latest);
  if (v > it->second.latest) {
    r.error = serve_errc::unknown_adapter;
    r.message = "adapter " + std::string(name) + " has no version " + std::to_string(v)
                + " (latest " + std::to_string(it->second.latest) + ")";
    return r;
  }
  if (v < it->second.first) {  // before the name was removed and added again
    r.error = serve_errc::unknown_adapter;
    r.message = "adapter " + std::string(name) + " version " + std::to_string(v)
                + " was removed (versions " + std::to_string(it->second.first) + " to "
                + std::to_string(it->second.latest) + " are live)";
    return r;
  }
  r.key = adapter_key(name, v);
  return r;
}

const adapter_source* adapter_registry::source(std::string_view key) const {
  auto it = sources_.find(std::string(key));
  return it == sources_.end() ? nullptr : &it->second;
}

std::vector<std::string> adapter_registry::retired_by(const adapter_event& e) const {
  std::vector<std::string> out;
  if (e.op == adapter_op::add)
    return out;
  const auto last = e.op == adapter_op::update ? e.version - 1 : e.version;
  for (std::uint32_t v = 1; v <= last; ++v)
    if (auto key = adapter_key(e.name, v); sources_.count(key) != 0)
      out.push_back(std::move(key));
  return out;
}

std::vector<adapter_record> adapter_registry::list() const {
  std::vector<adapter_record> out;
  for (const auto& [name, st] : names_) {
    adapter_record r;
    r.name = name;
    r.latest = st.latest;
    r.removed = st.removed;
    r.updated_ms = st.updated_ms;
    if (auto* s = source(adapter_key(name, st.latest)))
      r.source = *s;
    out.push_back(std::move(r));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

std::vector<adapter_event> adapter_registry::since(std::uint64_t seq) const {
  std::vector<adapter_event> out;
  for (const auto& e : log_)
    if (e.seq > seq)
      out.push_back(e);
  return out;
}

} // namespace lf::cache
