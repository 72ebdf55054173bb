// Counting a launch's operations and bytes from its Loop IR (see LaunchCost.h).
#include "profile/LaunchCost.h"

#include "schedule/ShapeEval.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <map>
#include <set>
#include <utility>
#include <vector>

namespace unitile::profile {
namespace {

constexpr size_t kDTypes = 10; // the DType enumerators, f16 .. bool

using Counts = std::array<double, kDTypes>;

Counts& operator+=(Counts& a, const Counts& b) {
  for (size_t i = 0; i < kDTypes; ++i)
    a[i] += b[i];
  return a;
}

Counts scaled(Counts c, double f) {
  for (double& x : c)
    x *= f;
  return c;
}

// Thrown inside the walk when the count cannot be known statically.
struct Uncountable {
  std::string why;
};

void add_vars(const Expr& e, std::set<std::string>& out) {
  visit(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var)
      out.insert(x->name);
  });
}

// One operation per arithmetic node, comparison and select; math calls one (fma two);
// casts and the indices of accesses (address arithmetic) nothing.
void count_value_ops(const Expr& e, Counts& c) {
  if (!e)
    return;
  switch (e->kind) {
  case ExprKind::Access:
    count_value_ops(e->guard, c);
    return;
  case ExprKind::Unary:
  case ExprKind::Binary:
  case ExprKind::Select:
    c[static_cast<size_t>(e->operands.back()->type)] += 1;
    break;
  case ExprKind::Call:
    c[static_cast<size_t>(e->operands[0]->type)] += e->math_fn == MathFn::Fma ? 2 : 1;
    break;
  default:
    break;
  }
  for (const Expr& o : e->operands)
    count_value_ops(o, c);
}

class OperationCounter {
public:
  Counts count(const Stmt& s) {
    if (++steps_ > kMaxCountSteps)
      throw Uncountable{
          fmt::format("its loop nest needs more than {} steps to count", kMaxCountSteps)};
    const std::vector<std::string>& control = control_vars(s);
    std::vector<int64_t> key_values;
    key_values.reserve(control.size());
    for (const std::string& v : control) {
      auto it = env_.find(v);
      if (it == env_.end())
        throw Uncountable{fmt::format("its control flow depends on '{}', which is data", v)};
      key_values.push_back(it->second);
    }
    auto key = std::make_pair(s.get(), std::move(key_values));
    if (auto it = memo_.find(key); it != memo_.end())
      return it->second;
    Counts c = count_uncached(s);
    memo_.emplace(std::move(key), c);
    return c;
  }

private:
  Counts count_uncached(const Stmt& s) {
    Counts c{};
    switch (s->kind) {
    case StmtKind::Store:
      count_value_ops(s->value, c);
      return c;
    case StmtKind::Barrier:
    case StmtKind::Prefetch:
      return c;
    case StmtKind::Matrix:
      // A multiply-add per (m, n, k) of the tile, in the operands' dtype.
      if (is_matrix_mma(s->matrix_op))
        c[static_cast<size_t>(s->value->operands[0]->type)] +=
            2.0 * static_cast<double>(s->shape[0] * s->shape[1] * s->shape[2]);
      return c;
    case StmtKind::Block:
    case StmtKind::Allocate:
      for (const Stmt& b : s->body)
        c += count(b);
      return c;
    case StmtKind::If: {
      const int64_t cond = eval(s->cond, "a branch");
      if (cond)
        return count(s->body[0]);
      return s->body.size() > 1 ? count(s->body[1]) : c;
    }
    case StmtKind::Let: {
      const std::optional<int64_t> v = known_int(s->value);
      if (!v)
        return count(s->body[0]); // not an integer we know: uses of it are data
      return with_bound(s->var, *v, [&] { return count(s->body[0]); });
    }
    case StmtKind::For: {
      const int64_t min = eval(s->min, "a loop start");
      const int64_t extent = eval(s->extent, "a loop extent");
      if (extent <= 0)
        return c;
      const std::vector<std::string>& inner = control_vars(s->body[0]);
      if (std::find(inner.begin(), inner.end(), s->var) == inner.end())
        return scaled(count(s->body[0]), static_cast<double>(extent));
      for (int64_t v = min; v < min + extent; ++v)
        c += with_bound(s->var, v, [&] { return count(s->body[0]); });
      return c;
    }
    }
    return c;
  }

