// The shared C-family printer from Loop IR (see CPrinter.h).
#include "codegen/CPrinter.h"

#include "codegen/CHelpers.h"
#include "codegen/IndexBounds.h"
#include "codegen/VectorLoop.h"
#include "codegen/VectorMath.h"

#include <fmt/core.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <tuple>

namespace unitile::codegen {

namespace {

// ---------------------------------------------------------------------------------------
// Names

// Identifiers the printed code uses itself; IR names that collide get a trailing '_'.
const std::set<std::string, std::less<>>& reserved_identifiers() {
  static const std::set<std::string, std::less<>> names = [] {
    std::set<std::string, std::less<>> s = {
        "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
        "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
        "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
        "union", "unsigned", "void", "volatile", "while", "_Bool", "_Complex", "_Imaginary",
        "_Alignas", "_Alignof", "_Atomic", "_Generic", "_Noreturn", "_Static_assert",
        "_Thread_local", "bool", "true", "false", "asm", "typeof",
        // what the prelude and the entry signature define
        "args", "bx", "by", "bz", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t",
        "uint32_t", "uint64_t", "size_t", "memcpy", "malloc", "free", "abort", "NAN", "INFINITY",
        "HUGE_VAL", "isnan", "isinf", "INT64_C", "INT64_MAX", "INT64_MIN", "NULL", "errno", "main",
        "fabs", "fabsf", "nearbyint", "nearbyintf", "fmod", "fmodf"};
    for (int f = 0; f <= static_cast<int>(MathFn::Atan2); ++f) {
      std::string n = math_fn_name(static_cast<MathFn>(f));
      s.insert(n);
      s.insert(n + "f");
    }
    return s;
  }();
  return names;
}

// `name` with every character that cannot be in a C identifier replaced by '_'.
std::string identifier_chars(const std::string& name) {
  std::string s;
  for (char c : name)
    s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  return s;
}

std::string sanitize(const std::string& ir_name, const CDialect& d) {
  std::string s = identifier_chars(ir_name);
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])))
    s = "v_" + s;
  bool dialect_word = std::find(d.reserved_identifiers.begin(), d.reserved_identifiers.end(), s) !=
                      d.reserved_identifiers.end();
  if (reserved_identifiers().count(s) || dialect_word || s.rfind("ut_", 0) == 0 ||
      s.rfind("UT_", 0) == 0 || s.rfind("__", 0) == 0)
    s += '_';
  return s;
}

// IR names to C names, unique within one func. Buffers and variables are separate IR
// namespaces, so they are keyed apart.
class NameTable {
public:
  explicit NameTable(const CDialect& d) : d_(d) {}
  const std::string& buffer(const std::string& n) { return get("b:" + n, n); }
  const std::string& var(const std::string& n) { return get("v:" + n, n); }
  std::string fresh(const std::string& stem) { return fmt::format("ut_{}{}", stem, counter_++); }

private:
  const std::string& get(const std::string& key, const std::string& ir) {
    auto it = names_.find(key);
    if (it != names_.end())
      return it->second;
    std::string base = sanitize(ir, d_), c = base;
    for (int k = 1; taken_.count(c); ++k)
      c = fmt::format("{}_{}", base, k);
    taken_.insert(c);
    return names_.emplace(key, c).first->second;
  }
  const CDialect& d_;
  std::map<std::string, std::string> names_;
  std::set<std::string> taken_;
  int counter_ = 0;
};

// ---------------------------------------------------------------------------------------
// Free names of a statement: what it reads or writes that it does not bind itself.

struct FreeNames {
  std::set<std::string> buffers, vars;
};

void collect_expr(const Expr& e, const std::set<std::string>& bound_vars,
                  const std::set<std::string>& bound_bufs, FreeNames& out) {
  visit(e, [&](const Expr& n) {
    if (n->kind == ExprKind::Var && !bound_vars.count(n->name))
      out.vars.insert(n->name);
    if (n->kind == ExprKind::Access && !bound_bufs.count(n->name))
      out.buffers.insert(n->name);
  });
}

void collect_stmt(const Stmt& s, std::set<std::string> bound_vars, std::set<std::string> bound_bufs,
                  FreeNames& out) {
  if (!s)
    return;
  auto expr = [&](const Expr& e) { collect_expr(e, bound_vars, bound_bufs, out); };
  switch (s->kind) {
  case StmtKind::For:
    expr(s->min);
    expr(s->extent);
    bound_vars.insert(s->var);
    break;
  case StmtKind::If:
    expr(s->cond);
    break;
  case StmtKind::Store:
    if (!bound_bufs.count(s->buffer))
      out.buffers.insert(s->buffer);
    for (const auto& i : s->indices)
      expr(i);
    expr(s->value);
    break;
  case StmtKind::Allocate:
    bound_bufs.insert(s->buffer);
    break;
  case StmtKind::Let:
    expr(s->value);
    bound_vars.insert(s->var);
    break;
  case StmtKind::Prefetch:
  case StmtKind::Matrix:
    if (!bound_bufs.count(s->buffer))
      out.buffers.insert(s->buffer);
    for (const auto& i : s->indices)
      expr(i);
    expr(s->value);
    break;
  case StmtKind::Block:
  case StmtKind::Barrier:
    break;
  }
  for (const auto& b : s->body)
    collect_stmt(b, bound_vars, bound_bufs, out);
}

FreeNames free_names(const Stmt& s) {
  FreeNames f;
  collect_stmt(s, {}, {}, f);
  return f;
}

bool is_grid(ForKind k) {
  return k == ForKind::GridX || k == ForKind::GridY || k == ForKind::GridZ;
}
bool is_thread(ForKind k) {
  return k == ForKind::ThreadX || k == ForKind::ThreadY || k == ForKind::ThreadZ;
}

bool const_int(const Expr& e, int64_t* v) {
  if (!e || e->kind != ExprKind::IntImm)
    return false;
  *v = e->int_value;
  return true;
}

// Whether a func has a thread loop that runs more than one iteration, and a barrier.
void scan_threads(const Stmt& s, bool* multi_thread, bool* has_barrier) {
  if (!s)
    return;
  if (s->kind == StmtKind::Barrier)
    *has_barrier = true;
  int64_t ext;
  if (s->kind == StmtKind::For && is_thread(s->for_kind) &&
      !(const_int(s->extent, &ext) && ext == 1))
    *multi_thread = true;
  for (const auto& b : s->body)
    scan_threads(b, multi_thread, has_barrier);
}

// Bytes of the shared-scope allocations in `s` (all of them, as if live at once).
int64_t shared_bytes(const Stmt& s) {
  if (!s)
    return 0;
  int64_t total = 0;
  if (s->kind == StmtKind::Allocate && s->scope == MemScope::Shared) {
    int64_t elems = 1;
    for (int64_t d : s->shape)
      elems *= d;
    // 16-bit floats are held as f32 (see alloc below).
    bool wide16 = s->dtype == DType::F16 || s->dtype == DType::BF16;
    total += std::max<int64_t>(elems, 1) * (wide16 ? 4 : dtype_bytes(s->dtype));
  }
  for (const auto& b : s->body)
    total += shared_bytes(b);
  return total;
}

bool contains_barrier(const Stmt& s) {
  if (!s)
    return false;
  if (s->kind == StmtKind::Barrier)
    return true;
  for (const auto& b : s->body)
    if (contains_barrier(b))
      return true;
  return false;
}

// The first buffer stored to outside every thread loop, or nullptr.
const std::string* store_outside_threads(const Stmt& s) {
  if (!s)
    return nullptr;
  if (s->kind == StmtKind::Store)
    return &s->buffer;
  if (s->kind == StmtKind::For && is_thread(s->for_kind))
    return nullptr;
  for (const auto& b : s->body)
    if (const std::string* name = store_outside_threads(b))
      return name;
  return nullptr;
}

// ---------------------------------------------------------------------------------------
// Literals

bool fits_int32(int64_t v) {
  return v > INT32_MIN && v <= INT32_MAX;
}

std::string int_literal(int64_t v, bool wide) {
  if (v == INT64_MIN)
    return "(-INT64_C(9223372036854775807) - 1)";
  if (wide && !fits_int32(v))
    return fmt::format("INT64_C({})", v);
  if (v == INT32_MIN)
    return "(-2147483647 - 1)";
  return fmt::format("{}", v);
}

std::string float_literal(double v, bool single) {
  if (std::isnan(v))
    return single ? "NAN" : "((double)NAN)";
  if (std::isinf(v)) {
    std::string inf = single ? "INFINITY" : "HUGE_VAL";
    return v < 0 ? "(-" + inf + ")" : inf;
  }
  std::string s = single ? fmt::format("{:.9g}", static_cast<float>(v)) : fmt::format("{:.17g}", v);
  if (s.find_first_of(".e") == std::string::npos)
    s += ".0";
  return single ? s + "f" : s;
}

// Whether `v` is exactly a value of the 16-bit float type `t`.
bool exact_in_16bit(double v, DType t) {
  if (!std::isfinite(v) || v == 0)
    return true;
  int mant_bits = t == DType::F16 ? 11 : 8, min_exp = t == DType::F16 ? -14 : -126;
  double max = t == DType::F16 ? 65504.0 : 3.3895313892515355e38;
  if (std::fabs(v) > max)
    return false;
  int e;
  double m = std::frexp(std::fabs(v), &e); // v = m * 2^e, m in [0.5, 1)
  int bits = e - 1 >= min_exp ? mant_bits : mant_bits - (min_exp - (e - 1));
  if (bits <= 0)
    return false;
  double scaled = std::ldexp(m, bits);
  return scaled == std::floor(scaled);
}

// ---------------------------------------------------------------------------------------
// The printer of one func.

struct BufferView {
  DType dtype;
  std::vector<int64_t> shape;
  bool holds_compute_type; // a register/local allocation of f16/bf16 holds float
  int vector_lanes = 0;    // > 0: a register tile declared as an array of vectors
};

class FuncPrinter {
public:
  FuncPrinter(const LoopProgram& p, const hcd::Hcd& hcd, const CDialect& d, CHelperSet& helpers)
      : prog_(p), hcd_(hcd), d_(d), helpers_(helpers), names_(d) {}

  std::string print(const LoopFunc& f, const std::string& entry) {
    bool has_barrier = false;
    scan_threads(f.body, &multi_thread_, &has_barrier);
    if (has_barrier && multi_thread_ && d_.barrier.empty())
      throw UserError(fmt::format(
          "func '{}' of kernel '{}': the {} dialect cannot run multi-thread blocks with barriers "
          "(HCD '{}')",
          f.name, prog_.kernel, d_.name, hcd_.name));
    dims_ = launch_dims(f);
    check_limits(f);
    for (const auto& b : prog_.buffers)
      buffers_[b.name] = {b.dtype, b.shape, false};

    std::string signature = replace_all(std::string(d_.entry_signature), "{entry}", entry);
    size_t nargs = std::max<size_t>(prog_.buffers.size() + prog_.params.size(), 1);
    signature = replace_all(signature, "{nargs}", std::to_string(nargs));
    signature = replace_all(signature, "{block_threads}",
                            std::to_string(uint64_t{dims_.block[0]} * dims_.block[1] *
                                           dims_.block[2]));
    const bool params_in_signature = signature.find("{params}") != std::string::npos;
    if (params_in_signature)
      signature = replace_all(signature, "{params}", entry_params());
    line(signature + " {");
    ++indent_;
    FreeNames used = free_names(f.body);
    for (size_t k = 0; k < prog_.buffers.size() && !params_in_signature; ++k) {
      const LoopBuffer& b = prog_.buffers[k];
      if (!used.buffers.count(b.name))
        continue;
      line(replace_all(buffer_text(d_.buffer_binding, b), "{index}", std::to_string(k)));
    }
    for (size_t k = 0; k < prog_.params.size(); ++k) {
      const ParamDecl& prm = prog_.params[k];
      if (!used.vars.count(prm.name))
        continue;
      bind_param(prm, prog_.buffers.size() + k);
    }
    if (d_.shared_at_entry_scope)
      hoist_shared(f.body);
    amx_ = d_.amx_tiles && std::find(hcd_.isa.begin(), hcd_.isa.end(), "amx-tile") != hcd_.isa.end() &&
           std::find(hcd_.isa.begin(), hcd_.isa.end(), "amx-bf16") != hcd_.isa.end();
    pairs_ = d_.amx_tiles && std::find(hcd_.isa.begin(), hcd_.isa.end(), "avx512_bf16") != hcd_.isa.end() &&
             hcd_.vector_bits == 512;
    if (amx_ && has_amx_matrix(f.body)) {
      // Tile state is per thread and may have been configured by other code: configure
      // it for this entry, release it at the end (CHelpers.cpp, ut_amx).
      helpers_.need("ut_amx");
      line("ut_amx_begin();");
      stmt(f.body, false);
      line("ut_amx_end();");
    } else {
      stmt(f.body, true);
    }
    // Streaming stores are weakly ordered; the launcher fences them once per run of
    // blocks (the cpu plugin, CpuDevice.cpp), not each entry: an sfence waits for the
    // write-combining buffers to drain, and at one block per row that cost softmax about
    // 5% (docs/ARCHITECTURE.md, "Streaming stores").
    --indent_;
    line("}");
    return std::move(out_);
  }

private:
  bool hardware_threads() const { return !d_.thread_index[0].empty(); }

  // Whether whole-vector stores into `name` are streaming stores: the schedule marked
  // the output (stream) and the dialect has them (GCC vector syntax).
  bool streams(const std::string& name) const {
    if (d_.vector_syntax != VectorSyntax::Gcc)
      return false;
    const LoopBuffer* b = prog_.find_buffer(name);
    return b && b->stream;
  }

  // What the HCD and the dialect allow one launch: grid and block extents, threads per
  // block, shared memory per block. Exceeding them is the user's (or the schedule's)
  // request that this device cannot run, so it is a UserError naming the limit.
  void check_limits(const LoopFunc& f) {
    auto where = [&] {
      return fmt::format("func '{}' of kernel '{}' on HCD '{}' ({})", f.name, prog_.kernel,
                         hcd_.name, hcd_.source);
    };
    static constexpr const char* kAxes[] = {"x", "y", "z"};
    for (int a = 0; a < 3; ++a)
      if (a < static_cast<int>(hcd_.max_grid.size()) && dims_.grid[a] > hcd_.max_grid[a])
        throw UserError(fmt::format("error: {}: grid.{} has {} blocks, more than the device's "
                                    "limit of {} ([limits] max_grid)",
                                    where(), kAxes[a], dims_.grid[a], hcd_.max_grid[a]));
    if (!hardware_threads())
      return; // a block is one C thread: its thread loops run serially
    uint64_t threads = 1;
    for (int a = 0; a < 3; ++a) {
      threads *= dims_.block[a];
      if (a < static_cast<int>(hcd_.max_block.size()) && dims_.block[a] > hcd_.max_block[a])
        throw UserError(fmt::format("error: {}: thread.{} has {} threads, more than the "
                                    "device's limit of {} ([limits] max_block)",
                                    where(), kAxes[a], dims_.block[a], hcd_.max_block[a]));
    }
    if (threads > static_cast<uint64_t>(hcd_.max_threads_per_block))
      throw UserError(fmt::format("error: {}: a block of {} threads exceeds the device's {} "
                                  "([compute] max_threads_per_block)",
                                  where(), threads, hcd_.max_threads_per_block));
    if (multi_thread_)
      if (const std::string* b = store_outside_threads(f.body))
        throw UserError(fmt::format("error: {}: buffer '{}' is stored outside every thread loop "
                                    "of a multi-thread block; the {} dialect runs each thread "
                                    "loop's iterations on hardware threads, so such a store "
                                    "would run once per thread (put it inside a thread loop)",
                                    where(), *b, d_.name));
    if (d_.shared_qualifier.empty())
      return;
    int64_t bytes = shared_bytes(f.body);
    if (bytes > hcd_.shared_memory_per_block)
      throw UserError(fmt::format("error: {}: {} bytes of shared memory per block, more than the "
                                  "device's {} ([limits] shared_memory_per_block)",
                                  where(), bytes, hcd_.shared_memory_per_block));
    if (d_.max_static_shared_bytes > 0 && bytes > d_.max_static_shared_bytes)
      throw UserError(fmt::format("error: {}: {} bytes of shared memory per block, more than the "
                                  "{} bytes the {} dialect can declare statically",
                                  where(), bytes, d_.max_static_shared_bytes, d_.name));
  }

