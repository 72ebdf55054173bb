// The op families of the library; each adds its ops to the list (one file per family).
#pragma once

#include "ops/Op.h"

#include <vector>

namespace unitile::ops {

void add_elementwise_ops(std::vector<OpDef>& ops);
void add_reduction_ops(std::vector<OpDef>& ops);
void add_matmul_ops(std::vector<OpDef>& ops);
void add_normalization_ops(std::vector<OpDef>& ops);
void add_attention_ops(std::vector<OpDef>& ops);

} // namespace unitile::ops
