// Specialisation: replacing bound shape symbols and integer specialisation params by
// constants, then folding the integer arithmetic that this exposes.
//
// Loop IR works on concrete shapes, so `y*T + r - P` with T=1, P=0 must become `y + r`
// before the bounds check, the stride analysis and codegen look at it: a folded index is
// what makes "unit stride in y" visible, and what lets the C compiler see plain loops.
#pragma once

#include "ir/Expr.h"
#include "ir/Kernel.h"

#include <set>
#include <string>

namespace unitile {

/// Integer params of `k` that occur in an index expression (of an access or of a
/// comprehension's range). They are compile-time constants: bound before lowering,
/// folded into the code, and not kernel arguments.
std::set<std::string> specialization_params(const Kernel& k);

/// Shape symbols of `k` plus its specialisation params: the names bind_shapes binds.
std::set<std::string> bound_names(const Kernel& k);

/// Replace every variable of `e` named in `names` and bound in `b` by an integer
/// constant of the variable's type, then fold constants (see fold_constants).
Expr specialize(const Expr& e, const std::set<std::string>& names, const ShapeBindings& b);

/// Fold integer arithmetic on constants and the identities x+0, x-0, x*1, x*0, x//1,
/// x%1; casts of integer constants become constants of the target type.
Expr fold_constants(const Expr& e);

} // namespace unitile
