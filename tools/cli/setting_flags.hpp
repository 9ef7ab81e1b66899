#pragma once
/// The flags of a settings table (worker::worker_keys, router::router_keys): read, checked and
/// listed in --help from the rows, so a key's flag, range and doc are the table's. A key's flag is
/// its name with '_' -> '-' (`max_seqs`: --max-seqs) unless its row names another; a boolean is
/// `--FLAG on|off` or a switch `--no-FLAG`.

#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/setting_key.hpp"
#include "tools/common/args.hpp"

namespace lf::tools {

/// The flags of `keys` that take no value ("no-prefix-cache", "metrics-need-key"), added to `out`
/// (for args).
template <class S>
void add_setting_switches(const std::vector<settings::setting_key<S>>& keys, std::set<std::string>& out) {
  for (const auto& k : keys)
    if (k.in_flags() && k.type == settings::key_type::boolean) {
      if (k.bool_style == settings::bool_flag::no_switch)
        out.insert("no-" + k.flag_name());
      else if (k.bool_style == settings::bool_flag::yes_switch)
        out.insert(k.flag_name());
    }
}

/// Reads the flags of `keys` from `a` into `out`; a flag not given leaves its field as it is.
/// std::invalid_argument naming the flag for a value of the wrong type, out of range ("--max-seqs
/// must be in [1, 4096] (got 0)") or not one of the choices ("--mode must be continuous, static or
/// static_no_cache (got 'x')").
template <class S>
void read_setting_flags(args& a, const std::vector<settings::setting_key<S>>& keys, S& out) {
  using settings::key_type;
  using settings::value;
  for (const auto& k : keys) {
    if (!k.in_flags())
      continue;
    const auto flag = k.flag_name();
    const auto now = k.get(out);
    switch (k.type) {
      case key_type::integer:
        k.set(out, value{static_cast<std::int64_t>(a.integer_in(flag, std::get<std::int64_t>(now),
                                                                 static_cast<long long>(k.lo),
                                                                 static_cast<long long>(k.hi)))});
        break;
      case key_type::number:
        k.set(out, value{a.real_above(flag, std::get<double>(now), k.lo, true, k.hi)});
        break;
      case key_type::boolean:
        if (k.bool_style == settings::bool_flag::no_switch) {
          if (a.has("no-" + flag))
            k.set(out, value{false});
        } else if (k.bool_style == settings::bool_flag::yes_switch) {
          if (a.has(flag))
            k.set(out, value{true});
        } else {
          const auto v = a.str(flag, std::get<bool>(now) ? "on" : "off");
          if (v != "on" && v != "off")
            throw std::invalid_argument("--" + flag + " must be on or off (got '" + v + "')");
          k.set(out, value{v == "on"});
        }
        break;
      case key_type::text:
      case key_type::path:
        k.set(out, value{a.str(flag, std::get<std::string>(now))});
        break;
      case key_type::choice: {
        const auto v = a.str(flag, std::get<std::string>(now));
        if (!k.set(out, value{v}))
          throw std::invalid_argument("--" + flag + " " + settings::not_a_choice(k, v, false));
        break;
      }
      case key_type::paths:
        if (a.has(flag)) {
          std::vector<std::string> list;
          std::stringstream in(a.str(flag));
          for (std::string p; std::getline(in, p, ',');)
            if (!p.empty())
              list.push_back(p);
          k.set(out, value{list});
        }
        break;
    }
  }
}

/// --help's lines for the flags of `keys`, with the defaults of `shown` (as the command applies
/// them).
template <class S>
std::string setting_flags_help(const std::vector<settings::setting_key<S>>& keys, const S& shown) {
  std::string out;
  for (const auto& k : keys)
    if (k.in_flags())
      out += settings::help_lines(k, k.get(shown));
  return out;
}

} // namespace lf::tools
