// "Did you mean ...?" for misspelt keys, sections and device names.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace unitile::hcd {

/// The candidate closest to `wrong` by edit distance, if it is close enough to be a
/// plausible typo (at most 2 edits, and fewer than half of the word's letters).
std::optional<std::string> closest_name(std::string_view wrong,
                                        std::span<const std::string_view> candidates);

} // namespace unitile::hcd
