// Small tools the schedule primitives share for rebuilding Loop IR statements: copying a
// node with new parts, rewriting every expression of a tree, substituting a variable,
// finding loops by name, and folding the integer arithmetic that splits leave behind.
#pragma once

#include "ir/Loop.h"
#include "schedule/IndexArith.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace unitile {

/// A copy of `s` whose children are `body`.
Stmt with_body(const Stmt& s, std::vector<Stmt> body);
/// A copy of For `s` with another kind.
Stmt with_kind(const Stmt& s, ForKind kind);

/// Rebuild `s` bottom-up: children first, then `f(rebuilt node)`, which returns the
/// replacement (or its argument).
Stmt mutate(const Stmt& s, const std::function<Stmt(const Stmt&)>& f);

/// Rewrite every expression held by the tree (loop bounds, conditions, indices, values).
Stmt map_exprs(const Stmt& s, const std::function<Expr(const Expr&)>& f);

/// Replace variable `v` by `by` everywhere in `s`, then fold constants.
Stmt substitute(const Stmt& s, const std::string& v, const Expr& by);

/// Fold integer arithmetic on constants (x*1, x+0, 3*4, (a+5)//6 with a constant ...),
/// and `min(c, e)` to `c` where `e >= c` for every value of the loop variables in
/// `loops` (a split's tail test that cannot fail).
Expr simplify(const Expr& e, const LoopExtents& loops = {});
Stmt simplify(const Stmt& s);

/// The value of an integer constant expression.
std::optional<int64_t> const_int_value(const Expr& e);

/// Every For node named `v` in `s`, outermost first.
std::vector<const StmtNode*> find_loops(const Stmt& s, const std::string& v);

/// The largest value the extent of a loop can take: the constant itself, or `c` for a
/// split's `min(c, e)`; nullopt otherwise.
std::optional<int64_t> max_extent(const Expr& extent);

/// A name based on `base` that no buffer, param or loop of `p` uses yet.
std::string fresh_name(const LoopProgram& p, const std::string& base);

/// Names for a new nest that differ from every buffer and param of a program and from
/// each other (loop and let names inside a new launch need no more than that).
class NameSet {
public:
  explicit NameSet(const LoopProgram& p);
  /// `base` the first time, else `base_0`, `base_1`, ...: a name not handed out before.
  std::string fresh(const std::string& base);

private:
  std::set<std::string> taken_;
};

/// Whether `e` (guards included) reads buffer `b`; false for a null `e`.
bool expr_reads(const Expr& e, const std::string& b);
/// Whether an expression anywhere in `s`'s tree (loop bounds, conditions, indices,
/// stored values) reads buffer `b`.
bool stmt_reads(const Stmt& s, const std::string& b);
/// Whether `s`'s tree stores into buffer `b`.
bool stmt_writes(const Stmt& s, const std::string& b);

} // namespace unitile
