// Kernel IR: a kernel is named tensors (inputs, outputs, locals), scalar params, and an
// ordered list of tensor comprehensions such as `C[i,j] += A[i,k] * B[k,j]`.
#pragma once

#include "ir/Expr.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace unitile {

enum class TensorRole : uint8_t { Input, Output, Local };

struct TensorDecl {
  std::string name;
  DType dtype = DType::F32;
  /// One expression per dimension: an integer literal, a shape symbol (`M`), or an
  /// expression over symbols (`2*D`, `(H-R)//S+1`). Rank 0 (a scalar tensor) is allowed.
  std::vector<Expr> shape;
  TensorRole role = TensorRole::Input;
  SourceLoc loc;
};

/// A scalar passed at call time. Integer params used inside index expressions are
/// specialisation constants (bound before lowering, like shape symbols); all other params
/// are kernel arguments, so changing them does not recompile.
struct ParamDecl {
  std::string name;
  DType dtype = DType::F32;
  SourceLoc loc;
};

/// `=` assigns; the rest reduce, starting from the identity (0, 1, -inf, +inf).
enum class ReduceKind : uint8_t { Assign, Add, Mul, Max, Min };
const char* reduce_token(ReduceKind k); // "=", "+=", "*=", "max=", "min="

/// One statement `out[i, j, ...] OP= value`. Index variables on the left are spatial;
/// variables that occur only on the right are reduction axes.
struct Comprehension {
  std::string output;               // tensor written (an output or a local)
  std::vector<std::string> indices; // left-hand index variables, distinct
  std::vector<SourceLoc> index_locs;
  ReduceKind reduce = ReduceKind::Assign;
  Expr value;
  SourceLoc loc;
  /// Indirect store (scatter), empty otherwise: the left-hand side's index expressions,
  /// one per dimension of `output`, each a bare index variable or a data-dependent
  /// integer expression such as `Idx[i, j]`, as in `Y[Idx[i, j], j] += U[i, j]`. Such a
  /// statement does not define its whole output: it updates, in place, elements of a
  /// tensor an earlier statement wrote, once per point of its domain in row-major order
  /// (so with `=` and repeated indices the last point wins). The verifier then fills
  /// `indices` with the index variables the left-hand side mentions.
  std::vector<Expr> store_indices;
  bool is_indirect_store() const { return !store_indices.empty(); }
  // Filled by the verifier:
  std::vector<std::string> reduction_vars; // in order of first appearance on the right
  /// Extent of every index variable (spatial and reduction), as an expression over shape
  /// symbols, inferred from the dimensions it indexes.
  std::map<std::string, Expr> ranges;
};

struct Kernel {
  std::string name;
  SourceLoc loc;
  std::vector<TensorDecl> tensors; // in declaration order: inputs, outputs, locals mixed
  std::vector<ParamDecl> params;
  std::vector<Comprehension> body;
  /// Optional `schedule { ... }` block that follows the kernel (Scheduling issue); kept as
  /// raw text here so the core round-trips it.
  std::optional<std::string> schedule_text;
  /// Where the schedule text starts, for diagnostics (not part of equality).
  std::string schedule_file;
  SourceLoc schedule_loc;

  const TensorDecl* find_tensor(const std::string& name) const;
  const ParamDecl* find_param(const std::string& name) const;
  std::vector<const TensorDecl*> inputs() const;
  std::vector<const TensorDecl*> outputs() const;
  /// Shape symbols in order of first appearance in the declarations.
  std::vector<std::string> shape_symbols() const;
};

/// A parsed .ut file: several kernels.
struct Module {
  std::vector<Kernel> kernels;
  const Kernel* find(const std::string& name) const;
};

/// Concrete values for shape symbols and integer specialisation params.
using ShapeBindings = std::map<std::string, int64_t>;

/// Structural equality of kernels and modules: names, declarations, statements, the
/// verifier's results and schedule text; source locations are ignored (KernelEqual.cpp).
bool equal(const Kernel& a, const Kernel& b);
bool equal(const Module& a, const Module& b);

} // namespace unitile
