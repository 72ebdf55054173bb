// Printing chip-model reports: a table for people and JSON for programs.
#pragma once

#include "backends/sim/ChipModel.h"

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace unitile::sim {

/// The readable table of one kernel's launches: per launch the operation counts, one
/// row per memory level (requests, hit rate, bytes read and written, time) and the
/// estimate with what bounds it.
std::string format_report(const KernelReport& r);

/// The same numbers as JSON (times in seconds, sizes and traffic in bytes).
nlohmann::json report_json(const KernelReport& r);

} // namespace unitile::sim
