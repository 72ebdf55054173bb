// Lowering of a verified, shape-bound kernel to Loop IR under the default schedule: one
// LoopFunc (one launch) per comprehension, in statement order, so that each statement
// sees the complete result of the ones before it.
#include "schedule/AccessBounds.h"
#include "schedule/DefaultSchedule.h"
#include "schedule/Lower.h"
#include "schedule/Primitives.h"
#include "schedule/ShapeEval.h"
#include "schedule/Specialize.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

namespace unitile {

namespace {

// The identity of a reduction in type `t`: 0, 1, -inf/+inf or the integer extremes.
Expr identity(ReduceKind r, DType t) {
  bool fl = is_float(t);
  switch (r) {
  case ReduceKind::Add: return fl ? float_imm(0.0, t) : int_imm(0, t);
  case ReduceKind::Mul: return fl ? float_imm(1.0, t) : int_imm(1, t);
  case ReduceKind::Max:
    if (fl) return float_imm(-std::numeric_limits<double>::infinity(), t);
    return int_imm(t == DType::I64 ? std::numeric_limits<int64_t>::min()
                                   : std::numeric_limits<int32_t>::min(),
                   t);
  case ReduceKind::Min:
    if (fl) return float_imm(std::numeric_limits<double>::infinity(), t);
    return int_imm(t == DType::I64 ? std::numeric_limits<int64_t>::max()
                                   : std::numeric_limits<int32_t>::max(),
                   t);
  case ReduceKind::Assign: break;
  }
  internal_fail(__FILE__, __LINE__, "an assignment has no identity");
}

Expr cast_to(DType t, const Expr& e) { return e->type == t ? e : cast(t, e); }

Expr combine(ReduceKind r, const Expr& acc, const Expr& v) {
  Expr x = cast_to(acc->type, v);
  switch (r) {
  case ReduceKind::Add: return binary(BinaryOp::Add, acc, x);
  case ReduceKind::Mul: return binary(BinaryOp::Mul, acc, x);
  case ReduceKind::Max: return call(MathFn::Max, {acc, x});
  case ReduceKind::Min: return call(MathFn::Min, {acc, x});
  case ReduceKind::Assign: break;
  }
  internal_fail(__FILE__, __LINE__, "an assignment does not combine");
}

// A name for the accumulator that no buffer, param or loop variable already uses.
std::string fresh_name(const std::string& base, const Kernel& k, const Comprehension& c) {
  auto taken = [&](const std::string& n) {
    return k.find_tensor(n) || k.find_param(n) || c.ranges.count(n);
  };
  if (!taken(base)) return base;
  for (int i = 0;; ++i) {
    std::string n = fmt::format("{}_{}", base, i);
    if (!taken(n)) return n;
  }
}

struct NestBuilder {
  const NestPlan& plan;
  const LoopExtents& loops;

  ForKind kind_of(const std::string& v, bool innermost) const {
    if (plan.grid_outermost && v == plan.order.front()) return ForKind::GridX;
    if (innermost && plan.vectorize_innermost && v == plan.order.back()) return ForKind::Vectorized;
    return ForKind::Serial;
  }

