// Evaluation of integer shape and index expressions over concrete bindings.
//
// Shapes are declared as expressions over symbols (`M`, `2*D`, `(H+2*P-R)//T+1`) and
// loop ranges are inferred as such expressions; everything after binding needs them as
// numbers. Division follows the IR's semantics (`//` floors, `%` takes the divisor's
// sign, `/` truncates), so a shape computes the same here as in generated code.
#pragma once

#include "ir/Expr.h"
#include "ir/Kernel.h"

#include <cstdint>
#include <optional>
#include <string>

namespace unitile {

/// Value of `e` when every variable in it is in `b`; nullopt when one is not.
/// A division or modulo by zero is a UserError; `what` names the expression for it
/// (e.g. "dimension 2 of tensor 'O'").
std::optional<int64_t> try_eval_int(const Expr& e, const ShapeBindings& b,
                                    const std::string& what);

/// Like try_eval_int, but an unbound variable is a UserError naming `what`.
int64_t eval_int(const Expr& e, const ShapeBindings& b, const std::string& what);

/// Floor division and Python-style modulo on int64 (divisor must be non-zero).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);

} // namespace unitile
