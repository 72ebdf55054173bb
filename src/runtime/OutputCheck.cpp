// Tolerances per dtype and the elementwise comparison against the reference.
#include "runtime/OutputCheck.h"

#include "ir/Diagnostic.h"

#include <fmt/core.h>

#include <cmath>

namespace unitile {

namespace {

// Integer value of a shape expression under `b`, or nullopt if it uses something unbound.
std::optional<int64_t> evaluate(const Expr& e, const ShapeBindings& b) {
  if (!e) return std::nullopt;
  switch (e->kind) {
  case ExprKind::IntImm: return e->int_value;
  case ExprKind::Var: {
    auto it = b.find(e->name);
    if (it == b.end()) return std::nullopt;
    return it->second;
  }
  case ExprKind::Cast: return evaluate(e->operands[0], b);
  case ExprKind::Unary: {
    auto x = evaluate(e->operands[0], b);
    if (!x || e->unary_op != UnaryOp::Neg) return std::nullopt;
    return -*x;
  }
  case ExprKind::Binary: {
    auto x = evaluate(e->operands[0], b), y = evaluate(e->operands[1], b);
    if (!x || !y) return std::nullopt;
    switch (e->binary_op) {
    case BinaryOp::Add: return *x + *y;
    case BinaryOp::Sub: return *x - *y;
    case BinaryOp::Mul: return *x * *y;
    case BinaryOp::Div:
      if (*y == 0) return std::nullopt;
      return *x / *y;
    case BinaryOp::FloorDiv: {
      if (*y == 0) return std::nullopt;
      int64_t q = *x / *y;
      if ((*x % *y != 0) && ((*x < 0) != (*y < 0))) --q;
      return q;
    }
    case BinaryOp::Mod: {
      if (*y == 0) return std::nullopt;
      int64_t r = *x % *y;
      if (r != 0 && ((r < 0) != (*y < 0))) r += *y;
      return r;
    }
    default: return std::nullopt;
    }
  }
  case ExprKind::Call: {
    if (e->operands.size() != 2 || (e->math_fn != MathFn::Min && e->math_fn != MathFn::Max))
      return std::nullopt;
    auto x = evaluate(e->operands[0], b), y = evaluate(e->operands[1], b);
    if (!x || !y) return std::nullopt;
    return e->math_fn == MathFn::Min ? std::min(*x, *y) : std::max(*x, *y);
  }
  default: return std::nullopt;
  }
}

std::string format_value(double v) { return fmt::format("{:.9g}", v); }

} // namespace

Tolerance tolerance_for(DType t, int64_t longest_reduction) {
  switch (t) {
  case DType::F64: return {1e-9, 1e-9};
  case DType::F32: return {1e-4 * std::sqrt(static_cast<double>(std::max<int64_t>(1, longest_reduction))), 1e-4};
  case DType::F16: return {1e-3, 2e-3};
  case DType::BF16: return {1e-2, 1.6e-2};
  default: return {0, 0};
  }
}

int64_t longest_reduction_extent(const Kernel& k, const ShapeBindings& b) {
  int64_t longest = 1;
  for (const Comprehension& c : k.body) {
    for (const std::string& v : c.reduction_vars) {
      auto it = c.ranges.find(v);
      if (it == c.ranges.end()) continue;
      if (auto n = evaluate(it->second, b)) longest = std::max(longest, *n);
    }
  }
  return longest;
}

std::string CheckReport::message() const {
  if (!failure) return fmt::format("check: ok max_abs_err={:.3g}", max_abs_err);
  const OutputMismatch& f = *failure;
  return fmt::format("check: FAILED {} at {}: got {}, expected {} (max_abs_err={:.3g}, {} of {} elements "
                     "outside tolerance)",
                     f.output, f.index, format_value(f.got), format_value(f.expected), f.max_abs_err, f.bad,
                     f.total);
}

CheckReport compare_outputs(const std::vector<std::string>& order, const std::map<std::string, Tensor>& got,
                            const std::map<std::string, Tensor>& ref, int64_t longest_reduction) {
  CheckReport report;
  for (const std::string& name : order) {
    auto g = got.find(name), r = ref.find(name);
    UT_INTERNAL_ASSERT(g != got.end() && r != ref.end(), "output '" + name + "' missing from a run");
    const Tensor& a = g->second;
    const Tensor& e = r->second;
    UT_INTERNAL_ASSERT(a.dtype == e.dtype && a.shape == e.shape,
                       "output '" + name + "' differs in dtype or shape between devices");
    const Tolerance tol = tolerance_for(a.dtype, longest_reduction);
    const bool exact = tol.atol == 0 && tol.rtol == 0;
    OutputMismatch m{name, {}, 0, 0, 0, 0, a.numel()};
    size_t first_bad = 0;
    for (size_t i = 0; i < m.total; ++i) {
      bool pass;
      double err = 0;
      if (exact) {
        const int64_t x = a.get_int(i), y = e.get_int(i);
        pass = x == y;
        err = std::fabs(static_cast<double>(x) - static_cast<double>(y));
      } else {
        const double x = a.get(i), y = e.get(i);
        if (std::isnan(y)) {
          pass = std::isnan(x);
          err = pass ? 0 : INFINITY;
        } else if (x == y) { // also equal infinities
          pass = true;
        } else {
          err = std::isnan(x) ? INFINITY : std::fabs(x - y);
          pass = err <= tol.atol + tol.rtol * std::fabs(y);
        }
      }
      m.max_abs_err = std::max(m.max_abs_err, err);
      if (!pass && m.bad++ == 0) {
        first_bad = i;
        m.got = a.get(i);
        m.expected = e.get(i);
      }
    }
    report.max_abs_err = std::max(report.max_abs_err, m.max_abs_err);
    if (m.bad && !report.failure) {
      m.index = index_string(a.shape, first_bad);
      report.failure = m;
    }
  }
  return report;
}

} // namespace unitile
