// Launching a compiled kernel while a profiler is active: each launch between two
// device timer events, then one profile event per launch with its static cost.
//
// A Session owns one of these, made at its first profiled launch, so a session that is
// never profiled pays nothing but the check for an active profiler. Event times are on
// the device's own clock: at the first launch of a recording the device's queue is
// drained and an anchor event recorded together with the host time since the
// profiler's start; every launch is then placed at anchor + device elapsed time.
// Waiting for the queue after each kernel call is what profiling costs
// (docs/PERFORMANCE.md measures it per launch).
#pragma once

#include "profile/LaunchCost.h"
#include "profile/Profiler.h"
#include "runtime/Device.h"
#include "runtime/KernelCache.h"

#include <map>
#include <vector>

namespace unitile {

struct CompiledKernel;

class LaunchProfiling {
public:
  /// Launch every func of `ck` in order with `args`, timing each, wait for the device,
  /// and record the events into `profiler`.
  void launch_all(const Device& device, const CompiledKernel& ck, const std::vector<ut_arg>& args,
                  profile::Profiler& profiler);

private:
  // What every launch of one compiled kernel shares, worked out at its first profiled call.
  struct KernelFacts {
    std::vector<profile::LaunchCost> costs; // per func
    std::string shapes;
  };
  const KernelFacts& facts(const CompiledKernel& ck);

  uint64_t epoch_ = 0; // the recording the anchor belongs to
  int device_ = 0;     // the device's index in that recording
  DeviceEvent anchor_;
  double anchor_us_ = 0;
  std::map<CacheKey, KernelFacts> facts_;
};

} // namespace unitile
