// Lowering under a schedule: Kernel IR -> Loop IR with the schedule's primitives applied
// in order, then tails partitioned and the result verified.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"
#include "ir/Loop.h"
#include "schedule/Schedule.h"

namespace unitile {

/// Lower `k` under `b` (separate init launches for in-place reductions) and apply `s`.
/// A primitive with `on T` applies to the launch of the statement writing T; without
/// it, to every launch that has the loop it names. Errors are UserErrors naming the
/// primitive.
LoopProgram lower_scheduled(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd,
                            const Schedule& s);

/// The schedule a kernel's `schedule { }` block holds, or nullopt without one.
std::optional<Schedule> kernel_schedule(const Kernel& k);

} // namespace unitile
