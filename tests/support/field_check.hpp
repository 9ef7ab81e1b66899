#pragma once
/// Field-by-field checks for round-trip tests of messages (wire and actor): a test lists each
/// struct's fields once with LF_FIELDS, and then
///
///   unset_fields(x)   names the fields of `x` still at their default (recursively: a vector
///                     must be non-empty with every element set, an optional present and set)
///   differing(a, b)   names the fields that differ, with their paths ("ev.usage.cached_tokens")
///
/// LF_FIELDS binds the struct with a structured binding of exactly the names given, so a field
/// added to a struct without adding it to the list fails to compile. Together with a sample in
/// which every field is set (unset_fields empty), a field an encoder or an inspect() leaves out
/// comes back at its default and differing() names it.

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace lf::test {

/// The fields of T: specialised by LF_FIELDS (or by hand for a type with private members).
template <class T>
struct field_list {
  static constexpr bool known = false;
};

/// Lists `Type`'s fields; use inside namespace lf::test. The names must be every field of
/// `Type`, in declaration order.
#define LF_FIELDS(Type, ...)                                          \
  template <>                                                         \
  struct field_list<Type> {                                           \
    static constexpr bool known = true;                               \
    static constexpr const char* names = #__VA_ARGS__;                \
    static auto of(const Type& x) {                                   \
      const auto& [__VA_ARGS__] = x;                                  \
      return std::tie(__VA_ARGS__);                                   \
    }                                                                 \
  }

/// The i-th name of a comma-separated list.
inline std::string field_name(const char* names, std::size_t i) {
  std::string s(names), out;
  std::size_t at = 0;
  for (std::size_t k = 0; k <= i; ++k) {
    auto comma = s.find(',', at);
    out = s.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    at = comma == std::string::npos ? s.size() : comma + 1;
  }
  auto b = out.find_first_not_of(' ');
  auto e = out.find_last_not_of(' ');
  return b == std::string::npos ? out : out.substr(b, e - b + 1);
}

template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_map : std::false_type {};
template <class K, class V, class C, class A>
struct is_map<std::map<K, V, C, A>> : std::true_type {};

template <class T>
void collect_unset(const T& x, const T& d, const std::string& path, std::vector<std::string>& out);
template <class T>
void collect_diff(const T& a, const T& b, const std::string& path, std::vector<std::string>& out);

template <class T, std::size_t... I>
void unset_each(const T& x, const T& d, const std::string& path, std::vector<std::string>& out,
                std::index_sequence<I...>) {
  const auto xs = field_list<T>::of(x);
  const auto ds = field_list<T>::of(d);
  (collect_unset(std::get<I>(xs), std::get<I>(ds),
                 path + (path.empty() ? "" : ".") + field_name(field_list<T>::names, I), out),
   ...);
}

template <class T, std::size_t... I>
void diff_each(const T& a, const T& b, const std::string& path, std::vector<std::string>& out,
               std::index_sequence<I...>) {
  const auto as = field_list<T>::of(a);
  const auto bs = field_list<T>::of(b);
  (collect_diff(std::get<I>(as), std::get<I>(bs),
                path + (path.empty() ? "" : ".") + field_name(field_list<T>::names, I), out),
   ...);
}

template <class T>
constexpr std::size_t field_count() {
  return std::tuple_size_v<decltype(field_list<T>::of(std::declval<const T&>()))>;
}

template <class T>
void collect_unset(const T& x, const T& d, const std::string& path, std::vector<std::string>& out) {
  if constexpr (field_list<T>::known) {
    unset_each(x, d, path, out, std::make_index_sequence<field_count<T>()>{});
  } else if constexpr (is_vector<T>::value) {
    if (x.empty())
      out.push_back(path);
    for (std::size_t i = 0; i < x.size(); ++i)
      collect_unset(x[i], typename T::value_type{}, path + "[" + std::to_string(i) + "]", out);
  } else if constexpr (is_optional<T>::value) {
    if (!x)
      out.push_back(path);
    else
      collect_unset(*x, typename T::value_type{}, path, out);
  } else if constexpr (is_map<T>::value) {
    if (x.empty())
      out.push_back(path);
  } else {
    if (x == d)
      out.push_back(path);
  }
}

template <class T>
void collect_diff(const T& a, const T& b, const std::string& path, std::vector<std::string>& out) {
  if constexpr (field_list<T>::known) {
    diff_each(a, b, path, out, std::make_index_sequence<field_count<T>()>{});
  } else if constexpr (is_vector<T>::value) {
    if (a.size() != b.size()) {
      out.push_back(path + " (size)");
      return;
    }
    for (std::size_t i = 0; i < a.size(); ++i)
      collect_diff(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
  } else if constexpr (is_optional<T>::value) {
    if (a.has_value() != b.has_value())
      out.push_back(path + " (presence)");
    else if (a)
      collect_diff(*a, *b, path, out);
  } else {
    if (!(a == b))
      out.push_back(path);
  }
}

/// The paths of `x`'s fields left at their default (see the file comment); empty: all set.
template <class T>
std::vector<std::string> unset_fields(const T& x) {
  std::vector<std::string> out;
  collect_unset(x, T{}, "", out);
  return out;
}

/// The paths of the fields where `a` and `b` differ; empty: equal field by field.
template <class T>
std::vector<std::string> differing(const T& a, const T& b) {
  std::vector<std::string> out;
  collect_diff(a, b, "", out);
  return out;
}

} // namespace lf::test
