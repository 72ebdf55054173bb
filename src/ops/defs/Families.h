// The op families of the library; each adds its ops to the list (one file per family).
#pragma once

#include "ops/Op.h"

#include <vector>

namespace unitile::ops {

void add_elementwise_ops(std::vector<OpDef>& ops);
void add_reduction_ops(std::vector<OpDef>& ops);
void add_data_movement_ops(std::vector<OpDef>& ops);
void add_indexing_ops(std::vector<OpDef>& ops);
void add_matmul_ops(std::vector<OpDef>& ops);
void add_normalization_ops(std::vector<OpDef>& ops);
void add_attention_ops(std::vector<OpDef>& ops);
void add_conv_ops(std::vector<OpDef>& ops);
void add_pool_ops(std::vector<OpDef>& ops);
void add_resize_ops(std::vector<OpDef>& ops);
void add_loss_ops(std::vector<OpDef>& ops);
void add_dropout_ops(std::vector<OpDef>& ops);
void add_optimizer_ops(std::vector<OpDef>& ops);
void add_onnx_extra_ops(std::vector<OpDef>& ops);
void add_quantization_ops(std::vector<OpDef>& ops);

} // namespace unitile::ops