  // The value of an integer expression over the bound variables; nullopt when it reads
  // data, is not an integer, or names a variable that is not bound.
  std::optional<int64_t> known_int(const Expr& e) const {
    bool integer = true;
    visit(e, [&](const Expr& x) {
      integer &= x->kind != ExprKind::Access && x->kind != ExprKind::FloatImm && !is_float(x->type);
    });
    if (!integer)
      return std::nullopt;
    try {
      return try_eval_int(e, env_, "a launch's operation count");
    } catch (const UserError&) { // a division by zero: the launch never gets there
      return std::nullopt;
    }
  }

  int64_t eval(const Expr& e, const char* what) {
    const std::optional<int64_t> v = known_int(e);
    if (!v)
      throw Uncountable{fmt::format("{} depends on data ({})", what, to_string(e))};
    return *v;
  }

  template <typename F> Counts with_bound(const std::string& var, int64_t value, F&& body) {
    auto old = env_.find(var);
    std::optional<int64_t> saved;
    if (old != env_.end())
      saved = old->second;
    env_[var] = value;
    Counts c = body();
    if (saved)
      env_[var] = *saved;
    else
      env_.erase(var);
    return c;
  }

  // The free variables a statement's operation count depends on: those of loop bounds,
  // branch conditions and the lets they read. Sorted; cached per node.
  const std::vector<std::string>& control_vars(const Stmt& s) {
    if (auto it = control_.find(s.get()); it != control_.end())
      return it->second;
    std::set<std::string> vars;
    switch (s->kind) {
    case StmtKind::Store:
    case StmtKind::Barrier:
    case StmtKind::Prefetch:
    case StmtKind::Matrix:
      break;
    case StmtKind::Block:
    case StmtKind::Allocate:
      for (const Stmt& b : s->body) {
        const auto& inner = control_vars(b);
        vars.insert(inner.begin(), inner.end());
      }
      break;
    case StmtKind::If:
      add_vars(s->cond, vars);
      for (const Stmt& b : s->body) {
        const auto& inner = control_vars(b);
        vars.insert(inner.begin(), inner.end());
      }
      break;
    case StmtKind::Let: {
      const auto& inner = control_vars(s->body[0]);
      vars.insert(inner.begin(), inner.end());
      if (vars.erase(s->var))
        add_vars(s->value, vars);
      break;
    }
    case StmtKind::For: {
      const auto& inner = control_vars(s->body[0]);
      vars.insert(inner.begin(), inner.end());
      vars.erase(s->var);
      add_vars(s->min, vars);
      add_vars(s->extent, vars);
      break;
    }
    }
    return control_.emplace(s.get(), std::vector<std::string>(vars.begin(), vars.end()))
        .first->second;
  }

  ShapeBindings env_;
  int64_t steps_ = 0;
  std::map<const StmtNode*, std::vector<std::string>> control_;
  std::map<std::pair<const StmtNode*, std::vector<int64_t>>, Counts> memo_;
};

// Every buffer name a statement reads (accesses anywhere) and writes (stores).
void collect_buffers(const Stmt& s, std::set<std::string>& reads, std::set<std::string>& writes) {
  auto reads_of = [&](const Expr& e) {
    visit(e, [&](const Expr& x) {
      if (x->kind == ExprKind::Access)
        reads.insert(x->name);
    });
  };
  reads_of(s->min);
  reads_of(s->extent);
  reads_of(s->cond);
  reads_of(s->value);
  for (const Expr& i : s->indices)
    reads_of(i);
  if (s->kind == StmtKind::Store)
    writes.insert(s->buffer);
  for (const Stmt& b : s->body)
    if (b)
      collect_buffers(b, reads, writes);
}

} // namespace

LaunchCost static_launch_cost(const LoopProgram& program, const LoopFunc& func) {
  LaunchCost cost;
  std::set<std::string> reads, writes;
  collect_buffers(func.body, reads, writes);
  auto bytes_of = [&](const std::string& name) {
    const LoopBuffer* b = program.find_buffer(name);
    if (!b)
      return 0.0; // an allocation inside the launch: not global traffic
    double elements = 1;
    for (int64_t d : b->shape)
      elements *= static_cast<double>(d);
    return elements * dtype_bytes(b->dtype);
  };
  for (const std::string& n : reads)
    cost.bytes += bytes_of(n);
  for (const std::string& n : writes)
    cost.bytes += bytes_of(n);

  try {
    OperationCounter counter;
    const Counts c = counter.count(func.body);
    double total = 0;
    size_t most = static_cast<size_t>(DType::F32);
    for (size_t i = 0; i < kDTypes; ++i) {
      total += c[i];
      if (c[i] > c[most])
        most = i;
    }
    cost.operations = total;
    cost.dtype = static_cast<DType>(most);
  } catch (const Uncountable& u) {
    cost.why_unknown = u.why;
  }
  return cost;
}

} // namespace unitile::profile
