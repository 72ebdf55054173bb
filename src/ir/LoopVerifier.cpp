// The Loop IR verifier: checks that a LoopProgram is internally consistent.
//
// Loop IR is produced by the compiler (lowering, schedules) or by the parser, which
// already reports user mistakes with locations; anything this finds is therefore a
// compiler bug and raises InternalError. It exists so that a broken pass fails at the
// pass, with a message naming the func and the offending name, instead of as wrong
// numbers on some device much later. Checked:
//  - names: buffers, params and funcs are unique; every variable, buffer and allocation
//    used is defined and in scope; no loop, let or allocation name shadows another;
//  - types: loop bounds are i64, a variable's type is its definition's (i64 for loop
//    variables, the value's for lets, the declared dtype for params), an access has its
//    buffer's dtype, indices and conditions are integers or bools, operand counts match;
//  - shapes: indices match the rank of the buffer or allocation;
//  - launch geometry: grid loops have constant extents and sit outermost (only lets,
//    blocks and other grid loops above them), each grid axis at most once per nest;
//    thread loops have constant extents.
#include "ir/Verifier.h"

#include <fmt/format.h>

#include <cctype>

#include <map>
#include <set>

namespace unitile {

namespace {

bool is_grid(ForKind k) { return k == ForKind::GridX || k == ForKind::GridY || k == ForKind::GridZ; }
bool is_thread(ForKind k) {
  return k == ForKind::ThreadX || k == ForKind::ThreadY || k == ForKind::ThreadZ;
}
bool is_index_type(DType t) { return is_integer(t) || t == DType::Bool; }

class LoopVerifier {
public:
  // `origin` empty: the program is the compiler's, and a failure an InternalError; else
  // it was read from that file, and a failure is the user's (UserError).
  explicit LoopVerifier(const LoopProgram& p, std::string origin = {}) : p_(p), origin_(std::move(origin)) {}

  void run() {
    if (p_.kernel.empty()) fail("the program has no kernel name");
    std::set<std::string> names;
    for (const LoopBuffer& b : p_.buffers) {
      if (b.name.empty()) fail("a buffer has an empty name");
      if (!names.insert(b.name).second) fail(fmt::format("'{}' is declared twice", b.name));
      for (int64_t d : b.shape)
        if (d < 0) fail(fmt::format("buffer '{}' has a negative dimension {}", b.name, d));
      buffers_[b.name] = {b.dtype, b.shape.size()};
    }
    for (const ParamDecl& prm : p_.params) {
      if (prm.name.empty()) fail("a param has an empty name");
      if (!names.insert(prm.name).second) fail(fmt::format("'{}' is declared twice", prm.name));
      params_[prm.name] = prm.dtype;
    }
    std::set<std::string> funcs;
    for (const LoopFunc& f : p_.funcs) {
      func_ = &f;
      if (!is_c_identifier(f.name)) fail(fmt::format("func name '{}' is not a C identifier", f.name));
      if (!funcs.insert(f.name).second) fail(fmt::format("func '{}' is defined twice", f.name));
      if (!f.body) fail("the func has no body");
      check_stmt(f.body, /*grid_allowed=*/true, {});
      func_ = nullptr;
    }
  }

private:
  struct BufferInfo {
    DType dtype;
    size_t rank;
  };

  const LoopProgram& p_;
  std::string origin_;
  const LoopFunc* func_ = nullptr;
  std::map<std::string, BufferInfo> buffers_;
  std::map<std::string, DType> params_;
  std::vector<std::pair<std::string, DType>> vars_;          // loop and let variables in scope
  std::vector<std::pair<std::string, BufferInfo>> allocs_;   // allocations in scope

  [[noreturn]] void fail(const std::string& msg) const {
    std::string where = fmt::format("Loop IR of '{}'", p_.kernel);
    if (func_) where += fmt::format(", func '{}'", func_->name);
    if (!origin_.empty()) throw UserError(fmt::format("error: {}: {}: {}", origin_, where, msg));
    internal_fail(__FILE__, __LINE__, where + ": " + msg);
  }

  static bool is_c_identifier(const std::string& s) {
    if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
    for (char c : s)
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
    return true;
  }

  const BufferInfo* find_buffer(const std::string& name) const {
    for (auto it = allocs_.rbegin(); it != allocs_.rend(); ++it)
      if (it->first == name) return &it->second;
    auto g = buffers_.find(name);
    return g == buffers_.end() ? nullptr : &g->second;
  }

  void check_fresh(const std::string& name, const char* what) const {
    if (name.empty()) fail(fmt::format("a {} has an empty name", what));
    bool taken = buffers_.count(name) || params_.count(name);
    for (const auto& v : vars_) taken |= v.first == name;
    for (const auto& a : allocs_) taken |= a.first == name;
    if (taken) fail(fmt::format("{} '{}' shadows a name already in scope", what, name));
  }

