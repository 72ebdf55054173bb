// Parsing and printing of byte sizes with binary units.
#include "hcd/Size.h"

#include <cctype>
#include <cstdio>
#include <limits>

namespace unitile::hcd {
namespace {

struct Unit {
  std::string_view suffix;
  int64_t bytes;
};
// Largest first, so printing picks the biggest exact unit.
constexpr Unit kUnits[] = {
    {"TiB", int64_t{1} << 40}, {"GiB", int64_t{1} << 30}, {"MiB", int64_t{1} << 20},
    {"KiB", int64_t{1} << 10},
};

} // namespace

std::optional<int64_t> parse_size(std::string_view text) {
  size_t i = 0;
  int64_t number = 0;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    int digit = text[i] - '0';
    if (number > (std::numeric_limits<int64_t>::max() - digit) / 10) return std::nullopt;
    number = number * 10 + digit;
    ++i;
  }
  if (i == 0) return std::nullopt;
  if (i < text.size() && text[i] == ' ') ++i;
  std::string_view suffix = text.substr(i);
  if (suffix.empty() || suffix == "B") return number;
  for (const auto& unit : kUnits) {
    if (suffix != unit.suffix) continue;
    if (number > std::numeric_limits<int64_t>::max() / unit.bytes) return std::nullopt;
    return number * unit.bytes;
  }
  return std::nullopt;
}

std::string size_literal(int64_t bytes) {
  if (bytes > 0) {
    for (const auto& unit : kUnits)
      if (bytes % unit.bytes == 0)
        return "\"" + std::to_string(bytes / unit.bytes) + std::string(unit.suffix) + "\"";
  }
  return std::to_string(bytes);
}

std::string human_size(int64_t bytes) {
  for (const auto& unit : kUnits) {
    if (bytes < unit.bytes) continue;
    if (bytes % unit.bytes == 0)
      return std::to_string(bytes / unit.bytes) + " " + std::string(unit.suffix);
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.1f %s", static_cast<double>(bytes) / unit.bytes,
                  std::string(unit.suffix).c_str());
    return buf;
  }
  return std::to_string(bytes) + " B";
}

} // namespace unitile::hcd
