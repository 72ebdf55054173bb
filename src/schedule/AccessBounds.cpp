// Compile-time range check of every unguarded tensor access.
#include "schedule/AccessBounds.h"

#include <fmt/core.h>

namespace unitile {

namespace {

std::string where(const SourceLoc& loc) {
  return loc.valid() ? fmt::format(" (line {}:{})", loc.line, loc.col) : std::string();
}

// The access as the user would write it, without its guard.
std::string access_text(const Expr& a) { return to_string(with_operands(a, a->operands, nullptr)); }

void check_one(const std::string& kernel, const Expr& a, bool is_write,
               const ConcreteShapes& shapes, const LoopExtents& loops) {
  auto it = shapes.find(a->name);
  UT_INTERNAL_ASSERT(it != shapes.end(), "access to unknown tensor '" + a->name + "'");
  const std::vector<int64_t>& shape = it->second;
  UT_INTERNAL_ASSERT(shape.size() == a->operands.size(),
                     "rank mismatch in access to '" + a->name + "' (the verifier checks this)");
  const char* verb = is_write ? "write" : "read";
  std::string hint =
      is_write ? std::string()
               : fmt::format("use a guarded read `{} ?? 0` if padding is intended", access_text(a));
  for (size_t d = 0; d < shape.size(); ++d) {
    const Expr& idx = a->operands[d];
    // A data-dependent index (gather, scatter) is only known at run time: the sim device
    // checks it there and the C dialect clamps reads and skips stores that leave the
    // tensor (docs/ARCHITECTURE.md). Its own reads are checked below like any other.
    if (reads_tensor(idx)) continue;
    // The common case, a loop variable that runs over exactly this dimension.
    if (idx->kind == ExprKind::Var) {
      auto l = loops.find(idx->name);
      if (l != loops.end() && l->second == shape[d]) continue;
    }
    auto r = bounds_of(idx, loops);
    if (!r) {
      Diagnostic diag{{}, a->loc,
                      fmt::format("kernel '{}': {} {}{}: index {} ('{}') cannot be bounded at "
                                  "compile time",
                                  kernel, verb, access_text(a), where(a->loc), d, to_string(idx)),
                      hint, {}, 1};
      throw UserError(std::move(diag));
    }
    if (r->min >= 0 && r->max < shape[d]) continue;
    Diagnostic diag{{}, a->loc,
                    fmt::format("kernel '{}': {} {}{}: index {} ranges over [{}, {}] but "
                                "dimension {} of '{}' has extent {}",
                                kernel, verb, access_text(a), where(a->loc), d, r->min, r->max, d,
                                a->name, shape[d]),
                    hint, {}, 1};
    throw UserError(std::move(diag));
  }
}

void check_reads(const std::string& kernel, const Expr& e, const ConcreteShapes& shapes,
                 const LoopExtents& loops) {
  if (!e) return;
  if (e->kind == ExprKind::Access && !e->guard) check_one(kernel, e, false, shapes, loops);
  for (const Expr& o : e->operands) check_reads(kernel, o, shapes, loops);
  check_reads(kernel, e->guard, shapes, loops);
}

} // namespace

void check_access_bounds(const std::string& kernel, const Expr& store, const Expr& value,
                         const ConcreteShapes& shapes, const LoopExtents& loops) {
  check_one(kernel, store, true, shapes, loops);
  for (const Expr& i : store->operands) check_reads(kernel, i, shapes, loops); // scatter's Idx[...]
  check_reads(kernel, value, shapes, loops);
}

} // namespace unitile