  void check_expr(const Expr& e) const {
    if (!e) fail("null expression");
    size_t want = 0;
    switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm: break;
    case ExprKind::BoolImm:
      if (e->type != DType::Bool) fail("a bool literal is not bool-typed");
      break;
    case ExprKind::Var: {
      const DType* t = nullptr;
      for (auto it = vars_.rbegin(); it != vars_.rend() && !t; ++it)
        if (it->first == e->name) t = &it->second;
      if (!t)
        if (auto p = params_.find(e->name); p != params_.end()) t = &p->second;
      if (!t) fail(fmt::format("use of undefined variable '{}'", e->name));
      if (*t != e->type)
        fail(fmt::format("variable '{}' is used as {} but defined as {}", e->name,
                         dtype_name(e->type), dtype_name(*t)));
      break;
    }
    case ExprKind::Access: {
      const BufferInfo* b = find_buffer(e->name);
      if (!b) fail(fmt::format("read of undefined buffer '{}'", e->name));
      if (b->rank != e->operands.size())
        fail(fmt::format("'{}' has rank {} but is read with {} indices", e->name, b->rank,
                         e->operands.size()));
      if (b->dtype != e->type)
        fail(fmt::format("read of '{}' is typed {} but the buffer is {}", e->name,
                         dtype_name(e->type), dtype_name(b->dtype)));
      for (const Expr& i : e->operands) {
        check_expr(i);
        if (!is_index_type(i->type))
          fail(fmt::format("an index of '{}' has type {}", e->name, dtype_name(i->type)));
      }
      if (e->guard) check_expr(e->guard);
      return;
    }
    case ExprKind::Unary:
    case ExprKind::Cast: want = 1; break;
    case ExprKind::Binary: want = 2; break;
    case ExprKind::Select: want = 3; break;
    case ExprKind::Call: want = static_cast<size_t>(math_fn_arity(e->math_fn)); break;
    }
    if (e->operands.size() != want)
      fail(fmt::format("an expression of kind {} has {} operands, expected {}",
                       static_cast<int>(e->kind), e->operands.size(), want));
    for (const Expr& o : e->operands) check_expr(o);
    if (e->kind == ExprKind::Select && is_float(e->operands[0]->type))
      fail("a select condition is a float");
  }

