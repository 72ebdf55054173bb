// The text timeline: one line per device, `cpu-0: MatrixMul(62%) -> Softmax(38%)`, with
// the devices' lines aligned so the same step sits in the same column.
//
// A line is the device's launches in time order with consecutive launches of one kernel
// merged (a matmul's init and update launches are one step). When the steps repeat
// exactly (`--repeat N` runs the same sequence N times) one period is shown and each
// step's share sums its every repetition; otherwise every step is shown. A share is the
// step's time over the device's total time, rounded to a whole percent.
#pragma once

#include "profile/ProfileEvent.h"

#include <string>
#include <vector>

namespace unitile::profile {

struct TimelineStep {
  std::string name;
  double time_us = 0;
  double percent = 0;
};

/// The steps of device `device` (after merging and folding repeats).
std::vector<TimelineStep> timeline_steps(int device, const std::vector<ProfileEvent>& events);

/// Every device that has events, one line each.
std::string format_timeline(const std::vector<ProfiledDevice>& devices,
                            const std::vector<ProfileEvent>& events);

} // namespace unitile::profile
