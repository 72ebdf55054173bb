// Checking a func's launch against the HCD's limits before anything is compiled.
//
// Why it exists: a launch the device cannot run (a work-group larger than the device
// allows, more shared memory than a block has) otherwise fails deep inside a vendor
// driver with a numeric code, or not at all on devices that do not check. The HCD says
// what fits, so the runtime refuses such a launch up front, naming the func, the limit
// and the HCD it came from.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Loop.h"

namespace unitile {

/// Bytes of shared-scope allocations live in `f` (all of them: a bound, not a peak).
int64_t shared_bytes(const LoopFunc& f);

/// UserError when `dims` or `f`'s shared memory exceed `hcd`'s [limits] or
/// max_threads_per_block; `kernel` names the kernel in the message.
void check_launch_limits(const std::string& kernel, const LoopFunc& f, const LaunchDims& dims,
                         const hcd::Hcd& hcd);

} // namespace unitile
