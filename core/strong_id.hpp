#pragma once
/// Strong integer ids: a `request_id` cannot be passed where a `block_id` is expected, and a raw
/// integer must be wrapped explicitly. Header-only, standard library only, so the pure cores
/// (cache/, the worker's scheduler, the router's placement) can use it without CAF.

#include <cstdint>
#include <functional>
#include <ostream>

namespace lf {

/// An integer of type `T` tagged with `Tag`. Comparable, hashable and printable; no arithmetic.
template <class Tag, class T = std::uint64_t>
class strong_id {
public:
  using value_type = T;

  constexpr strong_id() noexcept = default;
  constexpr explicit strong_id(T value) noexcept : value_(value) {}

  /// The wrapped integer.
  constexpr T value() const noexcept { return value_; }

  friend constexpr bool operator==(strong_id a, strong_id b) noexcept { return a.value_ == b.value_; }
  friend constexpr bool operator!=(strong_id a, strong_id b) noexcept { return a.value_ != b.value_; }
  friend constexpr bool operator<(strong_id a, strong_id b) noexcept { return a.value_ < b.value_; }
  friend constexpr bool operator>(strong_id a, strong_id b) noexcept { return a.value_ > b.value_; }
  friend constexpr bool operator<=(strong_id a, strong_id b) noexcept { return a.value_ <= b.value_; }
  friend constexpr bool operator>=(strong_id a, strong_id b) noexcept { return a.value_ >= b.value_; }

  friend std::ostream& operator<<(std::ostream& os, strong_id id) { return os << id.value_; }

  /// CAF-style inspection so ids can travel inside actor messages.
  template <class Inspector>
  friend auto inspect(Inspector& f, strong_id& x) {
    return f(x.value_);
  }

private:
  T value_{};
};

} // namespace lf

template <class Tag, class T>
struct std::hash<lf::strong_id<Tag, T>> {
  std::size_t operator()(lf::strong_id<Tag, T> id) const noexcept { return std::hash<T>{}(id.value()); }
};
