// The operator library: every op by name, and an op instantiated for concrete inputs
// and attributes into a parsed, verified Kernel IR kernel.
#pragma once

#include "ir/Kernel.h"
#include "ops/Op.h"

#include <string>
#include <string_view>
#include <vector>

namespace unitile::ops {

/// Every op, sorted by name.
const std::vector<OpDef>& all_ops();
/// The op named `name`, or nullptr.
const OpDef* find_op(std::string_view name);
/// The op named `name`, or a UserError that lists close names.
const OpDef& op_or_error(std::string_view name);

/// An op written out for concrete inputs: one kernel named after the op, whose tensors
/// are the op's ports (inputs in port order, variadic ones as X0, X1, ...).
struct OpInstance {
  const OpDef* op = nullptr;
  Attrs attrs;                       // given + defaults
  std::string text;                  // the kernel's .ut text
  Module module;                     // parsed and verified; module.kernels[0]
  std::vector<std::string> inputs;   // the input tensors the kernel declares, in order
  std::vector<std::pair<std::string, TensorSpec>> outputs;
  const Kernel& kernel() const { return module.kernels.front(); }
};

/// Checks the inputs against the op's ports (unknown or missing names are errors),
/// resolves attributes, writes and verifies the kernel. Every rejection is a UserError
/// "op:NAME: ...".
OpInstance instantiate(const OpDef& op, const std::map<std::string, TensorSpec>& inputs,
                       const Attrs& attrs);

/// Attributes given, checked against the op's specs (unknown names, wrong kinds), with
/// the defaults of the ones not given.
Attrs resolve_attrs(const OpDef& op, const Attrs& given);
/// An attribute from its command-line text: `1`, `0.5`, `true`, `reflect`, `0,2,1`,
/// `[0, 2, 1]` (JSON), read as the kind the op declares.
AttrValue parse_attr_text(const OpDef& op, const std::string& name, const std::string& text);

/// The input port names an op takes when given these tensors: the ports in order, with a
/// variadic port expanded to the X0, X1, ... that are present.
std::vector<std::string> input_names(const OpDef& op, const std::vector<std::string>& present);

} // namespace unitile::ops
