// A tensor that lives in one device's memory: dtype, concrete shape (C order, dense) and
// a buffer shared by every holder, so results can feed the next kernel without a copy
// through the host.
#pragma once

#include "ir/Type.h"
#include "runtime/Device.h"

#include <cstdint>
#include <memory>
#include <vector>

namespace unitile {

struct DeviceTensor {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::shared_ptr<const DeviceBuffer> buffer;

  size_t numel() const;
  size_t nbytes() const { return numel() * static_cast<size_t>(dtype_bytes(dtype)); }
};

} // namespace unitile
