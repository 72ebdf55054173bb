// The comprehension differentiator: from a kernel's statements, the kernel computing its
// vector-Jacobian product (the gradients of its inputs from the cotangents of its outputs).
//
// Reverse mode over statements: for `T[I] (=|+=) e`, every read `R[J]` of a tensor on
// the gradient path gets `dR[J] += dT[I] * de/dR[J]`, a comprehension whose `+=` sums
// over the indices not in J, which is the chain rule for contractions, reductions and
// broadcasts at once. Statements defining tensors the derivatives read are recomputed
// first. What cannot be derived this way (max=/min=/*= reductions, indirect stores,
// reads with a non-bare index into a tensor that needs a gradient, ...) is reported, and
// the caller uses the op's registered gradient instead.
#pragma once

#include "ir/Kernel.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace unitile::graph {

struct VjpRequest {
  /// Outputs of the forward kernel that are given a cotangent (an input `d<Out>`).
  std::vector<std::string> cotangents;
  /// Inputs of the forward kernel whose gradient is wanted (an output `d<In>`).
  std::vector<std::string> wrt;
  /// Tensor names to use instead of `d<Out>` / `d<In>` (forward tensor -> name).
  std::map<std::string, std::string> names;
  /// Forward inputs renamed in the result (forward input -> name), e.g. to port names.
  std::map<std::string, std::string> renames;
  std::string kernel_name; // default: the forward kernel's name + "_vjp"
};

struct VjpKernel {
  std::string text;                                    // .ut text
  Module module;                                       // parsed and verified; module.kernels[0]
  std::map<std::string, std::string> cotangent_inputs; // forward output -> input name
  std::map<std::string, std::string> gradient_outputs; // forward input -> output name
  const Kernel& kernel() const { return module.kernels.front(); }
};

struct VjpDerivation {
  std::optional<VjpKernel> vjp;
  std::string why_not; // when vjp is empty: why the kernel cannot be differentiated
};

/// The VJP kernel of the verified kernel `forward`. Its inputs are the forward inputs the
/// derivative reads and the cotangents; its outputs the gradients of `request.wrt`, in
/// order (zeros where an input does not reach a differentiated output). Integer and bool
/// tensors carry no gradient. A derivation that is impossible returns `why_not`; the text
/// it writes is parsed and verified, so a malformed result is the verifier's UserError.
VjpDerivation derive_vjp(const Kernel& forward, const VjpRequest& request);

/// `k` with tensors renamed (old name -> new name) in its declarations and statements;
/// used to free the names a derivation must give its outputs (a vjp of a vjp kernel
/// wants G0 for a gradient while the forward's own output is G0).
Kernel rename_kernel_tensors(const Kernel& k, const std::map<std::string, std::string>& names);

} // namespace unitile::graph