  // Loops over `vars` (outermost first) around `body`.
  Stmt wrap(const std::vector<std::string>& vars, Stmt body) const {
    for (size_t n = vars.size(); n-- > 0;)
      body = for_loop(vars[n], int_imm(0), int_imm(loops.at(vars[n])),
                      kind_of(vars[n], n + 1 == vars.size()), std::move(body));
    return body;
  }
};

// In C, and in Loop IR, loop variables share one namespace with buffers and params,
// while in Kernel IR a tensor `s` and an index `s` cannot be confused. Rename the index
// variables that collide (s -> s_0) so the generated code stays valid.
Comprehension with_unique_vars(const Kernel& k, const Comprehension& c) {
  auto taken = [&](const std::string& n) {
    return k.find_tensor(n) || k.find_param(n) || c.ranges.count(n);
  };
  std::map<std::string, std::string> renamed;
  for (const auto& [v, r] : c.ranges) {
    if (!k.find_tensor(v) && !k.find_param(v)) continue;
    for (int i = 0;; ++i) {
      std::string n = fmt::format("{}_{}", v, i);
      bool used = taken(n);
      for (const auto& [from, to] : renamed) used |= to == n;
      if (used) continue;
      renamed[v] = n;
      break;
    }
  }
  if (renamed.empty()) return c;
  auto name_of = [&](const std::string& v) {
    auto it = renamed.find(v);
    return it == renamed.end() ? v : it->second;
  };
  Comprehension r = c;
  for (std::string& v : r.indices) v = name_of(v);
  for (std::string& v : r.reduction_vars) v = name_of(v);
  r.ranges.clear();
  for (const auto& [v, e] : c.ranges) r.ranges[name_of(v)] = e;
  auto rename = [&](const Expr& e) -> Expr {
    if (e->kind != ExprKind::Var || !renamed.count(e->name)) return e;
    return var(renamed.at(e->name), e->type, e->loc);
  };
  r.value = rewrite(c.value, rename);
  for (Expr& i : r.store_indices) i = rewrite(i, rename);
  return r;
}

// Index `//` and `%` may divide by shape symbols (`k // C`); once they are bound, each
// divisor in an index must be a positive constant.
void check_index_divisors(const std::string& kernel, const Expr& value) {
  visit(value, [&](const Expr& a) {
    if (a->kind != ExprKind::Access) return;
    for (const Expr& i : a->operands)
      visit(i, [&](const Expr& e) {
        if (e->kind != ExprKind::Binary ||
            (e->binary_op != BinaryOp::FloorDiv && e->binary_op != BinaryOp::Mod))
          return;
        const Expr& d = e->operands[1];
        if (d->kind == ExprKind::IntImm && d->int_value > 0) return;
        if (reads_tensor(d)) return; // a data-dependent index: the device handles it
        throw UserError(Diagnostic{
            {}, e->loc,
            fmt::format("kernel '{}': index divisor '{}' in {}[...] is not a positive constant for "
                        "these shapes",
                        kernel, to_string(d), a->name),
            "bind the shape symbols it divides by to positive values", {}, 1});
      });
  });
}

// An indirect store (scatter) `Y[Idx[i, j], j] OP= v`: one loop per index variable, in
// the statement's order, updating the output in place; no identity is stored, since
// the statement updates values an earlier one wrote. Two points of the domain may hit
// the same element, so loops run serially, except that a variable standing alone as a
// left-hand index goes on the grid: its different values write disjoint elements.
// Keeping the other loops in statement order makes `=` with repeated indices
// deterministic (the last point in row-major order wins) on every device.
Stmt lower_indirect_store(const Kernel& k, const Comprehension& c, const TensorDecl& out,
                          const ShapeBindings& b, const std::set<std::string>& names,
                          const ConcreteShapes& shapes, const LoopExtents& loops,
                          const hcd::Hcd& hcd) {
  std::vector<Expr> out_index;
  for (const Expr& i : c.store_indices) out_index.push_back(specialize(i, names, b));
  const Expr out_access = access(c.output, out_index, out.dtype, nullptr, c.loc);
  const Expr value = specialize(c.value, names, b);
  check_index_divisors(k.name, value);
  for (const Expr& i : out_index) check_index_divisors(k.name, i);
  check_access_bounds(k.name, out_access, value, shapes, loops);

  std::vector<std::string> order = c.indices;
  order.insert(order.end(), c.reduction_vars.begin(), c.reduction_vars.end());
  const int64_t max_grid = hcd.max_grid.empty() ? 0 : hcd.max_grid[0];
  std::string grid_var;
  for (const Expr& i : c.store_indices)
    if (i->kind == ExprKind::Var && loops.at(i->name) <= max_grid) {
      grid_var = i->name;
      break;
    }
  if (!grid_var.empty()) {
    order.erase(std::find(order.begin(), order.end(), grid_var));
    order.insert(order.begin(), grid_var);
  }
  Expr v = c.reduce == ReduceKind::Assign ? value : combine(c.reduce, out_access, value);
  Stmt body = store(c.output, out_index, cast_to(out.dtype, v));
  for (size_t n = order.size(); n-- > 0;)
    body = for_loop(order[n], int_imm(0), int_imm(loops.at(order[n])),
                    order[n] == grid_var ? ForKind::GridX : ForKind::Serial, std::move(body));
  return body;
}

// The init nest of an in-place reduction, when it is lowered as a launch of its own.
struct Lowered {
  Stmt init; // may be null
  Stmt main;
};

Lowered lower_comprehension(const Kernel& k, const Comprehension& original, const ShapeBindings& b,
                            const std::set<std::string>& names, const ConcreteShapes& shapes,
                            const hcd::Hcd& hcd, const LowerOptions& options) {
  const Comprehension c = with_unique_vars(k, original);
  const TensorDecl* out = k.find_tensor(c.output);
  UT_INTERNAL_ASSERT(out != nullptr, "comprehension writes unknown tensor '" + c.output + "'");
  if (c.reduce == ReduceKind::Assign && !c.reduction_vars.empty())
    throw UserError(Diagnostic{
        {}, c.loc,
        fmt::format("kernel '{}': assignment to '{}' has reduction variables ({}...)", k.name,
                    c.output, c.reduction_vars.front()),
        "use a reduction (+=, *=, max=, min=) to combine over them", {}, 1});

  LoopExtents loops;
  auto add_range = [&](const std::string& v) {
    auto it = c.ranges.find(v);
    UT_INTERNAL_ASSERT(it != c.ranges.end(), "index variable '" + v + "' has no range");
    loops[v] = eval_int(it->second, b, fmt::format("the range of '{}' in kernel '{}'", v, k.name));
    UT_INTERNAL_ASSERT(loops[v] > 0, "range of '" + v + "' is not positive");
  };
  for (const std::string& v : c.indices) add_range(v);
  for (const std::string& v : c.reduction_vars) add_range(v);
  if (c.is_indirect_store()) return {nullptr, lower_indirect_store(k, c, *out, b, names, shapes, loops, hcd)};

  std::vector<Expr> out_index;
  for (size_t n = 0; n < c.indices.size(); ++n)
    out_index.push_back(var(c.indices[n], DType::I64,
                            n < c.index_locs.size() ? c.index_locs[n] : SourceLoc{}));
  const Expr out_access = access(c.output, out_index, out->dtype, nullptr, c.loc);
  const Expr value = specialize(c.value, names, b);
  check_index_divisors(k.name, value);
  check_access_bounds(k.name, out_access, value, shapes, loops);

  const NestPlan plan = plan_nest(c, out_access, value, out->dtype, loops, hcd, options.separate_init);
  const NestBuilder nest{plan, loops};
  auto store_out = [&](Expr v) { return store(c.output, out_index, std::move(v)); };

  if (plan.accumulate == AccumulateIn::Nothing)
    return {nullptr, nest.wrap(plan.order, store_out(cast_to(out->dtype, value)))};

  auto is_spatial = [&](const std::string& v) {
    return std::find(c.indices.begin(), c.indices.end(), v) != c.indices.end();
  };
  std::string grid_var = plan.grid_outermost ? plan.order.front() : std::string();
  std::vector<std::string> inside(plan.order.begin() + (plan.grid_outermost ? 1 : 0),
                                  plan.order.end());

  if (plan.accumulate == AccumulateIn::Output) {
    std::vector<std::string> init_vars;
    for (const std::string& v : inside)
      if (is_spatial(v)) init_vars.push_back(v);
    if (options.separate_init) {
      // Two launches: the identity over the whole output (on the grid), then the update
      // nest as one plain perfect nest that a schedule is free to tile and reorder.
      std::vector<std::string> spatial_order;
      for (const std::string& v : plan.order)
        if (is_spatial(v)) spatial_order.push_back(v);
      Stmt init = nest.wrap(spatial_order, store_out(identity(c.reduce, out->dtype)));
      Stmt update = store_out(combine(c.reduce, out_access, value));
      for (size_t n = plan.order.size(); n-- > 0;)
        update = for_loop(plan.order[n], int_imm(0), int_imm(loops.at(plan.order[n])),
                          n + 1 == plan.order.size() && plan.vectorize_innermost ? ForKind::Vectorized
                                                                                 : ForKind::Serial,
                          update);
      return {init, update};
    }
    Stmt init = nest.wrap(init_vars, store_out(identity(c.reduce, out->dtype)));
    Stmt update = nest.wrap(inside, store_out(combine(c.reduce, out_access, value)));
    Stmt body = block({init, update});
    return {nullptr, grid_var.empty() ? body : nest.wrap({grid_var}, body)};
  }

  // Register accumulator: [spatial][reduction], partial result in the compute type.
  const DType acc_t = compute_type(out->dtype);
  const std::string acc = fresh_name("acc", k, c);
  const Expr acc0 = access(acc, {int_imm(0)}, acc_t);
  std::vector<std::string> spatial_inside, reduction;
  for (const std::string& v : inside) (is_spatial(v) ? spatial_inside : reduction).push_back(v);
  // A bf16 or f16 result: the value too is computed in the compute type (products of
  // narrow floats are exact in f32), as widen does for the auto-scheduler (Widen.cpp).
  const Expr wide = acc_t != out->dtype ? widen_value(value, acc_t) : value;
  Stmt reduce_nest = nest.wrap(reduction, store(acc, {int_imm(0)}, combine(c.reduce, acc0, wide)));
  Stmt body = allocate(acc, acc_t, {1}, MemScope::Register,
                       block({store(acc, {int_imm(0)}, identity(c.reduce, acc_t)), reduce_nest,
                              store_out(cast_to(out->dtype, acc0))}));
  body = nest.wrap(spatial_inside, body);
  return {nullptr, grid_var.empty() ? body : nest.wrap({grid_var}, body)};
}

} // namespace

LoopProgram lower_to_loops(const Kernel& k, const ShapeBindings& b, const hcd::Hcd& hcd,
                           const LowerOptions& options) {
  LoopProgram p;
  p.kernel = k.name;
  ConcreteShapes shapes;
  for (const TensorDecl& t : k.tensors) {
    LoopBuffer buf{t.name, t.dtype, concrete_shape(k, t.name, b), t.role};
    shapes[t.name] = buf.shape;
    p.buffers.push_back(std::move(buf));
  }
  const std::set<std::string> specialized = specialization_params(k);
  for (const ParamDecl& prm : k.params)
    if (!specialized.count(prm.name)) p.params.push_back(prm);

  const std::set<std::string> names = bound_names(k);
  for (size_t n = 0; n < k.body.size(); ++n) {
    Lowered l = lower_comprehension(k, k.body[n], b, names, shapes, hcd, options);
    if (l.init) p.funcs.push_back(LoopFunc{fmt::format("{}_{}_init", k.name, n), l.init});
    p.funcs.push_back(LoopFunc{fmt::format("{}_{}", k.name, n), l.main});
  }
  return p;
}

} // namespace unitile
