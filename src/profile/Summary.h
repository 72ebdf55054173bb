// The per-device aggregate of a profile: one row per kernel (and shape), with its calls,
// times, share of the device's time and achieved rates. The table, the HTML report and
// the roofline all read this.
#pragma once

#include "profile/ProfileEvent.h"

#include <optional>
#include <string>
#include <vector>

namespace unitile::profile {

struct KernelRow {
  std::string name, shapes;
  int64_t calls = 0; // kernel invocations (a call may be several launches)
  int64_t launches = 0;
  double total_us = 0, min_us = 0, max_us = 0; // min/max over calls
  double percent = 0;                          // of the device's time
  double bytes = 0;                            // summed over every launch
  std::optional<double> operations;
  DType dtype = DType::F32;
  double avg_us() const { return calls ? total_us / static_cast<double>(calls) : 0; }
  std::optional<double> gflops() const; // operations / time
  double gbs() const;                   // bytes / time
  /// Operations per byte; nullopt without operations or bytes.
  std::optional<double> intensity() const;
};

struct DeviceSummary {
  ProfiledDevice device;
  int index = 0;
  double total_us = 0; // device time: the sum of every launch's duration
  int64_t launches = 0;
  std::vector<KernelRow> rows; // slowest first
};

/// One summary per device that has events, in device order.
std::vector<DeviceSummary> summarize(const std::vector<ProfiledDevice>& devices,
                                     const std::vector<ProfileEvent>& events);

/// Peak rate of `dtype` from the HCD (f32's if it names none for it); nullopt if none.
std::optional<double> peak_gflops(const hcd::Hcd& hcd, DType dtype);
/// The bandwidth of the device's memory (the last [[memory]] level); nullopt if none.
std::optional<double> memory_bandwidth_gbps(const hcd::Hcd& hcd);

} // namespace unitile::profile
