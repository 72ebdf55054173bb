// Device tensors: element counts (the rest is data).
#include "runtime/DeviceTensor.h"

#include "runtime/Tensor.h"

namespace unitile {

size_t DeviceTensor::numel() const { return shape_numel(shape); }

} // namespace unitile
