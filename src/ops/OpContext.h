// The generator's side of an op instance: the concrete inputs and resolved attributes it
// reads, the checks with op-located errors, and the kernel text it writes.
#pragma once

#include "ops/Op.h"

#include <fmt/core.h>

#include <string>
#include <vector>

namespace unitile::ops {

class OpContext {
public:
  OpContext(const OpDef& op, std::map<std::string, TensorSpec> inputs, Attrs attrs);

  const OpDef& op() const { return op_; }

  // --- inputs -------------------------------------------------------------------------
  bool has(const std::string& port) const { return inputs_.count(port) != 0; }
  /// The concrete type of an input (a UserError if a required one is missing).
  const TensorSpec& in(const std::string& port) const;
  /// The instances of a variadic port: X0, X1, ... in order.
  std::vector<std::string> variadic(const std::string& port) const;

  // --- attributes (defaults already applied; kinds already checked) -------------------
  int64_t attr_int(const std::string& name) const;
  bool attr_bool(const std::string& name) const { return attr_int(name) != 0; }
  double attr_float(const std::string& name) const;
  std::string attr_string(const std::string& name) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;
  std::vector<double> attr_floats(const std::string& name) const;
  const Attrs& attrs() const { return attrs_; }

  // --- checks -------------------------------------------------------------------------
  /// Throws UserError "op:NAME: <message>".
  template <typename... Args>
  [[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) const {
    fail_text(fmt::format(f, std::forward<Args>(args)...));
  }
  [[noreturn]] void fail_text(const std::string& message) const;
  /// A possibly negative axis of a rank-`rank` tensor, normalised into [0, rank).
  int64_t axis(int64_t axis, int64_t rank, const std::string& what = "axis") const;
  /// A set of axes (empty = `empty_means_all` ? every axis : none), normalised, sorted,
  /// without repeats.
  std::vector<int64_t> axes(const std::vector<int64_t>& axes, int64_t rank,
                            bool empty_means_all = true) const;
  void require_float(const std::string& port) const;
  void require_integer(const std::string& port) const;
  void require_dtype_in(const std::string& port, const std::vector<DType>& allowed) const;
  /// Every listed input present has the same dtype as the first.
  void require_same_dtype(const std::vector<std::string>& ports) const;
  void require_rank(const std::string& port, int64_t rank) const;
  void require_rank_at_least(const std::string& port, int64_t rank) const;

  // --- kernel text --------------------------------------------------------------------
  /// Declares input `port` with its concrete type (only used inputs are declared).
  void input(const std::string& port);
  void output(const std::string& port, DType dtype, const std::vector<int64_t>& shape);
  void local(const std::string& name, DType dtype, const std::vector<int64_t>& shape);
  /// One comprehension, in Kernel IR text.
  void stmt(const std::string& text);
  template <typename... Args>
  void stmtf(fmt::format_string<Args...> f, Args&&... args) {
    stmt(fmt::format(f, std::forward<Args>(args)...));
  }

  /// The whole kernel, named `kernel_name`.
  std::string text(const std::string& kernel_name) const;
  const std::vector<std::string>& declared_inputs() const { return input_order_; }
  const std::vector<std::pair<std::string, TensorSpec>>& outputs() const { return outputs_; }

private:
  const OpDef& op_;
  std::map<std::string, TensorSpec> inputs_;
  Attrs attrs_;
  std::vector<std::string> input_order_;
  std::vector<std::pair<std::string, TensorSpec>> outputs_;
  std::vector<std::pair<std::string, TensorSpec>> locals_;
  std::vector<std::string> stmts_;
};

// --- text helpers shared by the generators ---------------------------------------------

/// "i0, i1, ..., i{rank-1}" (prefix "i"); `rank` 0 gives "".
std::string index_list(int64_t rank, const std::string& prefix = "i");
/// The names of index_list as a vector.
std::vector<std::string> index_names(int64_t rank, const std::string& prefix = "i");
std::string join(const std::vector<std::string>& parts, const std::string& sep = ", ");
/// `T[a, b, c]`.
std::string access(const std::string& tensor, const std::vector<std::string>& indices);
/// A float literal the parser reads back exactly (`inf`, `-inf`, `nan` included).
std::string float_literal(double v);
/// The dtype's text name, for `f32(x)` casts and declarations.
std::string dtype_text(DType t);
/// "[2, 3]" for messages.
std::string shape_text(const std::vector<int64_t>& shape);
int64_t numel(const std::vector<int64_t>& shape);

/// NumPy broadcasting of shapes: the result shape, or a UserError naming both.
std::vector<int64_t> broadcast_shapes(const OpContext& ctx,
                                      const std::vector<std::pair<std::string, TensorSpec>>& ins);
/// The indices that read input `in` inside an output nest of `out_rank` indices named
/// i0..: right-aligned, with broadcast (size-1) dimensions read at 0.
std::vector<std::string> broadcast_indices(const TensorSpec& in, int64_t out_rank,
                                           const std::vector<int64_t>& out_shape,
                                           const std::string& prefix = "i");

} // namespace unitile::ops
