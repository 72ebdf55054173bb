// A kernel's inputs for one call: checking given tensors against the declarations and
// filling in the rest with seeded random tensors.
#pragma once

#include "ir/Kernel.h"
#include "runtime/Tensor.h"

#include <map>
#include <string>
#include <vector>

namespace unitile {

/// UserError unless `t` has dtype `want` and shape `shape`; the message names the input
/// and gives the expected and the actual dtype and shape.
void check_input_tensor(const std::string& name, DType want, const std::vector<int64_t>& shape,
                        const Tensor& t);

/// Every input of `k` under `b`: those in `given` (checked), the others random with
/// `seed`, each from its own stream derived from the input's name.
std::map<std::string, Tensor> complete_inputs(const Kernel& k, const ShapeBindings& b,
                                              std::map<std::string, Tensor> given, uint64_t seed);

/// Integer params that appear in index or shape expressions: they are specialisation
/// constants bound like shape symbols, not runtime arguments.
std::vector<std::string> specialisation_params(const Kernel& k);

} // namespace unitile
