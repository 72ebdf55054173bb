// The per-device summary as a text table: name, calls, total/avg/min/max time, share of
// the device's time, achieved GFLOP/s and GB/s, shapes.
#pragma once

#include "profile/Summary.h"

#include <string>
#include <vector>

namespace unitile::profile {

std::string format_tables(const std::vector<DeviceSummary>& summaries);

} // namespace unitile::profile
