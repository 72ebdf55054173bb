// What the profiler records: one event per kernel launch, and the devices they ran on.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Type.h"

#include <array>
#include <cstdint>
#include <optional>
#include <string>

namespace unitile::profile {

/// A device as the reports name it: `label` is DEVICE-ORDINAL ("cpu-0"); the ordinal
/// tells apart the same plugin under different HCDs (sim modelling two chips).
struct ProfiledDevice {
  std::string label;
  std::string name; // the device name, as `--device` takes it
  int ordinal = 0;
  hcd::Hcd hcd; // peak rates and bandwidths for the roofline
};

/// One launch, timed on the device's own timer (the ABI's timer call).
struct ProfileEvent {
  int device = 0;      // index into Profiler::devices()
  int queue = 0;       // the device's queue (the ABI has one per device)
  std::string name;    // the op or kernel launched ("MatrixMul", "softmax")
  std::string func;    // the launch: the Loop IR func ("MatrixMul_0_init")
  std::string shapes;  // the bound shapes ("K=64,M=64,N=64")
  int64_t call = 0;    // launches of one kernel invocation share this number
  double start_us = 0; // on the device's clock, from the profiler's start
  double duration_us = 0;
  double bytes = 0;                 // global buffers read plus written (LaunchCost.h)
  std::optional<double> operations; // arithmetic operations, when countable statically
  DType dtype = DType::F32;         // the dtype of most of those operations
  std::array<uint32_t, 3> grid{1, 1, 1}, block{1, 1, 1};
};

} // namespace unitile::profile