  std::string buffer_text(std::string_view templ, const LoopBuffer& b) {
    std::string s(templ);
    s = replace_all(s, "{const}", b.role == TensorRole::Input ? "const " : "");
    s = replace_all(s, "{type}", std::string(storage_type(b.dtype)));
    return replace_all(s, "{name}", names_.buffer(b.name));
  }

  // The parameter list of an entry that takes every argument in its signature.
  std::string entry_params() {
    std::vector<std::string> params;
    for (const LoopBuffer& b : prog_.buffers)
      params.push_back(buffer_text(d_.buffer_param, b));
    for (const ParamDecl& prm : prog_.params) {
      std::string s(is_float(prm.dtype) ? d_.float_param : d_.int_param);
      params.push_back(replace_all(s, "{type}", std::string(value_type(prm.dtype))));
    }
    for (size_t k = 0; k < params.size(); ++k)
      params[k] = replace_all(params[k], "{index}", std::to_string(k));
    return join(params);
  }

  // Declares every shared allocation of `s` here, at the entry's outermost scope, for
  // dialects that allow them nowhere else; alloc then only binds the name.
  void hoist_shared(const Stmt& s) {
    if (!s)
      return;
    if (s->kind == StmtKind::Allocate && s->scope == MemScope::Shared) {
      int64_t elems = 1;
      for (int64_t d : s->shape)
        elems *= d;
      bool wide16 = s->dtype == DType::F16 || s->dtype == DType::BF16;
      line(fmt::format("{}{} {}[{}]{};", d_.shared_qualifier,
                       wide16 ? value_type(s->dtype) : storage_type(s->dtype),
                       names_.buffer(s->buffer), std::max<int64_t>(elems, 1),
                       array_alignment(elems * (wide16 ? 4 : dtype_bytes(s->dtype)))));
      hoisted_.insert(s.get());
    }
    for (const auto& b : s->body)
      hoist_shared(b);
  }

  // ----- output
  void line(const std::string& s) {
    out_.append(static_cast<size_t>(indent_) * 2, ' ');
    out_ += s;
    out_ += '\n';
  }

  static std::string replace_all(std::string s, std::string_view from, std::string_view to) {
    for (size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
      s.replace(p, from.size(), to);
    return s;
  }

  // ----- types
  std::string_view storage_type(DType t) const { return d_.storage_type[static_cast<int>(t)]; }
  // The C type values of `t` are computed and held in (compute_type).
  std::string_view value_type(DType t) const { return storage_type(compute_type(t)); }
  std::string_view math_suffix(DType t) const {
    return compute_type(t) == DType::F32 ? d_.f32_math_suffix : std::string_view();
  }

  void bind_param(const ParamDecl& prm, size_t index) {
    std::string i = replace_all(std::string(d_.int_arg), "{index}", std::to_string(index));
    std::string f = replace_all(std::string(d_.float_arg), "{index}", std::to_string(index));
    std::string value;
    DType t = prm.dtype;
    if (is_float(t)) {
      value = fmt::format("({}){}", value_type(t), f);
      if (t == DType::F16 || t == DType::BF16)
        value = round16(value, t);
    } else if (t == DType::Bool) {
      value = fmt::format("{} != 0", i);
    } else {
      value = fmt::format("({}){}", storage_type(t), i);
    }
    std::string_view decl_type =
        (t == DType::F16 || t == DType::BF16) ? value_type(t) : storage_type(t);
    line(fmt::format("const {} {} = {};", decl_type, names_.var(prm.name), value));
    // Only integer params can bound indices; they are runtime values, so no interval.
  }

  std::string round16(const std::string& float_value, DType t) {
    const char* fn = t == DType::F16 ? "ut_round_f16" : "ut_round_bf16";
    helpers_.need(fn);
    return fmt::format("{}({})", fn, float_value);
  }

  // ----- expressions

  // Whether the printed C text of `e` is a small literal of C type int although the IR
  // says i64 (the only place the two disagree on integer width).
  static bool narrow_literal(const Expr& e) {
    if (e->kind == ExprKind::IntImm)
      return is_integer(e->type) && fits_int32(e->int_value);
    if (e->kind == ExprKind::Unary && e->unary_op == UnaryOp::Neg)
      return narrow_literal(e->operands[0]);
    return false;
  }
  static bool c_is_i64(const Expr& e) { return e->type == DType::I64 && !narrow_literal(e); }

  // `e` converted to the values of type `t`, as a Cast node means it.
  std::string converted(const Expr& e, DType t) {
    if (e->type == t)
      return expr(e);
    return cast_text(t, e);
  }

  std::string cast_text(DType t, const Expr& x) {
    std::string v = expr(x);
    if (x->type == t)
      return v;
    if (t == DType::Bool)
      return fmt::format("(({}) != 0)", v);
    if (t == DType::F16 || t == DType::BF16) {
      if (x->type != DType::F32)
        v = fmt::format("(float)({})", v);
      return round16(v, t);
    }
    if (compute_type(x->type) == compute_type(t) && !is_integer(t))
      return v; // f16 -> f32
    if (is_integer(t) && is_float(x->type)) {
      helpers_.need("ut_float_to_i64");
      return fmt::format("({})ut_float_to_i64({})", storage_type(t), v);
    }
    return fmt::format("({})({})", storage_type(t), v);
  }

  std::string expr(const Expr& e) {
    switch (e->kind) {
    case ExprKind::IntImm:
      if (is_float(e->type))
        return float_literal(static_cast<double>(e->int_value), e->type != DType::F64);
      return int_literal(e->int_value, e->type == DType::I64);
    case ExprKind::FloatImm: {
      if (!is_float(e->type))
        return int_literal(static_cast<int64_t>(e->float_value), e->type == DType::I64);
      std::string lit = float_literal(e->float_value, e->type != DType::F64);
      if ((e->type == DType::F16 || e->type == DType::BF16) &&
          !exact_in_16bit(e->float_value, e->type))
        return round16(lit, e->type);
      return lit;
    }
    case ExprKind::BoolImm:
      return e->int_value ? "1" : "0";
    case ExprKind::Var: {
      UT_INTERNAL_ASSERT(bound_vars_.count(e->name) || is_param(e->name),
                         "variable '" + e->name + "' is not defined");
      return names_.var(e->name);
    }
    case ExprKind::Access:
      return load(e);
    case ExprKind::Unary: {
      std::string x = expr(e->operands[0]);
      if (e->unary_op == UnaryOp::Not)
        return fmt::format("(!{})", x);
      if (e->unary_op == UnaryOp::BitNot) // cast back: C promotes narrow integers to int
        return fmt::format("(({})(~{}))", value_type(e->type), x);
      if (e->type == DType::I64 && !c_is_i64(e->operands[0]) && !narrow_literal(e->operands[0]))
        x = fmt::format("(int64_t){}", x);
      return x[0] == '-' ? fmt::format("(-({}))", x) : fmt::format("(-{})", x);
    }
    case ExprKind::Binary:
      return binary(e);
    case ExprKind::Select: {
      std::string a = converted(e->operands[1], e->type), b = converted(e->operands[2], e->type);
      if (e->type == DType::I64 && !c_is_i64(e->operands[1]) && !c_is_i64(e->operands[2]))
        a = "(int64_t)" + a;
      return fmt::format("({} ? {} : {})", expr(e->operands[0]), a, b);
    }
    case ExprKind::Cast:
      return cast_text(e->type, e->operands[0]);
    case ExprKind::Call:
      return call(e);
    }
    UT_INTERNAL_ASSERT(false, "unknown expression kind");
    return {};
  }

  bool is_param(const std::string& n) const {
    for (const auto& p : prog_.params)
      if (p.name == n)
        return true;
    return false;
  }

  std::string binary(const Expr& e) {
    const Expr& a = e->operands[0];
    const Expr& b = e->operands[1];
    BinaryOp op = e->binary_op;
    if (op == BinaryOp::And || op == BinaryOp::Or)
      return fmt::format("({} {} {})", expr(a), op == BinaryOp::And ? "&&" : "||", expr(b));
    if (is_comparison(op))
      return fmt::format("({} {} {})", expr(a), binary_op_token(op), expr(b));
    if (is_bitwise(op))
      return bitwise(e);

    DType t = e->type;
    std::string x = expr(a), y = expr(b);
    // Make C compute in the IR's type: i64 where only literals are i64, float where the
    // operands are integers.
    if (t == DType::I64 && !c_is_i64(a) && !c_is_i64(b))
      x = "(int64_t)" + x;
    if (is_float(t) && !is_float(a->type) && !is_float(b->type))
      x = fmt::format("({}){}", value_type(t), x);

    bool non_negative = provably_non_negative(a, env_) && provably_non_negative(b, env_);
    std::string_view sfx = t == DType::I64   ? "i64"
                           : t == DType::F64 ? "f64"
                           : is_float(t)     ? "f32"
                                             : "i32";
    switch (op) {
    case BinaryOp::Add:
    case BinaryOp::Sub:
    case BinaryOp::Mul:
    case BinaryOp::Div:
      return fmt::format("({} {} {})", x, binary_op_token(op), y);
    case BinaryOp::FloorDiv:
      if (is_float(t))
        return fmt::format("floor{}({} / {})", math_suffix(t), x, y);
      if (non_negative)
        return fmt::format("({} / {})", x, y);
      helpers_.need(fmt::format("ut_floordiv_{}", sfx));
      return fmt::format("ut_floordiv_{}({}, {})", sfx, x, y);
    case BinaryOp::Mod:
      if (!is_float(t) && non_negative)
        return fmt::format("({} % {})", x, y);
      helpers_.need(fmt::format("ut_mod_{}", sfx));
      return fmt::format("ut_mod_{}({}, {})", sfx, x, y);
    default:
      break;
    }
    UT_INTERNAL_ASSERT(false, "unhandled binary op");
    return {};
  }

  // `&`, `|`, `^` in C with the result cast back to the dtype (C computes narrow
  // integers as int); shifts through helpers that define every count.
  std::string bitwise(const Expr& e) {
    const std::string_view t = value_type(e->type);
    const std::string x = expr(e->operands[0]), y = expr(e->operands[1]);
    const BinaryOp op = e->binary_op;
    if (op == BinaryOp::Shl || op == BinaryOp::Shr) {
      const char* name = op == BinaryOp::Shl ? "ut_shl" : "ut_shr";
      helpers_.need(name);
      return fmt::format("(({})ut_{}((int64_t){}, (int64_t){}, {}))", t,
                         op == BinaryOp::Shl ? "shl" : "shr", x, y, 8 * dtype_bytes(e->type));
    }
    return fmt::format("(({})({} {} {}))", t, x, binary_op_token(op), y);
  }

  std::string call(const Expr& e) {
    MathFn fn = e->math_fn;
    DType t = e->type;
    std::vector<std::string> args;
    for (const auto& a : e->operands)
      args.push_back(strip_parens(expr(a)));
    if (fn == MathFn::IsNan || fn == MathFn::IsInf) {
      const char* name = fn == MathFn::IsNan ? "isnan" : "isinf";
      if (!is_float(e->operands[0]->type))
        return "0";
      return fmt::format("({}({}) != 0)", name, args[0]);
    }
    if (!is_float(t))
      return int_call(e, args);
    std::string_view sfx = math_suffix(t);
    std::string helper_sfx = compute_type(t) == DType::F64 ? "f64" : "f32";
    std::string one = compute_type(t) == DType::F64 ? "1.0" : "1.0f";
    switch (fn) {
    case MathFn::Min:
    case MathFn::Max:
    case MathFn::Sign: {
      std::string name = fmt::format("ut_{}_{}", math_fn_name(fn), helper_sfx);
      helpers_.need(name);
      return fmt::format("{}({})", name, join(args));
    }
    case MathFn::Rsqrt:
      return fmt::format("({} / sqrt{}({}))", one, sfx, args[0]);
    case MathFn::Sigmoid:
      return fmt::format("({0} / ({0} + exp{1}(-({2}))))", one, sfx, args[0]);
    case MathFn::Abs:
      return fmt::format("fabs{}({})", sfx, args[0]);
    case MathFn::Round:
      return fmt::format("{}{}({})", d_.round_half_even, sfx, args[0]);
    default:
      return fmt::format("{}{}({})", math_fn_name(fn), sfx, join(args));
    }
  }

  // Math on integer values: min/max/abs/sign exactly; rounding functions are the
  // identity; the rest go through double and back, as a cast would.
  std::string int_call(const Expr& e, const std::vector<std::string>& args) {
    MathFn fn = e->math_fn;
    std::string_view sfx = e->type == DType::I64 ? "i64" : "i32";
    switch (fn) {
    case MathFn::Min:
    case MathFn::Max:
    case MathFn::Abs:
    case MathFn::Sign: {
      std::string name = fmt::format("ut_{}_{}", math_fn_name(fn), sfx);
      helpers_.need(name);
      return fmt::format("{}({})", name, join(args));
    }
    case MathFn::Floor:
    case MathFn::Ceil:
    case MathFn::Round:
    case MathFn::Trunc:
      return args[0];
    default: {
      std::vector<std::string> wide;
      for (const auto& a : args)
        wide.push_back("(double)(" + a + ")");
      helpers_.need("ut_float_to_i64");
      return fmt::format("({})ut_float_to_i64({}({}))", storage_type(e->type), math_fn_name(fn),
                         join(wide));
    }
    }
  }

  static std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (size_t k = 0; k < v.size(); ++k)
      s += (k ? ", " : "") + v[k];
    return s;
  }

  const BufferView& buffer(const std::string& name) const {
    auto it = buffers_.find(name);
    UT_INTERNAL_ASSERT(it != buffers_.end(), "buffer '" + name + "' is not defined");
    return it->second;
  }

