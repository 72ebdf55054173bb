// The Session's view of the tuning database: the best recorded schedule for a kernel's
// tuning key, used in place of the auto-scheduler's when one exists.
#pragma once

#include "runtime/Session.h"

#include <filesystem>
#include <optional>

namespace unitile {

/// A lookup reading the database at `path` (opened on first use, never created; none
/// there means no tuned schedules). A database that cannot be read is reported once on
/// stderr and then ignored, so compiling never fails for its sake.
ScheduleLookup tuning_database_lookup(std::optional<std::filesystem::path> path);

} // namespace unitile
