// Enum names from one table each: the table lists every value with its name once, and the name
// of a value, the value of a name and the list of names for an error message all read it, so a
// new value is added in one place (no switch per use).
//
//   inline constexpr EnumNames<SpreadMode, 3> kSpreadModeNames = {{
//       {SpreadMode::kNone, "none"}, {SpreadMode::kPreferred, "preferred"}, ...}};
//   NameOf(kSpreadModeNames, mode);         // "preferred"
//   ValueOf(kSpreadModeNames, "required");  // SpreadMode::kRequired, or nullopt
//   NameList(kSpreadModeNames);             // "none, preferred or required"
//
// Thread safety: constexpr tables and pure functions.
#ifndef GPUTOPO_ENUM_NAMES_H_
#define GPUTOPO_ENUM_NAMES_H_

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace gputopo {

template <typename E, size_t N>
using EnumNames = std::array<std::pair<E, std::string_view>, N>;

// The value's name; "?" for a value the table lacks (a cast from bad data).
template <typename E, size_t N>
constexpr std::string_view NameOf(const EnumNames<E, N>& table, E value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

// The value named `name` exactly; nullopt when none is.
template <typename E, size_t N>
constexpr std::optional<E> ValueOf(const EnumNames<E, N>& table, std::string_view name) {
  for (const auto& [v, n] : table) {
    if (n == name) return v;
  }
  return std::nullopt;
}

// "a, b or c", in table order.
template <typename E, size_t N>
std::string NameList(const EnumNames<E, N>& table) {
  std::string out;
  for (size_t i = 0; i < N; ++i) {
    if (i > 0) out += i + 1 == N ? " or " : ", ";
    out += table[i].second;
  }
  return out;
}

}  // namespace gputopo

#endif  // GPUTOPO_ENUM_NAMES_H_
