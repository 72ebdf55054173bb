// What a library op is: its ports, attributes with defaults, and the generator that
// writes its Kernel IR for concrete input dtypes and shapes.
//
// An op is not a hand-written kernel per dtype and rank. It is a function from
// (input dtypes and shapes, attribute values) to the text of one Kernel IR kernel, which
// then goes through the same parser, verifier, scheduler and devices as any .ut file.
// Shapes are concrete in the generated kernel: the rank, broadcasting pattern and axes
// decide the comprehension's indices, and the Loop IR is specialised per shape anyway.
#pragma once

#include "ir/Type.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace unitile::ops {

/// An attribute value: an integer (also bools, as 0/1), a float, a string, or a list of
/// integers (axes, perm, strides, pads) or floats.
using AttrValue =
    std::variant<int64_t, double, std::string, std::vector<int64_t>, std::vector<double>>;
using Attrs = std::map<std::string, AttrValue>;

enum class AttrKind : uint8_t { Int, Bool, Float, String, Ints, Floats };

struct AttrSpec {
  std::string name;
  AttrKind kind = AttrKind::Int;
  /// The default; nullopt means the attribute is required.
  std::optional<AttrValue> default_value;
  std::string doc;
};

/// What an input holds, which decides the dtype a random input gets when `unitile run
/// op:NAME` is not given one: data takes `--dtype` (f32 by default), indices i64, masks
/// bool.
enum class PortKind : uint8_t { Data, Index, Mask };

/// An input or output of an op. Optional inputs (a bias, a mask) may be left out. A
/// variadic input (concat's X) is given as X0, X1, ... in order, at least one; a variadic
/// output (split's Y) is written as Y0, Y1, ..., as many as the instance makes.
struct Port {
  std::string name;
  PortKind kind = PortKind::Data;
  bool optional = false;
  bool variadic = false;
};

/// A concrete tensor type: what an op is instantiated for.
struct TensorSpec {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  bool operator==(const TensorSpec&) const = default;
};

class OpContext;

struct OpDef {
  std::string name;
  std::string category; // matmul, elementwise, reduction, normalization, ...
  std::string summary;  // one line for `unitile ops`
  std::vector<Port> inputs, outputs;
  std::vector<AttrSpec> attrs;
  /// The op that computes this op's input gradients from the output gradient, when it
  /// has one (relu -> relu_grad); empty when the op has no gradient.
  std::string gradient;
  /// Writes the kernel: declares the ports it uses and the comprehensions. Throws
  /// UserError (through OpContext::fail) on dtypes, shapes or attributes it rejects.
  std::function<void(OpContext&)> emit;
};

/// An op from its parts, without a gradient (the definitions' shorthand).
OpDef make_op(std::string name, std::string category, std::string summary, std::vector<Port> inputs,
              std::vector<Port> outputs, std::vector<AttrSpec> attrs, std::function<void(OpContext&)> emit);

std::string attr_kind_name(AttrKind k);
std::string attr_value_text(const AttrValue& v);

} // namespace unitile::ops
