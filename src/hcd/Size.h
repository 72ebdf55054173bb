// Byte sizes as HCD files write them ("32KiB", "1MiB") and as summaries print them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace unitile::hcd {

/// "512B", "32KiB", "1MiB", "2GiB", "1TiB" (optional space before the unit, optional
/// "B" for plain bytes) to bytes; nullopt for anything else, including decimal units
/// and values that overflow int64.
std::optional<int64_t> parse_size(std::string_view text);
/// The TOML value for `bytes`: a quoted exact binary-unit string ("48KiB") when bytes is
/// a non-zero multiple of 1 KiB, else the plain integer.
std::string size_literal(int64_t bytes);
/// For people: "48 KiB", "1.5 MiB", "105 MiB", "512 B".
std::string human_size(int64_t bytes);

} // namespace unitile::hcd