  // `grid_allowed`: nothing but lets, blocks and grid loops encloses this statement.
  // `grid_axes`: the grid axes already bound by the enclosing nest.
  void check_stmt(const Stmt& s, bool grid_allowed, std::set<ForKind> grid_axes) {
    if (!s) fail("null statement");
    switch (s->kind) {
    case StmtKind::For: {
      if (s->body.size() != 1) fail(fmt::format("loop '{}' has {} bodies", s->var, s->body.size()));
      check_expr(s->min);
      check_expr(s->extent);
      if (s->min->type != DType::I64 || s->extent->type != DType::I64)
        fail(fmt::format("the bounds of loop '{}' must be i64, got min {} and extent {}", s->var,
                         dtype_name(s->min->type), dtype_name(s->extent->type)));
      bool grid = is_grid(s->for_kind);
      if (grid || is_thread(s->for_kind)) {
        if (s->extent->kind != ExprKind::IntImm || s->extent->int_value < 1)
          fail(fmt::format("{} loop '{}' needs a constant extent of at least 1",
                           for_kind_name(s->for_kind), s->var));
      }
      if (grid) {
        if (!grid_allowed)
          fail(fmt::format("grid loop '{}' is nested inside a non-grid loop, if or allocation",
                           s->var));
        if (!grid_axes.insert(s->for_kind).second)
          fail(fmt::format("grid loop '{}' binds {} a second time", s->var,
                           for_kind_name(s->for_kind)));
      }
      check_fresh(s->var, "loop variable");
      vars_.push_back({s->var, DType::I64});
      check_stmt(s->body[0], grid, grid_axes);
      vars_.pop_back();
      return;
    }
    case StmtKind::If:
      if (s->body.empty() || s->body.size() > 2) fail("an if has no then-branch or extra branches");
      check_expr(s->cond);
      if (is_float(s->cond->type)) fail("an if condition is a float");
      for (const Stmt& b : s->body) check_stmt(b, false, grid_axes);
      return;
    case StmtKind::Store: {
      const BufferInfo* b = find_buffer(s->buffer);
      if (!b) fail(fmt::format("store to undefined buffer '{}'", s->buffer));
      if (b->rank != s->indices.size())
        fail(fmt::format("'{}' has rank {} but is stored with {} indices", s->buffer, b->rank,
                         s->indices.size()));
      for (const Expr& i : s->indices) {
        check_expr(i);
        if (!is_index_type(i->type))
          fail(fmt::format("an index of '{}' has type {}", s->buffer, dtype_name(i->type)));
      }
      check_expr(s->value);
      return;
    }
    case StmtKind::Allocate:
      if (s->body.size() != 1) fail(fmt::format("allocation '{}' has no body", s->buffer));
      for (int64_t d : s->shape)
        if (d < 0) fail(fmt::format("allocation '{}' has a negative dimension {}", s->buffer, d));
      check_fresh(s->buffer, "allocation");
      allocs_.push_back({s->buffer, {s->dtype, s->shape.size()}});
      check_stmt(s->body[0], false, grid_axes);
      allocs_.pop_back();
      return;
    case StmtKind::Let:
      if (s->body.size() != 1) fail(fmt::format("let '{}' has no body", s->var));
      check_expr(s->value);
      check_fresh(s->var, "let variable");
      vars_.push_back({s->var, s->value->type});
      check_stmt(s->body[0], grid_allowed, grid_axes);
      vars_.pop_back();
      return;
    case StmtKind::Block:
      for (const Stmt& b : s->body) check_stmt(b, grid_allowed, grid_axes);
      return;
    case StmtKind::Barrier: return;
    case StmtKind::Matrix: {
      const char* op = matrix_op_name(s->matrix_op);
      const bool mma = is_matrix_mma(s->matrix_op);
      if (s->shape.size() != (mma ? 3u : 2u)) fail(fmt::format("{} needs {} unit dimensions", op, mma ? 3 : 2));
      for (int64_t d : s->shape)
        if (d < 1) fail(fmt::format("{}: unit dimensions must be positive", op));
      // Each tile: a buffer of rank >= 2 (the tile spans its last two dimensions).
      auto tile = [&](const std::string& name, const std::vector<Expr>& idx, const char* what) -> const BufferInfo* {
        const BufferInfo* b = find_buffer(name);
        if (!b) fail(fmt::format("{} of undefined buffer '{}'", op, name));
        if (b->rank != idx.size())
          fail(fmt::format("'{}' has rank {} but {} names it with {} indices", name, b->rank, op, idx.size()));
        if (b->rank < 2) fail(fmt::format("{}: {} '{}' needs two dimensions for a tile", op, what, name));
        for (const Expr& i : idx) {
          check_expr(i);
          if (!is_index_type(i->type)) fail(fmt::format("an index of '{}' has type {}", name, dtype_name(i->type)));
        }
        return b;
      };
      const BufferInfo* target = tile(s->buffer, s->indices, mma || s->matrix_op == MatrixOp::Zero ? "the accumulator" : "the destination");
      auto operand = [&](const Expr& e, const char* what) -> const BufferInfo* {
        if (!e || e->kind != ExprKind::Access || e->guard) fail(fmt::format("{}: {} must be a plain access", op, what));
        return tile(e->name, e->operands, what);
      };
      if (mma) {
        if (!s->value || s->value->kind != ExprKind::Binary || s->value->binary_op != BinaryOp::Mul)
          fail(fmt::format("{}: the value must be A * B", op));
        const BufferInfo* a = operand(s->value->operands[0], "the A tile");
        const BufferInfo* b = operand(s->value->operands[1], "the B tile");
        if (!is_float(a->dtype) || a->dtype != b->dtype)
          fail(fmt::format("{}: A and B must have one float dtype", op));
        if (s->matrix_op == MatrixOp::MmaTf32 && a->dtype != DType::F32)
          fail(fmt::format("{}: tf32 operands are f32 buffers", op));
        if (s->matrix_op == MatrixOp::MmaPairs && s->shape[2] % 2 != 0)
          fail(fmt::format("{}: k must be even (B holds k in pairs)", op));
      }
      if (s->matrix_op == MatrixOp::Store) operand(s->value, "the accumulator");
      if (mma || s->matrix_op == MatrixOp::Zero)
        if (!is_float(target->dtype)) fail(fmt::format("{}: the accumulator '{}' must be a float buffer", op, s->buffer));
      return;
    }
    case StmtKind::Prefetch: {
      const BufferInfo* b = find_buffer(s->buffer);
      if (!b) fail(fmt::format("prefetch of undefined buffer '{}'", s->buffer));
      if (b->rank != s->indices.size())
        fail(fmt::format("'{}' has rank {} but is prefetched with {} indices", s->buffer, b->rank,
                         s->indices.size()));
      if (!s->shape.empty() && (s->shape.size() != 1 || s->shape[0] < 1 || b->rank < 2))
        fail(fmt::format("a prefetch of rows of '{}' takes one row count of at least 1 and a buffer of rank 2 or "
                         "more",
                         s->buffer));
      if (s->cache_level != 1 && s->cache_level != 2)
        fail(fmt::format("a prefetch of '{}' fills cache level 1 or 2, not {}", s->buffer, s->cache_level));
      for (const Expr& i : s->indices) {
        check_expr(i);
        if (!is_index_type(i->type))
          fail(fmt::format("an index of '{}' has type {}", s->buffer, dtype_name(i->type)));
      }
      return;
    }
    }
    fail("unknown statement kind");
  }
};

} // namespace

void verify(const LoopProgram& p) { LoopVerifier(p).run(); }

void verify_input(const LoopProgram& p, const std::string& origin) { LoopVerifier(p, origin).run(); }

} // namespace unitile