  // Row-major linear index, constants folded into one term.
  std::string linear_index(const std::vector<Expr>& indices, const std::vector<int64_t>& shape) {
    UT_INTERNAL_ASSERT(indices.size() == shape.size(), "access rank does not match its buffer");
    std::vector<std::string> terms;
    int64_t constant = 0, stride = 1;
    std::vector<int64_t> strides(shape.size());
    for (size_t k = shape.size(); k-- > 0;) {
      strides[k] = stride;
      stride *= shape[k];
    }
    for (size_t k = 0; k < indices.size(); ++k) {
      const Expr& i = indices[k];
      if (i->kind == ExprKind::IntImm) {
        constant += i->int_value * strides[k];
        continue;
      }
      std::string s = expr(i);
      if (strides[k] != 1) {
        if (!c_is_i64(i))
          s = "(int64_t)" + s;
        s += " * " + int_literal(strides[k], true);
      }
      terms.push_back(s);
    }
    std::string s;
    for (size_t k = 0; k < terms.size(); ++k)
      s += (k ? " + " : "") + terms[k];
    if (terms.empty())
      return int_literal(constant, true);
    if (terms.size() == 1 && constant == 0)
      return strip_parens(s);
    if (constant > 0)
      s += " + " + int_literal(constant, true);
    if (constant < 0 && constant != INT64_MIN)
      s += " - " + int_literal(-constant, true);
    if (constant == INT64_MIN)
      s += " + " + int_literal(constant, true);
    return s;
  }

  // The indices of a read, with each unguarded data-dependent one (gather's `Idx[i]`)
  // clamped into its dimension: generated code has no way to report an error, so an
  // out-of-range index value reads the nearest edge element instead of stray memory
  // (the sim device reports it instead; docs/ARCHITECTURE.md).
  static std::vector<Expr> clamped_indices(const Expr& e, const std::vector<int64_t>& shape) {
    std::vector<Expr> idx = e->operands;
    if (e->guard)
      return idx;
    for (size_t k = 0; k < idx.size(); ++k) {
      if (!reads_tensor(idx[k]))
        continue;
      Expr i = idx[k]->type == DType::I64 ? idx[k] : cast(DType::I64, idx[k]);
      idx[k] = unitile::call(MathFn::Min,
                             {unitile::call(MathFn::Max, {i, int_imm(0)}), int_imm(shape[k] - 1)});
    }
    return idx;
  }

  std::string load(const Expr& e) {
    const BufferView& b = buffer(e->name);
    std::string v = fmt::format("{}[{}]", element_base(e->name, b),
                                linear_index(clamped_indices(e, b.shape), b.shape));
    if (!b.holds_compute_type && b.dtype == DType::F16) {
      helpers_.need("ut_f16_to_f32");
      v = "ut_f16_to_f32(" + v + ")";
    } else if (!b.holds_compute_type && b.dtype == DType::BF16) {
      helpers_.need("ut_bf16_to_f32");
      v = "ut_bf16_to_f32(" + v + ")";
    }
    if (!e->guard)
      return v;
    std::vector<std::string> tests;
    for (size_t k = 0; k < e->operands.size(); ++k) {
      const Expr& i = e->operands[k];
      auto r = bounds_of(i, env_);
      if (!r || r->lo < 0)
        tests.push_back(fmt::format("{} >= 0", expr(i)));
      if (!r || r->hi >= b.shape[k])
        tests.push_back(fmt::format("{} < {}", expr(i), int_literal(b.shape[k], true)));
    }
    if (tests.empty())
      return v;
    std::string cond;
    for (size_t k = 0; k < tests.size(); ++k)
      cond += (k ? " && " : "") + tests[k];
    return fmt::format("(({}) ? {} : {})", cond, v, converted(e->guard, e->type));
  }

  // ----- statements

  // `tail`: nothing follows `s` in the enclosing C block, so a Let or Allocate may
  // declare into it without braces of its own.
  void stmt(const Stmt& s, bool tail) {
    switch (s->kind) {
    case StmtKind::Block:
      for (size_t k = 0; k < s->body.size(); ++k) {
        if ((amx_ || pairs_) && s->body[k]->kind == StmtKind::Matrix && is_matrix_mma(s->body[k]->matrix_op)) {
          const bool pair = pair_op(*s->body[k]);
          size_t e = k;
          while (e < s->body.size() && s->body[e]->kind == StmtKind::Matrix && is_matrix_mma(s->body[e]->matrix_op) &&
                 pair_op(*s->body[e]) == pair)
            ++e;
          std::vector<Stmt> run(s->body.begin() + static_cast<std::ptrdiff_t>(k),
                                s->body.begin() + static_cast<std::ptrdiff_t>(e));
          if (pair)
            pair_mma_run(run);
          else
            amx_mma_run(run);
          k = e - 1;
          continue;
        }
        stmt(s->body[k], tail && k + 1 == s->body.size());
      }
      return;
    case StmtKind::Store:
      store(*s);
      return;
    case StmtKind::If: {
      line(fmt::format("if ({}) {{", strip_parens(expr(s->cond))));
      nested(s->body[0]);
      if (s->body.size() > 1) {
        line("} else {");
        nested(s->body[1]);
      }
      line("}");
      return;
    }
    case StmtKind::Let:
      scoped(tail, [&] { let(*s); });
      return;
    case StmtKind::Allocate:
      scoped(tail, [&] { alloc(*s); });
      return;
    case StmtKind::Barrier:
      if (multi_thread_)
        line(std::string(d_.barrier));
      return;
    case StmtKind::Prefetch:
      prefetch(*s);
      return;
    case StmtKind::Matrix:
      matrix(*s);
      return;
    case StmtKind::For:
      for_loop(*s, tail);
      return;
    }
  }

  static std::string strip_parens(const std::string& s) {
    if (s.size() < 2 || s.front() != '(' || s.back() != ')')
      return s;
    int depth = 0;
    for (size_t k = 0; k + 1 < s.size(); ++k) {
      depth += s[k] == '(' ? 1 : s[k] == ')' ? -1 : 0;
      if (depth == 0)
        return s; // the first '(' closes before the end
    }
    return s.substr(1, s.size() - 2);
  }

  template <typename F> void scoped(bool tail, F&& body) {
    if (tail)
      return body();
    line("{");
    ++indent_;
    body();
    --indent_;
    line("}");
  }

  void nested(const Stmt& s) {
    ++indent_;
    stmt(s, true);
    --indent_;
  }

  // Scoped bindings of variables (and their ranges) and buffers.
  struct Saved {
    std::optional<Interval> range;
    bool was_bound;
  };
  Saved bind_var(const std::string& v, std::optional<Interval> range) {
    Saved s{std::nullopt, bound_vars_.count(v) > 0};
    if (auto it = env_.find(v); it != env_.end())
      s.range = it->second;
    env_.erase(v);
    if (range)
      env_[v] = *range;
    bound_vars_.insert(v);
    return s;
  }
  void unbind_var(const std::string& v, const Saved& s) {
    env_.erase(v);
    if (s.range)
      env_[v] = *s.range;
    if (!s.was_bound)
      bound_vars_.erase(v);
  }

  // A cache hint for one element, where the dialect has one. Its indices never read
  // tensors (the scheduler writes them from loop variables), so the address is plain.
  void prefetch(const StmtNode& s) {
    if (d_.prefetch.empty())
      return;
    const std::string_view hint = s.cache_level == 2 && !d_.prefetch_l2.empty() ? d_.prefetch_l2 : d_.prefetch;
    const BufferView& b = buffer(s.buffer);
    const std::string at = fmt::format("&{}[{}]", element_base(s.buffer, b), linear_index(s.indices, b.shape));
    if (s.shape.empty() || s.shape[0] == 1) {
      line(replace_all(std::string(hint), "{address}", at));
      return;
    }
    // Rows of a tile: one pointer and constant offsets (with each row's address written
    // out, GCC kept one induction variable per hint, spilled: 512^3 bf16 on AMX 0.25 ->
    // 0.19 ms).
    const std::string ptr = names_.fresh("pf");
    const int64_t stride = b.shape.back();
    line("{");
    ++indent_;
    line(fmt::format("const {}* {} = {};", b.holds_compute_type ? value_type(b.dtype) : storage_type(b.dtype), ptr,
                     at));
    for (int64_t r = 0; r < s.shape[0]; ++r)
      line(replace_all(std::string(hint), "{address}",
                       r == 0 ? ptr : fmt::format("{} + {}", ptr, int_literal(r * stride, true))));
    --indent_;
    line("}");
  }

  void store(const StmtNode& s) {
    const BufferView& b = buffer(s.buffer);
    bool scatter = false;
    for (const Expr& i : s.indices)
      scatter |= reads_tensor(i);
    if (!scatter) {
      line(fmt::format("{}[{}] = {};", element_base(s.buffer, b), linear_index(s.indices, b.shape),
                       strip_parens(stored_value(s.value, b))));
      return;
    }
    // A scatter (data-dependent store index): each such index is computed once into a
    // local, and an out-of-range value skips the store, so a bad index never writes
    // stray memory (the sim device reports it instead). Reads of the same element in
    // the value (a scatter-add's Y[Idx[i]] + ...) reuse the local.
    std::vector<Expr> at = s.indices;
    std::vector<std::string> names, tests;
    std::vector<Saved> saved;
    line("{");
    ++indent_;
    for (size_t k = 0; k < at.size(); ++k) {
      if (!reads_tensor(at[k]))
        continue;
      std::string v = fmt::format("ut_scatter_at{}", k);
      line(fmt::format("const int64_t {} = {};", names_.var(v), strip_parens(expr(at[k]))));
      tests.push_back(
          fmt::format("{0} >= 0 && {0} < {1}", names_.var(v), int_literal(b.shape[k], true)));
      saved.push_back(bind_var(v, Interval{0, b.shape[k] - 1}));
      names.push_back(v);
      at[k] = var(v, DType::I64);
    }
    Expr value = rewrite(s.value, [&](const Expr& e) -> Expr {
      if (e->kind != ExprKind::Access || e->name != s.buffer || e->operands.size() != at.size())
        return e;
      for (size_t k = 0; k < at.size(); ++k)
        if (!equal(e->operands[k], s.indices[k]))
          return e;
      return with_operands(e, at, e->guard);
    });
    std::string cond;
    for (size_t k = 0; k < tests.size(); ++k)
      cond += (k ? " && " : "") + tests[k];
    line(fmt::format("if ({}) {{", cond));
    ++indent_;
    line(fmt::format("{}[{}] = {};", names_.buffer(s.buffer), linear_index(at, b.shape),
                     strip_parens(stored_value(value, b))));
    --indent_;
    line("}");
    for (size_t n = names.size(); n-- > 0;)
      unbind_var(names[n], saved[n]);
    --indent_;
    line("}");
  }

  // The value as the buffer's storage holds it.
  std::string stored_value(const Expr& value, const BufferView& b) {
    if ((b.dtype == DType::F16 || b.dtype == DType::BF16) && !b.holds_compute_type) {
      // A copy between 16-bit buffers in memory (packing operand panels) moves the bits.
      if (value->kind == ExprKind::FloatImm && value->float_value == 0.0 && !std::signbit(value->float_value))
        return "0";
      if (value->kind == ExprKind::Access && !value->guard && value->type == b.dtype) {
        const BufferView& src = buffer(value->name);
        if (src.dtype == b.dtype && !src.holds_compute_type && src.vector_lanes == 0)
          return fmt::format("{}[{}]", element_base(value->name, src),
                             linear_index(clamped_indices(value, src.shape), src.shape));
      }
    }
    if (b.dtype == DType::F16 || b.dtype == DType::BF16) {
      // A cast to the buffer's own type rounds exactly as the store does: store directly.
      const Expr& x =
          value->kind == ExprKind::Cast && value->type == b.dtype ? value->operands[0] : value;
      std::string v = expr(x);
      if (compute_type(x->type) != DType::F32)
        v = fmt::format("(float)({})", v);
      if (b.holds_compute_type)
        return x == value ? v : round16(v, b.dtype);
      const char* fn = b.dtype == DType::F16 ? "ut_f32_to_f16" : "ut_f32_to_bf16";
      helpers_.need(fn);
      return fmt::format("{}({})", fn, v);
    }
    return converted(value, b.dtype);
  }

  void let(const StmtNode& s) {
    FreeNames used = free_names(s.body[0]);
    if (!used.vars.count(s.var)) { // pure and unused: nothing to compute
      stmt(s.body[0], true);
      return;
    }
    std::string value = expr(s.value);
    Saved saved = bind_var(s.var, bounds_of(s.value, env_));
    line(fmt::format("const {} {} = {};", value_type(s.value->type), names_.var(s.var),
                     strip_parens(value)));
    stmt(s.body[0], true);
    unbind_var(s.var, saved);
  }

