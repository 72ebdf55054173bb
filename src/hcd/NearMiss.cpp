// Edit-distance suggestions for unknown names.
#include "hcd/NearMiss.h"

#include <algorithm>
#include <cctype>
#include <vector>

namespace unitile::hcd {
namespace {

// Levenshtein distance, case-insensitive, with one row of memory.
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t above = row[j];
      bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                  std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

} // namespace

std::optional<std::string> closest_name(std::string_view wrong,
                                        std::span<const std::string_view> candidates) {
  std::optional<std::string> best;
  size_t best_distance = 3; // more than 2 edits is not a typo
  for (std::string_view candidate : candidates) {
    size_t d = edit_distance(wrong, candidate);
    if (d < best_distance && 2 * d < std::max(wrong.size(), candidate.size())) {
      best_distance = d;
      best = std::string(candidate);
    }
  }
  return best;
}

} // namespace unitile::hcd
