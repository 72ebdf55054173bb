// The Chrome Trace Event JSON of a profile, which Perfetto (ui.perfetto.dev) and
// chrome://tracing open: one complete event (ph "X", ts and dur in microseconds) per
// launch, pid = device, tid = queue, and metadata events naming both.
#pragma once

#include "profile/ProfileEvent.h"

#include <nlohmann/json.hpp>

#include <vector>

namespace unitile::profile {

nlohmann::json chrome_trace(const std::vector<ProfiledDevice>& devices,
                            const std::vector<ProfileEvent>& events);

} // namespace unitile::profile