  // The lanes of a Register allocation whose every access in a vectorized loop is one
  // whole, aligned vector (the innermost index is the variable of a vectorized loop of
  // constant extent that is a multiple of the lanes) and that has at least one such
  // access; 0 when it must stay a plain array. Accesses outside vectorized loops (a
  // reduction's final sum over its lanes) read single elements through a pointer, in
  // dialects that allow it (vector_tiles_with_scalar_access).
  int register_tile_lanes(const StmtNode& a) {
    if (a.scope != MemScope::Register || d_.vector_syntax == VectorSyntax::None ||
        !vector_lane_type(a.dtype) || byte_lane_type(a.dtype) || half_type(a.dtype) ||
        a.shape.empty())
      return 0;
    int lanes = hcd_.lanes_for(a.dtype);
    if (lanes < 2 || (lanes & (lanes - 1)) != 0 || lanes > d_.max_vector_lanes ||
        a.shape.back() % lanes != 0)
      return 0;
    bool ok = true, any = false;
    std::vector<const StmtNode*> loops;
    auto check = [&](const std::vector<Expr>& idx) {
      if (idx.empty()) {
        ok = false;
        return;
      }
      const StmtNode* l = loops.empty() ? nullptr : loops.back();
      bool vector_access = false;
      for (const Expr& i : idx)
        vector_access |= l && l->for_kind == ForKind::Vectorized && uses_var(i, l->var);
      if (!vector_access) {
        ok &= d_.vector_tiles_with_scalar_access; // through a pointer to the elements
        return;
      }
      any = true;
      int64_t mn = -1, ext = 0;
      ok &= const_int(l->min, &mn) && mn == 0 && const_int(l->extent, &ext) && ext % lanes == 0;
      ok &= idx.back()->kind == ExprKind::Var && idx.back()->name == l->var;
      for (size_t k = 0; k + 1 < idx.size(); ++k)
        ok &= !uses_var(idx[k], l->var);
    };
    std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
      if (x->kind == StmtKind::For)
        loops.push_back(x.get());
      if (x->kind == StmtKind::Store && x->buffer == a.buffer)
        check(x->indices);
      for (const Expr& e : {x->min, x->extent, x->cond, x->value})
        if (e)
          visit(e, [&](const Expr& r) {
            if (r->kind == ExprKind::Access && r->name == a.buffer)
              check(r->operands);
          });
      for (const Expr& i : x->indices)
        visit(i, [&](const Expr& r) {
          if (r->kind == ExprKind::Access && r->name == a.buffer)
            ok = false;
        });
      for (const Stmt& b : x->body)
        walk(b);
      if (x->kind == StmtKind::For)
        loops.pop_back();
    };
    walk(a.body[0]);
    return ok && any ? lanes : 0;
  }

  // A register allocation whose every access starts with the variables of thread loops
  // inside it that bind one iteration per thread (extent = the block's along their axis),
  // the same axes in the same order each time: a per-thread tile that lives across the
  // barriers between thread loops (thread_gemm's accumulators, [ty, tx, tm, tn]). On
  // hardware threads each thread holds only its own part: the number of leading
  // dimensions to drop (0: none, the allocation is printed whole).
  size_t thread_private_dims(const StmtNode& a) {
    if (!hardware_threads() || a.scope != MemScope::Register)
      return 0;
    std::map<std::string, int> bound; // variables of binding thread loops around the access
    std::optional<std::vector<int>> axes;
    bool ok = true;
    auto check = [&](const std::vector<Expr>& idx) {
      std::vector<int> mine;
      for (const Expr& i : idx) {
        if (i->kind != ExprKind::Var || !bound.count(i->name))
          break;
        mine.push_back(bound[i->name]);
      }
      if (!axes)
        axes = mine;
      else if (mine.size() < axes->size() || !std::equal(axes->begin(), axes->end(), mine.begin()))
        ok = false;
    };
    std::function<void(const Stmt&)> walk = [&](const Stmt& x) {
      if (!ok || !x)
        return;
      for (const Expr& e : {x->min, x->extent, x->cond, x->value})
        visit(e, [&](const Expr& r) {
          if (r->kind == ExprKind::Access && r->name == a.buffer)
            check(r->operands);
        });
      for (const Expr& i : x->indices)
        visit(i, [&](const Expr& r) {
          if (r->kind == ExprKind::Access && r->name == a.buffer)
            check(r->operands);
        });
      if (x->kind == StmtKind::Store && x->buffer == a.buffer)
        check(x->indices);
      if (x->kind == StmtKind::Matrix)
        ok = false;
      int64_t ext = 0, mn = -1;
      const bool binds = x->kind == StmtKind::For && is_thread(x->for_kind) &&
                         const_int(x->extent, &ext) && const_int(x->min, &mn) && mn == 0 &&
                         ext == static_cast<int64_t>(
                                    dims_.block[static_cast<int>(x->for_kind) -
                                                static_cast<int>(ForKind::ThreadX)]);
      if (binds)
        bound[x->var] = static_cast<int>(x->for_kind) - static_cast<int>(ForKind::ThreadX);
      for (const Stmt& c : x->body)
        walk(c);
      if (binds)
        bound.erase(x->var);
    };
    walk(a.body[0]);
    if (!ok || !axes || axes->empty() || axes->size() >= a.shape.size())
      return 0;
    std::set<int> distinct(axes->begin(), axes->end());
    if (distinct.size() != axes->size())
      return 0;
    for (size_t d = 0; d < axes->size(); ++d)
      if (a.shape[d] != static_cast<int64_t>(dims_.block[(*axes)[d]]))
        return 0;
    return axes->size();
  }

  // `s` with every access to `name` (reads and stores) without its first `n` indices.
  static Stmt drop_leading_indices(const Stmt& s, const std::string& name, size_t n) {
    if (!s)
      return s;
    auto n2 = std::make_shared<StmtNode>(*s);
    auto fix = [&](Expr& e) {
      if (e)
        e = rewrite(e, [&](const Expr& r) -> Expr {
          if (r->kind != ExprKind::Access || r->name != name)
            return r;
          return with_operands(r, std::vector<Expr>(r->operands.begin() + static_cast<std::ptrdiff_t>(n),
                                                    r->operands.end()),
                               r->guard);
        });
    };
    fix(n2->min);
    fix(n2->extent);
    fix(n2->cond);
    fix(n2->value);
    for (Expr& i : n2->indices)
      fix(i);
    if (s->kind == StmtKind::Store && s->buffer == name)
      n2->indices.erase(n2->indices.begin(), n2->indices.begin() + static_cast<std::ptrdiff_t>(n));
    for (Stmt& c : n2->body)
      c = drop_leading_indices(c, name, n);
    return n2;
  }

  void alloc(const StmtNode& s) {
    UT_INTERNAL_ASSERT(s.scope != MemScope::Global,
                       "global-scope allocation '" + s.buffer + "' inside a func");
    if (s.scope == MemScope::Register && matrix_uses(s.body[0], s.buffer, true)) {
      if (pairs_ && s.shape.size() >= 2 && s.shape[s.shape.size() - 2] == 1 && s.shape.back() == 16)
        pair_alloc(s);
      else if (amx_)
        tile_alloc(s);
      else
        fragment_alloc(s);
      return;
    }
    if (size_t drop = thread_private_dims(s); drop > 0) {
      // Each hardware thread's own tile: the thread dimensions are its threadIdx.
      auto own = std::make_shared<StmtNode>(s);
      own->shape.erase(own->shape.begin(), own->shape.begin() + static_cast<std::ptrdiff_t>(drop));
      own->body[0] = drop_leading_indices(s.body[0], s.buffer, drop);
      alloc(*own);
      return;
    }
    int64_t elems = 1;
    for (int64_t d : s.shape)
      elems *= d;
    elems = std::max<int64_t>(elems, 1);
    // A shared tile the matrix unit reads keeps its own dtype (the instructions take
    // packed 16-bit values), 16-byte aligned for paired loads.
    const bool operand =
        ((s.scope == MemScope::Shared && d_.warp_mma) || amx_ || pairs_) && matrix_uses(s.body[0], s.buffer, false);
    bool wide16 = (s.dtype == DType::F16 || s.dtype == DType::BF16) && !operand;
    std::string_view t = wide16 ? value_type(s.dtype) : storage_type(s.dtype);
    auto prev = buffers_.find(s.buffer);
    std::optional<BufferView> shadowed;
    if (prev != buffers_.end())
      shadowed = prev->second;
    buffers_[s.buffer] = {s.dtype, s.shape, wide16};
    const std::string& name = names_.buffer(s.buffer);
    if (int lanes = register_tile_lanes(s); lanes > 0) {
      // A register tile only ever touched a whole vector at a time: an array of vectors,
      // which the host compiler keeps in vector registers once its indices are constant.
      buffers_[s.buffer].vector_lanes = lanes;
      line(fmt::format("{} {}[{}];", helpers_.need_vector(s.dtype, lanes), name, elems / lanes));
      stmt(s.body[0], true);
      if (shadowed)
        buffers_[s.buffer] = *shadowed;
      else
        buffers_.erase(s.buffer);
      return;
    }
    int64_t bytes = elems * (wide16 ? 4 : dtype_bytes(s.dtype));
    bool shared = s.scope == MemScope::Shared && !d_.shared_qualifier.empty();
    bool heap = bytes > 64 * 1024 && !shared && d_.heap_allocations;
    if (hoisted_.count(&s)) {
      // declared at the entry's top (hoist_shared)
    } else if (shared) {
      // As in every dialect, 16-bit floats are held in their compute type (f32), except
      // in matrix operand tiles.
      line(fmt::format("{}{}{} {}[{}];", d_.shared_qualifier, operand ? "__align__(16) " : "", t, name, elems));
    } else if (heap) {
      // Aligned as the stack arrays below (aligned_alloc wants a multiple of it).
      line(fmt::format("{0}* {1} = ({0}*)aligned_alloc(64, {2});", t, name, int_literal((bytes + 63) / 64 * 64, true)));
      line(fmt::format("if (!{}) abort();", name));
    } else {
      line(fmt::format("{} {}[{}]{};", t, name, elems, array_alignment(bytes)));
    }
    if (operand)
      aligned_operands_.insert(s.buffer);
    stmt(s.body[0], true);
    aligned_operands_.erase(s.buffer);
    if (heap)
      line(fmt::format("free({});", name));
    if (shadowed)
      buffers_[s.buffer] = *shadowed;
    else
      buffers_.erase(s.buffer);
  }

  // A local array that vector code may load whole vectors from is aligned to the
  // vector's size (at most a cache line): stack arrays are otherwise aligned to 16 bytes
  // only, so a 64-byte load split across two lines in three of every four places, and
  // which one depended on where the stack happened to start. PoCL's softmax 1024 x 1024
  // moved between 0.34 and 0.44 ms with the size of the process's environment.
  std::string array_alignment(int64_t bytes) const {
    if (d_.vector_syntax == VectorSyntax::None)
      return "";
    int64_t align = 16;
    while (align < 64 && align * 2 <= std::max<int64_t>(hcd_.lanes_for(DType::F32), 1) * 4)
      align *= 2;
    return bytes >= align && align > 16 ? fmt::format(" __attribute__((aligned({})))", align) : "";
  }

  // The range of a loop's variable, when its bounds are known.
  std::optional<Interval> loop_range(const StmtNode& s) {
    auto lo = bounds_of(s.min, env_), ext = bounds_of(s.extent, env_);
    if (!lo || !ext || ext->hi < 1)
      return std::nullopt;
    return Interval{lo->lo, lo->hi + ext->hi - 1};
  }

  void for_loop(const StmtNode& s, bool tail) {
    const std::string& v = names_.var(s.var);
    int64_t ext = 0;
    bool single = const_int(s.extent, &ext) && ext == 1;
    if (is_thread(s.for_kind) && hardware_threads()) {
      thread_loop(s, tail);
      return;
    }
    if (is_grid(s.for_kind) || (is_thread(s.for_kind) && single)) {
      // One iteration per block (grid) or per one-thread block: a binding, not a loop.
      scoped(tail, [&] {
        std::optional<Interval> range = loop_range(s);
        std::string value;
        if (is_grid(s.for_kind)) {
          int axis = static_cast<int>(s.for_kind) - static_cast<int>(ForKind::GridX);
          std::string idx = fmt::format("(int64_t){}", d_.block_index[axis]);
          int64_t mn = 0;
          value = const_int(s.min, &mn) && mn == 0 ? idx : fmt::format("{} + {}", expr(s.min), idx);
        } else {
          value = strip_parens(expr(s.min));
        }
        bool used = free_names(s.body[0]).vars.count(s.var) > 0;
        Saved saved = bind_var(s.var, range);
        if (used)
          line(fmt::format("const int64_t {} = {};", v, value));
        stmt(s.body[0], true);
        unbind_var(s.var, saved);
      });
      return;
    }
    if (s.for_kind == ForKind::Vectorized && d_.vector_syntax != VectorSyntax::None &&
        vector_loop(s))
      return;
    if (s.for_kind == ForKind::Serial && d_.vector_syntax != VectorSyntax::None && transposed_copy(s))
      return;
    int64_t mn0 = 0;
    if (s.for_kind == ForKind::Unrolled && const_int(s.min, &mn0) && const_int(s.extent, &ext) && ext <= 16) {
      // Unrolled in the source, so a register tile's indices are constants before the
      // host compiler decides what lives in registers.
      for (int64_t k = 0; k < ext; ++k) {
        line("{");
        ++indent_;
        bool used = free_names(s.body[0]).vars.count(s.var) > 0;
        Saved saved = bind_var(s.var, Interval{mn0 + k, mn0 + k});
        if (used)
          line(fmt::format("const int64_t {} = {};", v, int_literal(mn0 + k, true)));
        stmt(s.body[0], true);
        unbind_var(s.var, saved);
        --indent_;
        line("}");
      }
      return;
    }
    if (s.for_kind == ForKind::Unrolled && const_int(s.min, &mn0) && !const_int(s.extent, &ext)) {
      // An edge tile's unrolled loop (`min(mr, rows left)` iterations): the most it can
      // run, each copy guarded, so a register tile's indices stay constants here too
      // (with a variable index the host compiler keeps the whole tile in memory).
      std::optional<Interval> most = bounds_of(s.extent, env_);
      if (most && most->hi >= 1 && most->hi <= 16) {
        std::string end = names_.fresh("end");
        line(fmt::format("const int64_t {} = {};", end, strip_parens(expr(s.extent))));
        for (int64_t k = 0; k < most->hi; ++k) {
          line(fmt::format("if ({} < {}) {{", int_literal(k, true), end));
          ++indent_;
          bool used = free_names(s.body[0]).vars.count(s.var) > 0;
          Saved saved = bind_var(s.var, Interval{mn0 + k, mn0 + k});
          if (used)
            line(fmt::format("const int64_t {} = {};", v, int_literal(mn0 + k, true)));
          stmt(s.body[0], true);
          unbind_var(s.var, saved);
          --indent_;
          line("}");
        }
        return;
      }
    }
    if (s.for_kind == ForKind::Unrolled && !d_.unroll_pragma.empty())
      line(replace_all(std::string(d_.unroll_pragma), "{count}",
                       std::to_string(const_int(s.extent, &ext) ? std::min<int64_t>(ext, 64) : 4)));
    if (s.for_kind == ForKind::Vectorized && !d_.ivdep_pragma.empty())
      line(std::string(d_.ivdep_pragma));
    if (s.for_kind == ForKind::Serial && s.unroll_by > 1 && !d_.unroll_pragma.empty())
      line(replace_all(std::string(d_.unroll_pragma), "{count}", std::to_string(s.unroll_by)));
    std::optional<Interval> range = loop_range(s);
    std::string header = loop_header(s, v);
    Saved saved = bind_var(s.var, range);
    line(header + " {");
    nested(s.body[0]);
    line("}");
    unbind_var(s.var, saved);
  }

  // A thread loop on hardware threads. When its extent is the block's along its axis,
  // each thread runs one iteration: a binding. Otherwise the block's threads stride
  // through the iterations (a one-iteration loop in a wider block runs on thread 0
  // only), which is only correct without barriers inside (threads would reach them
  // different numbers of times).
  void thread_loop(const StmtNode& s, bool tail) {
    int axis = static_cast<int>(s.for_kind) - static_cast<int>(ForKind::ThreadX);
    int64_t ext = 0;
    UT_INTERNAL_ASSERT(const_int(s.extent, &ext),
                       "thread loop '" + s.var + "' needs a constant extent");
    const std::string& v = names_.var(s.var);
    std::string idx = fmt::format("(int64_t){}", d_.thread_index[axis]);
    int64_t mn = 0;
    bool zero_min = const_int(s.min, &mn) && mn == 0;
    std::optional<Interval> range = loop_range(s);
    const bool was_in_lanes = in_lane_loop_;
    in_lane_loop_ |= axis == 0;
    if (ext == static_cast<int64_t>(dims_.block[axis])) {
      scoped(tail, [&] {
        bool used = free_names(s.body[0]).vars.count(s.var) > 0;
        Saved saved = bind_var(s.var, range);
        if (used)
          line(fmt::format("const int64_t {} = {};", v,
                           zero_min ? idx : fmt::format("{} + {}", expr(s.min), idx)));
        if (axis > 0)
          warp_vars_.insert(s.var); // one iteration per thread.y/z: the threads of one warp
        stmt(s.body[0], true);
        warp_vars_.erase(s.var);
        unbind_var(s.var, saved);
      });
      in_lane_loop_ = was_in_lanes;
      return;
    }
    if (contains_barrier(s.body[0]))
      throw UserError(fmt::format(
          "error: kernel '{}': thread loop '{}' has {} iterations but the block has {} threads "
          "along thread.{}, and its body holds a barrier that not every thread would reach",
          prog_.kernel, s.var, ext, dims_.block[axis], "xyz"[axis]));
    std::string lo = strip_parens(expr(s.min)), end = names_.fresh("end");
    std::string hi =
        zero_min ? int_literal(ext, true) : fmt::format("{} + {}", lo, int_literal(ext, true));
    Saved saved = bind_var(s.var, range);
    line(fmt::format("for (int64_t {0} = {1}{2}, {3} = {4}; {0} < {3}; {0} += {5}) {{", v,
                     zero_min ? "" : lo + " + ", idx, end, hi, d_.block_extent[axis]));
    nested(s.body[0]);
    line("}");
    unbind_var(s.var, saved);
    in_lane_loop_ = was_in_lanes;
  }

  std::string loop_header(const StmtNode& s, const std::string& v) {
    int64_t mn = 0, ext = 0;
    if (const_int(s.min, &mn) && const_int(s.extent, &ext))
      return fmt::format("for (int64_t {0} = {1}; {0} < {2}; ++{0})", v, int_literal(mn, true),
                         int_literal(mn + ext, true));
    std::string lo = strip_parens(expr(s.min)), end = names_.fresh("end");
    std::string hi = const_int(s.min, &mn) && mn == 0 ? strip_parens(expr(s.extent))
                                                      : fmt::format("{} + {}", lo, expr(s.extent));
    return fmt::format("for (int64_t {0} = {1}, {2} = {3}; {0} < {2}; ++{0})", v, lo, end, hi);
  }

  // ----- matrix units on Intel AMX tile registers (CDialect::amx_tiles)
  //
  // A register allocation of f32 tiles [tiles.., 16, 16] whose matrix statements all
  // index it with constants lives in tile registers tmm0-3 (tile t of the row-major tile
  // grid in tmm t); each run of consecutive mma statements loads its distinct A tiles into
  // tmm4-5 and B tiles into tmm6-7 once, then multiplies (a 2 x 2 micro-tile: 4 loads for
  // 4 tdpbf16ps). The register numbers are immediates of the instructions, so they must
  // be known here: the scheduler writes the accumulator's tile indices as constants.

  static bool has_matrix(const Stmt& s) {
    if (!s)
      return false;
    if (s->kind == StmtKind::Matrix)
      return true;
    for (const Stmt& b : s->body)
      if (has_matrix(b))
        return true;
    return false;
  }

  // The start of a matrix_store into `b` on a CPU (AMX tiles, vector pairs): opens a C
  // block declaring the tile's first row and column (ut_r0, ut_c0) and its linear offset
  // (ut_o); returns the destination's rows, columns and element base.
  std::tuple<int64_t, int64_t, std::string> open_tile_store(const StmtNode& s, const BufferView& b) {
    const size_t r = b.shape.size();
    line("{");
    ++indent_;
    line(fmt::format("const int64_t ut_r0 = {}, ut_c0 = {};", strip_parens(expr(s.indices[r - 2])),
                     strip_parens(expr(s.indices[r - 1]))));
    line(fmt::format("const int64_t ut_o = {};", linear_index(s.indices, b.shape)));
    return {b.shape[r - 2], b.shape[r - 1], element_base(s.buffer, b)};
  }

  // The f32 accumulator element `v` as stored into `b` (rounded to bf16 where it holds
  // bf16).
  std::string stored_value(const BufferView& b, const std::string& v) {
    if (b.dtype != DType::BF16)
      return v;
    if (b.holds_compute_type)
      return round16(v, b.dtype);
    helpers_.need("ut_f32_to_bf16");
    return fmt::format("ut_f32_to_bf16({})", v);
  }

  // Whether `s` holds a matrix statement on AMX tiles (not a 1 x 16 vector pair).
  bool has_amx_matrix(const Stmt& s) const {
    if (!s)
      return false;
    if (s->kind == StmtKind::Matrix)
      return !(pairs_ && pair_op(*s));
    for (const Stmt& b : s->body)
      if (has_amx_matrix(b))
        return true;
    return false;
  }

  // ----- matrix units on AVX512-BF16 vectors (a 1 x 16 x 2 unit; MatrixUnit.cpp)
  //
  // A register allocation of f32 [vectors.., 1, 16] is one 512-bit vector variable per
  // vector (the scheduler indexes it with constants; GCC 12 kept an array of 24 such
  // vectors in memory, 2048^3 bf16 at 110-155 against 79 ms with 16); an
  // mma is one vdpbf16ps of the accumulator, B's 16 columns in k pairs (one 64-byte
  // load per distinct B operand of a run of mma statements) and A's pair broadcast from
  // memory (CHelpers.cpp, ut_pairs).

  static bool pair_op(const StmtNode& s) { return s.shape.size() >= 2 && s.shape[0] == 1 && s.shape[1] == 16; }

  void pair_alloc(const StmtNode& s) {
    if (s.dtype != DType::F32)
      throw matrix_error(fmt::format("matrix accumulator '{}' must be f32 [vectors.., 1, 16]", s.buffer));
    int64_t count = 1;
    for (size_t k = 0; k + 2 < s.shape.size(); ++k)
      count *= s.shape[k];
    helpers_.need("ut_pairs");
    std::string decl;
    for (int64_t v = 0; v < count; ++v)
      decl += fmt::format("{}{}_{}", v ? ", " : "", names_.buffer(s.buffer), v);
    line(fmt::format("ut_pair_v {};", decl));
    pair_accs_[s.buffer] = std::vector<int64_t>(s.shape.begin(), s.shape.end() - 2);
    stmt(s.body[0], true);
    pair_accs_.erase(s.buffer);
  }

  // The accumulator vector `name[idx]`.
  std::string pair_acc(const std::string& name, const std::vector<Expr>& idx, const StmtNode& s) {
    auto it = pair_accs_.find(name);
    if (it == pair_accs_.end() || idx.size() != it->second.size() + 2)
      throw matrix_error(fmt::format("{}: '{}' is not a register allocation of [vectors.., 1, 16]",
                                     matrix_op_name(s.matrix_op), name));
    const std::vector<int64_t>& dims = it->second;
    int64_t lin = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t v = 0;
      if (!const_int(idx[k], &v))
        throw matrix_error(fmt::format("{}: the vector indices of '{}' must be constants (each vector is a variable)",
                                       matrix_op_name(s.matrix_op), name));
      if (k < dims.size()) {
        if (v < 0 || v >= dims[k])
          throw matrix_error(fmt::format("{}: vector index {} of '{}' is out of range", matrix_op_name(s.matrix_op),
                                         v, name));
        lin = lin * dims[k] + v;
      } else if (v != 0) {
        throw matrix_error(fmt::format("{}: a vector of '{}' starts at its row 0, column 0",
                                       matrix_op_name(s.matrix_op), name));
      }
    }
    return fmt::format("{}_{}", names_.buffer(name), lin);
  }

  // `&operand[origin]` of a bf16 operand in memory.
  std::string pair_operand(const Expr& e, const StmtNode& s) {
    const BufferView& b = buffer(e->name);
    if (b.dtype != DType::BF16 || b.holds_compute_type || b.vector_lanes > 0)
      throw matrix_error(fmt::format("{}: vdpbf16ps operand '{}' must be a bf16 buffer in memory",
                                     matrix_op_name(s.matrix_op), e->name));
    return fmt::format("&{}[{}]", element_base(e->name, b), linear_index(e->operands, b.shape));
  }

  void pair_mma_run(const std::vector<Stmt>& run) {
    std::map<std::string, std::string> b_regs;
    std::vector<std::string> body;
    line("{");
    ++indent_;
    for (const Stmt& st : run) {
      const StmtNode& s = *st;
      if (s.matrix_op != MatrixOp::MmaPairs || s.shape != std::vector<int64_t>{1, 16, 2})
        throw matrix_error(fmt::format("{}: vdpbf16ps multiplies with matrix_mma_pairs(1, 16, 2) (B in k pairs)",
                                       matrix_op_name(s.matrix_op)));
      const std::string c = pair_acc(s.buffer, s.indices, s);
      const std::string a = pair_operand(s.value->operands[0], s);
      const std::string b = pair_operand(s.value->operands[1], s);
      auto it = b_regs.find(b);
      if (it == b_regs.end()) {
        std::string reg = fmt::format("ut_b{}", b_regs.size());
        line(fmt::format("const ut_pair_v {} = ut_pair_load({});", reg, b));
        it = b_regs.emplace(b, reg).first;
      }
      body.push_back(fmt::format("{0} = ut_pair_dot({0}, {1}, {2});", c, it->second, a));
    }
    for (const std::string& l : body)
      line(l);
    --indent_;
    line("}");
  }

  void pair_matrix(const StmtNode& s) {
    const bool store = s.matrix_op == MatrixOp::Store;
    if (s.shape != std::vector<int64_t>{1, 16})
      throw matrix_error(fmt::format("{}: a vdpbf16ps accumulator is 1 x 16", matrix_op_name(s.matrix_op)));
    const std::string acc = store ? pair_acc(s.value->name, s.value->operands, s) : pair_acc(s.buffer, s.indices, s);
    if (!store) {
      line(fmt::format("{} = (ut_pair_v){{0}};", acc));
      return;
    }
    // A whole vector inside C is stored at once (rounded by vcvtneps2bf16 into bf16); at
    // C's right edge the lanes inside it one at a time.
    const BufferView& b = buffer(s.buffer);
    if (b.dtype != DType::F32 && b.dtype != DType::BF16)
      throw matrix_error(fmt::format("matrix_store into '{}' of dtype {}: vector pairs store f32 or bf16", s.buffer,
                                     dtype_name(b.dtype)));
    const auto [rows, cols, base] = open_tile_store(s, b);
    const std::string v = stored_value(b, "ut_lane[ut_c]");
    line(fmt::format("if (ut_r0 < {}) {{", int_literal(rows, true)));
    ++indent_;
    if (!b.holds_compute_type) {
      line(fmt::format("if (ut_c0 + 16 <= {}) {{", int_literal(cols, true)));
      line(fmt::format("  ut_pair_store_{}(&{}[ut_o], {});", b.dtype == DType::F32 ? "f32" : "bf16", base, acc));
      line("} else {");
      ++indent_;
    }
    line("float ut_lane[16];");
    line(fmt::format("memcpy(ut_lane, &{}, sizeof ut_lane);", acc));
    line(fmt::format("for (int64_t ut_c = 0; ut_c < 16 && ut_c0 + ut_c < {}; ++ut_c)", int_literal(cols, true)));
    line(fmt::format("  {}[ut_o + ut_c] = {};", base, v));
    if (!b.holds_compute_type) {
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
    --indent_;
    line("}");
  }

  void tile_alloc(const StmtNode& s) {
    const size_t r = s.shape.size();
    if (r < 2 || s.dtype != DType::F32 || s.shape[r - 2] != 16 || s.shape[r - 1] != 16)
      throw matrix_error(fmt::format("matrix accumulator '{}' must be f32 [tiles.., 16, 16] for AMX tiles", s.buffer));
    int64_t count = 1;
    for (size_t k = 0; k + 2 < r; ++k)
      count *= s.shape[k];
    if (count > 4)
      throw matrix_error(fmt::format("matrix accumulator '{}' has {} tiles; AMX keeps at most 4 in tile registers "
                                     "(tmm0-3, with tmm4-7 for the operands)",
                                     s.buffer, count));
    line(fmt::format("/* {}: {} accumulator tile(s) in tmm0-{} */", names_.buffer(s.buffer), count, count - 1));
    tile_accs_[s.buffer] = std::vector<int64_t>(s.shape.begin(), s.shape.end() - 2);
    stmt(s.body[0], true);
    tile_accs_.erase(s.buffer);
  }

  // The tile register holding accumulator tile `idx` of `name`.
  int tile_register(const std::string& name, const std::vector<Expr>& idx, const StmtNode& s) {
    auto it = tile_accs_.find(name);
    if (it == tile_accs_.end())
      throw matrix_error(fmt::format("{}: '{}' is not a register allocation of matrix tiles",
                                     matrix_op_name(s.matrix_op), name));
    const std::vector<int64_t>& dims = it->second;
    int64_t reg = 0;
    for (size_t k = 0; k < idx.size(); ++k) {
      int64_t v = 0;
      if (!const_int(idx[k], &v))
        throw matrix_error(fmt::format("{}: the tile indices of '{}' must be constants (a tile register is named "
                                       "in the instruction)",
                                       matrix_op_name(s.matrix_op), name));
      if (k < dims.size()) {
        if (v < 0 || v >= dims[k])
          throw matrix_error(fmt::format("{}: tile index {} of '{}' is out of range", matrix_op_name(s.matrix_op), v,
                                         name));
        reg = reg * dims[k] + v;
      } else if (v != 0) {
        throw matrix_error(fmt::format("{}: a tile of '{}' starts at row 0, column 0 of its unit tile",
                                       matrix_op_name(s.matrix_op), name));
      }
    }
    return static_cast<int>(reg);
  }

  // `&operand[origin]` and its row stride in bytes; the operand keeps 16-bit storage.
  std::pair<std::string, int64_t> tile_operand(const Expr& e, const StmtNode& s) {
    const BufferView& b = buffer(e->name);
    if ((b.dtype != DType::BF16) || b.holds_compute_type || b.vector_lanes > 0)
      throw matrix_error(fmt::format("{}: AMX operand '{}' must be a bf16 buffer in memory",
                                     matrix_op_name(s.matrix_op), e->name));
    return {fmt::format("&{}[{}]", element_base(e->name, b), linear_index(e->operands, b.shape)),
            b.shape.back() * 2};
  }

  void amx_mma_run(const std::vector<Stmt>& run) {
    std::map<std::string, int> a_regs, b_regs;
    for (const Stmt& st : run) {
      const StmtNode& s = *st;
      if (s.matrix_op != MatrixOp::MmaPairs || s.shape != std::vector<int64_t>{16, 16, 32})
        throw matrix_error(fmt::format("{}: AMX multiplies with matrix_mma_pairs(16, 16, 32) (tdpbf16ps: B in "
                                       "k pairs)",
                                       matrix_op_name(s.matrix_op)));
      const int c = tile_register(s.buffer, s.indices, s);
      auto [a, sa] = tile_operand(s.value->operands[0], s);
      auto [b, sb] = tile_operand(s.value->operands[1], s);
      auto reg = [&](std::map<std::string, int>& regs, const std::string& addr, int64_t stride, int first) {
        if (auto it = regs.find(addr); it != regs.end())
          return it->second;
        // A third distinct operand reuses the first register (loaded again).
        const int r = first + static_cast<int>(regs.size() % 2);
        if (regs.size() >= 2)
          regs.clear();
        regs[addr] = r;
        line(fmt::format("UT_TILE_LOAD({}, {}, {});", r, addr, stride));
        return r;
      };
      const int ra = reg(a_regs, a, sa, 4);
      const int rb = reg(b_regs, b, sb, 6);
      line(fmt::format("UT_TILE_DPBF16PS({}, {}, {});", c, ra, rb));
    }
  }

  void amx_matrix(const StmtNode& s) {
    const bool store = s.matrix_op == MatrixOp::Store;
    const std::string& acc = store ? s.value->name : s.buffer;
    const std::vector<Expr>& acc_idx = store ? s.value->operands : s.indices;
    if (s.shape != std::vector<int64_t>{16, 16})
      throw matrix_error(fmt::format("{}: AMX tiles are 16 x 16", matrix_op_name(s.matrix_op)));
    const int t = tile_register(acc, acc_idx, s);
    if (!store) {
      line(fmt::format("UT_TILE_ZERO({});", t));
      return;
    }
    // Whole tiles inside an f32 destination are stored directly; others go through a
    // 16 x 16 scratch, clipped at the edges (and rounded to bf16).
    const BufferView& b = buffer(s.buffer);
    if (b.dtype != DType::F32 && b.dtype != DType::BF16)
      throw matrix_error(fmt::format("matrix_store into '{}' of dtype {}: AMX stores f32 or bf16", s.buffer,
                                     dtype_name(b.dtype)));
    const auto [rows, cols, base] = open_tile_store(s, b);
    const bool direct = b.dtype == DType::F32 && !b.holds_compute_type;
    if (direct) {
      line(fmt::format("if (ut_r0 + 16 <= {} && ut_c0 + 16 <= {}) {{", int_literal(rows, true),
                       int_literal(cols, true)));
      ++indent_;
      line(fmt::format("UT_TILE_STORE({}, &{}[ut_o], {});", t, base, cols * 4));
      --indent_;
      line("} else {");
      ++indent_;
    }
    line("float ut_tile[256] __attribute__((aligned(64)));");
    line(fmt::format("UT_TILE_STORE({}, ut_tile, 64);", t));
    const std::string v = stored_value(b, "ut_tile[ut_r * 16 + ut_c]");
    const bool vector_rows =
        b.dtype == DType::BF16 && !b.holds_compute_type && d_.vector_syntax == VectorSyntax::Gcc;
    if (vector_rows) {
      // Whole rows of 16 round as one vector (the same bits as ut_f32_to_bf16).
      const std::string f32 = helpers_.need_vector(DType::F32, 16);
      const std::string half = helpers_.need_half_lanes(DType::BF16, 16);
      line(fmt::format("if (ut_c0 + 16 <= {}) {{", int_literal(cols, true)));
      ++indent_;
      // With AVX512-BF16 one vcvtneps2bf16 per row (CHelpers.cpp, ut_amx_bf16_row).
      const bool cvt = std::find(hcd_.isa.begin(), hcd_.isa.end(), "avx512_bf16") != hcd_.isa.end();
      if (cvt) {
        helpers_.need("ut_amx_bf16_row");
        line("#if defined(__AVX512BF16__)");
        line(fmt::format("for (int64_t ut_r = 0; ut_r < 16 && ut_r0 + ut_r < {}; ++ut_r)", int_literal(rows, true)));
        line(fmt::format("  ut_amx_bf16_row(&{}[ut_o + ut_r * {}], &ut_tile[ut_r * 16]);", base,
                         int_literal(cols, true)));
        line("#else");
      }
      line(fmt::format("for (int64_t ut_r = 0; ut_r < 16 && ut_r0 + ut_r < {}; ++ut_r)", int_literal(rows, true)));
      line(fmt::format("  {}_store(&{}[ut_o + ut_r * {}], {}_load(&ut_tile[ut_r * 16]));", half, base,
                       int_literal(cols, true), f32));
      if (cvt)
        line("#endif");
      --indent_;
      line("} else {");
      ++indent_;
    }
    line(fmt::format("for (int64_t ut_r = 0; ut_r < 16 && ut_r0 + ut_r < {}; ++ut_r)", int_literal(rows, true)));
    line(fmt::format("  for (int64_t ut_c = 0; ut_c < 16 && ut_c0 + ut_c < {}; ++ut_c)", int_literal(cols, true)));
    line(fmt::format("    {}[ut_o + ut_r * {} + ut_c] = {};", base, int_literal(cols, true), v));
    if (vector_rows) {
      --indent_;
      line("}");
    }
    if (direct) {
      --indent_;
      line("}");
    }
    --indent_;
    line("}");
  }

  // ----- matrix units (Loop.h, MatrixOp): PTX mma.sync on the 32 lanes of a warp
  //
  // Lane l = thread.x holds, of each 16 x 8 f32 accumulator tile, the elements (g, 2t),
  // (g, 2t+1), (g+8, 2t), (g+8, 2t+1) with g = l / 4 and t = l % 4 (the mma.sync C/D
  // fragment); the operands are gathered from their tiles in the instruction's A (row)
  // and B (col) layouts right before each instruction. A fragment buffer [warps, tiles..,
  // 16, 8] becomes a per-thread array of tiles x 4 floats: the warp index is the thread's
  // own (a warp loop's variable), the unit tile is spread over the lanes.

  // Whether a Matrix statement in `s` uses `name` as its accumulator (or, with
  // `accumulator` false, as an operand of an mma).
  static bool matrix_uses(const Stmt& s, const std::string& name, bool accumulator) {
    if (!s)
      return false;
    if (s->kind == StmtKind::Matrix) {
      const bool mma = is_matrix_mma(s->matrix_op);
      if (accumulator) {
        if (s->matrix_op == MatrixOp::Store ? s->value->name == name : s->buffer == name)
          return true;
      } else if (mma && (s->value->operands[0]->name == name || s->value->operands[1]->name == name)) {
        return true;
      }
    }
    for (const Stmt& b : s->body)
      if (matrix_uses(b, name, accumulator))
        return true;
    return false;
  }

  UserError matrix_error(const std::string& what) const {
    return UserError(fmt::format("error: kernel '{}' on HCD '{}': {}", prog_.kernel, hcd_.name, what));
  }

  void require_warp_mma(const std::string& what) const {
    if (!d_.warp_mma)
      throw matrix_error(fmt::format("{}: the {} dialect has no matrix-unit instructions (matrix statements "
                                     "print for the cuda dialect and run on the sim device)",
                                     what, d_.name));
  }

  void fragment_alloc(const StmtNode& s) {
    require_warp_mma("matrix accumulator '" + s.buffer + "'");
    const size_t r = s.shape.size();
    if (r < 3 || s.dtype != DType::F32)
      throw matrix_error(fmt::format("matrix accumulator '{}' must be f32 [warps, tiles.., m, n]", s.buffer));
    FragmentView f;
    f.m = s.shape[r - 2];
    f.n = s.shape[r - 1];
    f.tiles.assign(s.shape.begin() + 1, s.shape.end() - 2);
    if (f.m != 16 || f.n != 8)
      throw matrix_error(fmt::format("mma.sync accumulates 16 x 8 tiles; '{}' has {} x {} tiles", s.buffer, f.m, f.n));
    f.per_lane = f.m * f.n / 32;
    int64_t count = f.per_lane;
    for (int64_t d : f.tiles)
      count *= d;
    line(fmt::format("float {}[{}];", names_.buffer(s.buffer), count));
    fragments_[s.buffer] = f;
    stmt(s.body[0], true);
    fragments_.erase(s.buffer);
  }

  // `&frag[first element of this lane's share of the tile]`.
  std::string fragment_pointer(const std::string& name, const std::vector<Expr>& idx, const StmtNode& s) {
    auto it = fragments_.find(name);
    if (it == fragments_.end())
      throw matrix_error(fmt::format("{}: '{}' is not a register allocation of matrix tiles",
                                     matrix_op_name(s.matrix_op), name));
    const FragmentView& f = it->second;
    if (s.shape[0] != f.m || s.shape[1] != f.n)
      throw matrix_error(fmt::format("{}: a {} x {} unit on the {} x {} tiles of '{}'", matrix_op_name(s.matrix_op),
                                     s.shape[0], s.shape[1], f.m, f.n, name));
    if (idx.empty() || idx[0]->kind != ExprKind::Var || !warp_vars_.count(idx[0]->name))
      throw matrix_error(fmt::format("{}: the first index of '{}' must be the variable of the enclosing warp loop "
                                     "(a thread.y or thread.z loop over the whole block)",
                                     matrix_op_name(s.matrix_op), name));
    for (size_t k = idx.size() - 2; k < idx.size(); ++k)
      if (idx[k]->kind != ExprKind::IntImm || idx[k]->int_value != 0)
        throw matrix_error(fmt::format("{}: a tile of '{}' starts at row 0, column 0 of its unit tile",
                                       matrix_op_name(s.matrix_op), name));
    std::vector<Expr> tile(idx.begin() + 1, idx.end() - 2);
    std::string lin = tile.empty() ? "0" : linear_index(tile, f.tiles);
    return fmt::format("&{}[({}) * {}]", names_.buffer(name), lin, f.per_lane);
  }

  void matrix(const StmtNode& s) {
    const char* op = matrix_op_name(s.matrix_op);
    if (pairs_ && pair_op(s)) {
      if (is_matrix_mma(s.matrix_op))
        pair_mma_run({std::make_shared<StmtNode>(s)});
      else
        pair_matrix(s);
      return;
    }
    if (amx_) {
      if (is_matrix_mma(s.matrix_op))
        amx_mma_run({std::make_shared<StmtNode>(s)});
      else
        amx_matrix(s);
      return;
    }
    require_warp_mma(op);
    if (hcd_.warp_size != 32 || dims_.block[0] != 32)
      throw matrix_error(fmt::format("{}: mma.sync runs on the 32 lanes of a warp, so the block's thread.x must be "
                                     "32 (it is {}, HCD warp_size {})",
                                     op, dims_.block[0], hcd_.warp_size));
    if (in_lane_loop_)
      throw matrix_error(fmt::format("{}: inside a loop over lanes (thread.x); every lane of the warp must run "
                                     "it together",
                                     op));
    const bool store = s.matrix_op == MatrixOp::Store;
    const std::string& acc = store ? s.value->name : s.buffer;
    const std::vector<Expr>& acc_idx = store ? s.value->operands : s.indices;
    const std::string lane = std::string(d_.thread_index[0]);
    line("{");
    ++indent_;
    line(fmt::format("const int ut_g = (int){} >> 2, ut_t = (int){} & 3;", lane, lane));
    line(fmt::format("float* ut_c = {};", fragment_pointer(acc, acc_idx, s)));
    switch (s.matrix_op) {
    case MatrixOp::Zero:
      line("ut_c[0] = 0.0f; ut_c[1] = 0.0f; ut_c[2] = 0.0f; ut_c[3] = 0.0f;");
      break;
    case MatrixOp::Store:
      matrix_store_tile(s);
      break;
    case MatrixOp::Mma:
    case MatrixOp::MmaTf32:
      matrix_mma_tile(s);
      break;
    case MatrixOp::MmaPairs:
      throw matrix_error("matrix_mma_pairs: mma.sync takes B in columns, not in k pairs");
    }
    --indent_;
    line("}");
  }

  // The 4 accumulator elements of this lane into the destination tile, each skipped
  // when it falls outside the buffer.
  void matrix_store_tile(const StmtNode& s) {
    const BufferView& b = buffer(s.buffer);
    const size_t r = b.shape.size();
    const int64_t rows = b.shape[r - 2], cols = b.shape[r - 1];
    line(fmt::format("const int64_t ut_r0 = {}, ut_c0 = {};", strip_parens(expr(s.indices[r - 2])),
                     strip_parens(expr(s.indices[r - 1]))));
    line(fmt::format("const int64_t ut_o = {};", linear_index(s.indices, b.shape)));
    auto value = [&](const std::string& v) -> std::string {
      switch (b.dtype) {
      case DType::F32: return v;
      case DType::F64: return "(double)" + v;
      case DType::F16:
      case DType::BF16: {
        if (b.holds_compute_type)
          return round16(v, b.dtype);
        const char* fn = b.dtype == DType::F16 ? "ut_f32_to_f16" : "ut_f32_to_bf16";
        helpers_.need(fn);
        return fmt::format("{}({})", fn, v);
      }
      default: break;
      }
      throw matrix_error(fmt::format("matrix_store into '{}' of dtype {}: only float buffers", s.buffer,
                                     dtype_name(b.dtype)));
    };
    const std::string base = element_base(s.buffer, b);
    for (int half = 0; half < 2; ++half) {
      const std::string row = half ? "ut_g + 8" : "ut_g";
      line(fmt::format("if (ut_r0 + {} < {}) {{", row, int_literal(rows, true)));
      ++indent_;
      for (int e = 0; e < 2; ++e) {
        const std::string col = e ? "2 * ut_t + 1" : "2 * ut_t";
        line(fmt::format("if (ut_c0 + {} < {}) {}[ut_o + (int64_t)({}) * {} + {}] = {};", col,
                         int_literal(cols, true), base, row, int_literal(cols, true), col,
                         value(fmt::format("ut_c[{}]", 2 * half + e))));
      }
      --indent_;
      line("}");
    }
  }

  void matrix_mma_tile(const StmtNode& s) {
    const Expr& ea = s.value->operands[0];
    const Expr& eb = s.value->operands[1];
    const BufferView& ba = buffer(ea->name);
    const BufferView& bb = buffer(eb->name);
    const bool tf32 = s.matrix_op == MatrixOp::MmaTf32;
    const DType t = ba.dtype;
    const bool half16 = (t == DType::BF16 || t == DType::F16) && !tf32;
    const std::vector<int64_t> want = tf32 ? std::vector<int64_t>{16, 8, 8} : std::vector<int64_t>{16, 8, 16};
    if ((!half16 && !(tf32 && t == DType::F32)) || bb.dtype != t || s.shape != want)
      throw matrix_error(fmt::format("{}({}, {}, {}) on {} operands: mma.sync has m16n8k16 for f16/bf16 and "
                                     "m16n8k8 for tf32 (f32 operands)",
                                     matrix_op_name(s.matrix_op), s.shape[0], s.shape[1], s.shape[2],
                                     dtype_name(t)));
    const int64_t sa = ba.shape.back(), sb = bb.shape.back();
    line(fmt::format("const int64_t ut_ao = {}, ut_bo = {};", linear_index(ea->operands, ba.shape),
                     linear_index(eb->operands, bb.shape)));
    const std::string a = element_base(ea->name, ba), b = element_base(eb->name, bb);
    auto at = [&](const std::string& base, const std::string& origin, int64_t stride, const std::string& row,
                  const std::string& col) {
      return fmt::format("{}[{} + (int64_t)({}) * {} + {}]", base, origin, row, int_literal(stride, true), col);
    };
    if (tf32) {
      const char* cvt = "asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"({}) : \"f\"({}));";
      line("uint32_t ut_a0, ut_a1, ut_a2, ut_a3, ut_b0, ut_b1;");
      const std::pair<const char*, const char*> ai[] = {{"ut_g", "ut_t"}, {"ut_g + 8", "ut_t"}, {"ut_g", "ut_t + 4"},
                                                        {"ut_g + 8", "ut_t + 4"}};
      for (int k = 0; k < 4; ++k)
        line(fmt::format(fmt::runtime(cvt), fmt::format("ut_a{}", k), at(a, "ut_ao", sa, ai[k].first, ai[k].second)));
      line(fmt::format(fmt::runtime(cvt), "ut_b0", at(b, "ut_bo", sb, "ut_t", "ut_g")));
      line(fmt::format(fmt::runtime(cvt), "ut_b1", at(b, "ut_bo", sb, "ut_t + 4", "ut_g")));
    } else {
      const char* bits = t == DType::BF16 ? "__bfloat16_as_ushort" : "__half_as_ushort";
      const char* round = t == DType::BF16 ? "__float2bfloat16_rn" : "__float2half_rn";
      auto u16 = [&](const BufferView& v, const std::string& elem) {
        return v.holds_compute_type ? fmt::format("(uint32_t){}({}({}))", bits, round, elem)
                                    : fmt::format("(uint32_t){}({})", bits, elem);
      };
      auto pair = [&](const BufferView& v, const std::string& lo, const std::string& hi) {
        return fmt::format("{} | ({} << 16)", u16(v, lo), u16(v, hi));
      };
      // A's pairs are adjacent: one 32-bit load when the tile's column origin is even and
      // rows have an even length (then the element offset is even) in an aligned buffer.
      std::optional<Interval> col = bounds_of(ea->operands.back(), env_);
      const bool aligned = (aligned_operands_.count(ea->name) || prog_.find_buffer(ea->name)) && !ba.holds_compute_type &&
                           sa % 2 == 0 && col && col->lo == col->hi && col->lo % 2 == 0;
      const std::pair<const char*, const char*> ai[] = {{"ut_g", "2 * ut_t"}, {"ut_g + 8", "2 * ut_t"},
                                                        {"ut_g", "2 * ut_t + 8"}, {"ut_g + 8", "2 * ut_t + 8"}};
      for (int k = 0; k < 4; ++k) {
        const std::string lo = at(a, "ut_ao", sa, ai[k].first, ai[k].second);
        const std::string hi = at(a, "ut_ao", sa, ai[k].first, std::string(ai[k].second) + " + 1");
        if (aligned)
          line(fmt::format("const uint32_t ut_a{} = *(const uint32_t*)&{};", k, lo));
        else
          line(fmt::format("const uint32_t ut_a{} = {};", k, pair(ba, lo, hi)));
      }
      line(fmt::format("const uint32_t ut_b0 = {};",
                       pair(bb, at(b, "ut_bo", sb, "2 * ut_t", "ut_g"), at(b, "ut_bo", sb, "2 * ut_t + 1", "ut_g"))));
      line(fmt::format("const uint32_t ut_b1 = {};", pair(bb, at(b, "ut_bo", sb, "2 * ut_t + 8", "ut_g"),
                                                          at(b, "ut_bo", sb, "2 * ut_t + 9", "ut_g"))));
    }
    const char* form = tf32 ? "m16n8k8.row.col.f32.tf32.tf32.f32"
                       : t == DType::BF16 ? "m16n8k16.row.col.f32.bf16.bf16.f32"
                                          : "m16n8k16.row.col.f32.f16.f16.f32";
    line(fmt::format("asm(\"mma.sync.aligned.{} {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, "
                     "{{%0, %1, %2, %3}};\"",
                     form));
    line("    : \"+f\"(ut_c[0]), \"+f\"(ut_c[1]), \"+f\"(ut_c[2]), \"+f\"(ut_c[3])");
    line("    : \"r\"(ut_a0), \"r\"(ut_a1), \"r\"(ut_a2), \"r\"(ut_a3), \"r\"(ut_b0), \"r\"(ut_b1));");
  }

  // ----- vector code

  // Print `s` with vector extensions when it qualifies (VectorLoop.h); false otherwise.
  bool vector_loop(const StmtNode& s) {
    auto lookup = [&](const std::string& n) -> std::optional<VectorBufferInfo> {
      auto it = buffers_.find(n);
      if (it == buffers_.end())
        return std::nullopt;
      // A local f16/bf16 allocation that holds floats (a widened GEMM's packed panels)
      // is an f32 array to the vector code.
      if (it->second.holds_compute_type) {
        if (d_.vector_syntax != VectorSyntax::Gcc)
          return std::nullopt; // the half-lane helpers are the C dialect's
        return VectorBufferInfo{DType::F32, &it->second.shape};
      }
      return VectorBufferInfo{it->second.dtype, &it->second.shape};
    };
    auto stores = vector_loop_stores(s, lookup, d_.vector_syntax == VectorSyntax::Gcc);
    if (!stores)
      return false;
    const StmtNode* first = nullptr;
    for (const StmtNode* st : *stores)
      if (!first && st->kind == StmtKind::Store)
        first = st;
    if (!first)
      return false;
    int lanes = byte_lanes(*stores, hcd_.lanes_for(lane_type(buffer(first->buffer).dtype)));
    if (lanes < 2 || (lanes & (lanes - 1)) != 0 || lanes > d_.max_vector_lanes)
      return false;
    int64_t mn = 0, ext = 0;
    bool const_bounds = const_int(s.min, &mn) && const_int(s.extent, &ext);
    if (const_bounds && ext < lanes)
      return false;

    const std::string& v = names_.var(s.var);
    std::optional<Interval> range = loop_range(s);
    line("{");
    ++indent_;
    std::string end;
    if (const_bounds) {
      end = int_literal(mn + ext, true);
    } else {
      end = names_.fresh("end");
      int64_t zero = 0;
      std::string hi = const_int(s.min, &zero) && zero == 0
                           ? strip_parens(expr(s.extent))
                           : fmt::format("{} + {}", expr(s.min), expr(s.extent));
      line(fmt::format("const int64_t {} = {};", end, hi));
    }
    Saved saved = bind_var(s.var, range);
    auto print_stores = [&] {
      for (const StmtNode* st : *stores) {
        if (st->kind == StmtKind::Prefetch) {
          prefetch(*st); // lane 0's element: one hint per vector
          continue;
        }
        const BufferView& b = buffer(st->buffer);
        if (b.holds_compute_type) { // an f32 array: rounded only by a cast to its type
          const bool cast = st->value->kind == ExprKind::Cast && st->value->type == b.dtype;
          std::string value = vexpr(cast ? st->value->operands[0] : st->value, DType::F32, s.var, lanes);
          if (cast)
            value = fmt::format("{}_round({})", helpers_.need_half_lanes(b.dtype, lanes), value);
          line(fmt::format("{}_store(&{}[{}], {});", helpers_.need_vector(DType::F32, lanes),
                           names_.buffer(st->buffer), linear_index(st->indices, b.shape), value));
          continue;
        }
        if (half_type(b.dtype)) { // rounded to nearest even as it is stored
          // A cast to the buffer's own type rounds exactly as the store does.
          const Expr& x = st->value->kind == ExprKind::Cast && st->value->type == b.dtype
                              ? st->value->operands[0]
                              : st->value;
          std::string value = vexpr(x, DType::F32, s.var, lanes);
          line(fmt::format("{}_store(&{}[{}], {});", helpers_.need_half_lanes(b.dtype, lanes),
                           names_.buffer(st->buffer), linear_index(st->indices, b.shape), value));
          continue;
        }
        std::string value = vexpr(st->value, b.dtype, s.var, lanes);
        std::string vt = helpers_.need_vector(b.dtype, lanes);
        if (b.vector_lanes) {
          line(fmt::format("{}[{}] = {};", names_.buffer(st->buffer),
                           vector_slot(st->indices, b), value));
        } else if (streams(st->buffer)) {
          helpers_.need_stream();
          line(fmt::format("{}_stream(&{}[{}], {});", vt, names_.buffer(st->buffer),
                           linear_index(st->indices, b.shape), value));
        } else
          line(fmt::format("{}_store(&{}[{}], {});", vt, names_.buffer(st->buffer),
                           linear_index(st->indices, b.shape), value));
      }
    };
    if (const_bounds && ext % lanes == 0 && ext / lanes <= 4) {
      // A few whole vectors: straight-line steps with constant offsets.
      for (int64_t k = 0; k < ext / lanes; ++k) {
        line("{");
        ++indent_;
        line(fmt::format("const int64_t {} = {};", v, int_literal(mn + k * lanes, true)));
        env_[s.var] = Interval{mn + k * lanes, mn + k * lanes};
        print_stores();
        --indent_;
        line("}");
      }
      unbind_var(s.var, saved);
      --indent_;
      line("}");
      return true;
    }
    line(fmt::format("int64_t {} = {};", v, strip_parens(expr(s.min))));
    line(fmt::format("for (; {0} + {1} <= {2}; {0} += {1}) {{", v, lanes, end));
    ++indent_;
    print_stores();
    --indent_;
    line("}");
    if (!const_bounds || ext % lanes != 0) {
      line(fmt::format("for (; {0} < {1}; ++{0}) {{", v, end));
      nested(s.body[0]);
      line("}");
    }
    unbind_var(s.var, saved);
    --indent_;
    line("}");
    return true;
  }

  // A copy that transposes, `for a { for b (vectorized) { D[.. a * Wd + b ..] =
  // S[.. a + b * Ws ..] } }` (an attention key tile staged as K_local[d, c] = K[c, d];
  // a tile of a transposing map, whose inner loop is serial; a GEMM's A panel):
  // the vectorized loop writes D unit-stride but reads S a column at a time, which GCC
  // prints as scalar moves and LLVM (PoCL) as gathers, a fifth of the attention kernel
  // either way. With both extents whole multiples of L lanes, it runs in L x L
  // blocks instead: L vector loads of S's rows, L log2(L) two-vector shuffles
  // (CHelperSet::need_transpose), L vector stores of D's rows. Returns false, printing
  // nothing, for any other loop.
  bool transposed_copy(const StmtNode& s) {
    if (s.body.size() != 1 || !s.body[0] || s.body[0]->kind != StmtKind::For || s.unroll_by > 1)
      return false;
    const StmtNode& in = *s.body[0];
    if ((in.for_kind != ForKind::Vectorized && in.for_kind != ForKind::Serial) || in.unroll_by > 1 ||
        in.body.size() != 1 || !in.body[0] || in.body[0]->kind != StmtKind::Store)
      return false;
    const StmtNode& st = *in.body[0];
    const Expr& src = st.value;
    // A serial inner loop qualifies too when it copies between two buffers (the
    // auto-scheduler's tiles of a transposing map): each element is written once, from
    // an element no iteration writes, so the order of the iterations is free.
    if (src->kind != ExprKind::Access || src->guard || src->name == st.buffer || buffers_.count(st.buffer) == 0 ||
        buffers_.count(src->name) == 0 || streams(st.buffer))
      return false;
    const BufferView &db = buffer(st.buffer), &sb = buffer(src->name);
    if (db.dtype != sb.dtype || db.dtype != src->type || db.vector_lanes || sb.vector_lanes ||
        db.holds_compute_type || sb.holds_compute_type || !vector_lane_type(db.dtype) ||
        (dtype_bytes(db.dtype) != 4 && dtype_bytes(db.dtype) != 8))
      return false;
    int64_t amin = 0, aext = 0, bmin = 0, bext = 0;
    if (!const_int(s.min, &amin) || !const_int(s.extent, &aext) || !const_int(in.min, &bmin) ||
        !const_int(in.extent, &bext))
      return false;
    // The widest blocks both extents hold whole, down to 4 x 4: a GEMM's A panel of 8 rows
    // takes 8 x 8 blocks of half-width vectors on a 16-lane machine.
    int lanes = std::min(hcd_.lanes_for(db.dtype), d_.max_vector_lanes);
    if ((lanes & (lanes - 1)) != 0)
      return false;
    while (lanes > 4 && (aext % lanes != 0 || bext % lanes != 0))
      lanes /= 2;
    if (lanes < 4 || aext % lanes != 0 || bext % lanes != 0)
      return false;
    // How the linear index of an access moves with the loop variable `v`.
    auto slope = [](const std::vector<Expr>& idx, const std::vector<int64_t>& shape,
                    const std::string& v) -> std::optional<int64_t> {
      int64_t total = 0, stride = 1;
      for (size_t k = idx.size(); k-- > 0;) {
        if (reads_tensor(idx[k]))
          return std::nullopt;
        std::optional<int64_t> c = affine_coefficient(idx[k], v);
        if (!c)
          return std::nullopt;
        total += *c * stride;
        stride *= shape[k];
      }
      return total;
    };
    const auto da = slope(st.indices, db.shape, s.var), dbv = slope(st.indices, db.shape, in.var),
               sa = slope(src->operands, sb.shape, s.var), sbv = slope(src->operands, sb.shape, in.var);
    if (!da || !dbv || !sa || !sbv)
      return false;
    // D unit-stride along one loop and S along the other, either way round (a GEMM's
    // pack of a transposed operand walks the source in memory order); `d_step` is how
    // far D moves along S's unit loop, `s_step` how far S moves along D's.
    int64_t d_step = 0, s_step = 0;
    if (*dbv == 1 && *sa == 1) {
      d_step = *da;
      s_step = *sbv;
    } else if (*da == 1 && *sbv == 1) {
      d_step = *dbv;
      s_step = *sa;
    } else {
      return false;
    }
    if (std::llabs(s_step) <= 1 || std::llabs(d_step) <= 1)
      return false;
    // The blocks read and write exactly the elements the loops would (both extents are
    // whole blocks), so whatever keeps the loops in range (a ragged tile's guard) keeps
    // the blocks in range too.
    const std::string vt = helpers_.need_transpose(db.dtype, lanes);
    const std::string &av = names_.var(s.var), &bv = names_.var(in.var);
    Saved a_saved = bind_var(s.var, Interval{amin, amin + aext - lanes});
    line(fmt::format("for (int64_t {0} = {1}; {0} < {2}; {0} += {3}) {{", av, int_literal(amin, true),
                     int_literal(amin + aext, true), lanes));
    ++indent_;
    Saved b_saved = bind_var(in.var, Interval{bmin, bmin + bext - lanes});
    line(fmt::format("for (int64_t {0} = {1}; {0} < {2}; {0} += {3}) {{", bv, int_literal(bmin, true),
                     int_literal(bmin + bext, true), lanes));
    ++indent_;
    const std::string out = names_.fresh("to"), from = names_.fresh("from"), t = names_.fresh("t");
    line(fmt::format("const int64_t {} = {}, {} = {};", out, linear_index(st.indices, db.shape), from,
                     linear_index(src->operands, sb.shape)));
    // Row r of the block: S's L elements along its unit loop, r steps along D's.
    for (int r = 0; r < lanes; ++r)
      line(fmt::format("{0} {1}_{2}_0 = {0}_load(&{3}[{4} + {5}]);", vt, t, r, element_base(src->name, sb), from,
                       int_literal(s_step * r, true)));
    int stage = 0;
    for (int h = 1; h < lanes; h *= 2, ++stage)
      for (int r = 0; r < lanes; ++r)
        if ((r & h) == 0)
          line(fmt::format("{0} {1}_{2}_{3} = {0}_tlo{5}({1}_{2}_{4}, {1}_{6}_{4}), {1}_{6}_{3} = "
                           "{0}_thi{5}({1}_{2}_{4}, {1}_{6}_{4});",
                           vt, t, r, stage + 1, stage, h, r + h));
    for (int r = 0; r < lanes; ++r)
      line(fmt::format("{}_store(&{}[{} + {}], {}_{}_{});", vt, names_.buffer(st.buffer), out,
                       int_literal(d_step * r, true), t, r, stage));
    unbind_var(in.var, b_saved);
    --indent_;
    line("}");
    unbind_var(s.var, a_saved);
    --indent_;
    line("}");
    return true;
  }

  // The lanes of a loop that touches one-byte (bool, i8, u8) buffers: as many as the
  // widest element touched fills a vector with (a comparison of f32 into bools: 8 on
  // AVX2), so that no value needs more than one register. Loops without them, or with a
  // register tile, keep `lanes` (the first store's).
  int byte_lanes(const std::vector<const StmtNode*>& stores, int lanes) {
    bool bytes = false;
    int fewest = lanes;
    for (const StmtNode* st : stores) {
      if (st->kind != StmtKind::Store)
        continue;
      const BufferView& b = buffer(st->buffer);
      if (b.vector_lanes)
        return lanes;
      bytes |= byte_lane_type(b.dtype);
      fewest = std::min(fewest, hcd_.lanes_for(b.dtype));
      visit(st->value, [&](const Expr& n) {
        if (n->kind != ExprKind::Access)
          return;
        auto it = buffers_.find(n->name);
        if (it == buffers_.end())
          return;
        bytes |= byte_lane_type(it->second.dtype);
        fewest = std::min(fewest, hcd_.lanes_for(it->second.dtype));
      });
    }
    return bytes ? fewest : lanes;
  }

  // How scalar code names a buffer's elements (a register tile of vectors through a
  // pointer to its elements, which GCC's vector types may alias).
  std::string element_base(const std::string& name, const BufferView& b) {
    if (!b.vector_lanes)
      return names_.buffer(name);
    return fmt::format("(({}*){})", storage_type(b.dtype), names_.buffer(name));
  }

  // The vector of a register tile holding the element at `indices` (lane 0 of a vector).
  std::string vector_slot(const std::vector<Expr>& indices, const BufferView& b) {
    return fmt::format("({}) / {}", linear_index(indices, b.shape), b.vector_lanes);
  }

  std::string convert_vector(const std::string& x, DType from, DType to, int lanes) {
    from = lane_type(from);
    to = lane_type(to);
    if (from == to)
      return x;
    if (to == DType::Bool) // 0 or 1, as C's conversion to bool
      return mask_to_bool(fmt::format("({} != 0)", x), vector_mask_elem(from), lanes);
    std::string vt = helpers_.need_vector(to, lanes);
    if (d_.vector_syntax == VectorSyntax::OpenCL)
      return fmt::format("convert_{}{}({})", storage_type(to), lanes, x);
    return fmt::format("__builtin_convertvector({}, {})", x, vt);
  }

  // A lane mask (-1 or 0 in `mask_elem` lanes) as bool lanes (1 or 0).
  std::string mask_to_bool(const std::string& mask, DType mask_elem, int lanes) {
    helpers_.need_vector(mask_elem, lanes);
    std::string vt = helpers_.need_vector(DType::Bool, lanes);
    std::string narrowed =
        d_.vector_syntax == VectorSyntax::OpenCL
            ? fmt::format("convert_{}{}({})", storage_type(DType::Bool), lanes, mask)
            : fmt::format("__builtin_convertvector({}, {})", mask, vt);
    return fmt::format("({} & {}_splat(1))", narrowed, vt);
  }

  // `e` as a vector of `want` lanes; the loop variable `var` is lane 0's value.
  std::string vexpr(const Expr& e, DType want, const std::string& var, int lanes) {
    want = lane_type(want); // f16/bf16 values are f32 lanes
    std::string vt = helpers_.need_vector(want, lanes);
    if (!uses_var(e, var))
      return fmt::format("{}_splat({})", vt, strip_parens(converted(e, want)));
    if (is_integer(e->type) && e->kind != ExprKind::Access) {
      if (std::optional<int64_t> slope = affine_coefficient(e, var)) {
        // lane k: lane 0's value plus slope * k (VectorLoop.cpp's iota).
        std::string offsets;
        for (int k = 0; k < lanes; ++k)
          offsets += fmt::format("{}{}", k ? ", " : "", *slope * k);
        const std::string lane_offsets = d_.vector_syntax == VectorSyntax::OpenCL
                                             ? fmt::format("({})({})", vt, offsets)
                                             : fmt::format("({}){{{}}}", vt, offsets);
        return fmt::format("({}_splat({}) + {})", vt, strip_parens(converted(e, want)), lane_offsets);
      }
    }
    switch (e->kind) {
    case ExprKind::Access: {
      const BufferView& b = buffer(e->name);
      if (b.vector_lanes)
        return fmt::format("{}[{}]", names_.buffer(e->name), vector_slot(e->operands, b));
      const DType held = b.holds_compute_type ? DType::F32 : b.dtype; // see vector_loop
      std::string bt = half_type(held) ? helpers_.need_half_lanes(held, lanes)
                                       : helpers_.need_vector(held, lanes);
      std::string x = fmt::format("{}_load(&{}[{}])", bt, names_.buffer(e->name),
                                  linear_index(clamped_indices(e, b.shape), b.shape));
      return convert_vector(x, held, want, lanes);
    }
    case ExprKind::Unary:
      if (e->unary_op == UnaryOp::Not)
        return convert_vector(fmt::format("({} ^ {}_splat(1))",
                                          vexpr(e->operands[0], DType::Bool, var, lanes),
                                          helpers_.need_vector(DType::Bool, lanes)),
                              DType::Bool, want, lanes);
      return convert_vector(fmt::format("(-{})", vexpr(e->operands[0], e->type, var, lanes)),
                            e->type, want, lanes);
    case ExprKind::Binary: {
      if (is_comparison(e->binary_op)) {
        DType p = promote(e->operands[0]->type, e->operands[1]->type);
        std::string cmp = fmt::format("({} {} {})", vexpr(e->operands[0], p, var, lanes),
                                      binary_op_token(e->binary_op),
                                      vexpr(e->operands[1], p, var, lanes));
        return convert_vector(mask_to_bool(cmp, vector_mask_elem(p), lanes), DType::Bool, want,
                              lanes);
      }
      if (e->binary_op == BinaryOp::And || e->binary_op == BinaryOp::Or)
        return convert_vector(fmt::format("({} {} {})",
                                          vexpr(e->operands[0], DType::Bool, var, lanes),
                                          e->binary_op == BinaryOp::And ? "&" : "|",
                                          vexpr(e->operands[1], DType::Bool, var, lanes)),
                              DType::Bool, want, lanes);
      std::string a = vexpr(e->operands[0], e->type, var, lanes),
                  b = vexpr(e->operands[1], e->type, var, lanes);
      return convert_vector(fmt::format("({} {} {})", a, binary_op_token(e->binary_op), b), e->type,
                            want, lanes);
    }
    case ExprKind::Select: {
      const DType t = select_lanes(e, want, var);
      std::string a = vexpr(e->operands[1], t, var, lanes), b = vexpr(e->operands[2], t, var, lanes);
      const Expr& c = e->operands[0];
      std::string x;
      if (!uses_var(c, var))
        x = fmt::format("({} ? {} : {})", expr(c), a, b);
      else
        x = fmt::format("{}_blend({}, {}, {})", helpers_.need_vector(t, lanes), vmask(c, t, var, lanes), a, b);
      return convert_vector(x, t, want, lanes);
    }
    case ExprKind::Cast: {
      DType from = e->operands[0]->type;
      // An i64 index converted to float: in i32 lanes where its range fits (AVX2 has no
      // i64 -> f32 vector conversion; GCC would convert lane by lane).
      if (is_float(e->type) && from == DType::I64 && e->operands[0]->kind != ExprKind::Access &&
          affine_coefficient(e->operands[0], var)) {
        std::optional<Interval> r = bounds_of(e->operands[0], env_);
        if (r && r->lo >= INT32_MIN && r->hi <= INT32_MAX)
          from = DType::I32;
      }
      std::string x = vexpr(e->operands[0], from, var, lanes);
      if (half_type(e->type) && e->type != from) // to f16/bf16: f32 lanes, rounded
        x = fmt::format("{}_round({})", helpers_.need_half_lanes(e->type, lanes),
                        convert_vector(x, from, DType::F32, lanes));
      return convert_vector(convert_vector(x, from, e->type, lanes), e->type, want, lanes);
    }
    case ExprKind::Call: {
      const DType lt = lane_type(e->type);
      std::string fn = has_lane_math(e->math_fn, lt)
                           ? helpers_.need_lane_math(lt, lanes, e->math_fn)
                           : helpers_.need_vector(lt, lanes) + "_" + math_fn_name(e->math_fn);
      if (e->operands.size() == 1)
        return convert_vector(
            fmt::format("{}({})", fn, vexpr(e->operands[0], e->type, var, lanes)), e->type, want,
            lanes);
      std::string a = vexpr(e->operands[0], e->type, var, lanes),
                  b = vexpr(e->operands[1], e->type, var, lanes);
      return convert_vector(fmt::format("{}({}, {})", fn, a, b), e->type, want, lanes);
    }
    default:
      break;
    }
    UT_INTERNAL_ASSERT(false, "expression not printable as a vector: " + to_string(e));
    return {};
  }

  // Condition `c` as a lane mask for `lanes` values of type `t`.
  std::string vmask(const Expr& c, DType t, const std::string& var, int lanes) {
    DType m = vector_mask_elem(t);
    if (!uses_var(c, var))
      return fmt::format("{}_splat({} ? -1 : 0)", helpers_.need_vector(m, lanes), expr(c));
    // A bool value that is no comparison of `t`'s width: its bool lanes compared with 0.
    auto through_bool = [&] {
      std::string b = convert_vector(vexpr(c, DType::Bool, var, lanes), DType::Bool, m, lanes);
      return fmt::format("({} != {}_splat(0))", b, helpers_.need_vector(m, lanes));
    };
    if (c->kind == ExprKind::Unary)
      return fmt::format("(~{})", vmask(c->operands[0], t, var, lanes));
    if (c->kind != ExprKind::Binary)
      return through_bool();
    if (c->binary_op == BinaryOp::And || c->binary_op == BinaryOp::Or)
      return fmt::format("({} {} {})", vmask(c->operands[0], t, var, lanes),
                         c->binary_op == BinaryOp::And ? "&" : "|",
                         vmask(c->operands[1], t, var, lanes));
    DType p = promote(c->operands[0]->type, c->operands[1]->type);
    const std::optional<int64_t> slope_a = affine_coefficient(c->operands[0], var),
                                 slope_b = affine_coefficient(c->operands[1], var);
    if (is_integer(p) && slope_a && slope_b) {
      // a OP b with a - b = d0 + slope*lane: lane 0's difference in int64, clamped into
      // the mask lanes' range (the sign is all a comparison with 0 needs; |slope*lane|
      // stays far below the clamp), plus each lane's offset.
      const int64_t slope = *slope_a - *slope_b;
      const std::string mt = helpers_.need_vector(m, lanes);
      const std::string d0 = expr(::unitile::binary(BinaryOp::Sub, ::unitile::cast(DType::I64, c->operands[0]),
                                         ::unitile::cast(DType::I64, c->operands[1])));
      std::string offsets;
      for (int k = 0; k < lanes; ++k)
        offsets += fmt::format("{}{}", k ? ", " : "", slope * k);
      const std::string ct(storage_type(m));
      const std::string lim = fmt::format("(({}){})", storage_type(DType::I64),
                                          dtype_bytes(m) == 8 ? "4611686018427387904" : "1073741824");
      // A vector constant: `(type){a, b}` with GCC's extensions, `(type)(a, b)` in OpenCL C.
      const std::string lane_offsets = d_.vector_syntax == VectorSyntax::OpenCL
                                           ? fmt::format("({})({})", mt, offsets)
                                           : fmt::format("({}){{{}}}", mt, offsets);
      return fmt::format("({0}_splat(({1})(({2}) < -{3} ? -{3} : ({2}) > {3} ? {3} : ({2}))) + {4} {5} "
                         "{0}_splat(0))",
                         mt, ct, d0, lim, lane_offsets, binary_op_token(c->binary_op));
    }
    if (!is_comparison(c->binary_op) || dtype_bytes(p) != dtype_bytes(t))
      return through_bool();
    return fmt::format("({} {} {})", vexpr(c->operands[0], p, var, lanes),
                       binary_op_token(c->binary_op), vexpr(c->operands[1], p, var, lanes));
  }

  const LoopProgram& prog_;
  const hcd::Hcd& hcd_;
  const CDialect& d_;
  CHelperSet& helpers_;
  NameTable names_;
  std::map<std::string, BufferView> buffers_;
  std::set<std::string> bound_vars_;
  IntervalEnv env_;
  LaunchDims dims_;
  std::set<const StmtNode*> hoisted_; // shared allocations declared at the entry's top
  bool multi_thread_ = false;
  // Matrix statements: accumulator fragments in scope, warp loop variables (thread.y/z
  // loops that bind one warp each), whether a loop over lanes (thread.x) encloses, and
  // the matrix operand buffers declared 16-byte aligned in their own dtype.
  struct FragmentView {
    std::vector<int64_t> tiles; // the dimensions between the warp index and the unit tile
    int64_t m = 0, n = 0, per_lane = 0;
  };
  std::map<std::string, FragmentView> fragments_;
  bool amx_ = false;                                        // Matrix statements print as AMX
  bool pairs_ = false; // 1 x 16 x 2 matrix statements print as AVX512-BF16 (vdpbf16ps)
  std::map<std::string, std::vector<int64_t>> pair_accs_;   // accumulators in vector registers: vector grid
  std::map<std::string, std::vector<int64_t>> tile_accs_;   // accumulators in tile registers: tile grid
  std::set<std::string> warp_vars_;
  bool in_lane_loop_ = false;
  std::set<std::string> aligned_operands_;
  std::string out_;
  int indent_ = 0;
};

} // namespace

GeneratedSource print_c_family(const LoopProgram& p, const hcd::Hcd& hcd, const CDialect& d) {
  GeneratedSource g;
  g.dialect = std::string(d.name);
  CHelperSet helpers;
  std::string funcs;
  std::set<std::string> entries;
  for (const LoopFunc& f : p.funcs) {
    std::string entry = std::string(d.entry_prefix) + identifier_chars(f.name);
    UT_INTERNAL_ASSERT(entries.insert(entry).second, "two funcs print as entry " + entry);
    FuncPrinter printer(p, hcd, d, helpers);
    funcs += "\n" + printer.print(f, entry);
    g.entries.push_back(entry);
  }
  g.code = fmt::format("/* Kernel {} for HCD '{}', generated by unitile (dialect {}). */\n",
                       p.kernel, hcd.name, d.name);
  g.code += d.prelude;
  if (!helpers.empty())
    g.code += "\n" + helpers.text(d);
  g.code += funcs;
  return g;
}

} // namespace unitile::codegen
