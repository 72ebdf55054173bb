// What a tuning record is about: the kernel's structure, the shape bucket, the dtype and
// the device's HCD, each reduced to a short stable string.
#pragma once

#include "hcd/Hcd.h"
#include "ir/Kernel.h"

#include <string>

namespace unitile {

struct TuningKey {
  std::string kernel_hash; // hex hash of the kernel's printed Kernel IR without its schedule block
  std::string shape;       // the shape bucket: every bound value, "K=64,M=64,N=64"
  std::string dtype;       // the output dtypes, "f32" (several: "f32,f64")
  std::string hcd_hash;    // hex of hcd::Hcd::hash()
  bool operator==(const TuningKey&) const = default;
};

/// The key of kernel `k` under bindings `b` on `hcd`. A shape bucket is the exact bound
/// values: a record applies only to the shape it was measured on.
TuningKey tuning_key(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd);

/// The kernel's structure hash alone (a `schedule { }` block after it does not change it).
std::string kernel_structure_hash(const Kernel& k);

/// "A=1,B=2" in name order.
std::string shape_bucket(const ShapeBindings& b);

} // namespace unitile
