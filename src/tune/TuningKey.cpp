// Tuning keys: hashes of the kernel's structure and of the HCD, the shape bucket, the dtype.
#include "tune/TuningKey.h"

#include "ir/Printer.h"

#include <fmt/core.h>
#include <xxhash.h>

namespace unitile {

std::string kernel_structure_hash(const Kernel& k) {
  Kernel bare = k;
  bare.schedule_text.reset();
  const std::string text = to_string(bare);
  return fmt::format("{:016x}", XXH3_64bits(text.data(), text.size()));
}

std::string shape_bucket(const ShapeBindings& b) {
  std::string out;
  for (const auto& [name, value] : b)
    out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, value);
  return out;
}

TuningKey tuning_key(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd) {
  TuningKey key;
  key.kernel_hash = kernel_structure_hash(k);
  key.shape = shape_bucket(b);
  for (const TensorDecl* t : k.outputs())
    key.dtype += (key.dtype.empty() ? "" : ",") + std::string(dtype_name(t->dtype));
  key.hcd_hash = fmt::format("{:016x}", hcd.hash());
  return key;
}

} // namespace unitile
