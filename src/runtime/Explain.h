// The text of `--explain`: the schedule a kernel was compiled with, where it came from
// and why (the auto-scheduler's reasons), as a pasteable `schedule { }` block, and each
// launch's grid and block.
#pragma once

#include "ir/Loop.h"
#include "schedule/Schedule.h"

#include <string>
#include <vector>

namespace unitile {

std::string schedule_explanation(const std::string& kernel, const Schedule& schedule, const std::string& origin,
                                 const std::vector<std::string>& reasons, const LoopProgram& program);

} // namespace unitile
