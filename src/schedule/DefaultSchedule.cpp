// Loop order, accumulator placement, grid and vector choices of the default schedule.
#include "schedule/DefaultSchedule.h"

#include <algorithm>
#include <set>

namespace unitile {

namespace {

std::vector<Expr> reads_of(const Expr& value) {
  std::vector<Expr> reads;
  visit(value, [&](const Expr& e) {
    if (e->kind == ExprKind::Access) reads.push_back(e);
  });
  return reads;
}

// How many elements an access can touch over the loop nest.
double footprint(const Expr& access, const LoopExtents& loops) {
  std::set<std::string> vars;
  for (const Expr& i : access->operands)
    visit(i, [&](const Expr& e) {
      if (e->kind == ExprKind::Var && loops.count(e->name)) vars.insert(e->name);
    });
  double n = 1;
  for (const std::string& v : vars) n *= static_cast<double>(loops.at(v));
  return n;
}

std::string choose_innermost(const Comprehension& c, const std::vector<Expr>& accesses,
                             const LoopExtents& loops) {
  // Preference on ties: the last left-hand variable, then the others from the right,
  // then reduction variables from the last one.
  std::vector<std::string> candidates(c.indices.rbegin(), c.indices.rend());
  candidates.insert(candidates.end(), c.reduction_vars.rbegin(), c.reduction_vars.rend());
  std::string best;
  double best_score = -1;
  for (const std::string& v : candidates) {
    // A loop of one iteration (a kept reduced axis) is never worth being innermost.
    if (loops.count(v) && loops.at(v) == 1 && candidates.size() > 1) continue;
    double score = 0;
    for (const Expr& a : accesses)
      if (unit_stride_in(a, v)) score += footprint(a, loops);
    if (score > best_score) {
      best = v;
      best_score = score;
    }
  }
  return best;
}

bool reads_allow_vectorizing(const std::vector<Expr>& reads, const std::string& v) {
  for (const Expr& r : reads) {
    bool moves = false;
    for (const Expr& i : r->operands) moves |= depends_on(i, v);
    if (!moves) continue;
    if (r->guard || !unit_stride_in(r, v)) return false;
  }
  return true;
}

} // namespace

NestPlan plan_nest(const Comprehension& c, const Expr& store, const Expr& value, DType out,
                   const LoopExtents& loops, const hcd::Hcd& hcd, bool output_row_innermost) {
  NestPlan plan;
  const std::vector<std::string>& spatial = c.indices;
  const std::vector<Expr> reads = reads_of(value);
  auto is_spatial = [&](const std::string& v) {
    return std::find(spatial.begin(), spatial.end(), v) != spatial.end();
  };

  std::string inner;
  if (c.reduce == ReduceKind::Assign) {
    plan.accumulate = AccumulateIn::Nothing;
    plan.order = spatial;
    if (!spatial.empty()) inner = spatial.back();
  } else {
    std::vector<Expr> accesses = reads;
    accesses.push_back(store);
    inner = choose_innermost(c, accesses, loops);
    if (output_row_innermost && !spatial.empty() && loops.at(spatial.back()) > 1 &&
        unit_stride_in(store, spatial.back()) &&
        reads_allow_vectorizing(reads, spatial.back()))
      inner = spatial.back();
    if (!inner.empty() && is_spatial(inner) && compute_type(out) == out) {
      plan.accumulate = AccumulateIn::Output;
      for (const std::string& v : spatial)
        if (v != inner) plan.order.push_back(v);
      plan.order.insert(plan.order.end(), c.reduction_vars.begin(), c.reduction_vars.end());
      plan.order.push_back(inner);
    } else {
      plan.accumulate = AccumulateIn::Register;
      plan.order = spatial;
      for (const std::string& v : c.reduction_vars)
        if (v != inner) plan.order.push_back(v);
      if (!inner.empty() && !is_spatial(inner)) plan.order.push_back(inner);
    }
  }
  if (plan.order.empty()) return plan;

  const std::string& outer = plan.order.front();
  int64_t max_grid = hcd.max_grid.empty() ? 0 : hcd.max_grid[0];
  plan.grid_outermost = is_spatial(outer) && loops.at(outer) <= max_grid;

  const std::string& last = plan.order.back();
  bool inner_is_own_loop = !(plan.grid_outermost && plan.order.size() == 1);
  plan.vectorize_innermost = inner_is_own_loop && plan.accumulate != AccumulateIn::Register && is_spatial(last) && last == spatial.back() &&
                             unit_stride_in(store, last) && reads_allow_vectorizing(reads, last);
  return plan;
}

} // namespace unitile
