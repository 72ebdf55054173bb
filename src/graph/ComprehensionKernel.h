// A kernel from bare comprehension statements (`C[i,j] += A[i,k] * B[k,j]`) and the
// concrete types of its inputs: what `tl.comprehension` compiles. The declarations a .ut
// file would spell out are inferred: tensors only read are inputs, in order of first
// appearance; a written tensor that a later statement reads is a local, the others are
// outputs; a written tensor's extents come from the input dimensions its left-hand
// indices stand alone in; names used only outside brackets are scalar params.
#pragma once

#include "ir/Kernel.h"

#include <map>
#include <string>
#include <vector>

namespace unitile::graph {

/// The names a set of statements uses, by role, in order of first appearance.
struct ComprehensionSignature {
  std::vector<std::string> inputs, outputs, locals, params;
};

/// Reads the statements (separated by newlines or `;`) without types. Malformed text is
/// a UserError pointing into it.
ComprehensionSignature comprehension_signature(const std::string& statements);

struct TensorType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
};

struct ComprehensionTypes {
  std::map<std::string, TensorType> inputs;
  std::map<std::string, DType> params;
  /// The dtype of written tensors; empty: the first input's.
  std::optional<DType> dtype;
};

/// The kernel `name` for these statements and concrete input types, verified, as .ut text
/// and parsed. A written tensor whose extent cannot be inferred, a missing or extra
/// input, or any verifier error is a UserError.
struct ComprehensionKernel {
  std::string text;
  Module module;
  const Kernel& kernel() const { return module.kernels.front(); }
};
ComprehensionKernel comprehension_kernel(const std::string& name, const std::string& statements,
                                         const ComprehensionTypes& types);

} // namespace unitile::graph
